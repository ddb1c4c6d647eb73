//! Top-down start: recursive bisection of the communication graph along the tree.
//!
//! At a tree vertex, the ranks it receives are split between its children: the children
//! are halved (by capacity, in leaves) and the ranks are bisected accordingly, again and
//! again, until each child holds its share; then each child recurses. Leaf parents take
//! their ranks in any order (their leaves are equidistant). Each bisection is
//! multilevel (Karypis & Kumar's scheme, written from the papers): heavy-edge matching
//! coarsens the graph, greedy graph growing from a pseudo-peripheral vertex splits the
//! coarsest graph, and Fiduccia–Mattheyses passes refine the cut on the way back up.
//! Part sizes are exact at the finest level, so every subtree receives at most as many
//! ranks as it has leaves (the left halves are filled first: ranks pack).
//!
//! On uniform-weight meshes (stencils) this gives compact tiles where the bottom-up
//! greedy grouping makes ragged groups; `map` keeps the cheapest start.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::matrix::SymGraph;
use crate::topology::Tree;

const NONE: u32 = u32::MAX;
/// Coarsening stops at this many vertices.
const COARSEST: usize = 32;
/// Greedy-growing seeds tried on the coarsest graph.
const SEEDS: usize = 2;
/// FM passes on the finest and the coarsest graphs.
const FM_PASSES: usize = 2;
/// Least distance between a graph's two far corners for growing from them (a 4 x 4
/// mesh has 6).
const MIN_CORNER_DISTANCE: u64 = 4;
/// FM passes on the intermediate graphs.
const COARSE_FM_PASSES: usize = 1;

/// The leaf of every rank of `graph` (`graph.order() <= tree.leaf_count()`), by
/// recursive bisection along the tree.
pub fn recursive_bisection(graph: &SymGraph, tree: &Tree) -> Vec<usize> {
    let n = graph.order();
    let depth = tree.depth();
    let mut capacity: Vec<Vec<usize>> = vec![Vec::new(); depth + 1];
    capacity[depth] = vec![1; tree.leaf_count()];
    for level in (0..depth).rev() {
        capacity[level] = (0..tree.width(level))
            .map(|v| {
                tree.children(level, v)
                    .map(|c| capacity[level + 1][c])
                    .sum()
            })
            .collect();
    }
    let mut placer = Placer {
        graph,
        tree,
        capacity,
        leaf_of_rank: vec![0; n],
        local: vec![NONE; n],
    };
    let ranks: Vec<u32> = (0..n as u32).collect();
    placer.place(0, 0, ranks);
    placer.leaf_of_rank
}

struct Placer<'a> {
    graph: &'a SymGraph,
    tree: &'a Tree,
    capacity: Vec<Vec<usize>>,
    leaf_of_rank: Vec<usize>,
    /// Scratch: global vertex -> local index of the current subgraph (NONE outside).
    local: Vec<u32>,
}

impl Placer<'_> {
    fn place(&mut self, level: usize, vertex: usize, ranks: Vec<u32>) {
        if ranks.is_empty() {
            return;
        }
        let depth = self.tree.depth();
        if level == depth {
            if let Some(&r) = ranks.first() {
                self.leaf_of_rank[r as usize] = vertex;
            }
            return;
        }
        let kids: Vec<usize> = self.tree.children(level, vertex).collect();
        if level + 1 == depth {
            for (&r, &leaf) in ranks.iter().zip(&kids) {
                self.leaf_of_rank[r as usize] = leaf;
            }
            return;
        }
        self.split(level + 1, &kids, ranks);
    }

    /// Shares `ranks` among the vertices `kids` of level `level`.
    fn split(&mut self, level: usize, kids: &[usize], ranks: Vec<u32>) {
        if kids.len() <= 1 {
            if let Some(&k) = kids.first() {
                self.place(level, k, ranks);
            }
            return;
        }
        let caps: Vec<usize> = kids.iter().map(|&k| self.capacity[level][k]).collect();
        let total: usize = caps.iter().sum();
        let mut prefix = 0;
        let mut cut = 1;
        let mut best = usize::MAX;
        for (m, &c) in caps.iter().enumerate().take(kids.len() - 1) {
            prefix += c;
            let off = (2 * prefix).abs_diff(total);
            if off < best {
                best = off;
                cut = m + 1;
            }
        }
        let cap_left: usize = caps[..cut].iter().sum();
        let left_size = cap_left.min(ranks.len());
        if left_size == ranks.len() {
            self.split(level, &kids[..cut], ranks);
            return;
        }
        let (left, right) = self.bisect(&ranks, left_size);
        self.split(level, &kids[..cut], left);
        self.split(level, &kids[cut..], right);
    }

    /// Splits `ranks` into `left_size` ranks and the others, cutting little weight.
    fn bisect(&mut self, ranks: &[u32], left_size: usize) -> (Vec<u32>, Vec<u32>) {
        let fine = Csr::induced(self.graph, ranks, &mut self.local);
        let side = multilevel_bisection(fine, left_size as u64);
        let mut left = Vec::with_capacity(left_size);
        let mut right = Vec::with_capacity(ranks.len() - left_size);
        for (&r, &s) in ranks.iter().zip(&side) {
            if s == 0 {
                left.push(r);
            } else {
                right.push(r);
            }
        }
        (left, right)
    }
}

