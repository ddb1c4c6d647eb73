//! The rank slots of a cluster of identical nodes whose ranks run on `C` cores each, as
//! `rankmig map --cores-per-rank C` maps onto them.
//!
//! Each node's tree is cut into groups of `C` leaves ([`Tree::rank_groups`]) and the
//! grouped node trees ([`Tree::grouped`]) are put under one root, so a group never
//! crosses nodes. Slot `s` of the cluster is group `s mod G` of node `s / G` (`G` groups
//! per node), as the leaves of the cluster of cores are leaf `l mod L` of node `l / L`.
//!
//! ```
//! use rankmig::topology::{ClusterSlots, Tree};
//! let node = Tree::from_arities(&[2, 2]).unwrap(); // 2 packages of 2 cores
//! let slots = ClusterSlots::new(&node, 2, 2).unwrap(); // 2 nodes, ranks of 2 cores
//! assert_eq!(slots.tree().leaf_count(), 4);
//! let third = slots.leaves_of(2); // group 0 of node 1
//! assert_eq!(third.iter().map(|l| (l.node, l.logical_index)).collect::<Vec<_>>(),
//!            [(1, 0), (1, 1)]);
//! // Cores 4, 5 and 7 of the cluster (node 1's cores 0, 1 and 3) hold slot 2 only.
//! assert_eq!(slots.slots_within(&[4, 5, 7]).unwrap(), [2]);
//! ```

use super::{Leaf, TopologyError, Tree};

/// A cluster of `nodes` copies of one node's tree in rank slots of `C` leaves.
#[derive(Debug, Clone)]
pub struct ClusterSlots {
    node: Tree,
    groups: Vec<Vec<usize>>,
    nodes: usize,
    cores_per_rank: usize,
    tree: Tree,
}

impl ClusterSlots {
    /// The slots of `nodes` copies of `node` (its leaves cores or hardware threads) for
    /// ranks of `cores_per_rank` leaves (0 is taken as 1). With 1 the slots are the
    /// leaves and [`ClusterSlots::tree`] is [`Tree::cluster`]`(node, nodes)`.
    /// [`TopologyError::RankLargerThanNode`] when `node` has fewer leaves than a rank
    /// needs; the errors of [`Tree::cluster`] otherwise.
    ///
    /// ```
    /// use rankmig::topology::{ClusterSlots, Tree};
    /// let node = Tree::from_arities(&[3]).unwrap();
    /// let err = ClusterSlots::new(&node, 4, 4).unwrap_err();
    /// assert!(err.to_string().contains("a node of 3 cores"), "{err}");
    /// ```
    pub fn new(node: &Tree, nodes: usize, cores_per_rank: usize) -> Result<Self, TopologyError> {
        let cores_per_rank = cores_per_rank.max(1);
        let grouped = node.grouped(cores_per_rank)?;
        let tree = Tree::cluster(&grouped, nodes)?;
        Ok(Self {
            node: node.clone(),
            groups: node.rank_groups(cores_per_rank),
            nodes,
            cores_per_rank,
            tree,
        })
    }

    /// The tree the ranks are mapped onto: one leaf per slot, slots of a node
    /// consecutive, nodes in order.
    ///
    /// ```
    /// use rankmig::topology::{ClusterSlots, Tree};
    /// let node = Tree::from_arities(&[2, 4]).unwrap();
    /// let slots = ClusterSlots::new(&node, 3, 4).unwrap();
    /// assert_eq!(slots.tree().leaf_count(), 6); // one slot per package, 3 nodes
    /// ```
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Leaves (cores) each rank runs on.
    ///
    /// ```
    /// use rankmig::topology::{ClusterSlots, Tree};
    /// let node = Tree::from_arities(&[4]).unwrap();
    /// assert_eq!(ClusterSlots::new(&node, 1, 0).unwrap().cores_per_rank(), 1);
    /// ```
    pub fn cores_per_rank(&self) -> usize {
        self.cores_per_rank
    }

    /// The leaves of the node's tree that slot `slot` of the cluster holds, in the
    /// group's order, each with the `node` of its slot; empty for a slot the cluster
    /// does not have.
    ///
    /// ```
    /// use rankmig::topology::{ClusterSlots, Tree};
    /// let node = Tree::from_arities(&[2, 3]).unwrap(); // 2 packages of 3 cores
    /// let slots = ClusterSlots::new(&node, 1, 2).unwrap();
    /// // The cores the packages leave over make the last group.
    /// let last: Vec<u32> = slots.leaves_of(2).iter().map(|l| l.logical_index).collect();
    /// assert_eq!(last, [2, 5]);
    /// assert!(slots.leaves_of(3).is_empty());
    /// ```
    pub fn leaves_of(&self, slot: usize) -> Vec<Leaf> {
        let per_node = self.groups.len();
        if per_node == 0 || slot >= per_node * self.nodes {
            return Vec::new();
        }
        let (node, group) = (slot / per_node, slot % per_node);
        self.groups[group]
            .iter()
            .map(|&leaf| Leaf {
                node: node as u32,
                ..self.node.leaves()[leaf].clone()
            })
            .collect()
    }

