//! Output formats of `rankmig map`: one file per format behind the [`MapFormatter`] trait;
//! the renderings of plans and simulations ([`plan`], [`simulation_csv()`]).

mod hosts;
mod json;
pub mod plan;
mod rankfile;
mod simulation_csv;
mod slurm;
mod text;

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use crate::topology::Leaf;
use crate::treematch::metrics::Metrics;

pub use hosts::{HostsError, node_names};
pub use json::{JSON_FORMAT_VERSION, Json};
pub use rankfile::Rankfile;
pub use simulation_csv::simulation_csv;
pub use slurm::Slurm;
pub use text::Text;

/// Everything `rankmig map` reports about one mapping.
#[derive(Debug, Clone, Serialize)]
pub struct MapReport {
    /// Leaf (depth-first index in the tree) of each rank.
    pub mapping: Vec<usize>,
    /// What each leaf of the tree stands for (node, logical and OS index).
    #[serde(skip)]
    pub leaves: Vec<Leaf>,
    /// Names of the cluster nodes, index = `Leaf::node`.
    #[serde(skip)]
    pub node_names: Vec<String>,
    /// Costs of the mapping.
    pub metrics: Metrics,
    /// Costs of the baselines (`packed`, `round-robin`, `random`).
    pub baselines: BTreeMap<String, Metrics>,
    /// Time spent computing the mapping, in seconds.
    pub seconds: f64,
    /// The tree's levels, e.g. `Cluster:1(x4) Machine:4(x2) Package:8(x8) Core:64`.
    pub tree: String,
}

impl MapReport {
    /// Name of cluster node `node`: its entry of `node_names`, else `node<N>`.
    pub fn host(&self, node: u32) -> String {
        self.node_names
            .get(node as usize)
            .cloned()
            .unwrap_or_else(|| format!("node{node}"))
    }
}

/// A way to print a [`MapReport`].
pub trait MapFormatter {
    /// Writes the report.
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError>;
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Writing failed.
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
    /// JSON encoding failed.
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// CSV encoding failed.
    #[error("cannot write CSV: {0}")]
    Csv(#[from] csv::Error),
    /// The format does not fit this mapping.
    #[error("{0}")]
    Unsupported(String),
}

/// The output formats of `rankmig map`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum MapFormat {
    /// `RANK LEAF` lines then `#` lines with the metrics.
    #[default]
    Text,
    /// One JSON object: `version`, `ranks` (per rank: `rank`, `leaf`, `host`, `node`,
    /// `core`, `cpu`, `cpus`), `mapping`, `metrics`, `baselines`, `seconds`, `tree`.
    Json,
    /// An Open MPI rankfile (`rank R=HOST slot=CORE`, CORE a logical core index).
    Rankfile,
    /// Slurm: a `--cpu-bind=map_cpu:` list (one node) or a `SLURM_HOSTFILE` for
    /// `--distribution=arbitrary` with per-host `map_cpu` lists (several nodes).
    Slurm,
}

impl MapFormat {
    /// The formatter for this format.
    pub fn formatter(self) -> Box<dyn MapFormatter> {
        match self {
            MapFormat::Text => Box::new(Text),
            MapFormat::Json => Box::new(Json),
            MapFormat::Rankfile => Box::new(Rankfile),
            MapFormat::Slurm => Box::new(Slurm),
        }
    }
}
