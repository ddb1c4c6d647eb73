//! What a run leaves in its run directory.
//!
//! ```text
//! RUN_DIR/
//!   run.json                 how the job was launched
//!   placement-0.txt          initial placement (RANK NODE CORE)
//!   placement-K.txt          placement after the K-th reconfiguration
//!   availability-0.txt       the availability file as the first launch was placed for it
//!                            (availability-restart-N.txt: the N-th launch from a checkpoint)
//!   availability-accepted.txt  the last content of the availability file the job accepted
//!   rms-availability         with --rms: the availability the resource manager gives
//!   reconfigurations.jsonl   one JSON object per availability change
//!   iterations/rank-R.csv    iteration,compute_ns,scheduling_ns,migration_ns per rank
//!   iterations/rank-R.at     the iteration rank R is at (kept when its process dies)
//!   processes.csv            rank,pid,node,core,event,cpus,time,epoch,iteration,level of
//!                            every process event of the job (a rank killed, restarts
//!                            included)
//!   relaunch-request         the ranks ask rankmig run to launch the job again
//!   matrix.mat               the live communication matrix (TreeMatch's dense format,
//!                            or an edge list with --matrix-format edges)
//!   stalls.txt               rankmig run stopped a job whose ranks made no progress
//!   misplaced.txt            rank,pid,host,planned host of a rank not on its planned host
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// File of the run directory that says how the job was launched: `rankmig run` writes it
/// (`supervisor::launch::save_spec`, its format `supervisor::launch::RunSpec`) and reads
/// it back (`supervisor::launch::load_spec`) for `--restart` and `rankmig report`.
pub const RUN_SPEC: &str = "run.json";

/// File of the run directory with one JSON object ([`Reconfiguration`]) per availability
/// change the job saw and what was done; rank 0 appends to it.
pub const RECONFIGURATIONS: &str = "reconfigurations.jsonl";

/// File of the run directory where rank 0 writes the job's live communication matrix
/// (bytes sent between ranks since the launch started, carried across migrations) in
/// TreeMatch's dense format, as `--matrix` (`--matrix-format dense`) reads it, or as an
/// edge list when the run was given `--matrix-format edges`: while the job runs (at an
/// availability check at most every `migrate::job::MATRIX_EVERY`), at each availability
/// change the job acts on, and when the job ends; in one rename each time.
pub const MATRIX: &str = "matrix.mat";

/// File of the run directory by which the ranks ask `rankmig run` to launch the job again
/// from the checkpoint they just took (the job's history, `migrate::job::history`); it holds the reason.
pub const RELAUNCH_REQUEST: &str = "relaunch-request";

/// Asks `rankmig run` to launch the job of `run_dir` again from its newest complete
/// checkpoint, saying `why` ([`RELAUNCH_REQUEST`]). A failure to write is logged: the
/// job then ends without being launched again.
pub fn request_relaunch(run_dir: &Path, why: &str) {
    let path = run_dir.join(RELAUNCH_REQUEST);
    if let Err(e) = std::fs::write(&path, format!("{why}\n")) {
        log::error!("cannot write {}: {e}", path.display());
    }
}

/// File of the run directory holding the last content of the availability file the
/// job accepted (written by rank 0's watcher): `rankmig run` relaunches on it when the
/// file is unreadable or invalid at a relaunch.
pub const ACCEPTED_AVAILABILITY: &str = "availability-accepted.txt";

/// Where the job of `run_dir` keeps its accepted availability ([`ACCEPTED_AVAILABILITY`]).
pub fn accepted_availability(run_dir: Option<&Path>) -> Option<PathBuf> {
    run_dir.map(|d| d.join(ACCEPTED_AVAILABILITY))
}

/// File of the run directory where a rank that does not run on the host its placement
/// names notes it: one line `rank,pid,host,planned` per such process.
pub const MISPLACED: &str = "misplaced.txt";

/// A rank found on another host than its placement's ([`MISPLACED`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misplaced {
    /// The rank.
    pub rank: usize,
    /// Its process.
    pub pid: u32,
    /// The host it runs on.
    pub host: String,
    /// The host its placement names.
    pub planned: String,
}