/// A weighted graph in compressed rows, with vertex weights: the scratch graph of one
/// bisection (the ranks to split, then its coarser and coarser matchings).
///
/// It stays hand-made rather than a `petgraph::csr::Csr<u64, f64, Undirected>` (the
/// communication graph itself, [`SymGraph`], is one): petgraph's `Csr` is built only
/// from rows sorted by neighbour, while these rows are in the order the neighbours
/// are met (local numbering for [`Csr::induced`], matching order for
/// [`Csr::contract`]), an order that the heavy-edge matching's and the growth's
/// tie-breaks follow. Sorting every row of every level would add a sort to each
/// bisection (not measured: this graph was left out of the change to petgraph) and move
/// the tie-breaks, hence the placements.
struct Csr {
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
    vertex_weight: Vec<u64>,
}

impl Csr {
    fn order(&self) -> usize {
        self.vertex_weight.len()
    }

    fn neighbors(&self, v: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.offsets[v]..self.offsets[v + 1];
        self.targets[range.clone()]
            .iter()
            .zip(&self.weights[range])
            .map(|(&t, &w)| (t as usize, w))
    }

    fn degree(&self, v: usize) -> usize {
        self.offsets[v + 1] - self.offsets[v]
    }

    /// The subgraph induced by `vertices` (local numbering = position); `local` is a
    /// scratch array of NONE, left as it was found.
    fn induced(graph: &SymGraph, vertices: &[u32], local: &mut [u32]) -> Csr {
        for (k, &v) in vertices.iter().enumerate() {
            local[v as usize] = k as u32;
        }
        let mut offsets = Vec::with_capacity(vertices.len() + 1);
        offsets.push(0);
        let room: usize = vertices.iter().map(|&v| graph.degree(v as usize)).sum();
        let mut targets = Vec::with_capacity(room);
        let mut weights = Vec::with_capacity(room);
        for &v in vertices {
            for (u, w) in graph.neighbors(v as usize) {
                let lu = local[u];
                if lu != NONE && w != 0.0 {
                    targets.push(lu);
                    weights.push(w);
                }
            }
            offsets.push(targets.len());
        }
        for &v in vertices {
            local[v as usize] = NONE;
        }
        Csr {
            offsets,
            targets,
            weights,
            vertex_weight: vec![1; vertices.len()],
        }
    }

    /// Heavy-edge matching contraction; returns the coarse graph and the fine-to-coarse
    /// map, or `None` when the graph barely shrinks.
    fn coarsen(&self, rng: &mut XorShift, max_weight: u64) -> Option<(Csr, Vec<u32>)> {
        let mate = self.heavy_edge_mates(rng, max_weight);
        let n = self.order();
        let mut map = vec![NONE; n];
        let mut firsts: Vec<u32> = Vec::new();
        for v in 0..n {
            if map[v] != NONE {
                continue;
            }
            let c = firsts.len() as u32;
            map[v] = c;
            map[mate[v] as usize] = c;
            firsts.push(v as u32);
        }
        if firsts.len() * 20 > n * 19 {
            return None;
        }
        let coarse = self.contract(&mate, &map, &firsts);
        Some((coarse, map))
    }

