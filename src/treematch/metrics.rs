//! Costs of a mapping, on the symmetrised matrix, over unordered pairs of ranks.

use serde::Serialize;

use crate::matrix::SymGraph;
use crate::topology::Tree;

use super::MapError;

/// Cost of a link per tree level, from the top (root → its children) down to the leaves.
///
/// ```
/// use rankmig::treematch::metrics::LinkCosts;
/// let costs = LinkCosts::parse("100,10,1", 3).unwrap();
/// assert_eq!(costs.climb(1), 1.0);   // siblings: the deepest link only
/// assert_eq!(costs.climb(3), 111.0); // through the root
/// assert_eq!(LinkCosts::default_for(3).climb(2), 11.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkCosts {
    per_level: Vec<f64>,
}

impl LinkCosts {
    /// Powers of ten: 1 for the deepest links, 10 above, 100 above that, ... Every level
    /// counts, a shared-cache level (see [`crate::topology::CacheLevels`]) too: on
    /// node/package/L3/core links the costs are 1000,100,10,1, so two cores climb 1
    /// inside an L3, 11 across the L3s of a package, 111 across packages and 1111
    /// across nodes; each level costs ten times less than the level above it.
    pub fn default_for(depth: usize) -> Self {
        Self {
            per_level: (0..depth)
                .map(|l| 10f64.powi((depth - 1 - l) as i32))
                .collect(),
        }
    }

    /// Parses a comma-separated list, top level first; it must have one value per level.
    pub fn parse(list: &str, depth: usize) -> Result<Self, MapError> {
        let per_level = list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| {
                        MapError::BadOption(format!("--costs: '{s}' is not a non-negative number"))
                    })
            })
            .collect::<Result<Vec<f64>, _>>()?;
        if per_level.len() != depth {
            return Err(MapError::BadOption(format!(
                "--costs '{list}' has {} values but the tree has {depth} link levels",
                per_level.len()
            )));
        }
        Ok(Self { per_level })
    }

    /// Parses `list` for `tree`, as [`LinkCosts::parse`]; a list of the wrong length is
    /// told the tree's link levels by name (`Package>L3Cache` is the link between a
    /// package and its L3 caches).
    ///
    /// ```
    /// use rankmig::topology::Tree;
    /// use rankmig::treematch::metrics::LinkCosts;
    /// let tree = Tree::from_arities(&[2, 8]).unwrap();
    /// let e = LinkCosts::parse_for("100,10,1", &tree).unwrap_err().to_string();
    /// assert!(e.contains("L2>L1, L1>Leaf"), "{e}");
    /// ```
    pub fn parse_for(list: &str, tree: &Tree) -> Result<Self, MapError> {
        let given = list.split(',').count();
        if given != tree.depth() {
            let links: Vec<String> = tree
                .level_names()
                .windows(2)
                .map(|pair| format!("{}>{}", pair[0], pair[1]))
                .collect();
            return Err(MapError::BadOption(format!(
                "--costs '{list}' has {given} values but the tree has {} link levels, top first: {}",
                tree.depth(),
                links.join(", ")
            )));
        }
        Self::parse(list, tree.depth())
    }

    /// Cost of climbing the `d` deepest levels (and coming back down).
    pub fn climb(&self, d: usize) -> f64 {
        let n = self.per_level.len();
        self.per_level[n - d.min(n)..].iter().sum()
    }
}

/// The costs of one mapping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Σ w(i,j) × tree edges between the leaves of i and j.
    pub hop_bytes: f64,
    /// TreeMatch's Σ w(i,j) × C(d), C(d) the link costs of the d levels climbed.
    pub sum_com: f64,
    /// Volume exchanged between ranks on different cluster nodes.
    pub inter_node: f64,
}

/// Evaluates a mapping (`leaf_of_rank[r]` = leaf of rank r in `tree`).
///
/// Two ranks stacked on one leaf count as neighbours under the lowest link (one level
/// climbed), never as free: a mapping that stacks ranks while leaves are free is not
/// rewarded over one that spreads them. A metric that is not finite (volumes or link
/// costs near `f64::MAX`) is an error, not an `inf` or `NaN` in the report.
pub fn evaluate(
    graph: &SymGraph,
    tree: &Tree,
    leaf_of_rank: &[usize],
    costs: &LinkCosts,
) -> Result<Metrics, MapError> {
    let m = accumulate(graph, tree, leaf_of_rank, costs);
    for (name, value) in [
        ("hop-bytes", m.hop_bytes),
        ("sum-com", m.sum_com),
        ("inter-node", m.inter_node),
    ] {
        if !value.is_finite() {
            return Err(MapError::BadOption(format!(
                "{name} is {value}: the volumes times the link costs exceed the range of numbers; scale the matrix or --costs down"
            )));
        }
    }
    Ok(m)
}

