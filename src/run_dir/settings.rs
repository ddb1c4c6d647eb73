//! What `rankmig run` tells the ranks of a job, through the environment.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Run directory (records: placements, plans, per-iteration times). Unset = the job runs
/// without availability watching or records, as a plain checkpointing application.
pub const ENV_RUN_DIR: &str = "RANKMIG_RUN_DIR";
/// The availability file to watch.
pub const ENV_AVAILABILITY: &str = "RANKMIG_AVAILABILITY";
/// A copy of the availability file as it was when the launch was placed: the job
/// starts following that content, so an edit made while the job was starting (or being
/// launched again) is acted on instead of being taken for the starting availability.
pub const ENV_PLANNED_AVAILABILITY: &str = "RANKMIG_PLANNED_AVAILABILITY";
/// `checkpoint!` calls between two availability checks; unset or 0: paced by time.
pub const ENV_CHECK_EVERY: &str = "RANKMIG_CHECK_EVERY";
/// Milliseconds between two availability checks when not paced by calls (default 1000).
pub const ENV_CHECK_INTERVAL_MS: &str = "RANKMIG_CHECK_INTERVAL_MS";
/// The default time between two availability checks: one second.
pub const DEFAULT_CHECK_INTERVAL_MS: u64 = 1000;
/// Format of `RANKMIG_MATRIX`: `auto` (default), `dense`, `edges` or `prof`.
pub const ENV_MATRIX_FORMAT: &str = "RANKMIG_MATRIX_FORMAT";
/// The initial placement file (`RANK NODE CORE`).
pub const ENV_PLACEMENT: &str = "RANKMIG_PLACEMENT";
/// Cores of the largest logical node (the node tree used for planning is flat).
pub const ENV_CORES_PER_NODE: &str = "RANKMIG_CORES_PER_NODE";
/// Cores each rank runs on (`rankmig run --cores-per-rank`; default 1): a node of N
/// cores holds ⌊N/C⌋ ranks, a placement's core is a group of C cores of its node
/// ([`crate::planner::RankSlots`]).
pub const ENV_CORES_PER_RANK: &str = "RANKMIG_CORES_PER_RANK";
/// The `rankmig` command of the run (set by `rankmig run`): with ranks of several
/// cores, replacement processes are started through its `bind-exec`, which binds them
/// to their cores before the program starts ([`super::cpu_sets`]).
pub const ENV_RANKMIG_EXE: &str = "RANKMIG_EXE";
/// A communication matrix file used for planning instead of the live counts.
pub const ENV_MATRIX: &str = "RANKMIG_MATRIX";
/// Hosts of the allocation, comma separated: set in multi-host mode, where node names
/// are host names and replacement processes are spawned on their target host. Unset:
/// the nodes are logical nodes of one host.
pub const ENV_HOSTS: &str = "RANKMIG_HOSTS";
/// Set to `1` where the hosts of the job are emulated on one machine and share its
/// CPUs: by `rankmig run --emulated-cluster` in its own environment, which its
/// launcher, the daemons its agent starts and so every rank inherit (and the ranks get
/// it among the caller's `RANKMIG_*` variables); set it yourself before `rankmig run`
/// for other hosts of one machine (Slurm's nodes of one machine,
/// `scripts/emulated_slurm.sh`). A rank then binds to a real CPU offset by its host's
/// place in the availability, as on logical nodes, instead of its host's core (see
/// `docs/running.md`).
pub const ENV_EMULATED_HOSTS: &str = "RANKMIG_EMULATED_HOSTS";
/// Hosts found lost (their daemon died), comma separated: the job treats them as
/// offering no core whatever the availability file says.
pub const ENV_LOST_HOSTS: &str = "RANKMIG_LOST_HOSTS";
/// The tree of one node for planning (`synthetic:...`, `xml:FILE` or `live`); in
/// multi-host mode the default is the live tree of the ranks' hosts.
pub const ENV_NODE_TOPOLOGY: &str = "RANKMIG_NODE_TOPOLOGY";
/// Milliseconds an edited availability file must keep the same content before the job
/// acts on it (default 3000; 0 acts at the first check that sees the edit).
pub const ENV_SETTLE_MS: &str = "RANKMIG_SETTLE_MS";
/// Default of [`ENV_SETTLE_MS`]: a file written in two steps a second or two apart
/// (`echo … > av; sleep 2; echo … >> av`) gives one reconfiguration, not two.
pub const DEFAULT_SETTLE_MS: u64 = 3000;
/// Set to `1` when the node trees read from hwloc drop their shared caches
/// (`rankmig run --no-shared-caches`).
pub const ENV_NO_SHARED_CACHES: &str = "RANKMIG_NO_SHARED_CACHES";
/// Set to `1` when the availability file may name hosts outside the allocation, which
/// the job then spawns ranks on (`rankmig run --allow-new-hosts`).
pub const ENV_ALLOW_NEW_HOSTS: &str = "RANKMIG_ALLOW_NEW_HOSTS";
/// Program spawned for replacement processes (default: this executable). A test knob:
/// a program that cannot start makes the spawn fail.
pub const ENV_SPAWN_PROGRAM: &str = "RANKMIG_SPAWN_PROGRAM";

