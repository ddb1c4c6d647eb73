//! The tree of each node of the cluster: one tree for every node, or a tree per node
//! where nodes differ (the hosts of a multi-host job, each with its own hwloc tree).

use std::collections::HashMap;

use crate::topology::Tree;

/// The node trees the planner plans on: a default tree, and the trees of the nodes
/// that have their own.
///
/// ```
/// use rankmig::planner::NodeTrees;
/// use rankmig::topology::Tree;
/// let flat = Tree::from_arities(&[8]).unwrap();
/// let two_sockets = Tree::from_arities(&[2, 4]).unwrap();
/// let trees = NodeTrees::uniform(&flat).with_node("big", two_sockets);
/// assert_eq!(trees.of("n1").depth(), 1);
/// assert_eq!(trees.of("big").depth(), 2);
/// // between nodes: up to each node's root, then through the cluster root
/// assert_eq!(trees.between_nodes("n1", "big"), 1 + 2 + 2);
/// ```
#[derive(Debug, Clone)]
pub struct NodeTrees<'a> {
    default: &'a Tree,
    by_node: HashMap<String, Tree>,
}

impl<'a> NodeTrees<'a> {
    /// Every node has `tree`.
    pub fn uniform(tree: &'a Tree) -> Self {
        Self {
            default: tree,
            by_node: HashMap::new(),
        }
    }

    /// Node `node` has `tree` instead of the default.
    pub fn with_node(mut self, node: impl Into<String>, tree: Tree) -> Self {
        self.by_node.insert(node.into(), tree);
        self
    }

    /// The tree of `node`.
    pub fn of(&self, node: &str) -> &Tree {
        self.by_node.get(node).unwrap_or(self.default)
    }

    /// Tree edges between a leaf of node `a` and a leaf of another node `b`: up to `a`'s
    /// root, to the cluster root and down `b`'s tree.
    pub fn between_nodes(&self, a: &str, b: &str) -> usize {
        self.of(a).depth() + self.of(b).depth() + 2
    }

    /// The nodes with a tree of their own.
    pub fn nodes_with_own_tree(&self) -> impl Iterator<Item = &str> {
        self.by_node.keys().map(String::as_str)
    }
}

/// The flat tree of a logical node: as many leaves as the largest node of
/// `availability` offers, and at least `at_least` (so cores already used by a running
/// job stay valid).
///
/// ```
/// use rankmig::availability::{Availability, AvailabilityFormat};
/// let av = Availability::parse("n1 4\nn2 6\n", "av", AvailabilityFormat::Auto).unwrap();
/// assert_eq!(rankmig::planner::logical_node_tree(&av, 1).unwrap().leaf_count(), 6);
/// assert_eq!(rankmig::planner::logical_node_tree(&av, 8).unwrap().leaf_count(), 8);
/// ```
pub fn logical_node_tree(
    availability: &crate::availability::Availability,
    at_least: usize,
) -> Result<Tree, crate::topology::TopologyError> {
    let cores = availability
        .nodes()
        .iter()
        .map(|n| n.cores)
        .chain([at_least])
        .max()
        .unwrap_or(1);
    Tree::from_arities(&[cores.max(1)])
}
