//! The hand-over, rebuild and record of a migration, once its new processes are
//! reachable (spawned with the application held, `spawn.rs`, or joined after a
//! background spawn, `background.rs`): the [`Migration`] value every step takes;
//! the leaving ranks' state serialised; the assignment and state exchanged with the new
//! processes; the communicator rebuilt; the migration recorded; a migration refused or
//! abandoned before anyone moved; what a new process receives ([`Assignment`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mpi::topology::InterCommunicator;
use mpi::traits::Communicator;
use serde::{Deserialize, Serialize};

use crate::availability::Availability;
use crate::checkpoint::mpi_collective::DuplicateInProgress;
use crate::checkpoint::{CheckpointConfig, Handover, Interval};
use crate::monitor;
use crate::planner::{Location, Move, Placement, Plan};

use super::followed::ViewBefore;
use super::history::SpawnHistory;
use super::outcome::Outcome;
use super::{Job, MigrateError, leave_now};
use crate::migrate::protocol::{self, OldRankOutcome};
use crate::migrate::state_message::StateMessage;
use crate::run_dir::record::PhaseTimes;
use crate::run_dir::settings::JobSettings;

/// How long after a migration refused for want of its checkpoint the same edit is
/// tried again (a full disk is seldom freed at once; each try writes a checkpoint).
pub const RETRY_AFTER_FAILED_CHECKPOINT: Duration = Duration::from_secs(10);

/// Everything a new process needs from rank 0 to continue the replaced rank.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Assignment {
    pub(super) rank: usize,
    pub(super) location: Location,
    pub(super) handover: Handover,
    pub(super) checkpoint: CheckpointSettings,
    pub(super) settings: JobSettings,
    pub(super) calls: u64,
    pub(super) next_check: u64,
    /// The stride of the replaced rank's pacer.
    #[serde(default)]
    pub(super) check_stride: u64,
    pub(super) view: Option<Availability>,
    pub(super) view_hash: u64,
    pub(super) placement: Placement,
    pub(super) reconfigurations: u64,
    pub(super) changes: u64,
    pub(super) elapsed: f64,
    /// The generation of the new process.
    #[serde(default)]
    pub(super) generation: u32,
    /// Where each generation has run, this spawn included.
    #[serde(default)]
    pub(super) history: SpawnHistory,
    /// The communicator changes of the survivors once this migration is done.
    #[serde(default)]
    pub(super) comm_changes: u64,
    /// Rank 0's contention watch (its window and lowered nodes), for a new rank 0.
    #[serde(default)]
    pub(super) contention: crate::contention::ContentionWatch,
}

/// A migration decided at a reconfiguration point ([`Job::reconfiguration_point`]):
/// what each of its steps takes, from the spawn to the record, whichever way it is
/// carried out.
pub(super) struct Migration {
    /// The plan carried out (its moves not empty).
    pub(super) plan: Plan,
    /// The planning time, in seconds.
    pub(super) scheduling: f64,
    /// The change the plan answers, for the record.
    pub(super) change: String,
    /// What the job followed before, to go back to should the migration be refused.
    pub(super) before: ViewBefore,
}

impl Migration {
    /// The record of this migration, with `outcome`.
    pub(super) fn outcome<'a>(&'a self, outcome: &'a str) -> Outcome<'a> {
        Outcome::of_plan(outcome, &self.change, &self.plan, self.scheduling)
    }

    /// The moves in the order the new processes are started ([`spawn_order`]).
    pub(super) fn spawn_order(&self, allocation: &[String]) -> Vec<&Move> {
        spawn_order(&self.plan, allocation)
    }
}

/// What a migration measured before its held part ([`Job::complete_migration`]).
pub(super) struct Held {
    /// The phases measured so far.
    pub(super) phases: PhaseTimes,
    /// When the ranks were stopped for the migration.
    pub(super) since: Instant,
    /// For a spawn run in the background: the iteration the migration was planned at.
    pub(super) planned_iteration: Option<u64>,
}

/// The outcome recorded for a migration called off because a leaving rank's state
/// could not be serialised.
pub(super) const UNSERIALISED_OUTCOME: &str = "state not serialised";

/// The outcome recorded for a migration whose spawn (or replacement launch) failed.
pub(super) const SPAWN_FAILED_OUTCOME: &str = "spawn failed";