    /// The mate of every vertex in a random-order heavy-edge matching: the unmatched
    /// neighbour with the heaviest edge (the lighter one on a tie) whose pair stays within
    /// `max_weight`; isolated vertices pair with each other; itself when unmatched.
    fn heavy_edge_mates(&self, rng: &mut XorShift, max_weight: u64) -> Vec<u32> {
        let n = self.order();
        let mut order: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut mate = vec![NONE; n];
        let mut lonely: Option<usize> = None;
        for &v in &order {
            let v = v as usize;
            if mate[v] != NONE {
                continue;
            }
            let mut best: Option<(f64, u64, usize)> = None;
            for (u, w) in self.neighbors(v) {
                if u == v
                    || mate[u] != NONE
                    || self.vertex_weight[u] + self.vertex_weight[v] > max_weight
                {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some((bw, bvw, _)) => w > bw || (w == bw && self.vertex_weight[u] < bvw),
                };
                if better {
                    best = Some((w, self.vertex_weight[u], u));
                }
            }
            match best {
                Some((_, _, u)) => {
                    mate[v] = u as u32;
                    mate[u] = v as u32;
                }
                None if self.degree(v) == 0 => match lonely.take() {
                    // Isolated vertices pair up with each other.
                    Some(u) if self.vertex_weight[u] + self.vertex_weight[v] <= max_weight => {
                        mate[v] = u as u32;
                        mate[u] = v as u32;
                    }
                    _ => {
                        mate[v] = v as u32;
                        lonely = Some(v);
                    }
                },
                None => mate[v] = v as u32,
            }
        }
        mate
    }

    /// The coarse graph of a matching: coarse vertex `c` is `firsts[c]` and its mate
    /// (`map` sends a fine vertex to its coarse one), its weight theirs summed, its edges
    /// theirs merged by coarse neighbour.
    fn contract(&self, mate: &[u32], map: &[u32], firsts: &[u32]) -> Csr {
        let coarse_n = firsts.len();
        let mut offsets = Vec::with_capacity(coarse_n + 1);
        offsets.push(0);
        // The coarse graph has at most the fine graph's edges.
        let mut targets: Vec<u32> = Vec::with_capacity(self.targets.len());
        let mut weights: Vec<f64> = Vec::with_capacity(self.targets.len());
        let mut vertex_weight = Vec::with_capacity(coarse_n);
        let mut slot = vec![usize::MAX; coarse_n];
        for (c, &v) in firsts.iter().enumerate() {
            let row_begin = targets.len();
            let v = v as usize;
            let m = mate[v] as usize;
            let members: &[usize] = if m == v { &[v][..] } else { &[v, m][..] };
            let mut weight = 0;
            for &x in members {
                weight += self.vertex_weight[x];
                for (u, w) in self.neighbors(x) {
                    let cu = map[u] as usize;
                    if cu == c {
                        continue;
                    }
                    if slot[cu] == usize::MAX || slot[cu] < row_begin {
                        slot[cu] = targets.len();
                        targets.push(cu as u32);
                        weights.push(w);
                    } else {
                        weights[slot[cu]] += w;
                    }
                }
            }
            vertex_weight.push(weight);
            offsets.push(targets.len());
        }
        Csr {
            offsets,
            targets,
            weights,
            vertex_weight,
        }
    }
}

/// Side (0 = left, 1 = right) of every vertex of `fine`, the left side holding exactly
/// `left_weight` vertex weight: the cheaper of the multilevel bisection and of greedy
/// growth on `fine` itself from its corners ([`corners`]). Coarsening a uniform mesh
/// makes ragged clusters whose cheapest cut is wavy; growing on the mesh itself from one
/// corner fills a rectangle's half, from two corners of one side a square's half: the
/// straight cuts that tile stencils.
fn multilevel_bisection(fine: Csr, left_weight: u64) -> Vec<u8> {
    let mut best = multilevel(&fine, left_weight);
    if fine.order() <= COARSEST {
        // Not coarsened: the multilevel pass already grew from the corners.
        return best;
    }
    let (_, seed_sets) = corners(&fine, false);
    if seed_sets.is_empty() {
        return best;
    }
    let mut best_cut = cut(&fine, &best);
    for seeds in seed_sets {
        let mut side = grow(&fine, &seeds, left_weight);
        force_balance(&fine, &mut side, left_weight);
        let c = cut(&fine, &side);
        if c < best_cut - 1e-9 * (1.0 + best_cut.abs()) {
            best = side;
            best_cut = c;
        }
    }
    best
}

