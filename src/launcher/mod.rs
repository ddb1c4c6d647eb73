//! The MPI implementations rankmig drives, one file each, behind one trait.
//!
//! Everything that differs between Open MPI 4.1 (ORTE), Open MPI 5 (PRRTE) and MPICH
//! (hydra, and the MPIs built on it) lives here and nowhere else: the launch command and
//! its options, how rank *i* starts on its planned host, how the environment reaches the
//! ranks, the rsh/ssh agent setting, the network settings of an emulated cluster, how a
//! replaced rank leaves, the spawn info keys, what the implementation can do, how its
//! messages name a lost host and a rank that died ([`FailureClue`]), and where a rank
//! finds its local rank.
//!
//! `rankmig run` picks the implementation from the launcher first on `PATH`
//! ([`detect`]), or from `--mpi`, and tells the ranks with [`ENV_MPI`]; a rank started
//! without it asks its MPI library ([`MpiImplementation::from_library_version`]).
//!
//! ```
//! use rankmig::launcher::{MpiImplementation, launcher};
//! let mpich: MpiImplementation = "mpich".parse().unwrap();
//! assert_eq!(launcher(mpich).program(), "mpiexec");
//! assert!(launcher(mpich).capabilities().spawn_onto_left_host);
//! assert!(!launcher(MpiImplementation::OpenMpi4).capabilities().add_hosts);
//! assert!(!launcher(MpiImplementation::OpenMpi5).capabilities().spawn_across_daemons);
//! ```

mod failure_clue;
pub mod mpich;
pub mod openmpi4;
pub mod openmpi5;
pub mod srun;

pub use failure_clue::{FailureClue, SlurmCancel, slurm_cancel};

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::planner::Placement;

/// Tells the ranks which MPI implementation launched them (`openmpi4`, `openmpi5` or
/// `mpich`).
pub const ENV_MPI: &str = "RANKMIG_MPI";

/// An MPI implementation `rankmig run` can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MpiImplementation {
    /// Open MPI 4.1 and older, with its ORTE runtime (`mpirun`).
    #[default]
    OpenMpi4,
    /// Open MPI 5, with the PRRTE runtime (`mpirun`, `prterun`).
    OpenMpi5,
    /// MPICH and the MPIs built on it that launch with hydra (`mpiexec`).
    Mpich,
}

impl MpiImplementation {
    /// Every implementation, in the order `--mpi` lists them.
    pub const ALL: [Self; 3] = [Self::OpenMpi4, Self::OpenMpi5, Self::Mpich];

