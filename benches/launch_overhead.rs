//! What being migratable costs a job that does not migrate: the same Jacobi program
//! (`examples/jacobi`, no edits) under `rankmig run` and under plain `mpirun`, same
//! ranks, same placement (2 ranks on cores 0 and 1 of this host).
//!
//! - `jacobi-64x60000`: 60 000 iterations of a 64×64 grid, about 10 µs of work per
//!   iteration: dominated by the halo exchange and by `checkpoint!` itself.
//! - `jacobi-512x3000`: 3 000 iterations of a 512×512 grid: dominated by compute.
//!
//! The measured time is the program's own compute loop ("N iterations done in T s",
//! printed by rank 0), so `mpirun`'s start-up and rankmig's planning are not in it;
//! the whole launch (wall time of the command) is printed apart.
//!
//! Criterion measures each launcher of a case one after the other, so a drift of the
//! machine between the two shows as a difference. The ratio printed at the end comes
//! from `RANKMIG_BENCH_PAIRS` (default 20) extra pairs run interleaved (mpirun first in
//! even pairs, rankmig first in odd ones): the median of `rankmig run` over the median of
//! `mpirun`, target ≤ 1.05, and the quartiles of the per-pair ratios (this machine's
//! noise: on a 2-core VM single runs vary by ±15%).
//!
//! `cargo bench --bench launch_overhead`. Needs `mpirun`; without it nothing is
//! measured. In criterion's test mode (`-- --test`, used when CI builds benches) one
//! run of each is made and checked.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};

/// Ranks of every run.
const RANKS: usize = 2;

/// One Jacobi configuration.
struct Case {
    size: usize,
    iters: usize,
}

const CASES: [Case; 2] = [
    Case {
        size: 64,
        iters: 60_000,
    },
    Case {
        size: 512,
        iters: 3_000,
    },
];

/// How the program is launched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Launcher {
    Mpirun,
    Rankmig,
}

impl Launcher {
    fn name(self) -> &'static str {
        match self {
            Launcher::Mpirun => "mpirun",
            Launcher::Rankmig => "rankmig-run",
        }
    }
}

/// Compute-loop and wall times of one run.
struct Timing {
    compute: Duration,
    wall: Duration,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn built() -> bool {
    Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--example", "jacobi"])
        .args(["--bin", "rankmig"])
        .current_dir(root())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the case once; panics with the program's output if it fails.
fn run_once(launcher: Launcher, case: &Case, dir: &Path) -> Timing {
    let jacobi = root().join("target/release/examples/jacobi");
    let mut cmd = match launcher {
        Launcher::Mpirun => {
            let mut c = Command::new("mpirun");
            c.args(["-np", &RANKS.to_string(), "--bind-to", "core"])
                .args(["--map-by", "core"]);
            c
        }
        Launcher::Rankmig => {
            let run_dir = dir.join("run");
            let _ = std::fs::remove_dir_all(&run_dir);
            let mut c = Command::new(root().join("target/release/rankmig"));
            c.args(["run", "-n", &RANKS.to_string(), "--availability"])
                .arg(dir.join("av"))
                .arg("--run-dir")
                .arg(&run_dir)
                .arg("--");
            c
        }
    };
    cmd.arg(&jacobi)
        .args(["--size", &case.size.to_string()])
        .args(["--iters", &case.iters.to_string()])
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let start = Instant::now();
    let out = cmd.output().expect("launch");
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{} failed: {stderr}", launcher.name());
    let compute = compute_seconds(&stderr)
        .unwrap_or_else(|| panic!("no 'iterations done in' line from jacobi: {stderr}"));
    Timing {
        compute: Duration::from_secs_f64(compute),
        wall,
    }
}

/// The seconds of jacobi's line `jacobi: N iterations done in T s, ...`.
fn compute_seconds(stderr: &str) -> Option<f64> {
    let line = stderr.lines().find(|l| l.contains("iterations done in"))?;
    let after = line.split("done in ").nth(1)?;
    after.split_whitespace().next()?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
    }
}

fn launch_overhead(c: &mut Criterion) {
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!("launch_overhead: mpirun not found, nothing measured");
        return;
    }
    assert!(built(), "cargo build --release --example jacobi failed");
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("av"), format!("n1 {RANKS}\n")).expect("availability");
    // (case, launcher) → every compute and wall time measured, for the ratio.
    let seen: RefCell<Vec<(usize, Launcher, Timing)>> = RefCell::new(Vec::new());
    let mut group = c.benchmark_group("launch_overhead");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for (index, case) in CASES.iter().enumerate() {
        let id = format!("jacobi-{}x{}", case.size, case.iters);
        for launcher in [Launcher::Mpirun, Launcher::Rankmig] {
            group.bench_function(BenchmarkId::new(launcher.name(), &id), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = run_once(launcher, case, dir.path());
                        total += t.compute;
                        seen.borrow_mut().push((index, launcher, t));
                    }
                    total
                })
            });
        }
    }
    group.finish();
    if std::env::args().any(|a| a == "--test") {
        summarise(&seen.into_inner(), "criterion test mode, one run each");
        return;
    }
    let pairs: usize = std::env::var("RANKMIG_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut paired = Vec::new();
    for (index, case) in CASES.iter().enumerate() {
        for pair in 0..pairs {
            let mut order = [Launcher::Mpirun, Launcher::Rankmig];
            if pair % 2 == 1 {
                order.reverse();
            }
            for launcher in order {
                paired.push((index, launcher, run_once(launcher, case, dir.path())));
            }
        }
    }
    summarise(&paired, &format!("{pairs} interleaved pairs per case"));
}