/// Karypis & Kumar's scheme: heavy-edge coarsening, greedy growing on the coarsest
/// graph, FM on the way back up.
fn multilevel(fine: &Csr, left_weight: u64) -> Vec<u8> {
    let total: u64 = fine.vertex_weight.iter().sum();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ fine.order() as u64);
    let max_weight = (total / (2 * COARSEST as u64)).max(2);
    let mut coarse: Vec<Csr> = Vec::new();
    let mut maps: Vec<Vec<u32>> = Vec::new();
    loop {
        let last = coarse.last().unwrap_or(fine);
        if last.order() <= COARSEST {
            break;
        }
        match last.coarsen(&mut rng, max_weight) {
            Some((c, map)) => {
                coarse.push(c);
                maps.push(map);
            }
            None => break,
        }
    }
    let graph_at = |level: usize| if level == 0 { fine } else { &coarse[level - 1] };
    let coarsest = coarse.last().unwrap_or(fine);
    let mut side = initial_bisection(coarsest, left_weight);
    for level in (0..maps.len()).rev() {
        let map = &maps[level];
        side = map.iter().map(|&c| side[c as usize]).collect();
        let g = graph_at(level);
        let (tolerance, passes) = if level == 0 {
            (0, FM_PASSES)
        } else {
            (max_vertex_weight(g), COARSE_FM_PASSES)
        };
        fm_refine(g, &mut side, left_weight, tolerance, passes);
    }
    if maps.is_empty() {
        fm_refine(fine, &mut side, left_weight, 0, FM_PASSES);
    }
    force_balance(fine, &mut side, left_weight);
    side
}

fn max_vertex_weight(g: &Csr) -> u64 {
    g.vertex_weight.iter().copied().max().unwrap_or(1)
}

/// Greedy graph growing from a few seeds (the first a pseudo-peripheral vertex), each
/// refined by FM; the cheapest balanced result.
fn initial_bisection(g: &Csr, left_weight: u64) -> Vec<u8> {
    let n = g.order();
    let tolerance = max_vertex_weight(g);
    let mut best: Option<(u64, f64, Vec<u8>)> = None;
    let (start, mut seed_sets) = corners(g, true);
    if seed_sets.is_empty() && n > 0 {
        seed_sets.push(vec![start]);
    }
    for k in 1..SEEDS.min(n) {
        let s = k * n / SEEDS;
        if seed_sets.iter().all(|set| !set.contains(&s)) {
            seed_sets.push(vec![s]);
        }
    }
    for seeds in seed_sets {
        let mut side = grow(g, &seeds, left_weight);
        fm_refine(g, &mut side, left_weight, tolerance, FM_PASSES);
        let state = (violation(g, &side, left_weight, tolerance), cut(g, &side));
        if best
            .as_ref()
            .is_none_or(|b| state.0 < b.0 || (state.0 == b.0 && state.1 < b.1 - 1e-9))
        {
            best = Some((state.0, state.1, side));
        }
    }
    best.map(|b| b.2).unwrap_or_else(|| vec![1; n])
}

