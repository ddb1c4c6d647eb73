//! Live migration with `rankmig run` and real `mpirun`, on `examples/jacobi.rs`.
//!
//! Logical nodes of this host; the availability file is edited while the job runs,
//! each edit waiting for the job to have reached a point (its first check, the previous
//! reconfiguration), and each job runs until the test stops it through its stop file,
//! so the tests do not depend on timing; results are compared with a plain run of as
//! many iterations.
#![cfg(feature = "mpi")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support;
use crate::support::job::{Hung, Job, retry_on_hang, set_availability, wait_for};
use crate::support::{
    StoppingSpawns, has_committed_epoch, is_zombie, jacobi, mpi_lock, rankmig, write_script,
};
use rankmig::run_dir::record::{Reconfiguration, read_reconfigurations};

const RANKS: usize = 8;

/// Jacobi arguments: a run as long as the test needs, ended through `DIR/stop`
/// ([`stop_and_finish`]) whatever the machine's speed.
fn stoppable(dir: &Path) -> Vec<String> {
    ["--size", "256", "--iters", "100000000", "--stop-file"]
        .iter()
        .map(|a| (*a).to_owned())
        .chain([dir.join("stop").display().to_string()])
        .collect()
}

/// `rankmig run` of the Jacobi example on `RANKS` ranks, started in the background,
/// acting on each edit at once (`--settle 0`: every edit here is one atomic write).
fn start(dir: &Path, extra_env: &[(&str, &str)]) -> Job {
    let args = stoppable(dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    start_with(dir, extra_env, &["--settle", "0"], &args)
}

/// Stops the job of `dir` through its stop file and waits for its end.
fn stop_and_finish(job: Job, dir: &Path) -> Result<std::process::Output, Hung> {
    fs::write(dir.join("stop"), "").expect("stop file");
    job.finish()
}

/// [`start`] with other `rankmig run` options and Jacobi arguments.
fn start_with(dir: &Path, extra_env: &[(&str, &str)], options: &[&str], args: &[&str]) -> Job {
    let mut cmd = rankmig();
    cmd.current_dir(dir)
        .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
        .args(["--run-dir", "run", "--check-every", "20"])
        .args(options)
        .arg("--")
        .arg(jacobi())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    Job(Some(cmd.spawn().expect("rankmig run starts")))
}

/// Asserts that `out` is a successful run with the checksum of a plain 4-rank run of as
/// many iterations.
fn assert_result_of_a_plain_run(out: &std::process::Output) {
    let unused = std::env::temp_dir().join("rankmig-unused-ckpt");
    let env = [("RANKMIG_CKPT_DIR".to_owned(), unused.display().to_string())];
    support::assert_same_as_plain_run(out, 4, jacobi(), &["--size", "256"], &env);
}

fn records(dir: &Path) -> Vec<Reconfiguration> {
    read_reconfigurations(&dir.join("run")).unwrap_or_default()
}

fn first_check_done(dir: &Path) -> bool {
    dir.join("run/iterations/rank-0.csv").exists()
}

/// (rank, pid, node, event) of every line of the run directory `dir/run`'s processes.csv.
fn processes(dir: &Path) -> Vec<(usize, u32, String, String)> {
    support::processes_csv(&dir.join("run"))
}

fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            != Some("Z")
    })
}

#[test]
fn ranks_move_live_and_the_result_is_bit_exact() {
    let _lock = mpi_lock();
    retry_on_hang(moves_live);
}

fn moves_live() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\nn3 2\nn4 2\n");
    let job = start(d, &[]);
    wait_for("the first availability check", || first_check_done(d))?;
    // n1 reclaimed, n5 lent: n1's two ranks go to n5.
    set_availability(d, "n1 0\nn2 2\nn3 2\nn4 2\nn5 2\n");
    wait_for("the first reconfiguration", || !records(d).is_empty())?;
    // n2 lost too: its two ranks spread over the nodes left.
    set_availability(d, "n3 2\nn4 2\nn5 2\n");
    wait_for("the second reconfiguration", || records(d).len() >= 2)?;
    let out = stop_and_finish(job, d)?;
    assert_result_of_a_plain_run(&out);

    let recs = records(d);
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r.outcome, "migrated", "{r:?}");
        assert_eq!(r.moves, r.minimum_moves, "{r:?}");
        assert!(r.state_bytes > 0);
    }
    assert_eq!(recs[0].moves, 2);
    assert_eq!(recs[1].moves, 2);

    // The same 8 ranks finish; the replaced processes are gone; nothing of the job
    // finished on a vacated node.
    let procs = processes(d);
    let mut finished: Vec<usize> = procs
        .iter()
        .filter(|p| p.3 == "finish")
        .map(|p| p.0)
        .collect();
    finished.sort_unstable();
    assert_eq!(finished, (0..RANKS).collect::<Vec<_>>());
    let left: Vec<&(usize, u32, String, String)> = procs.iter().filter(|p| p.3 == "left").collect();
    assert_eq!(left.len(), 4);
    for p in &left {
        assert!(!alive(p.1), "replaced process {} still alive", p.1);
        assert!(p.2 == "n1" || p.2 == "n2", "{p:?}");
    }
    assert!(
        procs
            .iter()
            .filter(|p| p.3 == "finish")
            .all(|p| p.2 != "n1" && p.2 != "n2")
    );
    let last = fs::read_to_string(d.join("run/placement-2.txt")).unwrap();
    assert!(!last.contains(" n1 ") && !last.contains(" n2 "), "{last}");
    Ok(())
}

