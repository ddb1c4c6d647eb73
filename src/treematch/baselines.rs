//! The placements a mapping is compared with: packed, round-robin over nodes, random.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use std::collections::BTreeMap;

use super::MapError;
use super::metrics::{LinkCosts, Metrics, evaluate};
use crate::matrix::SymGraph;
use crate::topology::Tree;

/// The slots (leaf per slot, leaf-major) that a job may use.
fn slots(tree: &Tree, allowed: Option<&[usize]>, factor: usize) -> Vec<usize> {
    let leaves: Vec<usize> = match allowed {
        Some(a) => {
            let mut v = a.to_vec();
            v.sort_unstable();
            v.dedup();
            v
        }
        None => (0..tree.leaf_count()).collect(),
    };
    leaves
        .iter()
        .flat_map(|&l| std::iter::repeat_n(l, factor.max(1)))
        .collect()
}

/// Rank i on the i-th usable slot (consecutive ranks share a leaf when oversubscribed).
pub fn packed(tree: &Tree, ranks: usize, allowed: Option<&[usize]>, factor: usize) -> Vec<usize> {
    slots(tree, allowed, factor)
        .into_iter()
        .take(ranks)
        .collect()
}

/// Rank i on node i mod K (next free slot of that node; full nodes are skipped).
pub fn round_robin(
    tree: &Tree,
    ranks: usize,
    allowed: Option<&[usize]>,
    factor: usize,
) -> Vec<usize> {
    let all = slots(tree, allowed, factor);
    // The slots of each node, nodes in increasing number, in one pass over the slots.
    let mut by_node: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for &l in &all {
        by_node.entry(tree.leaves()[l].node).or_default().push(l);
    }
    let queues: Vec<Vec<usize>> = by_node.into_values().collect();
    // Round r takes the r-th slot of every node that still has one, in node order.
    let mut active: Vec<usize> = (0..queues.len()).collect();
    let mut out = Vec::with_capacity(ranks.min(all.len()));
    let mut round = 0usize;
    while out.len() < ranks && !active.is_empty() {
        for &k in &active {
            if out.len() == ranks {
                break;
            }
            out.push(queues[k][round]);
        }
        round += 1;
        active.retain(|&k| queues[k].len() > round);
    }
    out
}

/// A uniformly random placement on the usable slots, reproducible from `seed`.
pub fn random(
    tree: &Tree,
    ranks: usize,
    allowed: Option<&[usize]>,
    factor: usize,
    seed: u64,
) -> Vec<usize> {
    let mut all = slots(tree, allowed, factor);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    all.shuffle(&mut rng);
    all.truncate(ranks);
    all
}

/// The costs of the three baselines for `graph` (its order is the rank count) on `tree`,
/// keyed `packed`, `round-robin` and `random` (from `seed`), on the `allowed` leaves
/// (every leaf when `None`). They share a leaf only as the mapping does: when there
/// are too few leaves, at most `oversubscribe` ranks each.
pub fn evaluated(
    graph: &SymGraph,
    tree: &Tree,
    allowed: Option<&[usize]>,
    oversubscribe: usize,
    seed: u64,
    costs: &LinkCosts,
) -> Result<BTreeMap<String, Metrics>, MapError> {
    let n = graph.order();
    let usable = match allowed {
        Some(list) => list.iter().collect::<std::collections::BTreeSet<_>>().len(),
        None => tree.leaf_count(),
    };
    let factor = super::effective_oversubscription(n, usable, oversubscribe);
    let candidates = [
        ("packed", packed(tree, n, allowed, factor)),
        ("round-robin", round_robin(tree, n, allowed, factor)),
        ("random", random(tree, n, allowed, factor, seed)),
    ];
    let mut evaluated = BTreeMap::new();
    for (name, placement) in candidates {
        evaluated.insert(name.to_owned(), evaluate(graph, tree, &placement, costs)?);
    }
    Ok(evaluated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_fill_as_documented() {
        let node = Tree::from_arities(&[2, 2]).unwrap();
        let tree = Tree::cluster(&node, 2).unwrap();
        assert_eq!(packed(&tree, 3, None, 1), vec![0, 1, 2]);
        assert_eq!(round_robin(&tree, 4, None, 1), vec![0, 4, 1, 5]);
        let r = random(&tree, 8, None, 1, 7);
        let mut sorted = r.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        assert_eq!(r, random(&tree, 8, None, 1, 7));
        assert_eq!(packed(&tree, 3, Some(&[5, 1]), 2), vec![1, 1, 5]);
        // Uneven nodes: the full node is skipped, the others keep their turns.
        assert_eq!(
            round_robin(&tree, 6, Some(&[0, 4, 5, 6, 7]), 1),
            vec![0, 4, 5, 6, 7]
        );
        assert_eq!(round_robin(&tree, 3, Some(&[0, 1, 4]), 2), vec![0, 4, 0]);
    }

    #[test]
    fn round_robin_is_linear_in_the_slots() {
        // 200 000 one-leaf nodes: a scan of every node per slot would take minutes.
        let tree = Tree::cluster(&Tree::from_arities(&[1]).unwrap(), 200_000).unwrap();
        // (the time is in benches/large_inputs, not asserted here)
        let r = round_robin(&tree, 200_000, None, 1);
        assert_eq!(r.len(), 200_000);
        assert_eq!(r[199_999], 199_999);
    }

    #[test]
    fn evaluated_baselines_differ_as_their_placements_do() {
        let node = Tree::from_arities(&[2, 2]).unwrap();
        let tree = Tree::cluster(&node, 2).unwrap();
        // Ranks 0 and 1 talk: packed keeps them on one node, round-robin does not.
        let graph = crate::matrix::CommMatrix::parse_dense("0 10\n10 0\n", "test")
            .unwrap()
            .symmetric();
        let costs = LinkCosts::default_for(tree.depth());
        let all = evaluated(&graph, &tree, None, 1, 7, &costs).unwrap();
        let names: Vec<_> = all.keys().map(String::as_str).collect();
        assert_eq!(names, ["packed", "random", "round-robin"]);
        assert_eq!(all["packed"].inter_node, 0.0);
        assert!(all["round-robin"].inter_node > 0.0);
    }
}