    /// The name `--mpi` and [`ENV_MPI`] use.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenMpi4 => "openmpi4",
            Self::OpenMpi5 => "openmpi5",
            Self::Mpich => "mpich",
        }
    }

    /// How people write it: `Open MPI 4.1`, `Open MPI 5`, `MPICH`.
    pub fn title(self) -> &'static str {
        match self {
            Self::OpenMpi4 => "Open MPI 4.1",
            Self::OpenMpi5 => "Open MPI 5",
            Self::Mpich => "MPICH",
        }
    }

    /// The implementation a launcher's `--version` text names: Open MPI (or OpenRTE)
    /// with its major version, or hydra (MPICH, MVAPICH; Intel MPI, whose `mpirun
    /// --version` names the library, not hydra).
    ///
    /// ```
    /// use rankmig::launcher::MpiImplementation as M;
    /// assert_eq!(M::from_version_text("mpirun (Open MPI) 4.1.4\n"), Some(M::OpenMpi4));
    /// assert_eq!(M::from_version_text("mpiexec (OpenRTE) 4.1.4"), Some(M::OpenMpi4));
    /// assert_eq!(M::from_version_text("mpirun (Open MPI) 5.0.11"), Some(M::OpenMpi5));
    /// assert_eq!(M::from_version_text("HYDRA build details:\n    Version: 5.0.2"), Some(M::Mpich));
    /// assert_eq!(M::from_version_text("Intel(R) MPI Library for Linux* OS, Version 2021.18.1"), Some(M::Mpich));
    /// assert_eq!(M::from_version_text("srun 22.05.8"), None);
    /// ```
    pub fn from_version_text(text: &str) -> Option<Self> {
        if text.contains("HYDRA") || text.contains("hydra") || text.contains("Intel(R) MPI") {
            return Some(Self::Mpich);
        }
        let rest = ["(Open MPI)", "(OpenRTE)"]
            .iter()
            .find_map(|marker| text.split(marker).nth(1))?;
        let major: u32 = rest.trim().split('.').next()?.trim().parse().ok()?;
        Some(if major >= 5 {
            Self::OpenMpi5
        } else {
            Self::OpenMpi4
        })
    }

    /// The implementation `MPI_Get_library_version` names (for a rank started without
    /// [`ENV_MPI`]).
    ///
    /// ```
    /// use rankmig::launcher::MpiImplementation as M;
    /// assert_eq!(M::from_library_version("Open MPI v4.1.4, package: Debian"), Some(M::OpenMpi4));
    /// assert_eq!(M::from_library_version("Open MPI v5.0.11, package: Open MPI"), Some(M::OpenMpi5));
    /// assert_eq!(M::from_library_version("MPICH Version:      5.0.2"), Some(M::Mpich));
    /// assert_eq!(M::from_library_version("Intel(R) MPI Library 2021.14"), Some(M::Mpich));
    /// ```
    pub fn from_library_version(text: &str) -> Option<Self> {
        if let Some(rest) = text.split("Open MPI v").nth(1) {
            let major: u32 = rest.split('.').next()?.trim().parse().ok()?;
            return Some(if major >= 5 {
                Self::OpenMpi5
            } else {
                Self::OpenMpi4
            });
        }
        ["MPICH", "Intel(R) MPI", "MVAPICH"]
            .iter()
            .any(|m| text.contains(m))
            .then_some(Self::Mpich)
    }

    /// The implementation named by [`ENV_MPI`] in this process's environment, if set.
    pub fn from_env() -> Result<Option<Self>, LauncherError> {
        match std::env::var(ENV_MPI) {
            Ok(v) if !v.trim().is_empty() => v.trim().parse().map(Some),
            _ => Ok(None),
        }
    }
}

impl std::fmt::Display for MpiImplementation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MpiImplementation {
    type Err = LauncherError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| LauncherError::UnknownName(s.to_owned()))
    }
}

/// Why no implementation could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    /// A name that is not one of `openmpi4`, `openmpi5`, `mpich`.
    #[error("unknown MPI implementation {0:?}: expected openmpi4, openmpi5 or mpich")]
    UnknownName(String),
    /// Neither `mpirun` nor `mpiexec` on `PATH` said what it is.
    #[error(
        "cannot tell which MPI launches jobs here: {0}; put the mpirun or mpiexec of Open MPI or MPICH first on PATH, or say which with --mpi openmpi4|openmpi5|mpich"
    )]
    Undetected(String),
}

/// Finds the implementation of the launcher first on `PATH`: `mpirun --version`, then
/// `mpiexec --version`.
pub fn detect() -> Result<MpiImplementation, LauncherError> {
    let mut seen = Vec::new();
    for program in ["mpirun", "mpiexec"] {
        match Command::new(program).arg("--version").output() {
            Ok(out) => {
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                if let Some(found) = MpiImplementation::from_version_text(&text) {
                    return Ok(found);
                }
                let first = text.lines().next().unwrap_or("").trim().to_owned();
                seen.push(format!("`{program} --version` printed {first:?}"));
            }
            Err(e) => seen.push(format!("{program}: {e}")),
        }
    }
    Err(LauncherError::Undetected(seen.join("; ")))
}

