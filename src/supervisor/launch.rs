//! `rankmig run`: the run specification, the initial placement and the run directory.
//!
//! In multi-host mode (an allocation from `--hostfile`, Slurm or PBS: see
//! [`crate::allocation`]) the availability file names hosts of the allocation and each
//! rank starts on its planned host (the launcher of the job's MPI implementation,
//! [`crate::launcher`], says how). Otherwise the nodes of the availability file are
//! logical nodes of this host: every rank starts here and is told its logical node and
//! core (`RANKMIG_PLACEMENT`); it binds itself accordingly. [`super::supervise`] runs
//! the launcher and restarts after a lost host.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::availability::{Availability, AvailabilityFormat};
use crate::topology::{CacheLevels, LeafKind, TopologySpec, Tree};

use crate::allocation::{Allocation, AllocationError, without_lost_hosts};
use crate::launcher::{Launcher, MpiImplementation};
use crate::matrix::{CommMatrix, MatrixFormat, SymGraph};
use crate::planner::{Placement, RankSlots, logical_node_tree};

/// How a job is launched; saved as `run.json` so `--restart` can launch it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Ranks.
    pub ranks: usize,
    /// Cores each rank runs on, and where that came from (`--cores-per-rank`, ...); an
    /// older `run.json` without it ran ranks of one core.
    #[serde(default)]
    pub cores_per_rank: super::cores_per_rank::CoresPerRank,
    /// The availability file (absolute).
    pub availability: PathBuf,
    /// Matrix used for placement and planning, if any (absolute).
    pub matrix: Option<PathBuf>,
    /// Its format (`--matrix-format`).
    #[serde(default)]
    pub matrix_format: MatrixFormat,
    /// Checkpoint directory (absolute).
    pub ckpt_dir: PathBuf,
    /// Node-local checkpoint directory (`--ckpt-local`), `%h` for the host name.
    #[serde(default)]
    pub ckpt_local: Option<PathBuf>,
    /// Epochs whose number is a multiple of this are flushed from the node-local
    /// directory to `ckpt_dir` (`--ckpt-flush-every`).
    #[serde(default = "default_flush_every")]
    pub ckpt_flush_every: u64,
    /// Run directory (absolute).
    pub run_dir: PathBuf,
    /// Calls between availability checks; 0 = paced by time (`check_interval_ms`).
    pub check_every: u64,
    /// Wall time between availability checks when `check_every` is 0.
    #[serde(default = "default_check_interval_ms")]
    pub check_interval_ms: u64,
    /// How long an edit of the availability file must stay unchanged before the job
    /// acts on it (`--settle`).
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
    /// Program and its arguments.
    pub program: Vec<String>,
    /// Extra environment for the ranks (`NAME=VALUE`).
    pub env: Vec<(String, String)>,
    /// The hosts the job may use (multi-host mode); `None` = logical nodes of this host.
    #[serde(default)]
    pub allocation: Option<Allocation>,
    /// Extra `mpirun` options (`--mpirun-arg`).
    #[serde(default)]
    pub mpirun_args: Vec<String>,
    /// The tree of one node for planning (`--node-topology`).
    #[serde(default)]
    pub node_topology: Option<String>,
    /// Trees read from hwloc drop their shared caches (`--no-shared-caches`).
    #[serde(default)]
    pub no_shared_caches: bool,
    /// Hosts found lost at an earlier launch of this run (never used again).
    #[serde(default)]
    pub lost_hosts: Vec<String>,
    /// How long a spawn may take before the job is stopped and launched again from the
    /// checkpoint taken before it (`--spawn-timeout`); 0 = not watched.
    #[serde(default = "default_spawn_timeout_ms")]
    pub spawn_timeout_ms: u64,
    /// The MPI implementation that launches the job (`--mpi`, or found on `PATH`); an
    /// older `run.json` without it was an Open MPI 4.1 run.
    #[serde(default)]
    pub mpi: MpiImplementation,
    /// The availability file may name hosts outside the allocation
    /// (`--allow-new-hosts`): they are used, probed and recorded like the others.
    #[serde(default)]
    pub allow_new_hosts: bool,
    /// How long a rank may make no progress before the job is stopped and launched again
    /// (`--stall-timeout`, milliseconds); `None`: the default of
    /// [`super::stall_watch`]; `Some(0)`: not watched.
    #[serde(default)]
    pub stall_timeout_ms: Option<u64>,
    /// The resource manager the supervisor follows (`--rms`); `availability` is then
    /// the file the supervisor writes from what it says.
    #[serde(default)]
    pub rms: Option<crate::rms::RmsSettings>,
    /// Hosts handed back to the resource manager (`--rms-release`), never used again.
    #[serde(default)]
    pub released_hosts: Vec<String>,
    /// The contention watch (`--contention-watch` and its settings).
    #[serde(default)]
    pub contention: crate::contention::ContentionSettings,
    /// What starts the ranks (`--launcher`): the MPI's own launcher, or `srun` as a
    /// Slurm job step; an older `run.json` without it used the MPI's.
    #[serde(default)]
    pub launch_method: crate::launcher::LaunchMethod,
}

