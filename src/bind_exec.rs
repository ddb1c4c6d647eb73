//! `rankmig bind-exec`: a rank of several cores binds itself to its CPUs, then becomes
//! its program (`exec`, same process), so that the program's threaded runtime (OpenMP)
//! counts those CPUs when it loads ([`rankmig::run_dir::cpu_sets`]).
//!
//! Nothing here stops the rank: a set that cannot be read or applied is reported and
//! the program runs unbound; only a program that cannot be executed is an error.

use std::os::unix::process::CommandExt;
use std::path::Path;

use rankmig::launcher::RANK_IN_LAUNCH_VARIABLES;
use rankmig::run_dir::cpu_sets;

/// Why the program could not be executed.
#[derive(Debug, thiserror::Error)]
pub enum BindExecError {
    /// No program after `--`.
    #[error("bind-exec: no program to run after --")]
    NoProgram,
    /// `execvp` failed.
    #[error("bind-exec: cannot execute {program}: {source}")]
    Exec {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Binds this process to its line of `cpus_file` (by its rank in the launch), then
/// executes `program` in its place. Returns only on failure to execute.
pub fn bind_then_exec(cpus_file: &Path, program: &[String]) -> BindExecError {
    let Some((name, args)) = program.split_first() else {
        return BindExecError::NoProgram;
    };
    if let Err(why) = bind(cpus_file) {
        log::warn!("bind-exec: {why}; the rank runs unbound");
    }
    let source = std::process::Command::new(name).args(args).exec();
    BindExecError::Exec {
        program: name.clone(),
        source,
    }
}

/// Binds this process (its one thread: nothing else runs yet) to its set in
/// `cpus_file`; `Ok` also when its line says to leave it unbound.
fn bind(cpus_file: &Path) -> Result<(), String> {
    if std::env::var("RANKMIG_BIND").is_ok_and(|v| v == "off") {
        return Ok(());
    }
    let get = |k: &str| std::env::var(k).ok();
    let index = cpu_sets::launch_index(&get).ok_or_else(|| {
        format!(
            "none of {} is set: cannot tell which line of {} is this process's",
            RANK_IN_LAUNCH_VARIABLES.join(", "),
            cpus_file.display()
        )
    })?;
    match cpu_sets::read_line_of(cpus_file, index).map_err(|e| e.to_string())? {
        Some(cpus) => set_affinity(&cpus),
        None => Ok(()),
    }
}

/// `sched_setaffinity` of this thread (the process's only one) to `cpus`; inherited
/// across `exec` and by every thread the program starts.
fn set_affinity(cpus: &[u32]) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let limit = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus {
        let cpu = cpu as usize;
        if cpu >= limit {
            return Err(format!(
                "CPU {cpu} is beyond the {limit} CPUs sched_setaffinity takes here"
            ));
        }
        // SAFETY: cpu < the set's size.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 = this thread; the set is valid for its size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(format!(
            "sched_setaffinity to CPUs {}: {}",
            rankmig::topology::format_index_list(cpus),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
