//! Checkpoint/restart with real `mpirun` and 4 ranks, on `examples/jacobi.rs`.
//!
//! The example is built by the first test that needs it (`cargo build --example
//! jacobi`, with `--release` when these tests are built without debug assertions).
//! The MPI runs are serialised with a lock: the machine may have two cores only.
#![cfg(feature = "mpi")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::support::{checksum, children_of, jacobi, mpi_lock, stderr};
use rand::{Rng, SeedableRng};
use rankmig::checkpoint::epoch::{COMMIT_MARKER, epoch_dir_name, rank_file_name};
use rankmig::checkpoint::job_dir::job_epochs_dir;

/// Grid and length of the small runs (about half a second each).
const SMALL: &[&str] = &["--size", "256", "--iters", "500"];

/// An `mpirun` command for the example with `np` ranks and checkpoint variables.
fn mpirun(np: usize, args: &[&str], env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ])
    .arg(jacobi())
    .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("RANKMIG_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env(
            "RANKMIG_CKPT_DIR",
            std::env::temp_dir().join("rankmig-unused-ckpt"),
        );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn run(np: usize, args: &[&str], env: &[(&str, String)]) -> Output {
    mpirun(np, args, env).output().expect("mpirun runs")
}

fn dir_env(dir: &Path) -> (&'static str, String) {
    ("RANKMIG_CKPT_DIR", dir.display().to_string())
}

fn restart_env(dir: &Path) -> Vec<(&'static str, String)> {
    vec![dir_env(dir), ("RANKMIG_RESTART", "1".into())]
}

/// Checksum of an uninterrupted run, cached per argument list.
fn reference(args: &[&str]) -> String {
    static CACHE: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    let key = args.join(" ");
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, sum)) = cache.iter().find(|(k, _)| *k == key) {
        return sum.clone();
    }
    let sum = checksum(&run(4, args, &[]));
    cache.push((key, sum.clone()));
    sum
}

/// A 4-rank run of `SMALL` with an epoch every 100 iterations, all 5 kept, copied
/// into a fresh directory per test.
fn committed_run() -> tempfile::TempDir {
    static TEMPLATE: OnceLock<tempfile::TempDir> = OnceLock::new();
    let template = TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = [
            dir_env(dir.path()),
            ("RANKMIG_CKPT_EVERY", "100".into()),
            ("RANKMIG_CKPT_KEEP", "10".into()),
        ];
        let out = run(4, SMALL, &env);
        assert_eq!(checksum(&out), reference(SMALL));
        dir
    });
    let copy = tempfile::tempdir().expect("tempdir");
    fs::create_dir(small_job_dir(copy.path())).expect("mkdir");
    for epoch in 1..=5 {
        let from = small_job_dir(template.path()).join(epoch_dir_name(epoch));
        let to = small_job_dir(copy.path()).join(epoch_dir_name(epoch));
        fs::create_dir(&to).expect("mkdir");
        for entry in fs::read_dir(&from).expect("epoch dir") {
            let entry = entry.expect("entry");
            fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
    copy
}

/// The directory of `SMALL`'s epochs (jacobi names its job after the grid size) in
/// the checkpoint directory `dir`.
fn small_job_dir(dir: &Path) -> PathBuf {
    job_epochs_dir(dir, "jacobi-n256")
}

fn rank_file(dir: &Path, epoch: u64, rank: u32) -> PathBuf {
    small_job_dir(dir)
        .join(epoch_dir_name(epoch))
        .join(rank_file_name(rank))
}

/// Restarts `SMALL` from `dir` and checks it restored `epoch` and ends bit-exact.
fn assert_restarts_from(dir: &Path, epoch: u64) {
    let out = run(4, SMALL, &restart_env(dir));
    let err = stderr(&out);
    assert_eq!(checksum(&out), reference(SMALL), "{err}");
    let expect = format!("restored epoch {epoch} at iteration {}", epoch * 100);
    assert!(err.contains(&expect), "wanted {expect:?} in:\n{err}");
}

#[test]
fn checksum_is_the_same_for_any_rank_count() {
    let _g = mpi_lock();
    let four = reference(SMALL);
    for np in [1, 2] {
        assert_eq!(checksum(&run(np, SMALL, &[])), four, "{np} ranks");
    }
}

#[test]
fn committed_epochs_inspect_clean() {
    let _g = mpi_lock();
    let dir = committed_run();
    let report = rankmig::checkpoint::inspect(dir.path(), true).expect("inspect");
    assert_eq!(report.epochs().count(), 5, "{report}");
    assert!(!report.has_corruption(), "{report}");
    for e in report.epochs() {
        assert!(e.is_complete() && e.files.len() == 4, "{report}");
    }
}

#[test]
fn flipped_byte_skips_to_previous_epoch() {
    let _g = mpi_lock();
    let dir = committed_run();
    let path = rank_file(dir.path(), 5, 2);
    let mut bytes = fs::read(&path).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    fs::write(&path, bytes).expect("write");
    assert_restarts_from(dir.path(), 4);
}

#[test]
fn truncated_file_skips_to_previous_epoch() {
    let _g = mpi_lock();
    let dir = committed_run();
    let f = fs::OpenOptions::new()
        .write(true)
        .open(rank_file(dir.path(), 5, 1))
        .expect("open");
    f.set_len(1000).expect("truncate");
    assert_restarts_from(dir.path(), 4);
}

#[test]
fn missing_rank_file_skips_to_previous_epoch() {
    let _g = mpi_lock();
    let dir = committed_run();
    fs::remove_file(rank_file(dir.path(), 5, 3)).expect("remove");
    assert_restarts_from(dir.path(), 4);
}

#[test]
fn missing_commit_marker_skips_to_previous_epoch() {
    let _g = mpi_lock();
    let dir = committed_run();
    fs::remove_file(
        small_job_dir(dir.path())
            .join(epoch_dir_name(5))
            .join(COMMIT_MARKER),
    )
    .expect("remove");
    // and a damaged epoch 4 on one rank only: all ranks must agree on epoch 3
    let f = fs::OpenOptions::new()
        .write(true)
        .open(rank_file(dir.path(), 4, 0))
        .expect("open");
    f.set_len(100).expect("truncate");
    assert_restarts_from(dir.path(), 3);
}

#[test]
fn no_valid_epoch_left_is_a_clear_error() {
    let _g = mpi_lock();
    let dir = committed_run();
    for epoch in 1..=5 {
        fs::remove_file(rank_file(dir.path(), epoch, epoch as u32 % 4)).expect("remove");
    }
    let out = run(4, SMALL, &restart_env(dir.path()));
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("no usable checkpoint"), "{err}");
}

