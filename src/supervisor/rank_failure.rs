//! A rank that died: which one, on which host, how (a signal or an exit code) and at
//! which iteration, read from the launcher's messages and the run directory.
//!
//! Every launcher ends the whole job when one rank dies, and names the first one in
//! its messages: Open MPI 4.1 and 5 "process rank R with PID P on node H exited on
//! signal S", or a block with "Process name: [[J,1],R]" and "Exit code: C"; MPICH's
//! hydra "PID P RUNNING AT H" and "EXIT CODE: C", then, for a signal, "... EXIT STRING:
//! Killed (signal 9)". What a message leaves out is completed from the process events
//! of the launch ([`crate::migrate::record::PROCESSES`]: the rank of a pid, the node of
//! a rank) and the rank's iteration mark
//! ([`crate::migrate::record::iteration_mark`]).

use std::path::Path;

use crate::migrate::record;

/// How a rank's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Killed by this signal.
    Signal(i32),
    /// Exited with this (non-zero) code.
    ExitCode(i32),
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Signal(s) => match signal_name(*s) {
                Some(name) => write!(f, "was killed by signal {s} ({name})"),
                None => write!(f, "was killed by signal {s}"),
            },
            Ending::ExitCode(c) => write!(f, "exited with code {c}"),
        }
    }
}

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

/// What the launcher's messages say of the first rank that ended, line by line
/// ([`FailureClues::read`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailureClues {
    rank: Option<usize>,
    pid: Option<u32>,
    host: Option<String>,
    ending: Option<Ending>,
    /// hydra's `-print-all-exitcodes` line: per host, the wait status of each of its
    /// ranks in rank order.
    statuses: Vec<(String, Vec<i32>)>,
}

impl FailureClues {
    /// Takes what one line of the launcher's standard error says; the first rank
    /// reported is kept, later ones (ranks the launcher stopped) ignored.
    ///
    /// ```
    /// use rankmig::supervisor::rank_failure::{Ending, FailureClues};
    /// let mut c = FailureClues::default();
    /// c.read("mpirun noticed that process rank 2 with PID 0 on node h5 exited on signal 9 (Killed).");
    /// assert_eq!((c.rank(), c.pid(), c.ending()), (Some(2), None, Some(Ending::Signal(9))));
    /// let mut c = FailureClues::default();
    /// for line in ["  Process name: [[4711,1],3]", "  Exit code:    7"] {
    ///     c.read(line);
    /// }
    /// assert_eq!((c.rank(), c.ending()), (Some(3), Some(Ending::ExitCode(7))));
    /// let mut c = FailureClues::default();
    /// for line in ["=   PID 1234 RUNNING AT h2", "=   EXIT CODE: 9", "=   CLEANING UP",
    ///     "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"] {
    ///     c.read(line);
    /// }
    /// assert_eq!((c.pid(), c.ending()), (Some(1234), Some(Ending::Signal(9))));
    /// ```
    pub fn read(&mut self, line: &str) {
        let line = line.trim_start_matches(['=', ' ', '\t']);
        if let Some(rest) = after(line, "] Exit codes:") {
            self.statuses = hydra_statuses(rest);
        } else if let Some(rest) = after(line, "process rank ") {
            self.read_open_mpi_signal(rest);
        } else if let Some(rest) = after(line, "Process name:") {
            if self.ending.is_none() && self.rank.is_none() {
                self.rank = last_number(rest.trim().trim_end_matches(']'));
            }
        } else if let Some(rest) = after(line, "Exit code:").or_else(|| after(line, "EXIT CODE:")) {
            if self.ending.is_none() {
                self.ending = first_number(rest).map(Ending::ExitCode);
            }
        } else if let Some(rest) = after(line, "PID ") {
            self.read_hydra_pid(rest);
        } else if let Some(rest) = after(line, "EXIT STRING:") {
            // hydra gives a killed rank's signal as its exit code, then names it here.
            let signal = after(rest, "(signal ").and_then(first_number);
            if let (Some(s), Some(Ending::ExitCode(c))) = (signal, self.ending) {
                if s == c {
                    self.ending = Some(Ending::Signal(s));
                }
            }
        }
    }

    /// "R with PID P on node H exited on signal S (...)".
    fn read_open_mpi_signal(&mut self, rest: &str) {
        if self.ending.is_some() || !rest.contains("exited on signal") {
            return;
        }
        self.rank = first_number(rest);
        self.pid = after(rest, "with PID ")
            .and_then(first_number::<u32>)
            .filter(|&p| p != 0);
        self.host = after(rest, "on node ")
            .and_then(|h| h.split_whitespace().next())
            .map(str::to_owned);
        self.ending = after(rest, "exited on signal ")
            .and_then(first_number)
            .map(Ending::Signal);
    }

