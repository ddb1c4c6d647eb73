//! The real tree of every host that runs ranks, for planning in multi-host mode.
//!
//! Each host's tree is its live hwloc tree, read by one process there (the lowest rank
//! on the host) and gathered at each reconfiguration; hosts that run no rank yet are
//! planned with the tree of rank 0's host. `--node-topology` replaces all of them.

use std::sync::OnceLock;

use mpi::traits::Communicator;

use crate::monitor::gather::all_gather_bytes;
use crate::planner::Placement;
use crate::topology::{CacheLevels, LeafKind, Shape, TopologySpec, Tree};

/// This process's host tree as sent to the others (JSON of its shape), read once:
/// a process never changes host (nor a job its `caches`).
fn own_tree_message(caches: CacheLevels) -> &'static [u8] {
    static MESSAGE: OnceLock<Vec<u8>> = OnceLock::new();
    MESSAGE.get_or_init(
        || match TopologySpec::Live.load_with(LeafKind::Core, caches) {
            Ok(tree) => serde_json::to_vec(&tree.to_shape()).unwrap_or_default(),
            Err(e) => {
                log::warn!("cannot read this host's hwloc tree: {e}");
                Vec::new()
            }
        },
    )
}

/// Collective over `comm`: the trees of the hosts of `placement` (where the ranks of
/// `comm` run now), as `(host, tree)`, one per host, in rank order of their first rank.
/// A host whose tree could not be read is left out. Each tree keeps the cache levels
/// `caches` says.
pub fn gather_host_trees<C: Communicator>(
    comm: &C,
    placement: &Placement,
    caches: CacheLevels,
) -> Vec<(String, Tree)> {
    let me = comm.rank() as usize;
    let my_host = placement.locations().get(me).map(|l| l.node.as_str());
    let first_on_host = placement
        .locations()
        .iter()
        .position(|l| Some(l.node.as_str()) == my_host)
        == Some(me);
    let mine: &[u8] = if first_on_host {
        own_tree_message(caches)
    } else {
        &[]
    };
    let all = all_gather_bytes(comm, mine);
    all.iter()
        .enumerate()
        .filter(|(_, bytes)| !bytes.is_empty())
        .filter_map(|(rank, bytes)| {
            let host = placement.locations().get(rank)?.node.clone();
            let shape: Shape = serde_json::from_slice(bytes).ok()?;
            Some((host, Tree::from_shape(&shape).ok()?))
        })
        .collect()
}