/// Set to `1` to spawn replacement processes from every rank with the application held
/// for the whole spawn (the path taken anyway when MPI runs without
/// `MPI_THREAD_MULTIPLE`), instead of on a helper thread of rank 0 while the
/// application computes.
pub const ENV_BLOCKING_SPAWN: &str = "RANKMIG_BLOCKING_SPAWN";

/// The job-wide settings every rank reads (and hands to the processes it spawns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobSettings {
    /// Run directory.
    pub run_dir: Option<PathBuf>,
    /// Availability file.
    pub availability: Option<PathBuf>,
    /// The content the launch was placed for ([`ENV_PLANNED_AVAILABILITY`]).
    pub planned_availability: Option<PathBuf>,
    /// How availability checks are spaced.
    pub check_spacing: CheckSpacing,
    /// Initial placement file.
    pub placement: Option<PathBuf>,
    /// Cores per logical node (planning tree).
    pub cores_per_node: usize,
    /// Cores each rank runs on ([`ENV_CORES_PER_RANK`]).
    pub cores_per_rank: usize,
    /// The `rankmig` command that binds replacements before they start
    /// ([`ENV_RANKMIG_EXE`]).
    pub rankmig_exe: Option<PathBuf>,
    /// Matrix file for planning.
    pub matrix: Option<PathBuf>,
    /// Its format.
    #[serde(default)]
    pub matrix_format: crate::matrix::MatrixFormat,
    /// Program to spawn.
    pub spawn_program: Option<PathBuf>,
    /// Hosts of the allocation (multi-host mode); empty = logical nodes of one host.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Hosts found lost.
    #[serde(default)]
    pub lost_hosts: Vec<String>,
    /// The node tree given with `--node-topology`.
    #[serde(default)]
    pub node_topology: Option<String>,
    /// Node trees read from hwloc drop their shared caches.
    #[serde(default)]
    pub no_shared_caches: bool,
    /// How long an edit must stay unchanged before it is acted on, in milliseconds.
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
    /// How long `rankmig run` lets a spawn take before it stops the job and launches
    /// it again, in milliseconds; 0 = nobody watches ([`super::spawn_watch`]).
    #[serde(default)]
    pub spawn_timeout_ms: u64,
    /// What started the ranks ([`crate::launcher::ENV_LAUNCH_METHOD`]): the MPI's
    /// launcher or `srun`.
    pub launch_method: crate::launcher::LaunchMethod,
    /// The MPI implementation that launched the job ([`crate::launcher::ENV_MPI`]);
    /// `None` until the job asks its MPI library.
    #[serde(default)]
    pub mpi: Option<crate::launcher::MpiImplementation>,
    /// The availability file may name hosts outside the allocation.
    #[serde(default)]
    pub allow_new_hosts: bool,
    /// Spawns hold the application for their whole length ([`ENV_BLOCKING_SPAWN`]).
    #[serde(default)]
    pub blocking_spawn: bool,
    /// `rankmig run` starts the replacements of a background migration when rank 0
    /// asks ([`super::launch_request`]), instead of rank 0 spawning them.
    #[serde(default)]
    pub launches_replacements: bool,
    /// The contention watch ([`crate::contention`]).
    #[serde(default)]
    pub contention: crate::contention::ContentionSettings,
}

fn default_settle_ms() -> u64 {
    DEFAULT_SETTLE_MS
}

/// A `RANKMIG_*` variable whose value the job cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {var}={value:?}: {expected}")]
pub struct SettingsError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What it must be.
    pub expected: &'static str,
}