    /// "P RUNNING AT H".
    fn read_hydra_pid(&mut self, rest: &str) {
        if self.pid.is_some() || self.ending.is_some() || !rest.contains("RUNNING AT") {
            return;
        }
        self.pid = first_number::<u32>(rest);
        self.host = after(rest, "RUNNING AT ")
            .and_then(|h| h.split_whitespace().next())
            .map(str::to_owned);
    }

    /// The rank named, if any.
    pub fn rank(&self) -> Option<usize> {
        self.rank
    }

    /// The pid named, if any (Open MPI 4.1 often says "PID 0": none).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// How the rank ended, if said.
    pub fn ending(&self) -> Option<Ending> {
        self.ending
    }
}

/// "[h1] 0,9 [h2] 0,768": each host and the wait statuses of its ranks.
fn hydra_statuses(text: &str) -> Vec<(String, Vec<i32>)> {
    text.split('[')
        .filter_map(|group| {
            let (host, codes) = group.split_once(']')?;
            let codes = codes
                .trim()
                .split(',')
                .map(|c| c.trim().parse().ok())
                .collect::<Option<Vec<i32>>>()?;
            Some((host.trim().to_owned(), codes))
        })
        .collect()
}

/// True when `line` is hydra's `-print-all-exitcodes` line (which `rankmig run` asks
/// for, and does not pass on).
pub fn is_hydra_status_line(line: &str) -> bool {
    line.starts_with("[mpiexec@") && line.contains("] Exit codes:")
}