#[test]
fn a_failed_spawn_leaves_every_rank_running() {
    let _lock = mpi_lock();
    retry_on_hang(failed_spawn);
}

fn failed_spawn() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    let job = start(
        d,
        &[("RANKMIG_SPAWN_PROGRAM", "/nonexistent/rankmig-test-program")],
    );
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("the refused migration", || !records(d).is_empty())?;
    let out = stop_and_finish(job, d)?;
    assert_result_of_a_plain_run(&out);
    let recs = records(d);
    assert_eq!(recs[0].outcome, "spawn failed", "{recs:?}");
    assert!(
        recs[0]
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("/nonexistent/rankmig-test-program")
    );
    let procs = processes(d);
    assert!(
        procs.iter().all(|p| p.3 != "left"),
        "a rank left: {procs:?}"
    );
    assert_eq!(procs.iter().filter(|p| p.3 == "finish").count(), RANKS);
    Ok(())
}

#[test]
fn a_spawn_that_never_completes_is_stopped_and_the_job_launched_again_from_before_it() {
    let _lock = mpi_lock();
    retry_on_hang(hung_spawn);
}

/// The first migration is carried out live; in the second the replacement processes
/// never start MPI (the program spawned sleeps from its fifth start on), as when Open
/// MPI 4.1 with PMIx 4 leaves a spawned process in `PMIx_Init`: every rank waits in
/// `MPI_Comm_spawn` for ever. The job must be launched again from the checkpoint all
/// ranks, the replacement processes of the first migration among them, committed
/// before that second spawn.
fn hung_spawn() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let starts = d.join("starts");
    let spawned = d.join("starts-then-sleeps");
    let script = format!(
        "#!/bin/sh\necho x >> '{}'\nif [ $(wc -l < '{}') -le 4 ]; then exec '{}' \"$@\"; fi\nsleep 600\n",
        starts.display(),
        starts.display(),
        jacobi().display()
    );
    write_script(&spawned, &script);
    set_availability(d, "n1 4\nn2 4\n");
    let args = stoppable(d);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let job = start_with(
        d,
        &[("RANKMIG_SPAWN_PROGRAM", spawned.to_str().unwrap())],
        &["--settle", "0", "--spawn-timeout", "3"],
        &args,
    );
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("the first migration", || !records(d).is_empty())?;
    set_availability(d, "n2 0\nn3 4\nn4 4\n");
    // The second launch has started every rank and computes.
    wait_for("the launch after the stuck spawn", || {
        processes(d).iter().filter(|p| p.3 == "start").count() >= 2 * RANKS
    })?;
    let out = stop_and_finish(job, d)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("has not completed after 3 s"), "{stderr}");
    assert_result_of_a_plain_run(&out);
    let recs = records(d);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].outcome, "migrated");
    // Launched twice: the second time from the checkpoint taken before the second
    // spawn, on the nodes of the last edit; nothing of the stuck spawn is left.
    let procs = processes(d);
    assert_eq!(procs.iter().filter(|p| p.3 == "start").count(), 2 * RANKS);
    let finished: Vec<_> = procs.iter().filter(|p| p.3 == "finish").collect();
    assert_eq!(finished.len(), RANKS, "{procs:?}");
    assert!(
        finished.iter().all(|p| p.2 == "n3" || p.2 == "n4"),
        "{procs:?}"
    );
    assert!(stderr.contains("restored epoch 2"), "{stderr}");
    assert!(
        !d.join("run")
            .join(rankmig::run_dir::spawn_watch::SPAWN_MARKER)
            .exists()
    );
    let sleeping = fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains("starts-then-sleeps"))
        .count();
    assert_eq!(
        sleeping, 0,
        "a replacement process of the stuck spawn is still there"
    );
    Ok(())
}

#[test]
fn bad_half_written_and_deleted_files_keep_the_placement_then_a_good_edit_moves() {
    let _lock = mpi_lock();
    retry_on_hang(bad_edit);
}