impl RunSpec {
    /// The cache levels of the node trees read from hwloc.
    pub fn cache_levels(&self) -> CacheLevels {
        CacheLevels::unless_dropped(self.no_shared_caches)
    }

    /// The launcher of the job's MPI implementation, as the job is started (the MPI's
    /// own or `srun`).
    pub fn launcher(&self) -> &'static dyn Launcher {
        crate::launcher::launcher_for(self.mpi, self.launch_method)
    }

    /// The hosts of `allocation` not found lost nor released; with `--allow-new-hosts`, followed by
    /// the hosts outside it that the availability file names now (an unreadable file
    /// adds none).
    pub fn usable_hosts(&self, allocation: &Allocation) -> Vec<String> {
        let mut hosts = allocation.host_names();
        if self.allow_new_hosts {
            if let Ok(file) = Availability::load(&self.availability, AvailabilityFormat::Auto) {
                for node in file.nodes() {
                    if !hosts.contains(&node.name) {
                        hosts.push(node.name.clone());
                    }
                }
            }
        }
        hosts.retain(|h| !self.lost_hosts.contains(h) && !self.released_hosts.contains(h));
        hosts
    }

    /// Refuses `--allow-new-hosts` with an implementation that cannot start processes
    /// outside the hosts it was launched on.
    pub fn check_new_hosts(&self) -> Result<(), LaunchError> {
        if self.allow_new_hosts && !self.launcher().capabilities().add_hosts {
            return Err(LaunchError::NewHostsUnsupported(self.mpi));
        }
        Ok(())
    }
}

fn default_flush_every() -> u64 {
    crate::checkpoint::config::DEFAULT_FLUSH_EVERY
}

fn default_check_interval_ms() -> u64 {
    crate::run_dir::settings::DEFAULT_CHECK_INTERVAL_MS
}

fn default_settle_ms() -> u64 {
    crate::run_dir::settings::DEFAULT_SETTLE_MS
}

fn default_spawn_timeout_ms() -> u64 {
    crate::run_dir::spawn_watch::DEFAULT_SPAWN_TIMEOUT_MS
}

