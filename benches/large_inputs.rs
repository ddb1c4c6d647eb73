//! Large inputs (issue 11, section 4): reading speed of the matrix formats and the
//! availability file, and wall time and peak memory of whole `rankmig` runs on inputs
//! that used to take gigabytes.
//!
//! - `read/dense-4096`, `read/edges-4096`, `read/edges-20000`: [`CommMatrix::load`]
//!   of a generated 4096-rank dense text (34 MB, mostly zeros) and of edge lists,
//!   throughput in bytes/s.
//! - `read/dense-4096-nonzero`: a 4096-rank dense text where every off-diagonal entry
//!   is a 6- to 9-digit number (166 MB): the reading speed without the runs of
//!   zeros the sparse text is made of.
//! - `read/availability-100000`: 100 000 `NAME CORES cpus=LIST` lines.
//! - `cli/...`: the `rankmig` binary as a child process, each iteration one run; after
//!   the group, the peak resident set of the largest child is printed (`peak RSS`),
//!   read from `wait4`.
//!
//! The inputs are generated into a temporary directory with a fixed seed (one stencil
//! and 56 random partners per rank), each the first time a benchmark needs it: a run
//! filtered to `read/` does not write the 800 MB 20 000-rank dense text.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
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

/// Writes the generated matrix of `n` ranks as an edge list and, if `dense` is given,
/// as dense text.
fn write_matrix(n: usize, dense: Option<&Path>, edges: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut d = dense.map(|p| std::io::BufWriter::new(std::fs::File::create(p).expect("dense")));
    let mut e = std::io::BufWriter::new(std::fs::File::create(edges).expect("edges file"));
    let mut line = String::new();
    for i in 0..n {
        let entries = row_entries(n, i, &mut rng);
        for &(j, w) in &entries {
            writeln!(e, "{i} {j} {w}").expect("write edges");
        }
        let Some(d) = d.as_mut() else {
            continue;
        };
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
    }
    if let Some(d) = d.as_mut() {
        d.flush().expect("flush");
    }
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

/// A 4096-rank dense text with every off-diagonal entry a 6- to 9-digit number.
fn write_nonzero_dense(n: usize, path: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut d = std::io::BufWriter::new(std::fs::File::create(path).expect("dense file"));
    let mut line = String::new();
    for i in 0..n {
        line.clear();
        for j in 0..n {
            if j > 0 {
                line.push(' ');
            }
            let w: u32 = if i == j {
                0
            } else {
                rng.gen_range(100_000..1_000_000_000)
            };
            let _ = write!(line, "{w}");
        }
        line.push('\n');
        d.write_all(line.as_bytes()).expect("write dense");
    }
    d.flush().expect("flush");
}

/// The generated inputs, each written the first time it is asked for.
struct Inputs {
    dir: tempfile::TempDir,
    made: std::cell::RefCell<std::collections::HashSet<&'static str>>,
}

impl Inputs {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
            made: Default::default(),
        }
    }

    /// The path of input `name`, generating it (and its sibling) on first use.
    fn get(&self, name: &'static str) -> PathBuf {
        let p = |name: &str| self.dir.path().join(name);
        if self.made.borrow_mut().insert(name) {
            match name {
                "d4096.mat" | "e4096.edges" => {
                    write_matrix(4096, Some(&p("d4096.mat")), &p("e4096.edges"));
                }
                "d20000.mat" => write_matrix(20_000, Some(&p(name)), &p("e20000.edges")),
                "e20000.edges" => write_matrix(20_000, None, &p(name)),
                "d4096-nonzero.mat" => write_nonzero_dense(4096, &p(name)),
                "two.edges" => std::fs::write(p(name), "0 1 5\n1 0 5\n").expect("two.edges"),
                _ => panic!("no input {name}"),
            }
        }
        p(name)
    }
}

fn read(c: &mut Criterion, inputs: &Inputs) {
    let mut group = c.benchmark_group("read");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (name, file, format) in [
        ("dense-4096", "d4096.mat", MatrixFormat::Dense),
        (
            "dense-4096-nonzero",
            "d4096-nonzero.mat",
            MatrixFormat::Dense,
        ),
        ("edges-4096", "e4096.edges", MatrixFormat::Edges),
        ("edges-20000", "e20000.edges", MatrixFormat::Edges),
    ] {
        if !wanted(&format!("read/{name}")) {
            continue;
        }
        let path = inputs.get(file);
        let bytes = std::fs::metadata(&path).expect("size").len();
        group.throughput(Throughput::Bytes(bytes));
        group.bench_function(name, |b| {
            b.iter(|| CommMatrix::load(&path, format).expect("matrix"))
        });
    }
    if wanted("read/availability-100000") {
        let text = availability_text(100_000);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function("availability-100000", |b| {
            b.iter(|| Availability::parse(&text, "av", AvailabilityFormat::Auto).expect("av"))
        });
    }
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

/// Whether the benchmark `id` passes the filters given on the command line (plain
/// substrings; criterion's own filter is a regex, so this only spares generating the
/// inputs of benchmarks that would not run).
fn wanted(id: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str()))
}

fn cli(c: &mut Criterion, inputs: &Inputs) {
    // (name, matrix file, its format, topology, nodes)
    let cases = [
        (
            "map-dense-20000",
            "d20000.mat",
            "dense",
            "synthetic:pack:2 core:16 pu:1",
            "625",
        ),
        (
            "map-dense-4096-nonzero",
            "d4096-nonzero.mat",
            "dense",
            "synthetic:pack:2 core:16 pu:1",
            "128",
        ),
        (
            "map-edges-20000",
            "e20000.edges",
            "edges",
            "synthetic:pack:2 core:16 pu:1",
            "625",
        ),
        (
            "map-100000-one-core-nodes",
            "two.edges",
            "edges",
            "synthetic:pu:1",
            "100000",
        ),
    ];
    let mut group = c.benchmark_group("cli");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    for (name, file, format, topology, nodes) in cases {
        if !wanted(&format!("cli/{name}")) {
            continue;
        }
        let matrix = inputs.get(file).display().to_string();
        let args = [
            "map",
            "--matrix",
            &matrix,
            "--matrix-format",
            format,
            "--topology",
            topology,
            "--nodes",
            nodes,
        ];
        let mut peak = 0;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| peak = peak.max(run_rankmig(&args)))
        });
        println!("cli/{name}: peak RSS {} MiB", peak / 1024);
    }
    group.finish();
}

fn large_inputs(c: &mut Criterion) {
    let inputs = Inputs::new();
    read(c, &inputs);
    cli(c, &inputs);
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    large_inputs(&mut criterion);
    criterion.final_summary();
}
