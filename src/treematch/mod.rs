//! TreeMatch: maps communicating ranks onto the leaves of a tree so that heavy
//! communication stays low in the tree (Jeannot & Mercier, Euro-Par 2010; Jeannot,
//! Mercier & Tessier, IEEE TPDS 2014), written from the papers.
//!
//! Bottom-up: at the leaves' level the ranks (padded with silent virtual ranks up to the
//! number of leaves) are grouped by the arity of their parents so that the communication
//! inside the groups is as large as possible ([`grouping`]); each group becomes one
//! vertex of a contracted graph and the next level is grouped the same way, up to the
//! root. The mapping is then read top-down. Irregular trees work: every vertex has a
//! shape (the multiset of its children's shapes) and groups are formed to fit shapes.
//! A final refinement swaps ranks between leaves while the hop-bytes decrease
//! ([`refine`]).
//!
//! ```
//! use rankmig::matrix::CommMatrix;
//! use rankmig::topology::Tree;
//! use rankmig::treematch::{map, MapOptions};
//! // ranks 0-2 and 1-3 talk: they must share a package.
//! let m = CommMatrix::from_triples(4, [(0, 2, 100.0), (1, 3, 100.0), (0, 1, 1.0)]);
//! let tree = Tree::from_arities(&[2, 2]).unwrap();
//! let mapping = map(&m.symmetric(), &tree, &MapOptions::default()).unwrap();
//! assert_eq!(tree.hops(mapping.leaf(0), mapping.leaf(2)), 2);
//! assert_eq!(tree.hops(mapping.leaf(1), mapping.leaf(3)), 2);
//! ```

pub mod baselines;
mod bisection;
pub mod grouping;
pub mod mapping_file;
pub mod metrics;
pub mod patterns;
pub mod refine;
mod spread;

use std::collections::HashMap;

use serde::Serialize;

use crate::matrix::SymGraph;
use crate::topology::{TopologyError, Tree};
use grouping::{GroupingParams, LevelRequest};

/// Options of a mapping.
#[derive(Debug, Clone)]
pub struct MapOptions {
    /// Up to this many ranks per leaf (1 = no oversubscription).
    pub oversubscribe: usize,
    /// Only these leaves may be used (`None` = all).
    pub allowed: Option<Vec<usize>>,
    /// Largest number of candidate partitions of one level searched exhaustively.
    pub exact_limit: f64,
    /// Largest number of leaves for which the whole mapping is found by brute force.
    pub brute_force_leaves: usize,
    /// Swap-refinement passes per level.
    pub level_refine_passes: usize,
    /// Hop-bytes refinement passes on the final mapping.
    pub final_refine_passes: usize,
}

impl Default for MapOptions {
    fn default() -> Self {
        Self {
            oversubscribe: 1,
            allowed: None,
            exact_limit: 2_000.0,
            brute_force_leaves: 8,
            level_refine_passes: 4,
            final_refine_passes: 8,
        }
    }
}

/// A mapping: the leaf of every rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mapping {
    leaves: Vec<usize>,
}

impl Mapping {
    /// Wraps a leaf-per-rank vector.
    pub fn new(leaves: Vec<usize>) -> Self {
        Self { leaves }
    }

    /// Leaf of `rank`.
    pub fn leaf(&self, rank: usize) -> usize {
        self.leaves[rank]
    }

    /// Leaf of every rank.
    pub fn leaves(&self) -> &[usize] {
        &self.leaves
    }

    /// Number of ranks.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// True when there is no rank.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }
}

/// Why a mapping could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// More ranks than slots.
    #[error(
        "{ranks} ranks do not fit on {slots} slots ({leaves} usable leaves x oversubscription {factor}); \
         use --oversubscribe to allow more ranks per leaf"
    )]
    TooManyRanks {
        /// Ranks to map.
        ranks: usize,
        /// Slots available.
        slots: usize,
        /// Usable leaves.
        leaves: usize,
        /// Oversubscription factor.
        factor: usize,
    },
    /// The allowed-leaves list or the tree is unusable.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// An option is out of range.
    #[error("{0}")]
    BadOption(String),
}

