//! A Rust code with a derived communicator (`examples/split_sum.rs`: even and odd
//! halves from `MPI_Comm_split`, rebuilt when `Job::comm_generation` changes), migrated
//! live on logical nodes under real `mpirun`: the result is that of a plain run.
#![cfg(feature = "mpi")]

use std::fs;
use std::process::Stdio;
use std::time::Duration;

use crate::support;
use crate::support::{example, mpi_lock, rankmig, wait_until};

/// How long a step of the job (its start, the migration, iterations after it) may take.
const JOB_WAIT: Duration = Duration::from_secs(120);

#[test]
fn a_split_communicator_is_rebuilt_after_a_migration() {
    let _lock = mpi_lock();
    let program = example("split_sum");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stop = d.join("stop");
    fs::write(d.join("av"), "n1 2\nn2 2\n").unwrap();
    let child = rankmig()
        .current_dir(d)
        .args(["run", "-n", "4", "-a", "av", "--run-dir", "run"])
        .args(["--check-every", "200", "--settle", "0", "--"])
        .arg(&program)
        .args(["--iters", "100000000", "--stop-file"])
        .arg(&stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let run = d.join("run");
    wait_until("the job to start", JOB_WAIT, || {
        run.join("iterations/rank-0.csv").exists()
    });
    fs::write(d.join("av.tmp"), "n1 2\nn3 2\n").unwrap();
    fs::rename(d.join("av.tmp"), d.join("av")).unwrap();
    let records = || fs::read_to_string(run.join("reconfigurations.jsonl")).unwrap_or_default();
    wait_until("the migration", JOB_WAIT, || !records().is_empty());
    assert!(
        records().contains("\"outcome\":\"migrated\""),
        "{}",
        records()
    );
    // The job goes on past the migration (a stale half would hang it).
    let size = || fs::metadata(run.join("iterations/rank-0.csv")).map_or(0, |m| m.len());
    let after = size();
    wait_until("iterations after the migration", JOB_WAIT, || {
        size() > after + 1000
    });
    fs::write(&stop, "").unwrap();
    let out = child.wait_with_output().expect("rankmig run ends");
    let ckpt = d.join("plain-ckpt").display().to_string();
    let env = [("RANKMIG_CKPT_DIR".to_owned(), ckpt)];
    support::assert_same_as_plain_run(&out, 4, &program, &[], &env);
}
