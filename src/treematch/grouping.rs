//! One level of TreeMatch: split the units of a level into groups of given shapes so that
//! the communication kept inside the groups is as large as possible.
//!
//! Units carry a *shape* (the shape of the subtree they will occupy); a group asks for a
//! multiset of shapes (the children of a tree vertex). In a symmetric tree there is one
//! shape per level and every group asks for `arity` units of it.
//!
//! Exact search is used when the number of ways to form the groups is small; otherwise a
//! greedy growth (seed = heaviest free unit, then repeatedly the free unit with the
//! largest communication towards the group) followed by swap refinement between groups.

use ndarray::Array2;

use crate::matrix::SymGraph;

/// What the groups of a level must look like.
#[derive(Debug, Clone)]
pub struct LevelRequest {
    /// Shape of every unit.
    pub unit_shape: Vec<u32>,
    /// For each group: how many units of each shape it needs, as `(shape, count)`.
    pub templates: Vec<Vec<(u32, usize)>>,
}

/// Tuning of the level grouping.
#[derive(Debug, Clone, Copy)]
pub struct GroupingParams {
    /// Largest number of candidate partitions searched exhaustively.
    pub exact_limit: f64,
    /// Swap-refinement passes after the greedy grouping.
    pub refine_passes: usize,
}

/// Most units a level may have for the exhaustive search: it keeps an m × m weight
/// table, so the search is bounded in memory whatever the partition count says.
pub const EXACT_MAX_UNITS: usize = 32;

/// Groups the units: returns, for each group, its members.
pub fn group_level(
    graph: &SymGraph,
    request: &LevelRequest,
    params: GroupingParams,
) -> Vec<Vec<u32>> {
    if let Some(k) = uniform_arity(request) {
        let m = graph.order();
        if k == 1 {
            // Every unit is a group of its own: nothing to choose.
            return (0..m as u32).map(|u| vec![u]).collect();
        }
        if k == m {
            // One group takes every unit.
            return vec![(0..m as u32).collect()];
        }
        if m <= EXACT_MAX_UNITS && partition_count(m, k) <= params.exact_limit {
            return exact_uniform(graph, k, request.templates.len());
        }
    }
    let mut groups = greedy(graph, request);
    if params.refine_passes > 0 {
        if graph.order() * groups.len() <= TABLE_MAX_ENTRIES {
            refine_with_table(graph, request, &mut groups, params.refine_passes);
        } else {
            refine(graph, request, &mut groups, params.refine_passes);
        }
    }
    groups
}

/// Largest units × groups product for which [`refine_with_table`] keeps the weight of
/// every unit towards every group.
const TABLE_MAX_ENTRIES: usize = 4096;

/// `Some(k)` when all units have one shape and every group asks for k of them.
fn uniform_arity(request: &LevelRequest) -> Option<usize> {
    let first_shape = *request.unit_shape.first()?;
    if request.unit_shape.iter().any(|&s| s != first_shape) {
        return None;
    }
    let k = request
        .templates
        .first()?
        .iter()
        .map(|t| t.1)
        .sum::<usize>();
    request
        .templates
        .iter()
        .all(|t| t.len() == 1 && t[0].1 == k)
        .then_some(k)
}

