//! What a run leaves in its run directory.
//!
//! ```text
//! RUN_DIR/
//!   run.json                 how the job was launched
//!   placement-0.txt          initial placement (RANK NODE CORE)
//!   placement-K.txt          placement after the K-th reconfiguration
//!   reconfigurations.jsonl   one JSON object per availability change
//!   iterations/rank-R.csv    iteration,compute_s,scheduling_s,migration_s per rank
//!   processes.csv            rank,pid,node,core,event of every process of the job
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Durations of the phases of one migration, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// `MPI_Comm_spawn` and the merge.
    pub spawn: f64,
    /// Assignment and state transfer.
    pub transfer: f64,
    /// Split into the new communicator and freeing the temporary ones.
    pub rebuild: f64,
}

/// One availability change seen by the job, and what was done about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconfiguration {
    /// Sequence number (1 = first change).
    pub index: u64,
    /// `checkpoint!` call (iteration) at which it happened.
    pub iteration: u64,
    /// Seconds since the job started (rank 0's clock).
    pub at_seconds: f64,
    /// Human-readable availability diff, or the refusal message.
    pub change: String,
    /// Logical nodes available after the change.
    pub nodes: usize,
    /// `migrated`, `no moves`, `refused`, `plan failed` or `spawn failed`.
    pub outcome: String,
    /// Why, when not migrated.
    pub detail: Option<String>,
    /// Ranks moved.
    pub moves: usize,
    /// Σ max(0, load − maxProcs).
    pub minimum_moves: usize,
    /// Hop-bytes before and after (planner's cluster tree).
    pub hop_bytes_before: f64,
    /// Hop-bytes after.
    pub hop_bytes_after: f64,
    /// Deciding and planning: availability check, gathers, plan (seconds).
    pub scheduling: f64,
    /// Phases of the migration.
    pub phases: PhaseTimes,
    /// Serialised state carried per moving rank (bytes, largest).
    pub state_bytes: usize,
}

/// Appends one line to a file, creating it and its directory.
pub fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    // One write per line: appends from several processes never interleave.
    f.write_all(format!("{line}\n").as_bytes())
}

/// Path of a rank's iteration file.
pub fn iterations_file(run_dir: &Path, rank: usize) -> PathBuf {
    run_dir.join("iterations").join(format!("rank-{rank}.csv"))
}

/// Appends a reconfiguration record.
pub fn append_reconfiguration(run_dir: &Path, r: &Reconfiguration) -> std::io::Result<()> {
    let line = serde_json::to_string(r).map_err(std::io::Error::other)?;
    append_line(&run_dir.join("reconfigurations.jsonl"), &line)
}

/// Reads every reconfiguration record of a run directory.
pub fn read_reconfigurations(run_dir: &Path) -> Result<Vec<Reconfiguration>, String> {
    let path = run_dir.join("reconfigurations.jsonl");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// One iteration of one rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationRecord {
    /// `checkpoint!` call number.
    pub iteration: u64,
    /// Seconds computing (between two calls).
    pub compute: f64,
    /// Seconds deciding and planning.
    pub scheduling: f64,
    /// Seconds migrating.
    pub migration: f64,
}

/// Appends iteration records to a rank's file.
pub fn append_iterations(
    run_dir: &Path,
    rank: usize,
    records: &[IterationRecord],
) -> std::io::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let path = iterations_file(run_dir, rank);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = OpenOptions::new().create(true).append(true).open(path)?;
    let mut text = String::new();
    for r in records {
        text.push_str(&format!(
            "{},{:.9},{:.9},{:.9}\n",
            r.iteration, r.compute, r.scheduling, r.migration
        ));
    }
    f.write_all(text.as_bytes())
}

/// Reads a rank's iteration file.
pub fn read_iterations(path: &Path) -> Result<Vec<IterationRecord>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = || {
            format!(
                "{}:{}: expected 'iteration,compute,scheduling,migration': '{line}'",
                path.display(),
                i + 1
            )
        };
        let f: Vec<&str> = line.split(',').collect();
        let [it, c, s, m] = f[..] else {
            return Err(bad());
        };
        out.push(IterationRecord {
            iteration: it.parse().map_err(|_| bad())?,
            compute: c.parse().map_err(|_| bad())?,
            scheduling: s.parse().map_err(|_| bad())?,
            migration: m.parse().map_err(|_| bad())?,
        });
    }
    Ok(out)
}
