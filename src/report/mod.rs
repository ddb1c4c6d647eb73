//! `rankmig report RUN_DIR`: a table per reconfiguration ([`table()`]) and an SVG chart
//! like Fig. 4 of the paper ([`svg()`]): the time of every iteration of the slowest rank,
//! split into compute, scheduling and migration, on a log scale so that millisecond
//! iterations and second-long migrations are both readable, the reconfigurations
//! marked, and the number of nodes in use on its own axis.

mod chart;
mod table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::planner::Placement;
use crate::run_dir::record::{
    IterationRecord, RECONFIGURATIONS, Reconfiguration, read_iterations, read_reconfigurations,
};

pub use chart::svg;
pub use table::table;

/// Why a run directory cannot be reported.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The run directory does not exist (or is not a directory).
    #[error("{}: no such run directory", path.display())]
    MissingDir {
        /// The path given.
        path: PathBuf,
    },
    /// The directory exists but holds no record of a run.
    #[error(
        "{}: not a run directory (neither {} nor iterations/ in it)",
        path.display(),
        RECONFIGURATIONS
    )]
    NotARunDir {
        /// The path given.
        path: PathBuf,
    },
    /// A directory could not be listed.
    #[error("{}: {source}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A record file does not parse (the message names the file and line).
    #[error("{0}")]
    Record(String),
    /// A placement file of the run does not parse.
    #[error(transparent)]
    Placement(#[from] crate::planner::PlacementError),
    /// The chart could not be drawn.
    #[error("cannot draw the chart: {0}")]
    Chart(String),
}

/// One iteration of the job: the times of the rank whose iteration took longest
/// (compute + scheduling + migration), all three from that same rank.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JobIteration {
    /// Iteration (`checkpoint!` call).
    pub iteration: u64,
    /// Rank that was slowest at this iteration.
    pub rank: usize,
    /// Compute seconds.
    pub compute: f64,
    /// Scheduling seconds.
    pub scheduling: f64,
    /// Migration seconds.
    pub migration: f64,
}

impl JobIteration {
    /// Compute + scheduling + migration.
    pub fn total(&self) -> f64 {
        self.compute + self.scheduling + self.migration
    }
}

/// A run directory read back.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// Every availability change and what was done.
    pub reconfigurations: Vec<Reconfiguration>,
    /// The job's iterations, in order, slowest rank each.
    pub iterations: Vec<JobIteration>,
    /// Nodes in use from an iteration on: `(iteration, node count)`, from
    /// `placement-0.txt` (iteration 0) and `placement-K.txt` after the K-th migration.
    pub nodes_in_use: Vec<(u64, usize)>,
}

/// Reads a run directory: `reconfigurations.jsonl`, `iterations/rank-R.csv` (other
/// files in `iterations/` are ignored) and the placement files.
pub fn read_run(run_dir: &Path) -> Result<RunReport, ReportError> {
    if !run_dir.is_dir() {
        return Err(ReportError::MissingDir {
            path: run_dir.to_owned(),
        });
    }
    let dir = run_dir.join("iterations");
    if !dir.is_dir() && !run_dir.join(RECONFIGURATIONS).is_file() {
        return Err(ReportError::NotARunDir {
            path: run_dir.to_owned(),
        });
    }
    let reconfigurations = read_reconfigurations(run_dir).map_err(ReportError::Record)?;
    let mut per_rank: Vec<(usize, Vec<IterationRecord>)> = Vec::new();
    if dir.is_dir() {
        let read_dir_error = |source| ReportError::ReadDir {
            path: dir.clone(),
            source,
        };
        for entry in std::fs::read_dir(&dir).map_err(read_dir_error)? {
            let path = entry.map_err(read_dir_error)?.path();
            let Some(rank) = rank_of_file(&path) else {
                continue;
            };
            per_rank.push((rank, read_iterations(&path).map_err(ReportError::Record)?));
        }
    }
    per_rank.sort_by_key(|(rank, _)| *rank);
    let nodes_in_use = nodes_in_use(run_dir, &reconfigurations)?;
    Ok(RunReport {
        reconfigurations,
        iterations: slowest_per_iteration(&per_rank),
        nodes_in_use,
    })
}

/// `R` of a file named `rank-R.csv`.
fn rank_of_file(path: &Path) -> Option<usize> {
    path.file_name()?
        .to_str()?
        .strip_prefix("rank-")?
        .strip_suffix(".csv")?
        .parse()
        .ok()
}

/// For each iteration, the rank whose iteration took longest, with its three times.
/// Iteration 0 (before the first `checkpoint!`) is left out.
fn slowest_per_iteration(per_rank: &[(usize, Vec<IterationRecord>)]) -> Vec<JobIteration> {
    let mut slowest: BTreeMap<u64, JobIteration> = BTreeMap::new();
    for (rank, records) in per_rank {
        for r in records.iter().filter(|r| r.iteration > 0) {
            let candidate = JobIteration {
                iteration: r.iteration,
                rank: *rank,
                compute: r.compute,
                scheduling: r.scheduling,
                migration: r.migration,
            };
            slowest
                .entry(r.iteration)
                .and_modify(|best| {
                    if candidate.total() > best.total() {
                        *best = candidate;
                    }
                })
                .or_insert(candidate);
        }
    }
    slowest.into_values().collect()
}

/// Nodes in use over the run, from the placement files: `placement-0.txt` at iteration
/// 0, then `placement-K.txt` at the iteration of the K-th `migrated` reconfiguration.
/// Missing files are skipped (a run started before placements were recorded).
fn nodes_in_use(
    run_dir: &Path,
    reconfigurations: &[Reconfiguration],
) -> Result<Vec<(u64, usize)>, ReportError> {
    let migrations = reconfigurations.iter().filter(|r| r.outcome == "migrated");
    let mut out = Vec::new();
    for (k, iteration) in std::iter::once(0)
        .chain(migrations.map(|r| r.iteration))
        .enumerate()
    {
        let path = run_dir.join(format!("placement-{k}.txt"));
        if !path.is_file() {
            continue;
        }
        let placement = Placement::load(&path)?;
        let mut nodes: Vec<&str> = placement
            .locations()
            .iter()
            .map(|l| l.node.as_str())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        out.push((iteration, nodes.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(iteration: u64, compute: f64, migration: f64) -> IterationRecord {
        IterationRecord {
            iteration,
            compute,
            scheduling: 0.0,
            migration,
            wait_share: None,
            pressure_share: None,
        }
    }

    #[test]
    fn the_slowest_rank_is_kept_whole() {
        // Rank 0 computes longer at iteration 2, but rank 1's iteration (compute +
        // migration) is longer: rank 1's three times are kept, not the maxima of each.
        let per_rank = vec![
            (0, vec![it(1, 1.0, 0.0), it(2, 2.0, 0.0)]),
            (1, vec![it(1, 2.0, 0.0), it(2, 0.5, 3.0)]),
        ];
        let job = slowest_per_iteration(&per_rank);
        assert_eq!(job.len(), 2);
        assert_eq!((job[0].rank, job[0].compute), (1, 2.0));
        assert_eq!(job[1].rank, 1);
        assert_eq!((job[1].compute, job[1].migration), (0.5, 3.0));
        assert_eq!(job[1].total(), 3.5);
    }

    #[test]
    fn rank_files_are_recognised_by_name() {
        assert_eq!(rank_of_file(Path::new("x/rank-12.csv")), Some(12));
        assert_eq!(rank_of_file(Path::new("x/rank-12.csv.tmp")), None);
        assert_eq!(rank_of_file(Path::new("x/notes.txt")), None);
    }
}