fn bad_edit() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    let job = start(d, &[]);
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 four\nn2 4\n");
    wait_for("the refusal", || !records(d).is_empty())?;
    // A half-written file, then a deleted one: refused too, the job stays put.
    set_availability(d, "n1 4\nn2");
    wait_for("the second refusal", || records(d).len() >= 2)?;
    fs::remove_file(d.join("av")).expect("delete availability");
    wait_for("the third refusal", || records(d).len() >= 3)?;
    assert!(processes(d).iter().all(|p| p.3 != "left"));
    // A good edit is then taken: n1's ranks move to n3.
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("the migration", || records(d).len() >= 4)?;
    let out = stop_and_finish(job, d)?;
    assert!(out.status.success());
    let recs = records(d);
    let outcomes: Vec<&str> = recs.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["refused", "refused", "refused", "migrated"],
        "{recs:?}"
    );
    let detail = recs[0].detail.clone().unwrap_or_default();
    assert!(
        detail.contains(":1:") && detail.contains("'four'"),
        "{detail}"
    );
    let detail = recs[1].detail.clone().unwrap_or_default();
    assert!(
        detail.contains(":2:") && detail.contains("'n2'"),
        "{detail}"
    );
    let detail = recs[2].detail.clone().unwrap_or_default();
    assert!(detail.contains("cannot read"), "{detail}");
    assert_eq!(recs[3].moves, 4);
    Ok(())
}

#[test]
fn a_file_written_in_two_steps_gives_one_migration() {
    let _lock = mpi_lock();
    retry_on_hang(two_step_edit);
}

/// The issue's `echo 'n2 4' > av; sleep …; echo 'n3 4' >> av`, under the default settle
/// time: the job acts once, on the final content.
fn two_step_edit() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    // The job runs until the test stops it (after the reconfiguration), whatever the
    // machine's speed: it must outlast the 1.5 s between the writes and the settle time.
    let stop = d.join("stop");
    let stop_arg = stop.display().to_string();
    let args = [
        "--size",
        "256",
        "--iters",
        "100000000",
        "--stop-file",
        &stop_arg,
    ];
    let job = start_with(d, &[], &[], &args);
    wait_for("the first availability check", || first_check_done(d))?;
    fs::write(d.join("av"), "n2 4\n").expect("first write");
    std::thread::sleep(Duration::from_millis(1500));
    let mut av = fs::OpenOptions::new()
        .append(true)
        .open(d.join("av"))
        .expect("open");
    std::io::Write::write_all(&mut av, b"n3 4\n").expect("second write");
    drop(av);
    wait_for("the reconfiguration", || !records(d).is_empty())?;
    // The final content has been acted on: no later check can see a change.
    fs::write(&stop, "").expect("stop file");
    let out = job.finish()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = records(d);
    assert_eq!(
        recs.len(),
        1,
        "one reconfiguration, not one per write: {recs:?}"
    );
    assert_eq!(recs[0].outcome, "migrated", "{recs:?}");
    assert_eq!(recs[0].moves, 4, "{recs:?}");
    let last = fs::read_to_string(d.join("run/placement-1.txt")).unwrap();
    assert!(!last.contains(" n1 ") && last.contains(" n3 "), "{last}");
    Ok(())
}

#[test]
fn a_node_killed_without_notice_restarts_from_the_checkpoint() {
    let _lock = mpi_lock();
    retry_on_hang(killed_node);
}

fn killed_node() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\nn3 2\nn4 2\n");
    let job = start(d, &[("RANKMIG_CKPT_EVERY", "200")]);
    let ckpt: PathBuf = d.join("run/ckpt");
    wait_for("a committed checkpoint", || has_committed_epoch(&ckpt))?;
    // Kill every process of logical node n2 (its ranks), without notice.
    let victims: Vec<u32> = processes(d)
        .iter()
        .filter(|p| p.2 == "n2" && p.3 == "start")
        .map(|p| p.1)
        .collect();
    assert_eq!(victims.len(), 2);
    for pid in &victims {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let out = job.finish()?;
    assert!(
        !out.status.success(),
        "the job should abort when a node vanishes"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("resume it with `rankmig run --restart"),
        "no next step in: {stderr}"
    );
    // n2 is gone for good; restart with a placement for the new availability.
    set_availability(d, "n1 2\nn3 2\nn4 2\nn5 2\n");
    let restarted = restart(d);
    wait_for("the restart", || {
        processes(d).iter().filter(|p| p.3 == "start").count() >= 2 * RANKS
    })?;
    let out = stop_and_finish(restarted, d)?;
    assert_result_of_a_plain_run(&out);
    let restart_placement = fs::read_dir(d.join("run"))
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("placement-restart")
        })
        .map(|e| fs::read_to_string(e.path()).unwrap())
        .expect("restart placement recorded");
    assert!(!restart_placement.contains(" n2 "), "{restart_placement}");
    Ok(())
}

