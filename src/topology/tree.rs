//! The levelled tree that TreeMatch works on.

use serde::{Deserialize, Serialize};

use super::{MAX_LEAVES, TopologyError};

/// What a leaf of a [`Tree`] stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leaf {
    /// Index of the cluster node (0 for a single machine) the leaf belongs to.
    pub node: u32,
    /// hwloc logical index of the leaf inside its node (core or PU index).
    pub logical_index: u32,
    /// hwloc logical index, inside its node, of the core the leaf is or belongs to
    /// (`None` for a machine without cores and for trees not read from hwloc).
    pub core: Option<u32>,
    /// OS numbers of the leaf's hardware threads (PUs), ascending: the CPU numbers of
    /// `taskset` and Slurm. Empty when unknown (trees not read from hwloc).
    pub cpus: Vec<u32>,
}

impl Leaf {
    /// OS number of the leaf's first hardware thread, when known.
    pub fn os_index(&self) -> Option<u32> {
        self.cpus.first().copied()
    }
}

/// A node of a tree under construction: only its children and, for leaves, what they
/// stand for. [`Tree::from_shape`] turns it into a levelled [`Tree`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Shape {
    /// Name of the level this vertex belongs to (hwloc type name such as `Package`).
    pub kind: String,
    /// Children, in left-to-right order.
    pub children: Vec<Shape>,
    /// `Some` for a leaf.
    pub leaf: Option<Leaf>,
}

impl Shape {
    /// A leaf vertex.
    pub fn leaf(kind: &str, leaf: Leaf) -> Self {
        Self {
            kind: kind.to_owned(),
            children: Vec::new(),
            leaf: Some(leaf),
        }
    }

    /// An inner vertex.
    pub fn inner(kind: &str, children: Vec<Shape>) -> Self {
        Self {
            kind: kind.to_owned(),
            children,
            leaf: None,
        }
    }

    fn has_leaves(&self) -> bool {
        self.leaf.is_some() || self.children.iter().any(Shape::has_leaves)
    }
}

/// A tree whose leaves all sit at the same depth, stored level by level.
///
/// Level 0 holds the root; the last level holds the leaves. At every level the vertices
/// are numbered left to right (depth-first order), so the children of a vertex are a
/// contiguous range of the next level. Leaf `i` is the `i`-th leaf in depth-first order,
/// which is the hwloc logical index at the leaf level for a single machine.
///
/// ```
/// use rankmig::topology::Tree;
/// let tree = Tree::from_arities(&[2, 8]).unwrap(); // 2 packages of 8 cores
/// assert_eq!(tree.leaf_count(), 16);
/// assert_eq!(tree.hops(0, 7), 2);
/// assert_eq!(tree.hops(0, 8), 4);
/// ```
#[derive(Debug, Clone)]
pub struct Tree {
    /// `first_child[d][v]..first_child[d][v+1]` are the children (at level d+1) of vertex
    /// v at level d. One entry per vertex plus a final sentinel.
    first_child: Vec<Vec<u32>>,
    /// `parent[d][v]` = parent (at level d-1) of vertex v at level d; `parent[0]` is empty.
    parent: Vec<Vec<u32>>,
    /// Name of each level (hwloc type or `Cluster`, `Slot`, ...).
    level_names: Vec<String>,
    /// What each leaf stands for.
    leaves: Vec<Leaf>,
}

impl Tree {
    /// Builds a tree from a nested [`Shape`]: subtrees without leaves are dropped, a
    /// subtree whose leaves sit higher than the deepest ones is pushed down under
    /// single-child vertices (put just below its parent, so distances inside it stay),
    /// and levels where every vertex has exactly one child are merged away (they add no
    /// choice to a mapping).
    pub fn from_shape(shape: &Shape) -> Result<Self, TopologyError> {
        let pruned = prune(shape).ok_or(TopologyError::NoLeaves)?;
        let max_depth = height(&pruned);
        let padded = pad_to(&pruned, max_depth);
        let mut tree = Self::levelize(&padded, max_depth);
        tree.merge_single_child_levels();
        Ok(tree)
    }

