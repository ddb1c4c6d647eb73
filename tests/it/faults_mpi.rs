//! Faults `rankmig run` survives on logical nodes of this host, with the real launcher
//! of the MPI first on `PATH`: a relaunch that finds the availability file bad at that
//! moment, a rank that dies.
//!
//! Each job runs until the test stops it through its stop file, and each step waits for
//! what the job records (a refusal, a launch's start, a checkpoint), so the tests do not
//! depend on the machine's speed.
#![cfg(feature = "mpi")]

use std::fs;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::support;
use crate::support::job::{Hung, Job, retry_on_hang, set_availability, wait_for};
use crate::support::{has_committed_epoch, jacobi, mpi_lock, rankmig};
use rankmig::run_dir::record::read_reconfigurations;

const RANKS: usize = 4;

/// `rankmig run` of the Jacobi example on [`RANKS`] ranks in `dir`, in the background,
/// with checkpoints every 1000 iterations, stopped through `DIR/stop`.
fn start(dir: &Path, options: &[&str]) -> Job {
    let stop = dir.join("stop");
    let mut cmd = rankmig();
    cmd.current_dir(dir)
        .env("RANKMIG_CKPT_EVERY", "1000")
        .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
        .args(["--run-dir", "run", "--check-every", "20", "--settle", "0"])
        .args(options)
        .arg("--")
        .arg(jacobi())
        .args(["--size", "128", "--iters", "100000000", "--stop-file"])
        .arg(&stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Job(Some(cmd.spawn().expect("rankmig run starts")))
}

/// Stops the job of `dir` through its stop file and waits for its end.
fn stop_and_finish(job: Job, dir: &Path) -> Result<Output, Hung> {
    fs::write(dir.join("stop"), "").expect("stop file");
    job.finish()
}

/// Asserts that `out` is a successful run with the checksum of a plain run of as many
/// iterations.
fn assert_result_of_a_plain_run(out: &Output) {
    let unused = std::env::temp_dir().join("rankmig-unused-ckpt");
    let env = [("RANKMIG_CKPT_DIR".to_owned(), unused.display().to_string())];
    support::assert_same_as_plain_run(out, RANKS, jacobi(), &["--size", "128"], &env);
}

/// The outcomes of the reconfigurations recorded so far.
fn outcomes(dir: &Path) -> Vec<String> {
    read_reconfigurations(&dir.join("run"))
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.outcome)
        .collect()
}

fn count(dir: &Path, outcome: &str) -> usize {
    outcomes(dir).iter().filter(|o| *o == outcome).count()
}

/// (rank, pid, node, event) of every line of the run directory `dir/run`'s processes.csv.
fn processes(dir: &Path) -> Vec<(usize, u32, String, String)> {
    support::processes_csv(&dir.join("run"))
}

/// Launches whose rank 0 has started.
fn launches_started(dir: &Path) -> usize {
    processes(dir)
        .iter()
        .filter(|p| p.0 == 0 && p.3 == "start")
        .count()
}

/// The pid of the newest process of `rank`.
fn pid_of(dir: &Path, rank: usize) -> u32 {
    processes(dir)
        .iter()
        .rev()
        .find(|p| p.0 == rank && matches!(p.3.as_str(), "start" | "arrived"))
        .map(|p| p.1)
        .expect("the rank has started")
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a rank of the job this test started.
    unsafe { libc::kill(pid as i32, signal) };
}

const BAD: &str = "n1 two\n";

/// A bad availability file at a relaunch (the stall watch's) does not end the run: the
/// relaunch says so and starts on the last content the job accepted, the new ranks
/// refuse the file's content as the running ones did, and a good edit after it moves
/// ranks live.
#[test]
fn a_bad_file_at_a_relaunch_keeps_the_last_accepted_content() {
    let _lock = mpi_lock();
    retry_on_hang(bad_file_at_a_relaunch);
}