/// Why a run could not be launched.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The availability file is unusable.
    #[error(transparent)]
    Availability(#[from] crate::availability::AvailabilityError),
    /// The matrix is unusable.
    #[error(transparent)]
    Matrix(#[from] crate::matrix::MatrixError),
    /// No initial placement.
    #[error(transparent)]
    Plan(#[from] crate::planner::PlanError),
    /// The matrix does not match the rank count.
    #[error("{}: the matrix has {found} ranks but -n is {ranks}", path.display())]
    MatrixOrder {
        /// The matrix file.
        path: PathBuf,
        /// Its order.
        found: usize,
        /// The rank count asked for.
        ranks: usize,
    },
    /// The run directory could not be written or read.
    #[error("{}: {source}", path.display())]
    RunDir {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `run.json` does not parse.
    #[error("{}: {source}", path.display())]
    RunSpec {
        /// The path.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// The launcher (`mpirun`, `mpiexec`) could not be started.
    #[error("cannot start {program}: {source} (is an MPI installed and on PATH?)")]
    Launcher {
        /// The launch command.
        program: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// Another run follows the same availability file.
    #[error(transparent)]
    AvailabilityTaken(#[from] super::availability_lock::AvailabilityTaken),
    /// rankmig's own signal handling could not be set up.
    #[error("cannot watch signals: {0}")]
    Signals(std::io::Error),
    /// `--allow-new-hosts` with an implementation that cannot add hosts.
    #[error(
        "--allow-new-hosts: {} cannot start processes on a host outside those it was launched on (MPICH and Open MPI 5 can)",
        .0.title()
    )]
    NewHostsUnsupported(MpiImplementation),
    /// The resource manager could not be asked (`--rms`).
    #[error(transparent)]
    Rms(#[from] crate::rms::RmsError),
    /// The logical node tree could not be built.
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
    /// The allocation is unusable, or the availability names a host outside it.
    #[error(transparent)]
    Allocation(#[from] AllocationError),
    /// No program given.
    #[error("no program to run: give it after --, e.g. rankmig run -n 8 -a av -- ./app")]
    NoProgram,
    /// The program is not an executable file (or not found in `PATH`).
    #[error("program '{0}' not found or not executable (give a path, or a name found in PATH)")]
    ProgramNotFound(String),
    /// Ranks of the job did not run on the hosts their placement names: the launcher
    /// mapped them elsewhere, and the job was stopped.
    #[error(
        "{what}: {program} mapped the ranks otherwise than their placement (a launcher option such as -ppn or --map-by, or a launcher that maps by its own rule), and the plan's costs and core bindings would be wrong; the job was stopped: remove that option and resume it with `rankmig run --restart {}`",
        run_dir.display()
    )]
    Misplaced {
        /// The first misplaced rank, where it ran and where it was planned.
        what: String,
        /// The launch command.
        program: &'static str,
        /// The run directory.
        run_dir: PathBuf,
    },
    /// The run directory holds an earlier run.
    #[error(
        "{}: holds the records of an earlier run; give another --run-dir, --force to replace those records, or --restart {} to go on with that run",
        path.display(),
        path.display()
    )]
    RunDirInUse {
        /// The run directory.
        path: PathBuf,
    },
}

/// Absolute form of a path (relative to the current directory).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

fn graph_for(spec: &RunSpec) -> Result<SymGraph, LaunchError> {
    match &spec.matrix {
        None => Ok(SymGraph::empty(spec.ranks)),
        Some(path) => {
            let m = CommMatrix::load(path, spec.matrix_format)?;
            if m.order() != spec.ranks {
                return Err(LaunchError::MatrixOrder {
                    path: path.clone(),
                    found: m.order(),
                    ranks: spec.ranks,
                });
            }
            Ok(m.symmetric())
        }
    }
}

/// The availability the job starts with: the file, less the hosts found lost, checked
/// against the allocation in multi-host mode.
pub fn starting_availability(spec: &RunSpec) -> Result<Availability, LaunchError> {
    read_starting_availability(spec).map(|(_, availability)| availability)
}

/// [`starting_availability`], and the content of the file it was read from.
fn read_starting_availability(spec: &RunSpec) -> Result<(Vec<u8>, Availability), LaunchError> {
    let bytes = std::fs::read(&spec.availability).map_err(|source| {
        crate::availability::AvailabilityError::Read {
            path: spec.availability.clone(),
            source,
        }
    })?;
    let availability = checked_availability(spec, &bytes, &spec.availability)?;
    Ok((bytes, availability))
}

/// The availability of content `bytes` (read from `origin`) as a launch of `spec` may
/// use it: parsed, within the allocation in multi-host mode, less the hosts found lost.
fn checked_availability(
    spec: &RunSpec,
    bytes: &[u8],
    origin: &Path,
) -> Result<Availability, LaunchError> {
    let origin = origin.display().to_string();
    let text = String::from_utf8_lossy(bytes);
    let file = Availability::parse(&text, &origin, AvailabilityFormat::Auto)?;
    if let (Some(allocation), false) = (&spec.allocation, spec.allow_new_hosts) {
        allocation.check(&file, &origin)?;
    }
    Ok(without_lost_hosts(&file, &spec.lost_hosts)?)
}

/// The availability a launch of `kind` starts with, and the content it was read from.
/// A relaunch ([`LaunchKind::Relaunch`]) that finds the file unreadable or invalid
/// says so and uses the last content the job accepted instead: the newest usable one of
/// the run directory's accepted copy
/// ([`crate::run_dir::record::ACCEPTED_AVAILABILITY`]) and the copies its launches were
/// placed for (`availability-*.txt`). The ranks then refuse the file's content at their
/// first check, as during the run, and go on watching it. Other launches fail.
fn launch_availability(
    spec: &RunSpec,
    kind: LaunchKind,
) -> Result<(Vec<u8>, Availability), LaunchError> {
    let error = match read_starting_availability(spec) {
        Ok(found) => return Ok(found),
        Err(error) if kind == LaunchKind::Relaunch => error,
        Err(error) => return Err(error),
    };
    for copy in accepted_copies(&spec.run_dir) {
        let Ok(bytes) = std::fs::read(&copy) else {
            continue;
        };
        if let Ok(availability) = checked_availability(spec, &bytes, &copy) {
            log::warn!(
                "{error}: relaunching on the last availability the job accepted ({}); the file is still watched",
                copy.display()
            );
            return Ok((bytes, availability));
        }
    }
    Err(error)
}

/// The copies of the availability file kept in `run_dir` (accepted by the job, or
/// placed for by a launch), newest first.
fn accepted_copies(run_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let mut copies: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("availability-") && n.ends_with(".txt"))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    copies.sort();
    copies.into_iter().rev().map(|(_, path)| path).collect()
}

/// The tree of one node used for the initial placement: `--node-topology`, else (in
/// multi-host mode) this machine's live tree, else a flat node as large as the
/// largest offer.
pub fn node_tree(spec: &RunSpec, availability: &Availability) -> Result<Tree, LaunchError> {
    match (&spec.node_topology, &spec.allocation) {
        (Some(t), _) => Ok(t
            .parse::<TopologySpec>()?
            .load_with(LeafKind::Core, spec.cache_levels())?),
        (None, Some(_)) => Ok(TopologySpec::Live.load_with(LeafKind::Core, spec.cache_levels())?),
        (None, None) => Ok(logical_node_tree(availability, 1)?),
    }
}

/// Initial placement of the job for the current availability, and the cores of the
/// planning tree's node.
pub fn initial_placement(spec: &RunSpec) -> Result<(Placement, usize), LaunchError> {
    planned_placement(spec, LaunchKind::Fresh).map(|planned| (planned.placement, planned.cores))
}

/// What a launch is placed for and where its ranks go.
#[derive(Debug, Clone)]
pub(super) struct PlannedLaunch {
    /// Where each rank starts (cores are rank slots: groups of the ranks' cores).
    pub placement: Placement,
    /// Cores of the planning tree's node (in cores, not slots).
    pub cores: usize,
    /// The content of the availability file the launch was planned for.
    pub content: Vec<u8>,
    /// That availability.
    pub availability: Availability,
}

/// [`initial_placement`] for a launch of `kind`, with the availability it was planned
/// for. Ranks of several cores ([`RunSpec::cores_per_rank`]) are placed on groups of
/// that many cores ([`RankSlots`]); a node offering fewer is named and left out.
pub(super) fn planned_placement(
    spec: &RunSpec,
    kind: LaunchKind,
) -> Result<PlannedLaunch, LaunchError> {
    let (content, availability) = launch_availability(spec, kind)?;
    let cores_tree = node_tree(spec, &availability)?;
    let slots = RankSlots::new(spec.cores_per_rank.count);
    for (node, cores) in slots.too_small(&availability) {
        log::warn!(
            "{node} offers {cores} cores, fewer than one rank's {}: no rank is placed there",
            slots.cores_per_rank()
        );
    }
    let mut placement = slots.place(&availability, &graph_for(spec)?, &cores_tree)?;
    if let Some(allocation) = &spec.allocation {
        let get = |k: &str| std::env::var(k).ok();
        let in_slurm = crate::rms::slurm::current_job().is_some();
        if in_slurm && spec.launcher().srun_needs_one_block_per_host(&get) {
            placement = placement.in_node_blocks(&allocation.host_names());
        }
    }
    Ok(PlannedLaunch {
        placement,
        cores: cores_tree.leaf_count(),
        content,
        availability,
    })
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), LaunchError> {
    std::fs::write(path, text).map_err(|source| LaunchError::RunDir {
        path: path.to_owned(),
        source,
    })
}

/// Which launch of a run a launch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchKind {
    /// The first launch of a new run.
    Fresh,
    /// A launch from the newest complete checkpoint asked for by the user (`rankmig run
    /// --restart`): the availability file must be usable.
    Restart,
    /// A launch from the newest complete checkpoint by `rankmig run` itself (automatic
    /// restart, stall or spawn watch, hosts handed back, a relaunch the ranks asked
    /// for): an unusable availability file is replaced by the last content the job
    /// accepted.
    Relaunch,
}

