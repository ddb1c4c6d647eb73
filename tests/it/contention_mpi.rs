//! The contention watch (`rankmig run --contention-watch`) on logical nodes of this
//! host, with a C program written apart from rankmig's examples (`tests/c/allreduce.c`:
//! 2 ranks, one `MPI_Allreduce` per iteration): nothing moves while the job runs alone,
//! CPU hogs pinned to one rank's CPU move that rank off its node live with a record
//! that says why, hogs that stop then bring no rank back before the cool-down, and the
//! result is a plain run's; hogs on every CPU move nothing. The same move on the
//! emulated cluster (here, not in `cluster_mpi`, so that only the Open MPI 4.1.8 step of
//! `scripts/test.sh` runs it).
#![cfg(feature = "mpi")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::support;
use crate::support::boost::{boost, boosted};
use crate::support::job::{Job, set_availability};
use crate::support::{mpi_lock, rankmig, wait_until};

/// How long a step of a job (its start, a move) may take: a backstop.
const JOB_WAIT: Duration = Duration::from_secs(90);

/// `tests/c/allreduce.c`, built once with the MPI compiler wrapper.
fn program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        support::build_c_program("tests/c/allreduce.c", "allreduce-c", &["-lxxhash"])
    })
}

/// The program's arguments besides `--iters` (about 50 µs of computing per iteration).
const ARGS: [&str; 2] = ["--size", "20000"];

/// The watch's window in the hog test (`--contention-window`), seconds: half the
/// default, so that 12 s alone make two decisions and the move comes sooner.
const WINDOW: f64 = 5.0;
/// The cool-down in the hog test (`--contention-cooldown`), seconds: two windows end
/// within it (the third, the first at which the node left may be used again, ends after
/// it), so the test sees two decisions after the hogs stop.
const COOLDOWN: f64 = 14.0;

/// CPU hogs pinned with `taskset`; killed when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    /// `count` busy loops pinned to each CPU of `cpus`, in a session of their own (as
    /// another user's job: with the kernel's autogroups, tasks of one session share
    /// one scheduling entity).
    fn pinned(cpus: &[&str], count: usize) -> Self {
        let hogs = cpus
            .iter()
            .flat_map(|cpu| std::iter::repeat_n(*cpu, count))
            .map(|cpu| {
                boosted()
                    .args(["taskset", "-c", cpu, "sh", "-c", "while :; do :; done"])
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("taskset runs")
            })
            .collect();
        Self(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for hog in &mut self.0 {
            let _ = hog.kill();
            let _ = hog.wait();
        }
    }
}

/// The job's time so far as rank 0's iteration records add it up (compute, scheduling
/// and migration of every iteration), read incrementally.
struct JobClock {
    file: PathBuf,
    read: usize,
    nanos: u128,
    /// Rows with a wait share (made at an availability check).
    checks: usize,
    /// The sum of those shares.
    shares: f64,
    /// Rows with n1's CPU pressure (rank 0 is n1's lowest rank), and their sum.
    pressures: (usize, f64),
}

impl JobClock {
    fn new(run: &Path) -> Self {
        Self {
            file: run.join("iterations/rank-0.csv"),
            read: 0,
            nanos: 0,
            checks: 0,
            shares: 0.0,
            pressures: (0, 0.0),
        }
    }

    /// Seconds recorded so far (whole lines only).
    fn seconds(&mut self) -> f64 {
        let text = fs::read(&self.file).unwrap_or_default();
        let new = text.get(self.read..).unwrap_or_default();
        let whole = new.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        for line in String::from_utf8_lossy(&new[..whole]).lines() {
            let fields: Vec<&str> = line.split(',').collect();
            let ns: u128 = (fields.iter().skip(1).take(3))
                .filter_map(|f| f.parse::<u128>().ok())
                .sum();
            self.nanos += ns;
            if let Some(share) = fields.get(4).and_then(|f| f.parse::<f64>().ok()) {
                self.checks += 1;
                self.shares += share;
            }
            if let Some(p) = fields.get(5).and_then(|f| f.parse::<f64>().ok()) {
                self.pressures.0 += 1;
                self.pressures.1 += p;
            }
        }
        self.read += whole;
        self.nanos as f64 / 1e9
    }
}

/// Whether a record of the run directory `run` says a rank migrated for contention.
fn moved_for_contention(run: &Path) -> bool {
    records(run).iter().any(|r| {
        r["outcome"] == "migrated"
            && r["change"]
                .as_str()
                .is_some_and(|c| c.starts_with("contention: "))
    })
}

