//! What one line of a launcher's output says of a rank that died
//! ([`super::Launcher::failure_clue`]), as a typed clue: each implementation reads its own
//! messages (Open MPI's runtimes here, MPICH's hydra in [`super::mpich`]), and `rankmig
//! run` puts the clues together (`crate::supervisor::rank_failure`).

/// One statement of a launcher's messages about a process that ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureClue {
    /// A rank killed by a signal, named in one line (Open MPI: "process rank R with PID
    /// P on node H exited on signal S").
    Signalled {
        /// The rank.
        rank: usize,
        /// Its pid, when the launcher knows it (Open MPI 4.1 often says "PID 0").
        pid: Option<u32>,
        /// The node the launcher names.
        host: Option<String>,
        /// The signal.
        signal: i32,
    },
    /// The rank a block of messages is about (Open MPI: `Process name: [[J,1],R]`).
    ProcessName(usize),
    /// The exit code of the process the current block is about (Open MPI "Exit code:
    /// C"; hydra "EXIT CODE: C", which for a killed process is the signal's number).
    ExitCode(i32),
    /// The process the current block is about, by pid and host (hydra: "PID P RUNNING
    /// AT H").
    RunningAt {
        /// Its pid.
        pid: u32,
        /// Its host.
        host: Option<String>,
    },
    /// The signal that ended the process of the current block (hydra: "EXIT STRING:
    /// Killed (signal 9)").
    KilledBy(i32),
    /// The wait status of every rank, host by host in rank order (hydra's
    /// `-print-all-exitcodes` line: `[mpiexec@vm] Exit codes: [h1] 0,9 [h2] 0,768`).
    ExitStatuses(Vec<(String, Vec<i32>)>),
    /// Slurm cancelled the job step (or the job) that ran the ranks: `slurmstepd`'s
    /// `*** STEP J.S ON HOST CANCELLED AT TIME ***`, which srun passes on.
    Cancelled(SlurmCancel),
}

/// A job step or job that Slurm cancelled (`scancel J.S` or `scancel J`, a time limit,
/// a node failure), as `slurmstepd` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmCancel {
    /// What was cancelled: `job step J.S` or `job J`.
    pub what: String,
    /// The node whose `slurmstepd` said it.
    pub host: String,
    /// Slurm's reason (the words after `DUE TO`: `TIME LIMIT`, `NODE FAILURE`, ...),
    /// none for a plain `scancel`.
    pub due_to: Option<String>,
}

impl std::fmt::Display for SlurmCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Slurm cancelled {} (said by slurmstepd on {})",
            self.what, self.host
        )?;
        if let Some(reason) = &self.due_to {
            write!(f, " due to {}", reason.to_lowercase())?;
        }
        Ok(())
    }
}

/// What `slurmstepd` says when Slurm cancels a step or a job, wherever it is in `line`:
/// `*** STEP 17.0 ON n1 CANCELLED AT 2026-11-29T06:56:47 ***`, with ` DUE TO REASON`
/// before the closing stars when Slurm gives one.
///
/// ```
/// use rankmig::launcher::{SlurmCancel, slurm_cancel};
/// assert_eq!(
///     slurm_cancel("slurmstepd-n1: error: *** STEP 17.0 ON n1 CANCELLED AT 2026-11-29T06:56:47 ***"),
///     Some(SlurmCancel { what: "job step 17.0".into(), host: "n1".into(), due_to: None })
/// );
/// let limit = slurm_cancel("slurmstepd: error: *** JOB 9 ON n2 CANCELLED AT 2026-11-29T07:00:00 DUE TO TIME LIMIT ***");
/// assert_eq!(limit.map(|c| c.to_string()).as_deref(),
///     Some("Slurm cancelled job 9 (said by slurmstepd on n2) due to time limit"));
/// assert_eq!(slurm_cancel("srun: error: n1: tasks 0-1: Killed"), None);
/// ```
pub fn slurm_cancel(line: &str) -> Option<SlurmCancel> {
    let body = after(line, "*** ")?;
    let body = body.trim_end().strip_suffix("***")?.trim_end();
    let (kind, rest) = body.split_once(' ')?;
    let kind = match kind {
        "STEP" => "job step",
        "JOB" => "job",
        _ => return None,
    };
    let (id, rest) = rest.split_once(" ON ")?;
    let (host, rest) = rest.split_once(" CANCELLED AT ")?;
    let due_to = after(rest, " DUE TO ").map(|r| r.trim().to_owned());
    Some(SlurmCancel {
        what: format!("{kind} {}", id.trim()),
        host: host.trim().to_owned(),
        due_to,
    })
}

/// What a line of Open MPI's runtimes (ORTE in 4.1, PRRTE in 5) says of a rank that died.
///
/// ```
/// use rankmig::launcher::{FailureClue, Launcher, MpiImplementation, launcher};
/// let ompi = launcher(MpiImplementation::OpenMpi4);
/// assert_eq!(
///     ompi.failure_clue("mpirun noticed that process rank 2 with PID 0 on node h5 exited on signal 9 (Killed)."),
///     Some(FailureClue::Signalled { rank: 2, pid: None, host: Some("h5".into()), signal: 9 })
/// );
/// assert_eq!(ompi.failure_clue("  Process name: [[4711,1],3]"), Some(FailureClue::ProcessName(3)));
/// assert_eq!(ompi.failure_clue("  Exit code:    7"), Some(FailureClue::ExitCode(7)));
/// assert_eq!(ompi.failure_clue("=   EXIT CODE: 9"), None);
/// ```
pub(super) fn open_mpi(line: &str) -> Option<FailureClue> {
    let line = line.trim_start();
    if let Some(rest) = after(line, "process rank ") {
        let rest = rest.trim_start();
        if !rest.contains("exited on signal") {
            return None;
        }
        return Some(FailureClue::Signalled {
            rank: first_number(rest)?,
            pid: after(rest, "with PID ")
                .and_then(first_number::<u32>)
                .filter(|&p| p != 0),
            host: word_after(rest, "on node "),
            signal: after(rest, "exited on signal ").and_then(first_number)?,
        });
    }
    if let Some(rest) = after(line, "Process name:") {
        // [[4711,1],3] (ORTE) or [prterun-vm-1234@1,5] (PRRTE): the rank is last.
        return last_number(rest.trim().trim_end_matches(']')).map(FailureClue::ProcessName);
    }
    after(line, "Exit code:")
        .and_then(first_number)
        .map(FailureClue::ExitCode)
}

/// The text after the first `marker` in `line`.
pub(super) fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i + marker.len()..])
}

/// The first word after `marker` in `line`.
pub(super) fn word_after(line: &str, marker: &str) -> Option<String> {
    after(line, marker)
        .and_then(|h| h.split_whitespace().next())
        .map(str::to_owned)
}

/// The number `text` starts with (after blanks).
pub(super) fn first_number<T: std::str::FromStr>(text: &str) -> Option<T> {
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