    /// The slots all of whose leaves are in `leaves` (leaf indexes over the whole
    /// cluster of the node's leaves: node `n`'s leaf `l` is `n·L + l`), ascending.
    /// [`TopologyError::LeafOutOfRange`] for an index past the cluster's leaves.
    ///
    /// ```
    /// use rankmig::topology::{ClusterSlots, Tree};
    /// let node = Tree::from_arities(&[4]).unwrap();
    /// let slots = ClusterSlots::new(&node, 1, 2).unwrap();
    /// assert_eq!(slots.slots_within(&[0, 1, 2]).unwrap(), [0]); // core 3 is not listed
    /// assert!(slots.slots_within(&[4]).is_err());
    /// ```
    pub fn slots_within(&self, leaves: &[usize]) -> Result<Vec<usize>, TopologyError> {
        let per_node = self.node.leaf_count();
        let total = per_node * self.nodes;
        let mut listed = vec![false; total];
        for &leaf in leaves {
            *listed.get_mut(leaf).ok_or(TopologyError::LeafOutOfRange {
                leaf,
                leaves: total,
            })? = true;
        }
        let mut slots = Vec::new();
        for node in 0..self.nodes {
            for (g, group) in self.groups.iter().enumerate() {
                if group.iter().all(|&l| listed[node * per_node + l]) {
                    slots.push(node * self.groups.len() + g);
                }
            }
        }
        Ok(slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_core_per_rank_is_the_cluster_of_cores() {
        let node = Tree::from_arities(&[2, 3]).unwrap();
        let slots = ClusterSlots::new(&node, 3, 1).unwrap();
        let cluster = Tree::cluster(&node, 3).unwrap();
        assert_eq!(slots.tree().describe_levels(), cluster.describe_levels());
        assert_eq!(slots.tree().leaves(), cluster.leaves());
        for s in 0..cluster.leaf_count() {
            assert_eq!(slots.leaves_of(s), vec![cluster.leaves()[s].clone()]);
        }
        assert_eq!(slots.slots_within(&[0, 7]).unwrap(), [0, 7]);
    }

    #[test]
    fn slots_never_cross_nodes_and_cover_each_core_once() {
        // 2 packages of 3 cores per node: with ranks of 2, the third group of a node
        // takes the last core of each package, never a core of another node.
        let node = Tree::from_arities(&[2, 3]).unwrap();
        let slots = ClusterSlots::new(&node, 2, 2).unwrap();
        assert_eq!(slots.tree().leaf_count(), 6);
        let mut seen = std::collections::HashSet::new();
        for s in 0..6 {
            let leaves = slots.leaves_of(s);
            assert_eq!(leaves.len(), 2);
            assert!(leaves.iter().all(|l| l.node == (s / 3) as u32), "slot {s}");
            for l in leaves {
                assert!(seen.insert((l.node, l.logical_index)), "slot {s}: {l:?}");
            }
            // The slot tree's leaf stands for the same node and first core.
            assert_eq!(slots.tree().leaves()[s].node, (s / 3) as u32);
        }
        // Slots of one node are closer than slots of two nodes.
        assert!(slots.tree().hops(0, 1) < slots.tree().hops(0, 3));
    }

    #[test]
    fn a_selection_keeps_the_slots_it_fully_covers() {
        let node = Tree::from_arities(&[2, 2]).unwrap();
        let slots = ClusterSlots::new(&node, 2, 2).unwrap();
        // Node 0: package 0 whole, one core of package 1; node 1: package 1 whole.
        assert_eq!(slots.slots_within(&[0, 1, 2, 6, 7]).unwrap(), [0, 3]);
        let err = slots.slots_within(&[8]).unwrap_err();
        assert!(matches!(
            err,
            TopologyError::LeafOutOfRange { leaf: 8, leaves: 8 }
        ));
    }

    #[test]
    fn a_rank_larger_than_a_node_is_refused_whatever_the_node_count() {
        let node = Tree::from_arities(&[2, 2]).unwrap();
        let err = ClusterSlots::new(&node, 8, 5).unwrap_err();
        assert!(matches!(
            err,
            TopologyError::RankLargerThanNode {
                leaves: 4,
                cores_per_rank: 5
            }
        ));
    }
}
