//! What `rankmig run --cores-per-rank` costs a rank with threads (issue 51): the hybrid
//! example (`examples/c/jacobi.c` built with `-fopenmp`, sweep rows shared by the
//! OpenMP threads), 1 rank of `OMP_NUM_THREADS=2`, launched three ways in one run:
//!
//! - `rankmig-2-cores`: `rankmig run -n 1 --cores-per-rank 2 -a AV` on one logical node
//!   of 2 cores (`n1 2`): the rank is started through `rankmig bind-exec` on the 2 CPUs
//!   of `RUN_DIR/cpus-0.txt`;
//! - `mpirun-taskset`: the same program under plain `mpirun -np 1 --bind-to none
//!   taskset -c CPUS`, CPUS those `rankmig run` used (read from `cpus-0.txt` of a first
//!   run): the equivalent binding, without rankmig;
//! - `rankmig-1-core`: `rankmig run -n 1 --cores-per-rank 1` with the same 2 threads:
//!   the rank bound to one core, as every rank was before issue 51. Its two threads
//!   share that core and wait for each other at every sweep, so it runs
//!   [`ITERS_ONE_CORE`] iterations, not [`ITERS`].
//!
//! The measured figure is the compute loop's time per iteration, from the program's own
//! clock (`jacobi-c: N iterations done in T s`, rank 0, `MPI_Wtime` around the loop):
//! neither the launch nor rankmig's planning is in it (the whole launch is printed
//! apart). `OMP_WAIT_POLICY`, `GOMP_SPINCOUNT`, `OMP_PROC_BIND` and `OMP_PLACES` are
//! removed from the runs' environment: the OpenMP runtime's defaults in all three.
//!
//! Criterion measures each launch one after the other (its figures are per iteration of
//! the loop). The ratios printed at the end come from `RANKMIG_BENCH_PAIRS` (default 10)
//! extra rounds of the three, interleaved (each round in another of the 6 orders):
//! median of `rankmig-2-cores` over median of `mpirun-taskset`, target ≤ 1.05, and
//! `rankmig-1-core` over `mpirun-taskset` (what the one-core binding cost), with the
//! quartiles of the per-round ratios (this machine's noise). The load average is printed
//! before and after: two threads that meet at a barrier twice per iteration are slowed
//! by every other process on a 2-core machine.
//!
//! The program is built as a user builds it: `scripts/install.sh --prefix DIR
//! --library-only` into `target/release/bench-hybrid/prefix` (the cargo build of that
//! script reuses this target directory, like tests/it/support/prefix.rs does), then
//! `mpicc -O2 -fopenmp` with `pkg-config --cflags --libs rankmig` of that prefix.
//!
//! `cargo bench --bench hybrid`. Needs `mpirun`, `mpicc`, `pkg-config`, `taskset` and 2
//! CPUs; without them nothing is measured. In criterion's test mode (`-- --test`) one
//! run of each is made and checked (its CPUs, its threads, the checksum of the two
//! 2-core runs).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};

/// OpenMP threads of the rank.
const THREADS: usize = 2;
/// Grid size (N×N, 32 MiB per array of doubles): enough work per sweep (a few ms on
/// a quiet core) that the threads' two meetings per iteration do not make all of it.
const SIZE: usize = 2048;
/// Iterations of the runs on 2 cores: about 0.3-0.5 s of loop on a quiet 2-core
/// machine, 4 s at a load average of 11.
const ITERS: usize = 100;
/// Iterations of the run on one core: few, as it may be many times slower.
const ITERS_ONE_CORE: usize = 10;
/// Variables of the OpenMP runtime left at their defaults.
const OMP_DEFAULTS: [&str; 4] = [
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "OMP_PROC_BIND",
    "OMP_PLACES",
];

/// How the rank is launched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Launch {
    /// `rankmig run --cores-per-rank 2`.
    Rankmig2,
    /// `mpirun --bind-to none taskset -c CPUS`.
    Taskset,
    /// `rankmig run --cores-per-rank 1`.
    Rankmig1,
}

