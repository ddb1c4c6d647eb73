//! Checking that a rank runs on its planned host, and binding it to its planned core
//! with hwloc.

use std::sync::OnceLock;

use crate::availability::Availability;
use crate::launcher::launcher;
use crate::monitor;
use crate::planner::{Location, Placement};
use crate::run_dir::record;
use crate::run_dir::settings::JobSettings;

/// In multi-host mode, warns when rank `rank`'s process does not run on the host its
/// `location` names: the launcher mapped it elsewhere (as a launcher under Slurm did
/// before [`crate::launcher::Launcher::srun_needs_one_block_per_host`]: only `nsenter`
/// from outside showed it). The mismatch is also recorded in the run directory
/// ([`crate::run_dir::record::MISPLACED`]), where `rankmig run` sees it and stops the
/// job: the plan's communication costs and the core it binds to assume the planned
/// host.
pub(super) fn warn_if_not_on_planned_host(
    settings: &JobSettings,
    location: &Location,
    rank: usize,
) {
    if !settings.multi_host() {
        return;
    }
    let here = monitor::location::hostname();
    if !same_host(&here, &location.node) {
        let planned = &location.node;
        log::warn!(
            "rank {rank} (process {}) runs on host {here}, its placement puts it on {planned}: the launcher ({}) mapped it elsewhere; the plan's communication costs and its core binding assume {planned}",
            std::process::id(),
            launcher(settings.mpi.unwrap_or_default()).program(),
        );
        if let Some(dir) = &settings.run_dir {
            record::note_misplaced(dir, rank, std::process::id(), &here, planned);
        }
    }
}

/// Binds rank `rank`'s process (of `ranks`) to the real core of its planned
/// `location` (best effort: a failure is reported and the rank runs unbound).
///
/// In multi-host mode the planned core is a core of this host's tree; on logical
/// nodes of one host, logical core `core` of the node numbered `node_index` is real
/// core `(node_index × cores_per_node + core) mod real cores`, `node_index` being
/// the node's place in the availability the job follows now (`view`). That place
/// changes with the availability (n2 is the second node of `n1 n2`, the first of
/// `n2 n3`), so every rank binds again once a change is carried out: an arrival binds
/// by the new availability, and a rank that stayed bound by the old one would share
/// its core (with 2 ranks on 2 cores, each iteration then took a scheduler tick, 4 ms,
/// instead of 6 µs).
///
/// Not when more ranks share the machine than it has CPUs (in multi-host mode the
/// ranks planned on this host, or the machine's processes running this program if
/// more: hosts emulated on one machine share its CPUs; on logical nodes the whole
/// job): pinned ranks that
/// busy-wait starve one another and Open MPI's runtime (a spawn then hung in 4 of 6
/// runs here, 0 of 6 unpinned), so oversubscribed ranks are left to the scheduler,
/// as Open MPI itself does. `RANKMIG_BIND=off` also disables binding.
pub(super) fn bind(
    settings: &JobSettings,
    location: &Location,
    placement: Option<&Placement>,
    view: Option<&Availability>,
    rank: usize,
    ranks: usize,
) {
    if std::env::var("RANKMIG_BIND").is_ok_and(|v| v == "off") {
        return;
    }
    let cpus = usable_cpus();
    let (sharing, node_index) = if settings.multi_host() {
        let here = placement.map_or(1, |p| {
            p.locations()
                .iter()
                .filter(|l| l.node == location.node)
                .count()
        });
        // Hosts emulated on one machine (UTS namespaces, or Slurm's nodes of one
        // machine) each plan only their own ranks, but share its CPUs.
        (here.max(processes_of_this_program()), 0)
    } else {
        let Some(view) = view else { return };
        let index = view
            .nodes()
            .iter()
            .position(|n| n.name == location.node)
            .unwrap_or(0);
        (ranks, index)
    };
    if sharing > cpus {
        return;
    }
    let cores = settings.cores_per_node.max(1);
    if let Err(e) = monitor::location::bind_logical_core(node_index, location.core, cores) {
        log::warn!("rank {rank}: {e}");
    }
}

/// The processes of this machine that run this process's program, this one included
/// (1 when `/proc` cannot tell): the ranks of every launch and every host emulated on
/// the machine, and of other jobs of the same program, which all share its CPUs. Read
/// after `MPI_Init`, when every rank of the job has started.
fn processes_of_this_program() -> usize {
    std::fs::read_link("/proc/self/exe").map_or(1, |mine| processes_running(&mine).max(1))
}

/// The processes whose executable is `program` (as `/proc/PID/exe` names it), among
/// those this process may look at.
fn processes_running(program: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == program))
        .count()
}

/// The CPUs this process could use when it first bound itself: afterwards its own
/// binding narrows what `available_parallelism` reports (to one CPU), and a rank that
/// binds again must still see the machine.
fn usable_cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether host names `a` and `b` name one host: equal, or equal up to the first dot
/// (`node01` and `node01.cluster`: a host file may give either form).
fn same_host(a: &str, b: &str) -> bool {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
    a == b || short(a) == short(b)
}

#[cfg(test)]
mod tests {
    #[test]
    fn processes_of_a_program_are_counted_while_they_run() {
        // A copy of `sleep` of our own, so that no other process runs it.
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("sleeper");
        std::fs::copy("/bin/sleep", &program).unwrap();
        let mut child = std::process::Command::new(&program)
            .arg("30")
            .spawn()
            .unwrap();
        let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).unwrap();
        let running = super::processes_running(&exe);
        child.kill().unwrap();
        child.wait().unwrap();
        let after = super::processes_running(&exe);
        assert_eq!((running, after), (1, 0));
        // This process counts itself (the count does not fall back to its floor of 1).
        let mine = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(super::processes_running(&mine) >= 1);
    }
}
