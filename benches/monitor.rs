//! What counting costs: the Jacobi example's halo-exchange loop with the interposed
//! counters on and off (`RANKMIG_MONITOR=off`), alternated in the same run, medians of
//! `RANKMIG_BENCH_RUNS` (default 5) runs of 4 ranks each.
//!
//! Not a criterion bench: the work runs under `mpirun`. `cargo bench --bench monitor --
//! --test` only checks that the bench starts.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        println!("monitor bench: test mode, nothing measured");
        return;
    }
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!("monitor bench: mpirun not found, nothing measured");
        return;
    }
    let runs: usize = std::env::var("RANKMIG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--example", "jacobi"])
        .current_dir(&root)
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "cargo build --release --example jacobi failed");
    let app = root.join("target/release/examples/jacobi");
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        off.extend(loop_seconds(&app, false));
        on.extend(loop_seconds(&app, true));
    }
    let (on, off) = (median(&mut on), median(&mut off));
    println!(
        "monitor bench: 4 ranks, 256x256 Jacobi, 20000 halo-exchange iterations, {runs} runs each"
    );
    println!("  counting off  {:>8.3} s (median)", off);
    println!("  counting on   {:>8.3} s (median)", on);
    println!(
        "  overhead      {:>+8.2} % (on / off − 1)",
        100.0 * (on / off - 1.0)
    );
}

/// Seconds of the main loop, as the example reports it.
fn loop_seconds(app: &std::path::Path, counting: bool) -> Option<f64> {
    let dir = tempfile::tempdir().ok()?;
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .env("RANKMIG_CKPT_DIR", dir.path())
        .env("RANKMIG_MONITOR", if counting { "on" } else { "off" })
        .arg(app)
        .args(["--size", "256", "--iters", "20000"])
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find_map(|l| l.split("done in ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|s| s.parse().ok())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
