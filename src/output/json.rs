//! JSON output.

use std::io::Write;

use serde::Serialize;

use super::{MapFormatter, MapReport, OutputError};

/// Version of the JSON document written by [`Json`]; raised when a field changes meaning
/// or disappears (adding a field keeps it).
pub const JSON_FORMAT_VERSION: u32 = 1;

/// One JSON object:
///
/// - `version`: [`JSON_FORMAT_VERSION`];
/// - `ranks`: per rank, in rank order, `rank`, `leaf` (depth-first leaf index over the
///   whole tree), `host` (the node's name), `node` (its index, 0..), `core` (hwloc
///   logical index of the core inside the node, `null` if the tree has no cores),
///   `cpu` (OS number of the leaf's first hardware thread, what `taskset -c` and Slurm
///   call CPU, `null` if unknown) and `cpus` (OS numbers of all its hardware threads);
///   with ranks of several cores also `cores` (the cores of its slot, as
///   [`MapReport::slot_cores`]), `leaf` being the slot (a leaf of the grouped tree),
///   `core` and `cpu` the slot's first, `cpus` those of every core of the slot;
/// - `cores_per_rank`, only when above 1;
/// - `mapping`: the leaf of each rank (as `ranks[i].leaf`);
/// - `metrics`, `baselines` (`packed`, `round-robin`, `random`): `hop_bytes`, `sum_com`,
///   `inter_node`;
/// - `seconds` (mapping time) and `tree` (its levels).
pub struct Json;

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    ranks: Vec<RankPlace<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cores_per_rank: Option<usize>,
    #[serde(flatten)]
    report: &'a MapReport,
}

#[derive(Serialize)]
struct RankPlace<'a> {
    rank: usize,
    leaf: usize,
    host: String,
    node: u32,
    core: Option<u32>,
    cpu: Option<u32>,
    cpus: &'a [u32],
    #[serde(skip_serializing_if = "Option::is_none")]
    cores: Option<Vec<u32>>,
}

impl MapFormatter for Json {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        let several = report.cores_per_rank > 1;
        let ranks = report
            .mapping
            .iter()
            .enumerate()
            .map(|(rank, &leaf)| {
                let l = &report.leaves[leaf];
                RankPlace {
                    rank,
                    leaf,
                    host: report.host(l.node),
                    node: l.node,
                    core: l.core,
                    cpu: l.os_index(),
                    cpus: &l.cpus,
                    cores: several.then(|| report.slot_cores(leaf)),
                }
            })
            .collect();
        let document = Document {
            version: JSON_FORMAT_VERSION,
            ranks,
            cores_per_rank: several.then_some(report.cores_per_rank),
            report,
        };
        serde_json::to_writer_pretty(&mut *out, &document)?;
        writeln!(out)?;
        Ok(())
    }
}
