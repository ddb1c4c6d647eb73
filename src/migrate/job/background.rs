//! The join of a migration whose spawn ran in the background (`spawn.rs` starts it):
//! the pending migration and rank 0's helper thread, joined once the spawn is
//! complete.
//!
//! Once the spawn is complete ([`Job::advance_background_spawn`]), the ranks are held
//! only to serialise the leaving ranks' state, join the new processes, hand the state
//! over and rebuild the communicator ([`Job::join_background_migration`], then
//! `migration.rs`). A leaving rank serialises its state into its checkpoint buffer
//! (mapped already) first, while the new processes sleep and the ranks that stay wait
//! for it without spinning, so that on an oversubscribed node the leaving ranks have
//! the CPUs. Edits of the availability file made meanwhile are acted on after the
//! migration, against the placement it makes. A spawn still running when the
//! application ends is called off ([`Job::call_off_background_migration`]).

use std::thread::JoinHandle;
use std::time::Instant;

use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Root};
use serde::Serialize;

use super::migration::{Held, Migration, SPAWN_FAILED_OUTCOME, UNSERIALISED_OUTCOME};
use super::outcome::Outcome;
use super::{Job, MigrateError};
use crate::migrate::protocol::{self, Bridge};
use crate::run_dir::record::PhaseTimes;

/// A migration whose replacement processes are being started in the background.
pub(super) struct PendingMigration {
    /// The migration whose spawn runs.
    pub(super) migration: Migration,
    /// When the migration was started (planned).
    pub(super) started: Instant,
    /// The iteration the migration was planned at.
    pub(super) planned_iteration: u64,
    /// Old rank 0: the helper thread that spawns and makes the bridge.
    pub(super) helper: Option<JoinHandle<Result<Bridge, String>>>,
    /// The spawn has started (after the checkpoint for a relaunch was committed).
    pub(super) spawn_started: bool,
    /// The checkpoint for a relaunch has been saved (or none is needed).
    pub(super) saved: bool,
    /// Old rank 0: the size of each moving rank's state message, in spawn order, so
    /// that each new process can make a buffer ready for it while it waits.
    pub(super) state_sizes: Vec<u64>,
}

/// Whether a background spawn is complete, as old rank 0 tells the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpawnStatus {
    Done = 1,
    Failed = 2,
}

impl PendingMigration {
    /// True on old rank 0 while its helper thread runs.
    pub(super) fn spawning(&self) -> bool {
        self.helper.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Rank 0 joins the helper thread and tells every rank of `comm` whether the spawn
    /// worked: the bridge on rank 0 (`None` elsewhere), or the failure, on every rank
    /// (the message only on rank 0, which records it). Collective.
    fn joined_helper(&mut self, comm: &SimpleCommunicator) -> Result<Option<Bridge>, String> {
        let joined = self.helper.take().map(|h| {
            h.join().unwrap_or_else(|_| {
                Err("the spawning thread panicked (a bug: please report it)".into())
            })
        });
        let local = match &joined {
            Some(Err(_)) => SpawnStatus::Failed,
            _ => SpawnStatus::Done,
        };
        let mut status = local as u8;
        comm.process_at_rank(0).broadcast_into(&mut status);
        match (joined, status == SpawnStatus::Failed as u8) {
            (Some(Ok(bridge)), false) => Ok(Some(bridge)),
            (Some(Err(message)), _) => Err(message),
            (_, true) => Err(String::new()),
            (None, false) => Ok(None),
        }
    }

    /// The migration called off: rank 0 waits for its spawn, if started, and dismisses
    /// the new processes (they leave without joining). Collective over `comm`.
    pub(super) fn dismiss(&mut self, comm: &SimpleCommunicator) {
        if let Ok(Some(bridge)) = self.joined_helper(comm) {
            protocol::dismiss_background_spawn(bridge, self.migration.plan.moves.len());
        }
    }
}

impl Job {
    /// Once the background spawn is complete on every rank
    /// ([`Job::advance_background_spawn`]): every rank is held, the helper thread is
    /// joined, the leaving ranks serialise their state, the job joins the new processes
    /// and carries the migration out ([`Job::complete_migration`]); a failed spawn is
    /// recorded and nobody moves. Collective.
    pub(super) fn join_background_migration<T: Serialize>(
        &mut self,
        state: &T,
    ) -> Result<(), MigrateError> {
        let Some(mut pending) = self.pending.take() else {
            return Ok(());
        };
        self.pacer.relax();
        crate::migrate::timeline::step("old: held for the migration");
        let held = Instant::now();
        let background = pending.started.elapsed().as_secs_f64();
        let bridge = match pending.joined_helper(&self.comm) {
            Ok(bridge) => bridge,
            Err(message) => {
                self.record_abandoned(SPAWN_FAILED_OUTCOME, message, &pending.migration);
                return Ok(());
            }
        };
        // Serialised before the join, while the new processes sleep and the ranks that
        // stay wait without spinning.
        let migration = pending.migration;
        let leaving = match self.serialise_leaving_state(state, &migration.plan) {
            Ok(leaving) => leaving,
            Err(failed) => {
                if let Some(bridge) = bridge {
                    protocol::dismiss_background_spawn(bridge, migration.plan.moves.len());
                }
                self.record_abandoned(UNSERIALISED_OUTCOME, failed.to_string(), &migration);
                return Ok(());
            }
        };
        let inter =
            protocol::join_background_spawn(&self.comm, bridge, migration.plan.moves.len())?;
        crate::migrate::timeline::step("old: joined the new processes");
        let so_far = Held {
            phases: PhaseTimes {
                background,
                ..PhaseTimes::default()
            },
            since: held,
            planned_iteration: Some(pending.planned_iteration),
        };
        self.complete_migration(leaving, &migration, inter, so_far)
    }

    /// At the end of the run, with a spawn still in the background: rank 0 waits for
    /// it and dismisses the new processes (they leave without joining); the record
    /// says so. Collective.
    pub(super) fn call_off_background_migration(&mut self) {
        let Some(mut pending) = self.pending.take() else {
            return;
        };
        self.pacer.relax();
        // Recorded first: waiting for the spawn may take as long as the spawn.
        self.record(Outcome {
            detail: Some(
                "the application ended while the replacement processes started; they were dismissed"
                    .into(),
            ),
            ..pending.migration.outcome("called off")
        });
        pending.dismiss(&self.comm);
    }
}
