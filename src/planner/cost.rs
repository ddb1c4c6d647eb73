//! Hop-bytes of a placement on the cluster tree (a root over the nodes, each node the
//! node topology).

use crate::matrix::SymGraph;
use crate::topology::Tree;

use super::{Location, NodeTrees, Placement};

/// Tree edges between two locations: through the root between nodes, inside the node's
/// tree otherwise (0 for two ranks sharing a core).
///
/// Each node has the tree `trees` gives it.
pub fn location_hops_on(trees: &NodeTrees<'_>, a: &Location, b: &Location) -> usize {
    if a.node != b.node {
        trees.between_nodes(&a.node, &b.node)
    } else if a.core == b.core {
        0
    } else {
        trees.of(&a.node).hops(a.core, b.core)
    }
}

/// Σ over unordered pairs of w(i,j) × tree edges between their locations.
pub fn placement_hop_bytes(graph: &SymGraph, node_tree: &Tree, placement: &Placement) -> f64 {
    placement_hop_bytes_on(graph, &NodeTrees::uniform(node_tree), placement)
}

/// [`placement_hop_bytes`] where each node has its own tree.
pub fn placement_hop_bytes_on(
    graph: &SymGraph,
    trees: &NodeTrees<'_>,
    placement: &Placement,
) -> f64 {
    let mut total = 0.0;
    for i in 0..graph.order() {
        let li = placement.location(i);
        for (j, w) in graph.neighbors(i) {
            if j > i {
                total += w * location_hops_on(trees, li, placement.location(j)) as f64;
            }
        }
    }
    total
}
