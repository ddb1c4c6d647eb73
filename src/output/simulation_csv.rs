//! CSV of `rankmig simulate`, written with the `csv` crate: a field holding a comma, a
//! quote or a line break (an availability file named `a,b.avail`) is quoted, so every
//! row keeps its columns.

use crate::matrix::format_volume;

use super::plan::{SimulationStep, node_summary, oversubscription};

/// The header row.
const HEADER: [&str; 9] = [
    "step",
    "availability",
    "moves",
    "minimum_moves",
    "oversubscribed_ranks",
    "hop_bytes_before",
    "hop_bytes_after",
    "seconds",
    "loads",
];

/// One row per step after the header: step index, availability file name, moves,
/// minimum moves, oversubscribed ranks, hop-bytes before and after, planning seconds,
/// node loads (`name:after/maxProcs(cores)` separated by spaces).
///
/// ```
/// let csv = rankmig::output::simulation_csv(&[]).unwrap();
/// assert!(csv.starts_with("step,availability,moves,"));
/// ```
pub fn simulation_csv(steps: &[SimulationStep]) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(HEADER)?;
    for (i, s) in steps.iter().enumerate() {
        writer.write_record([
            i.to_string(),
            s.availability.clone(),
            s.plan.moves.len().to_string(),
            s.plan.minimum_moves.to_string(),
            oversubscription(&s.plan).to_string(),
            format_volume(s.plan.hop_bytes_before),
            format_volume(s.plan.hop_bytes_after),
            format!("{:.6}", s.seconds),
            node_summary(&s.plan),
        ])?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