/// Waits for the move the hogs should cause (`what`), the job's `clock` giving rank 0's
/// mean wait share when it does not come: no waiver on a busy machine (the job and the
/// hogs run boosted, above the machine's other work).
fn wait_for_the_move(run: &Path, clock: &std::cell::RefCell<JobClock>, what: &str) {
    let start = std::time::Instant::now();
    while !moved_for_contention(run) && start.elapsed() < JOB_WAIT {
        std::thread::sleep(Duration::from_millis(200));
    }
    if !moved_for_contention(run) {
        let c = clock.borrow();
        panic!(
            "{what}: no move in {} s; rank 0 waited {:.0}% for a CPU over {} checks; records: {:?}",
            JOB_WAIT.as_secs(),
            100.0 * c.shares / c.checks.max(1) as f64,
            c.checks,
            records(run)
        );
    }
}

/// The watch's options of the hog tests: [`WINDOW`] and [`COOLDOWN`].
fn hog_test_settings() -> [String; 4] {
    [
        "--contention-window".to_owned(),
        WINDOW.to_string(),
        "--contention-cooldown".to_owned(),
        COOLDOWN.to_string(),
    ]
}

/// The job of `d` ended (`out`) with a plain run's result, the plain run checkpointing
/// into `d/plain-ckpt`.
fn assert_result_of_a_plain_run(out: &std::process::Output, d: &Path) {
    let env = [(
        "RANKMIG_CKPT_DIR".to_owned(),
        d.join("plain-ckpt").display().to_string(),
    )];
    support::assert_same_as_boosted_plain_run(out, 2, program(), &ARGS, &env);
}

/// Waits for a window of the job alone by its `clock`; no record was made meanwhile.
fn a_window_alone_moves_nothing(run: &Path, clock: &std::cell::RefCell<JobClock>) {
    wait_until(
        "a window of the job alone",
        Duration::from_secs(300),
        || clock.borrow_mut().seconds() >= WINDOW + 1.0,
    );
    assert_eq!(
        records(run),
        Vec::<serde_json::Value>::new(),
        "no false alarm"
    );
}

/// The records of the run directory.
fn records(run: &Path) -> Vec<serde_json::Value> {
    rankmig::run_dir::record::read_reconfigurations(run)
        .expect("records parse")
        .iter()
        .map(|r| serde_json::to_value(r).expect("json"))
        .collect()
}

/// The CPU rank `rank` is bound to (its last start or arrival in processes.csv).
fn cpu_of(run: &Path, rank: usize) -> String {
    let text = fs::read_to_string(run.join("processes.csv")).unwrap_or_default();
    let line = text
        .lines()
        .rev()
        .find(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f.first() == Some(&rank.to_string().as_str())
                && matches!(f.get(4), Some(&"start" | &"arrived"))
        })
        .unwrap_or_else(|| panic!("rank {rank} in processes.csv: {text}"));
    let cpus = line.split(',').nth(5).unwrap_or_default().to_owned();
    assert!(
        !cpus.is_empty() && !cpus.contains([';', '-']),
        "rank {rank} is bound to one CPU: {line}"
    );
    cpus
}

/// Starts 2 ranks of the program on logical nodes n1:1 n2:1 n3:1 under
/// `rankmig run --contention-watch` (and `extra` options) in `d`; returns once rank 0
/// has recorded an iteration.
fn start(d: &Path, stop: &Path, extra: &[&str]) -> Job {
    start_on(d, stop, "n1 1\nn2 1\nn3 1\n", extra)
}

