//! The two steps: who leaves, where they land.

use std::collections::{BTreeMap, HashMap};

use crate::availability::Availability;
use crate::matrix::SymGraph;
use crate::topology::{Leaf, Shape, Tree};
use crate::treematch::{MapOptions, map};

use super::{Location, NodeLoad, NodeTrees, Placement, PlanError, Step2};

/// One node as the planner sees it.
#[derive(Debug, Clone)]
struct NodeState {
    name: String,
    /// Cores offered (0 = unavailable).
    cores: usize,
    /// Offered cores (leaf indexes of the node tree); `None` = the first `cores`.
    cpus: Option<Vec<usize>>,
    /// ⌈cores·N/T⌉.
    max_procs: usize,
    /// Ranks on the node now.
    load: usize,
    /// Ranks on the node now whose cores its `cpus=` list no longer offers: they leave
    /// those cores whatever the counts say (ascending).
    withdrawn: Vec<usize>,
}

impl NodeState {
    /// Ranks that may stay on the node: those on cores it still offers.
    fn staying(&self) -> usize {
        self.load - self.withdrawn.len()
    }
}

/// The ranks of `placement` on `node` whose cores `cpus` (when given) leaves out.
fn withdrawn_ranks(node: &str, cpus: Option<&[usize]>, placement: &Placement) -> Vec<usize> {
    let Some(cpus) = cpus else {
        return Vec::new();
    };
    (placement.ranks_on(node).into_iter())
        .filter(|&r| !cpus.contains(&placement.location(r).core))
        .collect()
}

/// Loads and capacities of every node (available ones in file order, then nodes that
/// only appear in the placement).
#[derive(Debug, Clone)]
pub struct Targets {
    nodes: Vec<NodeState>,
}

/// ⌈cores·ranks/total⌉ computed without overflow (in 128 bits; the result is at most
/// `ranks` since `cores <= total`).
fn max_procs(cores: usize, ranks: usize, total: usize) -> usize {
    let exact = (cores as u128 * ranks as u128).div_ceil(total.max(1) as u128);
    usize::try_from(exact).unwrap_or(usize::MAX)
}

impl Targets {
    /// Computes maxProcs(i) = ⌈nCores(i)·N/T⌉ and load(i) for every node.
    pub fn new(availability: &Availability, placement: &Placement, ranks: usize) -> Self {
        let total = availability.total_cores().max(1);
        let mut nodes: Vec<NodeState> = availability
            .nodes()
            .iter()
            .map(|o| NodeState {
                name: o.name.clone(),
                cores: o.cores,
                cpus: o.cpus.clone(),
                max_procs: max_procs(o.cores, ranks, total),
                load: placement.ranks_count_on(&o.name),
                withdrawn: withdrawn_ranks(&o.name, o.cpus.as_deref(), placement),
            })
            .collect();
        for name in placement.node_names() {
            if availability.node(&name).is_none() {
                nodes.push(NodeState {
                    load: placement.ranks_count_on(&name),
                    name,
                    cores: 0,
                    cpus: None,
                    max_procs: 0,
                    withdrawn: Vec::new(),
                });
            }
        }
        Self { nodes }
    }

    /// Σ max(0, load − maxProcs) (saturating), where the ranks on cores a node's
    /// `cpus=` list leaves out all count as moves and the rest as load.
    pub fn minimum_moves(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.withdrawn.len() + n.staying().saturating_sub(n.max_procs))
            .fold(0usize, usize::saturating_add)
    }

    /// Per-node figures with the loads of `after`.
    pub(super) fn node_loads(&self, after: &Placement) -> BTreeMap<String, NodeLoad> {
        self.nodes
            .iter()
            .map(|n| {
                let load = NodeLoad {
                    cores: n.cores,
                    max_procs: n.max_procs,
                    before: n.load,
                    after: after.ranks_count_on(&n.name),
                };
                (n.name.clone(), load)
            })
            .collect()
    }
}

