//! Planning time of the two-step planner.
//!
//! - `scenario/<matrix>/stepK`: the paper's Fig. 3 scenario (64 ranks, 16-core nodes),
//!   each step planned from the placement the previous steps produced.
//! - `large/4096x256/lose-K`: 4096 ranks on 256 nodes of 16 cores running a 2D stencil,
//!   K nodes lost at once.
//! - `huge-node/16384-cores/<step2>`: 16 384 stencil ranks on one node of 16 384 cores
//!   (16 packages x 16 L3 x 64 cores) that shrinks to 8 192, a second such node added:
//!   10 922 ranks move. The peak resident set of the process is printed after it.

use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion};
use rankmig::availability::{Availability, AvailabilityFormat};
use rankmig::matrix::{CommMatrix, MatrixFormat};
use rankmig::planner::{Location, Placement, PlanOptions, Step2, plan};
use rankmig::topology::Tree;
use rankmig::treematch::patterns::Pattern;

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn node_tree() -> Tree {
    Tree::from_arities(&[2, 8]).expect("2x8 tree")
}

fn scenario(c: &mut Criterion) {
    let tree = node_tree();
    let initial = Placement::load(&data("scenario/initial_placement.txt")).expect("placement");
    let steps: Vec<Availability> = (0..=5)
        .map(|k| {
            Availability::load(
                &data(&format!("scenario/step{k}.avail")),
                AvailabilityFormat::Auto,
            )
            .expect("step file")
        })
        .collect();
    let mut group = c.benchmark_group("scenario");
    for matrix in ["cg.W.64", "himeno.M.4x4x4.64", "lu.W.64"] {
        let m = CommMatrix::load(
            &data(&format!("matrices/{matrix}.mat")),
            MatrixFormat::Dense,
        )
        .expect("matrix");
        let g = m.symmetric();
        for step2 in [Step2::Paper, Step2::Residents] {
            let options = PlanOptions { step2 };
            let mut placement = initial.clone();
            for (k, av) in steps.iter().enumerate().skip(1) {
                let id = BenchmarkId::new(format!("{matrix}/{step2:?}"), format!("step{k}"));
                group.bench_function(id, |b| {
                    b.iter(|| plan(av, &placement, &g, &tree, &options).expect("plan"))
                });
                placement = plan(av, &placement, &g, &tree, &options)
                    .expect("plan")
                    .placement;
            }
        }
    }
    group.finish();
}

fn large(c: &mut Criterion) {
    let tree = node_tree();
    let n = 4096;
    let g = Pattern::Stencil2d.generate(n, 1).symmetric();
    let placement = Placement::new(
        (0..n)
            .map(|r| Location {
                node: format!("n{:03}", r / 16),
                core: r % 16,
            })
            .collect(),
    );
    let mut group = c.benchmark_group("large");
    group.sample_size(20);
    for lost in [1usize, 16] {
        // 256 nodes of 16 cores, `lost` of them gone, 16 spare nodes added.
        let mut text = String::new();
        for i in 0..256 {
            let cores = if i < lost { 0 } else { 16 };
            text.push_str(&format!("n{i:03} {cores}\n"));
        }
        for i in 0..lost {
            text.push_str(&format!("spare{i} 16\n"));
        }
        let av = Availability::parse(&text, "bench", AvailabilityFormat::Native).expect("av");
        for step2 in [Step2::Paper, Step2::Residents] {
            let options = PlanOptions { step2 };
            let id = BenchmarkId::new(format!("4096x256/{step2:?}"), format!("lose-{lost}"));
            group.bench_function(id, |b| {
                b.iter(|| plan(&av, &placement, &g, &tree, &options).expect("plan"))
            });
        }
    }
    group.finish();
}

/// Peak resident set size of this process (`VmHWM`), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn huge_node(c: &mut Criterion) {
    let tree = Tree::from_arities(&[16, 16, 64]).expect("16x16x64 tree");
    let n = 16_384;
    let g = Pattern::Stencil2d.generate(n, 1).symmetric();
    let placement = Placement::new(
        (0..n)
            .map(|r| Location {
                node: "n1".into(),
                core: r,
            })
            .collect(),
    );
    let av = Availability::parse("n1 8192\nn2 16384\n", "bench", AvailabilityFormat::Native)
        .expect("av");
    let mut group = c.benchmark_group("huge-node");
    group.sample_size(10);
    for step2 in [Step2::Paper, Step2::Residents] {
        let options = PlanOptions { step2 };
        let id = BenchmarkId::new("16384-cores", format!("{step2:?}"));
        group.bench_function(id, |b| {
            b.iter(|| plan(&av, &placement, &g, &tree, &options).expect("plan"))
        });
    }
    group.finish();
    if let Some(mib) = peak_rss_mib() {
        println!("huge-node: peak RSS of the bench process {mib:.0} MiB");
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    scenario(&mut criterion);
    large(&mut criterion);
    huge_node(&mut criterion);
    criterion.final_summary();
}
