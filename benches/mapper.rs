//! TreeMatch mapping time and quality on clusters of 16-core nodes (2 packages x 8 cores).
//!
//! Criterion groups:
//! - `map/<pattern>/<n>`: every generated pattern ([`Pattern::ALL`]) for n = 64 … 16384
//!   ranks (the dense all-to-all stops at 4096);
//! - `map/real/<file>`: every measured matrix in `tests/data/matrices` (16 ranks on 1 node,
//!   64 ranks on 4 nodes).
//!
//! Before Criterion runs, a quality report is printed (hop-bytes of TreeMatch against the
//! packed, round-robin and random placements, mapping time median of 3 runs) plus one
//! 65536-rank run of `stencil_2d` with the process's peak RSS. Where a good placement is
//! known it is shown too (`ref/tm`): tiles by recursive bisection for the stencils, the
//! planted clusters for `clustered_permuted`. The report runs on a plain
//! `cargo bench --bench mapper`; it is skipped in Criterion's `--test`/`--list` modes and
//! when a benchmark filter is given. `RANKMIG_BENCH_QUALITY=1` forces it,
//! `RANKMIG_BENCH_QUALITY=0` turns it off.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, measurement::WallTime};
use rankmig::matrix::{CommMatrix, MatrixFormat, SymGraph};
use rankmig::topology::Tree;
use rankmig::treematch::patterns::{
    Pattern, clustered_permutation, dims_2d, dims_3d, stencil_2d, stencil_tiling,
};
use rankmig::treematch::{MapOptions, baselines, map, metrics};

/// Seed of the random patterns and of the random baseline.
const SEED: u64 = 2024;
/// Rank counts of the `map/<pattern>/<n>` benchmarks.
const SIZES: [usize; 5] = [64, 256, 1024, 4096, 16384];
/// Largest n for the dense all-to-all (n² matrix entries).
const DENSE_MAX: usize = 4096;
/// Largest n in the quality table.
const QUALITY_MAX: usize = 4096;
/// The one huge sparse run of the report.
const HUGE: usize = 65536;
/// Cores per node.
const NODE_CORES: usize = 16;

/// A cluster of 2 x 8-core nodes with room for `ranks` ranks.
fn cluster_for(ranks: usize) -> Tree {
    let node = Tree::from_arities(&[2, 8]).expect("2x8 node");
    Tree::cluster(&node, ranks.div_ceil(NODE_CORES).max(1)).expect("cluster")
}

/// The measured matrices, by file name.
fn real_matrices() -> Vec<(String, CommMatrix)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrices");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/matrices")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mat"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let m = CommMatrix::load(&p, MatrixFormat::Auto).expect("real matrix loads");
            (name, m)
        })
        .collect()
}

/// The patterns benchmarked at `n`.
fn patterns_at(n: usize) -> impl Iterator<Item = Pattern> {
    Pattern::ALL
        .into_iter()
        .filter(move |p| !(p.is_dense() && n > DENSE_MAX))
}

fn map_once(graph: &SymGraph, tree: &Tree) -> Vec<usize> {
    map(graph, tree, &MapOptions::default())
        .expect("mapping")
        .leaves()
        .to_vec()
}

/// Peak resident set size of this process (`VmHWM`), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A known good placement, where there is one: tiles for the stencils (recursive
/// bisection), the planted clusters for `clustered_permuted`.
fn reference(pattern: Pattern, n: usize) -> Option<Vec<usize>> {
    let tiled = |dims: &[usize]| stencil_tiling(dims, 8);
    match pattern {
        Pattern::Stencil2d => Some(tiled(&dims_2d(n))),
        Pattern::Stencil3d => Some(tiled(&dims_3d(n))),
        Pattern::ClusteredPermuted => {
            let mut out = vec![0; n];
            for (position, rank) in clustered_permutation(n, SEED).into_iter().enumerate() {
                out[rank] = position;
            }
            Some(out)
        }
        _ => None,
    }
}

/// One row of the quality table.
struct Row {
    name: String,
    n: usize,
    millis: f64,
    treematch: f64,
    packed: f64,
    round_robin: f64,
    random: f64,
    reference: Option<f64>,
}

impl Row {
    fn measure(name: &str, graph: &SymGraph, tree: &Tree, reference: Option<&[usize]>) -> Row {
        let n = graph.order();
        let mut times = Vec::with_capacity(3);
        let mut leaves = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            leaves = map_once(graph, tree);
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let cost = |l: &[usize]| metrics::hop_bytes(graph, tree, l);
        Row {
            name: name.to_owned(),
            n,
            millis: times[1],
            treematch: cost(&leaves),
            packed: cost(&baselines::packed(tree, n, None, 1)),
            round_robin: cost(&baselines::round_robin(tree, n, None, 1)),
            random: cost(&baselines::random(tree, n, None, 1, SEED)),
            reference: reference.map(cost),
        }
    }

    /// `other / treematch`, 1 when both are 0.
    fn ratio(&self, other: f64) -> f64 {
        if self.treematch == 0.0 {
            if other == 0.0 { 1.0 } else { f64::INFINITY }
        } else {
            other / self.treematch
        }
    }

    fn print(&self) {
        println!(
            "{:<24} {:>6} {:>10.2} {:>14.4e} {:>14.4e} {:>14.4e} {:>14.4e} {:>8.3} {:>8.3} {:>8.3} {:>8}",
            self.name,
            self.n,
            self.millis,
            self.treematch,
            self.packed,
            self.round_robin,
            self.random,
            self.ratio(self.packed),
            self.ratio(self.round_robin),
            self.ratio(self.random),
            self.reference
                .map_or("-".into(), |r| format!("{:.3}", self.ratio(r))),
        );
    }
}

