//! C and Fortran programs on the C interface, built with the real `mpicc`/`mpif90` and
//! run with real `mpirun`: the twins of the Rust Jacobi print its checksum, restart
//! after SIGKILL from their checkpoints, migrate live on the emulated cluster, and
//! their MPI traffic is counted by the same interposition.
#![cfg(feature = "mpi")]

mod output_files;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::job::{Job, retry_on_hang, wait_for};
use crate::support::prefix;
use crate::support::{
    checksum, has_committed_epoch, jacobi, live_hosts, mpi_lock, namespaces_available, per_host,
    rankmig, records, wait_until,
};

/// How long a step of a job (its start, a migration, iterations after it) may take.
const JOB_WAIT: Duration = Duration::from_secs(90);

/// A program of `examples/c` or `examples/fortran`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Twin {
    C,
    Fortran,
    /// The C twin built with `-DJACOBI_CART_ONCE`: its Cartesian communicator is made
    /// once, as a naive port would.
    CCartOnce,
    /// `tests/fortran/ring_f08.f90`: a ring written with `mpi_f08` only, on the
    /// `rankmig_f08` module.
    RingF08,
    /// `tests/c/ring.c`: its C twin.
    RingC,
}

impl Twin {
    /// The program, built once per test binary into `target/release/c-examples`.
    fn program(self) -> &'static Path {
        static C: OnceLock<PathBuf> = OnceLock::new();
        static FORTRAN: OnceLock<PathBuf> = OnceLock::new();
        static C_CART_ONCE: OnceLock<PathBuf> = OnceLock::new();
        static RING_F08: OnceLock<PathBuf> = OnceLock::new();
        static RING_C: OnceLock<PathBuf> = OnceLock::new();
        match self {
            Twin::C => C.get_or_init(|| build(self)),
            Twin::Fortran => FORTRAN.get_or_init(|| build(self)),
            Twin::CCartOnce => C_CART_ONCE.get_or_init(|| build(self)),
            Twin::RingF08 => RING_F08.get_or_init(|| build(self)),
            Twin::RingC => RING_C.get_or_init(|| build(self)),
        }
    }
}

/// Builds the twin with the MPI compiler wrapper against the installed prefix,
/// through pkg-config (`rankmig`, or `rankmig-fortran` for the Fortran modules), as a
/// user does.
fn build(twin: Twin) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = prefix::programs_dir();
    let exe = out_dir.join(twin.file_name());
    let (wrapper, package, source) = match twin {
        Twin::C | Twin::CCartOnce => ("mpicc", "rankmig", "examples/c/jacobi.c"),
        Twin::RingC => ("mpicc", "rankmig", "tests/c/ring.c"),
        Twin::Fortran => ("mpif90", "rankmig-fortran", "examples/fortran/jacobi.f90"),
        Twin::RingF08 => ("mpif90", "rankmig-fortran", "tests/fortran/ring_f08.f90"),
    };
    let mut cmd = prefix::compile_against_prefix(
        wrapper,
        package,
        &[&root.join(source)],
        &exe,
        &["-lxxhash"],
    );
    if wrapper == "mpicc" {
        cmd.arg("-Wall");
    } else {
        // The program's own modules (ring_f08's ring_comm) beside it, not in the checkout.
        cmd.arg("-J").arg(&out_dir);
    }
    if twin == Twin::CCartOnce {
        cmd.arg("-DJACOBI_CART_ONCE");
    }
    let out = cmd.output().expect("the MPI compiler wrapper runs");
    assert!(
        out.status.success(),
        "{twin:?} build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

impl Twin {
    fn file_name(self) -> &'static str {
        match self {
            Twin::C => "jacobi-c",
            Twin::Fortran => "jacobi-f",
            Twin::CCartOnce => "jacobi-c-cart-once",
            Twin::RingF08 => "ring-f08",
            Twin::RingC => "ring-c",
        }
    }
}

/// `RANKS` ranks of `PROGRAM ARGS` started by the launcher of the MPI under test, with
/// extra environment.
fn mpirun(program: &Path, ranks: usize, args: &[&str], env: &[(&str, &Path)]) -> Command {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.display().to_string()))
        .collect();
    support::plain_launch_with(ranks, program, args, &env)
}

/// Asserts that `out` (a 128×128 run of a twin) has the checksum of the Rust example
/// run plainly for as many iterations, with its checkpoints under `dir`.
fn assert_same_as_rust_plain_run(out: &Output, dir: &Path) {
    let ckpt = dir.join("ckpt").display().to_string();
    let env = [("RANKMIG_CKPT_DIR".to_owned(), ckpt)];
    support::assert_same_as_plain_run(out, 4, jacobi(), &["--size", "128"], &env);
}

