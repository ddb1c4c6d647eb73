//! The real CPUs of a rank slot: which CPUs of this machine a rank of `C` cores placed
//! on slot `s` of its node runs on.
//!
//! Two rules, as for ranks of one core:
//! - [`CoreSpread::Logical`]: the node is one of several logical nodes (or hosts
//!   emulated) on this machine. Slot `s` is logical cores `s·C .. s·C+C` of a flat node
//!   of `cores_per_node` cores, and logical core `k` of the node numbered `node_index`
//!   is real core `(node_index × cores_per_node + k) mod real cores`.
//! - [`CoreSpread::Host`]: the node is this host. Slot `s` is group `s` of this
//!   machine's tree cut into groups of `C` cores ([`Tree::rank_groups`]), as the
//!   planner cut it.
//!
//! ```
//! use rankmig::topology::{CoreSpread, Tree, slot_cpus};
//! let mut machine = Tree::from_arities(&[4]).unwrap().to_shape();
//! // Give the 4 cores OS numbers 0..4.
//! for (i, leaf) in machine.children.iter_mut().enumerate() {
//!     leaf.leaf.as_mut().unwrap().cpus = vec![i as u32];
//! }
//! let machine = Tree::from_shape(&machine).unwrap();
//! let logical = CoreSpread::Logical { node_index: 1, cores_per_node: 2 };
//! assert_eq!(slot_cpus(&machine, logical, 0, 2), Some(vec![2, 3]));
//! assert_eq!(slot_cpus(&machine, CoreSpread::Host, 1, 2), Some(vec![2, 3]));
//! assert_eq!(slot_cpus(&machine, CoreSpread::Host, 2, 2), None); // no third group
//! ```

use super::Tree;

/// How a job's nodes map onto this machine's cores (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreSpread {
    /// A logical node (or a host emulated on this machine): its place among the job's
    /// nodes and the logical cores each node has.
    Logical {
        /// The node's place in the availability the job follows.
        node_index: usize,
        /// Logical cores per node (the stride between two nodes' cores).
        cores_per_node: usize,
    },
    /// The node is this host: its own tree's groups.
    Host,
}

/// The OS numbers of the CPUs (hardware threads) slot `slot` of a node runs on, ranks
/// having `cores_per_rank` cores, on `machine` (this machine's tree, leaves = cores,
/// with their `cpus`). `None` when the slot has no cores of its own here (a slot past
/// the host's groups: an oversubscribed node) or the tree does not know its CPUs.
pub fn slot_cpus(
    machine: &Tree,
    spread: CoreSpread,
    slot: usize,
    cores_per_rank: usize,
) -> Option<Vec<u32>> {
    let c = cores_per_rank.max(1);
    let cores: Vec<usize> = match spread {
        CoreSpread::Logical {
            node_index,
            cores_per_node,
        } => {
            let real = machine.leaf_count().max(1);
            let first = node_index
                .checked_mul(cores_per_node)?
                .checked_add(slot.checked_mul(c)?)?;
            (first..first.checked_add(c)?).map(|k| k % real).collect()
        }
        CoreSpread::Host => machine.rank_groups(c).get(slot)?.clone(),
    };
    let mut cpus: Vec<u32> = Vec::new();
    for core in cores {
        let leaf = machine.leaves().get(core)?;
        if leaf.cpus.is_empty() {
            return None;
        }
        cpus.extend(&leaf.cpus);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}
