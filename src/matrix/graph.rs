//! The undirected weighted graph of a symmetrised communication matrix, held in
//! petgraph's compressed-row graph ([`petgraph::csr::Csr`]).

use petgraph::Undirected;
use petgraph::csr::Csr;

use super::CommMatrix;

/// The petgraph type of a communication graph: vertices are ranks `0..n` (no vertex
/// data), an edge's weight is the volume exchanged both ways, and every edge is stored
/// in both rows, each row sorted by neighbour.
pub type CommGraph = Csr<(), f64, Undirected, u32>;

/// Undirected communication graph: vertices are `0..order`, the edge {i, j} weighs
/// M(i,j) + M(j,i).
///
/// It is a [`CommGraph`] (petgraph's [`Csr`]) that is known to be symmetric: every
/// stored (i, j, w) has its (j, i, w), no self-loop, weights finite and non-negative. The
/// mapper reads the `Csr`'s rows in place ([`Csr::neighbors_slice`],
/// [`Csr::edges_slice`]); [`SymGraph::from_csr`] checks a graph built elsewhere and
/// [`SymGraph::as_csr`] / [`SymGraph::into_csr`] give it back for petgraph's algorithms.
///
/// The `Csr` has the layout of the hand-made rows it replaced (row offsets, `u32`
/// neighbours, `f64` weights). On `benches/mapper.rs` (24 cases, main's binary and this
/// one run back to back on a shared, loaded 2-core machine) the quietest run put no
/// case above 1.08 of the old median; the four 1024-rank cases at 1.05–1.08 there came
/// out at 0.996–1.018 on the best sample of four runs of each binary, so the mapper
/// keeps no private graph type. Contraction sorts each new row (the `Csr` is
/// built from sorted rows only).
///
/// ```
/// use petgraph::visit::EdgeRef;
/// use rankmig::matrix::{CommGraph, CommMatrix, SymGraph};
///
/// let g = CommMatrix::from_triples(3, [(0, 1, 2.0), (1, 0, 3.0), (1, 2, 1.0)]).symmetric();
/// assert_eq!(g.neighbors(1).collect::<Vec<_>>(), vec![(0, 5.0), (2, 1.0)]);
///
/// // The same graph built with petgraph: both directions, sorted rows.
/// let csr = CommGraph::from_sorted_edges(&[(0, 1, 5.0), (1, 0, 5.0), (1, 2, 1.0), (2, 1, 1.0)])
///     .unwrap();
/// let built = SymGraph::from_csr(csr, 3).unwrap();
/// assert_eq!(built, g);
/// let heavy: Vec<u32> = g.as_csr().edges(1).filter(|e| *e.weight() > 2.0).map(|e| e.target()).collect();
/// assert_eq!(heavy, vec![0]);
/// ```
#[derive(Debug, Clone)]
pub struct SymGraph {
    csr: CommGraph,
    /// Stored (directed) adjacency entries, twice the edges: the `Csr` does not say it.
    adjacency: usize,
}

impl PartialEq for SymGraph {
    fn eq(&self, other: &Self) -> bool {
        self.order() == other.order()
            && self.adjacency == other.adjacency
            && (0..self.order()).all(|v| self.neighbors(v).eq(other.neighbors(v)))
    }
}