fn run_to_end(program: &Path, ranks: usize, args: &[&str], dir: &Path) -> Output {
    mpirun(
        program,
        ranks,
        args,
        &[("RANKMIG_CKPT_DIR", &dir.join("ckpt"))],
    )
    .output()
    .expect("mpirun")
}

#[test]
fn the_c_and_fortran_twins_print_the_rust_checksum() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let args = ["--size", "96", "--iters", "300"];
    for ranks in [1, 4] {
        let rust = checksum(&run_to_end(jacobi(), ranks, &args, dir.path()));
        let c = checksum(&run_to_end(Twin::C.program(), ranks, &args, dir.path()));
        let f = checksum(&run_to_end(
            Twin::Fortran.program(),
            ranks,
            &args,
            dir.path(),
        ));
        assert_eq!(
            (&c, &f),
            (&rust, &rust),
            "{ranks} ranks: C, Fortran vs Rust"
        );
    }
}

fn killed_and_restarted(twin: Twin) {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let args = ["--size", "128", "--iters", "10000"];
    // The reference run checkpoints elsewhere: in `ckpt` its complete epochs would let
    // the wait below end before the twin has committed one (seen on a loaded machine).
    let reference_dir = dir.path().join("reference");
    fs::create_dir(&reference_dir).expect("reference dir");
    let reference = checksum(&run_to_end(jacobi(), 4, &args, &reference_dir));
    let every: &Path = Path::new("500");
    // Killed with everything below it if the test fails while it runs.
    let mut first = Job(Some(
        mpirun(
            twin.program(),
            4,
            &args,
            &[("RANKMIG_CKPT_DIR", &ckpt), ("RANKMIG_CKPT_EVERY", every)],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun"),
    ));
    let start = Instant::now();
    while !has_committed_epoch(&ckpt) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{twin:?}: no committed epoch in {}",
            ckpt.display()
        );
        assert!(
            first
                .0
                .as_mut()
                .is_some_and(|c| c.try_wait().unwrap().is_none()),
            "{twin:?} ended too early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(mut child) = first.0.take() {
        support::job::kill_tree(&mut child);
    }
    let restart: &Path = Path::new("1");
    let out = mpirun(
        twin.program(),
        4,
        &args,
        &[
            ("RANKMIG_CKPT_DIR", &ckpt),
            ("RANKMIG_CKPT_EVERY", every),
            ("RANKMIG_RESTART", restart),
        ],
    )
    .output()
    .expect("mpirun restart");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(checksum(&out), reference, "{twin:?} after restart: {said}");
    if twin == Twin::C {
        assert!(said.contains("resumed at iteration"), "{said}");
    }
}

#[test]
fn a_c_program_killed_with_sigkill_restarts_from_its_checkpoint() {
    let _lock = mpi_lock();
    killed_and_restarted(Twin::C);
}

#[test]
fn a_fortran_program_killed_with_sigkill_restarts_from_its_checkpoint() {
    let _lock = mpi_lock();
    killed_and_restarted(Twin::Fortran);
}

/// Replaces the availability file atomically.
fn edit(dir: &Path, text: &str) {
    fs::write(dir.join("av.tmp"), text).expect("write");
    fs::rename(dir.join("av.tmp"), dir.join("av")).expect("rename");
}