/// Where greedy growing starts: `[a]` and `[a, c]`, `a` a pseudo-peripheral vertex
/// (a corner of a mesh), `b` the vertex farthest from it and `c` the vertex whose
/// smaller distance to `a` and `b` is largest (the larger one least on ties, then the
/// lowest number). On a square mesh `c` is a corner next to `a`, and growing from both
/// fills the half along their side; on a long rectangle growing from `a` alone does.
///
/// A graph whose far corners are closer than [`MIN_CORNER_DISTANCE`], or than the cube
/// root of its order, has no corners worth growing from: dense, clustered or random
/// traffic, whose diameter grows like a logarithm (a 2D mesh of n vertices spans about
/// 2√n, a 3D one 3∛n). No seeds then.
///
/// Also returns `a` (the pseudo-peripheral vertex reached from vertex 0) when
/// `want_start` is set or seeds were found, 0 otherwise. The breadth-first sweeps stop
/// early when the eccentricities seen so far bound the span below the thresholds (the
/// distance between any two vertices of a component is at most twice the eccentricity
/// of any of its vertices): dense graphs then cost one or two sweeps, not three.
fn corners(g: &Csr, want_start: bool) -> (usize, Vec<Vec<usize>>) {
    if g.order() == 0 {
        return (0, Vec::new());
    }
    let too_close = |span: u64| span < MIN_CORNER_DISTANCE || span.pow(3) < g.order() as u64;
    // Two sweeps from vertex 0 reach a pseudo-peripheral vertex `a`.
    let (dist, order) = bfs(g, 0);
    let v1 = order.last().map_or(0, |&x| x as usize);
    let mut bound = 2 * u64::from(dist[v1]);
    if too_close(bound) && !want_start {
        return (0, Vec::new());
    }
    let (dist, order) = bfs(g, v1);
    let a = order.last().map_or(v1, |&x| x as usize);
    bound = bound.min(2 * u64::from(dist[a]));
    if too_close(bound) {
        return (a, Vec::new());
    }
    let (from_a, order) = bfs(g, a);
    let b = order.last().map_or(a, |&x| x as usize);
    let span = u64::from(from_a[b]);
    if too_close(span) {
        return (a, Vec::new());
    }
    let (from_b, _) = bfs(g, b);
    let third = (0..g.order())
        .filter(|&v| v != a && v != b && from_a[v] != u32::MAX && from_b[v] != u32::MAX)
        .max_by_key(|&v| {
            let (near, far) = (from_a[v].min(from_b[v]), from_a[v].max(from_b[v]));
            (near, Reverse(far), Reverse(v))
        });
    match third {
        Some(c) => (a, vec![vec![a], vec![a, c]]),
        None => (a, vec![vec![a]]),
    }
}

fn cut(g: &Csr, side: &[u8]) -> f64 {
    let mut total = 0.0;
    for v in 0..g.order() {
        for (u, w) in g.neighbors(v) {
            if side[u] != side[v] {
                total += w;
            }
        }
    }
    total / 2.0
}

fn left_weight_of(g: &Csr, side: &[u8]) -> u64 {
    side.iter()
        .zip(&g.vertex_weight)
        .filter(|(s, _)| **s == 0)
        .map(|(_, w)| w)
        .sum()
}

fn violation(g: &Csr, side: &[u8], target: u64, tolerance: u64) -> u64 {
    left_weight_of(g, side)
        .abs_diff(target)
        .saturating_sub(tolerance)
}

/// Breadth-first distances from `from` (u32::MAX where unreachable) and the visit order.
fn bfs(g: &Csr, from: usize) -> (Vec<u32>, Vec<u32>) {
    bfs_from(g, &[from])
}

/// Breadth-first distances from the nearest of `sources`, and the visit order.
fn bfs_from(g: &Csr, sources: &[usize]) -> (Vec<u32>, Vec<u32>) {
    let mut dist = vec![u32::MAX; g.order()];
    let mut order = Vec::with_capacity(g.order());
    for &from in sources {
        if dist[from] == u32::MAX {
            dist[from] = 0;
            order.push(from as u32);
        }
    }
    let mut head = 0;
    while head < order.len() {
        let v = order[head] as usize;
        head += 1;
        for (u, _) in g.neighbors(v) {
            if dist[u] == u32::MAX {
                dist[u] = dist[v] + 1;
                order.push(u as u32);
            }
        }
    }
    (dist, order)
}