fn geometric_mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((0.0, 0usize), |(s, c), v| (s + v.ln(), c + 1));
    if count == 0 {
        f64::NAN
    } else {
        (sum / count as f64).exp()
    }
}

/// The 65536-rank sparse run: time, quality against packed, peak RSS.
fn huge_run() {
    // Reset the peak RSS (Linux >= 4.0) so that it reflects this run only.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let start = Instant::now();
    let graph = stencil_2d(HUGE).symmetric();
    let generated = start.elapsed();
    let tree = cluster_for(HUGE);
    let start = Instant::now();
    let leaves = map_once(&graph, &tree);
    let mapped = start.elapsed();
    let tm = metrics::hop_bytes(&graph, &tree, &leaves);
    let packed = metrics::hop_bytes(&graph, &tree, &baselines::packed(&tree, HUGE, None, 1));
    println!(
        "stencil_2d n={HUGE}: generate {:.1} ms, map {:.1} ms, hop-bytes {tm:.4e} \
         (packed/treematch {:.3}), peak RSS {} MiB{}",
        generated.as_secs_f64() * 1e3,
        mapped.as_secs_f64() * 1e3,
        packed / tm,
        peak_rss_kib().map_or("?".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
        if reset {
            " (since reset)"
        } else {
            " (whole process)"
        },
    );
}

fn quality_report() {
    println!("== rankmig mapper quality (2x8-core nodes, seed {SEED}) ==");
    huge_run();
    println!(
        "{:<24} {:>6} {:>10} {:>14} {:>14} {:>14} {:>14} {:>8} {:>8} {:>8} {:>8}",
        "pattern",
        "n",
        "map ms",
        "hb treematch",
        "hb packed",
        "hb rr",
        "hb random",
        "pk/tm",
        "rr/tm",
        "rnd/tm",
        "ref/tm"
    );
    let mut rows = Vec::new();
    for n in SIZES.into_iter().filter(|&n| n <= QUALITY_MAX) {
        let tree = cluster_for(n);
        for pattern in patterns_at(n) {
            let graph = pattern.generate(n, SEED).symmetric();
            let known = reference(pattern, n);
            let row = Row::measure(pattern.name(), &graph, &tree, known.as_deref());
            row.print();
            rows.push(row);
        }
    }
    for (name, m) in real_matrices() {
        let row = Row::measure(&name, &m.symmetric(), &cluster_for(m.order()), None);
        row.print();
        rows.push(row);
    }
    let worse: Vec<String> = rows
        .iter()
        .filter(|r| r.treematch > r.packed.min(r.round_robin) * (1.0 + 1e-12))
        .map(|r| format!("{}/{}", r.name, r.n))
        .collect();
    println!(
        "geometric means over {} rows: packed/treematch {:.3}, rr/treematch {:.3}, \
         random/treematch {:.3}",
        rows.len(),
        geometric_mean(rows.iter().map(|r| r.ratio(r.packed))),
        geometric_mean(rows.iter().map(|r| r.ratio(r.round_robin))),
        geometric_mean(rows.iter().map(|r| r.ratio(r.random))),
    );
    println!("rows where treematch is worse than packed or round-robin: {worse:?}");
    let behind: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let known = r.reference?;
            (r.treematch > known * (1.0 + 1e-12))
                .then(|| format!("{}/{} ({:.3})", r.name, r.n, r.treematch / known))
        })
        .collect();
    println!("rows where treematch costs more than the reference placement (tm/ref): {behind:?}");
    println!("== end of quality report ==");
}

/// Whether to print the quality report (see the module documentation).
fn want_report() -> bool {
    match std::env::var("RANKMIG_BENCH_QUALITY").as_deref() {
        Ok("1") => return true,
        Ok("0") => return false,
        _ => {}
    }
    // cargo passes `--bench`; anything else positional is a filter.
    !std::env::args()
        .skip(1)
        .any(|a| a == "--test" || a == "--list" || !a.starts_with('-'))
}

/// Sample sizes and times by problem size: the whole run stays within a few minutes.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    match n {
        0..=256 => group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2)),
        257..=1024 => group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3)),
        _ => group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(4)),
    };
}

fn bench_patterns(c: &mut Criterion) {
    let options = MapOptions::default();
    for n in SIZES {
        let tree = cluster_for(n);
        let mut group = c.benchmark_group("map");
        configure(&mut group, n);
        for pattern in patterns_at(n) {
            let graph = pattern.generate(n, SEED).symmetric();
            group.bench_with_input(BenchmarkId::new(pattern.name(), n), &graph, |b, g| {
                b.iter(|| map(black_box(g), &tree, &options).expect("mapping"))
            });
        }
        group.finish();
    }
}

fn bench_real(c: &mut Criterion) {
    let options = MapOptions::default();
    let mut group = c.benchmark_group("map");
    configure(&mut group, 64);
    for (name, m) in real_matrices() {
        let tree = cluster_for(m.order());
        let graph = m.symmetric();
        group.bench_with_input(BenchmarkId::new("real", name), &graph, |b, g| {
            b.iter(|| map(black_box(g), &tree, &options).expect("mapping"))
        });
    }
    group.finish();
}

fn main() {
    if want_report() {
        quality_report();
    }
    let mut criterion = Criterion::default().configure_from_args();
    bench_patterns(&mut criterion);
    bench_real(&mut criterion);
    criterion.final_summary();
}