impl std::fmt::Display for Misplaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} (process {}) runs on host {}, its placement puts it on {}",
            self.rank, self.pid, self.host, self.planned
        )
    }
}

/// Notes in `run_dir` that rank `rank` (process `pid`) runs on `host`, not on
/// `planned` ([`MISPLACED`]). A failure to write is logged.
pub fn note_misplaced(run_dir: &Path, rank: usize, pid: u32, host: &str, planned: &str) {
    let path = run_dir.join(MISPLACED);
    if let Err(e) = append_line(&path, &format!("{rank},{pid},{host},{planned}")) {
        log::error!("cannot write {}: {e}", path.display());
    }
}

/// The misplaced ranks noted in `run_dir` after byte `mark` of [`MISPLACED`].
///
/// ```
/// use rankmig::run_dir::record::{misplaced_after, note_misplaced};
/// let dir = tempfile::tempdir().unwrap();
/// note_misplaced(dir.path(), 1, 42, "h2", "h1");
/// let found = misplaced_after(dir.path(), 0);
/// assert_eq!(found[0].to_string(), "rank 1 (process 42) runs on host h2, its placement puts it on h1");
/// assert!(misplaced_after(dir.path(), 100).is_empty());
/// ```
pub fn misplaced_after(run_dir: &Path, mark: u64) -> Vec<Misplaced> {
    let Ok(text) = std::fs::read(run_dir.join(MISPLACED)) else {
        return Vec::new();
    };
    let new = usize::try_from(mark).ok().and_then(|m| text.get(m..));
    String::from_utf8_lossy(new.unwrap_or_default())
        .lines()
        .filter_map(|l| {
            let mut f = l.split(',');
            Some(Misplaced {
                rank: f.next()?.parse().ok()?,
                pid: f.next()?.parse().ok()?,
                host: f.next()?.to_owned(),
                planned: f.next()?.to_owned(),
            })
        })
        .collect()
}

/// The length of `run_dir`'s [`MISPLACED`] file now (0 if none): where the notes of a
/// launch starting now begin.
pub fn misplaced_mark(run_dir: &Path) -> u64 {
    std::fs::metadata(run_dir.join(MISPLACED)).map_or(0, |m| m.len())
}

/// Durations of the phases of one migration, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// `MPI_Comm_spawn` and the merge, with the application held; for a spawn run in the
    /// background, only the join of the old ranks and the new processes.
    pub spawn: f64,
    /// Rank 0's sends after the new communicator is made: the assignments and, when
    /// rank 0 leaves, its state. The ranks that stay do not wait for the others'
    /// states: each leaving rank sends its own, and the application waits for an
    /// arrival only where it talks to it.
    pub transfer: f64,
    /// The split into the new communicator (made before any state moves).
    pub rebuild: f64,
    /// A spawn run in the background: from its start until the ranks saw it complete
    /// (and the checkpoint written meanwhile committed), the application computing all
    /// along; 0 for a blocking spawn.
    #[serde(default)]
    pub background: f64,
    /// How long rank 0 was held by the migration, from the `checkpoint!` call that
    /// carried it out: the checkpoint before a blocking spawn included, the planning
    /// not (it is the record's `scheduling`).
    #[serde(default)]
    pub pause: f64,
}

/// One availability change seen by the job, and what was done about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconfiguration {
    /// Sequence number (1 = first change).
    pub index: u64,
    /// `checkpoint!` call (iteration) at which it happened (for a migration, at which
    /// it was carried out).
    pub iteration: u64,
    /// A migration whose spawn ran in the background: the iteration at which it was
    /// planned and its spawn started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_iteration: Option<u64>,
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
    /// Bytes the ranks had sent to each other (the live matrix, all pairs) when the plan
    /// was made; absent when it was made from `--matrix`, or without a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_bytes: Option<f64>,
    /// Deciding and planning: availability check, gathers, plan (seconds).
    pub scheduling: f64,
    /// Phases of the migration.
    pub phases: PhaseTimes,
    /// Serialised state carried per moving rank (bytes, largest).
    pub state_bytes: usize,
    /// The ranks that moved, when the outcome is `migrated`.
    #[serde(default)]
    pub moved: Vec<MovedRank>,
}

