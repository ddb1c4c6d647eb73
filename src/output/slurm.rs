//! Slurm output: `--cpu-bind=map_cpu:` for one node, a `SLURM_HOSTFILE` with per-host
//! CPU lists for several.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};

/// CPUs are OS numbers (the first hardware thread of each rank's leaf), as Slurm numbers
/// them.
///
/// One node: the line `--cpu-bind=map_cpu:C0,C1,...`, Ci the CPU of rank i.
///
/// Several nodes: a hostfile for `SLURM_HOSTFILE=FILE srun --distribution=arbitrary`
/// (line R of the host lines is the host of rank R), preceded by `#` comment lines, which
/// Slurm skips: per host, its `map_cpu:` list in the order of its ranks (Slurm's
/// node-local task ids), then the `srun` line when every host has the same list. srun
/// applies one `--cpu-bind` list on every host, so when the lists differ the comment
/// says so and the ranks must be bound another way (e.g. `--format rankfile` with
/// Open MPI).
pub struct Slurm;

impl MapFormatter for Slurm {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        let mut cpus = Vec::with_capacity(report.mapping.len());
        for &leaf in &report.mapping {
            let l = &report.leaves[leaf];
            let cpu = l.os_index().ok_or_else(|| {
                OutputError::Unsupported(
                    "--format slurm needs OS CPU numbers and this tree has none \
                     (it was not read from hwloc)"
                        .to_owned(),
                )
            })?;
            cpus.push((l.node, cpu));
        }
        if report.node_names.len() <= 1 {
            let list: Vec<String> = cpus.iter().map(|(_, c)| c.to_string()).collect();
            writeln!(out, "--cpu-bind=map_cpu:{}", list.join(","))?;
            return Ok(());
        }
        write_hostfile(report, &cpus, out)
    }
}

/// The several-node form: comments, then one host per rank.
fn write_hostfile(
    report: &MapReport,
    cpus: &[(u32, u32)],
    out: &mut dyn Write,
) -> Result<(), OutputError> {
    // Per node in use, its CPUs in rank order.
    let mut per_node: Vec<(u32, Vec<String>)> = Vec::new();
    for &(node, cpu) in cpus {
        match per_node.iter_mut().find(|(n, _)| *n == node) {
            Some((_, list)) => list.push(cpu.to_string()),
            None => per_node.push((node, vec![cpu.to_string()])),
        }
    }
    per_node.sort_by_key(|(n, _)| *n);
    writeln!(
        out,
        "# SLURM_HOSTFILE for srun --distribution=arbitrary: host line R is the host of rank R."
    )?;
    writeln!(
        out,
        "# CPU binding per host (OS CPU numbers, in the order of the host's ranks):"
    )?;
    for (node, list) in &per_node {
        writeln!(out, "#   {} map_cpu:{}", report.host(*node), list.join(","))?;
    }
    let first = &per_node[0].1;
    if per_node.iter().all(|(_, list)| list == first) {
        writeln!(
            out,
            "# Every host has the same list: SLURM_HOSTFILE=THIS_FILE srun \
             --distribution=arbitrary -n {} --cpu-bind=map_cpu:{} PROGRAM",
            cpus.len(),
            first.join(",")
        )?;
    } else {
        writeln!(
            out,
            "# The lists differ and srun applies one --cpu-bind list on every host: \
             SLURM_HOSTFILE=THIS_FILE srun --distribution=arbitrary -n {} places the \
             ranks; bind them another way (e.g. --format rankfile with Open MPI).",
            cpus.len()
        )?;
    }
    for &(node, _) in cpus {
        writeln!(out, "{}", report.host(node))?;
    }
    Ok(())
}