/// A leaving rank whose state could not be serialised for a migration, as every rank
/// learns it: the lowest such rank (its own log says why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the state of rank {rank} (leaving) could not be serialised, see that rank's error")]
pub(super) struct UnserialisedState {
    rank: usize,
}

impl UnserialisedState {
    /// What rank `rank` contributes to the all-reduce of state sizes when it failed:
    /// above any real size, higher for lower ranks.
    fn marker(rank: usize) -> u64 {
        u64::MAX - rank as u64
    }

    /// The failed rank the all-reduced `largest` names, if it is a marker of one of
    /// `ranks` ranks.
    fn from_marker(largest: u64, ranks: usize) -> Option<Self> {
        let below_max = u64::MAX - largest;
        (below_max < ranks as u64).then_some(Self {
            rank: below_max as usize,
        })
    }
}

/// A leaving rank's state message ([`Job::serialise_leaving_state`]), and the largest
/// over the job for the record.
pub(super) struct LeavingState<'a> {
    /// This rank's message; `None` on a rank that stays.
    message: Option<StateMessage<'a>>,
    /// The largest message of the leaving ranks, in bytes.
    largest: usize,
}

/// The parts of a [`CheckpointConfig`] a new process needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct CheckpointSettings {
    dir: PathBuf,
    every_calls: Option<u64>,
    every_nanos: Option<u64>,
    /// [`CheckpointConfig::first`], in nanoseconds.
    #[serde(default)]
    first_nanos: Option<u64>,
    keep: usize,
    job: String,
    /// [`CheckpointConfig::local`].
    #[serde(default)]
    local: Option<PathBuf>,
    /// [`CheckpointConfig::flush_every`].
    #[serde(default)]
    flush_every: Option<u64>,
}

impl CheckpointSettings {
    pub(super) fn of(c: &CheckpointConfig) -> Self {
        let (every_calls, every_nanos) = match c.interval {
            Interval::Calls(n) => (Some(n), None),
            Interval::Time(d) => (None, Some(d.as_nanos().min(u128::from(u64::MAX)) as u64)),
        };
        Self {
            dir: c.dir.clone(),
            every_calls,
            every_nanos,
            first_nanos: c
                .first
                .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64),
            keep: c.keep,
            job: c.job.clone(),
            local: c.local.clone(),
            flush_every: Some(c.flush_every),
        }
    }

    pub(super) fn config(&self) -> CheckpointConfig {
        let mut config = CheckpointConfig::new(&self.dir)
            .keep(self.keep)
            .job(&self.job);
        config.first = self.first_nanos.map(Duration::from_nanos);
        config.local = self.local.clone();
        if let Some(k) = self.flush_every {
            config.flush_every = k;
        }
        match (self.every_calls, self.every_nanos) {
            (Some(n), _) => config.every(n),
            (None, Some(ns)) => config.every_duration(Duration::from_nanos(ns)),
            (None, None) => config,
        }
    }
}