/// Starts 2 ranks of the program on the nodes of `availability` under
/// `rankmig run --contention-watch` (and `extra` options), [`boosted`], in `d`; returns
/// once rank 0 has recorded an iteration.
fn start_on(d: &Path, stop: &Path, availability: &str, extra: &[&str]) -> Job {
    set_availability(d, availability);
    let mut rankmig = rankmig();
    rankmig
        .current_dir(d)
        .args([
            "run",
            "-n",
            "2",
            "-a",
            "av",
            "--run-dir",
            "run",
            "--settle",
            "0",
        ])
        .arg("--contention-watch")
        .args(extra)
        .arg("--")
        .arg(program())
        .args(ARGS)
        .args(["--iters", "1000000000000", "--stop-file"])
        .arg(stop)
        .env("RANKMIG_CKPT_DIR", d.join("ckpt"));
    let child = boost(&rankmig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let job = Job(Some(child));
    wait_until("the job to start", JOB_WAIT, || {
        d.join("run/iterations/rank-0.csv").exists()
    });
    job
}

/// The "done when": 12 s alone move nothing; two hogs pinned to rank 1's CPU
/// make rankmig move rank 1 off its node live, with a record that says why; at most 3
/// reconfigurations in the run; the checksum of a plain run. Then the hogs stop, and
/// until shortly before the cool-down ends no record moves a rank back onto the node
/// left. The move is demanded on a busy machine too: the job and the hogs run boosted
/// above the machine's other work ([`wait_for_the_move`]).
#[test]
fn hogs_on_one_ranks_cpu_move_it_off_its_node_live() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    let stop = d.join("stop");
    let settings = hog_test_settings();
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let job = start(d, &stop, &settings);
    let clock = std::cell::RefCell::new(JobClock::new(&run));
    wait_until("12 s of the job alone", Duration::from_secs(600), || {
        clock.borrow_mut().seconds() >= 12.0
    });
    assert!(clock.borrow().checks >= 2, "the watch read waits at checks");
    assert_eq!(
        records(&run),
        Vec::<serde_json::Value>::new(),
        "no false alarm"
    );
    let cpu = cpu_of(&run, 1);
    let node = support::processes_csv(&run)
        .iter()
        .rev()
        .find(|p| p.0 == 1 && p.3 == "start")
        .map(|p| p.2.clone())
        .expect("rank 1's node");
    let hogs = Hogs::pinned(&[&cpu], 2);
    wait_for_the_move(&run, &clock, "rank 1 moved off its node");
    // The job's time when the move was seen: at most the time of its decision, since
    // rank 0's rows reach the file at the checks, after the record of that check.
    let moved_at = clock.borrow_mut().seconds();
    drop(hogs);
    assert_none_back_before_the_cooldown(&run, &clock, moved_at, &node);
    let all = records(&run);
    let record = (all.iter().find(|r| r["outcome"] == "migrated")).expect("the move's record");
    let why = record["change"].as_str().unwrap_or_default().to_owned();
    assert!(
        why.starts_with(&format!("contention: {node}'s rank 1 waited "))
            && why.contains(" core usable"),
        "{why}"
    );
    assert_eq!(record["moved"][0]["rank"], 1, "{record}");
    assert_eq!(record["moved"][0]["from"], node.as_str(), "{record}");
    check_node_pressure(&clock.borrow());
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reconfiguration 1 at iteration") && stderr.contains(&why),
        "the progress line says why: {stderr}"
    );
    let all = records(&run);
    assert!(all.len() <= 3, "at most 3 reconfigurations: {all:?}");
    assert_result_of_a_plain_run(&out, d);
}

/// Issue 55's test of the watch judging ranks: on logical nodes of 4 cores (`n1 4`,
/// `n2 2`: both ranks on n1, on cores 0 and 1, two real CPUs), two hogs pinned to rank
/// 1's CPU move rank 1, the rank whose core is hogged, and only it; while the hogs run,
/// for the cool-down and three windows more, nothing else moves and no rank of the
/// job is bound to the hogged CPU (read from outside: `Cpus_allowed_list`), since the
/// cap holds until that CPU measures quiet. Then the result of a plain run.
#[test]
fn one_hog_on_one_core_of_a_four_core_node_moves_that_cores_rank_and_none_goes_back() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    let stop = d.join("stop");
    let settings = hog_test_settings();
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let job = start_on(d, &stop, "n1 4\nn2 2\n", &settings);
    let root = job.0.as_ref().expect("running").id();
    let clock = std::cell::RefCell::new(JobClock::new(&run));
    a_window_alone_moves_nothing(&run, &clock);
    let started: Vec<(usize, u32, String, String)> = support::processes_csv(&run);
    assert!(
        (0..2).all(|r| started.iter().any(|p| p.0 == r && p.2 == "n1")),
        "both ranks start on n1: {started:?}"
    );
    let hogged = cpu_of(&run, 1);
    assert_ne!(hogged, cpu_of(&run, 0), "ranks 0 and 1 on distinct CPUs");
    let hogs = Hogs::pinned(&[&hogged], 2);
    wait_for_the_move(&run, &clock, "rank 1 moved off its hogged core");
    let moved_at = clock.borrow_mut().seconds();
    let record = (records(&run).into_iter())
        .find(|r| r["outcome"] == "migrated")
        .expect("the move's record");
    let why = record["change"].as_str().unwrap_or_default().to_owned();
    assert!(why.starts_with("contention: n1's rank 1 waited "), "{why}");
    let moved = record["moved"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        moved.len(),
        1,
        "only the hogged core's rank moves: {record}"
    );
    assert_eq!(moved[0]["rank"], 1, "{record}");
    wait_until("rank 1's new process", JOB_WAIT, || {
        rank_from_outside(root, &run, 1).is_some()
    });
    eprintln!(
        "after the move: rank 0 {:?}, rank 1 {:?}",
        rank_from_outside(root, &run, 0),
        rank_from_outside(root, &run, 1)
    );
    wait_until(
        "the cool-down and three windows, the hogs running",
        Duration::from_secs(600),
        || clock.borrow_mut().seconds() >= moved_at + COOLDOWN + 3.0 * WINDOW,
    );
    let moves = records(&run)
        .into_iter()
        .filter(|r| r["outcome"] == "migrated")
        .count();
    assert_eq!(
        moves,
        1,
        "nothing moved while the hogs ran: {:?}",
        records(&run)
    );
    for rank in 0..2 {
        let (pid, _, cpus) = rank_from_outside(root, &run, rank).expect("the rank runs");
        let allowed = rankmig::topology::parse_index_list(&cpus).expect("a CPU list");
        let hogged_cpu: usize = hogged.parse().expect("a CPU number");
        assert!(
            !allowed.contains(&hogged_cpu),
            "rank {rank} (pid {pid}) may run on the hogged CPU {hogged}: {cpus}"
        );
    }
    drop(hogs);
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    assert_result_of_a_plain_run(&out, d);
}

