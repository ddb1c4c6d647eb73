//! The two-step reconfiguration of section 2.2 of Cores et al. (2016): when the
//! availability changes, decide which ranks leave their node ([`select_leavers`], step 1)
//! and where they land ([`place_leavers`], step 2), moving as few ranks as possible.
//!
//! With N ranks, node i offering nCores(i) cores and T = Σ nCores(i):
//! maxProcs(i) = ⌈nCores(i)·N/T⌉. On a node with load(i) > maxProcs(i), load(i) −
//! maxProcs(i) ranks leave (all when maxProcs(i) = 0), chosen by TreeMatch on a virtual
//! tree of two nodes so that the ranks that talk most stay together. The leavers are
//! mapped by TreeMatch onto the free cores of the nodes with load(i) < maxProcs(i),
//! each offering maxProcs(i) − load(i) slots (extra virtual cores where a node must be
//! oversubscribed). Ranks that do not leave do not move.
//!
//! ```
//! use rankmig::availability::{Availability, AvailabilityFormat};
//! use rankmig::matrix::CommMatrix;
//! use rankmig::planner::{plan, PlanOptions, Placement};
//! use rankmig::topology::Tree;
//! let node = Tree::from_arities(&[2]).unwrap(); // 2-core nodes
//! let now = Placement::parse("0 n1 0\n1 n1 1\n2 n2 0\n3 n2 1\n", "p").unwrap();
//! let av = Availability::parse("n1 0\nn2 2\nn3 2\n", "av", AvailabilityFormat::Auto).unwrap();
//! let m = CommMatrix::from_triples(4, [(0, 1, 9.0), (2, 3, 9.0)]);
//! let p = plan(&av, &now, &m.symmetric(), &node, &PlanOptions::default()).unwrap();
//! assert_eq!(p.moves.len(), 2); // n1's two ranks go to n3
//! assert!(p.moves.iter().all(|mv| mv.to.node == "n3"));
//! ```

mod cost;
mod node_trees;
mod placement;
mod rank_slots;
mod steps;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::availability::Availability;
use crate::matrix::SymGraph;
use crate::topology::Tree;
use crate::treematch::MapError;

pub use cost::{location_hops_on, placement_hop_bytes, placement_hop_bytes_on};
pub use node_trees::{NodeTrees, logical_node_tree};
pub use placement::{Location, Placement, PlacementError};
pub use rank_slots::RankSlots;
pub use steps::{Targets, place_leavers, select_leavers};

/// How step 2 chooses where the leavers land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Step2 {
    /// As the paper: TreeMatch on the leavers' sub-matrix only.
    Paper,
    /// The paper's mapping, then leavers are swapped between free slots while the
    /// hop-bytes of the whole job (leavers ↔ residents included) decrease.
    #[default]
    Residents,
}

/// Options of the planner.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Step-2 variant.
    pub step2: Step2,
}

/// One rank's move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Move {
    /// The rank.
    pub rank: usize,
    /// Where it was.
    pub from: Location,
    /// Where it goes.
    pub to: Location,
}

/// Per-node figures of a plan. With ranks of several cores ([`RankSlots`]) `cores`
/// are the cores offered and the other figures count ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeLoad {
    /// Cores offered (0 = unavailable).
    pub cores: usize,
    /// ⌈slots·N/T⌉ (slots: the ranks the node's cores hold; T: their sum).
    pub max_procs: usize,
    /// Ranks before the plan.
    pub before: usize,
    /// Ranks after the plan.
    pub after: usize,
}

/// A reconfiguration plan: a value, nothing is carried out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The moves, by rank.
    pub moves: Vec<Move>,
    /// The placement after the moves.
    pub placement: Placement,
    /// Σ max(0, load − maxProcs): the fewest moves any plan could make.
    pub minimum_moves: usize,
    /// Hop-bytes of the job before, on the cluster tree (root over nodes).
    pub hop_bytes_before: f64,
    /// Hop-bytes after.
    pub hop_bytes_after: f64,
    /// Per-node loads, by node name.
    pub nodes: BTreeMap<String, NodeLoad>,
}

