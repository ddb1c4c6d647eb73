//! A job whose ranks stopped making progress, caught from outside it.
//!
//! After a migration, a code that keeps a communicator derived from the old one, or
//! makes a collective the new processes do not make, waits for ever: the spawn has
//! completed, so [`super::supervise`]'s spawn watch does not see it. The ranks append
//! their iteration records (`iterations/rank-R.csv`) at every availability check;
//! `rankmig run` watches those files grow. When a rank's file has not grown for the
//! stall timeout, it names the ranks and hosts that stopped, stops the job and launches
//! it again from the newest complete checkpoint (every migration commits one first when
//! spawns are watched), placed for the current availability: all processes of the new
//! launch start the same way, so such a code then goes on. Each stop is appended to
//! [`STALLS`] in the run directory ([`record`]).
//!
//! The timeout is `--stall-timeout`, or by default the largest of 60 s, 20 times the
//! slowest iteration recorded so far and 3 times the longest gap seen between two
//! growths of a rank's file (checks paced by calls can be far apart).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::planner::Placement;
use crate::run_dir::record::append_line;
use crate::run_dir::spawn_watch::SPAWN_MARKER;

/// The run directory's record of stalls: one line per stop (seconds since the launch,
/// the ranks that stopped, their hosts, the timeout).
pub const STALLS: &str = "stalls.txt";

/// The least default stall timeout.
pub const MIN_DEFAULT_STALL: Duration = Duration::from_secs(60);

/// What a stall watch saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    /// The ranks whose records stopped growing.
    pub ranks: Vec<usize>,
    /// Their hosts (or logical nodes), from the newest placement file, in rank order.
    pub hosts: Vec<String>,
    /// The timeout that passed.
    pub timeout: Duration,
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut hosts = self.hosts.clone();
        hosts.sort();
        hosts.dedup();
        write!(
            f,
            "rank(s) {} on {} made no progress for {:.0} s (a communicator derived from the job's before a migration, or a collective the new processes do not make, is the usual cause: see \"Adopting rankmig in an existing code\" in the README)",
            join(&self.ranks),
            hosts.join(", "),
            self.timeout.as_secs_f64()
        )
    }
}