/// A rank that moved at a reconfiguration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedRank {
    /// The rank.
    pub rank: usize,
    /// The node (host) it left.
    pub from: String,
    /// The node (host) it runs on now.
    pub to: String,
}

/// The file of the job's process events (start, arrived, left, finish, end,
/// relaunch) in a run directory.
pub const PROCESSES: &str = "processes.csv";

/// Where the process events of the next launch will start in `run_dir`'s
/// [`PROCESSES`] file (its length now).
pub fn processes_mark(run_dir: &Path) -> u64 {
    std::fs::metadata(run_dir.join(PROCESSES)).map_or(0, |m| m.len())
}

/// One line of [`PROCESSES`]: `rank,pid,node,core,event,cpus`.
struct ProcessEvent<'a> {
    rank: usize,
    pid: &'a str,
    node: &'a str,
    event: &'a str,
}

impl<'a> ProcessEvent<'a> {
    /// The event of `line`; `None` for a line that is not one.
    fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.split(',');
        let rank = fields.next()?.parse().ok()?;
        let pid = fields.next()?;
        let node = fields.next()?;
        let event = fields.nth(1)?;
        Some(Self {
            rank,
            pid,
            node,
            event,
        })
    }

    /// The process ended (or left) with this event.
    fn ends(&self) -> bool {
        matches!(
            self.event,
            "left" | "finish" | "end" | "relaunch" | "killed" | "died" | "cancelled"
        )
    }
}

/// One line of [`PROCESSES`]:
/// `rank,pid,node,core,event,cpus,time,epoch,iteration,level`, `time` in seconds since
/// the Unix epoch (milliseconds), `epoch` the checkpoint epoch a `restarted` process
/// restored (else empty), `iteration` its `checkpoint!` calls at the event when known
/// (else empty), `level` where the restored epoch was read (`node-local`, `partner
/// copies` or `shared directory`; else empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRow<'a> {
    /// The rank.
    pub rank: usize,
    /// The process (0 when not known).
    pub pid: u32,
    /// Its node (host or logical node).
    pub node: &'a str,
    /// Its core, when known.
    pub core: Option<usize>,
    /// `start`, `restarted`, `arrived`, `left`, `relaunch`, `finish`, `end`, `killed`,
    /// `died` or `cancelled`.
    pub event: &'a str,
    /// The CPUs it may run on (`;`-separated), or empty.
    pub cpus: &'a str,
    /// The epoch restored from (`restarted`).
    pub epoch: Option<u64>,
    /// The iteration at the event.
    pub iteration: Option<u64>,
    /// Where a `restarted` process's epoch was read.
    pub level: Option<&'a str>,
}

impl ProcessRow<'_> {
    /// Appends the row, timed now, to `run_dir`'s [`PROCESSES`]; a failure is logged.
    pub fn append(&self, run_dir: &Path) {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let line = format!(
            "{},{},{},{},{},{},{time:.3},{},{},{}",
            self.rank,
            self.pid,
            self.node,
            opt(self.core.map(|c| c as u64)),
            self.event,
            self.cpus.replace(',', ";"),
            opt(self.epoch),
            opt(self.iteration),
            self.level.unwrap_or_default().replace(',', ";")
        );
        let path = run_dir.join(PROCESSES);
        if let Err(e) = append_line(&path, &line) {
            log::warn!("cannot record a process event in {}: {e}", path.display());
        }
    }
}

/// Where the processes of a launch from a checkpoint restarted from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartedFrom {
    /// The epoch.
    pub epoch: u64,
    /// Its iteration.
    pub iteration: u64,
    /// Where it was read (`node-local`, `partner copies`, `shared directory`), when a
    /// process said.
    pub level: Option<String>,
}

