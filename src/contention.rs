//! The contention watch (`rankmig run --contention-watch`): nodes whose CPUs something
//! else takes, found from how long the job's ranks wait for a CPU, not only declared in
//! the availability file.
//!
//! Each rank reads its run-queue delay (the second field of the `schedstat` of each of
//! its tasks, `/proc/self/task/TID/schedstat`: nanoseconds the thread spent runnable but
//! waiting for a CPU, summed over the rank's threads, [`WaitReader`]) at every
//! availability check, and hands the delay and the wall time since its previous check
//! (or, for a rank whose threads wanted more than one CPU, the CPU time they wanted,
//! [`WaitSample::wall_ns`]) to rank 0 with the exchange the check already makes, with
//! the first CPU it is bound to. Rank 0 adds them up per rank over a window
//! ([`ContentionSettings::window`]). A rank's *wait share* is its waits over its wall
//! time; its *excess* is how much more it waited than the job's least-waiting rank, as
//! a share of the CPU time that rank got: `(share − least) / (1 − least)`. A machine
//! loaded alike everywhere (other jobs' compilers spread over every CPU by the
//! scheduler) raises every rank's share and leaves the excess near 0; a hog pinned to
//! one rank's CPU raises that rank's only, however many ranks its node holds.
//!
//! A node is contended when one of its ranks has a share and an excess beyond
//! [`ContentionSettings::threshold`] and the job's own ranks there fit its cores (a node
//! the job itself oversubscribes waits for its own ranks); a rank bound to the CPU of
//! another rank of the job waits for the job and is not judged. The ranks that waited
//! move: the job side (`migrate/job/contention.rs`) leaves their cores out of the node's
//! offer ([`Cap::cores`]) and the planner moves the ranks on cores a node no longer
//! offers. The rules against flapping: one decision per window at most, and so at most
//! one move per window; a cap holds for [`ContentionSettings::cooldown`] and then until
//! the CPUs it took ranks off measured busy under half the threshold over a window (a
//! hysteresis band, [`cpu_busy`]); no move when the nodes left cannot hold the job
//! (recorded); nothing when every rank waits alike.
//!
//! The node's own view, where the kernel gives it: one rank per node (its lowest) reads
//! the `some` line of `/proc/pressure/cpu` ([`pressure`]) at each check and hands its
//! growth over the same interval to rank 0 in the same exchange. Rank 0 adds it up per
//! node over the window and reports it beside the ranks' waits (in the record's reason
//! and the reading rank's iteration file); it decides nothing: see `docs/contention.md`
//! for why.
//!
//! Defaults (measured on the 2-core machine this was written on, while three other
//! engineers' builds loaded it to a load average of 6 to 8): two pinned spinners there
//! waited 82–83 % of each 10 s window, alike (excess 0.00–0.09); two hogs pinned to one
//! spinner's CPU then moved the builds to the other CPU and both spinners waited
//! 88–90 % (excess under 0.05): no CPU was freer than the other, and nothing should
//! move. On an unloaded core, one full-time hog beside a rank gives an excess of 0.5,
//! two give 0.67. So the threshold is 0.3, three times the idle excess measured and
//! below what a single hog causes; the window is 10 s, long enough for the idle excess
//! to average out; the cool-down 60 s, six windows.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod cpu_busy;
pub mod pressure;

pub use pressure::{PressureError, PressureReader};

/// What the watch does with a contended node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ContentionMode {
    /// No watch: the ranks read no run-queue delay (the default).
    #[default]
    Off,
    /// Records and warns, moves nothing (`--contention-watch=report`).
    Report,
    /// Lowers a contended node's cores for the planner and moves ranks off it
    /// (`--contention-watch`).
    Act,
}

impl std::str::FromStr for ContentionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "" | "off" => Ok(Self::Off),
            "report" => Ok(Self::Report),
            "act" | "on" => Ok(Self::Act),
            other => Err(format!(
                "contention watch mode {other:?}: expected act or report"
            )),
        }
    }
}

impl std::fmt::Display for ContentionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Off => "off",
            Self::Report => "report",
            Self::Act => "act",
        })
    }
}

/// Default [`ContentionSettings::threshold`] (see the module's measurements).
pub const DEFAULT_THRESHOLD: f64 = 0.3;
/// Default [`ContentionSettings::window`], in milliseconds.
pub const DEFAULT_WINDOW_MS: u64 = 10_000;
/// Default [`ContentionSettings::cooldown`], in milliseconds.
pub const DEFAULT_COOLDOWN_MS: u64 = 60_000;

/// The watch's settings: `rankmig run --contention-watch[=report]`,
/// `--contention-threshold`, `--contention-window`, `--contention-cooldown`; the ranks
/// read them from `RANKMIG_CONTENTION*` ([`ContentionSettings::from_env`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContentionSettings {
    /// Off, report only, or act.
    pub mode: ContentionMode,
    /// A node is contended when one of its ranks waited for a CPU more than this share
    /// of the window beyond what the least-waiting rank waited (0 < threshold < 1); the
    /// cores it left are taken again below half of it.
    pub threshold: f64,
    /// The window over which waits are added up, in milliseconds: one decision per
    /// window.
    pub window_ms: u64,
    /// How long a node left for contention keeps its lowered cores, in milliseconds.
    pub cooldown_ms: u64,
}

/// A threshold is never NaN ([`parse_threshold`]).
impl Eq for ContentionSettings {}

impl Default for ContentionSettings {
    fn default() -> Self {
        Self {
            mode: ContentionMode::Off,
            threshold: DEFAULT_THRESHOLD,
            window_ms: DEFAULT_WINDOW_MS,
            cooldown_ms: DEFAULT_COOLDOWN_MS,
        }
    }
}

/// The mode (`act`, `report`; unset: off).
pub const ENV_CONTENTION: &str = "RANKMIG_CONTENTION";
/// [`ContentionSettings::threshold`].
pub const ENV_CONTENTION_THRESHOLD: &str = "RANKMIG_CONTENTION_THRESHOLD";
/// [`ContentionSettings::window_ms`].
pub const ENV_CONTENTION_WINDOW_MS: &str = "RANKMIG_CONTENTION_WINDOW_MS";
/// [`ContentionSettings::cooldown_ms`].
pub const ENV_CONTENTION_COOLDOWN_MS: &str = "RANKMIG_CONTENTION_COOLDOWN_MS";

/// A `RANKMIG_CONTENTION*` value the job cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {var}={value:?}: {expected}")]
pub struct ContentionSettingsError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What it must be.
    pub expected: &'static str,
}

impl ContentionSettings {
    /// True when the ranks read their waits.
    pub fn on(&self) -> bool {
        self.mode != ContentionMode::Off
    }

    /// The window.
    pub fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }

    /// The cool-down.
    pub fn cooldown(&self) -> Duration {
        Duration::from_millis(self.cooldown_ms)
    }

    /// The variables `rankmig run` sets for the ranks (none when the watch is off).
    pub fn to_env(&self) -> Vec<(String, String)> {
        if !self.on() {
            return Vec::new();
        }
        vec![
            (ENV_CONTENTION.into(), self.mode.to_string()),
            (ENV_CONTENTION_THRESHOLD.into(), self.threshold.to_string()),
            (ENV_CONTENTION_WINDOW_MS.into(), self.window_ms.to_string()),
            (
                ENV_CONTENTION_COOLDOWN_MS.into(),
                self.cooldown_ms.to_string(),
            ),
        ]
    }

    /// Reads the settings from the environment; unset variables take their defaults.
    pub fn from_env() -> Result<Self, ContentionSettingsError> {
        let get = |var: &'static str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
        let mut s = Self::default();
        if let Some(v) = get(ENV_CONTENTION) {
            s.mode = v.parse().map_err(|_| ContentionSettingsError {
                var: ENV_CONTENTION,
                value: v.clone(),
                expected: "act or report",
            })?;
        }
        if let Some(v) = get(ENV_CONTENTION_THRESHOLD) {
            s.threshold = parse_threshold(&v).map_err(|_| ContentionSettingsError {
                var: ENV_CONTENTION_THRESHOLD,
                value: v.clone(),
                expected: "a share between 0 and 1 (exclusive)",
            })?;
        }
        for (var, field) in [
            (ENV_CONTENTION_WINDOW_MS, &mut s.window_ms),
            (ENV_CONTENTION_COOLDOWN_MS, &mut s.cooldown_ms),
        ] {
            if let Some(v) = get(var) {
                *field = v.trim().parse().map_err(|_| ContentionSettingsError {
                    var,
                    value: v.clone(),
                    expected: "a whole number of milliseconds",
                })?;
            }
        }
        Ok(s)
    }
}

