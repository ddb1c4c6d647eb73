//! The run directory's communication matrix while the job runs (issue 44, item 4):
//! under `rankmig run` with the real launcher and 4 ranks of `examples/jacobi.rs` (a
//! halo exchange between neighbouring ranks), rank 0 writes `RUN_DIR/matrix.mat` at
//! the availability checks, without `RANKMIG_MATRIX_OUT`, before the job ends: the
//! test waits for the file while the job is still running, reads it and stops the job
//! through the example's stop file; `rankmig report` then names it.
#![cfg(feature = "mpi")]

use std::fs;
use std::path::Path;
use std::process::Stdio;

use rankmig::matrix::{CommMatrix, MatrixFormat};

use crate::support::job::{Hung, Job, retry_on_hang, set_availability, wait_for};
use crate::support::{jacobi, mpi_lock, rankmig};

const RANKS: usize = 4;

/// True when `run` records the end of a rank (`finish` or `end` in `processes.csv`).
fn a_rank_ended(run: &Path) -> bool {
    fs::read_to_string(run.join("processes.csv"))
        .unwrap_or_default()
        .lines()
        .any(|l| matches!(l.split(',').nth(4), Some("finish" | "end")))
}

/// The matrix in `path` when it reads and counts traffic both ways between every pair
/// of neighbouring ranks.
fn halo_matrix(path: &Path) -> Option<CommMatrix> {
    let m = CommMatrix::load(path, MatrixFormat::Dense).ok()?;
    let halo = (0..RANKS - 1).all(|r| m.get(r, r + 1) > 0.0 && m.get(r + 1, r) > 0.0);
    (m.order() == RANKS && halo).then_some(m)
}

#[test]
fn the_run_directory_holds_the_matrix_while_the_job_runs() {
    let _lock = mpi_lock();
    retry_on_hang(matrix_while_running);
}

fn matrix_while_running() -> Result<(), Hung> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    let stop = d.join("stop");
    set_availability(d, "n1 2\nn2 2\n");
    let mut cmd = rankmig();
    cmd.current_dir(d)
        .args(["run", "-n", "4", "--availability", "av", "--run-dir", "run"])
        .args(["--check-interval", "0.2", "--"])
        .arg(jacobi())
        .args(["--size", "128", "--iters", "100000000", "--stop-file"])
        .arg(&stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut job = Job(Some(cmd.spawn().expect("rankmig run starts")));
    let path = run.join("matrix.mat");
    wait_for("the run directory's matrix", || path.exists())?;
    let running = job.0.as_mut().expect("job").try_wait().expect("wait");
    assert!(
        running.is_none() && !a_rank_ended(&run),
        "the job had ended when matrix.mat appeared"
    );
    // The first write may come before the first halo exchange counted: it is written
    // again at later checks (the job runs until the stop file).
    wait_for("a matrix with the halo traffic", || {
        halo_matrix(&path).is_some()
    })?;
    let live = halo_matrix(&path).expect("read just now");
    assert!(
        !a_rank_ended(&run),
        "the job ended before the matrix was read"
    );
    fs::write(&stop, "").expect("stop file");
    let out = job.finish()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = halo_matrix(&path).expect("the matrix written at the end");
    assert!(
        last.total() >= live.total(),
        "the matrix at the end counts less ({}) than while the job ran ({})",
        last.total(),
        live.total()
    );
    let report = rankmig()
        .args(["report"])
        .arg(&run)
        .output()
        .expect("rankmig report runs");
    let text = String::from_utf8_lossy(&report.stdout);
    let named = format!("communication matrix: {}", path.display());
    assert!(
        report.status.success() && text.contains(&named) && text.contains("TreeMatch's format"),
        "{text}"
    );
    Ok(())
}