/// The first rank of hydra's status line that exited with a non-zero code, if any:
/// hydra's own "BAD TERMINATION" block may name a rank it killed itself after the one
/// that failed had exited. Ranks are numbered across hosts from the launch's process
/// events (the ranks that started on each host, in rank order); a single host lists
/// every rank in order.
fn exited_rank(clues: &FailureClues, run_dir: &Path, mark: u64) -> Option<(usize, Ending)> {
    let exited = |status: i32| (status & 0x7f == 0 && status != 0).then_some((status >> 8) & 0xff);
    if let [(_, codes)] = clues.statuses.as_slice() {
        return codes
            .iter()
            .enumerate()
            .find_map(|(rank, &s)| exited(s).map(|c| (rank, Ending::ExitCode(c))));
    }
    for (host, codes) in &clues.statuses {
        let ranks = record::ranks_started_on(run_dir, mark, host);
        if ranks.len() != codes.len() {
            return None;
        }
        let found = ranks
            .iter()
            .zip(codes)
            .find_map(|(&rank, &s)| exited(s).map(|c| (rank, Ending::ExitCode(c))));
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The text after the first `marker` in `line`.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

/// The number `text` starts with (after blanks).
fn first_number<T: std::str::FromStr>(text: &str) -> Option<T> {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

/// The number `text` ends with (after the last `,`).
fn last_number(text: &str) -> Option<usize> {
    text.rsplit(',').next()?.trim().parse().ok()
}

/// A rank that died, as far as it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankFailure {
    /// The rank.
    pub rank: usize,
    /// Its node (host, or logical node), when known.
    pub host: Option<String>,
    /// How its process ended.
    pub ending: Ending,
    /// The iteration (`checkpoint!` calls) it was at, when known.
    pub iteration: Option<u64>,
}

impl RankFailure {
    /// The failure `clues` describe, completed from the process events written to
    /// `run_dir` after `mark` (the launch's) and the rank's iteration mark; `None`
    /// when the rank or its ending is not known.
    pub fn from_clues(clues: &FailureClues, run_dir: &Path, mark: u64) -> Option<Self> {
        if let Some((rank, ending)) = exited_rank(clues, run_dir, mark) {
            return Some(Self {
                rank,
                host: record::node_of_rank(run_dir, mark, rank),
                ending,
                iteration: record::iteration_mark(run_dir, rank),
            });
        }
        let ending = clues.ending?;
        let by_pid = clues
            .pid
            .and_then(|pid| record::process_of_pid(run_dir, mark, pid));
        let rank = clues.rank.or(by_pid.as_ref().map(|(rank, _)| *rank))?;
        let host = by_pid
            .map(|(_, node)| node)
            .or_else(|| record::node_of_rank(run_dir, mark, rank))
            .or_else(|| clues.host.clone());
        Some(Self {
            rank,
            host,
            ending,
            iteration: record::iteration_mark(run_dir, rank),
        })
    }

    /// True when `other` is the same rank ending the same way at the same (known)
    /// iteration: a failure that comes back after a restart, probably the
    /// application's own.
    pub fn repeats(&self, other: &RankFailure) -> bool {
        self.rank == other.rank
            && self.ending == other.ending
            && self.iteration.is_some()
            && self.iteration == other.iteration
    }
}

impl std::fmt::Display for RankFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {}", self.rank)?;
        if let Some(host) = &self.host {
            write!(f, " on {host}")?;
        }
        write!(f, " {}", self.ending)?;
        if let Some(iteration) = self.iteration {
            write!(f, " at iteration {iteration}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_rank_host_ending_and_iteration_from_the_run_directory() {
        let dir = tempfile::tempdir().unwrap();
        let events =
            "0,10,n1,0,start,0\n1,11,n2,0,start,0\n1,11,n2,0,left,0\n1,12,n3,0,arrived,0\n";
        std::fs::write(dir.path().join(record::PROCESSES), events).unwrap();
        std::fs::create_dir_all(dir.path().join("iterations")).unwrap();
        std::fs::write(
            record::iteration_mark_file(dir.path(), 1),
            77u64.to_le_bytes(),
        )
        .unwrap();
        let mut hydra = FailureClues::default();
        hydra.read("=   PID 12 RUNNING AT vm");
        hydra.read("=   EXIT CODE: 3");
        let failure = RankFailure::from_clues(&hydra, dir.path(), 0).unwrap();
        assert_eq!(
            failure.to_string(),
            "rank 1 on n3 exited with code 3 at iteration 77"
        );
        let mut ompi = FailureClues::default();
        ompi.read(
            "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).",
        );
        let again = RankFailure::from_clues(&ompi, dir.path(), 0).unwrap();
        assert_eq!(
            again.to_string(),
            "rank 1 on n3 was killed by signal 9 (SIGKILL) at iteration 77"
        );
        assert!(!again.repeats(&failure), "another ending");
        assert!(again.repeats(&again.clone()));
        // Nothing of the rank after the mark: the host the launcher named.
        let late = RankFailure::from_clues(&ompi, dir.path(), events.len() as u64).unwrap();
        assert_eq!(late.host.as_deref(), Some("vm"));
    }

    #[test]
    fn hydra_status_line_names_the_rank_that_exited_not_the_one_it_killed() {
        let dir = tempfile::tempdir().unwrap();
        let events = "0,10,h1,0,start,0\n1,11,h2,0,start,0\n2,12,h1,1,start,0\n3,13,h2,1,start,0\n";
        std::fs::write(dir.path().join(record::PROCESSES), events).unwrap();
        let mut c = FailureClues::default();
        for line in [
            "=   PID 12 RUNNING AT h1",
            "=   EXIT CODE: 9",
            "[mpiexec@vm] Exit codes: [h1] 0,9 [h2] 0,768",
            "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)",
        ] {
            c.read(line);
        }
        let failure = RankFailure::from_clues(&c, dir.path(), 0).unwrap();
        assert_eq!(failure.to_string(), "rank 3 on h2 exited with code 3");
        // Only signals: the rank of hydra's block.
        let mut c = FailureClues::default();
        for line in [
            "=   PID 12 RUNNING AT h1",
            "=   EXIT CODE: 9",
            "[mpiexec@vm] Exit codes: [vm] 0,0,9,9",
        ] {
            c.read(line);
        }
        let failure = RankFailure::from_clues(&c, dir.path(), 0).unwrap();
        assert_eq!(failure.to_string(), "rank 2 on h1 exited with code 9");
        assert!(is_hydra_status_line("[mpiexec@vm] Exit codes: [vm] 0,0"));
    }

    #[test]
    fn only_the_first_rank_reported_counts() {
        let mut c = FailureClues::default();
        for line in [
            "  Process name: [prterun-vm-1234@1,5]",
            "  Exit code:    2",
            "mpirun noticed that process rank 0 with PID 9 on node h1 exited on signal 15 (Terminated).",
        ] {
            c.read(line);
        }
        assert_eq!((c.rank(), c.ending()), (Some(5), Some(Ending::ExitCode(2))));
        assert_eq!(c.pid(), None);
    }
}