/// Number of ways to split `m` units into groups of `k` (unordered groups).
fn partition_count(m: usize, k: usize) -> f64 {
    if k == 0 || m % k != 0 {
        return f64::INFINITY;
    }
    let mut count = 1.0f64;
    let mut remaining = m;
    while remaining > 0 {
        // choose k-1 companions for the lowest remaining unit
        count *= binomial(remaining - 1, k - 1);
        remaining -= k;
        if count > 1e12 {
            return count;
        }
    }
    count
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Exhaustive search over all splits into `groups` groups of `k`.
fn exact_uniform(graph: &SymGraph, k: usize, groups: usize) -> Vec<Vec<u32>> {
    let m = graph.order();
    let mut weight = vec![0.0f64; m * m];
    for v in 0..m {
        for (u, w) in graph.neighbors(v) {
            weight[v * m + u] = w;
        }
    }
    let mut search = ExactSearch {
        m,
        k,
        weight,
        used: vec![false; m],
        current: Vec::with_capacity(groups),
        best: Vec::new(),
        best_value: f64::NEG_INFINITY,
    };
    search.next_group(0.0);
    search.best
}

struct ExactSearch {
    m: usize,
    k: usize,
    weight: Vec<f64>,
    used: Vec<bool>,
    current: Vec<Vec<u32>>,
    best: Vec<Vec<u32>>,
    best_value: f64,
}

impl ExactSearch {
    fn next_group(&mut self, value: f64) {
        let Some(first) = (0..self.m).find(|&v| !self.used[v]) else {
            if value > self.best_value {
                self.best_value = value;
                self.best = self.current.clone();
            }
            return;
        };
        self.used[first] = true;
        self.current.push(vec![first as u32]);
        self.extend_group(first + 1, value);
        self.current.pop();
        self.used[first] = false;
    }

    fn extend_group(&mut self, from: usize, value: f64) {
        let group_len = self.current.last().map_or(0, Vec::len);
        if group_len == self.k {
            self.next_group(value);
            return;
        }
        let missing = self.k - group_len;
        for v in from..self.m {
            if self.used[v] {
                continue;
            }
            // Not enough free units left after v to complete the group: stop.
            let free_from_v = (v..self.m).filter(|&x| !self.used[x]).count();
            if free_from_v < missing {
                break;
            }
            let gain: f64 = self
                .current
                .last()
                .map(|g| {
                    g.iter()
                        .map(|&u| self.weight[u as usize * self.m + v])
                        .sum()
                })
                .unwrap_or(0.0);
            self.used[v] = true;
            if let Some(g) = self.current.last_mut() {
                g.push(v as u32);
            }
            self.extend_group(v + 1, value + gain);
            if let Some(g) = self.current.last_mut() {
                g.pop();
            }
            self.used[v] = false;
        }
    }
}

/// Greedy growth of the groups one after the other.
fn greedy(graph: &SymGraph, request: &LevelRequest) -> Vec<Vec<u32>> {
    let m = graph.order();
    let mut free = vec![true; m];
    // Units by decreasing weighted degree (stable: lower index first on ties), per shape.
    let max_shape = request.unit_shape.iter().copied().max().unwrap_or(0) as usize;
    let mut by_weight: Vec<Vec<u32>> = vec![Vec::new(); max_shape + 1];
    let degrees: Vec<f64> = (0..m).map(|v| graph.weighted_degree(v)).collect();
    let mut order: Vec<u32> = (0..m as u32).collect();
    order.sort_by(|&a, &b| degrees[b as usize].total_cmp(&degrees[a as usize]));
    for &v in &order {
        by_weight[request.unit_shape[v as usize] as usize].push(v);
    }
    let mut cursor = vec![0usize; max_shape + 1];
    let mut gain = vec![0.0f64; m];
    let mut in_candidates = vec![false; m];
    // Largest groups first: with silent virtual units (fewer ranks than leaves) the real
    // ranks then gather in the big subtrees and the leftovers pad the small ones.
    let mut fill_order: Vec<usize> = (0..request.templates.len()).collect();
    fill_order.sort_by_key(|&t| std::cmp::Reverse(template_size(&request.templates[t])));
    let mut groups = vec![Vec::new(); request.templates.len()];
    for t in fill_order {
        let template = &request.templates[t];
        let mut need: Vec<(u32, usize)> = template.clone();
        let size: usize = need.iter().map(|t| t.1).sum();
        let mut members: Vec<u32> = Vec::with_capacity(size);
        let mut candidates: Vec<u32> = Vec::new();
        while members.len() < size {
            let pick = best_candidate(&candidates, &gain, &free, &need, &request.unit_shape)
                .or_else(|| heaviest_free(&by_weight, &mut cursor, &free, &need));
            let Some(unit) = pick else { break };
            let u = unit as usize;
            free[u] = false;
            members.push(unit);
            if let Some(slot) = need
                .iter_mut()
                .find(|t| t.0 == request.unit_shape[u] && t.1 > 0)
            {
                slot.1 -= 1;
            }
            for (x, w) in graph.neighbors(u) {
                if free[x] {
                    gain[x] += w;
                    if !in_candidates[x] {
                        in_candidates[x] = true;
                        candidates.push(x as u32);
                    }
                }
            }
        }
        for &c in &candidates {
            gain[c as usize] = 0.0;
            in_candidates[c as usize] = false;
        }
        groups[t] = members;
    }
    groups
}

fn template_size(template: &[(u32, usize)]) -> usize {
    template.iter().map(|t| t.1).sum()
}

/// The free candidate of a needed shape with the largest gain (lowest index on ties).
fn best_candidate(
    candidates: &[u32],
    gain: &[f64],
    free: &[bool],
    need: &[(u32, usize)],
    shape: &[u32],
) -> Option<u32> {
    let mut best: Option<(f64, u32)> = None;
    for &c in candidates {
        let ci = c as usize;
        if !free[ci] || gain[ci] <= 0.0 || !needed(need, shape[ci]) {
            continue;
        }
        let better = match best {
            None => true,
            Some((g, b)) => gain[ci] > g || (gain[ci] == g && c < b),
        };
        if better {
            best = Some((gain[ci], c));
        }
    }
    best.map(|b| b.1)
}

fn needed(need: &[(u32, usize)], shape: u32) -> bool {
    need.iter().any(|t| t.0 == shape && t.1 > 0)
}

/// The free unit with the largest weighted degree among the needed shapes.
fn heaviest_free(
    by_weight: &[Vec<u32>],
    cursor: &mut [usize],
    free: &[bool],
    need: &[(u32, usize)],
) -> Option<u32> {
    let mut best: Option<u32> = None;
    for &(shape, count) in need {
        if count == 0 {
            continue;
        }
        let s = shape as usize;
        while cursor[s] < by_weight[s].len() && !free[by_weight[s][cursor[s]] as usize] {
            cursor[s] += 1;
        }
        if let Some(&v) = by_weight[s].get(cursor[s]) {
            // among shapes, the earliest in the global weight order wins: compare by
            // position is not available across shapes, so prefer the lowest index.
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    }
    best
}

/// For each of `m` units, its group and its position in that group's member list.
fn membership(groups: &[Vec<u32>], m: usize) -> (Vec<u32>, Vec<usize>) {
    let mut group_of = vec![0u32; m];
    let mut position = vec![0usize; m];
    for (g, members) in groups.iter().enumerate() {
        for (p, &u) in members.iter().enumerate() {
            group_of[u as usize] = g as u32;
            position[u as usize] = p;
        }
    }
    (group_of, position)
}

/// Swap refinement: move a unit to the group it talks to most by exchanging it with a
/// unit of the same shape there, when that increases the weight kept inside groups.
fn refine(graph: &SymGraph, request: &LevelRequest, groups: &mut [Vec<u32>], passes: usize) {
    let m = graph.order();
    let (mut group_of, mut position) = membership(groups, m);
    // Bound the work on dense matrices: a few sweeps over the adjacency at most.
    let mut budget = super::refine::work_budget(graph, 8);
    let mut towards = GroupWeights::new(groups.len());
    for _ in 0..passes {
        let mut improved = false;
        for u in 0..m {
            if graph.degree(u) == 0 {
                continue;
            }
            budget = budget.saturating_sub(graph.degree(u));
            towards.fill(graph, u, &group_of);
            let a = group_of[u] as usize;
            let w_ua = towards.get(a);
            let Some((b, w_ub)) = towards.best_other(a) else {
                continue;
            };
            if w_ub <= w_ua {
                continue;
            }
            let mut best: Option<(f64, u32)> = None;
            for &v in &groups[b] {
                let vi = v as usize;
                if request.unit_shape[vi] != request.unit_shape[u] {
                    continue;
                }
                budget = budget.saturating_sub(graph.degree(vi));
                let (w_va, w_vb, w_uv) = weights_of(graph, vi, a as u32, b as u32, u, &group_of);
                if let Some(gain) = swap_gain(w_ua, w_ub, w_va, w_vb, w_uv)
                    && best.is_none_or(|(g, _)| gain > g)
                {
                    best = Some((gain, v));
                }
            }
            if let Some((_, v)) = best {
                swap(groups, &mut group_of, &mut position, u, v as usize);
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

/// [`refine`] on small levels: the weight of every unit towards every group is kept in a
/// table (with the number of its neighbours there) and updated after each swap, so that
/// a candidate swap costs O(1) instead of a walk over both units' edges. The work budget
/// is still counted in the edge visits of those walks, so the refinement stops where the
/// walking one stopped; a chosen swap is checked against the walk before it is made
/// (the table drifts by rounding).
fn refine_with_table(
    graph: &SymGraph,
    request: &LevelRequest,
    groups: &mut [Vec<u32>],
    passes: usize,
) {
    let m = graph.order();
    let g_count = groups.len();
    let (mut group_of, mut position) = membership(groups, m);
    let mut table = GroupTable::new(graph, &group_of, g_count);
    let mut to_u = vec![0.0f64; m];
    let mut budget = super::refine::work_budget(graph, 8);
    let mut towards = GroupWeights::new(g_count);
    for _ in 0..passes {
        let mut improved = false;
        for u in 0..m {
            if graph.degree(u) == 0 {
                continue;
            }
            budget = budget.saturating_sub(graph.degree(u));
            let a = group_of[u] as usize;
            let (row_u, links_u) = (table.weight.row(u), table.links.row(u));
            let w_ua = row_u[a];
            // The heaviest other group with a neighbour of u, the lowest on ties.
            let mut other: Option<(usize, f64)> = None;
            for (g, (&w, &l)) in row_u.iter().zip(links_u).enumerate() {
                if g != a && l > 0 && other.is_none_or(|(_, bw)| w > bw) {
                    other = Some((g, w));
                }
            }
            let Some((b, w_ub)) = other else {
                continue;
            };
            if w_ub <= w_ua {
                continue;
            }
            for (x, w) in graph.neighbors(u) {
                to_u[x] = w;
            }
            let mut best: Option<(f64, u32)> = None;
            for &v in &groups[b] {
                let vi = v as usize;
                if request.unit_shape[vi] != request.unit_shape[u] {
                    continue;
                }
                budget = budget.saturating_sub(graph.degree(vi));
                let w_uv = to_u[vi];
                let w_va = table.weight[[vi, a]] - w_uv;
                let w_vb = table.weight[[vi, b]];
                if let Some(gain) = swap_gain(w_ua, w_ub, w_va, w_vb, w_uv)
                    && best.is_none_or(|(g, _)| gain > g)
                {
                    best = Some((gain, v));
                }
            }
            for (x, _) in graph.neighbors(u) {
                to_u[x] = 0.0;
            }
            if let Some((_, v)) = best {
                let vi = v as usize;
                // The exact gain, from walks over both units' edges.
                towards.fill(graph, u, &group_of);
                let (w_ua, w_ub) = (towards.get(a), towards.get(b));
                let (w_va, w_vb, w_uv) = weights_of(graph, vi, a as u32, b as u32, u, &group_of);
                if swap_gain(w_ua, w_ub, w_va, w_vb, w_uv).is_some() {
                    table.moved(graph, u, a, b);
                    table.moved(graph, vi, b, a);
                    swap(groups, &mut group_of, &mut position, u, vi);
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

/// The gain in weight kept inside groups of swapping unit u (in group a) with unit v (in
/// group b), from the weights u→a, u→b, v→a (without u), v→b and u→v; `None` unless it
/// is above rounding noise.
fn swap_gain(w_ua: f64, w_ub: f64, w_va: f64, w_vb: f64, w_uv: f64) -> Option<f64> {
    let gain = (w_ub - w_ua) + (w_va - w_vb) - 2.0 * w_uv;
    (gain > 1e-9 * (1.0 + w_ub)).then_some(gain)
}

/// [`refine_with_table`]'s table: `weight[[x, g]]`, the weight from unit x to the
/// units of group g, and `links[[x, g]]`, how many of them x has an edge to.
struct GroupTable {
    weight: Array2<f64>,
    links: Array2<u32>,
}

impl GroupTable {
    /// The table of the units of `graph` in groups `group_of` (`groups` groups).
    fn new(graph: &SymGraph, group_of: &[u32], groups: usize) -> Self {
        let units = graph.order();
        let mut weight = Array2::<f64>::zeros((units, groups));
        let mut links = Array2::<u32>::zeros((units, groups));
        for x in 0..units {
            for (y, w) in graph.neighbors(x) {
                let slot = [x, group_of[y] as usize];
                weight[slot] += w;
                links[slot] += 1;
            }
        }
        Self { weight, links }
    }

    /// `unit` moved from group `from` to group `to`: its neighbours' rows follow.
    fn moved(&mut self, graph: &SymGraph, unit: usize, from: usize, to: usize) {
        for (x, w) in graph.neighbors(unit) {
            self.weight[[x, from]] -= w;
            self.weight[[x, to]] += w;
            self.links[[x, from]] -= 1;
            self.links[[x, to]] += 1;
        }
    }
}

/// Weights from `v` to groups `a` and `b` and to unit `u`.
fn weights_of(
    graph: &SymGraph,
    v: usize,
    a: u32,
    b: u32,
    u: usize,
    group_of: &[u32],
) -> (f64, f64, f64) {
    let (mut w_va, mut w_vb, mut w_uv) = (0.0, 0.0, 0.0);
    for (x, w) in graph.neighbors(v) {
        if x == u {
            w_uv = w;
        }
        let g = group_of[x];
        if g == a && x != u {
            w_va += w;
        } else if g == b {
            w_vb += w;
        }
    }
    (w_va, w_vb, w_uv)
}

fn swap(groups: &mut [Vec<u32>], group_of: &mut [u32], position: &mut [usize], u: usize, v: usize) {
    let (gu, gv) = (group_of[u] as usize, group_of[v] as usize);
    let (pu, pv) = (position[u], position[v]);
    groups[gu][pu] = v as u32;
    groups[gv][pv] = u as u32;
    group_of.swap(u, v);
    position.swap(u, v);
}

/// Weight from one unit towards each group, with a sparse reset.
struct GroupWeights {
    weight: Vec<f64>,
    touched: Vec<u32>,
}

impl GroupWeights {
    fn new(groups: usize) -> Self {
        Self {
            weight: vec![0.0; groups],
            touched: Vec::new(),
        }
    }

    fn fill(&mut self, graph: &SymGraph, u: usize, group_of: &[u32]) {
        for &g in &self.touched {
            self.weight[g as usize] = 0.0;
        }
        self.touched.clear();
        for (x, w) in graph.neighbors(u) {
            let g = group_of[x];
            if self.weight[g as usize] == 0.0 {
                self.touched.push(g);
            }
            self.weight[g as usize] += w;
        }
    }

    fn get(&self, g: usize) -> f64 {
        self.weight[g]
    }

    fn best_other(&self, own: usize) -> Option<(usize, f64)> {
        self.touched
            .iter()
            .map(|&g| g as usize)
            .filter(|&g| g != own)
            .map(|g| (g, self.weight[g]))
            .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::CommMatrix;

    fn uniform(m: usize, k: usize) -> LevelRequest {
        LevelRequest {
            unit_shape: vec![0; m],
            templates: vec![vec![(0, k)]; m / k],
        }
    }

    fn internal(graph: &SymGraph, groups: &[Vec<u32>]) -> f64 {
        let mut total = 0.0;
        for g in groups {
            for &u in g {
                for (x, w) in graph.neighbors(u as usize) {
                    if g.contains(&(x as u32)) {
                        total += w;
                    }
                }
            }
        }
        total / 2.0
    }

    #[test]
    fn pairs_are_found_exactly_and_greedily() {
        // 0-3, 1-2 talk a lot; 0-1 a little.
        let m = CommMatrix::from_triples(4, [(0, 3, 10.0), (1, 2, 10.0), (0, 1, 1.0)]).symmetric();
        for limit in [1e9, 0.0] {
            let params = GroupingParams {
                exact_limit: limit,
                refine_passes: 4,
            };
            let groups = group_level(&m, &uniform(4, 2), params);
            assert_eq!(internal(&m, &groups), 40.0 / 2.0, "limit {limit}");
        }
    }

    #[test]
    fn shapes_are_respected() {
        let m = CommMatrix::from_triples(4, [(0, 1, 5.0), (2, 3, 5.0)]).symmetric();
        let request = LevelRequest {
            unit_shape: vec![0, 1, 0, 1],
            templates: vec![vec![(0, 1), (1, 1)], vec![(0, 1), (1, 1)]],
        };
        let params = GroupingParams {
            exact_limit: 1e9,
            refine_passes: 2,
        };
        let groups = group_level(&m, &request, params);
        for g in &groups {
            let mut shapes: Vec<u32> = g.iter().map(|&u| request.unit_shape[u as usize]).collect();
            shapes.sort_unstable();
            assert_eq!(shapes, vec![0, 1]);
        }
        assert_eq!(internal(&m, &groups), 20.0 / 2.0);
    }

    #[test]
    fn trivial_levels_need_no_search_and_no_quadratic_table() {
        // 200 000 units in one group, or each alone: an m × m table would be 320 GB.
        let m = 200_000;
        let graph = CommMatrix::from_triples(m, [(0, 1, 1.0)]).symmetric();
        let params = GroupingParams {
            exact_limit: 1e9,
            refine_passes: 0,
        };
        let one = group_level(&graph, &uniform(m, m), params);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].len(), m);
        let alone = group_level(&graph, &uniform(m, 1), params);
        assert_eq!(alone.len(), m);
        assert!(alone.iter().enumerate().all(|(i, g)| g == &[i as u32]));
    }

    #[test]
    fn partition_count_matches_small_cases() {
        assert_eq!(partition_count(4, 2), 3.0);
        assert_eq!(partition_count(8, 4), 35.0);
        assert_eq!(partition_count(6, 3), 10.0);
        assert!(partition_count(7, 2).is_infinite());
    }
}