    /// A symmetric tree: `arities[d]` children under every vertex of level `d`.
    /// Leaves have logical indices `0..product` and no OS index.
    ///
    /// ```
    /// let t = rankmig::topology::Tree::from_arities(&[4, 2, 8]).unwrap();
    /// assert_eq!(t.leaf_count(), 64);
    /// assert_eq!(t.depth(), 3);
    /// ```
    pub fn from_arities(arities: &[usize]) -> Result<Self, TopologyError> {
        if arities.contains(&0) {
            return Err(TopologyError::NoLeaves);
        }
        let leaves = arities.iter().try_fold(1usize, |n, &a| {
            n.checked_mul(a).filter(|&n| n <= MAX_LEAVES)
        });
        if leaves.is_none() {
            return Err(TopologyError::TooLarge {
                what: "arities",
                value: format!("{arities:?}"),
            });
        }
        let mut counter = 0u32;
        let shape = build_symmetric(arities, &mut counter);
        Self::from_shape(&shape)
    }

    /// Puts `parts` side by side under a new root named `root_kind`. Leaf `node` fields are
    /// set to the index of the part they come from.
    pub fn compose(root_kind: &str, parts: &[Tree]) -> Result<Self, TopologyError> {
        let children = parts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut s = t.to_shape();
                relabel_node(&mut s, i as u32);
                s
            })
            .collect();
        Self::from_shape(&Shape::inner(root_kind, children))
    }

    /// `nodes` copies of `node` under one root: a cluster of identical machines.
    /// At most [`MAX_LEAVES`] leaves in all.
    pub fn cluster(node: &Tree, nodes: usize) -> Result<Self, TopologyError> {
        if nodes == 0 {
            return Err(TopologyError::NoLeaves);
        }
        if node
            .leaf_count()
            .checked_mul(nodes)
            .is_none_or(|n| n > MAX_LEAVES)
        {
            return Err(TopologyError::TooLarge {
                what: "a cluster of nodes, count",
                value: nodes.to_string(),
            });
        }
        if nodes == 1 {
            return Ok(node.clone());
        }
        Self::compose("Cluster", &vec![node.clone(); nodes])
    }

    /// The tree as a nested [`Shape`] (inverse of [`Tree::from_shape`]).
    pub fn to_shape(&self) -> Shape {
        self.shape_of(0, 0)
    }

    fn shape_of(&self, level: usize, vertex: usize) -> Shape {
        if level + 1 == self.level_count() {
            return Shape::leaf(&self.level_names[level], self.leaves[vertex].clone());
        }
        let children = self
            .children(level, vertex)
            .map(|c| self.shape_of(level + 1, c))
            .collect();
        Shape::inner(&self.level_names[level], children)
    }

    /// Keeps only the leaves whose indices are in `keep` (other leaves and the subtrees
    /// left empty are removed). Levels are kept as they are, so distances between kept
    /// leaves do not change. Returns the tree and, for each new leaf, its old index.
    pub fn restrict(&self, keep: &[usize]) -> Result<(Tree, Vec<usize>), TopologyError> {
        let mut wanted = vec![false; self.leaf_count()];
        for &leaf in keep {
            let slot = wanted.get_mut(leaf).ok_or(TopologyError::LeafOutOfRange {
                leaf,
                leaves: self.leaf_count(),
            })?;
            *slot = true;
        }
        let mut old_index = Vec::new();
        let shape = self
            .restricted_shape(0, 0, &wanted, &mut old_index)
            .ok_or(TopologyError::NoLeaves)?;
        let tree = Self::levelize(&shape, self.depth());
        Ok((tree, old_index))
    }

    fn restricted_shape(
        &self,
        level: usize,
        vertex: usize,
        wanted: &[bool],
        old_index: &mut Vec<usize>,
    ) -> Option<Shape> {
        if level + 1 == self.level_count() {
            if !wanted[vertex] {
                return None;
            }
            old_index.push(vertex);
            return Some(Shape::leaf(
                &self.level_names[level],
                self.leaves[vertex].clone(),
            ));
        }
        let children: Vec<Shape> = self
            .children(level, vertex)
            .filter_map(|c| self.restricted_shape(level + 1, c, wanted, old_index))
            .collect();
        (!children.is_empty()).then(|| Shape::inner(&self.level_names[level], children))
    }

    /// Adds a level of `factor` slots under every leaf (oversubscription: up to `factor`
    /// ranks per leaf). Slot `s` belongs to leaf `s / factor`.
    pub fn with_slots(&self, factor: usize) -> Result<Tree, TopologyError> {
        if factor <= 1 {
            return Ok(self.clone());
        }
        let mut shape = self.to_shape();
        add_slots(&mut shape, factor);
        Ok(Self::levelize(&shape, self.depth() + 1))
    }

    fn levelize(shape: &Shape, max_depth: usize) -> Self {
        let levels = max_depth + 1;
        let mut tree = Tree {
            first_child: vec![Vec::new(); levels],
            parent: vec![Vec::new(); levels],
            level_names: vec![String::new(); levels],
            leaves: Vec::new(),
        };
        let mut frontier: Vec<&Shape> = vec![shape];
        for level in 0..levels {
            tree.level_names[level] = level_name(&frontier);
            let mut next = Vec::new();
            let mut firsts = Vec::with_capacity(frontier.len() + 1);
            for (v, s) in frontier.iter().enumerate() {
                firsts.push(next.len() as u32);
                if level + 1 < levels {
                    for c in &s.children {
                        next.push(c);
                        tree.parent[level + 1].push(v as u32);
                    }
                } else if let Some(leaf) = &s.leaf {
                    tree.leaves.push(leaf.clone());
                }
            }
            firsts.push(next.len() as u32);
            tree.first_child[level] = firsts;
            frontier = next;
        }
        tree
    }

    /// Removes every inner level (not the root, not the leaves) whose vertices each have
    /// exactly one child, and the level under a root with one child.
    fn merge_single_child_levels(&mut self) {
        let mut level = 1;
        while level + 1 < self.level_count() {
            let above = level - 1;
            let single = (0..self.width(above)).all(|v| self.arity(above, v) == 1);
            if single {
                self.remove_level(level);
            } else {
                level += 1;
            }
        }
    }

    /// Removes level `level` (0 < level < leaf level), where every vertex of the level
    /// above has exactly one child: its children are adopted by that parent.
    fn remove_level(&mut self, level: usize) {
        // Vertex v at level-1 has the single child v at `level`, whose children become v's.
        let grand = self.first_child[level].clone();
        self.first_child[level - 1] = grand;
        self.first_child.remove(level);
        // parents of level+1 stay the same indices (child v of level == v of level-1).
        self.parent.remove(level);
        self.level_names.remove(level);
    }

    /// Number of levels (root level included).
    pub fn level_count(&self) -> usize {
        self.first_child.len()
    }

    /// Depth of the leaves (0 for a tree that is a single leaf).
    pub fn depth(&self) -> usize {
        self.level_count() - 1
    }

    /// Number of vertices at `level`.
    pub fn width(&self, level: usize) -> usize {
        self.first_child[level].len() - 1
    }

    /// Number of children of vertex `vertex` at `level`.
    pub fn arity(&self, level: usize, vertex: usize) -> usize {
        let f = &self.first_child[level];
        (f[vertex + 1] - f[vertex]) as usize
    }

    /// Children (indices at `level + 1`) of `vertex` at `level`.
    pub fn children(&self, level: usize, vertex: usize) -> std::ops::Range<usize> {
        let f = &self.first_child[level];
        f[vertex] as usize..f[vertex + 1] as usize
    }

    /// Parent (at `level - 1`) of `vertex` at `level` (`level > 0`).
    pub fn parent(&self, level: usize, vertex: usize) -> usize {
        self.parent[level][vertex] as usize
    }

    /// Name of each level, root first.
    pub fn level_names(&self) -> &[String] {
        &self.level_names
    }

    /// Number of leaves.
    pub fn leaf_count(&self) -> usize {
        self.leaves.len()
    }

    /// What each leaf stands for, in depth-first order.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// Minimum and maximum arity of the vertices of `level`.
    pub fn arity_range(&self, level: usize) -> (usize, usize) {
        let arities = (0..self.width(level)).map(|v| self.arity(level, v));
        let min = arities.clone().min().unwrap_or(0);
        let max = arities.max().unwrap_or(0);
        (min, max)
    }

    /// Ancestor of `leaf` at every level: `table[level][leaf]`.
    pub fn ancestor_table(&self) -> Vec<Vec<u32>> {
        let depth = self.depth();
        let mut table = vec![Vec::new(); depth + 1];
        table[depth] = (0..self.leaf_count() as u32).collect();
        for level in (0..depth).rev() {
            table[level] = table[level + 1]
                .iter()
                .map(|&v| self.parent[level + 1][v as usize])
                .collect();
        }
        table
    }

    /// Depth of the deepest common ancestor of two leaves.
    pub fn common_depth(&self, a: usize, b: usize) -> usize {
        let (mut x, mut y, mut level) = (a, b, self.depth());
        while x != y {
            x = self.parent(level, x);
            y = self.parent(level, y);
            level -= 1;
        }
        level
    }

    /// Number of tree edges on the path between two leaves.
    pub fn hops(&self, a: usize, b: usize) -> usize {
        2 * (self.depth() - self.common_depth(a, b))
    }

    /// One line per level: `Name:count(xarity)`, e.g. `Machine:1(x2) Package:2(x8) Core:16`.
    pub fn describe_levels(&self) -> String {
        let mut parts = Vec::new();
        for level in 0..self.level_count() {
            let name = &self.level_names[level];
            let width = self.width(level);
            if level == self.depth() {
                parts.push(format!("{name}:{width}"));
            } else {
                let (lo, hi) = self.arity_range(level);
                let arity = if lo == hi {
                    format!("x{lo}")
                } else {
                    format!("x{lo}-{hi}")
                };
                parts.push(format!("{name}:{width}({arity})"));
            }
        }
        parts.join(" ")
    }
}

