//! JSON output.

use std::io::Write;

use super::{MapFormatter, MapReport, OutputError};

/// `{"mapping": [...], "metrics": {...}, "baselines": {...}, "seconds": ..., "tree": ...}`.
pub struct Json;

impl MapFormatter for Json {
    fn write(&self, report: &MapReport, out: &mut dyn Write) -> Result<(), OutputError> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)?;
        Ok(())
    }
}