/// Step 1: the ranks that must leave their node, ascending. On a node with load >
/// maxProcs > 0, TreeMatch maps the node's ranks onto two virtual nodes of maxProcs
/// and load − maxProcs leaves; those on the second leave. Beyond the paper: the ranks
/// on cores a node's `cpus=` list leaves out leave first (they may land on the same
/// node's offered cores), and the split is made among the others.
pub fn select_leavers(
    targets: &Targets,
    placement: &Placement,
    graph: &SymGraph,
) -> Result<Vec<usize>, PlanError> {
    let mut leavers = Vec::new();
    for node in &targets.nodes {
        leavers.extend(&node.withdrawn);
        if node.staying() <= node.max_procs {
            continue;
        }
        let ranks: Vec<usize> = (placement.ranks_on(&node.name).into_iter())
            .filter(|r| !node.withdrawn.contains(r))
            .collect();
        if node.max_procs == 0 {
            leavers.extend(ranks);
            continue;
        }
        let stay = node.max_procs;
        let tree = Tree::from_shape(&Shape::inner(
            "Split",
            vec![flat_group(stay), flat_group(ranks.len() - stay)],
        ))?;
        let mapping = map(&graph.subgraph(&ranks), &tree, &MapOptions::default())?;
        leavers.extend(
            ranks
                .iter()
                .zip(mapping.leaves())
                .filter(|&(_, &leaf)| leaf >= stay)
                .map(|(&rank, _)| rank),
        );
    }
    leavers.sort_unstable();
    Ok(leavers)
}

fn flat_group(size: usize) -> Shape {
    let leaf = Leaf::default();
    Shape::inner(
        "Virtual",
        (0..size)
            .map(|_| Shape::leaf("Slot", leaf.clone()))
            .collect(),
    )
}

/// The free slots of one target node, in the order they are offered.
struct TargetSlots {
    node: String,
    /// Slot leaf indexes in the node tree with `factor` slots per core.
    slots: Vec<usize>,
    factor: usize,
}

/// Step 2: where each leaver (in the order given) lands. TreeMatch maps the leavers'
/// sub-matrix onto a tree made of the target nodes' free cores (their real subtrees),
/// with extra slots on cores where a node must be oversubscribed.
pub fn place_leavers(
    targets: &Targets,
    placement: &Placement,
    leavers: &[usize],
    graph: &SymGraph,
    trees: &NodeTrees<'_>,
    variant: Step2,
) -> Result<Vec<Location>, PlanError> {
    if leavers.is_empty() {
        return Ok(Vec::new());
    }
    let mut parts = Vec::new();
    let mut slot_locations: Vec<Location> = Vec::new();
    for node in &targets.nodes {
        let node_tree = trees.of(&node.name);
        let Some(free) = free_slots(node, placement, node_tree) else {
            continue;
        };
        let (part, _) = node_tree.with_slots(free.factor)?.restrict(&free.slots)?;
        parts.push(part);
        slot_locations.extend(free.slots.iter().map(|&s| Location {
            node: free.node.clone(),
            core: s / free.factor,
        }));
    }
    let tree = Tree::compose("Cluster", &parts)?;
    let sub = graph.subgraph(leavers);
    let mapping = map(&sub, &tree, &MapOptions::default())?;
    let mut landing: Vec<usize> = mapping.leaves().to_vec();
    if variant == Step2::Residents {
        refine_with_residents(
            graph,
            trees,
            placement,
            leavers,
            &slot_locations,
            &mut landing,
        );
    }
    Ok(landing
        .into_iter()
        .map(|slot| slot_locations[slot].clone())
        .collect())
}