#[test]
fn a_rank_killed_during_a_spawn_stops_the_job_which_restarts_from_before_the_migration() {
    let _lock = mpi_lock();
    retry_on_hang(killed_during_spawn);
}

/// The replacement processes start 2 s late (a wrapper sleeps before it runs the
/// program); meanwhile an original rank is SIGKILLed. The job must stop, say how to
/// resume, and `--restart` must go on from the checkpoint every rank committed before
/// the spawn, placed for the edited availability, with a plain run's result.
fn killed_during_spawn() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spawning = d.join("spawning");
    let spawned = d.join("slow-start");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nsleep 2\nexec '{}' \"$@\"\n",
        spawning.display(),
        jacobi().display()
    );
    write_script(&spawned, &script);
    set_availability(d, "n1 4\nn2 4\n");
    let job = start(d, &[("RANKMIG_SPAWN_PROGRAM", spawned.to_str().unwrap())]);
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 4\nn3 4\n");
    wait_for("the spawn", || spawning.exists())?;
    let victim = processes(d)
        .iter()
        .find(|p| p.0 == 1 && p.3 == "start")
        .map(|p| p.1)
        .expect("rank 1 started");
    let _ = Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status();
    stopped_with_the_restart_hint(job)?;
    restart_resumes_off_n2(d)
}

#[test]
fn a_rank_killed_during_the_state_transfer_stops_the_job_which_restarts_from_before_the_migration()
{
    let _lock = mpi_lock();
    retry_on_hang(|| killed_during_transfer(Victim::LeavingRank));
}

#[test]
fn a_replacement_killed_right_after_it_starts_stops_the_job_which_restarts_from_before_the_migration()
 {
    let _lock = mpi_lock();
    retry_on_hang(|| killed_during_transfer(Victim::Replacement));
}

/// Which process a test kills during a migration's state transfer.
#[derive(Clone, Copy)]
enum Victim {
    /// An original rank that is leaving its node.
    LeavingRank,
    /// A replacement process, right after its `MPI_Init`.
    Replacement,
}

/// The replacement processes stop themselves (SIGSTOP) right after `MPI_Init`, so the
/// spawn is complete and every original rank waits in the state transfer; then
/// `victim` is SIGKILLed. The job must stop with no migration recorded, leave no
/// process of its own, say how to resume, and `--restart` must go on from the
/// checkpoint committed before the spawn with a plain run's result.
fn killed_during_transfer(victim: Victim) -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spawns = StoppingSpawns::build(d, jacobi());
    set_availability(d, "n1 4\nn2 4\n");
    let script = spawns.script.to_str().unwrap();
    let job = start(d, &[("RANKMIG_SPAWN_PROGRAM", script)]);
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 4\nn3 4\n");
    // n2's 4 ranks move: their 4 replacements stopped after MPI_Init, and rank 0
    // back from its spawn call.
    wait_for("4 replacements stopped in the state transfer", || {
        spawns.all_stopped(4) && !d.join("run/spawn-in-progress").exists()
    })?;
    let victim = match victim {
        Victim::LeavingRank => processes(d)
            .iter()
            .find(|p| p.2 == "n2" && p.3 == "start")
            .map(|p| p.1)
            .expect("a rank started on n2"),
        Victim::Replacement => spawns.pids()[0],
    };
    let _ = Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status();
    stopped_with_the_restart_hint(job)?;
    assert!(
        records(d).iter().all(|r| r.outcome != "migrated"),
        "the kill came after the transfer: {:?}",
        records(d)
    );
    for pid in spawns.pids() {
        assert!(is_zombie(pid), "replacement {pid} left behind");
    }
    restart_resumes_off_n2(d)
}

/// After a fault during a migration: the job must stop and say how to resume.
fn stopped_with_the_restart_hint(job: Job) -> Result<(), Hung> {
    let out = job.finish()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("resume it with `rankmig run --restart"),
        "no next step in: {stderr}"
    );
    Ok(())
}

/// `--restart` of the job of `d` after a fault during a migration off n2 must go on
/// from the checkpoint committed before the spawn, with a plain run's result and no
/// rank ending on n2.
fn restart_resumes_off_n2(d: &Path) -> Result<(), Hung> {
    let restarted = restart(d);
    wait_for("the restart", || {
        processes(d).iter().filter(|p| p.3 == "start").count() >= 2 * RANKS
    })?;
    let out = stop_and_finish(restarted, d)?;
    assert_result_of_a_plain_run(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("restored epoch"), "{stderr}");
    let finished: Vec<_> = processes(d)
        .into_iter()
        .filter(|p| p.3 == "finish")
        .collect();
    assert_eq!(finished.len(), RANKS, "{finished:?}");
    assert!(finished.iter().all(|p| p.2 != "n2"), "{finished:?}");
    Ok(())
}

