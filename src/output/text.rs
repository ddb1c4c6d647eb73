//! The default text format.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};
use crate::matrix::format_volume;
use crate::topology::format_index_list;
use crate::treematch::metrics::Metrics;

/// `RANK LEAF` per line, then `#` lines: the tree, each metric for this mapping and for
/// each baseline (with the ratio baseline / mapping), and the mapping time.
///
/// With ranks of several cores (`cores_per_rank` above 1), LEAF is a slot (a leaf of
/// the grouped tree) and the line goes on with `cores=LIST` (the slot's cores, as
/// [`MapReport::slot_cores`]) and `cpus=LIST` (their OS CPU numbers, left out when
/// unknown), lists as `taskset -c` writes them (`0-3,8`); a `# cores per rank:` line
/// comes before the tree.
pub struct Text;

impl MapFormatter for Text {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        for (rank, &leaf) in report.mapping.iter().enumerate() {
            if report.cores_per_rank <= 1 {
                writeln!(out, "{rank} {leaf}")?;
                continue;
            }
            let cores = format_index_list(&report.slot_cores(leaf));
            write!(out, "{rank} {leaf} cores={cores}")?;
            match report.leaves.get(leaf) {
                Some(l) if !l.cpus.is_empty() => {
                    writeln!(out, " cpus={}", format_index_list(&l.cpus))?
                }
                _ => writeln!(out)?,
            }
        }
        if report.cores_per_rank > 1 {
            writeln!(
                out,
                "# cores per rank: {} (LEAF: a group of {} leaves of a node, a leaf of the tree below)",
                report.cores_per_rank, report.cores_per_rank
            )?;
        }
        writeln!(out, "# tree: {}", report.tree)?;
        writeln!(
            out,
            "# {:<12} {:>18} {:>18} {:>16}  hop-bytes ratio",
            "placement", "hop-bytes", "sum-com", "inter-node"
        )?;
        write_row(out, "treematch", &report.metrics, &report.metrics)?;
        for (name, m) in &report.baselines {
            write_row(out, name, m, &report.metrics)?;
        }
        writeln!(out, "# mapping time: {:.3} ms", report.seconds * 1e3)?;
        Ok(())
    }
}

fn write_row(out: &mut dyn Write, name: &str, m: &Metrics, ours: &Metrics) -> std::io::Result<()> {
    let ratio = if ours.hop_bytes > 0.0 {
        format!("{:.3}", m.hop_bytes / ours.hop_bytes)
    } else {
        "-".to_owned()
    };
    writeln!(
        out,
        "# {:<12} {:>18} {:>18} {:>16}  {ratio}",
        name,
        format_volume(m.hop_bytes),
        format_volume(m.sum_com),
        format_volume(m.inter_node)
    )
}