impl LaunchKind {
    /// True when the launch resumes from the newest complete checkpoint.
    pub fn from_checkpoint(self) -> bool {
        self != LaunchKind::Fresh
    }
}

/// The program of `spec` is given and is an executable file.
pub fn check_program(spec: &RunSpec) -> Result<(), LaunchError> {
    let Some(program) = spec.program.first() else {
        return Err(LaunchError::NoProgram);
    };
    if is_executable(program) {
        Ok(())
    } else {
        Err(LaunchError::ProgramNotFound(program.clone()))
    }
}

/// True when `program` names an executable file: a path (with a `/`), or a name found
/// in one of the directories of `PATH`, as the launcher looks it up.
fn is_executable(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| executable(&d.join(program))))
}

/// The files a run leaves in its run directory (the checkpoint directory aside).
const RUN_RECORDS: [&str; 10] = [
    crate::run_dir::record::RUN_SPEC,
    crate::run_dir::record::MATRIX,
    crate::run_dir::record::MISPLACED,
    super::stall_watch::STALLS,
    crate::run_dir::record::RECONFIGURATIONS,
    crate::run_dir::record::PROCESSES,
    "rankfile",
    crate::run_dir::record::RELAUNCH_REQUEST,
    crate::rms::RMS_AVAILABILITY,
    "iterations",
];