/// 4 ranks on h1, h2 of an emulated cluster; then h1 and h2 are taken back and the
/// ranks must run on h3 and h4, as seen from outside, with the Rust checksum: moved
/// live, or by a relaunch where the MPI cannot spawn across hosts (Open MPI 5). The C
/// twin runs until the test stops it through its stop file (whatever the machine's
/// speed); the Fortran twin, which has no stop file, runs a fixed count.
fn migrates_across_hosts(twin: Twin) {
    if !namespaces_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stop = d.join("stop");
    let fixed = ["--size", "128", "--iters", "40000"];
    let stoppable = [
        "--size",
        "128",
        "--iters",
        "100000000",
        "--stop-file",
        stop.to_str().expect("UTF-8 temp path"),
    ];
    let args: &[&str] = if twin == Twin::C { &stoppable } else { &fixed };
    let hosts: String = (1..=4).map(|h| format!("h{h} slots=2\n")).collect();
    fs::write(d.join("hosts"), hosts).unwrap();
    edit(d, "h1 2\nh2 2\n");
    let child = rankmig()
        .current_dir(d)
        .args([
            "run",
            "-n",
            "4",
            "-a",
            "av",
            "--hostfile",
            "hosts",
            "--emulated-cluster",
        ])
        .args([
            "--node-topology",
            "synthetic:core:2 pu:1",
            "--run-dir",
            "run",
        ])
        .args(["--check-every", "200", "--settle", "0", "--"])
        .arg(twin.program())
        .args(args)
        .env("RANKMIG_CKPT_EVERY", "5000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let root = child.id();
    // Killed with everything below it if the test fails before its end.
    let job = Job(Some(child));
    let run = d.join("run");
    wait_until("the job to start", JOB_WAIT, || {
        run.join("iterations/rank-0.csv").exists()
    });
    let at_start = per_host(&live_hosts(root, twin.program()));
    assert_eq!(
        at_start,
        [("h1".into(), 2), ("h2".into(), 2)].into(),
        "{twin:?} at start"
    );
    // Open MPI 5.0.11's spawns fail under several daemons (one per host): it moves the
    // ranks by a relaunch from a checkpoint instead of live.
    let live = rankmig::launcher::launcher(support::mpi())
        .capabilities()
        .spawn_across_daemons;
    edit(d, "h3 2\nh4 2\n");
    wait_until("the migration", JOB_WAIT, || !records(&run).is_empty());
    assert_eq!(
        records(&run)[0]["outcome"],
        if live { "migrated" } else { "relaunch" },
        "{:?}",
        records(&run)
    );
    wait_until("the processes on h3 and h4", JOB_WAIT, || {
        per_host(&live_hosts(root, twin.program())) == [("h3".into(), 2), ("h4".into(), 2)].into()
    });
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    // Rank 0 arrived by the one migration: its communicator is of generation 1 (the C
    // twin's Cartesian communicator was rebuilt by rankmig_on_comm at its arrival). A
    // relaunched rank 0 started with the launch: generation 0.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let generation = if live { 1 } else { 0 };
    assert!(
        stderr.contains(&format!("communicator generation {generation}\n")),
        "{twin:?}: {stderr}"
    );
    let got = checksum(&out);
    // The Fortran twin has no stop file: it ran its fixed count.
    let iterations = support::iterations_of(&out).unwrap_or_else(|| "40000".into());
    let plain = ["--size", "128", "--iters", iterations.as_str()];
    let reference = checksum(&run_to_end(jacobi(), 4, &plain, d));
    assert_eq!(got, reference, "{twin:?} migrated, {iterations} iterations");
}

#[test]
fn a_c_program_migrates_live_across_emulated_hosts() {
    let _lock = mpi_lock();
    migrates_across_hosts(Twin::C);
}

#[test]
fn a_fortran_program_migrates_live_across_emulated_hosts() {
    let _lock = mpi_lock();
    migrates_across_hosts(Twin::Fortran);
}

/// The C program's sends are counted by the interposition: rank r sends one row of
/// doubles to each neighbour per iteration (`MPI_Sendrecv`), then its rows to rank 0
/// (`MPI_Gather`, counted as sends to the root), so the exported matrix holds exactly
/// `iters * size * 8` bytes between neighbours, plus `rows * size * 8` towards rank 0.
#[test]
fn the_traffic_of_a_c_program_is_counted() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("matrix.txt");
    let (size, iters) = (64u64, 50u64);
    let out = mpirun(
        Twin::C.program(),
        4,
        &["--size", &size.to_string(), "--iters", &iters.to_string()],
        &[
            ("RANKMIG_CKPT_DIR", &dir.path().join("ckpt")),
            ("RANKMIG_MATRIX_OUT", &matrix),
        ],
    )
    .output()
    .expect("mpirun");
    checksum(&out);
    let m = rankmig::matrix::CommMatrix::load(&matrix, rankmig::matrix::MatrixFormat::Dense)
        .expect("the exported matrix reads");
    let halo = (iters * size * 8) as f64;
    let gathered = (size / 4 * size * 8) as f64;
    for i in 0..4usize {
        for j in 0..4usize {
            let neighbours = if i.abs_diff(j) == 1 { halo } else { 0.0 };
            let gather = if j == 0 && i != 0 { gathered } else { 0.0 };
            let expected = neighbours + gather;
            assert_eq!(m.get(i, j), expected, "bytes {i} -> {j}");
        }
    }
}