/// `rankmig run --restart run` in `dir`, in the background.
fn restart(dir: &Path) -> Job {
    let mut cmd = rankmig();
    cmd.current_dir(dir)
        .args(["run", "--restart", "run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Job(Some(cmd.spawn().expect("restart runs")))
}

#[test]
fn a_run_directory_removed_while_the_job_runs_is_reported_and_put_back() {
    let _lock = mpi_lock();
    retry_on_hang(run_directory_removed);
}

fn run_directory_removed() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    // No periodic checkpoint is being written when the directory goes.
    let job = start(d, &[("RANKMIG_CKPT_SECONDS", "3600")]);
    wait_for("the first availability check", || first_check_done(d))?;
    // Gone at once (ranks that append meanwhile would make a recursive removal fail).
    fs::rename(d.join("run"), d.join("removed")).expect("move the run directory away");
    let _ = fs::remove_dir_all(d.join("removed"));
    wait_for("run.json to be put back", || {
        d.join("run/run.json").exists()
    })?;
    // The job goes on, and can still move: its pre-migration checkpoint goes into the
    // checkpoint directory put back.
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("a migration after the removal", || !records(d).is_empty())?;
    let out = stop_and_finish(job, d)?;
    assert_result_of_a_plain_run(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let run_dir = d.join("run");
    assert!(
        err.contains(&format!(
            "the run directory {} was removed",
            run_dir.display()
        )),
        "the removal is not reported: {err}"
    );
    assert_eq!(records(d)[0].outcome, "migrated");
    let report = rankmig()
        .arg("report")
        .arg(&run_dir)
        .output()
        .expect("report");
    assert!(
        report.status.success(),
        "rankmig report: {}",
        String::from_utf8_lossy(&report.stderr)
    );
    Ok(())
}

#[test]
fn a_second_job_on_the_same_availability_file_is_refused_and_the_first_runs_on() {
    let _lock = mpi_lock();
    retry_on_hang(second_job_on_one_file);
}

fn second_job_on_one_file() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    let job = start(d, &[]);
    wait_for("the first availability check", || first_check_done(d))?;
    let second = rankmig()
        .current_dir(d)
        .args([
            "run",
            "-n",
            "4",
            "--availability",
            "av",
            "--run-dir",
            "run2",
        ])
        .arg("--")
        .arg(jacobi())
        .args(["--size", "64", "--iters", "100"])
        .output()
        .expect("second rankmig run");
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second job ran: {err}");
    assert!(
        err.contains("another rankmig run follows this availability file")
            && err.contains(&format!("run directory {}", d.join("run").display())),
        "the refusal does not name the first run: {err}"
    );
    assert!(!d.join("run2/run.json").exists(), "the second job started");
    // The first job still follows the file.
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("the first job's migration", || !records(d).is_empty())?;
    let out = stop_and_finish(job, d)?;
    assert_result_of_a_plain_run(&out);
    assert_eq!(records(d)[0].outcome, "migrated");
    Ok(())
}

#[test]
fn a_full_checkpoint_disk_refuses_the_migration_and_the_job_moves_once_there_is_room() {
    let _lock = mpi_lock();
    retry_on_hang(full_checkpoint_disk);
}

fn full_checkpoint_disk() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(disk) = support::small_fs::SmallFs::mount(&d.join("disk"), "4m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        return Ok(());
    };
    set_availability(d, "n1 4\nn2 4\n");
    let ckpt = disk.0.join("ckpt");
    let args = stoppable(d);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut job = start_with(
        d,
        &[("RANKMIG_CKPT_SECONDS", "3600")],
        &["--settle", "0", "--ckpt-dir", ckpt.to_str().expect("utf-8")],
        &args,
    );
    wait_for("the first availability check", || first_check_done(d))?;
    // The disk fills up: the checkpoint a migration starts from cannot be written.
    let filler = disk.0.join("filler");
    let _ = fs::write(&filler, vec![0u8; 4 << 20]);
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("the refused migration", || !records(d).is_empty())?;
    let refused = records(d).remove(0);
    assert_eq!(refused.outcome, "checkpoint failed", "{refused:?}");
    let detail = refused.detail.clone().unwrap_or_default();
    assert!(detail.contains("No space left on device"), "{detail}");
    let running = job.0.as_mut().map(|c| c.try_wait().expect("wait"));
    assert!(matches!(running, Some(None)), "the job ended: {running:?}");
    // Room again: the same edit is carried out without being saved again.
    fs::remove_file(&filler).expect("remove the filler");
    wait_for("the migration once there is room", || records(d).len() >= 2)?;
    let out = stop_and_finish(job, d)?;
    assert_result_of_a_plain_run(&out);
    let recs = records(d);
    assert_eq!(recs[1].outcome, "migrated", "{recs:?}");
    assert_eq!(recs[1].moves, 4, "{recs:?}");
    Ok(())
}