/// What an implementation can do when ranks move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `MPI_Comm_spawn` starts replacement processes: true with each MPI's own
    /// launcher, false under `srun` (Slurm's PMI does not serve it): the replacements
    /// are then launched by `rankmig run` ([`Capabilities::launch_replacements`]), or
    /// the job is relaunched from a checkpoint.
    pub spawn: bool,
    /// A spawn onto a host that processes of a still-running launch have left works
    /// (Open MPI's daemons forget such a launch, and the spawn aborts the job).
    pub spawn_onto_left_host: bool,
    /// A spawn can start processes on a host outside the allocation it was launched on
    /// (`--allow-new-hosts`; with [`Capabilities::spawn_across_daemons`] false, a
    /// relaunch starts them there instead).
    pub add_hosts: bool,
    /// A spawn works when the job's processes are managed by more than one runtime
    /// daemon (one per host: multi-host mode). False for Open MPI 5.0.11 from PyPI with
    /// PRRTE 3.0.14: the connect step of `MPI_Comm_spawn` corrupts a `prted`'s heap
    /// (`connect_release()` in `src/prted/pmix/pmix_server_dyn.c` destructs `info[1]` of
    /// a one-element array; the daemon then crashes in `dmodex_req`), and multi-host
    /// spawns succeeded in 0 runs of 3 (4 or 8 ranks, any target host, rankfile or
    /// `--host`, with or without `PMIX_ADD_HOST`). With a single daemon (logical nodes
    /// of one host) spawns work. When false, a migration in multi-host mode relaunches
    /// the job from a checkpoint instead of spawning (see `migrate::job`).
    pub spawn_across_daemons: bool,
    /// A spawn may run on a helper thread of rank 0 while the application computes
    /// (`MPI_THREAD_MULTIPLE`), the new processes joining at a later `checkpoint!`
    /// (`MPI_Intercomm_create` over the bridge rank 0 made with them). Tried with Open
    /// MPI 4.1 and MPICH; not with Open MPI 5, whose connect/accept is reported to hang
    /// (open-mpi/ompi#13076) and which moves ranks across hosts by a relaunch anyway.
    pub background_spawn: bool,
    /// The replacements of a background migration may be started by a second launch
    /// of `rankmig run` and joined with `MPI_Comm_accept`/`MPI_Comm_connect`
    /// ([`crate::run_dir::launch_request`]), which holds the application for less than
    /// a spawn does. Tried with MPICH 5.0.2, whose spawn holds every MPI call of the
    /// application until the children start. Tried with Open MPI 4.1.8 and
    /// `ompi-server`: the application was held less, but its `pml ucx` reaches
    /// processes of another launch only over the network (TCP), and the job ran 1.65×
    /// slower after the migration (docs/limits.md), so not offered there.
    pub launch_replacements: bool,
}

/// How a rank whose process has been replaced ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departure {
    /// It exits without `MPI_Finalize` (which would wait for the whole job, or crash);
    /// the launch options allow this.
    ExitWithoutFinalize,
    /// It calls `MPI_Finalize`, then exits (finalize is made non-collective).
    FinalizeThenExit,
}

/// What a launch must start: the ranks where the initial placement puts them.
#[derive(Debug, Clone, Copy)]
pub struct JobLaunch<'a> {
    /// The initial placement (rank *i* starts on the node of its line).
    pub placement: &'a Placement,
    /// The hostfile written from [`Launcher::hostfile`], in multi-host mode; `None`
    /// when the nodes are logical nodes of this host.
    pub hostfile: Option<&'a Path>,
    /// Variables every rank must see.
    pub env: &'a [(String, String)],
    /// The user's own launcher options (`--mpirun-arg`, `RANKMIG_MPIRUN_ARGS`).
    pub user_args: &'a [String],
    /// The program and its arguments.
    pub program: &'a [String],
}

/// One MPI implementation's way of launching a job, reaching hosts and replacing ranks.
pub trait Launcher: Sync {
    /// Which implementation this is.
    fn implementation(&self) -> MpiImplementation;

    /// The launch command (`mpirun`, `mpiexec`), looked up in `PATH`.
    fn program(&self) -> &'static str;

    /// The hostfile of a multi-host launch: the hosts of `placement` such that rank *i*
    /// starts on its planned host, then every other host of `hosts` (so that later
    /// spawns can reach them).
    fn hostfile(&self, placement: &Placement, hosts: &[String]) -> String;

