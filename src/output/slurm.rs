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
///
/// Ranks of several cores (`cores_per_rank` above 1): `mask_cpu:` instead of
/// `map_cpu:`, one hexadecimal mask per rank (`0x` and the bits of the OS numbers of
/// every hardware thread of the rank's cores, CPU 0 the lowest bit), in the same two
/// forms.
pub struct Slurm;

impl MapFormatter for Slurm {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        let several = report.cores_per_rank > 1;
        let mut binds = Vec::with_capacity(report.mapping.len());
        for &leaf in &report.mapping {
            let l = &report.leaves[leaf];
            let cpu = l.os_index().ok_or_else(|| {
                OutputError::Unsupported(
                    "--format slurm needs OS CPU numbers and this tree has none \
                     (it was not read from hwloc)"
                        .to_owned(),
                )
            })?;
            let bind = if several {
                cpu_mask(&l.cpus)
            } else {
                cpu.to_string()
            };
            binds.push((l.node, bind));
        }
        let kind = if several { "mask_cpu" } else { "map_cpu" };
        if report.node_names.len() <= 1 {
            let list: Vec<&str> = binds.iter().map(|(_, b)| b.as_str()).collect();
            writeln!(out, "--cpu-bind={kind}:{}", list.join(","))?;
            return Ok(());
        }
        write_hostfile(report, kind, &binds, out)
    }
}

/// The Slurm CPU mask of `cpus` (OS numbers): `0x` then hexadecimal digits, CPU 0 the
/// lowest bit.
fn cpu_mask(cpus: &[u32]) -> String {
    let words = cpus.iter().map(|&c| c as usize / 64 + 1).max().unwrap_or(1);
    let mut mask = vec![0u64; words];
    for &c in cpus {
        mask[c as usize / 64] |= 1 << (c % 64);
    }
    let mut digits = String::from("0x");
    let mut words = mask.iter().rev().skip_while(|&&w| w == 0);
    match words.next() {
        Some(top) => digits.push_str(&format!("{top:x}")),
        None => digits.push('0'),
    }
    for word in words {
        digits.push_str(&format!("{word:016x}"));
    }
    digits
}

/// The several-node form: comments, then one host per rank.
fn write_hostfile(
    report: &MapReport,
    kind: &str,
    binds: &[(u32, String)],
    out: &mut dyn Write,
) -> Result<(), OutputError> {
    // Per node in use, its CPUs (or masks) in rank order.
    let mut per_node: Vec<(u32, Vec<&str>)> = Vec::new();
    for (node, bind) in binds {
        match per_node.iter_mut().find(|(n, _)| n == node) {
            Some((_, list)) => list.push(bind),
            None => per_node.push((*node, vec![bind])),
        }
    }
    per_node.sort_by_key(|(n, _)| *n);
    writeln!(
        out,
        "# SLURM_HOSTFILE for srun --distribution=arbitrary: host line R is the host of rank R."
    )?;
    if kind == "map_cpu" {
        writeln!(
            out,
            "# CPU binding per host (OS CPU numbers, in the order of the host's ranks):"
        )?;
    } else {
        writeln!(
            out,
            "# CPU binding per host (masks of OS CPU numbers, in the order of the host's ranks):"
        )?;
    }
    for (node, list) in &per_node {
        writeln!(out, "#   {} {kind}:{}", report.host(*node), list.join(","))?;
    }
    let first = &per_node[0].1;
    if per_node.iter().all(|(_, list)| list == first) {
        writeln!(
            out,
            "# Every host has the same list: SLURM_HOSTFILE=THIS_FILE srun \
             --distribution=arbitrary -n {} --cpu-bind={kind}:{} PROGRAM",
            binds.len(),
            first.join(",")
        )?;
    } else {
        writeln!(
            out,
            "# The lists differ and srun applies one --cpu-bind list on every host: \
             SLURM_HOSTFILE=THIS_FILE srun --distribution=arbitrary -n {} places the \
             ranks; bind them another way (e.g. --format rankfile with Open MPI).",
            binds.len()
        )?;
    }
    for (node, _) in binds {
        writeln!(out, "{}", report.host(*node))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_set_the_bit_of_each_cpu() {
        assert_eq!(cpu_mask(&[0]), "0x1");
        assert_eq!(cpu_mask(&[0, 1, 24, 25]), "0x3000003");
        assert_eq!(cpu_mask(&[64]), "0x10000000000000000");
        assert_eq!(
            cpu_mask(&[3, 130]),
            "0x4".to_owned() + &"0".repeat(31) + "8"
        );
        assert_eq!(cpu_mask(&[]), "0x0");
    }
}
