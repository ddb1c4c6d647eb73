//! Checking that a rank runs on its planned host, and binding it to its planned core
//! with hwloc.

use std::sync::OnceLock;

use crate::availability::Availability;
use crate::launcher::Launcher;
use crate::monitor;
use crate::planner::{Location, Move, Placement};
use crate::run_dir::cpu_sets::{self, Hosts, same_host};
use crate::run_dir::record;
use crate::run_dir::settings::{ENV_EMULATED_HOSTS, JobSettings};
use crate::topology::{CoreSpread, LeafKind, TopologySpec};

/// In multi-host mode, warns when rank `rank`'s process does not run on the host its
/// `location` names: the job's `launcher` mapped it elsewhere (as a launcher under Slurm did
/// before [`crate::launcher::Launcher::srun_needs_one_block_per_host`]: only `nsenter`
/// from outside showed it). The mismatch is also recorded in the run directory
/// ([`crate::run_dir::record::MISPLACED`]), where `rankmig run` sees it and stops the
/// job: the plan's communication costs and the core it binds to assume the planned
/// host.
pub(super) fn warn_if_not_on_planned_host(
    settings: &JobSettings,
    location: &Location,
    rank: usize,
    launcher: &dyn Launcher,
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
            launcher.program(),
        );
        if let Some(dir) = &settings.run_dir {
            record::note_misplaced(dir, rank, std::process::id(), &here, planned);
        }
    }
}

/// Binds rank `rank`'s process (of `ranks`) to the real core of its planned
/// `location` (best effort: a failure is reported and the rank runs unbound).
///
/// Logical core `core` of the node numbered `node_index` is real core
/// `(node_index × cores_per_node + core) mod real cores`:
/// - on logical nodes of one host, `node_index` is the node's place in the
///   availability the job follows now (`view`) and `cores_per_node` the largest logical
///   node's cores ([`JobSettings::cores_per_node`]);
/// - on hosts emulated on one machine ([`on_emulated_host`]: UTS
///   namespaces of `rankmig run --emulated-cluster`), the same with the host's place in
///   `view` and the cores of the view's largest offer ([`emulated_host_slot`]): every
///   host's tree is the machine's, and with `node_index` 0 the ranks of h1 and h2 both
///   bound to core 0, one real CPU;
/// - on real hosts `node_index` is 0: the planned core is a core of this host's own
///   tree.
///
/// A node's place changes with the availability (n2 is the second node of `n1 n2`, the
/// first of `n2 n3`), so every rank binds again once a change is carried out: an
/// arrival binds by the new availability, and a rank that stayed bound by the old one
/// would share its core (with 2 ranks on 2 cores, each iteration then took a scheduler
/// tick, 4 ms, instead of 6 µs).
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
    if settings.cores_per_rank > 1 {
        bind_to_cores(settings, location, placement, view, rank);
        return;
    }
    let cpus = usable_cpus();
    let (sharing, node_index, cores) = if settings.multi_host() {
        let here = placement.map_or(1, |p| {
            p.locations()
                .iter()
                .filter(|l| l.node == location.node)
                .count()
        });
        // Hosts emulated on one machine (UTS namespaces, or Slurm's nodes of one
        // machine) each plan only their own ranks, but share its CPUs.
        let sharing = here.max(processes_of_this_program());
        if on_emulated_host() {
            let (index, cores) = emulated_host_slot(view, &location.node);
            (sharing, index, cores)
        } else {
            (sharing, 0, settings.cores_per_node)
        }
    } else {
        let Some(view) = view else { return };
        let index = view
            .nodes()
            .iter()
            .position(|n| n.name == location.node)
            .unwrap_or(0);
        (ranks, index, settings.cores_per_node)
    };
    if sharing > cpus {
        return;
    }
    if let Err(e) = monitor::location::bind_logical_core(node_index, location.core, cores.max(1)) {
        log::warn!("rank {rank}: {e}");
    }
}