/// The maxProcs − load free slots of a target node (`None` when it is no target); the
/// ranks leaving cores its `cpus=` list leaves out do not count as load.
fn free_slots(node: &NodeState, placement: &Placement, node_tree: &Tree) -> Option<TargetSlots> {
    if node.max_procs <= node.staying() {
        return None;
    }
    let need = node.max_procs - node.staying();
    let offered: Vec<usize> = match &node.cpus {
        Some(cpus) => cpus.clone(),
        None => (0..node.cores.min(node_tree.leaf_count())).collect(),
    };
    if offered.is_empty() {
        return None;
    }
    let mut residents = vec![0usize; node_tree.leaf_count()];
    for (rank, l) in placement.locations().iter().enumerate() {
        if l.node == node.name && !node.withdrawn.contains(&rank) {
            residents[l.core] += 1;
        }
    }
    // Round r offers each core once more; a core with k residents is free from round k.
    let mut chosen: Vec<(usize, usize)> = Vec::with_capacity(need);
    let mut round = 0;
    while chosen.len() < need {
        for &core in &offered {
            if residents[core] <= round && chosen.len() < need {
                chosen.push((core, round));
            }
        }
        round += 1;
    }
    let factor = round.max(1);
    let mut slots: Vec<usize> = chosen.iter().map(|&(c, r)| c * factor + r).collect();
    slots.sort_unstable();
    Some(TargetSlots {
        node: node.name.clone(),
        slots,
        factor,
    })
}

/// Beyond the paper: swap leavers between the free slots (or move one to an empty
/// slot) while the hop-bytes of the whole job, residents included, decrease.
fn refine_with_residents(
    graph: &SymGraph,
    trees: &NodeTrees<'_>,
    placement: &Placement,
    leavers: &[usize],
    slots: &[Location],
    landing: &mut [usize],
) {
    const PASSES: usize = 8;
    let mut names: Vec<String> = Vec::new();
    let mut intern = |l: &Location| -> Position {
        let node = match names.iter().position(|n| *n == l.node) {
            Some(i) => i,
            None => {
                names.push(l.node.clone());
                names.len() - 1
            }
        };
        (node as u32, l.core as u32)
    };
    let slot_pos: Vec<Position> = slots.iter().map(&mut intern).collect();
    let mut where_is: Vec<Position> = placement.locations().iter().map(&mut intern).collect();
    let hops = PositionHops::new(trees, &names);
    let mut occupant: Vec<Option<usize>> = vec![None; slots.len()];
    for (k, &slot) in landing.iter().enumerate() {
        occupant[slot] = Some(k);
        where_is[leavers[k]] = slot_pos[slot];
    }
    let cost_at = |rank: usize, at: Position, skip: usize, where_is: &[Position]| -> f64 {
        graph
            .neighbors(rank)
            .filter(|&(x, _)| x != skip)
            .map(|(x, w)| w * hops.between(at, where_is[x]))
            .sum()
    };
    let nearby = (leavers.len().saturating_mul(slots.len()) > EXHAUSTIVE_PAIRS)
        .then(|| SlotsNearby::new(trees, &names, &slot_pos));
    let mut candidates: Vec<usize> = Vec::new();
    for _ in 0..PASSES {
        let mut improved = false;
        for k in 0..leavers.len() {
            let u = leavers[k];
            let a = landing[k];
            let mut best: Option<(f64, usize)> = None;
            candidates.clear();
            match &nearby {
                None => candidates.extend(0..slots.len()),
                Some(nearby) => nearby.around(
                    graph.neighbors(u).map(|(x, _)| where_is[x]),
                    &mut candidates,
                ),
            }
            for &b in &candidates {
                if b == a || slot_pos[b] == slot_pos[a] {
                    continue;
                }
                let v = occupant[b].map(|j| leavers[j]);
                let skip = v.unwrap_or(usize::MAX);
                let mut delta = cost_at(u, slot_pos[b], skip, &where_is)
                    - cost_at(u, slot_pos[a], skip, &where_is);
                if let Some(v) = v {
                    delta += cost_at(v, slot_pos[a], u, &where_is)
                        - cost_at(v, slot_pos[b], u, &where_is);
                }
                if delta < -1e-9 && best.is_none_or(|(d, _)| delta < d) {
                    best = Some((delta, b));
                }
            }
            if let Some((_, b)) = best {
                if let Some(j) = occupant[b] {
                    landing[j] = a;
                    where_is[leavers[j]] = slot_pos[a];
                }
                occupant[a] = occupant[b];
                occupant[b] = Some(k);
                landing[k] = b;
                where_is[u] = slot_pos[b];
                improved = true;
            }
        }
        if !improved {
            break;
        }
    }
}

/// A location as (node number, core), for the refinement's inner loop.
type Position = (u32, u32);

