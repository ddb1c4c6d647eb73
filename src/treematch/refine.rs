//! Hop-bytes refinement of a finished mapping, and brute force for tiny trees.

use ndarray::Array2;

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

/// Largest tree (in leaves) on which swap refinement tries every leaf for every rank;
/// larger trees try the leaves next to the rank's heaviest neighbours only.
const ALL_LEAVES_MAX: usize = 64;

/// The rank on each of `leaves` leaves ([`EMPTY`] where none), from the leaf of each
/// rank.
fn occupants(leaf_of_rank: &[usize], leaves: usize) -> Vec<u32> {
    let mut occupant = vec![EMPTY; leaves];
    for (r, &l) in leaf_of_rank.iter().enumerate() {
        occupant[l] = r as u32;
    }
    occupant
}

/// Swaps ranks between leaves (or moves a rank to a free leaf) while that lowers the
/// hop-bytes. Candidate leaves for a rank are the leaves next to its heaviest
/// neighbours; on small trees every leaf is tried. The work is bounded for dense
/// matrices.
pub fn swap_refine(graph: &SymGraph, tree: &Tree, leaf_of_rank: &mut [usize], passes: usize) {
    if tree.leaf_count() <= ALL_LEAVES_MAX {
        swap_refine_all_leaves(graph, tree, leaf_of_rank, passes);
        return;
    }
    let n = graph.order();
    let leaves = tree.leaf_count();
    let dist = Distances::new(tree);
    let mut occupant = occupants(leaf_of_rank, leaves);
    let leaf_parent = tree.depth().checked_sub(1);
    let mut budget = work_budget(graph, 16);
    let mut candidates: Vec<usize> = Vec::new();
    for _ in 0..passes {
        let mut improved = false;
        for u in 0..n {
            if graph.degree(u) == 0 {
                continue;
            }
            candidates.clear();
            if let Some(pl) = leaf_parent {
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
                apply_swap(leaf_of_rank, &mut occupant, a, b);
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

/// [`swap_refine`] on small trees: every leaf is a candidate for every rank. The swap
/// gains come from a [`VertexWeights`] table in O(depth) each instead of a walk over
/// both ranks' edges; the work budget is still counted in the edge visits those walks
/// would make, so the descent stops where the walking one stopped. A chosen swap is
/// checked against the exact walk before it is made (the table drifts by rounding).
fn swap_refine_all_leaves(
    graph: &SymGraph,
    tree: &Tree,
    leaf_of_rank: &mut [usize],
    passes: usize,
) {
    let n = graph.order();
    let leaves = tree.leaf_count();
    let dist = Distances::new(tree);
    let mut occupant = occupants(leaf_of_rank, leaves);
    let mut table = VertexWeights::new(graph, tree, leaf_of_rank);
    // Weight from the current rank to every rank, scattered from its row.
    let mut to_u = vec![0.0f64; n];
    let mut budget = work_budget(graph, 16);
    for _ in 0..passes {
        let mut improved = false;
        for u in 0..n {
            let degree_u = graph.degree(u);
            if degree_u == 0 {
                continue;
            }
            for (x, w) in graph.neighbors(u) {
                to_u[x] = w;
            }
            let a = leaf_of_rank[u];
            let mut best: Option<(f64, usize)> = None;
            for (b, &v) in occupant.iter().enumerate() {
                if b == a {
                    continue;
                }
                let (degree_v, w_uv) = if v == EMPTY {
                    (0, 0.0)
                } else {
                    (graph.degree(v as usize), to_u[v as usize])
                };
                budget = budget.saturating_sub(degree_u + degree_v);
                let delta = table.swap_delta(u, a, b, v, w_uv);
                if delta < -1e-9 && best.is_none_or(|(d, _)| delta < d) {
                    best = Some((delta, b));
                }
            }
            for (x, _) in graph.neighbors(u) {
                to_u[x] = 0.0;
            }
            if let Some((_, b)) = best {
                let v = occupant[b];
                if swap_delta(graph, &dist, leaf_of_rank, u, a, b, v) < -1e-9 {
                    apply_swap(leaf_of_rank, &mut occupant, a, b);
                    table.moved(graph, u, a, b);
                    if v != EMPTY {
                        table.moved(graph, v as usize, b, a);
                    }
                    improved = true;
                }
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

/// For every rank, its communication weight towards every vertex of the tree below the
/// root (the sum over its neighbours placed under that vertex). A rank on leaf l costs
/// 2 hops per edge and per level where the ancestors of l and of the neighbour's leaf
/// differ, so the hop-bytes change of a swap is read from a few entries per level.
struct VertexWeights {
    depth: usize,
    /// `slots[leaf * depth + k]` = entry of the ancestor of `leaf` at level k + 1.
    slots: Vec<u32>,
    /// `weight[[r, slot]]`: weight from rank r to the ranks under that vertex.
    weight: Array2<f64>,
}

impl VertexWeights {
    /// The table of the mapping `leaf_of_rank`: O(edges × depth).
    fn new(graph: &SymGraph, tree: &Tree, leaf_of_rank: &[usize]) -> Self {
        let n = graph.order();
        let leaves = tree.leaf_count();
        let depth = tree.depth();
        let ancestors = tree.ancestor_table();
        let mut slots = vec![0u32; leaves * depth];
        let mut first = 0usize;
        for level in 1..=depth {
            for (leaf, &ancestor) in ancestors[level].iter().enumerate() {
                slots[leaf * depth + level - 1] = (first + ancestor as usize) as u32;
            }
            first += tree.width(level);
        }
        let width = first;
        let mut weight = Array2::<f64>::zeros((n, width));
        for (u, mut row) in weight.outer_iter_mut().enumerate() {
            for (x, w) in graph.neighbors(u) {
                let lx = leaf_of_rank[x];
                for &slot in &slots[lx * depth..(lx + 1) * depth] {
                    row[slot as usize] += w;
                }
            }
        }
        Self {
            depth,
            slots,
            weight,
        }
    }

    /// Ancestor entries of leaves `a` and `b` from the first level where they differ
    /// down (`a != b`).
    #[inline]
    fn apart(&self, a: usize, b: usize) -> (&[u32], &[u32]) {
        let d = self.depth;
        let (sa, sb) = (
            &self.slots[a * d..(a + 1) * d],
            &self.slots[b * d..(b + 1) * d],
        );
        let k = sa.iter().zip(sb).take_while(|(x, y)| x == y).count();
        (&sa[k..], &sb[k..])
    }

    /// Change of hop-bytes when `u` moves from leaf `a` to leaf `b` and the occupant `v`
    /// of `b` (or nobody) moves to `a`; `w_uv` is the weight between them.
    #[inline]
    fn swap_delta(&self, u: usize, a: usize, b: usize, v: u32, w_uv: f64) -> f64 {
        let (sa, sb) = self.apart(a, b);
        let row_u = self.weight.row(u);
        // u leaves the subtrees of a (its edges there get longer) for those of b.
        let mut change = 0.0;
        for (&x, &y) in sa.iter().zip(sb) {
            change += row_u[x as usize] - row_u[y as usize];
        }
        if v != EMPTY {
            let row_v = self.weight.row(v as usize);
            for (&x, &y) in sa.iter().zip(sb) {
                change += row_v[y as usize] - row_v[x as usize];
            }
            // Their own edge was counted as shortened twice; it keeps its length.
            change += 2.0 * w_uv * sa.len() as f64;
        }
        2.0 * change
    }

    /// Follows the move of rank `u` from leaf `a` to leaf `b`.
    fn moved(&mut self, graph: &SymGraph, u: usize, a: usize, b: usize) {
        let d = self.depth;
        let k = (0..d)
            .find(|&k| self.slots[a * d + k] != self.slots[b * d + k])
            .unwrap_or(d);
        for (x, w) in graph.neighbors(u) {
            let mut row = self.weight.row_mut(x);
            for j in k..d {
                row[self.slots[a * d + j] as usize] -= w;
                row[self.slots[b * d + j] as usize] += w;
            }
        }
    }
}

/// Edge visits allowed to a refinement: `sweeps` sweeps over the adjacency on sparse
/// graphs, fewer on dense ones (where each sweep is O(n²) and gains little).
pub(crate) fn work_budget(graph: &SymGraph, sweeps: usize) -> usize {
    const DENSE_CAP: usize = 1 << 22;
    let adjacency = graph.adjacency_len();
    (sweeps * adjacency).min(DENSE_CAP + 2 * adjacency) + 64 * graph.order()
}

/// Largest tree (in leaves) on which Kernighan–Lin passes run after the swap descent.
const KL_MAX_LEAVES: usize = 16;

/// Kernighan–Lin passes on small trees: a chain of best swaps, each rank moved at most
/// once per pass, even when a swap costs more; the chain is cut back to its best prefix.
/// This escapes the local optima of the plain swap descent.
pub fn kernighan_lin(graph: &SymGraph, tree: &Tree, leaf_of_rank: &mut [usize], passes: usize) {
    let leaves = tree.leaf_count();
    if leaves > KL_MAX_LEAVES {
        return;
    }
    let dist = Distances::new(tree);
    let mut occupant = occupants(leaf_of_rank, leaves);
    for _ in 0..passes {
        if !kl_pass(graph, &dist, leaf_of_rank, &mut occupant) {
            break;
        }
    }
}

/// One Kernighan–Lin pass; true when it lowered the cost. The swap gains come from a
/// table `cost[r][l]` = hop-bytes of rank r's edges if r sat on leaf l, updated after
/// every swap, so that each candidate swap is evaluated in constant time.
fn kl_pass(
    graph: &SymGraph,
    dist: &Distances,
    leaf_of_rank: &mut [usize],
    occupant: &mut [u32],
) -> bool {
    let n = graph.order();
    let leaves = occupant.len();
    let mut weight = Array2::<f64>::zeros((n, n));
    for u in 0..n {
        for (x, w) in graph.neighbors(u) {
            weight[[u, x]] = w;
        }
    }
    let hops = Array2::from_shape_fn((leaves, leaves), |(a, b)| dist.hops(a, b));
    let mut cost = Array2::<f64>::zeros((n, leaves));
    for (u, mut cost_u) in cost.outer_iter_mut().enumerate() {
        for (x, w) in graph.neighbors(u) {
            // cost[u][l] += w · hops[l][x's leaf], for every leaf l.
            cost_u.scaled_add(w, &hops.column(leaf_of_rank[x]));
        }
    }
    let mut locked = vec![false; n];
    let mut history: Vec<(usize, usize)> = Vec::new(); // (leaf a, leaf b) swapped
    let (mut total, mut best_total, mut best_len) = (0.0f64, 0.0f64, 0usize);
    for _ in 0..n {
        let mut best: Option<(f64, usize, usize)> = None;
        for u in (0..n).filter(|&u| !locked[u]) {
            let a = leaf_of_rank[u];
            let cu = cost.row(u);
            for (b, &v) in occupant.iter().enumerate() {
                if b == a || (v != EMPTY && locked[v as usize]) {
                    continue;
                }
                let mut delta = cu[b] - cu[a];
                if v != EMPTY {
                    let v = v as usize;
                    delta += cost[[v, a]] - cost[[v, b]] + 2.0 * weight[[u, v]] * hops[[a, b]];
                }
                if best.is_none_or(|(d, _, _)| delta < d) {
                    best = Some((delta, u, b));
                }
            }
        }
        let Some((delta, u, b)) = best else { break };
        let a = leaf_of_rank[u];
        let v = occupant[b];
        apply_swap(leaf_of_rank, occupant, a, b);
        // u went a -> b, v (if any) b -> a: every rank's cost table follows, by
        // (w(x,u) - w(x,v)) · (hops[l][b] - hops[l][a]) at leaf l.
        let longer = &hops.column(b) - &hops.column(a);
        for (x, mut cost_x) in cost.outer_iter_mut().enumerate() {
            let wu = weight[[x, u]];
            let wv = if v == EMPTY {
                0.0
            } else {
                weight[[x, v as usize]]
            };
            let diff = wu - wv;
            if diff == 0.0 {
                continue;
            }
            cost_x.scaled_add(diff, &longer);
        }
        locked[u] = true;
        if v != EMPTY {
            locked[v as usize] = true;
        }
        history.push((a, b));
        total += delta;
        if total < best_total - 1e-9 * (1.0 + best_total.abs()) {
            best_total = total;
            best_len = history.len();
        }
    }
    for &(a, b) in history[best_len..].iter().rev() {
        apply_swap(leaf_of_rank, occupant, a, b);
    }
    best_len > 0
}

/// Exchanges the contents (rank or nothing) of leaves `a` and `b`.
fn apply_swap(leaf_of_rank: &mut [usize], occupant: &mut [u32], a: usize, b: usize) {
    occupant.swap(a, b);
    for leaf in [a, b] {
        if occupant[leaf] != EMPTY {
            leaf_of_rank[occupant[leaf] as usize] = leaf;
        }
    }
}

/// Largest tree (in leaves) on which seeded restarts run. Default options solve such
/// trees by brute force; the restarts serve the heuristic path only.
const RESTART_MAX_LEAVES: usize = 8;

/// Random restarts on tiny trees: from seeded random placements, swap descent then
/// Kernighan–Lin; the best result (including the incoming one) is kept. Deterministic.
pub fn restarts(graph: &SymGraph, tree: &Tree, leaf_of_rank: &mut [usize], passes: usize) {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    const RESTARTS: u64 = 8;
    if tree.leaf_count() > RESTART_MAX_LEAVES {
        return;
    }
    let mut best_cost = super::metrics::hop_bytes(graph, tree, leaf_of_rank);
    for seed in 0..RESTARTS {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut slots: Vec<usize> = (0..tree.leaf_count()).collect();
        slots.shuffle(&mut rng);
        slots.truncate(graph.order());
        swap_refine(graph, tree, &mut slots, passes);
        kernighan_lin(graph, tree, &mut slots, passes);
        let cost = super::metrics::hop_bytes(graph, tree, &slots);
        if cost < best_cost - 1e-9 * best_cost.abs() {
            best_cost = cost;
            leaf_of_rank.copy_from_slice(&slots);
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
