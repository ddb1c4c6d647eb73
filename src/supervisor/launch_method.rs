//! Which launcher starts a `rankmig run` job: the MPI's own (`mpirun`, `mpiexec`), or
//! Slurm's `srun` as a job step ([`crate::launcher::srun`]), and with which process
//! management interface (`srun --mpi=TYPE`).
//!
//! `--launcher srun` asks for srun; without `--launcher`, srun is chosen inside a Slurm
//! allocation when no `mpirun` or `mpiexec` on `PATH` says what it is (the site's MPI has
//! no launcher of its own): `--mpi` must then name the MPI. The TYPE is `--srun-mpi`,
//! else `pmi2` for MPICH and `pmix` for Open MPI, and must be one `srun --mpi=list`
//! prints.

use std::process::Command;

use crate::launcher::srun::{Srun, pmi_types};
use crate::launcher::{LaunchMethod, LauncherError, MpiImplementation};

/// The launcher chosen, with the MPI, srun's TYPE, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenLauncher {
    /// The MPI implementation.
    pub mpi: MpiImplementation,
    /// What starts the ranks.
    pub method: LaunchMethod,
    /// srun's `--mpi=TYPE`, with srun.
    pub pmi: Option<String>,
    /// How the start line says it was chosen.
    pub why: String,
}

/// Why no launcher could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum LaunchMethodError {
    /// No MPI launcher, and nothing to fall back on.
    #[error(transparent)]
    Mpi(#[from] LauncherError),
    /// srun asked for outside a Slurm allocation.
    #[error(
        "--launcher srun: not inside a Slurm allocation (SLURM_JOB_ID is not set): run it in salloc or sbatch"
    )]
    NotInSlurmJob,
    /// srun cannot be run.
    #[error("--launcher srun: `srun --mpi=list` failed: {0}")]
    NoSrun(String),
    /// The PMI type is not one srun offers.
    #[error(
        "--launcher srun: this srun has no --mpi={wanted} (`srun --mpi=list` offers {offered}); give another with --srun-mpi TYPE"
    )]
    NoSuchPmi {
        /// The type asked for.
        wanted: String,
        /// Those srun lists.
        offered: String,
    },
    /// srun chosen by itself, but the MPI is not named.
    #[error(
        "no mpirun or mpiexec on PATH says which MPI this is ({0}); inside this Slurm allocation the job can be started by srun: say which MPI the program is built with, --mpi openmpi4|openmpi5|mpich"
    )]
    MpiUnnamed(String),
}

/// The launcher of a new run: `asked` (`--launcher`), `mpi` (`--mpi`), `pmi`
/// (`--srun-mpi`), in the environment `env` (the Slurm job's variables).
pub fn choose(
    asked: Option<LaunchMethod>,
    mpi: Option<MpiImplementation>,
    pmi: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ChosenLauncher, LaunchMethodError> {
    let in_slurm_job = env(crate::rms::slurm::ENV_JOB_ID).is_some();
    let (mpi, method, why) = match (asked, mpi) {
        (Some(LaunchMethod::Mpirun), Some(mpi)) => (mpi, LaunchMethod::Mpirun, "--mpi".to_owned()),
        (None, Some(mpi)) => {
            let program = crate::launcher::launcher(mpi).program();
            if in_slurm_job && !on_path(program) {
                let why = format!("no {program} on PATH inside a Slurm allocation");
                (mpi, LaunchMethod::Srun, why)
            } else {
                (mpi, LaunchMethod::Mpirun, "--mpi".to_owned())
            }
        }
        (Some(LaunchMethod::Mpirun), None) => (
            crate::launcher::detect()?,
            LaunchMethod::Mpirun,
            "its --version".to_owned(),
        ),
        (Some(LaunchMethod::Srun), Some(mpi)) => {
            (mpi, LaunchMethod::Srun, "--launcher srun".to_owned())
        }
        (Some(LaunchMethod::Srun), None) => (
            crate::launcher::detect()?,
            LaunchMethod::Srun,
            "--launcher srun".to_owned(),
        ),
        (None, None) => match crate::launcher::detect() {
            Ok(mpi) => (mpi, LaunchMethod::Mpirun, "its --version".to_owned()),
            Err(LauncherError::Undetected(seen)) if in_slurm_job => {
                return Err(LaunchMethodError::MpiUnnamed(seen));
            }
            Err(e) => return Err(e.into()),
        },
    };
    if method == LaunchMethod::Mpirun {
        return Ok(ChosenLauncher {
            mpi,
            method,
            pmi: None,
            why,
        });
    }
    if !in_slurm_job {
        return Err(LaunchMethodError::NotInSlurmJob);
    }
    let wanted = pmi.map_or_else(|| Srun::new(mpi).default_pmi().to_owned(), str::to_owned);
    let offered = srun_pmi_types()?;
    if !offered.contains(&wanted) {
        return Err(LaunchMethodError::NoSuchPmi {
            wanted,
            offered: offered.join(", "),
        });
    }
    Ok(ChosenLauncher {
        mpi,
        method,
        pmi: Some(wanted),
        why,
    })
}

/// True when an executable file named `program` is in a directory of `PATH`.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// What `srun --mpi=list` offers.
fn srun_pmi_types() -> Result<Vec<String>, LaunchMethodError> {
    let out = Command::new("srun")
        .arg("--mpi=list")
        .output()
        .map_err(|e| LaunchMethodError::NoSrun(e.to_string()))?;
    // Slurm 22.05 prints the list on standard error.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(LaunchMethodError::NoSrun(text.trim().to_owned()));
    }
    Ok(pmi_types(&text))
}

impl ChosenLauncher {
    /// How the start line says it: `srun --mpi=pmi2 (--launcher srun)`.
    pub fn describe(&self) -> String {
        match (&self.method, &self.pmi) {
            (LaunchMethod::Srun, Some(pmi)) => {
                format!("launched by srun --mpi={pmi} ({})", self.why)
            }
            _ => format!("launched by {}'s own launcher", self.mpi.title()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srun_outside_a_slurm_job_is_refused_and_an_mpi_named_keeps_its_launcher() {
        let none = |_: &str| None;
        let e = choose(
            Some(LaunchMethod::Srun),
            Some(MpiImplementation::Mpich),
            None,
            &none,
        )
        .unwrap_err();
        assert!(matches!(e, LaunchMethodError::NotInSlurmJob), "{e}");
        let c = choose(None, Some(MpiImplementation::Mpich), None, &none).unwrap();
        assert_eq!((c.method, c.pmi), (LaunchMethod::Mpirun, None));
    }
}