/// Maps the vertices of `graph` (the symmetrised matrix) onto the leaves of `tree`.
pub fn map(graph: &SymGraph, tree: &Tree, options: &MapOptions) -> Result<Mapping, MapError> {
    if options.oversubscribe == 0 {
        return Err(MapError::BadOption(
            "oversubscription factor must be at least 1".into(),
        ));
    }
    let (usable, leaf_of_usable) = match &options.allowed {
        Some(allowed) => tree.restrict(allowed)?,
        None => (tree.clone(), (0..tree.leaf_count()).collect()),
    };
    let ranks = graph.order();
    let factor = effective_oversubscription(ranks, usable.leaf_count(), options.oversubscribe);
    let work = usable.with_slots(factor)?;
    if ranks > work.leaf_count() {
        return Err(MapError::TooManyRanks {
            ranks,
            slots: work.leaf_count(),
            leaves: usable.leaf_count(),
            factor: options.oversubscribe,
        });
    }
    let slot_of_rank = if work.leaf_count() <= options.brute_force_leaves {
        refine::brute_force(graph, &work)
    } else if ranks == work.leaf_count() && is_uniform_complete(graph) {
        // Every rank talks to every other one equally and every slot is used: all
        // placements cost the same.
        baselines::packed(&work, ranks, None, 1)
    } else {
        let mut slots = best_start(graph, &work, bottom_up(graph, &work, options));
        refine::swap_refine(graph, &work, &mut slots, options.final_refine_passes);
        refine::kernighan_lin(graph, &work, &mut slots, options.final_refine_passes);
        refine::restarts(graph, &work, &mut slots, options.final_refine_passes);
        slots
    };
    let mut usable_leaf: Vec<usize> = slot_of_rank.iter().map(|&slot| slot / factor).collect();
    if factor > 1 {
        // Only oversubscribed slot trees can leave a leaf empty while another is shared.
        spread::fill_free_leaves(&mut usable_leaf, usable.leaf_count());
    }
    Ok(Mapping::new(
        usable_leaf.iter().map(|&u| leaf_of_usable[u]).collect(),
    ))
}

/// The oversubscription actually used for `ranks` ranks on `leaves` usable leaves when
/// up to `requested` ranks per leaf are allowed: the smallest factor that fits, so no
/// leaf is shared while another is free (10 ranks on 16 cores use 1 rank per core even
/// with `--oversubscribe 2`). Never above `requested`, at least 1.
///
/// ```
/// use rankmig::treematch::effective_oversubscription;
/// assert_eq!(effective_oversubscription(10, 16, 2), 1);
/// assert_eq!(effective_oversubscription(17, 16, 1024), 2);
/// assert_eq!(effective_oversubscription(40, 16, 2), 2);
/// ```
pub fn effective_oversubscription(ranks: usize, leaves: usize, requested: usize) -> usize {
    ranks.div_ceil(leaves.max(1)).clamp(1, requested.max(1))
}

/// Largest mean degree for which the recursive-bisection start is computed.
const BISECTION_MAX_DEGREE: usize = 64;

/// True when every pair of ranks communicates with the same weight (up to rounding).
fn is_uniform_complete(graph: &SymGraph) -> bool {
    let n = graph.order();
    if n < 2 || graph.adjacency_len() != n * (n - 1) {
        return false;
    }
    let Some((_, first)) = graph.neighbors(0).next() else {
        return false;
    };
    let tolerance = 1e-9 * first.abs();
    (0..n).all(|v| {
        graph
            .neighbors(v)
            .all(|(_, w)| (w - first).abs() <= tolerance)
    })
}

/// The TreeMatch result, unless packed or round-robin placement already costs fewer
/// hop-bytes (regular patterns numbered along the machine): refinement then starts from
/// the cheapest of the three.
fn best_start(graph: &SymGraph, tree: &Tree, treematch: Vec<usize>) -> Vec<usize> {
    let n = graph.order();
    let hop_bytes = metrics::HopBytes::new(tree);
    let mut best_cost = hop_bytes.of(graph, &treematch);
    let mut best = treematch;
    let mut starts = vec![
        baselines::packed(tree, n, None, 1),
        baselines::round_robin(tree, n, None, 1),
    ];
    if graph.adjacency_len() <= BISECTION_MAX_DEGREE * n {
        starts.push(bisection::recursive_bisection(graph, tree));
    }
    for start in starts {
        let cost = hop_bytes.of(graph, &start);
        if cost < best_cost {
            best_cost = cost;
            best = start;
        }
    }
    best
}

