//! Large inputs (issue 11, section 4): reading speed of the matrix formats and the
//! availability file, and wall time and peak memory of whole `rankmig` runs on inputs
//! that used to take gigabytes.
//!
//! - `read/dense-4096`, `read/edges-20000`: [`CommMatrix::load`] of a generated
//!   4096-rank dense text (34 MB) and a 20 000-rank edge list, throughput in bytes/s.
//! - `read/availability-100000`: 100 000 `NAME CORES cpus=LIST` lines.
//! - `cli/...`: the `rankmig` binary as a child process, each iteration one run; after
//!   the group, the peak resident set of the largest child is printed (`peak RSS`),
//!   read from `wait4`.
//!
//! The inputs are generated into a temporary directory (the 20 000-rank dense text is
//! 800 MB) with a fixed seed: one stencil and 56 random partners per rank.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rankmig::availability::{Availability, AvailabilityFormat};
use rankmig::matrix::{CommMatrix, MatrixFormat};

/// The nonzeros of rank `i`'s row: stencil neighbours and random partners.
fn row_entries(n: usize, i: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, u32)> {
    let side = (n as f64).sqrt() as usize;
    let mut entries = Vec::new();
    for j in [i.wrapping_sub(1), i + 1, i.wrapping_sub(side), i + side] {
        if j < n {
            entries.push((j, rng.gen_range(1000..100_000)));
        }
    }
    for _ in 0..56 {
        let j = rng.gen_range(0..n);
        if j != i {
            entries.push((j, rng.gen_range(1..10_000)));
        }
    }
    entries.sort_unstable();
    entries.dedup_by_key(|e| e.0);
    entries
}

/// Writes the generated matrix of `n` ranks as dense text and as an edge list.
fn write_matrix(n: usize, dense: &Path, edges: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut d = std::io::BufWriter::new(std::fs::File::create(dense).expect("dense file"));
    let mut e = std::io::BufWriter::new(std::fs::File::create(edges).expect("edges file"));
    let mut line = String::new();
    for i in 0..n {
        let entries = row_entries(n, i, &mut rng);
        line.clear();
        let mut next = entries.iter().peekable();
        for j in 0..n {
            if j > 0 {
                line.push(' ');
            }
            match next.peek() {
                Some(&&(k, w)) if k == j => {
                    let _ = write!(line, "{w}");
                    next.next();
                }
                _ => line.push('0'),
            }
        }
        line.push('\n');
        d.write_all(line.as_bytes()).expect("write dense");
        for (j, w) in entries {
            writeln!(e, "{i} {j} {w}").expect("write edges");
        }
    }
    d.flush().expect("flush");
    e.flush().expect("flush");
}

/// 100 000 availability lines with cpu lists.
fn availability_text(lines: usize) -> String {
    let mut text = String::new();
    for k in 0..lines {
        let _ = writeln!(text, "node{k} 16 cpus=0-7,16-23");
    }
    text
}

struct Inputs {
    _dir: tempfile::TempDir,
    dense4096: PathBuf,
    edges4096: PathBuf,
    dense20000: PathBuf,
    edges20000: PathBuf,
    two_edges: PathBuf,
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = |name: &str| dir.path().join(name);
    write_matrix(4096, &p("d4096.mat"), &p("e4096.edges"));
    write_matrix(20_000, &p("d20000.mat"), &p("e20000.edges"));
    std::fs::write(p("two.edges"), "0 1 5\n1 0 5\n").expect("two.edges");
    Inputs {
        dense4096: p("d4096.mat"),
        edges4096: p("e4096.edges"),
        dense20000: p("d20000.mat"),
        edges20000: p("e20000.edges"),
        two_edges: p("two.edges"),
        _dir: dir,
    }
}

fn read(c: &mut Criterion, inputs: &Inputs) {
    let mut group = c.benchmark_group("read");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (name, path, format) in [
        ("dense-4096", &inputs.dense4096, MatrixFormat::Dense),
        ("edges-4096", &inputs.edges4096, MatrixFormat::Edges),
        ("edges-20000", &inputs.edges20000, MatrixFormat::Edges),
    ] {
        let bytes = std::fs::metadata(path).expect("size").len();
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(name, |b| {
            b.iter(|| CommMatrix::load(path, format).expect("matrix"))
        });
    }
    let text = availability_text(100_000);
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("availability-100000", |b| {
        b.iter(|| Availability::parse(&text, "av", AvailabilityFormat::Auto).expect("av"))
    });
    group.finish();
}

/// Runs `rankmig ARGS` once; returns its peak resident set in KiB.
// The child is reaped by `wait4` (which also gives its resource usage), not `wait`.
#[allow(clippy::zombie_processes)]
fn run_rankmig(args: &[&str]) -> i64 {
    let child = Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn rankmig");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, status and usage point to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "rankmig {args:?} failed: {status}"
    );
    usage.ru_maxrss
}

fn cli(c: &mut Criterion, inputs: &Inputs) {
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "map-dense-20000",
            vec![
                "map".into(),
                "--matrix".into(),
                inputs.dense20000.display().to_string(),
                "--matrix-format".into(),
                "dense".into(),
                "--topology".into(),
                "synthetic:pack:2 core:16 pu:1".into(),
                "--nodes".into(),
                "625".into(),
            ],
        ),
        (
            "map-edges-20000",
            vec![
                "map".into(),
                "--matrix".into(),
                inputs.edges20000.display().to_string(),
                "--matrix-format".into(),
                "edges".into(),
                "--topology".into(),
                "synthetic:pack:2 core:16 pu:1".into(),
                "--nodes".into(),
                "625".into(),
            ],
        ),
        (
            "map-100000-one-core-nodes",
            vec![
                "map".into(),
                "--matrix".into(),
                inputs.two_edges.display().to_string(),
                "--matrix-format".into(),
                "edges".into(),
                "--topology".into(),
                "synthetic:pu:1".into(),
                "--nodes".into(),
                "100000".into(),
            ],
        ),
    ];
    let mut group = c.benchmark_group("cli");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    for (name, args) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut peak = 0;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| peak = peak.max(run_rankmig(&args)))
        });
        println!("cli/{name}: peak RSS {} MiB", peak / 1024);
    }
    group.finish();
}

fn large_inputs(c: &mut Criterion) {
    let inputs = inputs();
    read(c, &inputs);
    cli(c, &inputs);
}

criterion_group!(benches, large_inputs);
criterion_main!(benches);
