//! Ranks of several cores: the availability and the node trees counted in rank slots.
//!
//! The availability file counts cores. When every rank runs on `C` cores (a rank with
//! `C` threads), a node offering `N` cores holds ⌊N/C⌋ ranks, and a slot of its tree is
//! a group of `C` cores ([`Tree::grouped`]). [`RankSlots`] turns the availability and
//! the trees into those slots; the planner and the mapper then work on them unchanged,
//! and a [`super::Location`]'s `core` is a slot (group) index of its node.
//!
//! ```
//! use rankmig::availability::{Availability, AvailabilityFormat};
//! use rankmig::planner::RankSlots;
//! use rankmig::topology::Tree;
//! let av = Availability::parse("n1 3\nn2 2\nn3 1\n", "av", AvailabilityFormat::Auto).unwrap();
//! let node = Tree::from_arities(&[4]).unwrap();
//! let slots = RankSlots::new(2);
//! let in_ranks = slots.availability(&av, &|_| &node).unwrap();
//! assert_eq!(in_ranks.cores("n1"), 1); // ⌊3/2⌋
//! assert_eq!(in_ranks.cores("n2"), 1);
//! assert_eq!(in_ranks.cores("n3"), 0); // too small for a rank of 2 cores
//! assert_eq!(slots.too_small(&av), vec![("n3".to_owned(), 1)]);
//! ```

use crate::availability::{Availability, NodeOffer};
use crate::matrix::SymGraph;
use crate::topology::{TopologyError, Tree};

use super::{Placement, Plan, PlanError, PlanOptions};

/// How many cores each rank runs on, and the conversions that follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankSlots {
    cores_per_rank: usize,
}

impl Default for RankSlots {
    fn default() -> Self {
        Self::new(1)
    }
}

impl RankSlots {
    /// Ranks of `cores_per_rank` cores (0 is taken as 1).
    pub fn new(cores_per_rank: usize) -> Self {
        Self {
            cores_per_rank: cores_per_rank.max(1),
        }
    }

    /// Cores each rank runs on.
    pub fn cores_per_rank(self) -> usize {
        self.cores_per_rank
    }

    /// The tree of a node in rank slots: `tree` itself for ranks of one core, else its
    /// groups of `C` cores ([`Tree::grouped`]).
    pub fn tree(self, tree: &Tree) -> Result<Tree, TopologyError> {
        tree.grouped(self.cores_per_rank)
    }

