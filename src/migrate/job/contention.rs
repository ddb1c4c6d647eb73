//! The contention watch in the job ([`crate::contention`]): every rank's waits for a
//! CPU ride on the check's pacing exchange; rank 0 decides once per window, and a move
//! it decides rides on the availability broadcast.

use mpi::traits::Communicator;

use crate::availability::{Availability, NodeOffer};
use crate::contention::{CheckSample, Verdict, WaitSample};

use super::Job;
use super::outcome::Outcome;

impl Job {
    /// At a check: the pacing exchange, which also gathers every rank's waits (and each
    /// node's CPU pressure, read by its lowest rank) when the contention watch is on
    /// (one all-gather instead of the stride's broadcast). This rank's wait share, and
    /// the node's pressure share where it read it, go into its iteration record; rank 0
    /// adds every rank's samples to its window.
    pub(super) fn pace_and_gather_waits(&mut self) {
        let Some(reader) = self.waits.as_mut() else {
            self.pacer.after_check(&self.comm, self.calls);
            return;
        };
        let wait = reader.sample();
        let mine = CheckSample {
            wait,
            pressure: self.node_pressure(),
        };
        let all = self
            .pacer
            .after_check_gathering(&self.comm, self.calls, mine);
        self.iterations
            .note_wait_share(mine.wait.share(), mine.pressure.map(|p| p.share()));
        if self.comm.rank() == 0 {
            self.contention.add_checks(&all);
        }
    }

    /// The node's CPU stall since the previous check, where this rank is its node's
    /// lowest in the placement it knows (rank 0 without one) and the kernel gives it.
    /// Text the parser rejects is warned once, naming the file and line, and the
    /// pressure is not read again.
    fn node_pressure(&mut self) -> Option<WaitSample> {
        let reads = self.reads_node_pressure();
        let reader = self.pressure.as_mut()?;
        if !reads {
            reader.forget();
            return None;
        }
        match reader.sample() {
            Ok(sample) => sample,
            Err(e) => {
                log::warn!("contention watch: {e}; the node's CPU pressure is not read any more");
                self.pressure = None;
                None
            }
        }
    }

    /// True when this rank is the lowest of its node in its placement (rank 0 when it
    /// has none).
    fn reads_node_pressure(&self) -> bool {
        let rank = usize::try_from(self.comm.rank()).unwrap_or(0);
        match &self.placement {
            Some(p) if rank < p.len() => {
                let node = &p.location(rank).node;
                !(0..rank).any(|r| &p.location(r).node == node)
            }
            _ => rank == 0,
        }
    }

    /// Rank 0, at a check: the contention watch's decision if its window is over. A
    /// node to leave is returned (the reason), to be announced with the availability
    /// broadcast; a report, or a contended node with no room elsewhere, is recorded and
    /// warned here; a machine busy everywhere is logged. `None` on the other ranks.
    pub(super) fn contention_decision(&mut self) -> Option<String> {
        if !self.is_root() || self.waits.is_none() {
            return None;
        }
        let settings = self.settings.contention;
        let now = self.started.elapsed().as_secs_f64();
        for node in self.contention.lift_caps(now, &settings) {
            log::info!("contention watch: {node}'s cool-down is over, it may be used again");
        }
        let (Some(placement), Some(view)) = (&self.placement, &self.availability.view) else {
            return None;
        };
        let rank_nodes: Vec<&str> = (0..placement.len())
            .map(|r| placement.location(r).node.as_str())
            .collect();
        let offers: Vec<(String, usize)> = (view.nodes().iter())
            .map(|n| (n.name.clone(), n.cores))
            .collect();
        match self.contention.decide(now, &settings, &rank_nodes, &offers) {
            Verdict::Quiet => None,
            Verdict::AllContended { why } => {
                log::info!("{why}");
                None
            }
            Verdict::Move { why, node } => {
                log::warn!("{why}: moving ranks off {node}");
                Some(why)
            }
            Verdict::Report { why } => {
                log::warn!("{why} (--contention-watch=report: nothing moves)");
                self.record_contention("contention reported", why);
                None
            }
            Verdict::NoRoom { why } => {
                log::warn!("{why}");
                self.record_contention("no room", why);
                None
            }
        }
    }

    /// Rank 0 records a contention decision that moves nothing.
    fn record_contention(&mut self, outcome: &str, why: String) {
        self.changes += 1;
        let since = std::time::Instant::now();
        self.record(Outcome {
            change: why,
            detail: None,
            ..Outcome::refusal(outcome, String::new(), since)
        });
    }

    /// What rank 0 plans for: `availability` with the nodes the contention watch
    /// lowered given their usable cores (a node left with none is left out). Elsewhere,
    /// or without lowered nodes, `availability` itself.
    pub(super) fn planning_availability(&self, availability: &Availability) -> Availability {
        if !self.is_root() || self.contention.caps().is_empty() {
            return availability.clone();
        }
        let offers: Vec<(String, usize)> = (availability.nodes().iter())
            .map(|n| (n.name.clone(), n.cores))
            .collect();
        let capped = self.contention.capped(&offers);
        let nodes: Vec<NodeOffer> = (availability.nodes().iter())
            .zip(capped)
            .map(|(n, (_, cores))| NodeOffer {
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
}