/// Greedy graph growing: the left side grows from `seeds`, each time by the vertex that
/// increases the cut least (closest to a seed on ties), up to `left_weight`.
fn grow(g: &Csr, seeds: &[usize], left_weight: u64) -> Vec<u8> {
    let n = g.order();
    let (dist, bfs_order) = bfs_from(g, seeds);
    let mut fallback: Vec<u32> = bfs_order;
    fallback.extend((0..n as u32).filter(|&v| dist[v as usize] == u32::MAX));
    let mut cursor = 0;
    let mut side = vec![1u8; n];
    let mut towards = vec![0.0f64; n];
    let weighted_degree: Vec<f64> = (0..n).map(|v| g.neighbors(v).map(|e| e.1).sum()).collect();
    let scan = scans(g);
    let mut heap: BinaryHeap<(Key, Reverse<u32>, Reverse<u32>)> = BinaryHeap::new();
    // Scan mode: vertices with an edge to the left side (the heap's entries).
    let mut touched = vec![false; if scan { n } else { 0 }];
    let mut weight = 0u64;
    let mut pending: Vec<usize> = seeds.iter().rev().copied().collect();
    while weight < left_weight {
        let v = match pending.pop() {
            Some(v) => v,
            None => {
                let mut found = None;
                if scan {
                    // The heap's order: largest gain, then nearest, then lowest number.
                    let mut best: Option<(f64, u32, usize)> = None;
                    for u in 0..n {
                        if !touched[u] || side[u] != 1 {
                            continue;
                        }
                        let gain = 2.0 * towards[u] - weighted_degree[u];
                        let better = best.is_none_or(|(bg, bd, _)| {
                            gain.total_cmp(&bg).then(bd.cmp(&dist[u])) == Ordering::Greater
                        });
                        if better {
                            best = Some((gain, dist[u], u));
                        }
                    }
                    found = best.map(|b| b.2);
                } else {
                    while let Some((Key(gain), _, Reverse(v))) = heap.pop() {
                        let v = v as usize;
                        if side[v] == 1 && gain == 2.0 * towards[v] - weighted_degree[v] {
                            found = Some(v);
                            break;
                        }
                    }
                }
                match found {
                    Some(v) => v,
                    None => {
                        while cursor < n && side[fallback[cursor] as usize] != 1 {
                            cursor += 1;
                        }
                        match fallback.get(cursor) {
                            Some(&v) => v as usize,
                            None => break,
                        }
                    }
                }
            }
        };
        if weight + g.vertex_weight[v] > left_weight && weight > 0 {
            // Too heavy for what is left (coarse graphs): skip it.
            side[v] = 2;
            continue;
        }
        side[v] = 0;
        weight += g.vertex_weight[v];
        for (u, w) in g.neighbors(v) {
            if side[u] == 1 {
                towards[u] += w;
                if scan {
                    touched[u] = true;
                } else {
                    let gain = 2.0 * towards[u] - weighted_degree[u];
                    heap.push((Key(gain), Reverse(dist[u]), Reverse(u as u32)));
                }
            }
        }
    }
    for s in &mut side {
        if *s == 2 {
            *s = 1;
        }
    }
    side
}

/// Fiduccia–Mattheyses passes: moves of single vertices by decreasing gain, each vertex
/// at most once per pass, the pass cut back to its best prefix. A state is better when
/// its balance violation (beyond `tolerance`) is smaller, then when its cut is.
fn fm_refine(g: &Csr, side: &mut [u8], target: u64, tolerance: u64, passes: usize) {
    let n = g.order();
    if n < 2 {
        return;
    }
    let max_w = max_vertex_weight(g);
    let mut gain = vec![0.0f64; n];
    let mut locked = vec![false; n];
    let mut moves: Vec<u32> = Vec::new();
    let stall_limit = (n / 16).clamp(16, 64);
    let mut queue = GainQueue::new(g);
    for _ in 0..passes {
        let mut left = left_weight_of(g, side);
        queue.clear();
        for v in 0..n {
            let mut gv = 0.0;
            let mut boundary = false;
            let sv = side[v];
            for (u, w) in g.neighbors(v) {
                // Branch-free: the sides of a dense graph's neighbours are unpredictable.
                let across = side[u] != sv;
                gv += if across { w } else { -w };
                boundary |= across;
            }
            gain[v] = gv;
            locked[v] = false;
            if boundary || left.abs_diff(target) > tolerance {
                queue.push(side[v], gv, v);
            }
        }
        moves.clear();
        let off = |left: u64| left.abs_diff(target).saturating_sub(tolerance);
        let mut cut_change = 0.0f64;
        let (mut best_violation, mut best_change, mut best_len) = (off(left), 0.0f64, 0usize);
        let mut stall = 0;
        loop {
            let tops = queue.tops(&gain, side, &locked);
            let now_off = left.abs_diff(target);
            let after = |s: usize, v: usize| {
                if s == 0 {
                    left - g.vertex_weight[v]
                } else {
                    left + g.vertex_weight[v]
                }
            };
            let mut choice: Option<(f64, usize, usize)> = None;
            for (s, top) in tops.iter().enumerate() {
                let Some((gv, v)) = *top else { continue };
                let new_off = after(s, v).abs_diff(target);
                let allowed = if now_off > tolerance {
                    new_off < now_off
                } else {
                    new_off <= tolerance + max_w
                };
                if allowed && choice.is_none_or(|c| gv > c.0) {
                    choice = Some((gv, v, s));
                }
            }
            let Some((gv, v, s)) = choice else { break };
            queue.pop(s, v);
            left = after(s, v);
            side[v] = 1 - side[v];
            locked[v] = true;
            cut_change -= gv;
            gain[v] = -gv;
            moves.push(v as u32);
            let sv = side[v];
            for (u, w) in g.neighbors(v) {
                if locked[u] {
                    continue;
                }
                gain[u] += if side[u] == sv { -2.0 * w } else { 2.0 * w };
                queue.push(side[u], gain[u], u);
            }
            let violation_now = off(left);
            let better = violation_now < best_violation
                || (violation_now == best_violation
                    && cut_change < best_change - 1e-9 * (1.0 + best_change.abs()));
            if better {
                best_violation = violation_now;
                best_change = cut_change;
                best_len = moves.len();
                stall = 0;
            } else {
                stall += 1;
                if stall > stall_limit {
                    break;
                }
            }
        }
        for &v in moves[best_len..].iter().rev() {
            let v = v as usize;
            side[v] = 1 - side[v];
        }
        if best_len == 0 {
            break;
        }
    }
}