/// The name of a level: the kind of its first vertex with several children, else of
/// its first vertex. A level that mixes kinds (the shared L2 caches of a hybrid
/// CPU's E-cores beside its P-cores, padded down to the leaves) is named after the
/// vertices that group something.
fn level_name(vertices: &[&Shape]) -> String {
    vertices
        .iter()
        .find(|s| s.children.len() > 1)
        .or(vertices.first())
        .map(|s| s.kind.clone())
        .unwrap_or_default()
}

fn prune(shape: &Shape) -> Option<Shape> {
    if shape.leaf.is_some() {
        return Some(shape.clone());
    }
    let children: Vec<Shape> = shape.children.iter().filter_map(prune).collect();
    if children.is_empty() || !children.iter().any(Shape::has_leaves) {
        return None;
    }
    Some(Shape::inner(&shape.kind, children))
}

/// Edges from `shape` down to its deepest leaf.
fn height(shape: &Shape) -> usize {
    shape
        .children
        .iter()
        .map(|c| height(c) + 1)
        .max()
        .unwrap_or(0)
}

/// `shape` (of height at most `target`) with every leaf `target` edges below it. A
/// child not tall enough is put under single-child vertices of its own kind just below
/// its parent, so that what it holds keeps its distances: the two threads of a P-core
/// stay siblings beside the shared-L2 clusters of E-cores of a hybrid CPU.
fn pad_to(shape: &Shape, target: usize) -> Shape {
    if shape.leaf.is_some() {
        return wrap(shape.clone(), target);
    }
    let children = shape
        .children
        .iter()
        .map(|c| {
            let own = height(c);
            wrap(pad_to(c, own), target.saturating_sub(own + 1))
        })
        .collect();
    Shape::inner(&shape.kind, children)
}