/// After a move seen at job time `moved_at`, with the hogs stopped: waits until the
/// job's clock has passed the cool-down, then no record has moved a rank onto `node`,
/// the node left, sooner than the cool-down after the decision that left it. Judged by
/// the records' own times (rank 0's time since the job started, the clock of the
/// watch's cool-down): the test's clock adds up rank 0's iteration rows only, and lags.
/// The decision came before the record of its move by at most the move's scheduling
/// and phases.
fn assert_none_back_before_the_cooldown(
    run: &Path,
    clock: &std::cell::RefCell<JobClock>,
    moved_at: f64,
    node: &str,
) {
    wait_until(
        "the cool-down over by the job's clock",
        Duration::from_secs(600),
        || clock.borrow_mut().seconds() >= moved_at + COOLDOWN,
    );
    let all = records(run);
    let moves = |r: &serde_json::Value, key: &str| {
        (r["moved"].as_array()).is_some_and(|m| m.iter().any(|m| m[key] == node))
    };
    let left = all
        .iter()
        .find(|r| moves(r, "from"))
        .unwrap_or_else(|| panic!("a record of the move off {node}: {all:?}"));
    let seconds = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let phases: f64 = (left["phases"].as_object()).map_or(0.0, |p| p.values().map(seconds).sum());
    let decided = seconds(&left["at_seconds"]) - seconds(&left["scheduling"]) - phases;
    let early: Vec<&serde_json::Value> = all
        .iter()
        .filter(|r| moves(r, "to") && seconds(&r["at_seconds"]) < decided + COOLDOWN)
        .collect();
    assert!(
        early.is_empty(),
        "no rank goes back to {node} within {COOLDOWN} s of the decision at {decided:.1} s: {early:?}"
    );
}

/// Where this kernel gives `/proc/pressure/cpu`, rank 0 (n1's lowest rank) recorded
/// n1's CPU pressure at its checks; prints its mean beside rank 0's waits.
fn check_node_pressure(clock: &JobClock) {
    let (n, sum) = clock.pressures;
    if n > 0 {
        eprintln!(
            "n1's CPU pressure (some) over {n} checks: {:.0}% on average; rank 0 waited {:.0}%",
            100.0 * sum / n as f64,
            100.0 * clock.shares / clock.checks as f64
        );
    }
    if rankmig::contention::PressureReader::open().is_some() {
        assert!(
            n > 0,
            "rank 0, n1's lowest rank, recorded its node's CPU pressure"
        );
    }
}

/// Two hogs pinned to every CPU of the machine: every node waits alike and nothing
/// moves over several windows.
#[test]
fn a_machine_loaded_everywhere_moves_nothing() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    let stop = d.join("stop");
    let cpus: Vec<String> = (0..std::thread::available_parallelism().map_or(1, |n| n.get()))
        .map(|c| c.to_string())
        .collect();
    let cpus: Vec<&str> = cpus.iter().map(String::as_str).collect();
    // Built before the hogs (boosted to nice -19) take every CPU: a rebuild of the
    // library under them was starved for minutes.
    program();
    let hogs = Hogs::pinned(&cpus, 2);
    let job = start(d, &stop, &["--contention-window", "4"]);
    let clock = std::cell::RefCell::new(JobClock::new(&run));
    wait_until("three windows of the job", Duration::from_secs(600), || {
        clock.borrow_mut().seconds() >= 13.0
    });
    drop(hogs);
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let moves: Vec<serde_json::Value> = records(&run)
        .into_iter()
        .filter(|r| r["outcome"] == "migrated")
        .collect();
    assert!(moves.is_empty(), "nothing moves: {moves:?}");
}