/// Largest graph (in vertices) whose move candidates may be found by a scan over every
/// vertex instead of heaps ([`scans`]).
const SCAN_MAX: usize = 128;

/// Whether FM and greedy growing on `g` pick their next vertex by a scan: on small dense
/// graphs (mean degree at least an eighth of the order) a scan of a few dozen flags costs
/// less than the heap pushes of every gain update; on sparse ones the heaps win.
fn scans(g: &Csr) -> bool {
    let n = g.order();
    n <= SCAN_MAX && 8 * g.targets.len() >= n * n
}

/// The FM move candidates of both sides: the vertex of largest gain (lowest number on
/// ties) among the queued vertices of a side that are not locked. A vertex is queued
/// from its first push on; its current gain counts.
enum GainQueue {
    /// Lazy heaps, one per side: every gain update pushes an entry and stale entries
    /// (locked vertex, gain since changed) are dropped when they surface.
    Heaps([BinaryHeap<(Key, Reverse<u32>)>; 2]),
    /// One flag per vertex; the best is found by scanning (small dense graphs, see
    /// [`scans`]).
    Scan(Vec<bool>),
}

impl GainQueue {
    fn new(g: &Csr) -> Self {
        let n = g.order();
        if scans(g) {
            GainQueue::Scan(vec![false; n])
        } else {
            GainQueue::Heaps([BinaryHeap::new(), BinaryHeap::new()])
        }
    }

    fn clear(&mut self) {
        match self {
            GainQueue::Heaps(heaps) => heaps.iter_mut().for_each(BinaryHeap::clear),
            GainQueue::Scan(queued) => queued.fill(false),
        }
    }

    /// Queues `v` (on side `s`) with its new gain `gv`.
    #[inline]
    fn push(&mut self, s: u8, gv: f64, v: usize) {
        match self {
            GainQueue::Heaps(heaps) => heaps[s as usize].push((Key(gv), Reverse(v as u32))),
            GainQueue::Scan(queued) => queued[v] = true,
        }
    }

    /// The best candidate (gain, vertex) of each side.
    fn tops(&mut self, gain: &[f64], side: &[u8], locked: &[bool]) -> [Option<(f64, usize)>; 2] {
        let mut tops: [Option<(f64, usize)>; 2] = [None, None];
        match self {
            GainQueue::Heaps(heaps) => {
                for (s, heap) in heaps.iter_mut().enumerate() {
                    while let Some(&(Key(gv), Reverse(v))) = heap.peek() {
                        let v = v as usize;
                        if !locked[v] && side[v] as usize == s && gain[v] == gv {
                            tops[s] = Some((gv, v));
                            break;
                        }
                        heap.pop();
                    }
                }
            }
            GainQueue::Scan(queued) => {
                for (v, &q) in queued.iter().enumerate() {
                    if !q || locked[v] {
                        continue;
                    }
                    let top = &mut tops[side[v] as usize];
                    if top.is_none_or(|(gt, _)| gain[v].total_cmp(&gt) == Ordering::Greater) {
                        *top = Some((gain[v], v));
                    }
                }
            }
        }
        tops
    }

