//! The contention watch at the job's checks ([`crate::contention`]): every rank's waits
//! for a CPU ride on the check's pacing exchange; rank 0 decides once per window, and a
//! move it decides rides on the availability broadcast. Plain functions over the
//! readers, the watch and the placement; the check (`reconfigure.rs`) calls them.

use crate::availability::{Availability, NodeOffer};
use crate::contention::{
    CheckSample, ContentionSettings, ContentionWatch, PressureReader, Verdict, WaitReader,
    WaitSample,
};
use crate::planner::Placement;

/// What rank 0's contention watch decided at a check ([`decide`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Decision {
    /// Nothing to do.
    Quiet,
    /// Move ranks off a node: the reason, announced with the availability broadcast.
    Move(String),
    /// A decision that moves nothing, to be recorded with this outcome and reason.
    Record {
        /// The outcome recorded.
        outcome: &'static str,
        /// Why.
        why: String,
    },
}

/// This rank's sample at a check: its waits for a CPU since the previous check (from
/// `waits`), and its node's CPU pressure where it `reads_pressure` ([`reads_node_pressure`])
/// and the kernel gives it. Text the parser rejects is warned once, naming the file and
/// line, and `pressure` is dropped: it is not read again.
pub(super) fn sample(
    waits: &mut WaitReader,
    pressure: &mut Option<PressureReader>,
    reads_pressure: bool,
) -> CheckSample {
    CheckSample {
        wait: waits.sample(),
        pressure: node_pressure(pressure, reads_pressure),
    }
}

/// The node's CPU stall since the previous check, read when `reads` (else the reader
/// forgets its last reading); see [`sample`].
fn node_pressure(pressure: &mut Option<PressureReader>, reads: bool) -> Option<WaitSample> {
    let reader = pressure.as_mut()?;
    if !reads {
        reader.forget();
        return None;
    }
    match reader.sample() {
        Ok(sample) => sample,
        Err(e) => {
            log::warn!("contention watch: {e}; the node's CPU pressure is not read any more");
            *pressure = None;
            None
        }
    }
}

/// True when `rank` is the lowest of its node in `placement` (rank 0 when there is
/// none, or the placement does not hold `rank`).
pub(super) fn reads_node_pressure(rank: usize, placement: Option<&Placement>) -> bool {
    match placement {
        Some(p) if rank < p.len() => {
            let node = &p.location(rank).node;
            !(0..rank).any(|r| &p.location(r).node == node)
        }
        _ => rank == 0,
    }
}

/// Rank 0, at a check `now` seconds into the run: the contention watch's decision if
/// its window is over, for the ranks of `placement` on the nodes of `view`. Caps whose
/// cool-down is over are lifted first; a machine busy everywhere is logged, a move, a
/// report or a contended node with no room elsewhere is warned. Room is counted in
/// ranks of `cores_per_rank` cores.
pub(super) fn decide(
    watch: &mut ContentionWatch,
    settings: &ContentionSettings,
    now: f64,
    (placement, view): (Option<&Placement>, Option<&Availability>),
    cores_per_rank: usize,
) -> Decision {
    for node in watch.lift_caps(now, settings) {
        log::info!("contention watch: {node}'s cool-down is over, it may be used again");
    }
    let (Some(placement), Some(view)) = (placement, view) else {
        return Decision::Quiet;
    };
    let rank_nodes: Vec<&str> = (0..placement.len())
        .map(|r| placement.location(r).node.as_str())
        .collect();
    match watch.decide(now, settings, &rank_nodes, &offers(view, cores_per_rank)) {
        Verdict::Quiet => Decision::Quiet,
        Verdict::AllContended { why } => {
            log::info!("{why}");
            Decision::Quiet
        }
        Verdict::Move { why, node } => {
            log::warn!("{why}: moving ranks off {node}");
            Decision::Move(why)
        }
        Verdict::Report { why } => {
            log::warn!("{why} (--contention-watch=report: nothing moves)");
            Decision::Record {
                outcome: "contention reported",
                why,
            }
        }
        Verdict::NoRoom { why } => {
            log::warn!("{why}");
            Decision::Record {
                outcome: "no room",
                why,
            }
        }
    }
}

/// What rank 0 plans for: `availability` with the nodes `watch` lowered given their
/// usable cores (a node left with none is left out); without lowered nodes,
/// `availability` itself.
pub(super) fn planning_availability(
    watch: &ContentionWatch,
    availability: &Availability,
    cores_per_rank: usize,
) -> Availability {
    if watch.caps().is_empty() {
        return availability.clone();
    }
    let c = cores_per_rank.max(1);
    let capped = watch.capped(&offers(availability, c));
    let nodes: Vec<NodeOffer> = (availability.nodes().iter())
        .zip(capped)
        // A cap counts ranks: back to cores; an uncapped node keeps its cores.
        .map(|(n, (_, ranks))| match ranks < n.cores / c {
            true => (n, ranks * c),
            false => (n, n.cores),
        })
        .map(|(n, cores)| NodeOffer {
            cores,
            cpus: n
                .cpus
                .as_ref()
                .map(|c| c.iter().copied().take(cores).collect()),
            ..n.clone()
        })
        .collect();
    Availability::from_offers(nodes).unwrap_or_else(|_| availability.clone())
}

/// Each node of `availability` with the ranks of `cores_per_rank` cores its cores hold
/// (its cores for ranks of one core): the watch counts room and usable cores in ranks.
fn offers(availability: &Availability, cores_per_rank: usize) -> Vec<(String, usize)> {
    (availability.nodes().iter())
        .map(|n| (n.name.clone(), n.cores / cores_per_rank.max(1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::reads_node_pressure;
    use crate::planner::{Location, Placement};

    fn placement(nodes: &[&str]) -> Placement {
        Placement::new(
            (nodes.iter().enumerate())
                .map(|(core, node)| Location {
                    node: (*node).to_owned(),
                    core,
                })
                .collect(),
        )
    }

    #[test]
    fn a_cap_counts_ranks_of_several_cores_and_gives_cores_back_to_the_planner() {
        use crate::availability::{Availability, AvailabilityFormat};
        use crate::contention::ContentionWatch;
        // n1 capped to 1 usable rank; ranks of 2 cores: the planner sees 2 of its 4 cores.
        let watch: ContentionWatch = serde_json::from_value(serde_json::json!({
            "pending": [], "window_start": 0.0,
            "caps": [{"node": "n1", "usable": 1, "since": 0.0}], "no_room": null,
        }))
        .unwrap();
        let av = Availability::parse("n1 4\nn2 3\n", "av", AvailabilityFormat::Native).unwrap();
        assert_eq!(
            super::offers(&av, 2),
            [("n1".to_owned(), 2), ("n2".to_owned(), 1)]
        );
        let planning = super::planning_availability(&watch, &av, 2);
        assert_eq!((planning.cores("n1"), planning.cores("n2")), (2, 3));
        // Ranks of one core: the cap is in cores.
        assert_eq!(super::planning_availability(&watch, &av, 1).cores("n1"), 1);
    }

    #[test]
    fn the_lowest_rank_of_each_node_reads_its_pressure() {
        let p = placement(&["n1", "n2", "n1", "n2", "n3"]);
        let readers: Vec<usize> = (0..5)
            .filter(|&r| reads_node_pressure(r, Some(&p)))
            .collect();
        assert_eq!(readers, [0, 1, 4]);
        assert!(reads_node_pressure(0, None));
        assert!(!reads_node_pressure(1, None));
        assert!(!reads_node_pressure(7, Some(&p)));
    }
}