/// A threshold: a number strictly between 0 and 1, or a percentage (`30%`).
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{text:?} is not a number"))?;
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(format!(
            "{text:?}: a share between 0 and 1 (exclusive), like 0.3 or 30%"
        ))
    }
}

/// This thread's run-queue delay so far in nanoseconds (the second field of
/// `/proc/thread-self/schedstat`); `None` where the kernel does not give it.
pub fn run_queue_wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat(&text)
}

/// The second field of a `schedstat` line (`run_ns wait_ns timeslices`).
pub fn parse_schedstat(text: &str) -> Option<u64> {
    parse_run_and_wait(text).map(|(_, wait)| wait)
}

/// The first two fields of a `schedstat` line (`run_ns wait_ns timeslices`): the
/// nanoseconds the task ran on a CPU and those it spent runnable, waiting for one.
pub fn parse_run_and_wait(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace();
    let run = fields.next()?.parse().ok()?;
    let wait = fields.next()?.parse().ok()?;
    Some((run, wait))
}

/// Where a rank's tasks (its threads: the main one, OpenMP's workers, the MPI library's
/// helpers) are listed, one directory per task named by its thread id, each with its
/// own `schedstat`.
pub const TASKS_DIR: &str = "/proc/self/task";

/// One rank's waits since its previous check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitSample {
    /// Nanoseconds waiting for a CPU (summed over the rank's threads, [`WaitReader`]).
    pub wait_ns: u64,
    /// Nanoseconds the waits are a share of: the wall time, or, for a rank whose threads
    /// wanted more than one CPU, the CPU time they wanted (ran plus waited, summed over
    /// them) when it is longer (the wall time × the CPUs they wanted). 0: no value.
    pub wall_ns: u64,
}

impl WaitSample {
    /// Both added up.
    fn plus(self, other: &WaitSample) -> WaitSample {
        WaitSample {
            wait_ns: self.wait_ns.saturating_add(other.wait_ns),
            wall_ns: self.wall_ns.saturating_add(other.wall_ns),
        }
    }

    /// The share of the wall time spent waiting (0 when no time passed).
    pub fn share(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            (self.wait_ns as f64 / self.wall_ns as f64).clamp(0.0, 1.0)
        }
    }
}

/// A rank's reading of its waits: the sample since its previous reading, summed over
/// every task (thread) of the rank, listed in [`TASKS_DIR`] at each reading, so that a
/// hybrid (MPI+OpenMP) rank whose worker threads wait for a CPU is seen, not only its
/// main thread.
///
/// The rules, per task keyed by its thread id (TID), so that a task that starts or ends
/// between two readings never makes a negative or absurd wait:
///
/// - a task seen at both readings counts the growth of its counters;
/// - a task new since the previous reading counts its whole counters: it started after
///   that reading (the listing held every task alive then), so all of its waits fall in
///   the interval; counting it from 0 would lose the waits of short-lived workers and
///   of every thread of a parallel region that started since;
/// - a task gone since counts nothing: its last waits (after the previous reading) are
///   lost, which the kernel leaves no way to read; its earlier waits were counted then.
///   Summing per task, not the totals of two listings, keeps its disappearance from
///   making the sum shrink;
/// - a task listed but whose file cannot be read now (it is ending) keeps its previous
///   counters, and is not taken for a new task at the next reading;
/// - a counter that went down (a TID reused by a new thread between two readings)
///   counts 0, and no task counts more than the wall time of the interval.
///
/// The sample's waits are a share of the wall time, or of the CPU time the threads
/// wanted (ran plus waited) where that is longer ([`WaitSample::wall_ns`]): a
/// single-threaded rank, whose helper threads sleep, keeps the share of wall time it
/// always had; a rank of four busy threads each waiting a quarter of the time waits a
/// quarter, not all of it.
///
/// It keeps each task's `schedstat` open and reads it again from its start (a check
/// with the watch took 19 µs (median) opening the one file of the main thread each
/// time, 12 µs so, `benches/capi.rs`); the listing is read at every reading.
///
/// Every rank of a job with the watch on has one, even where the kernel gives no
/// run-queue delay: such a reader samples "no value" (zero wall time), which the rank
/// hands over in the check's gather to rank 0 like the others. Ranks whose kernels
/// differ thus still make the same collective at every check (a rank without a
/// reader would make the broadcast of the stride instead, and the job would hang),
/// and rank 0 leaves the nodes nobody measured out of its comparison
/// ([`node_waits`]).
#[derive(Debug)]
pub struct WaitReader {
    /// The directory of tasks ([`TASKS_DIR`]).
    tasks_dir: std::path::PathBuf,
    /// False where no task's `schedstat` could be read at the start.
    reads: bool,
    /// Each task's open file and its counters at the previous reading, by TID.
    tasks: std::collections::HashMap<u32, TaskCounters>,
    last_time: std::time::Instant,
}

/// One task's open `schedstat` and its counters at the previous reading.
#[derive(Debug)]
struct TaskCounters {
    file: std::fs::File,
    run_ns: u64,
    wait_ns: u64,
}

/// One listing of the tasks ([`WaitReader::read_tasks`]).
#[derive(Debug)]
struct Reading {
    /// Every TID listed.
    listed: Vec<u32>,
    /// The tasks whose counters were read: TID, the file opened for a task not open
    /// before, `(run_ns, wait_ns)`.
    read: Vec<(u32, Option<std::fs::File>, (u64, u64))>,
}

/// The counters of the open `schedstat` `file`, read again from its start.
fn read_counters(file: &std::fs::File) -> Option<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_run_and_wait(std::str::from_utf8(buf.get(..n)?).ok()?)
}