/// The epoch and iteration the processes of the launch whose events start at `mark`
/// restarted from (their `restarted` events), once every rank of `0..ranks` has one.
///
/// ```
/// use rankmig::run_dir::record::{PROCESSES, restarted_from};
/// let dir = tempfile::tempdir().unwrap();
/// let events = "0,11,n1,0,restarted,0,1.0,3,120,partner copies\n";
/// std::fs::write(dir.path().join(PROCESSES), events).unwrap();
/// assert_eq!(restarted_from(dir.path(), 0, 2), None);
/// std::fs::write(dir.path().join(PROCESSES), format!("{events}1,12,n2,0,restarted,0,1.0,3,120\n")).unwrap();
/// let from = restarted_from(dir.path(), 0, 2).unwrap();
/// assert_eq!((from.epoch, from.iteration, from.level.as_deref()), (3, 120, Some("partner copies")));
/// ```
pub fn restarted_from(run_dir: &Path, mark: u64, ranks: usize) -> Option<RestartedFrom> {
    let new = events_after(run_dir, mark)?;
    let mut seen = vec![false; ranks];
    let mut from = None;
    for line in new.lines() {
        let f: Vec<&str> = line.split(',').collect();
        if f.get(4) != Some(&"restarted") {
            continue;
        }
        let (Some(rank), Some(epoch), Some(iteration)) = (
            f.first().and_then(|r| r.parse::<usize>().ok()),
            f.get(7).and_then(|e| e.parse::<u64>().ok()),
            f.get(8).and_then(|i| i.parse::<u64>().ok()),
        ) else {
            continue;
        };
        if let Some(s) = seen.get_mut(rank) {
            *s = true;
        }
        let said = f.get(9).filter(|l| !l.is_empty()).map(|l| (*l).to_owned());
        let level = said.or_else(|| from.as_ref().and_then(|f: &RestartedFrom| f.level.clone()));
        from = Some(RestartedFrom {
            epoch,
            iteration,
            level,
        });
    }
    seen.iter().all(|&s| s).then_some(from).flatten()
}

/// The process of rank `rank` in the events written to `run_dir` after `mark` (its
/// last `start`, `restarted` or `arrived` event), if any.
pub fn pid_of_rank(run_dir: &Path, mark: u64, rank: usize) -> Option<u32> {
    let new = events_after(run_dir, mark)?;
    new.lines()
        .rev()
        .filter_map(ProcessEvent::parse)
        .find(|e| e.rank == rank && matches!(e.event, "start" | "restarted" | "arrived"))
        .and_then(|e| e.pid.parse().ok())
}

/// The process events written to `run_dir`'s [`PROCESSES`] after `mark`, as text.
fn events_after(run_dir: &Path, mark: u64) -> Option<String> {
    let text = std::fs::read(run_dir.join(PROCESSES)).ok()?;
    let new = text.get(usize::try_from(mark).ok()?..)?;
    Some(String::from_utf8_lossy(new).into_owned())
}

/// The ranks of `0..ranks` that have not ended (no `finish`, `end` nor `relaunch` event)
/// among the process events written after `mark`; `None` when nothing was written
/// after it (a program that does not run a rankmig job).
///
/// ```
/// use rankmig::run_dir::record::{PROCESSES, unended_ranks};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join(PROCESSES), "0,1,h1,0,start,0\n1,2,h2,0,start,0\n0,1,h1,0,finish,0\n").unwrap();
/// assert_eq!(unended_ranks(dir.path(), 0, 2), Some(vec![1]));
/// assert_eq!(unended_ranks(dir.path(), 1000, 2), None);
/// ```
pub fn unended_ranks(run_dir: &Path, mark: u64, ranks: usize) -> Option<Vec<usize>> {
    let new = events_after(run_dir, mark)?;
    if new.trim().is_empty() {
        return None;
    }
    let mut ended = vec![false; ranks];
    for e in new.lines().filter_map(ProcessEvent::parse) {
        if matches!(e.event, "finish" | "end" | "relaunch") {
            if let Some(ended) = ended.get_mut(e.rank) {
                *ended = true;
            }
        }
    }
    Some((0..ranks).filter(|&r| !ended[r]).collect())
}