/// Why a petgraph graph is not a communication graph ([`SymGraph::from_csr`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    /// The graph has more vertices than the ranks it is said to have.
    #[error("the graph has {found} vertices, more than the {order} ranks")]
    TooManyVertices {
        /// Vertices of the graph.
        found: usize,
        /// Ranks expected.
        order: usize,
    },
    /// An edge stored in one row only, or with different weights in the two rows.
    #[error("edge {from} -> {to} (weight {weight}) has no equal edge {to} -> {from}")]
    NotSymmetric {
        /// Row of the edge.
        from: usize,
        /// Its neighbour.
        to: usize,
        /// Its weight.
        weight: f64,
    },
    /// A rank connected to itself.
    #[error("rank {rank} has an edge to itself")]
    SelfLoop {
        /// The rank.
        rank: usize,
    },
    /// A weight that is not a finite non-negative number.
    #[error("edge {from} -> {to} has weight {weight}, not a finite non-negative volume")]
    BadWeight {
        /// Row of the edge.
        from: usize,
        /// Its neighbour.
        to: usize,
        /// Its weight.
        weight: f64,
    },
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
        Self::from_pairs(n, triples)
    }

    /// Builds a graph of `n` vertices from both-direction `(i, j, w)` triples in any
    /// order (sorted here; repeated pairs add up). Indices must be `< n`.
    pub fn from_pairs(n: usize, mut triples: Vec<(u32, u32, f64)>) -> Self {
        triples.sort_unstable_by_key(|&(i, j, _)| (i, j));
        add_up_repeated_pairs(&mut triples);
        Self::from_sorted_unique(n, &triples)
    }

    /// A graph with `n` vertices and no edge.
    pub fn empty(n: usize) -> Self {
        Self {
            csr: CommGraph::with_nodes(n),
            adjacency: 0,
        }
    }

    /// A petgraph graph of `order` ranks (the graph may have fewer vertices: ranks that
    /// do not communicate at the end), checked to be a communication graph: every edge
    /// in both rows with the same weight, no self-loop, weights finite and non-negative.
    ///
    /// ```
    /// use rankmig::matrix::{CommGraph, GraphError, SymGraph};
    /// let one_way = CommGraph::from_sorted_edges(&[(0, 1, 4.0)]).unwrap();
    /// assert!(matches!(SymGraph::from_csr(one_way, 2), Err(GraphError::NotSymmetric { .. })));
    /// let both = CommGraph::from_sorted_edges(&[(0, 1, 4.0), (1, 0, 4.0)]).unwrap();
    /// assert_eq!(SymGraph::from_csr(both, 5).unwrap().order(), 5);
    /// ```
    pub fn from_csr(mut csr: CommGraph, order: usize) -> Result<Self, GraphError> {
        let found = csr.node_count();
        if found > order {
            return Err(GraphError::TooManyVertices { found, order });
        }
        let mut adjacency = 0;
        for v in 0..found {
            for (&u, &w) in csr
                .neighbors_slice(v as u32)
                .iter()
                .zip(csr.edges_slice(v as u32))
            {
                check_edge(&csr, v, u as usize, w)?;
                adjacency += 1;
            }
        }
        while csr.node_count() < order {
            csr.add_node(());
        }
        Ok(Self { csr, adjacency })
    }

    /// The petgraph graph, for its algorithms and traversals.
    pub fn as_csr(&self) -> &CommGraph {
        &self.csr
    }

    /// The petgraph graph, by value.
    pub fn into_csr(self) -> CommGraph {
        self.csr
    }

    /// Number of vertices.
    pub fn order(&self) -> usize {
        self.csr.node_count()
    }

    /// Neighbours of `v` with the edge weights, by increasing neighbour.
    pub fn neighbors(&self, v: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (targets, weights) = self.row(v);
        targets.iter().zip(weights).map(|(&t, &w)| (t as usize, w))
    }

    /// Row `v` in place: its neighbours and, at the same positions, the edge weights.
    pub fn row(&self, v: usize) -> (&[u32], &[f64]) {
        let v = v as u32;
        (self.csr.neighbors_slice(v), self.csr.edges_slice(v))
    }

    /// Number of neighbours of `v`.
    pub fn degree(&self, v: usize) -> usize {
        self.csr.out_degree(v as u32)
    }

    /// Number of stored (directed) adjacency entries, twice the number of edges.
    pub fn adjacency_len(&self) -> usize {
        self.adjacency
    }

    /// Sum of the weights of the edges at `v`.
    pub fn weighted_degree(&self, v: usize) -> f64 {
        self.csr.edges_slice(v as u32).iter().sum()
    }

    /// The same graph with isolated vertices appended up to `n` vertices (no change
    /// when it has `n` or more).
    pub fn with_isolated_up_to(mut self, n: usize) -> SymGraph {
        while self.csr.node_count() < n {
            self.csr.add_node(());
        }
        self
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
        SymGraph::from_pairs(vertices.len(), triples)
    }

    /// Contracts the graph: vertex v becomes `group[v]` (in `0..groups`); weights
    /// between groups add up and weights inside a group disappear.
    pub fn contract(&self, group: &[u32], groups: usize) -> SymGraph {
        // Bucket vertices by group, then accumulate each group's row with a dense marker.
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); groups];
        for (v, &g) in group.iter().enumerate() {
            members[g as usize].push(v as u32);
        }
        let mut triples: Vec<(u32, u32, f64)> = Vec::new();
        let mut slot = vec![usize::MAX; groups];
        for (g, vs) in members.iter().enumerate() {
            let row_begin = triples.len();
            for &v in vs {
                for (u, w) in self.neighbors(v as usize) {
                    let h = group[u] as usize;
                    if h == g {
                        continue;
                    }
                    if slot[h] == usize::MAX || slot[h] < row_begin {
                        slot[h] = triples.len();
                        triples.push((g as u32, h as u32, w));
                    } else {
                        triples[slot[h]].2 += w;
                    }
                }
            }
            // The Csr wants each row sorted; its entries are already unique.
            triples[row_begin..].sort_unstable_by_key(|&(_, h, _)| h);
        }
        Self::from_sorted_unique(groups, &triples)
    }

    /// A graph of `n` vertices from triples sorted by (row, column) without repeats.
    fn from_sorted_unique(n: usize, triples: &[(u32, u32, f64)]) -> Self {
        let csr = match CommGraph::from_sorted_edges(triples) {
            Ok(csr) => csr,
            Err(_) => unreachable!("the triples are sorted and unique"),
        };
        Self {
            csr,
            adjacency: triples.len(),
        }
        .with_isolated_up_to(n)
    }
}

