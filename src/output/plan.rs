//! Text renderings of plans, placements and simulations (their CSV is in
//! [`super::simulation_csv`]).

use std::fmt::Write as _;

use serde::Serialize;

use crate::matrix::format_volume;
use crate::planner::{Placement, Plan};
use crate::topology::Tree;

/// `RANK FROM_NODE FROM_CORE -> TO_NODE TO_CORE` per move, then `#` summary lines.
pub fn plan_text(plan: &Plan, seconds: f64) -> String {
    let mut out = String::new();
    for m in &plan.moves {
        let _ = writeln!(
            out,
            "{} {} {} -> {} {}",
            m.rank, m.from.node, m.from.core, m.to.node, m.to.core
        );
    }
    let _ = writeln!(out, "# moves: {}", plan.moves.len());
    let _ = writeln!(out, "# minimum moves: {}", plan.minimum_moves);
    let _ = writeln!(
        out,
        "# hop-bytes before: {}",
        format_volume(plan.hop_bytes_before)
    );
    let _ = writeln!(
        out,
        "# hop-bytes after: {}",
        format_volume(plan.hop_bytes_after)
    );
    let _ = writeln!(out, "# nodes: {}", node_summary(plan));
    let _ = writeln!(out, "# planning time: {:.3} ms", seconds * 1e3);
    out
}

/// `name:after/maxProcs(cores)` for every node.
pub fn node_summary(plan: &Plan) -> String {
    plan.nodes
        .iter()
        .map(|(name, l)| format!("{name}:{}/{}({}c)", l.after, l.max_procs, l.cores))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A placement as an Open MPI rankfile: `slot=` is the placement's core (the leaf
/// index in the node tree), right when the leaves are cores.
pub fn placement_rankfile(placement: &Placement) -> String {
    rankfile_lines(placement, |leaf| leaf.to_string())
}

/// A placement as an Open MPI rankfile whose `slot=` is the hwloc logical index of the
/// core of each rank's leaf of `node_tree`, as Open MPI 4.1 reads slots: with hardware
/// threads as leaves, the core that holds the thread. A leaf without a core (a tree not
/// read from hwloc) keeps its index. With ranks of `cores_per_rank` cores, a
/// placement's core is a group of that many cores of `node_tree`
/// ([`Tree::rank_groups`]) and `slot=` lists their cores (`slot=0-1`).
///
/// ```
/// use rankmig::output::plan::placement_rankfile_on;
/// use rankmig::planner::Placement;
/// use rankmig::topology::Tree;
/// let node = Tree::from_arities(&[2, 2]).unwrap();
/// let p = Placement::parse("0 n1 1\n", "p").unwrap();
/// assert_eq!(placement_rankfile_on(&p, &node, 1), "rank 0=n1 slot=1\n");
/// assert_eq!(placement_rankfile_on(&p, &node, 2), "rank 0=n1 slot=2-3\n");
/// ```
pub fn placement_rankfile_on(
    placement: &Placement,
    node_tree: &Tree,
    cores_per_rank: usize,
) -> String {
    let leaves = node_tree.leaves();
    let core_of = |leaf: usize| leaves.get(leaf).and_then(|l| l.core).unwrap_or(leaf as u32);
    let groups = node_tree.rank_groups(cores_per_rank);
    rankfile_lines(placement, |slot| match groups.get(slot) {
        Some(group) => {
            let mut cores: Vec<u32> = group.iter().map(|&leaf| core_of(leaf)).collect();
            cores.sort_unstable();
            cores.dedup();
            crate::topology::format_index_list(&cores)
        }
        None => slot.to_string(),
    })
}

fn rankfile_lines(placement: &Placement, slot: impl Fn(usize) -> String) -> String {
    let mut out = String::new();
    for (rank, l) in placement.locations().iter().enumerate() {
        let _ = writeln!(out, "rank {rank}={} slot={}", l.node, slot(l.core));
    }
    out
}

/// One step of `rankmig simulate`.
#[derive(Debug, Clone, Serialize)]
pub struct SimulationStep {
    /// The availability file of the step.
    pub availability: String,
    /// The plan of the step.
    pub plan: Plan,
    /// Planning time in seconds.
    pub seconds: f64,
}

/// Ranks beyond the cores of each node after the step (0 when none).
pub(super) fn oversubscription(plan: &Plan) -> usize {
    plan.nodes
        .values()
        .filter(|l| l.cores > 0)
        .map(|l| l.after.saturating_sub(l.cores))
        .sum()
}

/// A human-readable table, one block per step.
pub fn simulation_text(steps: &[SimulationStep]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<4} {:<28} {:>6} {:>8} {:>10} {:>18} {:>18} {:>10}",
        "step",
        "availability",
        "moves",
        "minimum",
        "oversub",
        "hop-bytes before",
        "hop-bytes after",
        "time (ms)"
    );
    for (i, s) in steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:<4} {:<28} {:>6} {:>8} {:>10} {:>18} {:>18} {:>10.3}",
            i,
            s.availability,
            s.plan.moves.len(),
            s.plan.minimum_moves,
            oversubscription(&s.plan),
            format_volume(s.plan.hop_bytes_before),
            format_volume(s.plan.hop_bytes_after),
            s.seconds * 1e3
        );
        let _ = writeln!(out, "     loads: {}", node_summary(&s.plan));
    }
    out
}