/// A spawn program that starts the real program (`jacobi`) only once the file `go`
/// exists: the test decides when the spawn can complete. It touches `spawning` first.
fn held_spawn_program(d: &Path) -> PathBuf {
    let script = d.join("held-start");
    let text = format!(
        "#!/bin/sh\ntouch '{spawning}'\nwhile [ ! -e '{go}' ]; do sleep 0.05; done\nexec '{jacobi}' \"$@\"\n",
        spawning = d.join("spawning").display(),
        go = d.join("go").display(),
        jacobi = jacobi().display()
    );
    write_script(&script, &text);
    script
}

/// A job of `RANKS` ranks on n1, n2 whose edit moving n2's ranks to n3 has started its
/// spawn, the replacements held by [`held_spawn_program`] until the test writes `go`.
fn spawning_held_replacements(d: &Path) -> Result<Job, Hung> {
    let program = held_spawn_program(d);
    set_availability(d, "n1 4\nn2 4\n");
    let job = start(d, &[("RANKMIG_SPAWN_PROGRAM", program.to_str().unwrap())]);
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 4\nn3 4\n");
    wait_for("the spawn", || d.join("spawning").exists())?;
    Ok(job)
}

/// Iterations rank 0 has recorded so far.
fn rank0_iterations(d: &Path) -> usize {
    fs::read_to_string(d.join("run/iterations/rank-0.csv")).map_or(0, |t| t.lines().count())
}

#[test]
fn the_ranks_compute_while_their_replacements_start_and_an_edit_meanwhile_is_acted_on_after() {
    let _lock = mpi_lock();
    retry_on_hang(computes_during_the_spawn);
}

/// The Jacobi example asks for MPI_THREAD_MULTIPLE, so its spawns run in the
/// background. The replacements of the first edit cannot start until the test says so:
/// meanwhile every rank keeps iterating (rank 0's records grow), nothing is carried
/// out, and a second edit is made. Once the replacements start, the first migration is
/// carried out (recorded with its background time and its pause), then the second
/// edit, against the placement the first made; the result is a plain run's.
fn computes_during_the_spawn() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = spawning_held_replacements(d)?;
    let at_spawn = rank0_iterations(d);
    set_availability(d, "n3 4\nn4 4\n");
    wait_for("iterations while the replacements start", || {
        rank0_iterations(d) > at_spawn + 200
    })?;
    assert!(records(d).is_empty(), "{:?}", records(d));
    assert!(
        processes(d).iter().all(|p| p.3 == "start"),
        "{:?}",
        processes(d)
    );
    fs::write(d.join("go"), "").expect("go");
    wait_for("both migrations", || {
        records(d)
            .iter()
            .filter(|r| r.outcome == "migrated")
            .count()
            == 2
    })?;
    let out = stop_and_finish(job, d)?;
    assert_result_of_a_plain_run(&out);
    let recs = records(d);
    assert_eq!(recs.len(), 2, "{recs:?}");
    let first = &recs[0];
    assert!(first.phases.background > 0.0, "{first:?}");
    assert!(first.phases.pause > 0.0, "{first:?}");
    assert!(
        first.moved.iter().all(|m| m.from == "n2" && m.to == "n3"),
        "{first:?}"
    );
    assert!(
        recs[1].moved.iter().all(|m| m.to == "n4"),
        "the second edit, against the first's placement: {:?}",
        recs[1]
    );
    let finished: Vec<_> = processes(d)
        .into_iter()
        .filter(|p| p.3 == "finish")
        .collect();
    assert_eq!(finished.len(), RANKS, "{finished:?}");
    assert!(
        finished.iter().all(|p| p.2 == "n3" || p.2 == "n4"),
        "{finished:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in the background"),
        "the progress line says the pause and the background start: {stderr}"
    );
    Ok(())
}

#[test]
fn a_job_that_ends_while_its_replacements_start_dismisses_them() {
    let _lock = mpi_lock();
    retry_on_hang(ends_during_the_spawn);
}