impl Job {
    /// Each leaving rank's state message, made at the checkpoint call that holds the
    /// ranks for a migration, before the exchange; the ranks that stay wait for the
    /// largest message's size (the record's) without spinning, so that the leaving
    /// ranks serialise with the CPUs to themselves. A leaving rank that cannot
    /// serialise its state still takes part: every rank then returns the same
    /// [`UnserialisedState`], and the caller calls the migration off. Collective.
    pub(super) fn serialise_leaving_state<'a, T: Serialize>(
        &mut self,
        state: &'a T,
        plan: &Plan,
    ) -> Result<LeavingState<'a>, UnserialisedState> {
        let rank = self.comm.rank() as usize;
        let leaving = plan.moves.iter().any(|m| m.rank == rank);
        let mut message = None;
        let mut length = 0u64;
        if leaving {
            // The replaced rank's counters and the lengths of its output files (flushed
            // to the disk and closed here, before the replacement can open them), then
            // its state: one pass, one copy (none of a C program's largest region, sent
            // from its memory). Into the checkpoint buffer, whose memory a save has
            // mapped already.
            let row = monitor::snapshot().map(|(total, _)| total);
            let buffer = self.ckpt.take_buffer();
            let serialised = match self.outputs.hand_over() {
                // SAFETY: the largest region was placed by the C interface, whose
                // regions stay valid and unchanged while the program is inside
                // rankmig_checkpoint, which this migration is part of.
                Ok(record) => unsafe {
                    StateMessage::serialise(buffer, &(row, record), state, self.largest_region)
                },
                Err(e) => Err(Box::new(bincode::ErrorKind::Custom(e.to_string()))),
            };
            match serialised {
                Ok(m) => {
                    crate::migrate::timeline::step("old: state serialised");
                    length = m.len() as u64;
                    message = Some(m);
                }
                Err(e) => {
                    log::error!(
                        "rank {rank}: its state could not be serialised for the migration: {e}"
                    );
                    length = UnserialisedState::marker(rank);
                }
            }
        }
        // Every rank learns the largest size, or the lowest rank that failed.
        let largest = protocol::largest_without_spinning(&self.comm, length);
        if let Some(failed) = UnserialisedState::from_marker(largest, self.comm.size() as usize) {
            return Err(failed);
        }
        crate::migrate::timeline::step("old: every leaving state serialised");
        Ok(LeavingState {
            message,
            largest: largest as usize,
        })
    }

    /// A migration abandoned before anyone moved (`outcome`, e.g. a spawn that failed
    /// or a leaving state that could not be serialised, said by `detail`): rank 0 warns,
    /// and the record says so; every rank stays where it is. Collective.
    pub(super) fn record_abandoned(
        &mut self,
        outcome: &str,
        detail: String,
        migration: &Migration,
    ) {
        if self.is_root() {
            log::warn!("migration abandoned, every rank stays: {detail}");
        }
        self.record(Outcome {
            detail: Some(detail),
            ..migration.outcome(outcome)
        });
    }

    /// The held part of every migration, once the new processes are reachable through
    /// `inter` (old ranks local) and the leaving ranks' state is serialised
    /// ([`Job::serialise_leaving_state`]): hand each its rank's state, rebuild the
    /// communicator, record, and leave or go on. Collective.
    pub(super) fn complete_migration(
        &mut self,
        leaving: LeavingState<'_>,
        migration: &Migration,
        inter: InterCommunicator,
        so_far: Held,
    ) -> Result<(), MigrateError> {
        let Held {
            mut phases,
            since: held,
            planned_iteration,
        } = so_far;
        let plan = &migration.plan;
        let spawned_before = phases.spawn;
        let moves = migration.spawn_order(&self.settings.hosts);
        let leavers: Vec<usize> = moves.iter().map(|m| m.rank).collect();
        let history = (self.lineage).history_after(plan.moves.iter().map(|m| m.to.node.as_str()));
        let assignments = if self.is_root() {
            self.assignments(&moves, plan, &history)?
        } else {
            Vec::new()
        };
        let LeavingState {
            message,
            largest: largest_state,
        } = leaving;
        let exchange_start = Instant::now();
        let outcome = protocol::old_ranks_exchange(
            &self.comm,
            inter,
            &leavers,
            &assignments,
            message.as_ref(),
            &mut phases,
            exchange_start,
        );
        crate::migrate::timeline::step("old: exchange done");
        phases.spawn += spawned_before;
        phases.pause = held.elapsed().as_secs_f64();
        self.iterations.charge(0.0, phases.pause);
        // The old rank 0 measured every phase: it records, whether it stays or leaves.
        self.reconfigurations += 1;
        self.placement = Some(plan.placement.clone());
        self.lineage.spawned(history);
        // The placement first, whole (written beside, then renamed): a reader that sees
        // the record finds the placement it names.
        if self.is_root() {
            if let Some(dir) = &self.settings.run_dir {
                let path = dir.join(format!("placement-{}.txt", self.reconfigurations));
                let partial = path.with_extension("partial");
                let written = std::fs::write(&partial, plan.placement.to_text())
                    .and_then(|()| std::fs::rename(&partial, &path));
                if let Err(e) = written {
                    log::warn!("cannot write {}: {e}", path.display());
                }
            }
        }
        self.record(Outcome {
            phases,
            state_bytes: largest_state,
            planned_iteration,
            ..migration.outcome("migrated")
        });
        match outcome {
            OldRankOutcome::Leave => {
                self.flush_records();
                self.matrix_file.finish();
                self.note_process("left");
                leave_now(self.launcher().departure())
            }
            OldRankOutcome::Stay(comm) => {
                self.comm = comm;
                self.comm_generation.replaced();
                // Made while the application goes on (the arrivals make theirs once
                // they have their state); completed at the checkpoint's next collective.
                let duplicate = DuplicateInProgress::start(&self.comm);
                self.ckpt
                    .collective_mut()
                    .set_duplicate_in_progress(duplicate);
                monitor::set_job_communicator(&self.comm, None);
                monitor::mark_reconfiguration();
                // By the new availability, as the arrivals bind.
                self.bind();
                crate::migrate::timeline::step("old: back to the application");
                Ok(())
            }
        }
    }

    /// The checkpoint a migration starts from could not be written (`e`, e.g. a full
    /// disk): no process moves, the job goes back to the view it followed, and the same
    /// edit is tried again after [`RETRY_AFTER_FAILED_CHECKPOINT`]. Every rank calls it.
    pub(super) fn refuse_without_checkpoint(&mut self, e: &MigrateError, migration: Migration) {
        let message = format!(
            "the checkpoint a migration starts from could not be written ({e}): no rank moves, the job keeps its placement and tries again in {} s",
            RETRY_AFTER_FAILED_CHECKPOINT.as_secs()
        );
        if self.is_root() {
            log::warn!("{message}");
        }
        self.record(Outcome {
            detail: Some(message),
            ..migration.outcome("checkpoint failed")
        });
        (self.availability).go_back(migration.before, RETRY_AFTER_FAILED_CHECKPOINT);
    }

    /// Rank 0: the messages for the new processes, in the order of the leavers.
    pub(super) fn assignments(
        &self,
        moves: &[&Move],
        plan: &Plan,
        history: &SpawnHistory,
    ) -> Result<Vec<Vec<u8>>, MigrateError> {
        moves
            .iter()
            .map(|m| {
                let a = Assignment {
                    rank: m.rank,
                    location: m.to.clone(),
                    handover: self.ckpt.handover(),
                    checkpoint: CheckpointSettings::of(self.ckpt.config()),
                    settings: self.settings.clone(),
                    calls: self.calls,
                    next_check: self.pacer.next_check(),
                    check_stride: self.pacer.stride(),
                    view: self.availability.view.clone(),
                    view_hash: self.availability.last_hash(),
                    placement: plan.placement.clone(),
                    reconfigurations: self.reconfigurations + 1,
                    changes: self.changes,
                    elapsed: self.started.elapsed().as_secs_f64(),
                    generation: self.lineage.generations,
                    history: history.clone(),
                    comm_changes: self.comm_generation.count() + 1,
                    contention: self.contention.clone(),
                };
                Ok(serde_json::to_vec(&a)?)
            })
            .collect()
    }
}

