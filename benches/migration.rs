//! Cost of one reconfiguration, measured live: 16 Jacobi ranks carrying 16 MiB of state
//! each all move from two logical nodes to two others (`rankmig run` on this machine).
//!
//! Prints the phases recorded by the job (scheduling, spawn, state transfer, rebuild),
//! medians over `RANKMIG_BENCH_RUNS` runs (default 3), and compares the state transfer
//! with a plain in-memory copy of the same 16 MiB measured in the same run.
//!
//! Not a criterion bench: the work runs under `mpirun`. `cargo bench --bench migration
//! -- --test` (criterion's test mode, used when CI builds benches) only checks that the
//! bench starts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rankmig::run_dir::record::{Reconfiguration, read_reconfigurations};

const RANKS: usize = 16;
/// 5792² doubles over 16 ranks = 362 rows of 5792 = 16.0 MiB per rank.
const SIZE: usize = 5792;
const STATE_BYTES: usize = SIZE * SIZE / RANKS * 8;

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        println!("migration bench: test mode, nothing measured");
        return;
    }
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!("migration bench: mpirun not found, nothing measured");
        return;
    }
    let runs: usize = std::env::var("RANKMIG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "--example",
            "jacobi",
            "--bin",
            "rankmig",
        ])
        .current_dir(&root)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        built,
        "cargo build --release --example jacobi --bin rankmig failed"
    );
    let mut records = Vec::new();
    let mut copies = Vec::new();
    for run in 0..runs {
        match one_run(&root) {
            Some(r) => records.push(r),
            None => println!("run {run}: no reconfiguration recorded"),
        }
        copies.push(memcpy_seconds(STATE_BYTES));
    }
    report(&records, &copies);
}

/// One `rankmig run`; returns the reconfiguration it recorded.
fn one_run(root: &Path) -> Option<Reconfiguration> {
    let dir = tempfile::tempdir().ok()?;
    let d = dir.path();
    std::fs::write(d.join("av"), "n1 8\nn2 8\n").ok()?;
    let mut child = Command::new(root.join("target/release/rankmig"))
        .current_dir(d)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
        .args(["--run-dir", "run", "--check-every", "2", "--"])
        .arg(root.join("target/release/examples/jacobi"))
        .args(["--size", &SIZE.to_string(), "--iters", "12"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    while !d.join("run/iterations/rank-0.csv").exists()
        && start.elapsed() < Duration::from_secs(300)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Both nodes vanish at once; two others take all 16 ranks.
    std::fs::write(d.join("av.tmp"), "n1 0\nn2 0\nn3 8\nn4 8\n").ok()?;
    std::fs::rename(d.join("av.tmp"), d.join("av")).ok()?;
    let _ = child.wait();
    read_reconfigurations(&d.join("run"))
        .ok()?
        .into_iter()
        .find(|r| r.outcome == "migrated")
}

/// Seconds to copy `bytes` once in memory (median of 5).
fn memcpy_seconds(bytes: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut times)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn report(records: &[Reconfiguration], copies: &[f64]) {
    let pick =
        |f: fn(&Reconfiguration) -> f64| median(&mut records.iter().map(f).collect::<Vec<_>>());
    let scheduling = pick(|r| r.scheduling);
    let spawn = pick(|r| r.phases.spawn);
    let transfer = pick(|r| r.phases.transfer);
    let rebuild = pick(|r| r.phases.rebuild);
    let total = scheduling + spawn + transfer + rebuild;
    let copy = median(&mut copies.to_vec());
    let moves = records.first().map_or(0, |r| r.moves);
    let state = records.first().map_or(0, |r| r.state_bytes);
    println!(
        "migration bench: {RANKS} ranks, {moves} moved, {:.1} MiB of state each, {} run(s) (medians)",
        state as f64 / 1048576.0,
        records.len()
    );
    println!(
        "  scheduling  {:>9.2} ms  ({:.2}% of the reconfiguration)",
        scheduling * 1e3,
        100.0 * scheduling / total
    );
    println!("  spawn       {:>9.2} ms", spawn * 1e3);
    let copies_all = copy * moves as f64;
    println!(
        "  transfer    {:>9.2} ms  ({moves} states of {:.1} MiB moving at once over TCP; {moves} in-memory copies of the same size: {:.2} ms, ratio {:.1})",
        transfer * 1e3,
        STATE_BYTES as f64 / 1048576.0,
        copies_all * 1e3,
        transfer / copies_all
    );
    println!("  rebuild     {:>9.2} ms", rebuild * 1e3);
    println!("  total       {:>9.2} ms", total * 1e3);
}