/// The nodes on which processes of the job run, from the process events written after
/// `mark`: a process (rank, pid) runs on its node from its `start` or `arrived` event
/// until its `left`, `finish`, `end` or `relaunch` event. `None` until every rank of
/// `0..ranks` has been seen running (a launch still starting).
///
/// ```
/// use rankmig::run_dir::record::{PROCESSES, nodes_with_ranks};
/// let dir = tempfile::tempdir().unwrap();
/// let events = "0,11,n1,0,start,0\n1,12,n4,0,start,0\n1,13,n2,1,arrived,0\n1,12,n4,0,left,0\n";
/// std::fs::write(dir.path().join(PROCESSES), events).unwrap();
/// assert_eq!(nodes_with_ranks(dir.path(), 0, 2), Some(vec!["n1".to_owned(), "n2".to_owned()]));
/// assert_eq!(nodes_with_ranks(dir.path(), 0, 3), None);
/// ```
pub fn nodes_with_ranks(run_dir: &Path, mark: u64, ranks: usize) -> Option<Vec<String>> {
    let new = events_after(run_dir, mark)?;
    let mut running: Vec<ProcessEvent> = Vec::new();
    let mut seen = vec![false; ranks];
    for e in new.lines().filter_map(ProcessEvent::parse) {
        if e.ends() {
            running.retain(|r| (r.rank, r.pid) != (e.rank, e.pid));
        } else if matches!(e.event, "start" | "arrived") {
            if let Some(s) = seen.get_mut(e.rank) {
                *s = true;
            }
            running.push(e);
        }
    }
    if !seen.iter().all(|&s| s) {
        return None;
    }
    let mut nodes: Vec<String> = running.iter().map(|r| r.node.to_owned()).collect();
    nodes.sort();
    nodes.dedup();
    Some(nodes)
}

/// The rank and node of the process `pid`, from the process events written to
/// `run_dir` after `mark`.
pub fn process_of_pid(run_dir: &Path, mark: u64, pid: u32) -> Option<(usize, String)> {
    let new = events_after(run_dir, mark)?;
    let pid = pid.to_string();
    new.lines()
        .filter_map(ProcessEvent::parse)
        .find(|e| e.pid == pid)
        .map(|e| (e.rank, e.node.to_owned()))
}