/// The moves in the order the new processes are started: grouped by target host, the
/// hosts of the allocation (`allocation`, empty on logical nodes) in its order, then
/// the others in order of first appearance; ranks ascending inside a host. New process
/// `j` replaces the rank of the `j`-th move. (Inside a Slurm job hydra starts its
/// proxies with `srun` in the allocation's order whatever the hostfile's: a launch in
/// that order puts each process on its planned host.)
fn spawn_order<'p>(plan: &'p Plan, allocation: &[String]) -> Vec<&'p Move> {
    let mut hosts: Vec<&str> = allocation.iter().map(String::as_str).collect();
    for m in &plan.moves {
        if !hosts.contains(&m.to.node.as_str()) {
            hosts.push(&m.to.node);
        }
    }
    let mut moves: Vec<&Move> = plan.moves.iter().collect();
    moves.sort_by_key(|m| (hosts.iter().position(|h| *h == m.to.node), m.rank));
    moves
}

#[cfg(test)]
mod tests {
    use super::UnserialisedState;

    #[test]
    fn a_failed_ranks_marker_wins_the_maximum_and_names_the_lowest_failed_rank() {
        let sizes = [8 << 20, 0, 256 << 20, 0];
        let with_failures = [
            sizes[0],
            UnserialisedState::marker(3),
            sizes[2],
            UnserialisedState::marker(1),
        ];
        let largest = with_failures.into_iter().max().unwrap_or_default();
        assert_eq!(
            UnserialisedState::from_marker(largest, 4),
            Some(UnserialisedState { rank: 1 })
        );
        let largest = sizes.into_iter().max().unwrap_or_default();
        assert_eq!(UnserialisedState::from_marker(largest, 4), None);
        assert_eq!(UnserialisedState::from_marker(0, 4), None);
    }
}
