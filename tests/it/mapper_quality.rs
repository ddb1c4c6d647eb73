//! Quality and validity of TreeMatch mappings on generated patterns and measured
//! matrices, on clusters of 2 x 8-core nodes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rankmig::matrix::{CommMatrix, MatrixFormat, SymGraph};
use rankmig::topology::Tree;
use rankmig::treematch::patterns::Pattern;
use rankmig::treematch::{MapError, MapOptions, Mapping, baselines, map, metrics};

const SEED: u64 = 17;

/// `nodes` nodes of 2 packages x 8 cores.
fn cluster(nodes: usize) -> Tree {
    Tree::cluster(&Tree::from_arities(&[2, 8]).unwrap(), nodes).unwrap()
}

fn cluster_for(ranks: usize) -> Tree {
    cluster(ranks.div_ceil(16))
}

fn real_matrices() -> Vec<(String, CommMatrix)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrices");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mat"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, CommMatrix::load(&p, MatrixFormat::Auto).unwrap())
        })
        .collect()
}

/// Maps and checks the result is a placement of every rank on an existing leaf.
fn map_checked(graph: &SymGraph, tree: &Tree, options: &MapOptions) -> Mapping {
    let mapping = map(graph, tree, options).unwrap();
    assert_eq!(mapping.len(), graph.order());
    assert!(mapping.leaves().iter().all(|&l| l < tree.leaf_count()));
    mapping
}

fn assert_injective(mapping: &Mapping, what: &str) {
    let distinct: HashSet<usize> = mapping.leaves().iter().copied().collect();
    assert_eq!(
        distinct.len(),
        mapping.len(),
        "{what}: two ranks share a leaf"
    );
}

/// Hop-bytes of TreeMatch, packed and round-robin; the names of the failures.
fn compare_with_baselines(name: &str, graph: &SymGraph, tree: &Tree) -> Vec<String> {
    let n = graph.order();
    let mapping = map_checked(graph, tree, &MapOptions::default());
    let cost = |l: &[usize]| metrics::hop_bytes(graph, tree, l);
    let tm = cost(mapping.leaves());
    let packed = cost(&baselines::packed(tree, n, None, 1));
    let rr = cost(&baselines::round_robin(tree, n, None, 1));
    let mut failures = Vec::new();
    // a relative tolerance for the order of floating-point sums only
    if tm > packed * (1.0 + 1e-12) {
        failures.push(format!("{name}/{n}: treematch {tm:e} > packed {packed:e}"));
    }
    if tm > rr * (1.0 + 1e-12) {
        failures.push(format!("{name}/{n}: treematch {tm:e} > round-robin {rr:e}"));
    }
    failures
}