fn join(ranks: &[usize]) -> String {
    ranks
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Appends `stall` to the [`STALLS`] record of `run_dir`: when (Unix seconds), which
/// ranks on which hosts, the timeout.
pub fn record(run_dir: &Path, stall: &Stall) {
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut hosts = stall.hosts.clone();
    hosts.sort();
    hosts.dedup();
    let line = format!(
        "{when}: ranks {} on {} made no progress for {:.0} s; relaunched",
        join(&stall.ranks),
        hosts.join(","),
        stall.timeout.as_secs_f64()
    );
    if let Err(e) = append_line(&run_dir.join(STALLS), &line) {
        log::warn!("cannot record the stall in {STALLS}: {e}");
    }
}

/// One rank's record file as last seen.
#[derive(Debug, Clone)]
struct RankFile {
    size: u64,
    grown_at: Instant,
    longest_gap: Duration,
}

/// Watches the growth of the ranks' iteration records.
#[derive(Debug)]
pub struct StallWatch {
    run_dir: PathBuf,
    /// `Some(t)`: the timeout given; `None`: the default (see the module).
    fixed: Option<Duration>,
    files: Vec<RankFile>,
    slowest_iteration: Duration,
    offsets: Vec<u64>,
}

impl StallWatch {
    /// A watch of the `ranks` ranks of `run_dir`; `fixed` is the timeout given
    /// (`None`: the default).
    pub fn new(run_dir: &Path, ranks: usize, fixed: Option<Duration>) -> Self {
        let now = Instant::now();
        Self {
            run_dir: run_dir.to_owned(),
            fixed,
            files: vec![
                RankFile {
                    size: 0,
                    grown_at: now,
                    longest_gap: Duration::ZERO,
                };
                ranks
            ],
            slowest_iteration: Duration::ZERO,
            offsets: vec![0; ranks],
        }
    }

    /// The timeout now.
    pub fn timeout(&self) -> Duration {
        self.fixed.unwrap_or_else(|| {
            let gaps = self.files.iter().map(|f| f.longest_gap).max();
            MIN_DEFAULT_STALL
                .max(self.slowest_iteration * 20)
                .max(gaps.unwrap_or_default() * 3)
        })
    }

    /// Looks at the record files; the stall, once some rank's file has not grown for
    /// the timeout while the job runs and no spawn is under way (a spawn has its own
    /// watch). Nothing before every rank has written a first record.
    pub fn check(&mut self) -> Option<Stall> {
        let now = Instant::now();
        for rank in 0..self.files.len() {
            let path = self.rank_file(rank);
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            if size != self.files[rank].size {
                self.note_new_records(rank, &path);
                let file = &mut self.files[rank];
                if file.size > 0 {
                    file.longest_gap = file.longest_gap.max(now - file.grown_at);
                }
                file.size = size;
                file.grown_at = now;
            }
        }
        if self.files.iter().any(|f| f.size == 0) {
            return None;
        }
        if self.run_dir.join(SPAWN_MARKER).exists() {
            return None;
        }
        let timeout = self.timeout();
        let ranks: Vec<usize> = (0..self.files.len())
            .filter(|&r| now - self.files[r].grown_at >= timeout)
            .collect();
        if ranks.is_empty() {
            return None;
        }
        let hosts = self.hosts_of(&ranks);
        Some(Stall {
            ranks,
            hosts,
            timeout,
        })
    }

    fn rank_file(&self, rank: usize) -> PathBuf {
        self.run_dir
            .join("iterations")
            .join(format!("rank-{rank}.csv"))
    }

    /// Reads the records appended to `path` since the last look: the slowest compute
    /// time (`iteration,compute_ns,...` lines).
    fn note_new_records(&mut self, rank: usize, path: &Path) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(path) else {
            return;
        };
        if file.seek(SeekFrom::Start(self.offsets[rank])).is_err() {
            return;
        }
        let mut text = String::new();
        let Ok(read) = file.read_to_string(&mut text) else {
            return;
        };
        // Only whole lines: a partly written last line is read again next time.
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        self.offsets[rank] += whole.min(read) as u64;
        for line in text[..whole].lines() {
            let nanos = line
                .split(',')
                .nth(1)
                .and_then(|v| v.trim().parse::<f64>().ok());
            if let Some(n) = nanos.filter(|n| n.is_finite() && *n >= 0.0) {
                let d = Duration::from_secs_f64(n / 1e9);
                self.slowest_iteration = self.slowest_iteration.max(d);
            }
        }
    }

    /// The hosts of `ranks` in the newest placement file of the run directory.
    fn hosts_of(&self, ranks: &[usize]) -> Vec<String> {
        let newest = std::fs::read_dir(&self.run_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("placement-") && name.ends_with(".txt")
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max()
            .map(|(_, p)| p);
        let placement = newest.and_then(|p| Placement::load(&p).ok());
        ranks
            .iter()
            .map(|&r| {
                placement
                    .as_ref()
                    .filter(|p| r < p.len())
                    .map_or_else(|| "?".to_owned(), |p| p.location(r).node.clone())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_records(dir: &Path, rank: usize, lines: &str) {
        let path = dir.join("iterations").join(format!("rank-{rank}.csv"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut old = std::fs::read_to_string(&path).unwrap_or_default();
        old.push_str(lines);
        std::fs::write(path, old).unwrap();
    }

    #[test]
    fn a_rank_whose_records_stop_growing_is_named_after_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("placement-0.txt"), "0 h1 0\n1 h2 0\n").unwrap();
        let mut watch = StallWatch::new(dir.path(), 2, Some(Duration::from_millis(200)));
        assert_eq!(watch.check(), None, "nothing written yet");
        write_records(dir.path(), 0, "1,1000,0,0\n");
        write_records(dir.path(), 1, "1,1000,0,0\n");
        assert_eq!(watch.check(), None);
        std::thread::sleep(Duration::from_millis(250));
        write_records(dir.path(), 0, "2,1000,0,0\n");
        let stall = watch.check().expect("rank 1 stalled");
        assert_eq!(stall.ranks, [1]);
        assert_eq!(stall.hosts, ["h2"]);
        assert!(stall.to_string().contains("rank(s) 1 on h2"), "{stall}");
    }

    #[test]
    fn the_default_timeout_follows_slow_iterations() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = StallWatch::new(dir.path(), 1, None);
        assert_eq!(watch.timeout(), MIN_DEFAULT_STALL);
        // One iteration of 5 s: 20 times that is 100 s.
        write_records(dir.path(), 0, "1,5000000000,0,0\n");
        assert_eq!(watch.check(), None);
        assert_eq!(watch.timeout(), Duration::from_secs(100));
    }
}