fn bad_file_at_a_relaunch() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\n");
    let job = start(d, &["--stall-timeout", "8"]);
    wait_for("a committed checkpoint", || {
        has_committed_epoch(&d.join("run/ckpt"))
    })?;
    set_availability(d, "n1 1\nn2 1\nn3 2\n");
    wait_for("the accepted edit", || count(d, "migrated") == 1)?;
    set_availability(d, BAD);
    wait_for("the refusal of the running job", || {
        count(d, "refused") == 1
    })?;
    // Rank 1 stops: the stall watch relaunches the job while the file is bad.
    signal(pid_of(d, 1), libc::SIGSTOP);
    wait_for("the relaunched job", || launches_started(d) == 2)?;
    wait_for("the refusal of the relaunched job", || {
        count(d, "refused") == 2
    })?;
    let relaunch = fs::read_to_string(d.join("run/availability-restart-1.txt")).expect("copy");
    assert_eq!(relaunch, "n1 1\nn2 1\nn3 2\n");
    set_availability(d, "n1 2\nn2 2\n");
    wait_for("a migration after the relaunch", || {
        count(d, "migrated") == 2
    })?;
    let out = stop_and_finish(job, d)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("av:1: the core count must be a non-negative integer: 'two': relaunching on the last availability the job accepted"),
        "{stderr}"
    );
    assert_result_of_a_plain_run(&out);
    Ok(())
}

/// The same bad file at the first launch is an error naming the line.
#[test]
fn a_bad_file_at_the_first_launch_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, BAD);
    let out = start(d, &[]).finish().expect("ends at once");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("av:1: the core count must be a non-negative integer: 'two'"),
        "{stderr}"
    );
    assert!(!d.join("run/processes.csv").exists());
}

/// The nodes of the placement file `name` of the run directory, in rank order.
fn placed_nodes(dir: &Path, name: &str) -> Vec<String> {
    let text = fs::read_to_string(dir.join("run").join(name)).expect("placement file");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect()
}

/// A rank SIGKILLed on a node that still answers: `rankmig run --auto-restart 1` names
/// the rank, its node and the signal, and launches the job again from its newest
/// complete checkpoint on the same nodes, with a plain run's result.
#[test]
fn a_killed_rank_is_restarted_on_the_same_nodes() {
    let _lock = mpi_lock();
    retry_on_hang(killed_rank);
}

fn killed_rank() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\n");
    let job = start(d, &["--auto-restart", "1"]);
    wait_for("a committed checkpoint", || {
        has_committed_epoch(&d.join("run/ckpt"))
    })?;
    signal(pid_of(d, 2), libc::SIGKILL);
    wait_for("the restarted job", || launches_started(d) == 2)?;
    let out = stop_and_finish(job, d)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rank 2 on n2 was killed by signal 9 (SIGKILL) at iteration "),
        "{stderr}"
    );
    assert!(
        stderr.contains("every host answers: restarting from the newest complete checkpoint on the same hosts (auto-restart 1 of 1)"),
        "{stderr}"
    );
    assert!(stderr.contains("restored epoch"), "{stderr}");
    assert_eq!(
        placed_nodes(d, "placement-restart-1.txt"),
        placed_nodes(d, "placement-0.txt")
    );
    assert_result_of_a_plain_run(&out);
    Ok(())
}

/// A rank that exits with code 3 at iteration 2500 at every launch: restarted once
/// from the checkpoint of iteration 2000, it fails again at the same iteration, and the
/// restarts stop there (1 of 3 used) with that diagnosis.
#[test]
fn a_rank_failing_twice_at_the_same_iteration_stops_the_restarts() {
    let _lock = mpi_lock();
    retry_on_hang(same_failure_twice);
}

fn same_failure_twice() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\n");
    let mut cmd = rankmig();
    cmd.current_dir(d)
        .env("RANKMIG_CKPT_EVERY", "1000")
        .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
        .args([
            "--run-dir",
            "run",
            "--check-every",
            "20",
            "--auto-restart",
            "3",
        ])
        .arg("--")
        .arg(jacobi())
        .args(["--size", "128", "--iters", "100000", "--fail-at", "2500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Job(Some(cmd.spawn().expect("rankmig run starts"))).finish()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let failure = "rank 3 on n2 exited with code 3 at iteration 2499";
    let ended = format!("{failure}: the job ended");
    assert_eq!(stderr.matches(&ended).count(), 2, "{stderr}");
    assert!(
        stderr.contains(&format!("{failure} again after a restart: probably a failure of the application itself, not of a host: not restarting")),
        "{stderr}"
    );
    assert!(stderr.contains("(auto-restart 1 of 3)"), "{stderr}");
    assert!(!stderr.contains("(auto-restart 2 of 3)"), "{stderr}");
    assert_eq!(launches_started(d), 2);
    Ok(())
}