/// The application reaches its end while the replacements of an edit are still
/// starting: the migration is recorded as called off, the replacements, once started,
/// leave without joining, and the job ends with a plain run's result and no process
/// left behind.
fn ends_during_the_spawn() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let job = spawning_held_replacements(d)?;
    fs::write(d.join("stop"), "").expect("stop file");
    wait_for("the migration called off", || {
        records(d).iter().any(|r| r.outcome == "called off")
    })?;
    fs::write(d.join("go"), "").expect("go");
    let out = job.finish()?;
    assert_result_of_a_plain_run(&out);
    let recs = records(d);
    assert_eq!(recs.len(), 1, "{recs:?}");
    let finished: Vec<_> = processes(d)
        .into_iter()
        .filter(|p| p.3 == "finish")
        .collect();
    assert_eq!(finished.len(), RANKS, "{finished:?}");
    assert!(finished.iter().all(|p| p.2 != "n3"), "{finished:?}");
    // Every process of the job had this test's directory in its arguments.
    let mine = d.display().to_string();
    let left = fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(&mine))
        .count();
    assert_eq!(
        left, 0,
        "a process of the job (a dismissed replacement?) is still there"
    );
    Ok(())
}

/// `examples/c/pause_probe.c` built with `mpicc` against the library of this build.
fn pause_probe() -> PathBuf {
    support::build_c_program("examples/c/pause_probe.c", "pause-probe", &[])
}

#[test]
fn a_c_program_with_thread_multiple_migrates_with_its_spawn_in_the_background() {
    let _lock = mpi_lock();
    retry_on_hang(c_program_in_the_background);
}

/// The pause probe (C, `MPI_Init_thread` with `MPI_THREAD_MULTIPLE`, 2 MB per rank):
/// one edit moves n2's ranks to n3 with the spawn in the background; its iteration
/// times are written by every process that ends; each arrival gets its 2 MB region by
/// a move of its pages (the timeline says so); the result is a plain run's.
fn c_program_in_the_background() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let probe = pause_probe();
    let times = d.join("times");
    fs::create_dir_all(&times).expect("times dir");
    set_availability(d, "n1 4\nn2 4\n");
    let stop = d.join("stop");
    let job = {
        let mut cmd = rankmig();
        cmd.current_dir(d)
            .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
            .args(["--run-dir", "run", "--settle", "0", "--"])
            .arg(&probe)
            .args(["--mb", "2", "--iters", "1000000000000", "--times"])
            .arg(&times)
            .arg("--stop-file")
            .arg(&stop)
            .env("RANKMIG_TIMELINE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Job(Some(cmd.spawn().expect("rankmig run starts")))
    };
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n1 4\nn3 4\n");
    wait_for("the migration", || !records(d).is_empty())?;
    let out = stop_and_finish(job, d)?;
    let unused = std::env::temp_dir().join("rankmig-unused-ckpt");
    let env = [("RANKMIG_CKPT_DIR".to_owned(), unused.display().to_string())];
    support::assert_same_as_plain_run(&out, RANKS, &probe, &["--mb", "2"], &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let moved = stderr
        .matches("new: region 'state' in place, its pages moved")
        .count();
    assert_eq!(moved, RANKS / 2, "arrivals whose pages moved:\n{stderr}");
    let recs = records(d);
    assert_eq!(recs[0].outcome, "migrated", "{recs:?}");
    assert!(recs[0].phases.background > 0.0, "{:?}", recs[0]);
    // 4 survivors and 4 arrivals wrote their iteration times (times-PID.txt; the probe
    // also writes its loop's wall clock, clock-PID.txt).
    let written = fs::read_dir(&times)
        .expect("times")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("times-"))
        })
        .count();
    assert_eq!(written, RANKS, "iteration time files");
    Ok(())
}

#[test]
fn ranks_that_fit_the_machine_run_on_distinct_cores_after_a_migration() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        support::skip::on_this_machine("needs 2 CPUs");
        return;
    }
    let _lock = mpi_lock();
    retry_on_hang(distinct_cores_after_a_migration);
}