/// `shape` under `times` single-child vertices of its kind.
fn wrap(shape: Shape, times: usize) -> Shape {
    let kind = shape.kind.clone();
    (0..times).fold(shape, |s, _| Shape::inner(&kind, vec![s]))
}

fn build_symmetric(arities: &[usize], counter: &mut u32) -> Shape {
    match arities.split_first() {
        None => {
            let leaf = Leaf {
                logical_index: *counter,
                ..Leaf::default()
            };
            *counter += 1;
            Shape::leaf("Leaf", leaf)
        }
        Some((&arity, rest)) => {
            let kind = format!("L{}", arities.len());
            let children = (0..arity).map(|_| build_symmetric(rest, counter)).collect();
            Shape::inner(&kind, children)
        }
    }
}

fn relabel_node(shape: &mut Shape, node: u32) {
    if let Some(leaf) = &mut shape.leaf {
        leaf.node = node;
    }
    for c in &mut shape.children {
        relabel_node(c, node);
    }
}

fn add_slots(shape: &mut Shape, factor: usize) {
    if let Some(leaf) = shape.leaf.take() {
        shape.children = (0..factor)
            .map(|_| Shape::leaf("Slot", leaf.clone()))
            .collect();
        return;
    }
    for c in &mut shape.children {
        add_slots(c, factor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_tree_levels_and_hops() {
        let t = Tree::from_arities(&[4, 2, 8]).unwrap();
        assert_eq!(t.depth(), 3);
        assert_eq!(t.leaf_count(), 64);
        assert_eq!(t.hops(0, 1), 2);
        assert_eq!(t.hops(0, 8), 4);
        assert_eq!(t.hops(0, 16), 6);
        assert_eq!(t.hops(5, 5), 0);
        assert_eq!(t.describe_levels(), "L3:1(x4) L2:4(x2) L1:8(x8) Leaf:64");
    }

    #[test]
    fn single_child_levels_are_merged() {
        let t = Tree::from_arities(&[1, 2, 1, 4]).unwrap();
        assert_eq!(t.depth(), 2);
        assert_eq!(t.leaf_count(), 8);
        assert_eq!(t.hops(0, 4), 4);
    }

    #[test]
    fn empty_subtrees_are_pruned_and_uneven_leaves_padded() {
        let leaf = |i| {
            Shape::leaf(
                "Core",
                Leaf {
                    logical_index: i,
                    ..Leaf::default()
                },
            )
        };
        let shape = Shape::inner(
            "Machine",
            vec![
                Shape::inner("Group", vec![leaf(0), leaf(1)]),
                Shape::inner("Group", vec![]),
                leaf(2),
            ],
        );
        let t = Tree::from_shape(&shape).unwrap();
        assert_eq!(t.leaf_count(), 3);
        assert_eq!(t.depth(), 2);
        assert_eq!(t.hops(0, 1), 2);
        assert_eq!(t.hops(0, 2), 4);
    }

    #[test]
    fn restrict_keeps_distances() {
        let t = Tree::from_arities(&[2, 2, 2]).unwrap();
        let (r, old) = t.restrict(&[1, 6, 7]).unwrap();
        assert_eq!(old, vec![1, 6, 7]);
        assert_eq!(r.depth(), t.depth());
        assert_eq!(r.hops(0, 1), t.hops(1, 6));
        assert_eq!(r.hops(1, 2), t.hops(6, 7));
        assert!(matches!(
            t.restrict(&[9]),
            Err(TopologyError::LeafOutOfRange { leaf: 9, .. })
        ));
    }

    #[test]
    fn slots_add_a_level() {
        let t = Tree::from_arities(&[2, 2]).unwrap().with_slots(3).unwrap();
        assert_eq!(t.leaf_count(), 12);
        assert_eq!(t.hops(0, 2), 2);
        assert_eq!(t.hops(0, 3), 4);
    }

    #[test]
    fn cluster_labels_nodes() {
        let node = Tree::from_arities(&[2, 8]).unwrap();
        let c = Tree::cluster(&node, 4).unwrap();
        assert_eq!(c.leaf_count(), 64);
        assert_eq!(c.depth(), 3);
        assert_eq!(c.leaves()[17].node, 1);
        assert_eq!(c.leaves()[17].logical_index, 1);
        assert_eq!(c.hops(0, 16), 6);
    }
}