/// The ranks whose process started on `node` (its `start` event written to `run_dir`
/// after `mark`), in rank order.
pub fn ranks_started_on(run_dir: &Path, mark: u64, node: &str) -> Vec<usize> {
    let Some(new) = events_after(run_dir, mark) else {
        return Vec::new();
    };
    let mut ranks: Vec<usize> = new
        .lines()
        .filter_map(ProcessEvent::parse)
        .filter(|e| e.event == "start" && e.node == node)
        .map(|e| e.rank)
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// The node of the newest process of `rank` (its last `start` or `arrived` event
/// written to `run_dir` after `mark`).
///
/// ```
/// use rankmig::run_dir::record::{PROCESSES, node_of_rank, process_of_pid};
/// let dir = tempfile::tempdir().unwrap();
/// let events = "1,12,n4,0,start,0\n1,13,n2,1,arrived,0\n1,12,n4,0,left,0\n";
/// std::fs::write(dir.path().join(PROCESSES), events).unwrap();
/// assert_eq!(node_of_rank(dir.path(), 0, 1).as_deref(), Some("n2"));
/// assert_eq!(process_of_pid(dir.path(), 0, 12), Some((1, "n4".to_owned())));
/// assert_eq!(node_of_rank(dir.path(), 0, 0), None);
/// ```
pub fn node_of_rank(run_dir: &Path, mark: u64, rank: usize) -> Option<String> {
    let new = events_after(run_dir, mark)?;
    new.lines()
        .rev()
        .filter_map(ProcessEvent::parse)
        .find(|e| e.rank == rank && matches!(e.event, "start" | "arrived"))
        .map(|e| e.node.to_owned())
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

/// The highest K of the `placement-K.txt` files of a run directory (0 if none): the
/// migrations earlier launches of the same run made. A launch from a checkpoint numbers
/// its own migrations after them, so the files of the earlier launches stay.
pub fn migrations_recorded(run_dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix("placement-")?
                .strip_suffix(".txt")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// The file in which rank `rank` keeps the iteration it is at (8 bytes, little-endian,
/// stored at each `checkpoint!` call through a shared mapping).
pub fn iteration_mark_file(run_dir: &Path, rank: usize) -> PathBuf {
    run_dir.join("iterations").join(format!("rank-{rank}.at"))
}

/// The iteration rank `rank` of the job of `run_dir` was at last (its process may be
/// gone), from [`iteration_mark_file`]; `None` when the file is missing or short.
///
/// ```
/// use rankmig::run_dir::record::{iteration_mark, iteration_mark_file};
/// let dir = tempfile::tempdir().unwrap();
/// assert_eq!(iteration_mark(dir.path(), 2), None);
/// std::fs::create_dir_all(dir.path().join("iterations")).unwrap();
/// std::fs::write(iteration_mark_file(dir.path(), 2), 4242u64.to_le_bytes()).unwrap();
/// assert_eq!(iteration_mark(dir.path(), 2), Some(4242));
/// ```
pub fn iteration_mark(run_dir: &Path, rank: usize) -> Option<u64> {
    let bytes = std::fs::read(iteration_mark_file(run_dir, rank)).ok()?;
    Some(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?))
}

/// Path of a rank's iteration file.
pub fn iterations_file(run_dir: &Path, rank: usize) -> PathBuf {
    run_dir.join("iterations").join(format!("rank-{rank}.csv"))
}

/// The start of a reconfiguration's `change` when the contention watch made it
/// (`contention: n1's ranks waited 61% of 10 s for a CPU; 0 of 1 core usable`).
pub const CONTENTION_PREFIX: &str = "contention: ";

impl Reconfiguration {
    /// True when the contention watch made this reconfiguration, not an edit.
    pub fn by_contention(&self) -> bool {
        self.change.starts_with(CONTENTION_PREFIX)
    }
}

/// Appends a reconfiguration record.
pub fn append_reconfiguration(run_dir: &Path, r: &Reconfiguration) -> std::io::Result<()> {
    let line = serde_json::to_string(r).map_err(std::io::Error::other)?;
    append_line(&run_dir.join(RECONFIGURATIONS), &line)
}

/// Reads every reconfiguration record of a run directory.
pub fn read_reconfigurations(run_dir: &Path) -> Result<Vec<Reconfiguration>, String> {
    let path = run_dir.join(RECONFIGURATIONS);
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
    /// With the contention watch on, at the iterations that made an availability check:
    /// the share of the wall time since the previous check that this rank waited for a
    /// CPU (a fifth column, 0.000 to 1.000; absent elsewhere).
    pub wait_share: Option<f64>,
    /// With the contention watch on, at the checks of the rank that reads its node's CPU
    /// pressure (the node's lowest rank, where `/proc/pressure/cpu` can be read): the
    /// share of the wall time since the previous check that some task of the node waited
    /// for a CPU (a sixth column, 0.000 to 1.000; absent elsewhere).
    pub pressure_share: Option<f64>,
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
    let mut text = Vec::with_capacity(records.len() * 24);
    for r in records {
        write_iteration_line(&mut text, r);
    }
    f.write_all(&text)
}

/// One line `iteration,compute_ns,scheduling_ns,migration_ns`: whole nanoseconds, written
/// without the formatting machinery (a job records every iteration, some take a few µs).
fn write_iteration_line(out: &mut Vec<u8>, r: &IterationRecord) {
    let mut number = itoa::Buffer::new();
    out.extend_from_slice(number.format(r.iteration).as_bytes());
    for seconds in [r.compute, r.scheduling, r.migration] {
        out.push(b',');
        out.extend_from_slice(number.format(nanoseconds(seconds)).as_bytes());
    }
    if r.wait_share.is_some() || r.pressure_share.is_some() {
        out.push(b',');
    }
    if let Some(share) = r.wait_share {
        out.extend_from_slice(format!("{share:.3}").as_bytes());
    }
    if let Some(share) = r.pressure_share {
        out.extend_from_slice(format!(",{share:.3}").as_bytes());
    }
    out.push(b'\n');
}

/// Seconds as whole nanoseconds (negative or not finite: 0).
fn nanoseconds(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1e9).round() as u64
    } else {
        0
    }
}