/// Prints the medians and the ratio rankmig run / mpirun of each case.
fn summarise(seen: &[(usize, Launcher, Timing)], how: &str) {
    println!("launch_overhead: medians of {how}");
    for (index, case) in CASES.iter().enumerate() {
        let pick = |launcher: Launcher, f: fn(&Timing) -> Duration| {
            median(
                seen.iter()
                    .filter(|(i, l, _)| *i == index && *l == launcher)
                    .map(|(_, _, t)| f(t).as_secs_f64())
                    .collect(),
            )
        };
        let (mpirun, rankmig) = (
            pick(Launcher::Mpirun, |t| t.compute),
            pick(Launcher::Rankmig, |t| t.compute),
        );
        let (mpirun_wall, rankmig_wall) = (
            pick(Launcher::Mpirun, |t| t.wall),
            pick(Launcher::Rankmig, |t| t.wall),
        );
        println!(
            "  jacobi-{}x{}: compute loop mpirun {:.3} s, rankmig run {:.3} s, ratio {:.3} (target <= 1.05); whole launch {:.3} s vs {:.3} s",
            case.size,
            case.iters,
            mpirun,
            rankmig,
            rankmig / mpirun,
            mpirun_wall,
            rankmig_wall
        );
        let ratios = pair_ratios(seen, index);
        if ratios.len() > 1 {
            println!(
                "    per-pair ratios: quartiles {:.3} / {:.3} / {:.3} over {} pairs",
                quantile(&ratios, 0.25),
                quantile(&ratios, 0.5),
                quantile(&ratios, 0.75),
                ratios.len()
            );
        }
    }
}

/// rankmig / mpirun compute time of each pair of consecutive runs of case `index`.
fn pair_ratios(seen: &[(usize, Launcher, Timing)], index: usize) -> Vec<f64> {
    let runs: Vec<&(usize, Launcher, Timing)> =
        seen.iter().filter(|(i, _, _)| *i == index).collect();
    let mut ratios: Vec<f64> = runs
        .chunks_exact(2)
        .filter_map(|pair| {
            let of = |l: Launcher| {
                pair.iter()
                    .find(|(_, x, _)| *x == l)
                    .map(|(_, _, t)| t.compute.as_secs_f64())
            };
            Some(of(Launcher::Rankmig)? / of(Launcher::Mpirun)?)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios
}

/// The `q` quantile of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len().saturating_sub(1);
    sorted
        .get(((last as f64) * q).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    launch_overhead(&mut criterion);
    criterion.final_summary();
}