/// The hog test on the emulated cluster (hosts h1 h2 h3 as UTS namespaces of this
/// machine, `rankmig run --emulated-cluster`), everything read from outside the
/// processes: their hosts (`nsenter -t PID -u hostname`) and CPUs
/// (`Cpus_allowed_list`). The two ranks start on h1 and h2, bound to distinct real CPUs
/// (each host's place in the availability offsets its cores: `RANKMIG_EMULATED_HOSTS`).
/// Two hogs pinned to rank 1's CPU move it off h2 live, with a record that says why,
/// to h3; the result is a plain run's.
///
/// Why rank 1, on this 2-CPU machine: with `h1 1`, `h2 1`, `h3 1` on 2 CPUs, h1 and h3
/// bind to CPU 0 and h2 to CPU 1. Rank 1 (h2) hogged moves to h3, CPU 0, shared with
/// rank 0 alone instead of with two hogs: somewhere better. Rank 0 hogged would move
/// to h3 too, back onto the hogged CPU 0, nowhere better. On a machine of 3 CPUs or
/// more h3 has a CPU of its own. The move is demanded on a busy machine too.
#[test]
fn hogs_on_one_ranks_cpu_move_it_off_its_emulated_host_live() {
    if !support::namespaces_available() {
        return;
    }
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    let stop = d.join("stop");
    fs::write(d.join("hosts"), "h1 slots=4\nh2 slots=4\nh3 slots=4\n").expect("hostfile");
    let window = WINDOW.to_string();
    let options = [
        "--hostfile",
        "hosts",
        "--emulated-cluster",
        "--contention-window",
        window.as_str(),
    ];
    let job = start_on(d, &stop, "h1 1\nh2 1\nh3 1\n", &options);
    let root = job.0.as_ref().expect("running").id();
    let on = |rank: usize| rank_from_outside(root, &run, rank);
    wait_until("both ranks bound, read from outside", JOB_WAIT, || {
        (0..2).all(|r| on(r).is_some_and(|(_, _, cpus)| !cpus.contains([',', '-'])))
    });
    let (first, second) = (on(0).expect("rank 0"), on(1).expect("rank 1"));
    eprintln!("before the hogs: rank 0 {first:?}, rank 1 {second:?}");
    assert_eq!((first.1.as_str(), second.1.as_str()), ("h1", "h2"));
    assert_ne!(first.2, second.2, "h1's and h2's ranks share a real CPU");
    let clock = std::cell::RefCell::new(JobClock::new(&run));
    a_window_alone_moves_nothing(&run, &clock);
    let hogs = Hogs::pinned(&[&second.2], 2);
    wait_for_the_move(&run, &clock, "rank 1 moved off h2");
    let record = (records(&run).into_iter())
        .find(|r| r["outcome"] == "migrated")
        .expect("the move's record");
    let why = record["change"].as_str().unwrap_or_default();
    eprintln!("the move: {why}");
    assert!(
        why.starts_with("contention: h2's rank 1 waited ") && why.contains(" core usable"),
        "{record}"
    );
    assert_eq!(record["moved"][0]["rank"], 1, "{record}");
    assert_eq!(record["moved"][0]["from"], "h2", "{record}");
    // The new process of rank 1, read from outside, runs on another host.
    wait_until("rank 1's new process", JOB_WAIT, || {
        on(1).is_some_and(|(pid, host, _)| pid != second.0 && host != "h2")
    });
    let after = on(1).expect("rank 1");
    eprintln!("after the move: rank 1 {after:?}");
    assert_eq!(after.1, "h3", "rank 1 moved to the host with room");
    drop(hogs);
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    assert_result_of_a_plain_run(&out, d);
}

/// Rank `rank`'s live process below `root` (its latest in processes.csv), with its host
/// and the CPUs it may run on, both read from outside it; `None` until it runs.
fn rank_from_outside(root: u32, run: &Path, rank: usize) -> Option<(u32, String, String)> {
    let pid = (support::processes_csv(run).iter().rev())
        .find(|p| p.0 == rank && matches!(p.3.as_str(), "start" | "arrived"))?
        .1;
    let host = support::live_hosts(root, program()).remove(&pid)?;
    let cpus = rankmig::monitor::location::allowed_cpus_of(pid)?;
    Some((pid, host, cpus))
}