/// Checks the edge `v -> u` of weight `w` of `csr` (see [`SymGraph::from_csr`]).
fn check_edge(csr: &CommGraph, v: usize, u: usize, w: f64) -> Result<(), GraphError> {
    if u == v {
        return Err(GraphError::SelfLoop { rank: v });
    }
    if !(w.is_finite() && w >= 0.0) {
        return Err(GraphError::BadWeight {
            from: v,
            to: u,
            weight: w,
        });
    }
    let back = csr
        .neighbors_slice(u as u32)
        .binary_search(&(v as u32))
        .ok()
        .map(|k| csr.edges_slice(u as u32)[k]);
    if back != Some(w) {
        return Err(GraphError::NotSymmetric {
            from: v,
            to: u,
            weight: w,
        });
    }
    Ok(())
}

/// Merges runs of equal (row, column) in sorted triples, adding their values up.
fn add_up_repeated_pairs(triples: &mut Vec<(u32, u32, f64)>) {
    triples.dedup_by(|later, kept| {
        let same = (later.0, later.1) == (kept.0, kept.1);
        if same {
            kept.2 += later.2;
        }
        same
    });
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
        let m = CommMatrix::from_array(
            ndarray::array![
                [0.0, 1.0, 2.0, 0.0],
                [3.0, 0.0, 0.0, 4.0],
                [0.0, 0.0, 0.0, 5.0],
                [0.0, 0.0, 6.0, 0.0],
            ]
            .view(),
        )
        .unwrap();
        let g = m.symmetric();
        let n0: Vec<_> = g.neighbors(0).collect();
        assert_eq!(n0, vec![(1, 4.0), (2, 2.0)]);
        assert_eq!(g.weighted_degree(3), 4.0 + 11.0);
        let c = g.contract(&[0, 0, 1, 1], 2);
        assert_eq!(c.neighbors(0).collect::<Vec<_>>(), vec![(1, 6.0)]);
        assert_eq!(c.neighbors(1).collect::<Vec<_>>(), vec![(0, 6.0)]);
    }

    #[test]
    fn contraction_rows_come_out_sorted_for_the_csr() {
        // Group 0 = {0, 3} meets group 2 (vertex 1) before group 1 (vertex 2).
        let g = CommMatrix::from_triples(4, [(0, 1, 1.0), (3, 2, 2.0), (0, 2, 4.0)]).symmetric();
        let c = g.contract(&[0, 2, 1, 0], 3);
        assert_eq!(c.neighbors(0).collect::<Vec<_>>(), vec![(1, 6.0), (2, 1.0)]);
        assert_eq!(c.adjacency_len(), 4);
        assert_eq!(c.order(), 3);
    }

    #[test]
    fn trailing_silent_ranks_stay_vertices() {
        let g = CommMatrix::from_triples(6, [(0, 1, 1.0)]).symmetric();
        assert_eq!(g.order(), 6);
        assert_eq!(g.degree(5), 0);
        assert_eq!(g.as_csr().node_count(), 6);
        assert_eq!(g.clone().with_isolated_up_to(9).order(), 9);
    }

    #[test]
    fn a_csr_that_is_not_a_communication_graph_is_refused() {
        let unequal = CommGraph::from_sorted_edges(&[(0, 1, 1.0), (1, 0, 2.0)]).unwrap();
        assert_eq!(
            SymGraph::from_csr(unequal, 2),
            Err(GraphError::NotSymmetric {
                from: 0,
                to: 1,
                weight: 1.0
            })
        );
        let looped = CommGraph::from_sorted_edges(&[(1, 1, 1.0)]).unwrap();
        assert_eq!(
            SymGraph::from_csr(looped, 2),
            Err(GraphError::SelfLoop { rank: 1 })
        );
        let negative = CommGraph::from_sorted_edges(&[(0, 1, -1.0), (1, 0, -1.0)]).unwrap();
        assert!(matches!(
            SymGraph::from_csr(negative, 2),
            Err(GraphError::BadWeight { .. })
        ));
        let wide = CommGraph::with_nodes(4);
        assert_eq!(
            SymGraph::from_csr(wide, 3),
            Err(GraphError::TooManyVertices { found: 4, order: 3 })
        );
    }

    #[test]
    fn a_csr_round_trips() {
        let g = CommMatrix::from_triples(5, [(0, 4, 2.0), (4, 0, 1.0), (2, 3, 7.0)]).symmetric();
        let back = SymGraph::from_csr(g.clone().into_csr(), 5).unwrap();
        assert_eq!(back, g);
        assert_eq!(back.adjacency_len(), 4);
    }
}