/// Binds rank `rank`'s process, a rank of several cores, to the CPUs of its planned
/// slot by the rule `rankmig bind-exec` applied before the program started
/// ([`cpu_sets::for_placement`]: the same sets for the same placement and view). A
/// process already on exactly those CPUs is left as it is, so that the threads an
/// OpenMP runtime placed inside them (`OMP_PLACES`, `OMP_PROC_BIND`) stay where they
/// are; otherwise (an arrival, or a rank whose node changed its place in the
/// availability) every thread of the process is bound to the new set. Ranks that
/// would share the machine's CPUs with too many others are let run on all of them.
fn bind_to_cores(
    settings: &JobSettings,
    location: &Location,
    placement: Option<&Placement>,
    view: Option<&Availability>,
    rank: usize,
) {
    let Some(view) = view else { return };
    let machine = match machine_tree() {
        Ok(tree) => tree,
        Err(e) => {
            log::warn!("rank {rank}: cannot read this machine's cores to bind: {e}");
            return;
        }
    };
    let hosts = job_hosts(settings);
    // Before the job's placement is known, the rank's own location alone.
    let alone = Placement::new(vec![location.clone()]);
    let (job, index) = placement.map_or((&alone, 0), |p| (p, rank));
    let sets = cpu_sets::for_placement(job, view, machine, settings.cores_per_rank, hosts);
    let target: Vec<u32> = match sets.get(index) {
        Some(cpus) => cpus.to_vec(),
        // Unbound: every CPU of the machine.
        None => {
            if rank == 0 {
                log::warn!(
                    "ranks of {} cores: this machine has too few CPUs for its ranks (or rank 0's slot is past its node's groups): the ranks run on all its CPUs",
                    settings.cores_per_rank
                );
            }
            machine
                .leaves()
                .iter()
                .flat_map(|l| l.cpus.clone())
                .collect()
        }
    };
    if let Err(e) = monitor::location::bind_to_cpus(&target) {
        log::warn!("rank {rank}: {e}");
    }
}

/// The command replacement processes of `moves` (in spawn order) start with: `program
/// args` itself for ranks of one core; for ranks of several cores, when `rankmig run`
/// gave its command ([`JobSettings::rankmig_exe`]) and a run directory,
/// `rankmig bind-exec --cpus-file FILE -- program args`, FILE
/// (`RUN_DIR/cpus-spawn-N.txt`, N = `migration`) giving the process of spawn index `i`
/// the CPUs of `moves[i]`'s slot in the placement `after` by the availability `view`.
/// Only the `writer` (rank 0) writes FILE; a failure to write it is reported and the
/// replacements start unwrapped (they bind once running).
#[allow(clippy::too_many_arguments)]
pub(super) fn replacement_command(
    settings: &JobSettings,
    moves: &[&Move],
    after: &Placement,
    view: Option<&Availability>,
    (program, args): (String, Vec<String>),
    migration: u64,
    writer: bool,
) -> (String, Vec<String>) {
    let (Some(exe), Some(dir), Some(view), true) = (
        &settings.rankmig_exe,
        &settings.run_dir,
        view,
        settings.cores_per_rank > 1,
    ) else {
        return (program, args);
    };
    let path = cpu_sets::spawn_file(dir, migration);
    if writer {
        let written = machine_tree().and_then(|machine| {
            let hosts = job_hosts(settings);
            let sets =
                cpu_sets::for_placement(after, view, machine, settings.cores_per_rank, hosts);
            let in_order = moves.iter().map(|m| sets.get(m.rank).map(<[u32]>::to_vec));
            (cpu_sets::CpuSets::new(in_order.collect()).write(&path)).map_err(|e| e.to_string())
        });
        if let Err(e) = written {
            log::warn!(
                "cannot write {}: {e}; the replacements bind once they run",
                path.display()
            );
            return (program, args);
        }
    }
    let mut command = std::iter::once(program).chain(args).collect::<Vec<_>>();
    command = cpu_sets::bound_program(exe, &path, &command);
    let program = command.remove(0);
    (program, command)
}

/// How the job's nodes map onto machines: logical nodes, hosts emulated on this
/// machine, or real hosts.
fn job_hosts(settings: &JobSettings) -> Hosts {
    match (settings.multi_host(), on_emulated_host()) {
        (false, _) => Hosts::Logical {
            cores_per_node: settings.cores_per_node,
        },
        (true, true) => Hosts::Emulated,
        (true, false) => Hosts::Real,
    }
}

/// Whether every node of the job is this one machine: logical nodes, or hosts
/// emulated on it.
pub(super) fn one_machine(settings: &JobSettings) -> bool {
    !matches!(job_hosts(settings), Hosts::Real)
}

