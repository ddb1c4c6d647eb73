//! Slurm `--cpu-bind=map_cpu:` output.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};

/// `--cpu-bind=map_cpu:C0,C1,...` where Ci is the OS index of rank i's CPU. One node only.
pub struct Slurm;

impl MapFormatter for Slurm {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        if report.node_names.len() > 1 {
            return Err(OutputError::Unsupported(format!(
                "--format slurm describes one node; this tree has {} (use --format rankfile)",
                report.node_names.len()
            )));
        }
        let cpus: Vec<String> = report
            .mapping
            .iter()
            .map(|&leaf| {
                let l = &report.leaves[leaf];
                l.os_index.unwrap_or(l.logical_index).to_string()
            })
            .collect();
        writeln!(out, "--cpu-bind=map_cpu:{}", cpus.join(","))?;
        Ok(())
    }
}