#[test]
fn four_rank_checkpoint_is_refused_by_eight_ranks() {
    let _g = mpi_lock();
    let dir = committed_run();
    let out = run(8, SMALL, &restart_env(dir.path()));
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("written by a 4-rank job, this job has 8 ranks"),
        "{err}"
    );
}

/// Issue 22's case: job A (2 ranks) commits epochs, job B (4 ranks, another grid
/// size, so another job name) commits more in the same directory, then A restarts:
/// it restores its own newest epoch and ends bit-exact, and each job's epochs are
/// numbered from 1 in its own directory, B's untouched by A's restart.
#[test]
fn two_jobs_in_one_directory_each_restart_from_their_own_newest_epoch() {
    let _g = mpi_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let a_args = ["--size", "96", "--iters", "300"];
    let b_args = ["--size", "64", "--iters", "500"];
    let every = |n: &str| {
        vec![
            dir_env(dir.path()),
            ("RANKMIG_CKPT_EVERY", n.into()),
            ("RANKMIG_CKPT_KEEP", "20".into()),
        ]
    };
    let numbers = |job: &str| -> Vec<u64> {
        let report = rankmig::checkpoint::inspect(dir.path(), true).expect("inspect");
        assert!(!report.has_corruption(), "{report}");
        report
            .job(job)
            .map(|j| j.epochs.iter().map(|e| e.epoch).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        checksum(&run(2, &a_args, &every("100"))),
        reference(&a_args)
    );
    assert_eq!(checksum(&run(4, &b_args, &every("50"))), reference(&b_args));
    assert_eq!(numbers("jacobi-n96"), [3, 2, 1]);
    assert_eq!(numbers("jacobi-n64"), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    let out = run(2, &a_args, &restart_env(dir.path()));
    let err = stderr(&out);
    assert_eq!(checksum(&out), reference(&a_args), "{err}");
    assert!(err.contains("restored epoch 3 at iteration 300"), "{err}");
    assert_eq!(numbers("jacobi-n64"), [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
}

/// SIGKILLs the children of `mpirun` (the ranks; each is in its own process group).
fn kill_ranks(mpirun_pid: u32) {
    for rank in children_of(mpirun_pid) {
        let _ = Command::new("kill")
            .args(["-KILL", &rank.to_string()])
            .status();
    }
}

fn any_committed(dir: &Path) -> bool {
    epoch_dirs(dir).any(|d| d.join(COMMIT_MARKER).exists())
}

fn write_in_progress(dir: &Path) -> bool {
    epoch_dirs(dir).any(|d| {
        fs::read_dir(d).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        })
    })
}

/// The epoch directories of every job directory of `dir`.
fn epoch_dirs(dir: &Path) -> impl Iterator<Item = PathBuf> {
    let entries = |d: PathBuf| {
        fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
    };
    let named = |prefix: &'static str| {
        move |p: &PathBuf| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        }
    };
    entries(dir.to_path_buf())
        .filter(named("job-"))
        .flat_map(entries)
        .filter(named("epoch-"))
}

