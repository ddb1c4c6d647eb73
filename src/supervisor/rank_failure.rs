//! A rank that died: which one, on which host, how (a signal or an exit code) and at
//! which iteration, read from the launcher's messages and the run directory.
//!
//! Every launcher ends the whole job when one rank dies, and names the first one in
//! its messages, which the launcher reads into clues
//! ([`crate::launcher::Launcher::failure_clue`]: a rank, a pid, a host, an exit code
//! or a signal). What a message leaves out is completed from the process events
//! of the launch ([`crate::run_dir::record::PROCESSES`]: the rank of a pid, the node of
//! a rank) and the rank's iteration mark
//! ([`crate::run_dir::record::iteration_mark`]).

use std::path::Path;

use crate::launcher::{FailureClue, Launcher, SlurmCancel};
use crate::run_dir::record;

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

/// What the launcher's messages say of the first rank that ended, clue by clue
/// ([`FailureClues::take`]; the launcher reads its lines: [`Launcher::failure_clue`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailureClues {
    rank: Option<usize>,
    pid: Option<u32>,
    host: Option<String>,
    ending: Option<Ending>,
    /// [`FailureClue::ExitStatuses`]: per host, the wait status of each of its ranks in
    /// rank order.
    statuses: Vec<(String, Vec<i32>)>,
    /// [`FailureClue::Cancelled`]: the first cancellation said.
    cancelled: Option<SlurmCancel>,
}

impl FailureClues {
    /// Takes what one line of the launcher's output says, if anything (read by
    /// `launcher`); the first rank reported is kept, later ones (ranks the launcher
    /// stopped) ignored.
    ///
    /// ```
    /// use rankmig::launcher::{MpiImplementation, launcher};
    /// use rankmig::supervisor::rank_failure::{Ending, FailureClues};
    /// let ompi = launcher(MpiImplementation::OpenMpi4);
    /// let mut c = FailureClues::default();
    /// for line in ["  Process name: [[4711,1],3]", "  Exit code:    7",
    ///     "mpirun noticed that process rank 0 with PID 9 on node h1 exited on signal 15 (Terminated)."] {
    ///     c.read(ompi, line);
    /// }
    /// assert_eq!((c.rank(), c.pid(), c.ending()), (Some(3), None, Some(Ending::ExitCode(7))));
    /// let mut c = FailureClues::default();
    /// for line in ["=   PID 1234 RUNNING AT h2", "=   EXIT CODE: 9", "=   CLEANING UP",
    ///     "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"] {
    ///     c.read(launcher(MpiImplementation::Mpich), line);
    /// }
    /// assert_eq!((c.pid(), c.ending()), (Some(1234), Some(Ending::Signal(9))));
    /// ```
    pub fn read(&mut self, launcher: &dyn Launcher, line: &str) {
        if let Some(clue) = launcher.failure_clue(line) {
            self.take(clue);
        }
    }

    /// Takes one clue: a rank, pid, host or ending already known is kept.
    pub fn take(&mut self, clue: FailureClue) {
        match clue {
            FailureClue::ExitStatuses(statuses) => self.statuses = statuses,
            FailureClue::Cancelled(cancel) => {
                if self.cancelled.is_none() {
                    self.cancelled = Some(cancel);
                }
            }
            FailureClue::Signalled {
                rank,
                pid,
                host,
                signal,
            } => {
                if self.ending.is_none() {
                    self.rank = Some(rank);
                    self.pid = pid;
                    self.host = host;
                    self.ending = Some(Ending::Signal(signal));
                }
            }
            FailureClue::ProcessName(rank) => {
                if self.ending.is_none() && self.rank.is_none() {
                    self.rank = Some(rank);
                }
            }
            FailureClue::ExitCode(code) => {
                if self.ending.is_none() {
                    self.ending = Some(Ending::ExitCode(code));
                }
            }
            FailureClue::RunningAt { pid, host } => {
                if self.pid.is_none() && self.ending.is_none() {
                    self.pid = Some(pid);
                    self.host = host;
                }
            }
            FailureClue::KilledBy(signal) => {
                // The exit code taken before was the signal's number (FailureClue::ExitCode).
                if self.ending == Some(Ending::ExitCode(signal)) {
                    self.ending = Some(Ending::Signal(signal));
                }
            }
        }
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

    /// The job step (or job) Slurm cancelled, if the launcher passed that on: the ranks
    /// were then killed by Slurm, and a rank the launcher names as killed did not fail
    /// by itself.
    pub fn cancelled(&self) -> Option<&SlurmCancel> {
        self.cancelled.as_ref()
    }
}

/// The first rank of the launcher's exit statuses ([`FailureClue::ExitStatuses`]) that
/// exited with a non-zero code, if any: the launcher's own failure block may name a
/// rank it killed itself after the one that failed had exited. Ranks are numbered across hosts from the launch's process
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
    use crate::launcher::{MpiImplementation, launcher};

    fn hydra() -> &'static dyn Launcher {
        launcher(MpiImplementation::Mpich)
    }

    fn open_mpi() -> &'static dyn Launcher {
        launcher(MpiImplementation::OpenMpi4)
    }

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
        let mut clues = FailureClues::default();
        clues.read(hydra(), "=   PID 12 RUNNING AT vm");
        clues.read(hydra(), "=   EXIT CODE: 3");
        let failure = RankFailure::from_clues(&clues, dir.path(), 0).unwrap();
        assert_eq!(
            failure.to_string(),
            "rank 1 on n3 exited with code 3 at iteration 77"
        );
        let mut ompi = FailureClues::default();
        ompi.read(
            open_mpi(),
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
            c.read(hydra(), line);
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
            c.read(hydra(), line);
        }
        let failure = RankFailure::from_clues(&c, dir.path(), 0).unwrap();
        assert_eq!(failure.to_string(), "rank 2 on h1 exited with code 9");
    }

    #[test]
    fn only_the_first_rank_reported_counts() {
        let mut c = FailureClues::default();
        for line in [
            "  Process name: [prterun-vm-1234@1,5]",
            "  Exit code:    2",
            "mpirun noticed that process rank 0 with PID 9 on node h1 exited on signal 15 (Terminated).",
        ] {
            c.read(open_mpi(), line);
        }
        assert_eq!((c.rank(), c.ending()), (Some(5), Some(Ending::ExitCode(2))));
        assert_eq!(c.pid(), None);
    }
}