    /// The whole launch command line, environment included.
    fn command(&self, job: &JobLaunch<'_>) -> Command;

    /// The variable naming the launcher's rsh/ssh agent.
    fn agent_variable(&self) -> &'static str;

    /// The variable that passes extra options to the launcher's `srun` when it starts
    /// its daemons inside a Slurm job.
    fn slurm_srun_args_variable(&self) -> &'static str;

    /// The variables of a launch inside a Slurm job: the daemons' `srun` step may share
    /// CPUs with earlier steps (`--overlap`), unless `get` (the caller's environment)
    /// already sets that variable. After a node failure under `salloc --no-kill`, the
    /// step of the lost launch's daemons stayed listed with its CPUs (Slurm 22.05 on the
    /// emulated Slurm), and the relaunch's `srun` waited for them until a stall stopped
    /// it; with `--overlap` it started at once.
    fn slurm_settings(&self, get: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        let variable = self.slurm_srun_args_variable();
        match get(variable) {
            Some(_) => Vec::new(),
            None => vec![(variable.to_owned(), "--overlap".to_owned())],
        }
    }

    /// Launcher options that carry `vars` (the variables of [`Launcher::slurm_settings`]
    /// and the caller's) where the launcher does not read them from its environment;
    /// they come before the user's own options. None by default.
    fn slurm_options(&self, _vars: &[(String, String)]) -> Vec<String> {
        Vec::new()
    }

    /// True when, inside a Slurm job and in the environment `get`, the launcher starts
    /// its daemons with `srun`, ranks host by host in the allocation's order, and
    /// refuses a hostfile that names a host twice: a launch there places each host's
    /// ranks in one block, hosts in the allocation's order
    /// ([`crate::planner::Placement::in_node_blocks`]). False by default.
    fn srun_needs_one_block_per_host(&self, _get: &dyn Fn(&str) -> Option<String>) -> bool {
        false
    }

    /// The variables that make the launcher reach hosts through `agent` (an rsh-like
    /// command line called as `AGENT HOST COMMAND...`): by default only
    /// [`Launcher::agent_variable`].
    fn agent_settings(&self, agent: &str) -> Vec<(String, String)> {
        vec![(self.agent_variable().to_owned(), agent.to_owned())]
    }

    /// The agent this process's environment sets for the launcher, if any.
    fn agent_in_env(&self) -> Option<String> {
        std::env::var(self.agent_variable()).ok()
    }

    /// The variables an emulated cluster (hosts sharing this machine's cores and
    /// network) needs besides the agent.
    fn emulated_cluster_settings(&self) -> Vec<(String, String)>;

    /// The host of `hosts` that a line of the launcher's failure messages names as
    /// lost, if any.
    fn lost_host(&self, line: &str, hosts: &[String]) -> Option<String>;

    /// What `line` of the launcher's output (standard error or output) says of a rank
    /// that died, if anything: each implementation reads only its own messages.
    fn failure_clue(&self, line: &str) -> Option<FailureClue>;

    /// True for a line the launcher writes only because rankmig asked for it (hydra's
    /// exit-code summary, `-print-all-exitcodes`): read for its clue, not passed on.
    fn is_summary_line(&self, _line: &str) -> bool {
        false
    }

    /// The variable that gives a rank its rank among the ranks of its host.
    fn local_rank_variable(&self) -> &'static str;

    /// How a replaced rank ends.
    fn departure(&self) -> Departure;

    /// Whether the ranks outlive the launcher when it is killed (SIGKILL): true for
    /// `srun`, whose job step's tasks on the nodes run on under their `slurmstepd`
    /// until srun ends the step. `rankmig run` then stops such a launcher with SIGTERM
    /// (which srun forwards to the tasks) before it kills it. By default false: an MPI's
    /// own launcher takes its daemons and ranks with it.
    fn ranks_outlive_a_killed_launcher(&self) -> bool {
        false
    }

    /// Whether `MPI_Finalize` in a process whose launch lost members (replaced ranks
    /// that left without finalizing) can wait for them forever, so that the ranks end
    /// without it once they have all reached it ([`crate::migrate`]'s finalize). By
    /// default false.
    fn finalize_waits_for_departed_ranks(&self) -> bool {
        false
    }

    /// The info keys of a spawn of `count` processes on `host` (`None`: anywhere on
    /// this host, for logical nodes): by default the key `host` naming it.
    fn spawn_info(&self, host: Option<&str>, count: usize) -> Vec<(String, String)> {
        let _ = count;
        host.map(|h| ("host".to_owned(), h.to_owned()))
            .into_iter()
            .collect()
    }

    /// The spawn info key naming a hostfile, when the implementation places the
    /// processes of a spawn onto several hosts through a hostfile (written with
    /// [`Launcher::hostfile`]) rather than through one command per host with its own
    /// [`Launcher::spawn_info`]; `None` for the latter.
    fn spawn_hostfile_key(&self) -> Option<&'static str> {
        None
    }