/// Starts a checkpointing run, waits until `ready(dir)` (after a first commit), kills
/// it, restarts it and compares with the uninterrupted checksum.
fn kill_and_restart(args: &[&str], every: &str, ready: impl Fn(&Path) -> bool) {
    let want = reference(args);
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [dir_env(dir.path()), ("RANKMIG_CKPT_EVERY", every.into())];
    let mut child = mpirun(4, args, &env)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mpirun starts");
    let start = Instant::now();
    let mut killed = false;
    while start.elapsed() < Duration::from_secs(30) {
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        if any_committed(dir.path()) && ready(dir.path()) {
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    kill_ranks(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert!(killed, "the run ended before it could be killed");
    let mut env = restart_env(dir.path());
    env.push(("RANKMIG_CKPT_EVERY", every.into()));
    let out = run(4, args, &env);
    let err = stderr(&out);
    assert_eq!(checksum(&out), want, "{err}");
    assert!(err.contains("restored epoch"), "{err}");
    eprintln!(
        "{}",
        err.lines()
            .filter(|l| l.contains("restored"))
            .collect::<String>()
    );
}

#[test]
fn sigkill_at_random_iteration_then_restart_is_bit_exact() {
    let _g = mpi_lock();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let delay =
        Duration::from_millis(rand_chacha::ChaCha8Rng::seed_from_u64(seed).gen_range(0..400));
    eprintln!("kill seed {seed}: {delay:?} after the first commit");
    let first_commit = OnceLock::new();
    kill_and_restart(&["--size", "256", "--iters", "10000"], "500", |_| {
        first_commit.get_or_init(Instant::now).elapsed() >= delay
    });
}

#[test]
fn sigkill_during_checkpoint_write_then_restart_is_bit_exact() {
    let _g = mpi_lock();
    kill_and_restart(&["--size", "2048", "--iters", "60"], "2", write_in_progress);
}

#[test]
fn time_interval_saves_at_the_same_iteration_on_every_rank() {
    let _g = mpi_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let args = ["--size", "256", "--iters", "3000"];
    let env = [
        dir_env(dir.path()),
        ("RANKMIG_CKPT_SECONDS", "0.05".into()),
        ("RANKMIG_CKPT_KEEP", "1000".into()),
    ];
    assert_eq!(checksum(&run(4, &args, &env)), reference(&args));
    let report = rankmig::checkpoint::inspect(dir.path(), true).expect("inspect");
    assert!(report.epochs().next().is_some(), "{report}");
    assert!(!report.has_corruption(), "{report}");
    for e in report.epochs() {
        assert!(e.is_complete() && e.files.len() == 4, "{report}");
        let calls: Vec<u64> = e
            .files
            .iter()
            .filter_map(|f| f.header.as_ref().map(|h| h.calls))
            .collect();
        assert!(
            calls.iter().all(|&c| c == calls[0]),
            "epoch {}: {calls:?}",
            e.epoch
        );
    }
}

/// The partner copy of a node-local save travels in the background: over MPI, with 2
/// real ranks, rank 0's exchange of 8 MiB starts and returns while rank 1 has not
/// started its own (it waits at a barrier rank 0 enters afterwards), is not yet done,
/// and ends once rank 1 takes part; each rank then holds the other's bytes
/// (`examples/partner_exchange.rs`). An exchange that waited for its partner would
/// hang there, and the bound of [`crate::support::job::Job::finish`] fail the test.
#[test]
fn a_partner_exchange_starts_without_waiting_for_the_partner_and_delivers_every_byte() {
    let _g = mpi_lock();
    let program = crate::support::example("partner_exchange");
    let mut cmd = crate::support::plain_launch_with(2, &program, &["--mib", "8"], &[]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let job = crate::support::job::Job(Some(cmd.spawn().expect("the launcher starts")));
    let out = job
        .finish()
        .unwrap_or_else(|hung| panic!("the exchange did not end: {}", hung.0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert_eq!(
        text.matches("exchange started before the partner's: ok")
            .count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.matches(&format!("received {} bytes: ok", 8 << 20))
            .count(),
        2,
        "{text}"
    );
}