/// Before a new run: refuses a run directory with an earlier run's records in it, or
/// with `force` removes those records (`run.json`, `matrix.mat`, `reconfigurations.jsonl`,
/// `processes.csv`, `rankfile`, `misplaced.txt`, `stalls.txt`, `iterations/`,
/// `placement-*.txt`, `hostfile-*.txt`,
/// `availability-*.txt`, `rms-availability`) and
/// nothing else, so two runs never mix in one report.
pub fn claim_run_dir(run_dir: &Path, force: bool) -> Result<(), LaunchError> {
    let is_record = |name: &str| {
        RUN_RECORDS.contains(&name)
            || (["placement-", "hostfile-", "availability-"]
                .iter()
                .any(|prefix| name.starts_with(prefix))
                && name.ends_with(".txt"))
    };
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Ok(());
    };
    let records: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(is_record))
        .map(|e| e.path())
        .collect();
    if records.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(LaunchError::RunDirInUse {
            path: run_dir.to_owned(),
        });
    }
    for path in records {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|source| LaunchError::RunDir {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Writes `run.json` ([`crate::run_dir::record::RUN_SPEC`]); only the supervisor writes it.
pub fn save_spec(spec: &RunSpec) -> Result<(), LaunchError> {
    let path = spec.run_dir.join(crate::run_dir::record::RUN_SPEC);
    let json = serde_json::to_string_pretty(spec).map_err(|source| LaunchError::RunSpec {
        path: path.clone(),
        source,
    })?;
    write(&path, &json)
}

/// Reads `run.json` of a run directory: the one place it is read.
pub fn load_spec(run_dir: &Path) -> Result<RunSpec, LaunchError> {
    let path = run_dir.join(crate::run_dir::record::RUN_SPEC);
    let text = std::fs::read_to_string(&path).map_err(|source| LaunchError::RunDir {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| LaunchError::RunSpec { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run spec as an older rankmig saved it (no `no_shared_caches` field), on the
    /// synthetic node `topology`.
    fn spec_on(topology: &str) -> RunSpec {
        let json = serde_json::json!({
            "ranks": 4, "availability": "/av", "matrix": null, "ckpt_dir": "/c",
            "run_dir": "/r", "check_every": 0, "program": ["app"], "env": [],
            "node_topology": topology,
        });
        serde_json::from_value(json).expect("an old run.json still reads")
    }

    #[test]
    fn the_planning_tree_keeps_shared_caches_unless_run_drops_them() {
        let availability = Availability::parse("n1 4\n", "test", AvailabilityFormat::Auto).unwrap();
        let mut spec = spec_on("synthetic:pack:2 l3:2 core:3 pu:1");
        assert!(!spec.no_shared_caches);
        let kept = node_tree(&spec, &availability).unwrap();
        assert_eq!(
            kept.describe_levels(),
            "Machine:1(x2) Package:2(x2) L3Cache:4(x3) Core:12"
        );
        spec.no_shared_caches = true;
        let dropped = node_tree(&spec, &availability).unwrap();
        assert_eq!(
            dropped.describe_levels(),
            "Machine:1(x2) Package:2(x6) Core:12"
        );
    }
}