/// The TIDs listed in `tasks_dir` (entries whose names are not numbers are skipped).
fn list_tasks(tasks_dir: &std::path::Path) -> std::io::Result<Vec<u32>> {
    let mut tids = Vec::new();
    for entry in std::fs::read_dir(tasks_dir)? {
        if let Some(tid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// Why the `schedstat` file at `path` gives no waits: the error opening or reading it,
/// or its text, which is not the kernel's three numbers.
fn why_unreadable(path: &std::path::Path) -> String {
    match std::fs::read_to_string(path) {
        Err(e) => e.to_string(),
        Ok(text) => format!(
            "{:?} is not a schedstat line (run_ns wait_ns timeslices)",
            text.trim_end()
        ),
    }
}

/// Why the tasks in `tasks_dir` give no waits: the error listing it, or why the first
/// task's `schedstat` is unreadable ([`why_unreadable`]), with its path.
fn why_tasks_unreadable(tasks_dir: &std::path::Path) -> String {
    match list_tasks(tasks_dir).map(|tids| tids.into_iter().min()) {
        Err(e) => format!("{}: {e}", tasks_dir.display()),
        Ok(None) => format!("{}: no task listed", tasks_dir.display()),
        Ok(Some(tid)) => {
            let path = tasks_dir.join(tid.to_string()).join("schedstat");
            format!("{}: {}", path.display(), why_unreadable(&path))
        }
    }
}

impl WaitReader {
    /// Starts reading now, the tasks of [`TASKS_DIR`]; a reader that samples nothing
    /// where the kernel gives no run-queue delay (said once, in a warning).
    pub fn start() -> Self {
        let dir = std::path::Path::new(TASKS_DIR);
        let reader = Self::open(dir);
        if !reader.reads() {
            log::warn!(
                "contention watch: {}: this rank's waits for a CPU are not measured",
                why_tasks_unreadable(dir)
            );
        }
        reader
    }

    /// Starts reading the tasks listed in `tasks_dir` (their `TID/schedstat` files).
    fn open(tasks_dir: &std::path::Path) -> Self {
        let mut reader = Self {
            tasks_dir: tasks_dir.to_owned(),
            reads: true,
            tasks: std::collections::HashMap::new(),
            last_time: std::time::Instant::now(),
        };
        // Every task alive now is the baseline: its waits so far are not this job's
        // interval.
        reader.reads = reader.read_tasks().is_some_and(|reading| {
            let any = !reading.read.is_empty();
            reader.keep(reading);
            any
        });
        reader
    }

    /// True when this reader measures the waits (the kernel gives them).
    pub fn reads(&self) -> bool {
        self.reads
    }

    /// The tasks listed now, and those whose counters could be read: TID, the file newly
    /// opened (`None` for a task already open) and its counters. `None` where the
    /// listing cannot be read.
    fn read_tasks(&self) -> Option<Reading> {
        let listed = list_tasks(&self.tasks_dir).ok()?;
        let mut read = Vec::with_capacity(listed.len());
        for &tid in &listed {
            let (new, counters) = match self.tasks.get(&tid) {
                Some(known) => (None, read_counters(&known.file)),
                None => {
                    let path = self.tasks_dir.join(tid.to_string()).join("schedstat");
                    match std::fs::File::open(path) {
                        Ok(file) => {
                            let counters = read_counters(&file);
                            (Some(file), counters)
                        }
                        // Ended since it was listed.
                        Err(_) => continue,
                    }
                }
            };
            if let Some(counters) = counters {
                read.push((tid, new, counters));
            }
        }
        Some(Reading { listed, read })
    }

    /// Keeps `reading` as the counters of the previous reading: the tasks read, and
    /// those listed whose file could not be read now with their earlier counters. Tasks
    /// no longer listed are dropped (their files closed).
    fn keep(&mut self, reading: Reading) {
        let mut old = std::mem::take(&mut self.tasks);
        for (tid, new, (run_ns, wait_ns)) in reading.read {
            let file = match new {
                Some(file) => Some(file),
                None => old.remove(&tid).map(|t| t.file),
            };
            if let Some(file) = file {
                let counters = TaskCounters {
                    file,
                    run_ns,
                    wait_ns,
                };
                self.tasks.insert(tid, counters);
            }
        }
        for (tid, task) in old {
            if reading.listed.contains(&tid) {
                self.tasks.insert(tid, task);
            }
        }
    }

    /// The waits since the previous reading, summed over the rank's tasks (the rules
    /// are the type's); "no value" (zero wall time) where no task can be read now or
    /// none could at the start.
    pub fn sample(&mut self) -> WaitSample {
        self.sample_at(std::time::Instant::now())
    }

    /// [`WaitReader::sample`] at `now`.
    fn sample_at(&mut self, now: std::time::Instant) -> WaitSample {
        if !self.reads {
            return WaitSample::default();
        }
        let wall = u64::try_from((now - self.last_time).as_nanos()).unwrap_or(u64::MAX);
        let Some(reading) = self.read_tasks().filter(|r| !r.read.is_empty()) else {
            // Nothing read: the next reading covers this interval too.
            return WaitSample::default();
        };
        let (mut wait_ns, mut wanted_ns) = (0u64, 0u64);
        for (tid, _, (run, wait)) in &reading.read {
            // A task new since the previous reading counts its whole counters.
            let (run_before, wait_before) = self
                .tasks
                .get(tid)
                .map_or((0, 0), |t| (t.run_ns, t.wait_ns));
            let waited = wait.saturating_sub(wait_before).min(wall);
            let ran = run.saturating_sub(run_before);
            wait_ns = wait_ns.saturating_add(waited);
            wanted_ns = wanted_ns.saturating_add(ran.saturating_add(waited).min(wall));
        }
        self.keep(reading);
        self.last_time = now;
        WaitSample {
            wait_ns,
            wall_ns: wall.max(wanted_ns),
        }
    }
}

/// What a rank hands to rank 0 at a check: its waits, and where it reads its node's
/// CPU pressure ([`pressure`]: one rank per node, the node's lowest), the node's stall
/// over the same interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckSample {
    /// The rank's own waits for a CPU.
    pub wait: WaitSample,
    /// The node's `some` CPU stall (from `/proc/pressure/cpu`); `None` where this rank
    /// does not read it or it is not available.
    pub pressure: Option<WaitSample>,
    /// How busy the CPUs rank 0 asked this rank to read were (busy clock ticks over
    /// total ticks, [`cpu_busy`]): the cores the watch took ranks off; `None` where it
    /// reads none.
    pub busy: Option<WaitSample>,
    /// The first CPU (OS index) this rank is bound to, when it is bound to fewer than
    /// all of its machine's CPUs.
    pub cpu: Option<usize>,
}

/// A node whose cores the watch lowered: kept for the cool-down at least, and then
/// until the CPUs it took ranks off measure quiet ([`ContentionWatch::lift_caps`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cap {
    /// The node.
    pub node: String,
    /// Cores (ranks, for ranks of several cores) the planner may use there.
    pub usable: usize,
    /// Job time (seconds) the cap was set.
    pub since: f64,
    /// The node's cores the ranks that waited were on, left out of its offer (empty:
    /// only the count is lowered).
    #[serde(default)]
    pub cores: Vec<usize>,
    /// The CPUs (OS indexes) of those cores, read while the cap holds (empty: none
    /// known, the cool-down alone lifts the cap).
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// How busy `cpus` were in the current window (ticks).
    #[serde(default)]
    busy: WaitSample,
    /// How busy `cpus` were in the last window they were read, and the job time that
    /// window ended.
    #[serde(default)]
    last_busy: Option<(f64, f64)>,
}

impl Cap {
    /// A cap of `node` to `usable` set at `since`, leaving out `cores`, whose CPUs
    /// `cpus` are read until they are quiet.
    pub fn new(node: &str, usable: usize, since: f64, cores: Vec<usize>, cpus: Vec<usize>) -> Self {
        Self {
            node: node.to_owned(),
            usable,
            since,
            cores,
            cpus,
            busy: WaitSample::default(),
            last_busy: None,
        }
    }

    /// How busy its CPUs were in the last window they were read, as a share.
    pub fn last_busy(&self) -> Option<f64> {
        self.last_busy.map(|(share, _)| share)
    }

    /// Whether the cap may be lifted at `now`: its cool-down is over, and its CPUs
    /// measured under half the threshold in the last window they were read (the
    /// hysteresis band: a core is left above the threshold, taken again below half of
    /// it). A cap whose CPUs are not known, or were not read for a cool-down (no rank
    /// left on the node to read them), is lifted by the cool-down alone.
    fn may_lift(&self, now: f64, settings: &ContentionSettings) -> bool {
        let cooldown = settings.cooldown().as_secs_f64();
        if now - self.since < cooldown {
            return false;
        }
        match self.last_busy {
            Some((share, at)) if now - at < cooldown && !self.cpus.is_empty() => {
                share < settings.threshold / 2.0
            }
            _ => true,
        }
    }
}

/// What rank 0 decides at the end of a window.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Nothing to do (window not over, or no node contended).
    Quiet,
    /// Every node with ranks is contended: nothing moves.
    AllContended {
        /// Why, for the log.
        why: String,
    },
    /// A contended node, in report mode: recorded, nothing moves.
    Report {
        /// Why (`contention: n1's ranks waited …`).
        why: String,
    },
    /// A contended node whose ranks the nodes left cannot hold: nothing moves.
    NoRoom {
        /// Why.
        why: String,
    },
    /// Plan with the node's cores lowered ([`ContentionWatch::caps`]): the ranks that
    /// waited leave.
    Move {
        /// Why.
        why: String,
        /// The node.
        node: String,
        /// The ranks of the node that waited, ascending.
        ranks: Vec<usize>,
    },
}

