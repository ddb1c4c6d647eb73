//! Choosing leaves by OS CPU numbers, the numbering of `taskset -c`, Slurm's
//! `--cpu-bind=map_cpu` and `Cpus_allowed_list` in `/proc/PID/status`.
//!
//! OS numbers need not follow the tree: on many two-socket machines CPUs 0, 2, 4, ...
//! are on the first socket and 1, 3, 5, ... on the second, so "CPUs 0-3" are two cores
//! of each socket, not the first four leaves.

use super::Tree;

/// Why a CPU list does not name a set of leaves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSelectionError {
    /// The tree was not read from hwloc, so its leaves have no OS CPU numbers.
    #[error("this tree has no OS CPU numbers (it was not read from hwloc)")]
    NoCpuNumbers,
    /// A listed CPU is on no leaf of the node.
    #[error("CPU {cpu} is not a CPU of this node (its CPUs are {known})")]
    UnknownCpu {
        /// The CPU asked for.
        cpu: usize,
        /// The node's CPUs, as a list such as `0-71`.
        known: String,
    },
    /// A listed CPU is one hardware thread of a leaf (a core) whose other threads are
    /// not listed: the leaf cannot be used without them.
    #[error(
        "CPU {cpu} is one of the hardware threads of {kind} L#{index} (CPUs {cpus}) and the \
         others are not listed: list them all, or make the leaves hardware threads (PU)"
    )]
    PartOfLeaf {
        /// The CPU asked for.
        cpu: usize,
        /// What the leaves are (`Core`).
        kind: String,
        /// hwloc logical index of the leaf inside its node.
        index: u32,
        /// All of the leaf's CPUs.
        cpus: String,
    },
}

/// The leaves (depth-first indexes over the whole tree) whose hardware threads are all
/// in `cpus`, given as OS numbers. The same numbers apply to every node of a cluster.
/// A listed CPU must exist, and a leaf with several threads (a core) must have all of
/// them listed or none.
///
/// ```
/// use rankmig::topology::{LeafKind, TopologySpec, leaves_on_cpus};
/// let node = TopologySpec::Synthetic("pack:2 core:2 pu:2".into()).load(LeafKind::Core).unwrap();
/// // Synthetic PUs are numbered in tree order: core 1 holds CPUs 2 and 3.
/// assert_eq!(leaves_on_cpus(&node, &[2, 3]).unwrap(), vec![1]);
/// assert!(leaves_on_cpus(&node, &[2]).is_err());
/// ```
pub fn leaves_on_cpus(tree: &Tree, cpus: &[usize]) -> Result<Vec<usize>, CpuSelectionError> {
    let leaves = tree.leaves();
    if leaves.iter().any(|l| l.cpus.is_empty()) {
        return Err(CpuSelectionError::NoCpuNumbers);
    }
    let highest = leaves
        .iter()
        .flat_map(|l| l.cpus.iter())
        .max()
        .map_or(0, |&c| c as usize);
    let mut listed = vec![false; highest + 1];
    let mut known = vec![false; highest + 1];
    for l in leaves {
        for &c in &l.cpus {
            known[c as usize] = true;
        }
    }
    for &cpu in cpus {
        if !known.get(cpu).copied().unwrap_or(false) {
            let all: Vec<u32> = (0..known.len())
                .filter(|&c| known[c])
                .map(|c| c as u32)
                .collect();
            return Err(CpuSelectionError::UnknownCpu {
                cpu,
                known: super::format_index_list(&all),
            });
        }
        listed[cpu] = true;
    }
    let kind = tree.level_names().last().cloned().unwrap_or_default();
    let mut chosen = Vec::new();
    for (index, leaf) in leaves.iter().enumerate() {
        let on = leaf.cpus.iter().filter(|&&c| listed[c as usize]).count();
        if on == leaf.cpus.len() {
            chosen.push(index);
        } else if let Some(&cpu) = leaf.cpus.iter().find(|&&c| listed[c as usize]) {
            return Err(CpuSelectionError::PartOfLeaf {
                cpu: cpu as usize,
                kind,
                index: leaf.logical_index,
                cpus: super::format_index_list(&leaf.cpus),
            });
        }
    }
    Ok(chosen)
}
