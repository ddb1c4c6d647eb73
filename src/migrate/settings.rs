//! What `rankmig run` tells the ranks of a job, through the environment.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Run directory (records: placements, plans, per-iteration times). Unset = the job runs
/// without availability watching or records, as a plain checkpointing application.
pub const ENV_RUN_DIR: &str = "RANKMIG_RUN_DIR";
/// The availability file to watch.
pub const ENV_AVAILABILITY: &str = "RANKMIG_AVAILABILITY";
/// `checkpoint!` calls between two availability checks; unset or 0: paced by time.
pub const ENV_CHECK_EVERY: &str = "RANKMIG_CHECK_EVERY";
/// Milliseconds between two availability checks when not paced by calls (default 1000).
pub const ENV_CHECK_INTERVAL_MS: &str = "RANKMIG_CHECK_INTERVAL_MS";
/// Format of `RANKMIG_MATRIX`: `auto` (default), `dense`, `edges` or `prof`.
pub const ENV_MATRIX_FORMAT: &str = "RANKMIG_MATRIX_FORMAT";
/// The initial placement file (`RANK NODE CORE`).
pub const ENV_PLACEMENT: &str = "RANKMIG_PLACEMENT";
/// Cores of the largest logical node (the node tree used for planning is flat).
pub const ENV_CORES_PER_NODE: &str = "RANKMIG_CORES_PER_NODE";
/// A communication matrix file used for planning instead of the live counts.
pub const ENV_MATRIX: &str = "RANKMIG_MATRIX";
/// Hosts of the allocation, comma separated: set in multi-host mode, where node names
/// are host names and replacement processes are spawned on their target host. Unset:
/// the nodes are logical nodes of one host.
pub const ENV_HOSTS: &str = "RANKMIG_HOSTS";
/// Hosts found lost (their daemon died), comma separated: the job treats them as
/// offering no core whatever the availability file says.
pub const ENV_LOST_HOSTS: &str = "RANKMIG_LOST_HOSTS";
/// The tree of one node for planning (`synthetic:...`, `xml:FILE` or `live`); in
/// multi-host mode the default is the live tree of the ranks' hosts.
pub const ENV_NODE_TOPOLOGY: &str = "RANKMIG_NODE_TOPOLOGY";
/// Set to `1` when the node trees read from hwloc drop their shared caches
/// (`rankmig run --no-shared-caches`).
pub const ENV_NO_SHARED_CACHES: &str = "RANKMIG_NO_SHARED_CACHES";
/// Program spawned for replacement processes (default: this executable). A test knob:
/// a program that cannot start makes the spawn fail.
pub const ENV_SPAWN_PROGRAM: &str = "RANKMIG_SPAWN_PROGRAM";

/// The job-wide settings every rank reads (and hands to the processes it spawns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobSettings {
    /// Run directory.
    pub run_dir: Option<PathBuf>,
    /// Availability file.
    pub availability: Option<PathBuf>,
    /// How availability checks are spaced.
    pub check_spacing: CheckSpacing,
    /// Initial placement file.
    pub placement: Option<PathBuf>,
    /// Cores per logical node (planning tree).
    pub cores_per_node: usize,
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
}

impl JobSettings {
    /// Reads the settings from the environment.
    pub fn from_env() -> Self {
        let path = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let number = |k: &str, default: u64| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&v| v > 0)
                .unwrap_or(default)
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
        Self {
            run_dir: path(ENV_RUN_DIR),
            availability: path(ENV_AVAILABILITY),
            check_spacing: match number(ENV_CHECK_EVERY, 0) {
                0 => CheckSpacing::Millis(number(
                    ENV_CHECK_INTERVAL_MS,
                    super::launch::DEFAULT_CHECK_INTERVAL_MS,
                )),
                calls => CheckSpacing::Calls(calls),
            },
            placement: path(ENV_PLACEMENT),
            cores_per_node: number(ENV_CORES_PER_NODE, 1) as usize,
            matrix: path(ENV_MATRIX),
            matrix_format: std::env::var(ENV_MATRIX_FORMAT)
                .ok()
                .and_then(|v| {
                    <crate::matrix::MatrixFormat as clap::ValueEnum>::from_str(v.trim(), true).ok()
                })
                .unwrap_or_default(),
            spawn_program: path(ENV_SPAWN_PROGRAM),
            hosts: list(ENV_HOSTS),
            lost_hosts: list(ENV_LOST_HOSTS),
            node_topology: std::env::var(ENV_NODE_TOPOLOGY)
                .ok()
                .filter(|v| !v.trim().is_empty()),
            no_shared_caches: std::env::var(ENV_NO_SHARED_CACHES).is_ok_and(|v| v.trim() == "1"),
        }
    }

    /// The cache levels of the node trees read from hwloc.
    pub fn cache_levels(&self) -> crate::topology::CacheLevels {
        crate::topology::CacheLevels::unless_dropped(self.no_shared_caches)
    }

    /// True in multi-host mode: node names are hosts of the allocation.
    pub fn multi_host(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// True when the job watches an availability file and may migrate.
    pub fn migrates(&self) -> bool {
        self.availability.is_some()
    }
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
        Self::Millis(super::launch::DEFAULT_CHECK_INTERVAL_MS)
    }
}