/// One node's waits over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeWaits {
    /// The node.
    pub node: String,
    /// The job's ranks there.
    pub ranks: usize,
    /// Summed waits over summed wall time.
    pub share: f64,
    /// The node's CPU pressure (`some` stall over wall time, from its ranks that read
    /// it); `None` where none did.
    pub pressure: Option<f64>,
}

/// Rank 0's side of the watch: the waits of the current window, the lowered nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentionWatch {
    /// Per rank, the waits added up since the window started.
    pending: Vec<WaitSample>,
    /// Per rank, the node pressure it read since the window started (zero wall time
    /// where it read none).
    #[serde(default)]
    pressure: Vec<WaitSample>,
    /// Job time (seconds) the window started.
    window_start: f64,
    /// Nodes whose cores are lowered.
    caps: Vec<Cap>,
    /// The node of the last [`Verdict::NoRoom`], while it stays contended: said once.
    #[serde(default)]
    no_room: Option<String>,
    /// Per rank, the CPU it was bound to at the last check ([`CheckSample::cpu`]).
    #[serde(default)]
    cpus: Vec<Option<usize>>,
    /// The ranks asked to read capped nodes' CPUs at the last check, and the nodes
    /// each reads for ([`ContentionWatch::busy_readers`]).
    #[serde(default)]
    readers: Vec<(usize, Vec<String>)>,
    /// Whether every node of the job is one machine (logical nodes, emulated hosts):
    /// then ranks of different nodes bound to one CPU share it.
    #[serde(default)]
    one_machine: bool,
}

impl ContentionWatch {
    /// A watch whose first window starts at job time `now`.
    pub fn starting(now: f64) -> Self {
        Self {
            window_start: now,
            ..Self::default()
        }
    }

    /// The nodes whose cores are lowered now.
    pub fn caps(&self) -> &[Cap] {
        &self.caps
    }

    /// Adds every rank's sample (in rank order).
    pub fn add(&mut self, samples: &[WaitSample]) {
        if self.pending.len() != samples.len() {
            self.pending = vec![WaitSample::default(); samples.len()];
        }
        for (p, s) in self.pending.iter_mut().zip(samples) {
            p.wait_ns = p.wait_ns.saturating_add(s.wait_ns);
            p.wall_ns = p.wall_ns.saturating_add(s.wall_ns);
        }
    }

    /// Adds every rank's reading of its node's CPU pressure (in rank order; `None`
    /// where a rank read none).
    pub fn add_pressure(&mut self, samples: &[Option<WaitSample>]) {
        if self.pressure.len() != samples.len() {
            self.pressure = vec![WaitSample::default(); samples.len()];
        }
        for (p, s) in self.pressure.iter_mut().zip(samples) {
            if let Some(s) = s {
                p.wait_ns = p.wait_ns.saturating_add(s.wait_ns);
                p.wall_ns = p.wall_ns.saturating_add(s.wall_ns);
            }
        }
    }

    /// Adds every rank's [`CheckSample`] (in rank order): its waits, its node's CPU
    /// pressure, the CPU it is bound to, and how busy the CPUs it read for the caps
    /// were (to the caps of the nodes it read for, [`ContentionWatch::busy_readers`]).
    pub fn add_checks(&mut self, samples: &[CheckSample]) {
        self.add(&samples.iter().map(|s| s.wait).collect::<Vec<_>>());
        self.add_pressure(&samples.iter().map(|s| s.pressure).collect::<Vec<_>>());
        self.cpus = samples.iter().map(|s| s.cpu).collect();
        for (rank, nodes) in &self.readers {
            let Some(busy) = samples.get(*rank).and_then(|s| s.busy) else {
                continue;
            };
            for cap in self.caps.iter_mut().filter(|c| nodes.contains(&c.node)) {
                cap.busy = cap.busy.plus(&busy);
            }
        }
    }

    /// Says whether every node of the job is one machine (logical nodes, emulated
    /// hosts): ranks of different nodes bound to one CPU then share it.
    pub fn set_one_machine(&mut self, one_machine: bool) {
        self.one_machine = one_machine;
    }

    /// The ranks bound to a CPU that another rank of the job is bound to on the same
    /// machine (`rank_nodes` names each rank's node): they wait for one another.
    fn sharing_a_cpu(&self, rank_nodes: &[&str]) -> Vec<bool> {
        let same_machine = |a: usize, b: usize| self.one_machine || rank_nodes[a] == rank_nodes[b];
        (0..rank_nodes.len())
            .map(|r| {
                let Some(cpu) = self.cpu_of(r) else {
                    return false;
                };
                (0..rank_nodes.len())
                    .any(|o| o != r && self.cpu_of(o) == Some(cpu) && same_machine(r, o))
            })
            .collect()
    }

    /// The CPU rank `rank` was bound to at the last check, if it was.
    pub fn cpu_of(&self, rank: usize) -> Option<usize> {
        self.cpus.get(rank).copied().flatten()
    }

    /// Adds `cap`, replacing a cap of the same node.
    pub fn set_cap(&mut self, cap: Cap) {
        self.caps.retain(|c| c.node != cap.node);
        self.caps.push(cap);
    }

    /// Which rank reads which CPUs at the next checks, for the caps whose CPUs are
    /// known: the lowest rank on the capped node (`rank_nodes` names each rank's node),
    /// or rank 0 for every cap when the nodes are all one machine (`one_machine`:
    /// logical nodes, emulated hosts). A cap whose node has no rank left is not read
    /// (the cool-down alone lifts it). Kept, to credit the next samples to the caps.
    pub fn busy_readers(
        &mut self,
        rank_nodes: &[&str],
        one_machine: bool,
    ) -> Vec<(usize, Vec<usize>)> {
        let mut readers: Vec<(usize, Vec<String>, Vec<usize>)> = Vec::new();
        for cap in self.caps.iter().filter(|c| !c.cpus.is_empty()) {
            let reader = match one_machine {
                true => Some(0),
                false => rank_nodes.iter().position(|n| *n == cap.node),
            };
            let Some(reader) = reader else { continue };
            let i = match readers.iter().position(|r| r.0 == reader) {
                Some(i) => i,
                None => {
                    readers.push((reader, Vec::new(), Vec::new()));
                    readers.len() - 1
                }
            };
            let entry = &mut readers[i];
            entry.1.push(cap.node.clone());
            for &cpu in &cap.cpus {
                if !entry.2.contains(&cpu) {
                    entry.2.push(cpu);
                }
            }
        }
        self.readers = readers.iter().map(|r| (r.0, r.1.clone())).collect();
        readers.into_iter().map(|r| (r.0, r.2)).collect()
    }

