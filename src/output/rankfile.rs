//! Open MPI rankfile output.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};
use crate::topology::format_index_list;

/// One `rank R=HOST slot=C` line per rank. Open MPI 4.1 reads `slot=C` as the hwloc
/// logical index of a core inside the host (hardware threads only with
/// `--use-hwthread-cpus`), so `C` is the core of the rank's leaf: with `--leaves pu`,
/// ranks on two hardware threads of one core are both bound to that core. For a tree
/// without cores (a tleaf target), `C` is the leaf's index inside its node.
///
/// With ranks of several cores, `C` is the list of the slot's cores
/// ([`MapReport::slot_cores`]) in Open MPI's form for logical cores, ranges and commas
/// (`slot=0-3`, `slot=2,5`): the rank is bound to all of them.
pub struct Rankfile;

impl MapFormatter for Rankfile {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        for (rank, &leaf) in report.mapping.iter().enumerate() {
            let l = &report.leaves[leaf];
            let slot = if report.cores_per_rank > 1 {
                format_index_list(&report.slot_cores(leaf))
            } else {
                l.core.unwrap_or(l.logical_index).to_string()
            };
            writeln!(out, "rank {rank}={} slot={slot}", report.host(l.node))?;
        }
        Ok(())
    }
}