/// The naive port (Cartesian communicator made once) stops after its first migration;
/// `--stall-timeout 20` names the ranks that stopped, launches the job again from the
/// checkpoint of that migration, and the job ends with exit 0 and the checksum of a
/// plain run.
#[test]
fn a_stalled_naive_port_is_launched_again_by_the_stall_watch() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stop = d.join("stop");
    edit(d, "n1 2\nn2 2\n");
    let child = rankmig()
        .current_dir(d)
        .args(["run", "-n", "4", "-a", "av", "--run-dir", "run"])
        .args([
            "--check-every",
            "200",
            "--settle",
            "0",
            "--stall-timeout",
            "20",
            "--",
        ])
        .arg(Twin::CCartOnce.program())
        .args(["--size", "128", "--iters", "100000000", "--stop-file"])
        .arg(&stop)
        .env("RANKMIG_CKPT_EVERY", "5000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let job = Job(Some(child));
    let run = d.join("run");
    wait_until("the job to start", JOB_WAIT, || {
        run.join("iterations/rank-0.csv").exists()
    });
    edit(d, "n1 2\nn3 2\n");
    let stalls = run.join("stalls.txt");
    let start = Instant::now();
    while !stalls.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no stall recorded: {:?}",
            records(&run)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The new launch computes: its rank 0 writes records again.
    let size = || fs::metadata(run.join("iterations/rank-0.csv")).map_or(0, |m| m.len());
    let after_stall = size();
    wait_until("the relaunched job to compute", JOB_WAIT, || {
        size() > after_stall
    });
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("made no progress"), "{stderr}");
    assert_same_as_rust_plain_run(&out, d);
}

/// The C twin (halo on a Cartesian communicator rebuilt by `rankmig_on_comm`) migrated
/// live on logical nodes of this host: the checksum of a plain run.
#[test]
fn the_cartesian_c_twin_migrates_live_on_logical_nodes() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stop = d.join("stop");
    let job = start_c_twin_on_logical_nodes(d, &stop, "128", ("RANKMIG_CKPT_EVERY", "5000"));
    let run = d.join("run");
    edit(d, "n1 2\nn3 2\n");
    wait_until("the migration", JOB_WAIT, || !records(&run).is_empty());
    assert_eq!(
        records(&run)[0]["outcome"],
        "migrated",
        "{:?}",
        records(&run)
    );
    let size = || fs::metadata(run.join("iterations/rank-0.csv")).map_or(0, |m| m.len());
    let after = size();
    wait_until("iterations after the migration", JOB_WAIT, || {
        size() > after + 1000
    });
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains(NOTHING_COUNTED),
        "counted traffic: {stderr}"
    );
    assert_same_as_rust_plain_run(&out, d);
}

/// Starts the C twin (`--size size`, one more variable `var`) as 4 ranks on logical
/// nodes n1:2 n2:2 under `rankmig run` in `d` (run directory `run`, checks every 200
/// calls, no settle time), stopped by `stop`; returns once rank 0 has recorded an
/// iteration.
fn start_c_twin_on_logical_nodes(d: &Path, stop: &Path, size: &str, var: (&str, &str)) -> Job {
    edit(d, "n1 2\nn2 2\n");
    let child = rankmig()
        .current_dir(d)
        .args(["run", "-n", "4", "-a", "av", "--run-dir", "run"])
        .args(["--check-every", "200", "--settle", "0", "--"])
        .arg(Twin::C.program())
        .args(["--size", size, "--iters", "100000000", "--stop-file"])
        .arg(stop)
        .env(var.0, var.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let job = Job(Some(child));
    let run = d.join("run");
    wait_until("the job to start", JOB_WAIT, || {
        run.join("iterations/rank-0.csv").exists()
    });
    job
}

/// What `rankmig run` says when the live matrix a plan was made from is all zero.
const NOTHING_COUNTED: &str = "no communication between the 4 ranks was counted";

/// Nothing counted (`RANKMIG_MONITOR=off`) in a job of 4 ranks that migrates twice:
/// `rankmig run` says so once, naming `--matrix`.
#[test]
fn a_run_whose_matrix_stays_zero_is_warned_once() {
    let _lock = mpi_lock();
    // Two spawns: with Debian's Open MPI 4.1.4 one may hang (support::job::Hung).
    retry_on_hang(|| {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let stop = d.join("stop");
        let job = start_c_twin_on_logical_nodes(d, &stop, "64", ("RANKMIG_MONITOR", "off"));
        let run = d.join("run");
        edit(d, "n1 2\nn3 2\n");
        wait_for("the first migration", || records(&run).len() == 1)?;
        edit(d, "n1 2\nn2 2\n");
        wait_for("the second migration", || records(&run).len() == 2)?;
        fs::write(&stop, "").expect("stop file");
        let out = job.finish()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches(NOTHING_COUNTED).count(), 1, "{stderr}");
        assert!(stderr.contains("--matrix"), "{stderr}");
        assert!(
            records(&run).iter().all(|r| r["live_bytes"] == 0.0),
            "{:?}",
            records(&run)
        );
        Ok(())
    })
}

