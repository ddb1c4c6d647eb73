//! Ranks of several cores: a node's tree cut into groups of C cores, one group per rank.
//!
//! A rank with C threads (MPI+OpenMP) needs C cores close together. [`Tree::rank_groups`]
//! cuts the leaves of a node's tree into groups of `C` leaves, each inside the smallest
//! subtree that holds `C` leaves: a group never straddles a package, NUMA node or shared
//! cache when one of them holds `C` leaves. The leaves that such subtrees leave over
//! (a package of 3 cores with `C = 2`) are grouped at the level above, in order.
//! [`Tree::grouped`] is the tree whose leaves are those groups: the mapper and the
//! planner work on it unchanged, a leaf of it being a slot for one rank.
//!
//! ```
//! use rankmig::topology::Tree;
//! // 2 packages of 3 cores, ranks of 2 cores: one group per package, and the last
//! // cores of both packages together.
//! let node = Tree::from_arities(&[2, 3]).unwrap();
//! assert_eq!(node.rank_groups(2), vec![vec![0, 1], vec![3, 4], vec![2, 5]]);
//! let slots = node.grouped(2).unwrap();
//! assert_eq!(slots.leaf_count(), 3);
//! assert_eq!(slots.hops(0, 1), 2); // groups of two packages are 2 hops apart
//! ```

use super::TopologyError;
use super::tree::{Leaf, Shape, Tree};

impl Tree {
    /// The groups of `size` leaves a node's ranks run on, in the order of the leaves of
    /// [`Tree::grouped`]: each group inside the smallest subtree that holds `size`
    /// leaves, the leaves such subtrees leave over grouped at the level above. Leaves
    /// that no group can take (fewer than `size` left at the root) are in no group.
    /// `size` 0 or 1: every leaf is a group of its own.
    ///
    /// ```
    /// use rankmig::topology::Tree;
    /// let flat = Tree::from_arities(&[5]).unwrap();
    /// assert_eq!(flat.rank_groups(2), vec![vec![0, 1], vec![2, 3]]); // core 4 is left
    /// ```
    pub fn rank_groups(&self, size: usize) -> Vec<Vec<usize>> {
        let mut groups = Vec::new();
        if size <= 1 {
            return (0..self.leaf_count()).map(|l| vec![l]).collect();
        }
        let _ = self.group_shape(0, 0, size, &mut groups);
        groups
    }

    /// The tree whose leaves are the groups of [`Tree::rank_groups`]: leaf `i` is group
    /// `i`, its `cpus` the OS numbers of every hardware thread of the group, its `core`
    /// the group's first core. Distances between groups are those between their
    /// leaves. An error when the tree has fewer than `size` leaves.
    ///
    /// ```
    /// use rankmig::topology::Tree;
    /// let node = Tree::from_arities(&[2, 4]).unwrap(); // 2 packages of 4 cores
    /// let slots = node.grouped(4).unwrap();
    /// assert_eq!(slots.leaf_count(), 2);
    /// assert!(Tree::from_arities(&[3]).unwrap().grouped(4).is_err());
    /// ```
    pub fn grouped(&self, size: usize) -> Result<Tree, TopologyError> {
        if size <= 1 {
            return Ok(self.clone());
        }
        if self.leaf_count() < size {
            return Err(TopologyError::RankLargerThanNode {
                leaves: self.leaf_count(),
                cores_per_rank: size,
            });
        }
        let mut groups = Vec::new();
        let (shape, _) = self.group_shape(0, 0, size, &mut groups);
        let shape = shape.ok_or(TopologyError::NoLeaves)?;
        Tree::from_shape(&shape)
    }

    /// The leaves under `vertex` of `level`, as a range of leaf indices.
    fn leaf_range(&self, level: usize, vertex: usize) -> std::ops::Range<usize> {
        let (mut lo, mut hi) = (vertex, vertex + 1);
        for d in level..self.depth() {
            let children_lo = self.children(d, lo).start;
            let children_hi = if hi < self.width(d) {
                self.children(d, hi).start
            } else {
                self.width(d + 1)
            };
            (lo, hi) = (children_lo, children_hi);
        }
        lo..hi
    }