    /// The info keys of `MPI_Open_port` when replacements are launched
    /// ([`Capabilities::launch_replacements`]). None by default.
    fn open_port_info(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// What it can do.
    fn capabilities(&self) -> Capabilities;
}

/// What starts the ranks: the MPI's own launcher, or Slurm's `srun` as a job step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum LaunchMethod {
    /// The MPI's own launcher: `mpirun` (Open MPI) or `mpiexec` (hydra).
    #[default]
    Mpirun,
    /// `srun`, inside a Slurm allocation ([`srun`]).
    Srun,
}

impl LaunchMethod {
    /// The name `--launcher` and [`ENV_LAUNCH_METHOD`] use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mpirun => "mpirun",
            Self::Srun => "srun",
        }
    }

    /// The method [`ENV_LAUNCH_METHOD`] names in this process's environment
    /// ([`LaunchMethod::Mpirun`] when unset or not `srun`).
    pub fn from_env() -> Self {
        match std::env::var(ENV_LAUNCH_METHOD).as_deref().map(str::trim) {
            Ok("srun") => Self::Srun,
            _ => Self::Mpirun,
        }
    }
}

/// The variables that give a process its rank in its launch (or spawn, or job step),
/// in the order they are looked at: Open MPI, hydra, PMIx, srun.
pub const RANK_IN_LAUNCH_VARIABLES: [&str; 4] = [
    openmpi4::WORLD_RANK_VARIABLE,
    mpich::WORLD_RANK_VARIABLE,
    openmpi5::PMIX_RANK_VARIABLE,
    srun::WORLD_RANK_VARIABLE,
];

/// Tells the ranks what launched them (`mpirun` or `srun`, [`LaunchMethod`]).
pub const ENV_LAUNCH_METHOD: &str = "RANKMIG_LAUNCH_METHOD";

/// The launcher of `implementation` started by `method`.
///
/// ```
/// use rankmig::launcher::{LaunchMethod, MpiImplementation, launcher_for};
/// let srun = launcher_for(MpiImplementation::Mpich, LaunchMethod::Srun);
/// assert_eq!(srun.program(), "srun");
/// assert!(!srun.capabilities().spawn);
/// assert!(srun.capabilities().launch_replacements);
/// assert_eq!(launcher_for(MpiImplementation::Mpich, LaunchMethod::Mpirun).program(), "mpiexec");
/// ```
pub fn launcher_for(
    implementation: MpiImplementation,
    method: LaunchMethod,
) -> &'static dyn Launcher {
    match (method, implementation) {
        (LaunchMethod::Mpirun, _) => launcher(implementation),
        (LaunchMethod::Srun, MpiImplementation::OpenMpi4) => &srun::FOR_OPENMPI4,
        (LaunchMethod::Srun, MpiImplementation::OpenMpi5) => &srun::FOR_OPENMPI5,
        (LaunchMethod::Srun, MpiImplementation::Mpich) => &srun::FOR_MPICH,
    }
}

/// The launcher of `implementation`.
pub fn launcher(implementation: MpiImplementation) -> &'static dyn Launcher {
    match implementation {
        MpiImplementation::OpenMpi4 => &openmpi4::OpenMpi4,
        MpiImplementation::OpenMpi5 => &openmpi5::OpenMpi5,
        MpiImplementation::Mpich => &mpich::Mpich,
    }
}

/// This rank's rank on its host, from the variable of the implementation named by
/// [`ENV_MPI`], else from the first variable of any implementation that is set.
///
/// ```
/// use rankmig::launcher::local_rank_from;
/// let env = |k: &str| (k == "MPI_LOCALRANKID").then(|| "3".to_owned());
/// assert_eq!(local_rank_from(env), Some(3));
/// assert_eq!(local_rank_from(|_| None), None);
/// ```
pub fn local_rank_from(get: impl Fn(&str) -> Option<String>) -> Option<usize> {
    let named = get(ENV_MPI).and_then(|v| v.parse::<MpiImplementation>().ok());
    let order = named
        .into_iter()
        .chain(MpiImplementation::ALL)
        .map(|m| launcher(m).local_rank_variable());
    for variable in order {
        if let Some(v) = get(variable).and_then(|v| v.trim().parse().ok()) {
            return Some(v);
        }
    }
    None
}