/// The real core a rank of one core at `location` is bound to by [`bind`]'s rule when
/// every node of `view` is this one machine (logical nodes, or hosts emulated on it)
/// and the job's `ranks` fit its CPUs: a core of one node is then a core of the others
/// too. `None` on real hosts, for ranks of several cores, and where ranks run unbound.
pub(super) fn machine_core_of(
    settings: &JobSettings,
    view: &Availability,
    location: &Location,
    ranks: usize,
) -> Option<usize> {
    if settings.cores_per_rank > 1 || ranks > usable_cpus() {
        return None;
    }
    // bind_to's count: the machine's cores.
    let cores = machine_tree().map_or(usable_cpus(), |t| t.leaf_count());
    match job_hosts(settings).spread(view, &location.node) {
        CoreSpread::Logical {
            node_index,
            cores_per_node,
        } => Some(monitor::location::real_core(
            node_index,
            location.core,
            cores_per_node.max(1),
            cores,
        )),
        CoreSpread::Host => None,
    }
}

/// This machine's tree (cores as leaves, with their CPUs), read once per process.
fn machine_tree() -> Result<&'static crate::topology::Tree, String> {
    static TREE: OnceLock<Result<crate::topology::Tree, String>> = OnceLock::new();
    TREE.get_or_init(|| {
        TopologySpec::Live
            .load(LeafKind::Core)
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// True when this process runs on a host emulated on one machine
/// ([`ENV_EMULATED_HOSTS`] is `1`, as `rankmig run --emulated-cluster` sets it).
fn on_emulated_host() -> bool {
    std::env::var(ENV_EMULATED_HOSTS).is_ok_and(|v| v.trim() == "1")
}

/// Where a rank on `host`, a host emulated on one machine, binds: the host's place in
/// the availability the job follows (`view`; 0 when it is not there) and the cores per
/// host, those of the view's largest offer (at least 1). Every rank follows the same
/// view, so ranks of different hosts take different real CPUs as long as the machine
/// has enough. The cores of the host's tree would not do: that tree is the machine's,
/// so on a machine of C cores the host's offset (index × C) is a multiple of C and
/// every host's core 0 would be real core 0 again.
fn emulated_host_slot(view: Option<&Availability>, host: &str) -> (usize, usize) {
    let Some(view) = view else { return (0, 1) };
    match Hosts::Emulated.spread(view, host) {
        CoreSpread::Logical {
            node_index,
            cores_per_node,
        } => (node_index, cores_per_node),
        CoreSpread::Host => (0, 1),
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

#[cfg(test)]
mod tests {
    use crate::availability::{Availability, AvailabilityFormat};
    use crate::monitor::location::real_core;

    fn view(text: &str) -> Availability {
        Availability::parse(text, "av", AvailabilityFormat::Native).unwrap()
    }

    /// The real CPU of core `core` of `host`, emulated on a machine of `cpus` CPUs.
    fn emulated_cpu(view: &Availability, host: &str, core: usize, cpus: usize) -> usize {
        let (index, cores) = super::emulated_host_slot(Some(view), host);
        real_core(index, core, cores, cpus)
    }

    #[test]
    fn hosts_emulated_on_one_machine_take_their_place_in_the_availability() {
        // One core each, 2 CPUs: h1 and h2 on distinct CPUs, h3 back on h1's.
        let one_each = view("h1 1\nh2 1\nh3 1\n");
        let cpus: Vec<usize> = ["h1", "h2", "h3"]
            .iter()
            .map(|h| emulated_cpu(&one_each, h, 0, 2))
            .collect();
        assert_eq!(cpus, [0, 1, 0]);
        // Two cores each on 4 CPUs: every (host, core) its own CPU; the stride is the
        // largest offer (h2's 2 cores), not the machine's.
        let two_each = view("h1 1\nh2 2\n");
        assert_eq!(super::emulated_host_slot(Some(&two_each), "h2"), (1, 2));
        let cpus: Vec<usize> = [("h1", 0), ("h2", 0), ("h2", 1)]
            .iter()
            .map(|(h, c)| emulated_cpu(&two_each, h, *c, 4))
            .collect();
        assert_eq!(cpus, [0, 2, 3]);
        // The place follows the availability: h3 is first once h1 and h2 are gone.
        assert_eq!(emulated_cpu(&view("h3 1\nh4 1\n"), "h3", 0, 2), 0);
        assert_eq!(emulated_cpu(&view("h3 1\nh4 1\n"), "h4", 0, 2), 1);
        // A host name given with its domain is the same host; one not offered, or no
        // view yet, binds as host 0.
        assert_eq!(
            super::emulated_host_slot(Some(&one_each), "h2.cluster").0,
            1
        );
        assert_eq!(super::emulated_host_slot(Some(&one_each), "h9"), (0, 1));
        assert_eq!(super::emulated_host_slot(None, "h2"), (0, 1));
    }

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