const LAUNCHES: [Launch; 3] = [Launch::Rankmig2, Launch::Taskset, Launch::Rankmig1];

impl Launch {
    fn name(self) -> &'static str {
        match self {
            Launch::Rankmig2 => "rankmig-2-cores",
            Launch::Taskset => "mpirun-taskset",
            Launch::Rankmig1 => "rankmig-1-core",
        }
    }

    fn iters(self) -> usize {
        match self {
            Launch::Rankmig1 => ITERS_ONE_CORE,
            _ => ITERS,
        }
    }

    /// The CPUs the program says it may use.
    fn cpus_available(self) -> usize {
        match self {
            Launch::Rankmig1 => 1,
            _ => THREADS,
        }
    }
}

/// One run: the loop's time per iteration, the launch's wall time, the checksum.
struct Timing {
    per_iter: Duration,
    wall: Duration,
    checksum: String,
}

/// What every run needs.
struct Setup {
    rankmig: PathBuf,
    program: PathBuf,
    /// Holds the availability file and the run directories.
    dir: tempfile::TempDir,
    /// The CPUs of `rankmig run --cores-per-rank 2`'s rank (`cpus-0.txt`), e.g. `0-1`.
    cpus: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/release` (the directory of the `rankmig` that cargo built for this bench).
fn release_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_rankmig"))
        .parent()
        .expect("target/release")
        .to_path_buf()
}

/// What is missing on this machine for the bench, if anything.
fn missing() -> Option<String> {
    for (tool, arg) in [
        ("mpirun", "--version"),
        ("mpicc", "-show"),
        ("pkg-config", "--version"),
        ("taskset", "--version"),
    ] {
        if !Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(format!("{tool} not found"));
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus < THREADS).then(|| format!("{cpus} CPU(s), {THREADS} needed"))
}

/// Runs `cmd`; panics with its output unless it succeeds.
fn succeed(cmd: &mut Command, what: &str) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `scripts/install.sh --prefix target/release/bench-hybrid/prefix --library-only`,
/// then `examples/c/jacobi.c` built against it with `-fopenmp`; the program's path.
fn build_program() -> PathBuf {
    let work = release_dir().join("bench-hybrid");
    let prefix = work.join("prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    succeed(
        Command::new("bash")
            .arg(root().join("scripts/install.sh"))
            .arg("--prefix")
            .arg(&prefix)
            .arg("--library-only")
            .env("CARGO_TARGET_DIR", release_dir().parent().expect("target"))
            .env_remove("DESTDIR"),
        "scripts/install.sh --library-only",
    );
    let pkg_config = |what: &str| -> Vec<String> {
        let out = succeed(
            Command::new("pkg-config")
                .args([what, "rankmig"])
                .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
            "pkg-config",
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let program = work.join("jacobi-omp");
    succeed(
        Command::new("mpicc")
            .args(["-O2", "-Wall"])
            .args(pkg_config("--cflags"))
            .arg(root().join("examples/c/jacobi.c"))
            .arg("-o")
            .arg(&program)
            .args(pkg_config("--libs"))
            .args(["-fopenmp", "-lxxhash"]),
        "mpicc -fopenmp examples/c/jacobi.c",
    );
    program
}

/// The command of `launch`, without the program's arguments.
fn command(launch: Launch, setup: &Setup) -> Command {
    let dir = setup.dir.path();
    let rankmig = |cores: &str, run_dir: &Path| {
        let _ = std::fs::remove_dir_all(run_dir);
        let mut c = Command::new(&setup.rankmig);
        c.args(["run", "-n", "1", "--cores-per-rank", cores, "-a", "av"])
            .arg("--run-dir")
            .arg(run_dir)
            .arg("--");
        c
    };
    let mut cmd = match launch {
        Launch::Rankmig2 => rankmig("2", &dir.join("run-2")),
        Launch::Rankmig1 => rankmig("1", &dir.join("run-1")),
        Launch::Taskset => {
            let mut c = Command::new("mpirun");
            c.args([
                "-np",
                "1",
                "--bind-to",
                "none",
                "taskset",
                "-c",
                &setup.cpus,
            ]);
            c
        }
    };
    cmd.arg(&setup.program)
        .args(["--size", &SIZE.to_string()])
        .args(["--iters", &launch.iters().to_string()])
        .current_dir(dir)
        .env("OMP_NUM_THREADS", THREADS.to_string())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    for name in OMP_DEFAULTS {
        cmd.env_remove(name);
    }
    cmd
}

/// Runs `launch` once and checks it: it succeeded, ran all its iterations with
/// [`THREADS`] threads on as many CPUs as its binding gives, and (`rankmig run
/// --cores-per-rank 2`) was bound to `setup.cpus`.
fn run_once(launch: Launch, setup: &Setup) -> Timing {
    let start = Instant::now();
    let out = succeed(&mut command(launch, setup), launch.name());
    let wall = start.elapsed();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let threads = format!(
        "{THREADS} OpenMP threads, {} CPUs available",
        launch.cpus_available()
    );
    assert!(stderr.contains(&threads), "{}: {stderr}", launch.name());
    let iters = launch.iters();
    assert!(
        stdout.contains(&format!("iterations: {iters}\n")),
        "{}: {stdout}",
        launch.name()
    );
    if launch == Launch::Rankmig2 {
        let cpus = cpus_of_rank_zero(&setup.dir.path().join("run-2"));
        assert_eq!(cpus, setup.cpus, "CPUs of rankmig run --cores-per-rank 2");
    }
    let seconds = loop_seconds(&stderr)
        .unwrap_or_else(|| panic!("no 'iterations done in' line from jacobi-c: {stderr}"));
    let checksum = stdout
        .lines()
        .find_map(|l| l.strip_prefix("checksum: "))
        .unwrap_or_else(|| panic!("{}: no checksum: {stdout}", launch.name()))
        .to_owned();
    Timing {
        per_iter: Duration::from_secs_f64(seconds / iters as f64),
        wall,
        checksum,
    }
}

/// The CPU list of rank 0 in `RUN_DIR/cpus-0.txt` (`0 0-1`).
fn cpus_of_rank_zero(run_dir: &Path) -> String {
    let text = std::fs::read_to_string(run_dir.join("cpus-0.txt")).expect("cpus-0.txt");
    text.lines()
        .find_map(|l| l.strip_prefix("0 "))
        .unwrap_or_else(|| panic!("no rank 0 in cpus-0.txt: {text}"))
        .trim()
        .to_owned()
}

/// The seconds of jacobi-c's line `jacobi-c: N iterations done in T s`.
fn loop_seconds(stderr: &str) -> Option<f64> {
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

/// `/proc/loadavg`'s three figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Builds the program and makes a first `rankmig run --cores-per-rank 2`, whose CPUs
/// the `taskset` runs take.
fn set_up() -> Setup {
    let program = build_program();
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("av"), format!("n1 {THREADS}\n")).expect("availability");
    let mut setup = Setup {
        rankmig: PathBuf::from(env!("CARGO_BIN_EXE_rankmig")),
        program,
        dir,
        cpus: String::new(),
    };
    let mut first = command(Launch::Rankmig2, &setup);
    succeed(&mut first, "a first rankmig run --cores-per-rank 2");
    setup.cpus = cpus_of_rank_zero(&setup.dir.path().join("run-2"));
    println!(
        "hybrid: rankmig run --cores-per-rank 2 bound rank 0 to CPUs {} (cpus-0.txt): mpirun runs taskset -c {}",
        setup.cpus, setup.cpus
    );
    setup
}

fn hybrid(c: &mut Criterion) {
    if let Some(what) = missing() {
        println!("hybrid: {what}, nothing measured");
        return;
    }
    let setup = set_up();
    println!("hybrid: load average {} (1, 5, 15 min)", load_average());
    let seen: RefCell<Vec<(Launch, Timing)>> = RefCell::new(Vec::new());
    let mut group = c.benchmark_group("hybrid");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for launch in LAUNCHES {
        let id = format!("jacobi-{SIZE}x{SIZE}-omp{THREADS}-per-iteration");
        group.bench_function(BenchmarkId::new(launch.name(), id), |b| {
            b.iter_custom(|runs| {
                let mut total = Duration::ZERO;
                for _ in 0..runs {
                    let t = run_once(launch, &setup);
                    total += t.per_iter;
                    seen.borrow_mut().push((launch, t));
                }
                total
            })
        });
    }
    group.finish();
    if std::env::args().any(|a| a == "--test") {
        summarise(&seen.into_inner(), "criterion test mode, one run each");
        return;
    }
    let rounds: usize = std::env::var("RANKMIG_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    // The 6 orders of the three launches, one round each in turn.
    let orders = [
        [0, 1, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
        [1, 0, 2],
        [0, 2, 1],
    ];
    let mut interleaved = Vec::new();
    for round in 0..rounds {
        for i in orders[round % orders.len()] {
            interleaved.push((LAUNCHES[i], run_once(LAUNCHES[i], &setup)));
        }
    }
    summarise(&interleaved, &format!("{rounds} interleaved rounds"));
    println!("hybrid: load average {} (1, 5, 15 min)", load_average());
}

/// Prints the medians per iteration, the ratios to `mpirun-taskset`, and checks that
/// the two 2-core launches computed the same grid.
fn summarise(seen: &[(Launch, Timing)], how: &str) {
    let checksums: Vec<&str> = seen
        .iter()
        .filter(|(l, _)| *l != Launch::Rankmig1)
        .map(|(_, t)| t.checksum.as_str())
        .collect();
    assert!(
        checksums.windows(2).all(|w| w[0] == w[1]),
        "the 2-core runs differ: {checksums:?}"
    );
    let pick = |launch: Launch, f: fn(&Timing) -> Duration| {
        median(
            seen.iter()
                .filter(|(l, _)| *l == launch)
                .map(|(_, t)| f(t).as_secs_f64())
                .collect(),
        )
    };
    let base = pick(Launch::Taskset, |t| t.per_iter);
    println!(
        "hybrid: jacobi-c {SIZE}x{SIZE}, 1 rank of {THREADS} OpenMP threads; medians of {how}"
    );
    for launch in LAUNCHES {
        let per_iter = pick(launch, |t| t.per_iter);
        let ratio = match launch {
            Launch::Taskset => String::new(),
            Launch::Rankmig2 => format!(
                ", ratio to mpirun-taskset {:.3} (target <= 1.05)",
                per_iter / base
            ),
            Launch::Rankmig1 => format!(", ratio to mpirun-taskset {:.1}", per_iter / base),
        };
        println!(
            "  {}: {} iterations, {:.3} ms per iteration{ratio}; whole launch {:.3} s",
            launch.name(),
            launch.iters(),
            per_iter * 1e3,
            pick(launch, |t| t.wall)
        );
        let ratios = round_ratios(seen, launch);
        if launch != Launch::Taskset && ratios.len() > 1 {
            println!(
                "    per-round ratios to mpirun-taskset: quartiles {:.3} / {:.3} / {:.3} over {} rounds",
                quantile(&ratios, 0.25),
                quantile(&ratios, 0.5),
                quantile(&ratios, 0.75),
                ratios.len()
            );
        }
    }
}

/// `launch` / `mpirun-taskset` time per iteration in each round of three consecutive
/// runs, sorted.
fn round_ratios(seen: &[(Launch, Timing)], launch: Launch) -> Vec<f64> {
    let mut ratios: Vec<f64> = seen
        .chunks_exact(LAUNCHES.len())
        .filter_map(|round| {
            let of = |l: Launch| {
                round
                    .iter()
                    .find(|(x, _)| *x == l)
                    .map(|(_, t)| t.per_iter.as_secs_f64())
            };
            Some(of(launch)? / of(Launch::Taskset)?)
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
    hybrid(&mut criterion);
    criterion.final_summary();
}