impl JobSettings {
    /// Reads the settings from the environment. An unset or empty variable takes its
    /// default; a value that is set but unusable (`RANKMIG_CHECK_EVERY=ten`) is an
    /// error, as bad `RANKMIG_CKPT_*` values are.
    pub fn from_env() -> Result<Self, SettingsError> {
        let path = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let list = |k: &str| -> Vec<String> {
            std::env::var(k)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let check_spacing = match env_number(ENV_CHECK_EVERY, 0)? {
            0 => CheckSpacing::Millis(positive(
                ENV_CHECK_INTERVAL_MS,
                env_number(ENV_CHECK_INTERVAL_MS, DEFAULT_CHECK_INTERVAL_MS)?,
            )?),
            calls => CheckSpacing::Calls(calls),
        };
        let cores_per_node = positive(ENV_CORES_PER_NODE, env_number(ENV_CORES_PER_NODE, 1)?)?;
        let cores_per_rank = positive(ENV_CORES_PER_RANK, env_number(ENV_CORES_PER_RANK, 1)?)?;
        Ok(Self {
            run_dir: path(ENV_RUN_DIR),
            availability: path(ENV_AVAILABILITY),
            planned_availability: path(ENV_PLANNED_AVAILABILITY),
            check_spacing,
            placement: path(ENV_PLACEMENT),
            cores_per_node: usize::try_from(cores_per_node).map_err(|_| SettingsError {
                var: ENV_CORES_PER_NODE,
                value: cores_per_node.to_string(),
                expected: "a core count this machine can address",
            })?,
            cores_per_rank: usize::try_from(cores_per_rank).map_err(|_| SettingsError {
                var: ENV_CORES_PER_RANK,
                value: cores_per_rank.to_string(),
                expected: "a core count this machine can address",
            })?,
            rankmig_exe: path(ENV_RANKMIG_EXE),
            matrix: path(ENV_MATRIX),
            matrix_format: env_matrix_format()?,
            spawn_program: path(ENV_SPAWN_PROGRAM),
            hosts: list(ENV_HOSTS),
            lost_hosts: list(ENV_LOST_HOSTS),
            node_topology: std::env::var(ENV_NODE_TOPOLOGY)
                .ok()
                .filter(|v| !v.trim().is_empty()),
            no_shared_caches: env_flag(ENV_NO_SHARED_CACHES)?,
            settle_ms: env_number(ENV_SETTLE_MS, DEFAULT_SETTLE_MS)?,
            spawn_timeout_ms: env_number(super::spawn_watch::ENV_SPAWN_TIMEOUT_MS, 0)?,
            mpi: env_mpi()?,
            launch_method: crate::launcher::LaunchMethod::from_env(),
            allow_new_hosts: env_flag(ENV_ALLOW_NEW_HOSTS)?,
            blocking_spawn: env_flag(ENV_BLOCKING_SPAWN)?,
            launches_replacements: env_flag(super::launch_request::ENV_LAUNCHES_REPLACEMENTS)?,
            contention: crate::contention::ContentionSettings::from_env().map_err(|e| {
                SettingsError {
                    var: e.var,
                    value: e.value,
                    expected: e.expected,
                }
            })?,
        })
    }

    /// The cache levels of the node trees read from hwloc.
    pub fn cache_levels(&self) -> crate::topology::CacheLevels {
        crate::topology::CacheLevels::unless_dropped(self.no_shared_caches)
    }

    /// True in multi-host mode: node names are hosts of the allocation.
    pub fn multi_host(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// How long an availability edit must stay unchanged before the job acts on it.
    pub fn settle(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.settle_ms)
    }

    /// True when `rankmig run` watches the spawns of this job: each migration commits a
    /// checkpoint first, to launch the job again from should the spawn hang.
    pub fn spawns_watched(&self) -> bool {
        self.run_dir.is_some() && self.spawn_timeout_ms > 0
    }

    /// True when the job watches an availability file and may migrate.
    pub fn migrates(&self) -> bool {
        self.availability.is_some()
    }
}

/// The implementation [`crate::launcher::ENV_MPI`] names, `None` when it is unset.
fn env_mpi() -> Result<Option<crate::launcher::MpiImplementation>, SettingsError> {
    crate::launcher::MpiImplementation::from_env().map_err(|_| SettingsError {
        var: crate::launcher::ENV_MPI,
        value: std::env::var(crate::launcher::ENV_MPI).unwrap_or_default(),
        expected: "openmpi4, openmpi5 or mpich",
    })
}

/// The value of `var`, or `default` when it is unset or empty; an error when it is not
/// a whole number.
fn env_number(var: &'static str, default: u64) -> Result<u64, SettingsError> {
    match std::env::var(var) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(v)) => Err(SettingsError {
            var,
            value: v.to_string_lossy().into_owned(),
            expected: "a whole number (0 or more)",
        }),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => v.trim().parse().map_err(|_| SettingsError {
            var,
            value: v,
            expected: "a whole number (0 or more)",
        }),
    }
}

/// A yes/no variable: unset, empty, `0` or `false` is no; `1` or `true` is yes.
fn env_flag(var: &'static str) -> Result<bool, SettingsError> {
    let value = std::env::var(var).unwrap_or_default();
    match value.trim() {
        "" | "0" | "false" => Ok(false),
        "1" | "true" => Ok(true),
        _ => Err(SettingsError {
            var,
            value,
            expected: "1 or 0",
        }),
    }
}

/// `value` when it is at least 1.
fn positive(var: &'static str, value: u64) -> Result<u64, SettingsError> {
    if value == 0 {
        return Err(SettingsError {
            var,
            value: "0".into(),
            expected: "a whole number of at least 1",
        });
    }
    Ok(value)
}

/// `RANKMIG_MATRIX_FORMAT`: `auto` when unset or empty.
fn env_matrix_format() -> Result<crate::matrix::MatrixFormat, SettingsError> {
    let value = std::env::var(ENV_MATRIX_FORMAT).unwrap_or_default();
    if value.trim().is_empty() {
        return Ok(crate::matrix::MatrixFormat::Auto);
    }
    value.trim().parse().map_err(|_| SettingsError {
        var: ENV_MATRIX_FORMAT,
        value,
        expected: "one of auto, dense, edges, prof",
    })
}

/// How checks are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckSpacing {
    /// Every N calls (N ≥ 1), as `--check-every N` asks.
    Calls(u64),
    /// About every this many milliseconds of wall time.
    Millis(u64),
}

impl Default for CheckSpacing {
    /// Paced by time, one check per second.
    fn default() -> Self {
        Self::Millis(DEFAULT_CHECK_INTERVAL_MS)
    }
}
