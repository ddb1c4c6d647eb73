//! What happened at a reconfiguration point, as rank 0 records it in the run
//! directory.

use std::time::Instant;

use crate::planner::Plan;

use crate::run_dir::record::{MovedRank, PhaseTimes, Reconfiguration};

/// Where the job stands when rank 0 records an [`Outcome`].
pub(super) struct RecordedAt {
    /// The reconfiguration point's index (the changes seen so far).
    pub(super) index: u64,
    /// The `checkpoint!` call the job is at.
    pub(super) iteration: u64,
    /// Seconds since the job started.
    pub(super) at_seconds: f64,
    /// The nodes of the availability the job follows.
    pub(super) nodes: usize,
    /// Bytes of the live matrix the plan was made from, if it was.
    pub(super) live_bytes: Option<f64>,
}

impl Outcome<'_> {
    /// The record of this outcome, made `at`.
    pub(super) fn reconfiguration(self, at: RecordedAt) -> Reconfiguration {
        let o = self;
        Reconfiguration {
            index: at.index,
            iteration: at.iteration,
            planned_iteration: o.planned_iteration,
            at_seconds: at.at_seconds,
            change: o.change,
            nodes: at.nodes,
            outcome: o.outcome.to_owned(),
            detail: o.detail,
            moves: o.plan.map_or(0, |p| p.moves.len()),
            minimum_moves: o.plan.map_or(0, |p| p.minimum_moves),
            hop_bytes_before: o.plan.map_or(0.0, |p| p.hop_bytes_before),
            hop_bytes_after: o.plan.map_or(0.0, |p| p.hop_bytes_after),
            live_bytes: o.plan.and(at.live_bytes),
            scheduling: o.scheduling,
            phases: o.phases,
            state_bytes: o.state_bytes,
            moved: match o.plan {
                Some(p) if o.outcome == "migrated" => (p.moves.iter())
                    .map(|m| MovedRank {
                        rank: m.rank,
                        from: m.from.node.clone(),
                        to: m.to.node.clone(),
                    })
                    .collect(),
                _ => Vec::new(),
            },
        }
    }
}

/// What happened at one reconfiguration point, for the record.
pub(super) struct Outcome<'a> {
    pub(super) outcome: &'a str,
    pub(super) detail: Option<String>,
    pub(super) change: String,
    pub(super) plan: Option<&'a Plan>,
    pub(super) scheduling: f64,
    pub(super) phases: PhaseTimes,
    pub(super) state_bytes: usize,
    /// The iteration a migration carried out later was planned at.
    pub(super) planned_iteration: Option<u64>,
}

impl<'a> Outcome<'a> {
    /// An edit or a plan refused: the job keeps its placement.
    pub(super) fn refusal(outcome: &'a str, message: String, since: Instant) -> Self {
        Self {
            outcome,
            change: message.clone(),
            detail: Some(message),
            plan: None,
            scheduling: since.elapsed().as_secs_f64(),
            phases: PhaseTimes::default(),
            state_bytes: 0,
            planned_iteration: None,
        }
    }

    /// A plan was made for `change`.
    pub(super) fn of_plan(outcome: &'a str, change: &str, plan: &'a Plan, scheduling: f64) -> Self {
        Self {
            outcome,
            detail: None,
            change: change.to_owned(),
            plan: Some(plan),
            scheduling,
            phases: PhaseTimes::default(),
            state_bytes: 0,
            planned_iteration: None,
        }
    }
}