    /// Ends the caps that may be lifted at `now` (their cool-down over, their CPUs
    /// quiet: [`Cap`]); returns their nodes.
    pub fn lift_caps(&mut self, now: f64, settings: &ContentionSettings) -> Vec<String> {
        let (over, kept): (Vec<Cap>, Vec<Cap>) = std::mem::take(&mut self.caps)
            .into_iter()
            .partition(|c| c.may_lift(now, settings));
        self.caps = kept;
        over.into_iter().map(|c| c.node).collect()
    }

    /// `offers` (node, cores) with the caps applied.
    pub fn capped(&self, offers: &[(String, usize)]) -> Vec<(String, usize)> {
        offers
            .iter()
            .map(|(node, cores)| {
                let cap = self.caps.iter().find(|c| &c.node == node);
                (node.clone(), cap.map_or(*cores, |c| c.usable.min(*cores)))
            })
            .collect()
    }

    /// At the end of a window at `now`: each cap's CPUs' busy share of the window,
    /// where they were read.
    fn close_busy_window(&mut self, now: f64) {
        for cap in &mut self.caps {
            let busy = std::mem::take(&mut cap.busy);
            if busy.wall_ns > 0 {
                cap.last_busy = Some((busy.share(), now));
            }
        }
    }

    /// At job time `now`: the decision of the window, if it is over (then a new one
    /// starts). `rank_nodes` names each rank's node; `offers` are the nodes and the
    /// ranks their cores hold the job follows (the availability, caps not applied).
    ///
    /// Each rank is judged on its own waits against the job's least-waiting rank: a
    /// node is contended when one of its ranks waited beyond the threshold while the
    /// least-waiting rank did not, and its ranks fit its cores. A rank bound to the
    /// same CPU as another rank of the job waits for the job itself and is not judged.
    /// The ranks of the most contended node that waited so are the ones to move.
    pub fn decide(
        &mut self,
        now: f64,
        settings: &ContentionSettings,
        rank_nodes: &[&str],
        offers: &[(String, usize)],
    ) -> Verdict {
        let length = now - self.window_start;
        if length < settings.window().as_secs_f64() || self.pending.is_empty() {
            return Verdict::Quiet;
        }
        self.close_busy_window(now);
        let pending = std::mem::take(&mut self.pending);
        let pressure = std::mem::take(&mut self.pressure);
        let waits = node_waits(&pending, &pressure, rank_nodes);
        self.window_start = now;
        let shares: Vec<(usize, f64)> = (pending.iter().enumerate())
            .filter(|(r, s)| s.wall_ns > 0 && *r < rank_nodes.len())
            .map(|(r, s)| (r, s.share()))
            .collect();
        if shares.is_empty() {
            // No rank could measure its waits.
            return Verdict::Quiet;
        }
        let cores = |node: &str| offers.iter().find(|o| o.0 == node).map_or(0, |o| o.1);
        let on = |node: &str| rank_nodes.iter().filter(|n| **n == node).count();
        let least = shares.iter().map(|s| s.1).fold(1.0f64, f64::min);
        let excess = |share: f64| (share - least) / (1.0 - least).max(1e-6);
        let sharing = self.sharing_a_cpu(rank_nodes);
        let waited: Vec<(usize, f64)> = (shares.iter().copied())
            .filter(|&(r, _)| !sharing[r])
            .filter(|&(_, share)| share > settings.threshold && excess(share) > settings.threshold)
            .filter(|&(r, _)| on(rank_nodes[r]) <= cores(rank_nodes[r]))
            .collect();
        let Some(&(worst, worst_share)) = waited.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
            self.no_room = None;
            if least > settings.threshold {
                return Verdict::AllContended {
                    why: format!(
                        "contention: every rank waited at least {:.0}% of {length:.0} s for a CPU, alike{}: nothing moves",
                        (least * 100.0).round(),
                        pressures(&waits)
                    ),
                };
            }
            return Verdict::Quiet;
        };
        let node = rank_nodes[worst].to_owned();
        let ranks: Vec<usize> = (waited.iter())
            .filter(|(r, _)| rank_nodes[*r] == node)
            .map(|(r, _)| *r)
            .collect();
        let node_cores = cores(&node);
        let usable = node_cores.saturating_sub(ranks.len());
        let pressure = (waits.iter().find(|w| w.node == node)).and_then(|w| w.pressure);
        let why = move_reason(
            &node,
            &ranks,
            (worst_share, least, pressure),
            length,
            (usable, node_cores),
        );
        if settings.mode == ContentionMode::Report {
            return Verdict::Report { why };
        }
        let mut after = self.clone();
        after.set_cap(Cap::new(&node, usable, now, Vec::new(), Vec::new()));
        let room: usize = after.capped(offers).iter().map(|o| o.1).sum();
        if room < rank_nodes.len() {
            if self.no_room.as_deref() == Some(node.as_str()) {
                // Said at the window it began; said again once it ended.
                return Verdict::Quiet;
            }
            self.no_room = Some(node.clone());
            return Verdict::NoRoom {
                why: format!(
                    "{why}; no move: the other nodes have no room ({room} usable cores for {} ranks)",
                    rank_nodes.len()
                ),
            };
        }
        self.caps = after.caps;
        self.no_room = None;
        Verdict::Move { why, node, ranks }
    }
}

/// The reason of a move off `node` of its `ranks` that waited: (the worst rank's wait
/// share, the least-waiting rank's, the node's CPU pressure) over a window of `length`
/// seconds, `usable` of the node's `cores` left.
fn move_reason(
    node: &str,
    ranks: &[usize],
    (worst, least, pressure): (f64, f64, Option<f64>),
    length: f64,
    (usable, cores): (usize, usize),
) -> String {
    let mut notes = Vec::new();
    if least > 0.05 {
        notes.push(format!(
            "the least-waiting rank's {:.0}%",
            (least * 100.0).round()
        ));
    }
    if let Some(p) = pressure {
        notes.push(format!("{node}'s CPU pressure {:.0}%", (p * 100.0).round()));
    }
    let extra = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let list: Vec<String> = ranks.iter().map(usize::to_string).collect();
    let who = match list.len() {
        1 => format!("rank {}", list.join("")),
        _ => format!("ranks {}", list.join(", ")),
    };
    format!(
        "contention: {node}'s {who} waited {:.0}% of {length:.0} s for a CPU{extra}; {usable} of {cores} core{} usable",
        (worst * 100.0).round(),
        if cores == 1 { "" } else { "s" }
    )
}

/// Each node's waits (nodes in the order of their first rank), and the CPU pressure
/// its ranks read (`pressure` per rank, zero wall time where a rank read none; may be
/// empty). A node none of whose ranks measured its waits (zero wall time: a kernel
/// without `schedstat`, [`WaitReader`]) is left out: neither the least-waiting node
/// nor a contended one.
pub fn node_waits(
    samples: &[WaitSample],
    pressure: &[WaitSample],
    rank_nodes: &[&str],
) -> Vec<NodeWaits> {
    let none = WaitSample::default();
    let mut sums: Vec<(String, usize, WaitSample, WaitSample)> = Vec::new();
    for (rank, (s, node)) in samples.iter().zip(rank_nodes).enumerate() {
        let p = pressure.get(rank).unwrap_or(&none);
        match sums.iter_mut().find(|e| e.0 == *node) {
            Some(e) => {
                e.1 += 1;
                e.2 = e.2.plus(s);
                e.3 = e.3.plus(p);
            }
            None => sums.push(((*node).to_owned(), 1, *s, *p)),
        }
    }
    sums.into_iter()
        .filter(|(_, _, s, _)| s.wall_ns > 0)
        .map(|(node, ranks, s, p)| NodeWaits {
            node,
            ranks,
            share: s.share(),
            pressure: (p.wall_ns > 0).then(|| p.share()),
        })
        .collect()
}