/// The bottom-up TreeMatch pass: returns the leaf of every rank of `graph` in `tree`.
fn bottom_up(graph: &SymGraph, tree: &Tree, options: &MapOptions) -> Vec<usize> {
    let params = GroupingParams {
        exact_limit: options.exact_limit,
        refine_passes: options.level_refine_passes,
    };
    let shapes = vertex_shapes(tree);
    let depth = tree.depth();
    let mut current = graph.clone().with_isolated_up_to(tree.leaf_count());
    let mut unit_shape = vec![shapes[depth][0]; tree.leaf_count()];
    // members[level][group] = units of the level below forming that group
    let mut members_per_level: Vec<Vec<Vec<u32>>> = vec![Vec::new(); depth];
    let mut group_shape_per_level: Vec<Vec<u32>> = vec![Vec::new(); depth];
    for level in (0..depth).rev() {
        let (templates, group_shapes) = level_templates(tree, level, &shapes);
        let request = LevelRequest {
            unit_shape: unit_shape.clone(),
            templates,
        };
        let groups = grouping::group_level(&current, &request, params);
        let mut group_of = vec![0u32; current.order()];
        for (g, members) in groups.iter().enumerate() {
            for &u in members {
                group_of[u as usize] = g as u32;
            }
        }
        current = current.contract(&group_of, groups.len());
        unit_shape = group_shapes.clone();
        members_per_level[level] = groups;
        group_shape_per_level[level] = group_shapes;
    }
    let mut leaf_of_unit = vec![0usize; tree.leaf_count()];
    assign_top_down(
        tree,
        &shapes,
        &members_per_level,
        &group_shape_per_level,
        (0, 0, 0),
        &mut leaf_of_unit,
    );
    leaf_of_unit.truncate(graph.order());
    leaf_of_unit
}

/// Shape id of every vertex of every level: equal ids = isomorphic subtrees.
fn vertex_shapes(tree: &Tree) -> Vec<Vec<u32>> {
    let depth = tree.depth();
    let mut shapes = vec![Vec::new(); depth + 1];
    shapes[depth] = vec![0; tree.leaf_count()];
    let mut intern: HashMap<(usize, Vec<u32>), u32> = HashMap::new();
    for level in (0..depth).rev() {
        shapes[level] = (0..tree.width(level))
            .map(|v| {
                let mut kids: Vec<u32> = tree
                    .children(level, v)
                    .map(|c| shapes[level + 1][c])
                    .collect();
                kids.sort_unstable();
                let next = intern.len() as u32;
                *intern.entry((level, kids)).or_insert(next)
            })
            .collect();
    }
    shapes
}

/// The groups to form at `level`: one per vertex, asking for its children's shapes.
fn level_templates(
    tree: &Tree,
    level: usize,
    shapes: &[Vec<u32>],
) -> (Vec<Vec<(u32, usize)>>, Vec<u32>) {
    let mut templates = Vec::with_capacity(tree.width(level));
    let mut group_shapes = Vec::with_capacity(tree.width(level));
    for v in 0..tree.width(level) {
        let mut counts: Vec<(u32, usize)> = Vec::new();
        for c in tree.children(level, v) {
            let s = shapes[level + 1][c];
            match counts.iter_mut().find(|t| t.0 == s) {
                Some(t) => t.1 += 1,
                None => counts.push((s, 1)),
            }
        }
        templates.push(counts);
        group_shapes.push(shapes[level][v]);
    }
    (templates, group_shapes)
}

/// Places group `group` of `level` on tree vertex `vertex` and recurses into children.
/// `at` = (level, group, vertex).
fn assign_top_down(
    tree: &Tree,
    shapes: &[Vec<u32>],
    members: &[Vec<Vec<u32>>],
    group_shapes: &[Vec<u32>],
    at: (usize, usize, usize),
    leaf_of_unit: &mut [usize],
) {
    let (level, group, vertex) = at;
    let mut pending: Vec<u32> = members[level][group].clone();
    for child in tree.children(level, vertex) {
        let want = shapes[level + 1][child];
        let shape_of = |u: u32| {
            if level + 1 == tree.depth() {
                shapes[level + 1][0]
            } else {
                group_shapes[level + 1][u as usize]
            }
        };
        let Some(pos) = pending.iter().position(|&u| shape_of(u) == want) else {
            continue;
        };
        let unit = pending.swap_remove(pos);
        if level + 1 == tree.depth() {
            leaf_of_unit[unit as usize] = child;
        } else {
            assign_top_down(
                tree,
                shapes,
                members,
                group_shapes,
                (level + 1, unit as usize, child),
                leaf_of_unit,
            );
        }
    }
}
