//! The placements a mapping is compared with: packed, round-robin over nodes, random.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

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
    let mut nodes: Vec<u32> = all.iter().map(|&l| tree.leaves()[l].node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut per_node: Vec<std::collections::VecDeque<usize>> = nodes
        .iter()
        .map(|&n| {
            all.iter()
                .copied()
                .filter(|&l| tree.leaves()[l].node == n)
                .collect()
        })
        .collect();
    let mut out = Vec::with_capacity(ranks);
    let mut next = 0usize;
    while out.len() < ranks && per_node.iter().any(|q| !q.is_empty()) {
        let k = next % per_node.len();
        next += 1;
        if let Some(l) = per_node[k].pop_front() {
            out.push(l);
        }
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
    }
}
