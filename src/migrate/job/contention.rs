//! The contention watch at the job's checks ([`crate::contention`]): every rank's waits
//! for a CPU ride on the check's pacing exchange; rank 0 decides once per window, and a
//! move it decides rides on the availability broadcast. Plain functions over the
//! readers, the watch and the placement; the check (`reconfigure.rs`) calls them.

use crate::availability::{Availability, NodeOffer};
use crate::contention::cpu_busy::CpuBusyReader;
use crate::contention::{
    Cap, CheckSample, ContentionWatch, PressureReader, Verdict, WaitReader, WaitSample,
};
use crate::planner::Placement;
use crate::run_dir::settings::JobSettings;

use super::binding::{machine_core_of, one_machine};

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
/// `waits`), its node's CPU pressure where it `reads_pressure` ([`reads_node_pressure`])
/// and the kernel gives it, how busy the CPUs `busy` reads were, and its own CPU. Text
/// a parser rejects is warned once, naming the file and line, and that reader is
/// dropped: it is not read again.
pub(super) fn sample(
    waits: &mut WaitReader,
    pressure: &mut Option<PressureReader>,
    reads_pressure: bool,
    busy: &mut Option<CpuBusyReader>,
) -> CheckSample {
    CheckSample {
        wait: waits.sample(),
        pressure: node_pressure(pressure, reads_pressure),
        busy: cpus_busy(busy),
        cpu: own_cpu(),
    }
}

/// How busy the CPUs `reader` reads were since the previous check; see [`sample`].
fn cpus_busy(reader: &mut Option<CpuBusyReader>) -> Option<WaitSample> {
    match reader.as_mut()?.sample() {
        Ok(sample) => sample,
        Err(e) => {
            log::warn!("contention watch: {e}; the CPUs it took ranks off are not read any more");
            *reader = None;
            None
        }
    }
}

/// The first CPU (OS index) this process may run on, when it may run on fewer than
/// all of the machine's CPUs (a bound rank).
fn own_cpu() -> Option<usize> {
    // SAFETY: sched_getaffinity(2) fills the zeroed set it is given, of the size given.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        (libc::sched_getaffinity(0, size, &mut set) == 0).then_some(set)
    }?;
    // SAFETY: CPU_ISSET reads a bit of the set, below CPU_SETSIZE.
    let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    // The CPUs online, not available_parallelism (which counts the affinity mask).
    // SAFETY: sysconf(3) reads a value.
    let online = usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).ok()?;
    (allowed.len() < online)
        .then(|| allowed.first().copied())
        .flatten()
}

/// At a check, after rank 0's broadcast of who reads which CPUs (`readers`): this
/// rank (`rank`) reads its CPUs from now on, starting anew when they changed, or
/// stops reading.
pub(super) fn follow_readers(
    busy: &mut Option<CpuBusyReader>,
    readers: &[(usize, Vec<usize>)],
    rank: usize,
) {
    let mine = readers.iter().find(|r| r.0 == rank).map(|r| &r.1);
    match (mine, busy.as_ref()) {
        (None, _) => *busy = None,
        (Some(cpus), Some(reader)) if reader.cpus() == cpus.as_slice() => {}
        (Some(cpus), _) => *busy = Some(CpuBusyReader::new(cpus.clone())),
    }
}