    /// The shape of the grouped subtree under `vertex` of `level` (`None` when no group
    /// fits in it), pushing its groups in depth-first order, and the leaves it leaves
    /// over (fewer than `size`), for the level above to group.
    fn group_shape(
        &self,
        level: usize,
        vertex: usize,
        size: usize,
        groups: &mut Vec<Vec<usize>>,
    ) -> (Option<Shape>, Vec<usize>) {
        let leaves = self.leaf_range(level, vertex);
        if leaves.len() < size {
            return (None, leaves.collect());
        }
        if level == self.depth() {
            // A leaf holding `size` leaves: size is 1.
            groups.push(vec![vertex]);
            return (Some(self.group_leaf(&[vertex], size)), Vec::new());
        }
        let mut children = Vec::new();
        let mut left_over = Vec::new();
        for child in self.children(level, vertex) {
            let (shape, rest) = self.group_shape(level + 1, child, size, groups);
            children.extend(shape);
            left_over.extend(rest);
        }
        // What the children left over (all of their leaves when none holds `size`:
        // this is the smallest subtree holding them), in consecutive groups of `size`.
        let mut chunks = left_over.chunks_exact(size);
        for chunk in chunks.by_ref() {
            groups.push(chunk.to_vec());
            children.push(self.group_leaf(chunk, size));
        }
        let rest = chunks.remainder().to_vec();
        if children.len() == 1 && children[0].leaf.is_some() {
            // One group fills this vertex: the group stands in its place.
            return (children.pop(), rest);
        }
        let kind = &self.level_names()[level];
        (
            (!children.is_empty()).then(|| Shape::inner(kind, children)),
            rest,
        )
    }

    /// The leaf standing for the group of `leaves`.
    fn group_leaf(&self, leaves: &[usize], size: usize) -> Shape {
        let first = &self.leaves()[leaves[0]];
        let mut cpus: Vec<u32> = leaves
            .iter()
            .flat_map(|&l| self.leaves()[l].cpus.iter().copied())
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        let leaf_kind = self.level_names().last().map_or("Core", String::as_str);
        Shape::leaf(
            &format!("{leaf_kind}x{size}"),
            Leaf {
                node: first.node,
                logical_index: first.logical_index,
                core: first.core,
                cpus,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{LeafKind, TopologySpec};

    #[test]
    fn groups_stay_inside_the_smallest_subtree_holding_them() {
        // 2 packages × 2 NUMA × 4 cores; ranks of 4 take one NUMA node each, of 8 one
        // package each, of 2 half a NUMA node.
        let node = Tree::from_arities(&[2, 2, 4]).unwrap();
        let fours = node.rank_groups(4);
        assert_eq!(fours.len(), 4);
        for (i, g) in fours.iter().enumerate() {
            assert_eq!(g, &(4 * i..4 * i + 4).collect::<Vec<_>>());
        }
        assert_eq!(node.rank_groups(8).len(), 2);
        assert_eq!(node.rank_groups(2).len(), 8);
        // Ranks of 3: one per NUMA node, a core of each left over; a package's two
        // leftovers make no group, so they are grouped at the root: ⌊16/3⌋ = 5 ranks,
        // the fifth across packages (core 15 in no group).
        let threes = node.rank_groups(3);
        assert_eq!(
            threes,
            vec![
                vec![0, 1, 2],
                vec![4, 5, 6],
                vec![8, 9, 10],
                vec![12, 13, 14],
                vec![3, 7, 11]
            ]
        );
        // Groups of the grouped tree are in the same order, and keep their distances.
        let slots = node.grouped(4).unwrap();
        assert_eq!(slots.leaf_count(), 4);
        assert_eq!(slots.hops(0, 1), 2);
        assert_eq!(slots.hops(0, 2), 4);
    }

    #[test]
    fn a_real_machine_groups_its_cores_with_their_cpus() {
        let xml = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/topologies");
        let Some(file) = std::fs::read_dir(xml)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "xml"))
            .min()
        else {
            panic!("no XML topology in {xml}");
        };
        let spec: TopologySpec = format!("xml:{}", file.display()).parse().unwrap();
        let node = spec.load(LeafKind::Core).unwrap();
        let groups = node.rank_groups(2);
        assert_eq!(groups.len(), node.grouped(2).unwrap().leaf_count());
        let slots = node.grouped(2).unwrap();
        for (g, leaf) in groups.iter().zip(slots.leaves()) {
            let mut cpus: Vec<u32> = g
                .iter()
                .flat_map(|&l| node.leaves()[l].cpus.clone())
                .collect();
            cpus.sort_unstable();
            assert_eq!(leaf.cpus, cpus, "{}", file.display());
            assert_eq!(leaf.core, node.leaves()[g[0]].core);
        }
    }

    #[test]
    fn a_rank_larger_than_the_node_is_an_error() {
        let node = Tree::from_arities(&[2]).unwrap();
        let e = node.grouped(3).unwrap_err();
        assert!(e.to_string().contains("3 cores per rank"), "{e}");
        assert!(node.rank_groups(3).is_empty());
    }
}