/// Largest leavers × slots product for which the residents refinement tries every slot
/// for every leaver (4 million pairs: well under a second per pass). Beyond, a leaver
/// tries only the slots near its neighbours ([`SlotsNearby`]), so that planning on a
/// 16 384-core node stays linear in the cores instead of quadratic.
const EXHAUSTIVE_PAIRS: usize = 4_000_000;

/// The target slots grouped by the smallest subtree around their core (the core's
/// parent in its node tree: the cores of one L2, package, ...).
struct SlotsNearby {
    /// (node number, parent vertex) → slot indices.
    by_group: HashMap<Position, Vec<usize>>,
    /// Per node number: the parent vertex of each core.
    parent_of_core: Vec<Vec<u32>>,
}

impl SlotsNearby {
    fn new(trees: &NodeTrees<'_>, names: &[String], slot_pos: &[Position]) -> Self {
        let parent_of_core: Vec<Vec<u32>> = names
            .iter()
            .map(|name| {
                let tree = trees.of(name);
                let depth = tree.depth();
                (0..tree.leaf_count())
                    .map(|core| {
                        if depth == 0 {
                            0
                        } else {
                            tree.parent(depth, core) as u32
                        }
                    })
                    .collect()
            })
            .collect();
        let mut by_group: HashMap<Position, Vec<usize>> = HashMap::new();
        for (slot, &(node, core)) in slot_pos.iter().enumerate() {
            let group = parent_of_core[node as usize][core as usize];
            by_group.entry((node, group)).or_default().push(slot);
        }
        Self {
            by_group,
            parent_of_core,
        }
    }

    /// Appends to `out` the slots under the parents of the cores at `positions`, each
    /// once.
    fn around(&self, positions: impl Iterator<Item = Position>, out: &mut Vec<usize>) {
        let mut groups: Vec<Position> = positions
            .filter_map(|(node, core)| {
                let parent = self.parent_of_core.get(node as usize)?.get(core as usize)?;
                Some((node, *parent))
            })
            .collect();
        groups.sort_unstable();
        groups.dedup();
        for group in groups {
            if let Some(slots) = self.by_group.get(&group) {
                out.extend_from_slice(slots);
            }
        }
    }
}

/// Largest node tree whose core-to-core distances are precomputed (a table of
/// `cores²` values: 8 MiB at this size); larger nodes ask the tree each time, so
/// memory never grows with the square of a user-given core count.
const PRECOMPUTED_CORES_MAX: usize = 1024;

/// Tree edges between positions, with each node tree's core distances precomputed
/// for nodes of at most [`PRECOMPUTED_CORES_MAX`] cores (same rule as
/// [`super::cost::location_hops_on`]).
struct PositionHops<'t> {
    /// Per node number: its tree, and its core-to-core table (empty when too large).
    nodes: Vec<(&'t Tree, Vec<f64>)>,
    /// Per node number: tree depth (for the edges between two nodes).
    depths: Vec<usize>,
}

impl<'t> PositionHops<'t> {
    fn new(trees: &'t NodeTrees<'_>, names: &[String]) -> Self {
        let nodes: Vec<(&'t Tree, Vec<f64>)> = names
            .iter()
            .map(|name| {
                let tree = trees.of(name);
                let cores = tree.leaf_count();
                let table = if cores <= PRECOMPUTED_CORES_MAX {
                    (0..cores * cores)
                        .map(|k| tree.hops(k / cores, k % cores) as f64)
                        .collect()
                } else {
                    Vec::new()
                };
                (tree, table)
            })
            .collect();
        let depths = nodes.iter().map(|(t, _)| t.depth()).collect();
        Self { nodes, depths }
    }

    #[inline]
    fn between(&self, a: Position, b: Position) -> f64 {
        if a.0 != b.0 {
            (self.depths[a.0 as usize] + self.depths[b.0 as usize] + 2) as f64
        } else if a.1 == b.1 {
            0.0
        } else {
            let (tree, table) = &self.nodes[a.0 as usize];
            if table.is_empty() {
                tree.hops(a.1 as usize, b.1 as usize) as f64
            } else {
                table[a.1 as usize * tree.leaf_count() + b.1 as usize]
            }
        }
    }
}