#[test]
fn treematch_is_never_worse_than_packed_or_round_robin_on_patterns() {
    let mut failures = Vec::new();
    // 64 and 256 fill their nodes; 50 and 200 leave leaves free
    for n in [64, 256, 50, 200] {
        let tree = cluster_for(n);
        for pattern in Pattern::ALL {
            let graph = pattern.generate(n, SEED).symmetric();
            failures.extend(compare_with_baselines(pattern.name(), &graph, &tree));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn treematch_is_never_worse_than_packed_or_round_robin_on_real_matrices() {
    let mut failures = Vec::new();
    for (name, m) in real_matrices() {
        let tree = cluster_for(m.order());
        failures.extend(compare_with_baselines(&name, &m.symmetric(), &tree));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn treematch_beats_packed_where_the_numbering_is_bad() {
    // Permuted clusters and heavy hitters: the numbering carries no locality, so a
    // placement that reads the matrix must do clearly better than packed.
    for n in [64, 256] {
        let tree = cluster_for(n);
        for pattern in [Pattern::ClusteredPermuted, Pattern::PowerLaw] {
            let graph = pattern.generate(n, SEED).symmetric();
            let mapping = map_checked(&graph, &tree, &MapOptions::default());
            let tm = metrics::hop_bytes(&graph, &tree, mapping.leaves());
            let packed = metrics::hop_bytes(&graph, &tree, &baselines::packed(&tree, n, None, 1));
            assert!(
                tm * 1.2 < packed,
                "{pattern}/{n}: {tm:e} vs packed {packed:e}"
            );
        }
    }
}

#[test]
fn mappings_are_injective_placements() {
    for n in [64, 256, 50, 200] {
        let tree = cluster_for(n);
        assert!(n <= tree.leaf_count());
        for pattern in Pattern::ALL {
            let graph = pattern.generate(n, SEED).symmetric();
            let mapping = map_checked(&graph, &tree, &MapOptions::default());
            assert_injective(&mapping, &format!("{pattern}/{n}"));
        }
    }
    for (name, m) in real_matrices() {
        let tree = cluster_for(m.order());
        let mapping = map_checked(&m.symmetric(), &tree, &MapOptions::default());
        assert_injective(&mapping, &name);
    }
}

#[test]
fn oversubscription_puts_at_most_two_ranks_per_leaf() {
    let options = MapOptions {
        oversubscribe: 2,
        ..MapOptions::default()
    };
    for (n, nodes) in [(64, 2), (256, 8), (50, 2)] {
        let tree = cluster(nodes);
        assert!(n <= 2 * tree.leaf_count());
        for pattern in Pattern::ALL {
            let graph = pattern.generate(n, SEED).symmetric();
            let mapping = map_checked(&graph, &tree, &options);
            let mut per_leaf = vec![0usize; tree.leaf_count()];
            for &l in mapping.leaves() {
                per_leaf[l] += 1;
            }
            let max = per_leaf.iter().copied().max().unwrap();
            assert!(max <= 2, "{pattern}/{n}: {max} ranks on one leaf");
        }
    }
}

#[test]
fn only_allowed_leaves_are_used() {
    let tree = cluster(4); // 64 leaves
    let allowed: Vec<usize> = (0..64).step_by(2).collect();
    let allowed_set: HashSet<usize> = allowed.iter().copied().collect();
    for (n, factor) in [(32, 1), (20, 1), (64, 2), (45, 2)] {
        let options = MapOptions {
            allowed: Some(allowed.clone()),
            oversubscribe: factor,
            ..MapOptions::default()
        };
        for pattern in Pattern::ALL {
            let graph = pattern.generate(n, SEED).symmetric();
            let mapping = map_checked(&graph, &tree, &options);
            let what = format!("{pattern}/{n} x{factor}");
            assert!(
                mapping.leaves().iter().all(|l| allowed_set.contains(l)),
                "{what}: a leaf outside the allowed list: {:?}",
                mapping.leaves()
            );
            let mut per_leaf = vec![0usize; tree.leaf_count()];
            for &l in mapping.leaves() {
                per_leaf[l] += 1;
            }
            assert!(per_leaf.iter().all(|&c| c <= factor), "{what}");
        }
    }
}

#[test]
fn more_ranks_than_slots_is_an_error() {
    let tree = cluster(4); // 64 leaves
    let cases: [(usize, MapOptions, usize); 3] = [
        (65, MapOptions::default(), 64),
        (
            129,
            MapOptions {
                oversubscribe: 2,
                ..MapOptions::default()
            },
            128,
        ),
        (
            33,
            MapOptions {
                allowed: Some((0..64).step_by(2).collect()),
                ..MapOptions::default()
            },
            32,
        ),
    ];
    for (n, options, expected_slots) in cases {
        for pattern in Pattern::ALL {
            let graph = pattern.generate(n, SEED).symmetric();
            match map(&graph, &tree, &options) {
                Err(MapError::TooManyRanks { ranks, slots, .. }) => {
                    assert_eq!((ranks, slots), (n, expected_slots), "{pattern}/{n}");
                }
                other => panic!("{pattern}/{n}: expected TooManyRanks, got {other:?}"),
            }
        }
    }
    // a measured 64-rank matrix on a single 16-core node
    let (_, m) = real_matrices()
        .into_iter()
        .find(|(name, _)| name.ends_with(".64.mat"))
        .unwrap();
    let err = map(&m.symmetric(), &cluster(1), &MapOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            MapError::TooManyRanks {
                ranks: 64,
                slots: 16,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn mappings_are_deterministic() {
    for n in [64, 256] {
        let tree = cluster_for(n);
        for pattern in Pattern::ALL {
            let first = map_checked(
                &pattern.generate(n, SEED).symmetric(),
                &tree,
                &MapOptions::default(),
            );
            let again = map_checked(
                &pattern.generate(n, SEED).symmetric(),
                &tree,
                &MapOptions::default(),
            );
            assert_eq!(first, again, "{pattern}/{n}");
        }
    }
    for (name, m) in real_matrices() {
        let tree = cluster_for(m.order());
        let g = m.symmetric();
        let first = map_checked(&g, &tree, &MapOptions::default());
        assert_eq!(
            first,
            map_checked(&g, &tree, &MapOptions::default()),
            "{name}"
        );
    }
}

/// Issue 10: on stencils TreeMatch and Scotch find the tiling of recursive coordinate
/// bisection; rankmig's mapping costs no more hop-bytes than that tiling, and no more
/// inter-node volume.
#[test]
fn stencils_cost_no_more_than_the_tiling_of_coordinate_bisection() {
    use rankmig::treematch::patterns::{dims_2d, dims_3d, stencil_2d, stencil_3d, stencil_tiling};
    let costs = metrics::LinkCosts::parse("100,10,1", 3).unwrap();
    let cases = [
        ("2D", 256, stencil_2d(256), dims_2d(256).to_vec()),
        ("2D", 1024, stencil_2d(1024), dims_2d(1024).to_vec()),
        ("2D", 4096, stencil_2d(4096), dims_2d(4096).to_vec()),
        ("3D", 1024, stencil_3d(1024), dims_3d(1024).to_vec()),
        ("3D", 4096, stencil_3d(4096), dims_3d(4096).to_vec()),
    ];
    for (name, n, matrix, dims) in cases {
        let graph = matrix.symmetric();
        let tree = cluster_for(n);
        let ours = map_checked(&graph, &tree, &MapOptions::default());
        let ours = metrics::evaluate(&graph, &tree, ours.leaves(), &costs).unwrap();
        let tiled = metrics::evaluate(&graph, &tree, &stencil_tiling(&dims, 8), &costs).unwrap();
        assert!(
            ours.hop_bytes <= tiled.hop_bytes * (1.0 + 1e-12),
            "{name} {n}: hop-bytes {} > tiling {}",
            ours.hop_bytes,
            tiled.hop_bytes
        );
        assert!(
            ours.inter_node <= tiled.inter_node * (1.0 + 1e-12),
            "{name} {n}: inter-node {} > tiling {}",
            ours.inter_node,
            tiled.inter_node
        );
    }
}