/// `", CPU pressure n1 80%, n2 82%"` for the nodes whose pressure was read; empty
/// where none was.
fn pressures(waits: &[NodeWaits]) -> String {
    let read: Vec<String> = waits
        .iter()
        .filter_map(|w| {
            w.pressure
                .map(|p| format!("{} {:.0}%", w.node, (p * 100.0).round()))
        })
        .collect();
    if read.is_empty() {
        String::new()
    } else {
        format!(" (CPU pressure {})", read.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act() -> ContentionSettings {
        ContentionSettings {
            mode: ContentionMode::Act,
            ..ContentionSettings::default()
        }
    }

    fn sample(share: f64) -> WaitSample {
        WaitSample {
            wait_ns: (share * 1e9) as u64,
            wall_ns: 1_000_000_000,
        }
    }

    fn offers() -> Vec<(String, usize)> {
        ["n1", "n2", "n3"].map(|n| (n.to_owned(), 1)).to_vec()
    }

    /// Ten one-second samples of `shares` (one per rank), then the decision at 10 s.
    fn window(watch: &mut ContentionWatch, start: f64, shares: &[f64]) -> Verdict {
        for _ in 0..10 {
            watch.add(&shares.iter().map(|&s| sample(s)).collect::<Vec<_>>());
        }
        watch.decide(start + 10.0, &act(), &["n1", "n2"], &offers())
    }

    #[test]
    fn schedstat_second_field_is_the_wait() {
        assert_eq!(parse_schedstat("123 456 7\n"), Some(456));
        assert_eq!(parse_schedstat("123"), None);
        assert!(run_queue_wait_ns().is_some(), "this kernel gives schedstat");
    }

    #[test]
    fn a_reader_of_the_open_files_sees_time_pass() {
        let mut reader = WaitReader::start();
        assert!(reader.reads(), "this kernel gives schedstat");
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(20) {
            std::hint::black_box(0u64);
        }
        let s = reader.sample();
        assert!(s.wall_ns >= 20_000_000, "{s:?}");
        assert!(s.wait_ns <= s.wall_ns, "{s:?}");
        // This thread's file stays open, read again from its start at every sample.
        let me = this_tid();
        let before = reader.tasks.get(&me).map(|t| t.wait_ns);
        assert!(before.is_some(), "task {me} is read");
        reader.sample();
        assert!(reader.tasks.get(&me).map(|t| t.wait_ns) >= before);
    }

    /// This thread's id (the last part of `/proc/thread-self`, `PID/task/TID`).
    fn this_tid() -> u32 {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        link.file_name().unwrap().to_str().unwrap().parse().unwrap()
    }

    /// Writes task `tid`'s `schedstat` in the task directory `dir`.
    fn task(dir: &std::path::Path, tid: u32, text: &str) {
        let task = dir.join(tid.to_string());
        std::fs::create_dir_all(&task).unwrap();
        std::fs::write(task.join("schedstat"), text).unwrap();
    }

    #[test]
    fn tasks_that_start_or_end_between_readings_make_no_negative_or_absurd_wait() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("task");
        task(&dir, 1, "1000 100 1\n");
        task(&dir, 2, "1000 5000000 1\n");
        let mut r = WaitReader::open(&dir);
        assert!(r.reads());
        let t0 = r.last_time;
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        // Task 1 waited 300 ns more; task 2 ended (its 5 ms are not taken off the sum);
        // task 3 started since: its whole 300 ns count.
        task(&dir, 1, "2000 400 2\n");
        std::fs::remove_dir_all(dir.join("2")).unwrap();
        task(&dir, 3, "700 300 1\n");
        assert_eq!(
            r.sample_at(s(1)),
            WaitSample {
                wait_ns: 600,
                wall_ns: 1_000_000_000
            }
        );
        // A task listed but unreadable (ending) keeps its counters: it is not taken for
        // a new task, with its whole wait, at the next reading.
        task(&dir, 3, "garbled\n");
        assert_eq!(r.sample_at(s(2)).wait_ns, 0);
        task(&dir, 3, "800 350 2\n");
        assert_eq!(r.sample_at(s(3)).wait_ns, 50);
        // TID 1 reused by a thread with lower counters: 0, not a wrap-around. A task
        // claiming more wait than the interval counts the interval.
        task(&dir, 1, "10 20 1\n");
        task(&dir, 4, "0 5000000000 1\n");
        let v = r.sample_at(s(4));
        assert_eq!(v.wait_ns, 1_000_000_000, "{v:?}");
        assert_eq!(v.share(), 1.0);
        // The listing unreadable: no value, and the next reading covers both intervals.
        let away = tmp.path().join("away");
        std::fs::rename(&dir, &away).unwrap();
        assert_eq!(r.sample_at(s(5)), WaitSample::default());
        std::fs::rename(&away, &dir).unwrap();
        task(&dir, 1, "10 1020 1\n");
        assert_eq!(
            r.sample_at(s(6)),
            WaitSample {
                wait_ns: 1000,
                wall_ns: 2_000_000_000
            }
        );
    }

    #[test]
    fn threads_that_wanted_several_cpus_wait_a_share_of_the_cpu_time_they_wanted() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        // The main thread and one helper that sleeps; then two busy workers.
        task(&dir, 10, "0 0 0\n");
        task(&dir, 11, "0 0 0\n");
        let mut r = WaitReader::open(&dir);
        let t0 = r.last_time;
        // One second: the main thread ran 0.5 s and waited 0.25 s; the helper slept.
        task(&dir, 10, "500000000 250000000 9\n");
        let single = r.sample_at(t0 + Duration::from_secs(1));
        assert_eq!(single.wall_ns, 1_000_000_000, "the wall time, as before");
        assert_eq!(single.share(), 0.25);
        // Next second: the main thread and two workers each ran 0.75 s and waited
        // 0.25 s: three CPUs wanted, a quarter of that time waited (not 75% of the wall).
        task(&dir, 10, "1250000000 500000000 19\n");
        task(&dir, 12, "750000000 250000000 9\n");
        task(&dir, 13, "750000000 250000000 9\n");
        let hybrid = r.sample_at(t0 + Duration::from_secs(2));
        assert_eq!(
            hybrid,
            WaitSample {
                wait_ns: 750_000_000,
                wall_ns: 3_000_000_000
            }
        );
        assert_eq!(hybrid.share(), 0.25);
    }

    /// The first CPU this thread may run on.
    fn first_allowed_cpu() -> usize {
        // SAFETY: a zeroed cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid 0 = this thread; the set is valid for its size.
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        (0..8 * std::mem::size_of_val(&set))
            // SAFETY: cpu < the set's size.
            .find(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .unwrap()
    }

    /// Pins this thread to `cpu`.
    fn pin_to(cpu: usize) {
        // SAFETY: a zeroed cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: cpu < the set's size (it came from one).
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: pid 0 = this thread; the set is valid for its size.
        let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    }

    /// This thread's `(run_ns, wait_ns)`.
    fn own_counters() -> (u64, u64) {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        parse_run_and_wait(&text).unwrap()
    }

    #[test]
    fn the_waits_of_worker_threads_are_counted_not_only_the_main_threads() {
        use std::sync::{Arc, Barrier, mpsc};
        const RUN_NS: u64 = 200_000_000;
        let cpu = first_allowed_cpu();
        let mut reader = WaitReader::start();
        assert!(reader.reads(), "this kernel gives schedstat");
        let started = std::time::Instant::now();
        let main_before = run_queue_wait_ns().unwrap();
        // Two workers pinned to one CPU spin together until each ran 200 ms: while one
        // runs the other waits, so between them they wait about 200 ms (more on a busy
        // machine, whose other tasks share that CPU too). They report their own waits,
        // then stay alive (blocked) until the reader has sampled.
        let start = Arc::new(Barrier::new(2));
        let done = Arc::new(Barrier::new(3));
        let (tx, rx) = mpsc::channel();
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (start, done, tx) = (start.clone(), done.clone(), tx.clone());
                std::thread::spawn(move || {
                    pin_to(cpu);
                    let (run0, wait0) = own_counters();
                    start.wait();
                    let (_, wait) = loop {
                        let (run, wait) = own_counters();
                        if run - run0 >= RUN_NS {
                            break (run, wait);
                        }
                    };
                    tx.send(wait - wait0).unwrap();
                    done.wait();
                })
            })
            .collect();
        // The main thread sleeps meanwhile.
        let worker_waits: u64 = rx.iter().take(2).sum();
        let main_waited = run_queue_wait_ns().unwrap() - main_before;
        let s = reader.sample();
        done.wait();
        for w in workers {
            w.join().unwrap();
        }
        assert!(
            worker_waits >= RUN_NS / 4,
            "two workers on one CPU waited {worker_waits} ns"
        );
        assert!(
            main_waited < worker_waits,
            "the main thread waited {main_waited} ns, the workers {worker_waits} ns"
        );
        assert!(
            s.wait_ns >= main_waited + worker_waits,
            "{s:?}: the workers' {worker_waits} ns and the main thread's {main_waited} ns"
        );
        // They wanted more than the wall time's one CPU: the share stays a share.
        assert!(
            s.wall_ns as u128 >= started.elapsed().as_nanos() / 2,
            "{s:?}"
        );
        assert!(s.share() <= 1.0 && s.share() > 0.0, "{s:?}");
    }

    #[test]
    fn a_rank_that_cannot_read_its_waits_hands_over_no_value_and_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut missing = WaitReader::open(&dir.path().join("task"));
        assert!(!missing.reads());
        assert_eq!(missing.sample(), WaitSample::default());
        assert!(why_tasks_unreadable(&dir.path().join("task")).contains("No such file"));
        let garbled = dir.path().join("garbled");
        task(&garbled, 7, "not a schedstat line\n");
        assert!(!WaitReader::open(&garbled).reads());
        let why = why_tasks_unreadable(&garbled);
        assert!(
            why.contains("7/schedstat: \"not a schedstat line\""),
            "{why}"
        );
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(!WaitReader::open(&empty).reads());
        assert!(why_tasks_unreadable(&empty).ends_with("no task listed"));
        // Ranks 0 and 1 wait alike; rank 2's kernel gives no schedstat. Taken for an
        // idle node, n3 would make n2 look contended (excess 0.55) and move rank 1.
        let four_nodes =
            [("n1", 1), ("n2", 1), ("n3", 1), ("n4", 1)].map(|(n, c)| (n.to_owned(), c));
        let mut w = ContentionWatch::starting(0.0);
        for _ in 0..10 {
            w.add_checks(
                &[sample(0.5), sample(0.55), WaitSample::default()].map(|wait| CheckSample {
                    wait,
                    ..CheckSample::default()
                }),
            );
        }
        let nodes = ["n1", "n2", "n3"];
        let waits = node_waits(&w.pending, &[], &nodes);
        assert_eq!(
            waits.iter().map(|n| n.node.as_str()).collect::<Vec<_>>(),
            ["n1", "n2"]
        );
        let v = w.decide(10.0, &act(), &nodes, &four_nodes);
        assert!(matches!(v, Verdict::AllContended { .. }), "{v:?}");
        // Nobody measured: nothing to say.
        for _ in 0..10 {
            w.add(&[WaitSample::default(); 3]);
        }
        assert_eq!(w.decide(20.0, &act(), &nodes, &four_nodes), Verdict::Quiet);
    }

    #[test]
    fn a_hogged_node_is_left_and_keeps_its_cap_for_the_cooldown() {
        let mut w = ContentionWatch::starting(0.0);
        let Verdict::Move { why, node, ranks } = window(&mut w, 0.0, &[0.02, 0.67]) else {
            panic!("a move");
        };
        assert_eq!((node.as_str(), ranks), ("n2", vec![1]));
        assert_eq!(
            why,
            "contention: n2's rank 1 waited 67% of 10 s for a CPU; 0 of 1 core usable"
        );
        assert_eq!(w.capped(&offers())[1], ("n2".to_owned(), 0));
        // Set at 10 s, the end of the window: kept until 70 s.
        assert!(w.lift_caps(69.0, &act()).is_empty());
        assert_eq!(w.lift_caps(70.0, &act()), vec!["n2".to_owned()]);
    }

    #[test]
    fn an_idle_or_evenly_loaded_job_moves_nothing() {
        let mut w = ContentionWatch::starting(0.0);
        assert_eq!(window(&mut w, 0.0, &[0.01, 0.05]), Verdict::Quiet);
        // The whole machine loaded: both nodes wait alike.
        assert!(matches!(
            window(&mut w, 10.0, &[0.83, 0.85]),
            Verdict::AllContended { .. }
        ));
        assert!(w.caps().is_empty());
    }

    #[test]
    fn a_node_the_job_oversubscribes_is_not_contended() {
        let mut w = ContentionWatch::starting(0.0);
        for _ in 0..10 {
            w.add(&[sample(0.0), sample(0.5), sample(0.5)]);
        }
        let v = w.decide(10.0, &act(), &["n1", "n2", "n2"], &offers());
        assert_eq!(v, Verdict::Quiet);
    }

    #[test]
    fn no_room_moves_nothing_and_says_so() {
        let mut w = ContentionWatch::starting(0.0);
        for _ in 0..10 {
            w.add(&[sample(0.0), sample(0.7)]);
        }
        let two = vec![("n1".to_owned(), 1), ("n2".to_owned(), 1)];
        let v = w.decide(10.0, &act(), &["n1", "n2"], &two);
        let Verdict::NoRoom { why } = v else {
            panic!("no room: {v:?}")
        };
        assert!(
            why.ends_with("no room (1 usable cores for 2 ranks)"),
            "{why}"
        );
        assert!(w.caps().is_empty());
    }

    #[test]
    fn one_decision_per_window_and_report_mode_moves_nothing() {
        let mut w = ContentionWatch::starting(0.0);
        w.add(&[sample(0.0), sample(0.9)]);
        assert_eq!(
            w.decide(5.0, &act(), &["n1", "n2"], &offers()),
            Verdict::Quiet
        );
        let report = ContentionSettings {
            mode: ContentionMode::Report,
            ..act()
        };
        let v = w.decide(10.0, &report, &["n1", "n2"], &offers());
        assert!(matches!(v, Verdict::Report { .. }), "{v:?}");
        assert!(w.caps().is_empty());
    }

    #[test]
    fn the_node_pressure_is_reported_beside_the_waits_and_decides_nothing() {
        let mut w = ContentionWatch::starting(0.0);
        for _ in 0..10 {
            w.add(&[sample(0.02), sample(0.67)]);
            w.add_pressure(&[None, Some(sample(0.70))]);
        }
        let Verdict::Move { why, .. } = w.decide(10.0, &act(), &["n1", "n2"], &offers()) else {
            panic!("a move");
        };
        assert_eq!(
            why,
            "contention: n2's rank 1 waited 67% of 10 s for a CPU (n2's CPU pressure 70%); 0 of 1 core usable"
        );
        // One kernel under logical nodes: the same high pressure everywhere, and ranks
        // that hardly wait. The pressure alone moves nothing.
        let mut w = ContentionWatch::starting(0.0);
        for _ in 0..10 {
            w.add_checks(&[0.01, 0.02].map(|s| CheckSample {
                wait: sample(s),
                pressure: Some(sample(0.9)),
                ..CheckSample::default()
            }));
        }
        assert_eq!(
            w.decide(10.0, &act(), &["n1", "n2"], &offers()),
            Verdict::Quiet
        );
        let busy = window(&mut w, 10.0, &[0.83, 0.85]);
        assert!(
            matches!(&busy, Verdict::AllContended { why } if why.contains("alike: nothing")),
            "{busy:?}"
        );
        for _ in 0..10 {
            w.add(&[sample(0.83), sample(0.85)]);
            w.add_pressure(&[Some(sample(0.9)), Some(sample(0.92))]);
        }
        let Verdict::AllContended { why } = w.decide(30.0, &act(), &["n1", "n2"], &offers()) else {
            panic!("every node alike");
        };
        assert!(
            why.ends_with("alike (CPU pressure n1 90%, n2 92%): nothing moves")
                && why.starts_with("contention: every rank waited at least 83%"),
            "{why}"
        );
    }

    /// Ranks of 32-core nodes: `hogged` waits `share`, the others 2%, for one window.
    fn big_nodes_window(w: &mut ContentionWatch, start: f64, hogged: usize, share: f64) -> Verdict {
        let nodes: Vec<&str> = (0..64).map(|r| if r < 32 { "n1" } else { "n2" }).collect();
        let big = [
            ("n1".to_owned(), 32),
            ("n2".to_owned(), 32),
            ("n3".to_owned(), 32),
        ];
        for _ in 0..10 {
            let checks: Vec<CheckSample> = (0..64)
                .map(|r| CheckSample {
                    wait: sample(if r == hogged { share } else { 0.02 }),
                    cpu: Some(r % 32),
                    ..CheckSample::default()
                })
                .collect();
            w.add_checks(&checks);
        }
        w.decide(start + 10.0, &act(), &nodes, &big)
    }

    #[test]
    fn one_hogged_rank_of_a_big_node_is_seen_and_is_the_one_to_move() {
        // One rank of 32 waiting 67%: n1's average is 4%, which the node-wide rule
        // took for quiet.
        let mut w = ContentionWatch::starting(0.0);
        let Verdict::Move { why, node, ranks } = big_nodes_window(&mut w, 0.0, 5, 0.67) else {
            panic!("a move");
        };
        assert_eq!((node.as_str(), ranks), ("n1", vec![5]));
        assert_eq!(
            why,
            "contention: n1's rank 5 waited 67% of 10 s for a CPU; 31 of 32 cores usable"
        );
        assert_eq!(w.cpu_of(5), Some(5));
        // Below the threshold: nothing.
        let mut w = ContentionWatch::starting(0.0);
        assert_eq!(big_nodes_window(&mut w, 0.0, 5, 0.25), Verdict::Quiet);
    }

    #[test]
    fn a_cap_stays_while_the_cores_it_left_are_busy_and_goes_once_they_are_quiet() {
        let mut w = ContentionWatch::starting(0.0);
        assert!(matches!(
            window(&mut w, 0.0, &[0.02, 0.67]),
            Verdict::Move { .. }
        ));
        // The job side names the core left and its CPU.
        w.set_cap(Cap::new("n2", 0, 10.0, vec![0], vec![1]));
        let readers = w.busy_readers(&["n1", "n1"], true);
        assert_eq!(readers, [(0, vec![1])], "rank 0 reads CPU 1 on one machine");
        assert_eq!(
            w.busy_readers(&["n1", "n1"], false),
            [],
            "no rank left on n2"
        );
        let readers = w.busy_readers(&["n1", "n2"], false);
        assert_eq!(readers, [(1, vec![1])], "n2's lowest rank reads it");
        // The hog stays: its CPU busy 100% while no rank of the job is on it. Past the
        // cool-down (60 s after 10 s) the cap holds.
        let busy = |share: f64, reader: usize| -> Vec<CheckSample> {
            (0..2)
                .map(|r| CheckSample {
                    wait: sample(0.02),
                    busy: (r == reader).then_some(WaitSample {
                        wait_ns: (share * 100.0) as u64,
                        wall_ns: 100,
                    }),
                    ..CheckSample::default()
                })
                .collect()
        };
        let mut now = 10.0;
        for share in [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0] {
            for _ in 0..10 {
                w.add_checks(&busy(share, 1));
            }
            now += 10.0;
            assert!(w.lift_caps(now, &act()).is_empty(), "busy at {now} s");
            assert_eq!(
                w.decide(now, &act(), &["n1", "n1"], &offers()),
                Verdict::Quiet
            );
        }
        assert_eq!(w.caps()[0].last_busy(), Some(1.0));
        // In the band (under the threshold, over half of it): still held.
        for _ in 0..10 {
            w.add_checks(&busy(0.2, 1));
        }
        now += 10.0;
        assert_eq!(
            w.decide(now, &act(), &["n1", "n1"], &offers()),
            Verdict::Quiet
        );
        assert!(w.lift_caps(now, &act()).is_empty(), "0.2 is in the band");
        // Quiet: lifted at the next check.
        for _ in 0..10 {
            w.add_checks(&busy(0.05, 1));
        }
        now += 10.0;
        assert_eq!(
            w.decide(now, &act(), &["n1", "n1"], &offers()),
            Verdict::Quiet
        );
        assert_eq!(w.lift_caps(now, &act()), vec!["n2".to_owned()]);
    }

    #[test]
    fn ranks_bound_to_one_cpu_wait_for_each_other_and_are_not_judged() {
        let window = |w: &mut ContentionWatch, cpus: [usize; 3]| {
            for _ in 0..10 {
                let checks: Vec<CheckSample> = [0.02, 0.6, 0.6]
                    .iter()
                    .zip(cpus)
                    .map(|(&s, cpu)| CheckSample {
                        wait: sample(s),
                        cpu: Some(cpu),
                        ..CheckSample::default()
                    })
                    .collect();
                w.add_checks(&checks);
            }
            let three = [("n1", 4), ("n2", 2)].map(|(n, c)| (n.to_owned(), c));
            w.decide(10.0, &act(), &["n1", "n2", "n2"], &three)
        };
        // Ranks 1 and 2 on CPU 1 of n2: they share it.
        let mut w = ContentionWatch::starting(0.0);
        assert_eq!(window(&mut w, [0, 1, 1]), Verdict::Quiet);
        // Rank 0 on n1's CPU 1 and rank 1 on n2's CPU 1, two machines: rank 1 and rank
        // 2 wait, on CPUs of their own.
        let mut w = ContentionWatch::starting(0.0);
        assert!(matches!(window(&mut w, [1, 1, 0]), Verdict::Move { .. }));
        // The same on one machine: rank 0 and rank 1 share CPU 1; rank 2 alone waits.
        let mut w = ContentionWatch::starting(0.0);
        w.set_one_machine(true);
        let Verdict::Move { ranks, .. } = window(&mut w, [1, 1, 0]) else {
            panic!("rank 2 moves");
        };
        assert_eq!(ranks, [2]);
    }

    #[test]
    fn a_cap_whose_cores_nobody_reads_is_lifted_by_the_cooldown() {
        let mut w = ContentionWatch::starting(0.0);
        w.set_cap(Cap::new("n2", 0, 10.0, vec![0], vec![1]));
        assert!(w.lift_caps(69.0, &act()).is_empty());
        assert_eq!(w.lift_caps(70.0, &act()), vec!["n2".to_owned()]);
    }

    #[test]
    fn thresholds_parse_as_shares_or_percentages() {
        assert_eq!(parse_threshold("0.3"), Ok(0.3));
        assert_eq!(parse_threshold("25%"), Ok(0.25));
        assert!(parse_threshold("1.5").is_err());
        assert!(parse_threshold("ten").is_err());
    }
}
