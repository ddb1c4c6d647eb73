//! The live communication matrix and the rank bindings, with real `mpirun`, on the
//! Jacobi example (each rank exchanges one row of N doubles with the rank above and the
//! rank below at every iteration).
#![cfg(feature = "mpi")]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::{checksum, jacobi, mpi_lock};
use rankmig::matrix::{CommMatrix, MatrixFormat};

const N: usize = 64;
const ITERS: usize = 100;

/// The halo pattern: rank r sends ITERS rows of N doubles to r−1 and to r+1.
fn expected_halo(ranks: usize) -> CommMatrix {
    let bytes = (ITERS * N * 8) as f64;
    let triples = (0..ranks).flat_map(|r| {
        let up = (r > 0).then(|| (r, r - 1, bytes));
        let down = (r + 1 < ranks).then(|| (r, r + 1, bytes));
        up.into_iter().chain(down)
    });
    CommMatrix::from_triples(ranks, triples)
}

fn args() -> Vec<String> {
    ["--size", &N.to_string(), "--iters", &ITERS.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn live_matrix_of_a_halo_exchange_is_exact_and_ranks_are_bound() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("av"), "n1 2\nn2 2\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .current_dir(d)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RANKMIG_MATRIX_OUT", d.join("live.mat"))
        .args([
            "run",
            "-n",
            "4",
            "--availability",
            "av",
            "--run-dir",
            "run",
            "--",
        ])
        .arg(jacobi())
        .args(args())
        .output()
        .unwrap();
    checksum(&out);
    let live = CommMatrix::load(&d.join("live.mat"), MatrixFormat::Dense).unwrap();
    assert_eq!(live, expected_halo(4));

    // Each rank bound itself to one real core of its logical node.
    let real_cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let procs = fs::read_to_string(d.join("run/processes.csv")).unwrap();
    for line in procs.lines().filter(|l| l.contains(",start,")) {
        let cpus = line.rsplit(',').next().unwrap();
        if real_cores > 1 {
            assert!(
                !cpus.contains('-') && !cpus.contains(';'),
                "{line}: not bound to one CPU"
            );
        }
    }
}

/// The `E` (user point-to-point) lines of Open MPI's monitoring dumps.
fn openmpi_point_to_point(dir: &Path, ranks: usize) -> CommMatrix {
    let mut triples = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let text = fs::read_to_string(entry.path()).unwrap();
        for line in text.lines().filter(|l| l.starts_with("E\t")) {
            let f: Vec<&str> = line.split('\t').collect();
            let bytes: f64 = f[3].trim_end_matches(" bytes").parse().unwrap();
            triples.push((f[1].parse().unwrap(), f[2].parse().unwrap(), bytes));
        }
    }
    CommMatrix::from_triples(ranks, triples)
}

#[test]
fn live_matrix_agrees_with_open_mpi_monitoring_on_point_to_point() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prof = d.join("prof");
    fs::create_dir(&prof).unwrap();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .args(["--mca", "pml_monitoring_enable", "2"])
        .args(["--mca", "pml_monitoring_enable_output", "3"])
        .arg("--mca")
        .arg("pml_monitoring_filename")
        .arg(prof.join("jacobi"))
        .env("RANKMIG_MATRIX_OUT", d.join("live.mat"))
        .env("RANKMIG_CKPT_DIR", d.join("ckpt"))
        .arg(jacobi())
        .args(args())
        .output()
        .unwrap();
    checksum(&out);
    let live = CommMatrix::load(&d.join("live.mat"), MatrixFormat::Dense).unwrap();
    let openmpi = openmpi_point_to_point(&prof, 4);
    assert_eq!(
        live, openmpi,
        "rankmig's counts differ from Open MPI's monitoring"
    );
    assert_eq!(live, expected_halo(4));
}

#[test]
fn every_kind_of_send_is_counted_exactly() {
    let _lock = mpi_lock();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .arg(common::example("monitor_probe"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = 4usize;
    for r in 0..n {
        let down = (r + n - 1) % n; // ring (3 x 1000), immediate (200), sendrecv to r+3 (16)
        let across = (r + 2) % n; // persistent, started 5 times (5 x 40)
        for j in 0..n {
            let p2p = v["p2p"][r][j].as_f64().unwrap();
            let all = v["all"][r][j].as_f64().unwrap();
            let expected = if j == down {
                3216.0
            } else if j == across {
                200.0
            } else {
                0.0
            };
            assert_eq!(p2p, expected, "point-to-point {r} -> {j}");
            let alltoall = if j == r { 0.0 } else { 8.0 };
            assert_eq!(all, expected + alltoall, "all traffic {r} -> {j}");
            // alpha = 0.5: the first decayed gather sees the pattern once, the second
            // half of it plus the pattern again.
            assert_eq!(v["decayed_once"][r][j].as_f64().unwrap(), all);
            assert_eq!(v["decayed_twice"][r][j].as_f64().unwrap(), 1.5 * all);
        }
    }
}
