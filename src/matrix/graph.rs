//! The undirected weighted graph of a symmetrised communication matrix.

use super::CommMatrix;

/// Undirected graph in compressed rows: both (i, j) and (j, i) are stored, each with
/// weight M(i,j) + M(j,i). Vertices are `0..order`.
#[derive(Debug, Clone, PartialEq)]
pub struct SymGraph {
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
}

impl SymGraph {
    /// M + Mᵀ of a directed matrix.
    pub fn from_directed(m: &CommMatrix) -> Self {
        let n = m.order();
        let mut triples: Vec<(u32, u32, f64)> = Vec::with_capacity(2 * m.nonzeros());
        for i in 0..n {
            for (j, w) in m.row(i) {
                triples.push((i as u32, j as u32, w));
                triples.push((j as u32, i as u32, w));
            }
        }
        Self::from_sorted_pairs(n, triples)
    }

    /// Builds a graph from both-direction triples (duplicates add up).
    pub fn from_sorted_pairs(n: usize, triples: Vec<(u32, u32, f64)>) -> Self {
        let (offsets, targets, weights) = compressed_rows(n, triples);
        Self {
            offsets,
            targets,
            weights,
        }
    }

    /// A graph with `n` vertices and no edge.
    pub fn empty(n: usize) -> Self {
        Self {
            offsets: vec![0; n + 1],
            targets: Vec::new(),
            weights: Vec::new(),
        }
    }

    /// Number of vertices.
    pub fn order(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Neighbours of `v` with the edge weights.
    pub fn neighbors(&self, v: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.offsets[v]..self.offsets[v + 1];
        self.targets[range.clone()]
            .iter()
            .zip(&self.weights[range])
            .map(|(&t, &w)| (t as usize, w))
    }

    /// Number of neighbours of `v`.
    pub fn degree(&self, v: usize) -> usize {
        self.offsets[v + 1] - self.offsets[v]
    }

    /// Number of stored (directed) adjacency entries, twice the number of edges.
    pub fn adjacency_len(&self) -> usize {
        self.targets.len()
    }

    /// Sum of the weights of the edges at `v`.
    pub fn weighted_degree(&self, v: usize) -> f64 {
        self.weights[self.offsets[v]..self.offsets[v + 1]]
            .iter()
            .sum()
    }

    /// The subgraph induced by `vertices`, renumbered `0..vertices.len()` in that order.
    pub fn subgraph(&self, vertices: &[usize]) -> SymGraph {
        let mut new_index = vec![u32::MAX; self.order()];
        for (k, &v) in vertices.iter().enumerate() {
            new_index[v] = k as u32;
        }
        let mut triples = Vec::new();
        for (k, &v) in vertices.iter().enumerate() {
            for (u, w) in self.neighbors(v) {
                if new_index[u] != u32::MAX {
                    triples.push((k as u32, new_index[u], w));
                }
            }
        }
        SymGraph::from_sorted_pairs(vertices.len(), triples)
    }

    /// Contracts the graph: vertex v becomes `group[v]` (in `0..groups`); weights
    /// between groups add up and weights inside a group disappear.
    pub fn contract(&self, group: &[u32], groups: usize) -> SymGraph {
        // Bucket vertices by group, then accumulate each group's row with a dense marker.
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); groups];
        for (v, &g) in group.iter().enumerate() {
            members[g as usize].push(v as u32);
        }
        let mut offsets = Vec::with_capacity(groups + 1);
        offsets.push(0);
        let mut targets = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        let mut slot = vec![usize::MAX; groups];
        for (g, vs) in members.iter().enumerate() {
            let row_begin = targets.len();
            for &v in vs {
                for (u, w) in self.neighbors(v as usize) {
                    let h = group[u] as usize;
                    if h == g {
                        continue;
                    }
                    if slot[h] == usize::MAX || slot[h] < row_begin {
                        slot[h] = targets.len();
                        targets.push(h as u32);
                        weights.push(w);
                    } else {
                        weights[slot[h]] += w;
                    }
                }
            }
            offsets.push(targets.len());
        }
        SymGraph {
            offsets,
            targets,
            weights,
        }
    }
}

/// Compressed rows of `n` rows from `(row, column, value)` triples, sorted here;
/// repeated (row, column) pairs add up. Returns (row offsets, columns, values).
pub(super) fn compressed_rows(
    n: usize,
    mut triples: Vec<(u32, u32, f64)>,
) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    triples.sort_unstable_by_key(|&(i, j, _)| (i, j));
    let mut offsets = vec![0usize; n + 1];
    let mut columns = Vec::with_capacity(triples.len());
    let mut values: Vec<f64> = Vec::with_capacity(triples.len());
    let mut last = None;
    for (i, j, w) in triples {
        if last == Some((i, j)) {
            if let Some(x) = values.last_mut() {
                *x += w;
            }
            continue;
        }
        last = Some((i, j));
        columns.push(j);
        values.push(w);
        offsets[i as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    (offsets, columns, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetrises_and_contracts() {
        let m = CommMatrix::from_dense(&[
            vec![0.0, 1.0, 2.0, 0.0],
            vec![3.0, 0.0, 0.0, 4.0],
            vec![0.0, 0.0, 0.0, 5.0],
            vec![0.0, 0.0, 6.0, 0.0],
        ]);
        let g = m.symmetric();
        let n0: Vec<_> = g.neighbors(0).collect();
        assert_eq!(n0, vec![(1, 4.0), (2, 2.0)]);
        assert_eq!(g.weighted_degree(3), 4.0 + 11.0);
        let c = g.contract(&[0, 0, 1, 1], 2);
        assert_eq!(c.neighbors(0).collect::<Vec<_>>(), vec![(1, 6.0)]);
        assert_eq!(c.neighbors(1).collect::<Vec<_>>(), vec![(0, 6.0)]);
    }
}