/// Why a plan could not be made. The job keeps its placement.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The placement and the matrix disagree on the rank count.
    #[error("the placement has {placement} ranks but the matrix has {matrix}")]
    RankCount {
        /// Ranks in the placement.
        placement: usize,
        /// Order of the matrix.
        matrix: usize,
    },
    /// No core at all.
    #[error("no cores available at all; the job keeps its current placement")]
    NoCores,
    /// No node offers the cores of one rank ([`RankSlots`]).
    #[error(
        "no node offers the {cores_per_rank} cores of one rank (the largest offers {largest}); the job keeps its current placement"
    )]
    NoRoomForRank {
        /// Cores each rank runs on.
        cores_per_rank: usize,
        /// The most cores one node offers.
        largest: usize,
    },
    /// A core of the placement or of a cpus= list does not exist in the node tree.
    #[error("node {node}: core {core} does not exist (the node topology has {cores} cores)")]
    NoSuchCore {
        /// Node name.
        node: String,
        /// The core.
        core: usize,
        /// Cores of the node topology.
        cores: usize,
    },
    /// The mapper failed.
    #[error(transparent)]
    Map(#[from] MapError),
    /// A virtual tree could not be built.
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
}

/// Plans the reconfiguration of `placement` to `availability` (both steps).
pub fn plan(
    availability: &Availability,
    placement: &Placement,
    graph: &SymGraph,
    node_tree: &Tree,
    options: &PlanOptions,
) -> Result<Plan, PlanError> {
    plan_on(
        availability,
        placement,
        graph,
        &NodeTrees::uniform(node_tree),
        options,
    )
}

/// [`plan`] where nodes may have different trees (`trees.of(node)`).
pub fn plan_on(
    availability: &Availability,
    placement: &Placement,
    graph: &SymGraph,
    trees: &NodeTrees<'_>,
    options: &PlanOptions,
) -> Result<Plan, PlanError> {
    check_inputs(availability, placement, graph, trees)?;
    let targets = Targets::new(availability, placement, graph.order());
    let leavers = select_leavers(&targets, placement, graph)?;
    let placed = place_leavers(&targets, placement, &leavers, graph, trees, options.step2)?;
    let mut after = placement.locations().to_vec();
    let mut moves = Vec::with_capacity(leavers.len());
    for (&rank, to) in leavers.iter().zip(placed) {
        moves.push(Move {
            rank,
            from: placement.location(rank).clone(),
            to: to.clone(),
        });
        after[rank] = to;
    }
    moves.sort_by_key(|m| m.rank);
    let after = Placement::new(after);
    Ok(Plan {
        minimum_moves: targets.minimum_moves(),
        hop_bytes_before: placement_hop_bytes_on(graph, trees, placement),
        hop_bytes_after: placement_hop_bytes_on(graph, trees, &after),
        nodes: targets.node_loads(&after),
        moves,
        placement: after,
    })
}

/// An initial placement of `graph.order()` ranks over the offered cores (step 2 with
/// every rank leaving from nowhere).
pub fn place(
    availability: &Availability,
    graph: &SymGraph,
    node_tree: &Tree,
) -> Result<Placement, PlanError> {
    let trees = NodeTrees::uniform(node_tree);
    check_offers(availability, &trees)?;
    let n = graph.order();
    let empty = Placement::new(Vec::new());
    let targets = Targets::new(availability, &empty, n);
    let everyone: Vec<usize> = (0..n).collect();
    let placed = place_leavers(&targets, &empty, &everyone, graph, &trees, Step2::Paper)?;
    Ok(Placement::new(placed))
}

fn check_inputs(
    availability: &Availability,
    placement: &Placement,
    graph: &SymGraph,
    trees: &NodeTrees<'_>,
) -> Result<(), PlanError> {
    if placement.len() != graph.order() {
        return Err(PlanError::RankCount {
            placement: placement.len(),
            matrix: graph.order(),
        });
    }
    for l in placement.locations() {
        let cores = trees.of(&l.node).leaf_count();
        if l.core >= cores {
            return Err(PlanError::NoSuchCore {
                node: l.node.clone(),
                core: l.core,
                cores,
            });
        }
    }
    check_offers(availability, trees)
}

fn check_offers(availability: &Availability, trees: &NodeTrees<'_>) -> Result<(), PlanError> {
    if availability.total_cores() == 0 {
        return Err(PlanError::NoCores);
    }
    // More cores offered than the node tree has is allowed: the extra ones become
    // oversubscription slots. A cpus= list must name cores that exist.
    for offer in availability.nodes() {
        let cores = trees.of(&offer.name).leaf_count();
        if let Some(&core) = offer.cpus.iter().flatten().find(|&&c| c >= cores) {
            return Err(PlanError::NoSuchCore {
                node: offer.name.clone(),
                core,
                cores,
            });
        }
    }
    Ok(())
}