/// True when this process runs as root (Open MPI then needs `--allow-run-as-root`).
pub(crate) fn running_as_root() -> bool {
    // SAFETY: geteuid(2) has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// Hosts in `placement` order, grouped into runs of consecutive ranks on one host:
/// `[(host, count)]` such that rank *i* is in the run that covers it.
///
/// ```
/// use rankmig::launcher::host_runs;
/// use rankmig::planner::{Location, Placement};
/// let at = |n: &[&str]| Placement::new(n.iter().map(|n| Location { node: (*n).into(), core: 0 }).collect());
/// assert_eq!(host_runs(&at(&["b", "a", "b", "b"])), [("b", 1), ("a", 1), ("b", 2)]);
/// ```
pub fn host_runs(placement: &Placement) -> Vec<(&str, usize)> {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for l in placement.locations() {
        match runs.last_mut() {
            Some((host, count)) if *host == l.node => *count += 1,
            _ => runs.push((l.node.as_str(), 1)),
        }
    }
    runs
}

/// Owned `(variable, value)` pairs, for the settings the launchers return.
fn owned_pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The hosts of `hosts` that hold no rank of `placement`, in order.
fn hosts_without_ranks<'a>(placement: &Placement, hosts: &'a [String]) -> Vec<&'a str> {
    hosts
        .iter()
        .filter(|h| !placement.locations().iter().any(|l| &l.node == *h))
        .map(String::as_str)
        .collect()
}

/// The host a line of an Open MPI runtime's (ORTE's or PRRTE's) failure messages names:
/// "... on node NAME exited on signal ...", "Remote daemon: ... on node NAME", "...
/// daemon ... on node NAME".
fn open_mpi_lost_host(line: &str, hosts: &[String]) -> Option<String> {
    let failure = [
        "exited on signal",
        "Remote daemon",
        "lost communication",
        "daemon",
    ]
    .iter()
    .any(|w| line.contains(w));
    if !failure {
        return None;
    }
    host_after(line, "on node ", hosts)
}

/// The host of `hosts` named right after `marker` in `line`.
fn host_after(line: &str, marker: &str, hosts: &[String]) -> Option<String> {
    let after = line.split(marker).nth(1)?.trim_start();
    let name = after
        .split(|c: char| c.is_whitespace() || c == ',' || c == ')' || c == ':')
        .next()?
        .trim_end_matches('.');
    hosts.iter().find(|h| *h == name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_implementation_reads_its_own_lost_host_messages() {
        let hosts = ["h1".to_owned(), "h2".to_owned()];
        let ompi =
            "mpirun noticed that process rank 3 with PID 0 on node h2 exited on signal 9 (Killed).";
        for m in [MpiImplementation::OpenMpi4, MpiImplementation::OpenMpi5] {
            assert_eq!(launcher(m).lost_host(ompi, &hosts), Some("h2".into()));
            assert_eq!(
                launcher(m).lost_host("  Remote daemon: [[1,0],2] on node h1", &hosts),
                Some("h1".into())
            );
            assert_eq!(
                launcher(m).lost_host("rank 0 on node h1 says hi", &hosts),
                None
            );
        }
        assert_eq!(
            launcher(MpiImplementation::OpenMpi5).lost_host("  Remote host:   h2", &hosts),
            Some("h2".into())
        );
        let hydra = "=   RANK 5 PID 1234 RUNNING AT h2";
        assert_eq!(
            launcher(MpiImplementation::Mpich).lost_host(hydra, &hosts),
            Some("h2".into())
        );
        assert_eq!(
            launcher(MpiImplementation::Mpich).lost_host(
                "ssh: connect to host h1 port 22: Connection refused",
                &hosts
            ),
            Some("h1".into())
        );
        assert_eq!(
            launcher(MpiImplementation::Mpich).lost_host("RUNNING AT h9", &hosts),
            None
        );
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for m in MpiImplementation::ALL {
            assert_eq!(m.name().parse::<MpiImplementation>().unwrap(), m);
            assert_eq!(launcher(m).implementation(), m);
        }
        let e = "intelmpi".parse::<MpiImplementation>().unwrap_err();
        assert!(e.to_string().contains("\"intelmpi\""), "{e}");
    }
}
