//! Partner copies: which rank on another host keeps a copy of each rank's node-local
//! checkpoint file, chosen from where the ranks run now.
//!
//! Every rank names its host by a number ([`host_id_of`], from the host name), the ranks
//! gather those numbers at each save, and every rank computes the same [`PartnerMap`].
//! The ranks are ordered host by host; the partner of the rank at position `i` is the
//! one at `i + m` (mod the rank count), `m` being the most ranks any host holds, so that
//! with hosts of equal size each rank's partner is the rank at the same place on the
//! next host (SCR's and FTI's partner rule). Where that lands on the rank's own host
//! (hosts of unequal size), the rank takes the first rank of the next host that has one.

use std::collections::BTreeMap;

use super::collective::Collective;

/// A number naming the host called `name` (a hash of the name), never 0 (0 means "no
/// value" in a gather through [`Collective::all_max`]). Emulated hosts (UTS namespaces)
/// have their own names, hence their own numbers.
///
/// ```
/// use rankmig::checkpoint::partner::host_id_of;
/// assert_eq!(host_id_of("n1"), host_id_of("n1"));
/// assert_ne!(host_id_of("n1"), host_id_of("n2"));
/// assert_ne!(host_id_of(""), 0);
/// ```
pub fn host_id_of(name: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(name.as_bytes()).max(1)
}

/// Gathers every rank's value: element `r` of the result is rank `r`'s `mine`.
/// Collective (one [`Collective::all_max`] of one number per rank); values must not be 0.
pub fn gather<C: Collective + ?Sized>(coll: &C, mine: u64) -> Vec<u64> {
    let mut all = vec![0u64; coll.size() as usize];
    if let Some(slot) = all.get_mut(coll.rank() as usize) {
        *slot = mine;
    }
    coll.all_max(&mut all);
    all
}

/// Who keeps whose copy, for ranks on the hosts given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartnerMap {
    /// `partner[r]`: the rank that keeps rank `r`'s copy; `None` when every rank is on
    /// one host.
    partner: Vec<Option<u32>>,
    /// `hosts[r]`: rank `r`'s host number.
    hosts: Vec<u64>,
}

impl PartnerMap {
    /// The partners of ranks whose hosts are `hosts` (`hosts[r]` for rank `r`).
    ///
    /// ```
    /// use rankmig::checkpoint::partner::PartnerMap;
    /// // Ranks 0, 1 on host 7; ranks 2, 3 on host 9.
    /// let map = PartnerMap::new(&[7, 7, 9, 9]);
    /// assert_eq!(map.partner_of(0), Some(2));
    /// assert_eq!(map.partner_of(3), Some(1));
    /// assert_eq!(map.keeps_copies_of(2), vec![0]);
    /// // One host: nobody can keep a copy elsewhere.
    /// assert_eq!(PartnerMap::new(&[7, 7]).partner_of(0), None);
    /// ```
    pub fn new(hosts: &[u64]) -> Self {
        let mut by_host: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for (rank, &host) in hosts.iter().enumerate() {
            by_host.entry(host).or_default().push(rank as u32);
        }
        let mut partner = vec![None; hosts.len()];
        if by_host.len() > 1 {
            let order: Vec<u32> = by_host.values().flatten().copied().collect();
            let most = by_host.values().map(Vec::len).max().unwrap_or(1);
            let firsts: Vec<(u64, u32)> = by_host.iter().map(|(&h, r)| (h, r[0])).collect();
            for (i, &rank) in order.iter().enumerate() {
                let mine = hosts[rank as usize];
                let shifted = order[(i + most) % order.len()];
                let chosen = if hosts[shifted as usize] != mine {
                    shifted
                } else {
                    first_rank_of_next_host(&firsts, mine)
                };
                partner[rank as usize] = Some(chosen);
            }
        }
        Self {
            partner,
            hosts: hosts.to_vec(),
        }
    }

    /// The rank that keeps rank `rank`'s copy.
    pub fn partner_of(&self, rank: u32) -> Option<u32> {
        self.partner.get(rank as usize).copied().flatten()
    }

    /// The ranks whose copies rank `rank` keeps, ascending.
    pub fn keeps_copies_of(&self, rank: u32) -> Vec<u32> {
        (0..self.partner.len() as u32)
            .filter(|&r| self.partner_of(r) == Some(rank))
            .collect()
    }

    /// Whether rank `rank` is the lowest rank of its host (it commits and prunes the
    /// host's node-local epochs).
    pub fn leads_its_host(&self, rank: u32) -> bool {
        let Some(&mine) = self.hosts.get(rank as usize) else {
            return false;
        };
        self.hosts.iter().position(|&h| h == mine) == Some(rank as usize)
    }

    /// Number of distinct hosts.
    pub fn host_count(&self) -> usize {
        let mut hosts = self.hosts.clone();
        hosts.sort_unstable();
        hosts.dedup();
        hosts.len()
    }
}

/// The first rank of the host after `host` in `firsts` (host number, its first rank),
/// wrapping around.
fn first_rank_of_next_host(firsts: &[(u64, u32)], host: u64) -> u32 {
    let at = firsts.iter().position(|&(h, _)| h == host).unwrap_or(0);
    firsts[(at + 1) % firsts.len()].1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_other_host(hosts: &[u64]) -> PartnerMap {
        let map = PartnerMap::new(hosts);
        for r in 0..hosts.len() as u32 {
            let p = map.partner_of(r).expect("a partner with two hosts or more");
            assert_ne!(hosts[p as usize], hosts[r as usize], "rank {r} -> {p}");
        }
        map
    }

    #[test]
    fn equal_hosts_pair_ranks_at_the_same_place_on_the_next_host() {
        let map = check_other_host(&[1, 1, 2, 2, 3, 3, 4, 4]);
        assert_eq!(map.partner_of(0), Some(2));
        assert_eq!(map.partner_of(7), Some(1));
        for r in 0..8 {
            assert_eq!(map.keeps_copies_of(r).len(), 1, "one copy kept per rank");
        }
    }

    #[test]
    fn unequal_hosts_still_give_every_rank_a_partner_elsewhere() {
        let map = check_other_host(&[5, 5, 5, 9]);
        assert_eq!(map.partner_of(3), Some(2));
        assert_eq!(map.partner_of(1), Some(3));
        check_other_host(&[1, 2, 2, 2, 2, 3]);
        check_other_host(&[8, 1, 8, 1, 8]);
        assert!(map.leads_its_host(0) && !map.leads_its_host(1) && map.leads_its_host(3));
        assert_eq!(map.host_count(), 2);
    }

    #[test]
    fn one_host_has_no_partner() {
        let map = PartnerMap::new(&[4, 4, 4]);
        assert!((0..3).all(|r| map.partner_of(r).is_none()));
        assert!(map.keeps_copies_of(0).is_empty());
    }
}
