//! Oversubscription never stacks ranks while a leaf is free: after mapping, every free
//! usable leaf takes one rank from a leaf holding two or more, the nearest in leaf
//! order (leaves are numbered depth-first, so index neighbours share the deepest
//! subtrees).

use std::collections::BTreeMap;

/// Moves ranks from shared leaves to free ones until no leaf is free while another
/// holds two ranks or more. `leaf_of_rank[r]` is in `0..leaves`.
pub(super) fn fill_free_leaves(leaf_of_rank: &mut [usize], leaves: usize) {
    let mut on_leaf: Vec<Vec<usize>> = vec![Vec::new(); leaves];
    for (rank, &leaf) in leaf_of_rank.iter().enumerate() {
        on_leaf[leaf].push(rank);
    }
    // Shared leaves, by index, with how many ranks they can give.
    let mut donors: BTreeMap<usize, usize> = on_leaf
        .iter()
        .enumerate()
        .filter(|(_, ranks)| ranks.len() > 1)
        .map(|(leaf, ranks)| (leaf, ranks.len() - 1))
        .collect();
    for free in 0..leaves {
        if !on_leaf[free].is_empty() {
            continue;
        }
        let below = donors.range(..free).next_back().map(|(&l, _)| l);
        let above = donors.range(free..).next().map(|(&l, _)| l);
        let donor = match (below, above) {
            (Some(b), Some(a)) => {
                if free - b <= a - free {
                    b
                } else {
                    a
                }
            }
            (Some(b), None) => b,
            (None, Some(a)) => a,
            (None, None) => break,
        };
        let Some(rank) = on_leaf[donor].pop() else {
            break;
        };
        leaf_of_rank[rank] = free;
        on_leaf[free].push(rank);
        if let Some(left) = donors.get_mut(&donor) {
            *left -= 1;
            if *left == 0 {
                donors.remove(&donor);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_leaves_are_filled_from_the_nearest_shared_one() {
        let mut m = vec![0, 0, 0, 0, 5, 5];
        fill_free_leaves(&mut m, 6);
        let mut count = [0; 6];
        for &l in &m {
            count[l] += 1;
        }
        assert_eq!(count, [1, 1, 1, 1, 1, 1], "{m:?}");
        // More ranks than leaves: every leaf used, none with more than needed.
        let mut m = vec![3; 9];
        fill_free_leaves(&mut m, 4);
        let mut count = [0; 4];
        for &l in &m {
            count[l] += 1;
        }
        assert!(count.iter().all(|&c| c >= 1), "{count:?}");
        assert_eq!(count.iter().sum::<usize>(), 9);
    }
}
