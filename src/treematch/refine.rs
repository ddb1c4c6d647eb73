//! Hop-bytes refinement of a finished mapping, and brute force for tiny trees.

use crate::matrix::SymGraph;
use crate::topology::Tree;

const EMPTY: u32 = u32::MAX;

/// Distances between leaves from the ancestor table.
struct Distances {
    depth: usize,
    /// `ancestors[level][leaf]`
    ancestors: Vec<Vec<u32>>,
}

impl Distances {
    fn new(tree: &Tree) -> Self {
        Self {
            depth: tree.depth(),
            ancestors: tree.ancestor_table(),
        }
    }

    #[inline]
    fn hops(&self, a: usize, b: usize) -> f64 {
        if a == b {
            return 0.0;
        }
        let mut level = self.depth;
        while self.ancestors[level][a] != self.ancestors[level][b] {
            level -= 1;
        }
        (2 * (self.depth - level)) as f64
    }
}

/// The mapping of least hop-bytes, by trying every injective placement (tiny trees only:
/// `tree.leaf_count()` ≤ 8 keeps this under 40 320 placements).
pub fn brute_force(graph: &SymGraph, tree: &Tree) -> Vec<usize> {
    let n = graph.order();
    let leaves = tree.leaf_count();
    let dist = Distances::new(tree);
    let edges: Vec<(usize, usize, f64)> = (0..n)
        .flat_map(|i| {
            graph
                .neighbors(i)
                .filter(move |&(j, _)| j > i)
                .map(move |(j, w)| (i, j, w))
        })
        .collect();
    let mut perm: Vec<usize> = (0..leaves).collect();
    let cost = |p: &[usize]| -> f64 {
        edges
            .iter()
            .map(|&(i, j, w)| w * dist.hops(p[i], p[j]))
            .sum()
    };
    let mut best = perm[..n].to_vec();
    let mut best_cost = cost(&perm);
    // Heap's algorithm, iterative.
    let mut c = vec![0usize; leaves];
    let mut i = 0;
    while i < leaves {
        if c[i] < i {
            if i % 2 == 0 {
                perm.swap(0, i);
            } else {
                perm.swap(c[i], i);
            }
            let value = cost(&perm);
            if value < best_cost {
                best_cost = value;
                best = perm[..n].to_vec();
            }
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best
}

/// Swaps ranks between leaves (or moves a rank to a free leaf) while that lowers the
/// hop-bytes. Candidate leaves for a rank are the leaves next to its heaviest
/// neighbours; on small trees every leaf is tried. The work is bounded for dense
/// matrices.
pub fn swap_refine(graph: &SymGraph, tree: &Tree, leaf_of_rank: &mut [usize], passes: usize) {
    let n = graph.order();
    let leaves = tree.leaf_count();
    let dist = Distances::new(tree);
    let mut occupant = vec![EMPTY; leaves];
    for (r, &l) in leaf_of_rank.iter().enumerate() {
        occupant[l] = r as u32;
    }
    let try_all = leaves <= 64;
    let leaf_parent = tree.depth().checked_sub(1);
    let mut budget = 16 * graph.adjacency_len() + 64 * n;
    let mut candidates: Vec<usize> = Vec::new();
    for _ in 0..passes {
        let mut improved = false;
        for u in 0..n {
            if graph.degree(u) == 0 {
                continue;
            }
            candidates.clear();
            if try_all {
                candidates.extend(0..leaves);
            } else if let Some(pl) = leaf_parent {
                heavy_neighbor_leaves(graph, tree, u, leaf_of_rank, pl, &mut candidates);
            }
            let a = leaf_of_rank[u];
            let mut best: Option<(f64, usize)> = None;
            for &b in &candidates {
                if b == a {
                    continue;
                }
                let v = occupant[b];
                let cost_v = if v == EMPTY {
                    0
                } else {
                    graph.degree(v as usize)
                };
                budget = budget.saturating_sub(graph.degree(u) + cost_v);
                let delta = swap_delta(graph, &dist, leaf_of_rank, u, a, b, v);
                if delta < -1e-9 && best.is_none_or(|(d, _)| delta < d) {
                    best = Some((delta, b));
                }
            }
            if let Some((_, b)) = best {
                let v = occupant[b];
                occupant[b] = u as u32;
                occupant[a] = v;
                leaf_of_rank[u] = b;
                if v != EMPTY {
                    leaf_of_rank[v as usize] = a;
                }
                improved = true;
            }
            if budget == 0 {
                return;
            }
        }
        if !improved {
            break;
        }
    }
}

/// Leaves under the same leaf-parent as the leaves of `u`'s three heaviest neighbours.
fn heavy_neighbor_leaves(
    graph: &SymGraph,
    tree: &Tree,
    u: usize,
    leaf_of_rank: &[usize],
    leaf_parent_level: usize,
    out: &mut Vec<usize>,
) {
    let mut heavy: Vec<(f64, usize)> = graph.neighbors(u).map(|(x, w)| (w, x)).collect();
    let top = heavy.len().min(3);
    if top == 0 {
        return;
    }
    heavy.select_nth_unstable_by(top - 1, |a, b| b.0.total_cmp(&a.0));
    let depth = tree.depth();
    for &(_, x) in &heavy[..top] {
        let parent = tree.parent(depth, leaf_of_rank[x]);
        out.extend(tree.children(leaf_parent_level, parent));
    }
    out.sort_unstable();
    out.dedup();
}

/// Change of hop-bytes when `u` moves from leaf `a` to leaf `b` and the occupant `v` of
/// `b` (or nobody) moves to `a`.
fn swap_delta(
    graph: &SymGraph,
    dist: &Distances,
    leaf_of_rank: &[usize],
    u: usize,
    a: usize,
    b: usize,
    v: u32,
) -> f64 {
    let mut delta = 0.0;
    for (x, w) in graph.neighbors(u) {
        if x as u32 == v {
            continue;
        }
        let lx = leaf_of_rank[x];
        delta += w * (dist.hops(b, lx) - dist.hops(a, lx));
    }
    if v != EMPTY {
        for (y, w) in graph.neighbors(v as usize) {
            if y == u {
                continue;
            }
            let ly = leaf_of_rank[y];
            delta += w * (dist.hops(a, ly) - dist.hops(b, ly));
        }
    }
    delta
}
