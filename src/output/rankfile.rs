//! Open MPI rankfile output.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};

/// One `rank R=HOST slot=S` line per rank; `S` is the leaf's logical index inside its
/// node (Open MPI reads rankfile slots as logical indexes).
pub struct Rankfile;

impl MapFormatter for Rankfile {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        for (rank, &leaf) in report.mapping.iter().enumerate() {
            let l = &report.leaves[leaf];
            let host = report
                .node_names
                .get(l.node as usize)
                .cloned()
                .unwrap_or_else(|| format!("node{}", l.node));
            writeln!(out, "rank {rank}={host} slot={}", l.logical_index)?;
        }
        Ok(())
    }
}