    /// Takes `v`, the top of side `s`, out.
    fn pop(&mut self, s: usize, v: usize) {
        match self {
            GainQueue::Heaps(heaps) => {
                heaps[s].pop();
            }
            GainQueue::Scan(queued) => queued[v] = false,
        }
    }
}

/// Moves the vertices of the heavy side that cost least until the left side weighs
/// exactly `target` (unit weights at the finest level make that always possible).
fn force_balance(g: &Csr, side: &mut [u8], target: u64) {
    let mut left = left_weight_of(g, side);
    if left == target {
        return;
    }
    let from: u8 = if left > target { 0 } else { 1 };
    let mut candidates: Vec<(f64, usize)> = (0..g.order())
        .filter(|&v| side[v] == from)
        .map(|v| {
            let gv: f64 = g
                .neighbors(v)
                .map(|(u, w)| if side[u] != side[v] { w } else { -w })
                .sum();
            (gv, v)
        })
        .collect();
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, v) in candidates {
        if left == target {
            break;
        }
        let w = g.vertex_weight[v];
        let new_left = if from == 0 { left - w } else { left + w };
        if new_left.abs_diff(target) < left.abs_diff(target) {
            side[v] = 1 - from;
            left = new_left;
        }
    }
}

/// A totally ordered float for the heaps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Key(f64);

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A small deterministic generator for the matching order.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::treematch::patterns::stencil_2d;

    #[test]
    fn a_grid_is_split_into_compact_tiles() {
        let g = stencil_2d(256).symmetric();
        let node = Tree::from_arities(&[2, 8]).unwrap();
        let tree = Tree::cluster(&node, 16).unwrap();
        let leaves = recursive_bisection(&g, &tree);
        let mut seen = leaves.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 256, "injective");
        // 16 x 16 grid in 16 nodes: 4 x 4 tiles cut 2 x 16 x 3 edges per direction.
        let mut crossing = 0;
        for v in 0..256 {
            for (u, _) in g.neighbors(v) {
                if u > v && tree.leaves()[leaves[u]].node != tree.leaves()[leaves[v]].node {
                    crossing += 1;
                }
            }
        }
        assert!(
            crossing <= 2 * 16 * 3 + 16,
            "{crossing} edges between nodes"
        );
    }

    /// Vertices of `g` on the left side against those on the right: edges cut.
    fn edges_cut(g: &SymGraph, side: &[u8]) -> usize {
        (0..g.order())
            .flat_map(|v| g.neighbors(v).map(move |(u, _)| (v, u)))
            .filter(|&(v, u)| u > v && side[u] != side[v])
            .count()
    }

    #[test]
    fn meshes_are_bisected_straight_across() {
        use crate::treematch::patterns::{stencil_2d, stencil_3d};
        // n, the mesh, and its least balanced cut: across the longest side.
        let cases = [
            (128, stencil_2d(128), 8),  // 16 x 8
            (256, stencil_2d(256), 16), // 16 x 16
            (1024, stencil_2d(1024), 32),
            (4096, stencil_2d(4096), 64),
            (512, stencil_3d(512), 64), // 8 x 8 x 8
        ];
        for (n, matrix, least) in cases {
            let g = matrix.symmetric();
            let vertices: Vec<u32> = (0..n as u32).collect();
            let mut local = vec![NONE; n];
            let side = multilevel_bisection(Csr::induced(&g, &vertices, &mut local), n as u64 / 2);
            assert_eq!(side.iter().filter(|&&s| s == 0).count(), n / 2);
            assert_eq!(edges_cut(&g, &side), least, "{n} ranks");
        }
    }

    #[test]
    fn fewer_ranks_than_leaves_pack_and_isolated_ranks_are_placed() {
        let g = SymGraph::empty(37);
        let node = Tree::from_arities(&[2, 8]).unwrap();
        let tree = Tree::cluster(&node, 4).unwrap();
        let leaves = recursive_bisection(&g, &tree);
        let mut seen = leaves.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 37);
        assert!(
            leaves.iter().all(|&l| l < 48),
            "packed into the first nodes"
        );
    }
}
