//! Slurm `--cpu-bind=map_cpu:` output.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};

/// `--cpu-bind=map_cpu:C0,C1,...` where Ci is the OS index of rank i's CPU. One node only.
pub struct Slurm;

impl MapFormatter for Slurm {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        let mut cpus = Vec::with_capacity(report.mapping.len());
        for &leaf in &report.mapping {
            let l = &report.leaves[leaf];
            if l.node != 0 {
                return Err(OutputError::Unsupported(
                    "--format slurm describes one node; the mapping spans several (use rankfile)"
                        .into(),
                ));
            }
            cpus.push(l.os_index.unwrap_or(l.logical_index).to_string());
        }
        writeln!(out, "--cpu-bind=map_cpu:{}", cpus.join(","))?;
        Ok(())
    }
}