/// The sums of [`evaluate`], unchecked.
fn accumulate(graph: &SymGraph, tree: &Tree, leaf_of_rank: &[usize], costs: &LinkCosts) -> Metrics {
    let depth = tree.depth();
    let leaves = tree.leaves();
    let mut m = Metrics {
        hop_bytes: 0.0,
        sum_com: 0.0,
        inter_node: 0.0,
    };
    for (i, &li) in leaf_of_rank.iter().enumerate() {
        for (j, w) in graph.neighbors(i) {
            if j <= i {
                continue;
            }
            let lj = leaf_of_rank[j];
            // Stacked ranks (same leaf) climb one level, as siblings would.
            let climbed = (depth - tree.common_depth(li, lj)).max(1.min(depth));
            m.hop_bytes += w * (2 * climbed) as f64;
            m.sum_com += w * costs.climb(climbed);
            if leaves[li].node != leaves[lj].node {
                m.inter_node += w;
            }
        }
    }
    m
}

/// Hop-bytes only.
pub fn hop_bytes(graph: &SymGraph, tree: &Tree, leaf_of_rank: &[usize]) -> f64 {
    accumulate(
        graph,
        tree,
        leaf_of_rank,
        &LinkCosts::default_for(tree.depth()),
    )
    .hop_bytes
}

/// [`hop_bytes`] of several mappings on one tree: the ancestors of every leaf are
/// tabulated once and the sum is the same, term for term and in the same order.
pub(crate) struct HopBytes {
    depth: usize,
    /// `paths[leaf * depth + k]` = ancestor of `leaf` at level k + 1 (the leaf last).
    paths: Vec<u32>,
}

impl HopBytes {
    /// The evaluator of mappings on `tree`.
    pub(crate) fn new(tree: &Tree) -> Self {
        let depth = tree.depth();
        let ancestors = tree.ancestor_table();
        let mut paths = vec![0u32; tree.leaf_count() * depth];
        for (level, row) in ancestors.iter().enumerate().skip(1) {
            for (leaf, &ancestor) in row.iter().enumerate() {
                paths[leaf * depth + level - 1] = ancestor;
            }
        }
        Self { depth, paths }
    }

    /// Hop-bytes of `leaf_of_rank`, as [`hop_bytes`] computes them.
    pub(crate) fn of(&self, graph: &SymGraph, leaf_of_rank: &[usize]) -> f64 {
        let depth = self.depth;
        // Stacked ranks (same leaf) climb one level, as siblings would.
        let least = 1.min(depth);
        let mut total = 0.0;
        for (i, &li) in leaf_of_rank.iter().enumerate() {
            let pi = &self.paths[li * depth..(li + 1) * depth];
            for (j, w) in graph.neighbors(i) {
                if j <= i {
                    continue;
                }
                let lj = leaf_of_rank[j];
                let pj = &self.paths[lj * depth..(lj + 1) * depth];
                let common = pi.iter().zip(pj).take_while(|(x, y)| x == y).count();
                let climbed = (depth - common).max(least);
                total += w * (2 * climbed) as f64;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::CommMatrix;

    #[test]
    fn hop_bytes_and_sum_com_by_hand() {
        // 2 nodes x 2 cores; 0-1 = 10 bytes each way, 0-2 = 5 one way.
        let node = Tree::from_arities(&[2]).unwrap();
        let tree = Tree::cluster(&node, 2).unwrap();
        let g = CommMatrix::from_triples(3, [(0, 1, 10.0), (1, 0, 10.0), (0, 2, 5.0)]).symmetric();
        let costs = LinkCosts::parse("100,1", 2).unwrap();
        let m = evaluate(&g, &tree, &[0, 1, 2], &costs).unwrap();
        assert_eq!(m.hop_bytes, 20.0 * 2.0 + 5.0 * 4.0);
        assert_eq!(m.sum_com, 20.0 * 1.0 + 5.0 * 101.0);
        assert_eq!(m.inter_node, 5.0);
    }

    #[test]
    fn stacking_is_not_free_and_overflow_is_an_error() {
        let node = Tree::from_arities(&[2, 2]).unwrap();
        let g = CommMatrix::from_triples(2, [(0, 1, 10.0)]).symmetric();
        let costs = LinkCosts::default_for(2);
        let stacked = evaluate(&g, &node, &[0, 0], &costs).unwrap();
        let siblings = evaluate(&g, &node, &[0, 1], &costs).unwrap();
        assert_eq!(stacked, siblings);
        assert_eq!(stacked.hop_bytes, 20.0);
        let huge = LinkCosts::parse("1e308,1e308", 2).unwrap();
        let e = evaluate(&g, &node, &[0, 3], &huge).unwrap_err().to_string();
        assert!(e.contains("sum-com is inf"), "{e}");
    }

    #[test]
    fn costs_must_match_the_depth() {
        assert!(LinkCosts::parse("1,2", 3).is_err());
        assert!(LinkCosts::parse("1,x,2", 3).is_err());
    }
}