/// A Fortran program using `mpi_f08` only (`tests/fortran/ring_f08.f90`, built against
/// `include/rankmig.f90` as the guide says) migrates live on logical nodes: its rank 0
/// ends at communicator generation 1, with the checksum of a plain run.
#[test]
fn an_mpi_f08_program_migrates_live_on_logical_nodes() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["--size", "64", "--iters", "6000", "--pause-us", "1000"];
    edit(d, "n1 2\nn2 2\n");
    let child = rankmig()
        .current_dir(d)
        .args(["run", "-n", "4", "-a", "av", "--run-dir", "run"])
        .args(["--check-every", "200", "--settle", "0", "--"])
        .arg(Twin::RingF08.program())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let job = Job(Some(child));
    let run = d.join("run");
    wait_until("the job to start", JOB_WAIT, || {
        run.join("iterations/rank-0.csv").exists()
    });
    edit(d, "n1 2\nn3 2\n");
    let out = job.finish().expect("rankmig run ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        records(&run).first().map(|r| r["outcome"].clone()),
        Some("migrated".into()),
        "{stderr}"
    );
    assert!(
        stderr.contains("ring-f08: communicator generation 1\n"),
        "{stderr}"
    );
    let plain = checksum(&run_to_end(Twin::RingF08.program(), 4, &args, d));
    assert_eq!(checksum(&out), plain, "{stderr}");
}

/// The `mpi_f08` ring and its C twin compute the same: the same checksum, 1 and 4 ranks.
#[test]
fn the_mpi_f08_ring_prints_the_checksum_of_its_c_twin() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let args = ["--size", "64", "--iters", "100"];
    for ranks in [1, 4] {
        let c = checksum(&run_to_end(Twin::RingC.program(), ranks, &args, dir.path()));
        let f = checksum(&run_to_end(
            Twin::RingF08.program(),
            ranks,
            &args,
            dir.path(),
        ));
        assert_eq!(f, c, "{ranks} ranks");
    }
}

/// The matrix `twin` exports (`RANKMIG_MATRIX_OUT`) after a plain run of 4 ranks.
fn matrix_of(twin: Twin, args: &[&str], dir: &Path) -> rankmig::matrix::CommMatrix {
    let matrix = dir.join(format!("{}.matrix", twin.file_name()));
    let out = mpirun(
        twin.program(),
        4,
        args,
        &[
            ("RANKMIG_CKPT_DIR", &dir.join("ckpt")),
            ("RANKMIG_MATRIX_OUT", &matrix),
        ],
    )
    .output()
    .expect("mpirun");
    checksum(&out);
    rankmig::matrix::CommMatrix::load(&matrix, rankmig::matrix::MatrixFormat::Dense)
        .expect("the exported matrix reads")
}

/// A Fortran program's traffic is counted through the Fortran entry points
/// (`src/monitor/fortran.rs`): the Jacobi twin (`use mpi`: `MPI_Sendrecv`,
/// `MPI_Gather`) and the `mpi_f08` ring (`MPI_Sendrecv`, `MPI_Isend`, `MPI_Allreduce`,
/// `MPI_Gather`, and with `--every-call` each other counted call once, persistent sends
/// included) export the matrices of their C twins, byte for byte.
#[test]
fn the_traffic_of_fortran_programs_is_that_of_their_c_twins() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let jacobi = ["--size", "64", "--iters", "50"];
    let ring = ["--size", "64", "--iters", "50", "--every-call"];
    for (fortran, c, args) in [
        (Twin::Fortran, Twin::C, &jacobi[..]),
        (Twin::RingF08, Twin::RingC, &ring[..]),
    ] {
        let f = matrix_of(fortran, args, dir.path());
        let c = matrix_of(c, args, dir.path());
        assert!(c.total() > 0.0, "{fortran:?}'s twin counted nothing");
        for i in 0..4usize {
            for j in 0..4usize {
                assert_eq!(f.get(i, j), c.get(i, j), "{fortran:?}: bytes {i} -> {j}");
            }
        }
    }
}