fn distinct_cores_after_a_migration() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 2 ranks on 2 logical nodes of one core each: the job fits this machine, so each
    // rank is bound to a core of its own.
    set_availability(d, "n1 1\nn2 1\n");
    let mut cmd = rankmig();
    cmd.current_dir(d)
        .args(["run", "-n", "2", "--availability", "av", "--run-dir", "run"])
        .args(["--check-every", "20", "--settle", "0", "--"])
        .arg(jacobi())
        .args(stoppable(d))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let job = Job(Some(cmd.spawn().expect("rankmig run starts")));
    wait_for("the first availability check", || first_check_done(d))?;
    // n1 leaves, n3 comes: n2 is now the first node of the availability, n3 the second.
    set_availability(d, "n2 1\nn3 1\n");
    wait_for("the migration", || !records(d).is_empty())?;
    // The ranks of the job now: started or arrived, and not left. A leaving rank may
    // still be alive for a moment after it said so, on its old core: counting it read
    // [0, 0] in CI once, with MPICH.
    let live = || -> Vec<u32> {
        let events = processes(d);
        let left: Vec<u32> = events
            .iter()
            .filter(|p| p.3 == "left")
            .map(|p| p.1)
            .collect();
        let mut pids: Vec<u32> = events
            .iter()
            .filter(|p| p.3 == "start" || p.3 == "arrived")
            .map(|p| p.1)
            .filter(|pid| !left.contains(pid))
            .filter(|&pid| alive(pid))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    };
    // The record of the migration may come before the rows of the ranks that moved
    // (CI once read the leaving rank, not yet marked "left", with its replacement not
    // yet "arrived"): wait for both rows of every move, then for two live ranks.
    let moves_recorded = || {
        let events = processes(d);
        let count = |what: &str| events.iter().filter(|p| p.3 == what).count();
        count("arrived") >= 1 && count("left") == count("arrived")
    };
    wait_for("the two processes of the job after the migration", || {
        moves_recorded() && live().len() == 2
    })?;
    // Read from outside the processes.
    let pids = live();
    let cpus: Vec<Option<String>> = pids
        .iter()
        .map(|&pid| rankmig::monitor::location::allowed_cpus_of(pid))
        .collect();
    let out = stop_and_finish(job, d)?;
    let recs = records(d);
    assert_eq!(recs[0].outcome, "migrated", "{recs:?}");
    assert!(cpus.iter().all(Option::is_some), "{cpus:?}");
    assert_ne!(
        cpus[0],
        cpus[1],
        "the two ranks share their CPUs: {cpus:?} (processes {pids:?}, events {:?})",
        processes(d)
    );
    let unused = std::env::temp_dir().join("rankmig-unused-ckpt");
    let env = [("RANKMIG_CKPT_DIR".to_owned(), unused.display().to_string())];
    support::assert_same_as_plain_run(&out, 2, jacobi(), &["--size", "256"], &env);
    Ok(())
}

#[test]
fn a_leaving_rank_that_cannot_serialise_its_state_calls_the_migration_off_and_every_rank_stays() {
    let _lock = mpi_lock();
    // The spawn in the background (MPI_THREAD_MULTIPLE), then held.
    retry_on_hang(|| unserialisable_leaving_state(&[]));
    retry_on_hang(|| unserialisable_leaving_state(&[("RANKMIG_BLOCKING_SPAWN", "1")]));
}

/// 4 ranks, n1 n2 -> n2 n3: ranks 0 and 1 would leave n1, and rank 1's state fails to
/// serialise (`examples/unserialisable_state.rs`). `--spawn-timeout 0` writes no
/// checkpoint before the migration, so the first serialisation of that state is the
/// leaving one.
fn unserialisable_leaving_state(env: &[(&str, &str)]) -> Result<(), Hung> {
    let program = support::example("unserialisable_state");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\n");
    let args = ["--unserialisable-rank", "1", "--iters", "100000000"];
    let mut cmd = rankmig();
    cmd.current_dir(d)
        .args(["run", "-n", "4", "--availability", "av", "--run-dir", "run"])
        .args([
            "--check-every",
            "20",
            "--settle",
            "0",
            "--spawn-timeout",
            "0",
        ])
        .arg("--")
        .arg(&program)
        .args(args)
        .arg("--stop-file")
        .arg(d.join("stop"))
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let job = Job(Some(cmd.spawn().expect("rankmig run starts")));
    wait_for("the first availability check", || first_check_done(d))?;
    set_availability(d, "n2 2\nn3 2\n");
    wait_for("the called-off migration", || !records(d).is_empty())?;
    // The job computes on after it.
    let iterations = || fs::metadata(d.join("run/iterations/rank-0.csv")).map_or(0, |m| m.len());
    let at_the_record = iterations();
    wait_for("iterations after the called-off migration", || {
        iterations() > at_the_record
    })?;
    let out = stop_and_finish(job, d)?;
    let recs = records(d);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].outcome, "state not serialised", "{recs:?}");
    assert!(
        recs[0].detail.as_deref().unwrap_or("").contains("rank 1"),
        "{recs:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rank 1: its state could not be serialised for the migration"),
        "{stderr}"
    );
    let procs = processes(d);
    assert!(
        procs.iter().all(|p| p.3 != "left"),
        "a rank left: {procs:?}"
    );
    let finished: Vec<(usize, &str)> = procs
        .iter()
        .filter(|p| p.3 == "finish")
        .map(|p| (p.0, p.2.as_str()))
        .collect();
    assert_eq!(finished.len(), 4, "{procs:?}");
    assert!(
        finished
            .iter()
            .any(|&(rank, node)| rank == 1 && node == "n1"),
        "rank 1 finished off n1: {procs:?}"
    );
    let unused = std::env::temp_dir().join("rankmig-unused-ckpt");
    let plain_env = [("RANKMIG_CKPT_DIR".to_owned(), unused.display().to_string())];
    support::assert_same_as_plain_run(&out, 4, &program, &args[..2], &plain_env);
    Ok(())
}