/// Rank 0, at a check: which rank reads which CPUs for the watch's caps
/// ([`ContentionWatch::busy_readers`]), for the ranks of `placement`.
pub(super) fn busy_readers(
    watch: &mut ContentionWatch,
    settings: &JobSettings,
    placement: Option<&Placement>,
) -> Vec<(usize, Vec<usize>)> {
    let Some(placement) = placement else {
        return Vec::new();
    };
    let nodes: Vec<&str> = (placement.locations().iter())
        .map(|l| l.node.as_str())
        .collect();
    watch.busy_readers(&nodes, one_machine(settings))
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
/// cool-down is over and whose cores measured quiet are lifted first; a machine busy
/// everywhere is logged, a move, a report or a contended node with no room elsewhere is
/// warned. Room is counted in ranks of the job's cores per rank. A move leaves out of
/// the offer the cores the ranks that waited are on ([`withdraw_cores`]).
pub(super) fn decide(
    watch: &mut ContentionWatch,
    job: &JobSettings,
    now: f64,
    (placement, view): (Option<&Placement>, Option<&Availability>),
) -> Decision {
    let (settings, cores_per_rank) = (&job.contention, job.cores_per_rank);
    for node in watch.lift_caps(now, settings) {
        log::info!(
            "contention watch: {node}'s cool-down is over and the cores it left measured quiet: it may be used again"
        );
    }
    let (Some(placement), Some(view)) = (placement, view) else {
        return Decision::Quiet;
    };
    let rank_nodes: Vec<&str> = (0..placement.len())
        .map(|r| placement.location(r).node.as_str())
        .collect();
    watch.set_one_machine(one_machine(job));
    match watch.decide(now, settings, &rank_nodes, &offers(view, cores_per_rank)) {
        Verdict::Quiet => Decision::Quiet,
        Verdict::AllContended { why } => {
            log::info!("{why}");
            Decision::Quiet
        }
        Verdict::Move { why, node, ranks } => {
            let left_out = withdraw_cores(watch, job, now, (Some(placement), Some(view)), &ranks);
            let why = match left_out {
                Some(cores) => format!("{why}; left out until quiet: {cores}"),
                None => why,
            };
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

/// Rank 0, after the watch decided to move `ranks` (all on one node) off their cores:
/// the caps leave those cores out of their node's offer, and read their CPUs until they
/// are quiet. Where every node is this one machine (logical nodes, emulated hosts), the
/// cores of every node that are the same real core as one of theirs are left out too
/// (their node capped alike), while the other nodes still hold the job; a rank moved
/// there would wait as much. Ranks of several cores keep the count alone. Returns the
/// cores left out, for the reason of the move (`n1 cores 1, 3; n2 core 1`).
fn withdraw_cores(
    watch: &mut ContentionWatch,
    job: &JobSettings,
    now: f64,
    (placement, view): (Option<&Placement>, Option<&Availability>),
    ranks: &[usize],
) -> Option<String> {
    let (Some(placement), Some(view), Some(&first)) = (placement, view, ranks.first()) else {
        return None;
    };
    let node = placement.location(first).node.clone();
    let mut cpus: Vec<usize> = ranks.iter().filter_map(|&r| watch.cpu_of(r)).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let usable =
        |w: &ContentionWatch, n: &str| (w.caps().iter().find(|c| c.node == n)).map(|c| c.usable);
    if job.cores_per_rank > 1 {
        let kept = usable(watch, &node).unwrap_or(0);
        watch.set_cap(Cap::new(&node, kept, now, Vec::new(), cpus));
        return None;
    }
    let cores: Vec<usize> = ranks.iter().map(|&r| placement.location(r).core).collect();
    let machine: Vec<usize> = (ranks.iter())
        .filter_map(|&r| machine_core_of(job, view, placement.location(r), placement.len()))
        .collect();
    let mut caps = vec![(node.clone(), cores)];
    if !machine.is_empty() {
        caps = (view.nodes().iter())
            .map(|n| {
                let same_core = |&core: &usize| {
                    let at = crate::planner::Location {
                        node: n.name.clone(),
                        core,
                    };
                    machine_core_of(job, view, &at, placement.len())
                        .is_some_and(|m| machine.contains(&m))
                };
                (
                    n.name.clone(),
                    offered_cores(n).into_iter().filter(same_core).collect(),
                )
            })
            .filter(|(_, cores): &(String, Vec<usize>)| !cores.is_empty())
            .collect();
    }
    let room = |caps: &[(String, Vec<usize>)]| -> usize {
        (view.nodes().iter())
            .map(|n| match caps.iter().find(|c| c.0 == n.name) {
                Some((_, left_out)) => n.cores.saturating_sub(left_out.len()),
                None => n.cores,
            })
            .sum()
    };
    if room(&caps) < placement.len() {
        // The other nodes cannot hold the job without those cores: the node's own.
        caps.retain(|c| c.0 == node);
    }
    let mut said = Vec::new();
    for (name, mut left_out) in caps {
        // A node capped already keeps the cores it left out then.
        let mut watched = cpus.clone();
        if let Some(earlier) = watch.caps().iter().find(|c| c.node == name) {
            left_out.extend(&earlier.cores);
            watched.extend(&earlier.cpus);
        }
        for list in [&mut left_out, &mut watched] {
            list.sort_unstable();
            list.dedup();
        }
        let count = view.cores(&name).saturating_sub(left_out.len());
        let list: Vec<String> = left_out.iter().map(usize::to_string).collect();
        let plural = if list.len() == 1 { "" } else { "s" };
        said.push(format!("{name} core{plural} {}", list.join(", ")));
        watch.set_cap(Cap::new(&name, count, now, left_out, watched));
    }
    Some(said.join("; "))
}

/// The cores a node offers: its `cpus=` list, else its first `cores`.
fn offered_cores(offer: &NodeOffer) -> Vec<usize> {
    offer
        .cpus
        .clone()
        .unwrap_or_else(|| (0..offer.cores).collect())
}

/// What rank 0 plans for: `availability` with the nodes `watch` lowered given their
/// usable cores (a node left with none is left out); the cores a cap names are left out
/// of its node's offer (`cpus=`), so that the ranks on them leave. Without lowered
/// nodes, `availability` itself.
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
        .map(|(n, (_, ranks))| {
            let cap = watch.caps().iter().find(|cap| cap.node == n.name);
            match cap.filter(|cap| !cap.cores.is_empty()) {
                Some(cap) => {
                    let left: Vec<usize> = (offered_cores(n).into_iter())
                        .filter(|core| !cap.cores.contains(core))
                        .collect();
                    NodeOffer {
                        cores: left.len(),
                        cpus: Some(left),
                        ..n.clone()
                    }
                }
                None => {
                    // A cap counts ranks: back to cores; an uncapped node keeps its cores.
                    let cores = if ranks < n.cores / c {
                        ranks * c
                    } else {
                        n.cores
                    };
                    NodeOffer {
                        cores,
                        cpus: n
                            .cpus
                            .as_ref()
                            .map(|c| c.iter().copied().take(cores).collect()),
                        ..n.clone()
                    }
                }
            }
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
    fn the_cores_a_cap_names_are_left_out_of_its_nodes_offer() {
        use crate::availability::{Availability, AvailabilityFormat};
        use crate::contention::{Cap, ContentionWatch};
        let mut watch = ContentionWatch::default();
        watch.set_cap(Cap::new("n1", 3, 0.0, vec![1], vec![1]));
        let av =
            Availability::parse("n1 4\nn2 4 cpus=4-7\n", "av", AvailabilityFormat::Native).unwrap();
        let planning = super::planning_availability(&watch, &av, 1);
        let n1 = planning.node("n1").expect("n1 kept");
        assert_eq!((n1.cores, n1.cpus.clone()), (3, Some(vec![0, 2, 3])));
        assert_eq!(planning.node("n2"), av.node("n2"), "n2 as offered");
        // A cap on a cpus= list leaves out of that list.
        watch.set_cap(Cap::new("n2", 3, 0.0, vec![5], vec![5]));
        let planning = super::planning_availability(&watch, &av, 1);
        assert_eq!(
            planning.node("n2").and_then(|n| n.cpus.clone()),
            Some(vec![4, 6, 7])
        );
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
