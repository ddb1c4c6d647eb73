//! Hop-bytes of a placement on the cluster tree (a root over the nodes, each node the
//! node topology).

use crate::matrix::SymGraph;
use crate::topology::Tree;

use super::{Location, Placement};

/// Tree edges between two locations: through the root between nodes, inside the node's
/// tree otherwise (0 for two ranks sharing a core).
pub fn location_hops(node_tree: &Tree, a: &Location, b: &Location) -> usize {
    if a.node != b.node {
        2 * (node_tree.depth() + 1)
    } else if a.core == b.core {
        0
    } else {
        node_tree.hops(a.core, b.core)
    }
}

/// Σ over unordered pairs of w(i,j) × tree edges between their locations.
pub fn placement_hop_bytes(graph: &SymGraph, node_tree: &Tree, placement: &Placement) -> f64 {
    let mut total = 0.0;
    for i in 0..graph.order() {
        let li = placement.location(i);
        for (j, w) in graph.neighbors(i) {
            if j > i {
                total += w * location_hops(node_tree, li, placement.location(j)) as f64;
            }
        }
    }
    total
}