/// A time field: whole nanoseconds, or seconds with a decimal point (files of earlier
/// versions).
fn parse_duration_field(field: &str) -> Option<f64> {
    if field.contains('.') {
        field.parse().ok()
    } else {
        field.parse::<u64>().ok().map(|ns| ns as f64 * 1e-9)
    }
}

/// Reads a rank's iteration file.
pub fn read_iterations(path: &Path) -> Result<Vec<IterationRecord>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = || {
            format!(
                "{}:{}: expected 'iteration,compute_ns,scheduling_ns,migration_ns[,wait_share[,cpu_pressure]]': '{line}'",
                path.display(),
                i + 1
            )
        };
        let f: Vec<&str> = line.split(',').collect();
        let (it, c, s, m, w, p) = match f[..] {
            [it, c, s, m] => (it, c, s, m, None, None),
            [it, c, s, m, w] => (it, c, s, m, Some(w), None),
            [it, c, s, m, w, p] => (it, c, s, m, Some(w), Some(p)),
            _ => return Err(bad()),
        };
        let share = |field: Option<&str>| match field.map(str::trim) {
            None | Some("") => Ok(None),
            Some(v) => v.parse::<f64>().map(Some).map_err(|_| bad()),
        };
        let wait_share = share(w)?;
        let pressure_share = share(p)?;
        out.push(IterationRecord {
            iteration: it.parse().map_err(|_| bad())?,
            compute: parse_duration_field(c).ok_or_else(bad)?,
            scheduling: parse_duration_field(s).ok_or_else(bad)?,
            migration: parse_duration_field(m).ok_or_else(bad)?,
            wait_share,
            pressure_share,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_round_trip_in_nanoseconds_and_old_seconds_files_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let records = [
            IterationRecord {
                iteration: 1,
                compute: 0.000_008_075,
                scheduling: 0.0,
                migration: 0.0,
                wait_share: None,
                pressure_share: None,
            },
            IterationRecord {
                iteration: 2,
                compute: 1.5,
                scheduling: 0.25,
                migration: 3.000_000_001,
                wait_share: Some(0.625),
                pressure_share: None,
            },
            IterationRecord {
                iteration: 3,
                compute: 0.5,
                scheduling: 0.0,
                migration: 0.0,
                wait_share: Some(0.5),
                pressure_share: Some(0.75),
            },
        ];
        append_iterations(dir.path(), 3, &records).expect("write");
        let path = iterations_file(dir.path(), 3);
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(
            text,
            "1,8075,0,0\n2,1500000000,250000000,3000000001,0.625\n3,500000000,0,0,0.500,0.750\n"
        );
        assert_eq!(read_iterations(&path).expect("parse"), records);

        std::fs::write(&path, "7,0.000010199,0.000000000,2.5\n").expect("old file");
        let old = read_iterations(&path).expect("old format");
        assert_eq!(old[0].iteration, 7);
        assert!((old[0].compute - 0.000_010_199).abs() < 1e-15);
        assert_eq!(old[0].migration, 2.5);

        std::fs::write(&path, "7,ten,0,0\n").expect("bad file");
        let err = read_iterations(&path).expect_err("a bad field is refused");
        assert!(err.contains(":1:") && err.contains("ten"), "{err}");
    }

    #[test]
    fn a_new_launch_numbers_its_migrations_after_the_recorded_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(migrations_recorded(dir.path()), 0);
        for name in [
            "placement-0.txt",
            "placement-2.txt",
            "placement-restart-7.txt",
        ] {
            std::fs::write(dir.path().join(name), "").expect("placement file");
        }
        assert_eq!(migrations_recorded(dir.path()), 2);
    }
}
