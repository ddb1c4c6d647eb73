//! A checkpoint restartable as soon as it is written (issue 44), on a C program written
//! apart from the project (`tests/c/allreduce_sum.c`: one `MPI_Allreduce` per
//! iteration) run by `rankmig run --auto-restart 1` with the real launcher on 4 ranks
//! of logical nodes n1:2 n2:2, `RANKMIG_CKPT_SECONDS=10`: the first epoch is taken
//! early and committed within 2 s of its last rank file (file times, not sleeps), a
//! rank SIGKILLed 3 s after that file restarts the job from that epoch, which ends with
//! a plain run's checksum; `processes.csv` records the killed rank and the restart,
//! and the run directory holds the communication matrix without `RANKMIG_MATRIX_OUT`.
#![cfg(feature = "mpi")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use crate::support;
use crate::support::job::{Hung, Job, retry_on_hang, set_availability, wait_for};
use crate::support::{mpi_lock, rankmig};

const RANKS: usize = 4;
/// Iterations of at least 1 ms each: at least 6 s of work remain after the first
/// checkpoint (taken about 2 s in), more than the 3 s before the kill.
const ITERS: &str = "8000";
const PAUSE_US: &str = "1000";

/// The program, built once with `mpicc` against `librankmig.so`, as a user does.
fn program() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| support::build_c_program("tests/c/allreduce_sum.c", "allreduce-sum", &[]))
}

/// The epoch directories of the job's checkpoint directory, oldest first.
fn epoch_dirs(ckpt: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(ckpt)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("job-"))
        .flat_map(|job| fs::read_dir(job.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("epoch-"))
        })
        .collect();
    dirs.sort();
    dirs
}

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The newest modification time of the epoch's rank files.
fn last_rank_file(epoch: &Path) -> SystemTime {
    (0..RANKS as u32)
        .map(|r| mtime(&epoch.join(rankmig::checkpoint::epoch::rank_file_name(r))))
        .max()
        .expect("ranks")
}

/// The rows of `processes.csv`, split at commas.
fn rows(run: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(run.join("processes.csv"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

#[test]
fn a_rank_killed_after_the_first_epoch_restarts_from_it() {
    let _lock = mpi_lock();
    retry_on_hang(killed_after_first_epoch);
}

/// The time of the last rank file of `epoch` and how long after it the epoch's COMMIT
/// came, asserting that it came when the files were written: a COMMIT older than a
/// rank file of its epoch would be a torn epoch committed (a failure, not a lag of 0),
/// and it must come before the next save (the interval is 10 s), not at it, whatever
/// the machine's speed.
fn committed_when_written(epoch: &Path) -> (SystemTime, Duration) {
    let written = last_rank_file(epoch);
    let committed = mtime(&epoch.join("COMMIT"));
    let lag = committed.duration_since(written).unwrap_or_else(|e| {
        panic!(
            "COMMIT of {} is {:?} older than its last rank file",
            epoch.display(),
            e.duration()
        )
    });
    assert!(
        lag < Duration::from_secs(CKPT_SECONDS),
        "COMMIT of {} came {lag:?} after its last rank file, not before the next save ({CKPT_SECONDS} s)",
        epoch.display()
    );
    (written, lag)
}

/// Seconds between two checkpoints of the job.
const CKPT_SECONDS: u64 = 10;

fn killed_after_first_epoch() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    set_availability(d, "n1 2\nn2 2\n");
    let mut cmd = rankmig();
    cmd.current_dir(d)
        .env("RANKMIG_CKPT_SECONDS", CKPT_SECONDS.to_string())
        .env_remove("RANKMIG_MATRIX_OUT")
        .env_remove("RANKMIG_CKPT_FIRST_SECONDS")
        .args(["run", "-n", "4", "--availability", "av", "--run-dir", "run"])
        .args(["--auto-restart", "1", "--"])
        .arg(program())
        .args(["--iters", ITERS, "--pause-us", PAUSE_US])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let job = Job(Some(cmd.spawn().expect("rankmig run starts")));
    let ckpt = run.join("ckpt");
    wait_for("the first committed epoch", || {
        epoch_dirs(&ckpt)
            .first()
            .is_some_and(|e| e.join("COMMIT").exists())
    })?;
    let first = epoch_dirs(&ckpt).remove(0);
    let (written, lag) = committed_when_written(&first);
    let first_epoch: u64 = first
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("epoch-"))
        .and_then(|n| n.parse().ok())
        .expect("epoch-N");
    // 3 s after the last rank file, by the file's own clock.
    let kill_at = written + Duration::from_secs(3);
    wait_for("3 s after the first epoch's last rank file", || {
        SystemTime::now() >= kill_at
    })?;
    let victim = rows(&run)
        .iter()
        .rev()
        .find(|r| {
            r.first().map(String::as_str) == Some("2")
                && r.get(4).map(String::as_str) == Some("start")
        })
        .and_then(|r| r.get(1)?.parse::<i32>().ok())
        .expect("rank 2 started");
    // SAFETY: kill(2) on a rank of the job this test started.
    unsafe { libc::kill(victim, libc::SIGKILL) };
    let out = job.finish()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "restarted from checkpoint epoch {first_epoch}, iteration "
        )),
        "{stderr}"
    );
    let unused = std::env::temp_dir().join("rankmig-unused-ckpt");
    let env = [("RANKMIG_CKPT_DIR".to_owned(), unused.display().to_string())];
    support::assert_same_as_plain_run(&out, RANKS, program(), &["--pause-us", "0"], &env);
    let rows = rows(&run);
    eprintln!(
        "COMMIT {lag:?} after the last rank file of {}; rows:",
        first.display()
    );
    for r in &rows {
        eprintln!("  {}", r.join(","));
    }
    eprintln!("{stderr}");
    let restarted: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r.get(4).map(String::as_str) == Some("restarted"))
        .collect();
    assert_eq!(restarted.len(), RANKS, "{rows:?}");
    for r in &restarted {
        assert_eq!(r.get(7), Some(&first_epoch.to_string()), "{r:?}");
        assert!(r.get(6).is_some_and(|t| t.parse::<f64>().is_ok()), "{r:?}");
    }
    if stderr.contains("rank 2 on n2 was killed by signal 9") {
        let killed = rows
            .iter()
            .find(|r| r.get(4).map(String::as_str) == Some("killed"));
        let killed = killed.unwrap_or_else(|| panic!("no killed row: {rows:?}"));
        assert_eq!(
            (killed[0].as_str(), killed[1].as_str(), killed[2].as_str()),
            ("2", victim.to_string().as_str(), "n2"),
            "{killed:?}"
        );
    }
    let matrix = rankmig::matrix::CommMatrix::load(
        &run.join("matrix.mat"),
        rankmig::matrix::MatrixFormat::Dense,
    )
    .expect("the run directory's matrix");
    assert_eq!(matrix.order(), RANKS);
    assert!(matrix.total() > 0.0, "an all-zero matrix");
    Ok(())
}