    /// The availability in rank slots: each node offers ⌊cores/C⌋ ranks; a node with a
    /// `cpus=` list offers the groups of its tree (`tree_of(node)`, in cores) all of
    /// whose cores the list names, as slot indexes. Nodes left with no slot are dropped
    /// ([`RankSlots::too_small`] names them); [`PlanError::NoRoomForRank`] when none is
    /// left.
    pub fn availability<'t>(
        self,
        availability: &Availability,
        tree_of: &dyn Fn(&str) -> &'t Tree,
    ) -> Result<Availability, PlanError> {
        if self.cores_per_rank == 1 {
            return Ok(availability.clone());
        }
        let offers = availability
            .nodes()
            .iter()
            .map(|offer| self.offer(offer, tree_of(&offer.name)))
            .collect();
        Availability::from_offers(offers).map_err(|_| PlanError::NoRoomForRank {
            cores_per_rank: self.cores_per_rank,
            largest: availability
                .nodes()
                .iter()
                .map(|o| o.cores)
                .max()
                .unwrap_or(0),
        })
    }

    fn offer(self, offer: &NodeOffer, tree: &Tree) -> NodeOffer {
        let c = self.cores_per_rank;
        let (cores, cpus) = match &offer.cpus {
            None => (offer.cores / c, None),
            Some(listed) => {
                let slots: Vec<usize> = tree
                    .rank_groups(c)
                    .iter()
                    .enumerate()
                    .filter(|(_, group)| group.iter().all(|core| listed.contains(core)))
                    .map(|(slot, _)| slot)
                    .collect();
                (slots.len(), Some(slots))
            }
        };
        NodeOffer {
            name: offer.name.clone(),
            cores,
            cpus,
            line: offer.line,
        }
    }

    /// [`super::plan`] for ranks of this many cores: `availability` counts cores,
    /// `node_tree` is a node's tree in cores, `placement` and the plan's are in slots.
    ///
    /// ```
    /// use rankmig::availability::{Availability, AvailabilityFormat};
    /// use rankmig::matrix::CommMatrix;
    /// use rankmig::planner::{PlanOptions, Placement, RankSlots};
    /// use rankmig::topology::Tree;
    /// let node = Tree::from_arities(&[2, 2]).unwrap(); // 2 packages of 2 cores
    /// let now = Placement::parse("0 n1 0\n1 n1 1\n", "p").unwrap();
    /// let av = Availability::parse("n1 0\nn2 4\n", "av", AvailabilityFormat::Auto).unwrap();
    /// let m = CommMatrix::from_triples(2, [(0, 1, 9.0)]);
    /// let p = RankSlots::new(2).plan(&av, &now, &m.symmetric(), &node, &PlanOptions::default()).unwrap();
    /// assert!(p.moves.iter().all(|mv| mv.to.node == "n2"));
    /// assert_eq!(p.nodes["n2"].max_procs, 2); // 4 cores: 2 ranks of 2
    /// assert_eq!(p.nodes["n2"].cores, 4);
    /// ```
    pub fn plan(
        self,
        availability: &Availability,
        placement: &Placement,
        graph: &SymGraph,
        node_tree: &Tree,
        options: &PlanOptions,
    ) -> Result<Plan, PlanError> {
        let in_ranks = self.availability(availability, &|_| node_tree)?;
        let mut plan = super::plan(&in_ranks, placement, graph, &self.tree(node_tree)?, options)?;
        // The plan counts ranks; the nodes' cores are those of the file.
        for (name, load) in &mut plan.nodes {
            load.cores = availability.cores(name);
        }
        Ok(plan)
    }

    /// [`super::place`] for ranks of this many cores (see [`RankSlots::plan`]).
    pub fn place(
        self,
        availability: &Availability,
        graph: &SymGraph,
        node_tree: &Tree,
    ) -> Result<Placement, PlanError> {
        let in_ranks = self.availability(availability, &|_| node_tree)?;
        super::place(&in_ranks, graph, &self.tree(node_tree)?)
    }

    /// The nodes of `availability` that offer cores but fewer than one rank's, with
    /// their cores: no rank is placed there.
    pub fn too_small(self, availability: &Availability) -> Vec<(String, usize)> {
        availability
            .nodes()
            .iter()
            .filter(|o| o.cores < self.cores_per_rank)
            .map(|o| (o.name.clone(), o.cores))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::availability::AvailabilityFormat;

    #[test]
    fn a_cpus_list_offers_the_groups_it_names_whole() {
        // 2 packages of 4 cores, ranks of 2: groups {0,1} {2,3} {4,5} {6,7}.
        let node = Tree::from_arities(&[2, 4]).unwrap();
        let av = Availability::parse("n1 5 cpus=1-5\n", "av", AvailabilityFormat::Auto).unwrap();
        let slots = RankSlots::new(2).availability(&av, &|_| &node).unwrap();
        let offer = slots.node("n1").unwrap();
        assert_eq!(offer.cores, 2);
        assert_eq!(offer.cpus, Some(vec![1, 2]));
    }

    #[test]
    fn ranks_of_one_core_change_nothing_and_no_room_is_an_error() {
        let node = Tree::from_arities(&[4]).unwrap();
        let av = Availability::parse("n1 3\nn2 1\n", "av", AvailabilityFormat::Auto).unwrap();
        assert_eq!(RankSlots::new(1).availability(&av, &|_| &node).unwrap(), av);
        assert!(matches!(
            RankSlots::new(4).availability(&av, &|_| &node),
            Err(PlanError::NoRoomForRank {
                cores_per_rank: 4,
                largest: 3
            })
        ));
        assert_eq!(RankSlots::new(4).too_small(&av).len(), 2);
    }
}
