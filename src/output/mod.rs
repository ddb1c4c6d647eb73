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
    /// Leaves (cores, or hardware threads with `--leaves pu`) of the node's tree each
    /// rank runs on (`rankmig map --cores-per-rank`): 1 when every leaf of `leaves` is
    /// one of them.
    #[serde(skip)]
    pub cores_per_rank: usize,
    /// With `cores_per_rank` above 1, for each leaf of `leaves` (a rank slot, a group
    /// of `cores_per_rank` leaves of the node's tree), those leaves; empty otherwise.
    #[serde(skip)]
    pub slot_leaves: Vec<Vec<Leaf>>,
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
    /// The leaves of the node's tree that leaf `slot` of `leaves` stands for: the
    /// group's leaves with ranks of several cores, else the leaf itself (none for a
    /// leaf the report does not have).
    ///
    /// ```
    /// use rankmig::output::MapReport;
    /// use rankmig::topology::Leaf;
    /// let core = |i| Leaf { core: Some(i), logical_index: i, ..Leaf::default() };
    /// let mut report = MapReport::new(vec![0], vec![core(0)]);
    /// assert_eq!(report.leaves_of(0), [core(0)]);
    /// report.cores_per_rank = 2;
    /// report.slot_leaves = vec![vec![core(2), core(3)]];
    /// assert_eq!(report.slot_cores(0), [2, 3]);
    /// ```
    pub fn leaves_of(&self, slot: usize) -> &[Leaf] {
        if self.cores_per_rank > 1 {
            return self.slot_leaves.get(slot).map_or(&[], Vec::as_slice);
        }
        self.leaves.get(slot).map_or(&[], std::slice::from_ref)
    }

    /// The cores leaf `slot` of `leaves` stands for, ascending, each named as Open MPI
    /// rankfiles name them: the hwloc logical index of the core inside its node (the
    /// core holding the hardware thread with `--leaves pu`), else, for a tree without
    /// cores, the leaf's index inside its node.
    ///
    /// ```
    /// use rankmig::output::MapReport;
    /// use rankmig::topology::Leaf;
    /// let pu = |i, core| Leaf { core: Some(core), logical_index: i, ..Leaf::default() };
    /// let mut report = MapReport::new(vec![0], vec![pu(0, 0)]);
    /// report.cores_per_rank = 2;
    /// report.slot_leaves = vec![vec![pu(0, 0), pu(1, 0)]]; // two threads of one core
    /// assert_eq!(report.slot_cores(0), [0]);
    /// ```
    pub fn slot_cores(&self, slot: usize) -> Vec<u32> {
        let mut cores: Vec<u32> = self
            .leaves_of(slot)
            .iter()
            .map(|l| l.core.unwrap_or(l.logical_index))
            .collect();
        cores.sort_unstable();
        cores.dedup();
        cores
    }

    /// A report of `mapping` onto `leaves` with ranks of one core, no host names, no
    /// metrics and no baselines; for formatting a mapping computed elsewhere.
    ///
    /// ```
    /// use rankmig::output::{MapFormat, MapReport};
    /// use rankmig::topology::Leaf;
    /// let report = MapReport::new(vec![0], vec![Leaf { core: Some(5), ..Leaf::default() }]);
    /// let mut out = Vec::new();
    /// MapFormat::Rankfile.formatter().write(&report, &mut out).unwrap();
    /// assert_eq!(out, b"rank 0=node0 slot=5\n");
    /// ```
    pub fn new(mapping: Vec<usize>, leaves: Vec<Leaf>) -> Self {
        Self {
            mapping,
            leaves,
            node_names: Vec::new(),
            cores_per_rank: 1,
            slot_leaves: Vec::new(),
            metrics: Metrics::default(),
            baselines: BTreeMap::new(),
            seconds: 0.0,
            tree: String::new(),
        }
    }

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
    /// `RANK LEAF` lines (with ranks of several cores, then `cores=` and `cpus=`) then
    /// `#` lines with the metrics.
    #[default]
    Text,
    /// One JSON object: `version`, `ranks` (per rank: `rank`, `leaf`, `host`, `node`,
    /// `core`, `cpu`, `cpus`, and `cores` with ranks of several cores), `mapping`,
    /// `metrics`, `baselines`, `seconds`, `tree`.
    Json,
    /// An Open MPI rankfile (`rank R=HOST slot=CORES`, CORES logical core indexes).
    Rankfile,
    /// Slurm: a `--cpu-bind=map_cpu:` list (one node) or a `SLURM_HOSTFILE` for
    /// `--distribution=arbitrary` with per-host `map_cpu` lists (several nodes);
    /// `mask_cpu` with ranks of several cores.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{ClusterSlots, Tree};

    /// 2 nodes of 2 packages of 2 cores, core k with OS CPUs k and k + 4, ranks of 2
    /// cores mapped one per package, in reverse.
    fn report() -> MapReport {
        let mut shape = Tree::from_arities(&[2, 2]).unwrap().to_shape();
        let mut k = 0;
        for package in &mut shape.children {
            for core in &mut package.children {
                let leaf = core.leaf.as_mut().unwrap();
                leaf.core = Some(k);
                leaf.cpus = vec![k, k + 4];
                k += 1;
            }
        }
        let node = Tree::from_shape(&shape).unwrap();
        let slots = ClusterSlots::new(&node, 2, 2).unwrap();
        let tree = slots.tree();
        let mut report = MapReport::new(vec![3, 2, 1, 0], tree.leaves().to_vec());
        report.node_names = vec!["a".into(), "b".into()];
        report.cores_per_rank = 2;
        report.slot_leaves = (0..tree.leaf_count()).map(|s| slots.leaves_of(s)).collect();
        report
    }

    fn written(format: MapFormat, report: &MapReport) -> String {
        let mut out = Vec::new();
        format.formatter().write(report, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_format_gives_a_rank_all_the_cores_of_its_slot() {
        let report = report();
        let rankfile = written(MapFormat::Rankfile, &report);
        assert_eq!(
            rankfile,
            "rank 0=b slot=2-3\nrank 1=b slot=0-1\nrank 2=a slot=2-3\nrank 3=a slot=0-1\n"
        );
        let text = written(MapFormat::Text, &report);
        assert!(text.starts_with("0 3 cores=2-3 cpus=2-3,6-7\n1 2 cores=0-1 cpus=0-1,4-5\n"));
        assert!(text.contains("\n# cores per rank: 2 "), "{text}");
        let json: serde_json::Value =
            serde_json::from_str(&written(MapFormat::Json, &report)).unwrap();
        assert_eq!(json["cores_per_rank"], 2);
        assert_eq!(json["ranks"][0]["cores"], serde_json::json!([2, 3]));
        assert_eq!(json["ranks"][0]["cpus"], serde_json::json!([2, 3, 6, 7]));
        assert_eq!(json["ranks"][0]["host"], "b");
        // Both hosts bind their ranks the same way: package 1, then package 0.
        let slurm = written(MapFormat::Slurm, &report);
        assert!(slurm.contains("#   a mask_cpu:0xcc,0x33\n"), "{slurm}");
        assert!(
            slurm.contains("--cpu-bind=mask_cpu:0xcc,0x33 PROGRAM"),
            "{slurm}"
        );
        let hosts: Vec<&str> = slurm.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(hosts, ["b", "b", "a", "a"]);
    }

    #[test]
    fn one_core_per_rank_keeps_the_single_core_forms() {
        let mut report = report();
        report.cores_per_rank = 1;
        report.slot_leaves.clear();
        report.node_names.truncate(1);
        report.mapping = vec![1, 0];
        assert_eq!(
            written(MapFormat::Slurm, &report),
            "--cpu-bind=map_cpu:2,0\n"
        );
        assert_eq!(
            written(MapFormat::Rankfile, &report),
            "rank 0=a slot=2\nrank 1=a slot=0\n"
        );
        let json = written(MapFormat::Json, &report);
        assert!(!json.contains("cores"), "{json}");
    }
}
