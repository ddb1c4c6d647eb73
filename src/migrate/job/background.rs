//! Migrations whose spawn runs in the background.
//!
//! With `MPI_THREAD_MULTIPLE`, a plan's replacement processes are started by a helper
//! thread of rank 0 from a private duplicate of `MPI_COMM_SELF` while every rank goes on
//! computing ([`Job::start_background_migration`]); the helper merges with the new
//! processes into a bridge, and the new processes wait for old rank 0's word without
//! taking a CPU. When `rankmig run` watches spawns, the checkpoint to launch the job
//! again from (should the spawn never complete) is saved first, at the first check
//! where every rank's buffer for it has been made ready on a thread of its own (so the
//! copy runs at memory speed, not at the speed of fresh memory's page faults), written
//! by the checkpoint writer while the ranks compute, and the spawn starts once every
//! rank has written it and it is committed: a fault during the spawn loses nothing
//! before that checkpoint, and no rank waits for the write.
//!
//! The helper tells each new process the size of the state it will receive; each
//! makes a buffer that size ready and answers, and only then is the spawn complete.
//!
//! Checks come about every [`PENDING_CHECK_INTERVAL`] meanwhile; each asks whether
//! the checkpoint, then the spawn, is complete ([`Job::advance_background_migration`]).
//! Once the spawn is, the ranks are held only to serialise the leaving ranks' state,
//! join the new processes, hand the state over and rebuild the communicator. A leaving
//! rank serialises its state into its checkpoint buffer (mapped already) first, while
//! the new processes sleep and the ranks that stay wait for it without spinning, so
//! that on an oversubscribed node the leaving ranks have the CPUs. Edits of the
//! availability file made meanwhile are acted on after the migration, against the
//! placement it makes.
//!
//! Where the launcher can start replacements with a launch of their own
//! ([`crate::launcher::Capabilities::launch_replacements`]) and `rankmig run` is there
//! to do it, the helper does not spawn: it asks `rankmig run` for that launch and
//! accepts the replacements once they wait in `MPI_Comm_connect`
//! ([`crate::run_dir::launch_request`]), because such an MPI's spawn holds the
//! application's MPI calls until its children have started (which MPI: the launcher's
//! file and docs/mpi-implementations.md).

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpi::topology::InterCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use serde::Serialize;

use super::migration::{
    Held, Migration, SPAWN_FAILED_OUTCOME, UNSERIALISED_OUTCOME, spawn_program,
};
use super::outcome::Outcome;
use super::{Job, MigrateError};
use crate::migrate::protocol::{self, Bridge};
use crate::migrate::state_buffer::StateBuffer;
use crate::run_dir::launch_request::{self, LaunchRequest};
use crate::run_dir::record::PhaseTimes;
use crate::run_dir::settings::ENV_BLOCKING_SPAWN;

/// Time between two availability checks while a spawn runs in the background, so that
/// the ranks join the new processes soon after they are ready.
pub const PENDING_CHECK_INTERVAL: Duration = Duration::from_millis(20);

/// What old rank 0's helper thread runs to start the replacements and make the bridge.
type BackgroundStart = Box<dyn FnOnce() -> Result<Bridge, MigrateError> + Send>;

/// A migration whose replacement processes are being started in the background.
pub(super) struct PendingMigration {
    /// The migration whose spawn runs.
    migration: Migration,
    started: Instant,
    planned_iteration: u64,
    /// Old rank 0: the helper thread that spawns and makes the bridge.
    helper: Option<JoinHandle<Result<Bridge, String>>>,
    /// The spawn has started (after the checkpoint for a relaunch was committed).
    spawn_started: bool,
    /// The checkpoint for a relaunch has been saved (or none is needed).
    saved: bool,
    /// Old rank 0: the size of each moving rank's state message, in spawn order, so
    /// that each new process can make a buffer ready for it while it waits.
    state_sizes: Vec<u64>,
}

/// Whether a background spawn is complete, as old rank 0 tells the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpawnStatus {
    Done = 1,
    Failed = 2,
}

impl Job {
    /// Why this job's spawns hold the application, if they do: MPI without
    /// `MPI_THREAD_MULTIPLE`, an implementation not tried that way, or
    /// `RANKMIG_BLOCKING_SPAWN=1`.
    pub(super) fn blocking_spawn_reason(&self) -> Option<String> {
        if self.settings.blocking_spawn {
            return Some(format!("{ENV_BLOCKING_SPAWN}=1"));
        }
        let launcher = self.launcher();
        if !launcher.capabilities().background_spawn {
            return Some(format!(
                "{} spawns with the application held",
                launcher.implementation().title()
            ));
        }
        let level = mpi::environment::threading_support();
        if level != mpi::Threading::Multiple {
            return Some(format!(
                "MPI was initialised with {level:?}, not MPI_THREAD_MULTIPLE (MPI_Init_thread)"
            ));
        }
        None
    }

    /// Starts a migration in the background: when `rankmig run` watches spawns, first
    /// the checkpoint a relaunch would start from (written by the checkpoint writer),
    /// then, once every rank has written it and it is committed, the plan's spawn on a
    /// helper thread of rank 0 ([`Job::advance_background_migration`]); every rank
    /// returns to the application at once. Collective.
    pub(super) fn start_background_migration<T: Serialize>(
        &mut self,
        state: &T,
        migration: Migration,
    ) -> Result<(), MigrateError> {
        let started = Instant::now();
        let watched = self.settings.spawns_watched();
        // One pass over the state gives its size, for both buffers below.
        let state_bytes = bincode::serialized_size(state).unwrap_or(0);
        if watched {
            // Saved at the first check where every rank's buffer is ready: copying
            // into fresh memory would hold this iteration for its page faults.
            self.ckpt.warm_buffer(state_bytes);
        }
        let state_sizes = self.state_sizes_in_spawn_order(state_bytes, &migration);
        let scheduling = migration.scheduling;
        self.pacer.hurry(self.calls, PENDING_CHECK_INTERVAL);
        self.pending = Some(PendingMigration {
            migration,
            started,
            planned_iteration: self.calls,
            helper: None,
            spawn_started: false,
            saved: !watched,
            state_sizes,
        });
        if !watched {
            self.start_background_spawn()?;
        }
        self.iterations
            .charge(scheduling, started.elapsed().as_secs_f64());
        Ok(())
    }

    /// Rank 0 starts the pending migration's spawn on a helper thread (the spawn marker
    /// left for `rankmig run` while the spawn call runs). Every rank notes that it has
    /// started.
    fn start_background_spawn(&mut self) -> Result<(), MigrateError> {
        let Some(pending) = self.pending.as_ref() else {
            return Ok(());
        };
        let helper = if self.is_root() {
            let moves = pending.migration.spawn_order(&self.settings.hosts);
            let state_sizes = pending.state_sizes.clone();
            self.mark_spawn_begun(moves.len());
            let start = self.background_start(&moves, state_sizes)?;
            Some(
                std::thread::Builder::new()
                    .name("rankmig-spawn".into())
                    .spawn(move || {
                        let _not_counted = crate::monitor::Paused::new();
                        crate::migrate::timeline::step("rank 0: background spawn begins");
                        start().map_err(|e| e.to_string())
                    })?,
            )
        } else {
            None
        };
        if let Some(pending) = self.pending.as_mut() {
            pending.helper = helper;
            pending.spawn_started = true;
        }
        Ok(())
    }

    /// Rank 0: what its helper thread does to start the replacements of `moves` and
    /// make the [`Bridge`] with them: ask `rankmig run` to launch them
    /// ([`launch_bridge`]) where it offers to, else spawn them. `state_sizes`: the
    /// size of each one's state, in spawn order.
    fn background_start(
        &self,
        moves: &[&crate::planner::Move],
        state_sizes: Vec<u64>,
    ) -> Result<BackgroundStart, MigrateError> {
        let program = spawn_program(&self.settings)?;
        let args: Vec<String> = std::env::args().skip(1).collect();
        let marker = self.spawn_marker_dir().map(Path::to_path_buf);
        let started = move || {
            crate::migrate::timeline::step("rank 0: spawn returned");
            if let Some(dir) = marker {
                crate::run_dir::spawn_watch::end(&dir);
            }
        };
        let Some(run_dir) = self.replacement_launch_dir() else {
            let groups = self.spawn_request(moves);
            return Ok(Box::new(move || {
                protocol::spawn_bridge(&program, &args, &groups, &state_sizes, started)
            }));
        };
        let hosts: Vec<String> = if self.settings.multi_host() {
            moves.iter().map(|m| m.to.node.clone()).collect()
        } else {
            Vec::new()
        };
        let command: Vec<String> = std::iter::once(program).chain(args).collect();
        let (migration, count) = (self.reconfigurations + 1, moves.len());
        let port_info = self.launcher().open_port_info();
        Ok(Box::new(move || {
            let request = |port| {
                LaunchRequest::new(migration, port, hosts, count, command)
                    .with_state_sizes(state_sizes)
            };
            launch_bridge(&run_dir, &port_info, request, started)
        }))
    }

    /// The run directory through which `rankmig run` starts this job's replacements
    /// ([`crate::run_dir::launch_request`]), when it does.
    fn replacement_launch_dir(&self) -> Option<PathBuf> {
        let offered = self.settings.launches_replacements
            && self.launcher().capabilities().launch_replacements;
        self.settings.run_dir.clone().filter(|_| offered)
    }

    /// At an availability check while a migration runs in the background: commits the
    /// checkpoint written for it once every rank has written it (and then starts the
    /// spawn); once the spawn is complete, carries the migration out; a failed spawn is
    /// recorded and nobody moves. Collective.
    pub(super) fn advance_background_migration<T: Serialize>(
        &mut self,
        state: &T,
    ) -> Result<(), MigrateError> {
        let spawning = self
            .pending
            .as_ref()
            .is_some_and(|p| p.helper.as_ref().is_some_and(|h| !h.is_finished()));
        let mine = [
            u8::from(spawning),
            u8::from(self.ckpt.writing()),
            u8::from(self.ckpt.warming()),
        ];
        let mut busy = [0u8; 3];
        self.comm.all_reduce_into(
            &mine[..],
            &mut busy[..],
            mpi::collective::SystemOperation::max(),
        );
        if busy[1] != 0 || busy[2] != 0 {
            return Ok(());
        }
        if !self.pending.as_ref().is_some_and(|p| p.saved) {
            return self.save_for_relaunch(state);
        }
        if self.ckpt.uncommitted() {
            // Every rank has written its checkpoint: committed now, whatever the
            // spawn is doing (a spawn that never completes then costs only what was
            // computed since).
            crate::migrate::timeline::step("relaunch checkpoint written by every rank");
            if let Err(e) = self.ckpt.finalize() {
                self.give_up_without_checkpoint(e.into());
                return Ok(());
            }
        }
        if !self.pending.as_ref().is_some_and(|p| p.spawn_started) {
            return self.start_background_spawn();
        }
        if busy[0] != 0 {
            return Ok(());
        }
        let Some(mut pending) = self.pending.take() else {
            return Ok(());
        };
        self.pacer.relax();
        crate::migrate::timeline::step("old: held for the migration");
        let held = Instant::now();
        let background = pending.started.elapsed().as_secs_f64();
        let bridge = match self.joined_helper(&mut pending) {
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

    /// True while the checkpoint a background migration starts from is written but not
    /// yet committed. Its outcome is the migration's to take (a failed write refuses the
    /// migration and every rank goes on), not the periodic check's, which would return
    /// it to the application as an error. Agreed: every rank saved it in one collective
    /// call, and the commit is collective.
    pub(super) fn migration_holds_checkpoint(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| p.saved) && self.ckpt.uncommitted()
    }

    /// Every rank's buffer being ready: saves the checkpoint a relaunch would start
    /// from (written by the checkpoint writer while the ranks compute). Collective.
    fn save_for_relaunch<T: Serialize>(&mut self, state: &T) -> Result<(), MigrateError> {
        crate::migrate::timeline::step("relaunch checkpoint: every buffer warm");
        match self.ckpt.save_now(state) {
            Ok(()) => {
                crate::migrate::timeline::step("relaunch checkpoint: state copied");
                if let Some(pending) = self.pending.as_mut() {
                    pending.saved = true;
                }
            }
            Err(e) => self.give_up_without_checkpoint(e.into()),
        }
        Ok(())
    }

    /// Rank 0 learns the size of each moving rank's state (empty elsewhere), in the
    /// order the new processes are spawned: each new process makes a buffer of that
    /// size ready while it waits (`mine`: this rank's serialised state; the counters
    /// that go first in the message are small beside any real state). Collective.
    fn state_sizes_in_spawn_order(&self, mine: u64, migration: &Migration) -> Vec<u64> {
        let root = self.comm.process_at_rank(0);
        if !self.is_root() {
            root.gather_into(&mine);
            return Vec::new();
        }
        let mut sizes = vec![0u64; self.comm.size() as usize];
        root.gather_into_root(&mine, &mut sizes[..]);
        (migration.spawn_order(&self.settings.hosts).iter())
            .map(|m| sizes.get(m.rank).copied().unwrap_or(0))
            .collect()
    }

    /// The checkpoint written for a relaunch could not be committed (`e`, e.g. a full
    /// disk): the migration is called off (its spawn, if started, waited for and the
    /// new processes dismissed), and the same edit is tried again later, as when a
    /// blocking migration's checkpoint fails. Collective.
    fn give_up_without_checkpoint(&mut self, e: MigrateError) {
        let Some(mut pending) = self.pending.take() else {
            return;
        };
        self.pacer.relax();
        if let Ok(Some(bridge)) = self.joined_helper(&mut pending) {
            protocol::dismiss_background_spawn(bridge, pending.migration.plan.moves.len());
        }
        self.refuse_without_checkpoint(&e, pending.migration);
    }

    /// Rank 0 joins the helper thread and tells every rank whether the spawn worked:
    /// the bridge on rank 0 (`None` elsewhere), or the failure, on every rank (the
    /// message only on rank 0, which records it). Collective.
    fn joined_helper(&self, pending: &mut PendingMigration) -> Result<Option<Bridge>, String> {
        let joined = pending.helper.take().map(|h| {
            h.join().unwrap_or_else(|_| {
                Err("the spawning thread panicked (a bug: please report it)".into())
            })
        });
        let local = match &joined {
            Some(Err(_)) => SpawnStatus::Failed,
            _ => SpawnStatus::Done,
        };
        let mut status = local as u8;
        self.comm.process_at_rank(0).broadcast_into(&mut status);
        match (joined, status == SpawnStatus::Failed as u8) {
            (Some(Ok(bridge)), false) => Ok(Some(bridge)),
            (Some(Err(message)), _) => Err(message),
            (_, true) => Err(String::new()),
            (None, false) => Ok(None),
        }
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
        if let Ok(Some(bridge)) = self.joined_helper(&mut pending) {
            protocol::dismiss_background_spawn(bridge, pending.migration.plan.moves.len());
        }
    }
}

/// How often old rank 0's helper looks whether the replacements of a launch are ready.
const LAUNCH_POLL: Duration = Duration::from_millis(2);

/// Old rank 0's helper: opens a port (with the launcher's `port_info`), asks `rankmig
/// run` to start the replacements (`request` made from the port), waits (without MPI
/// calls) until they wait in `MPI_Comm_connect` (their state buffers ready: the request
/// gives the sizes), and accepts them into the [`Bridge`]; `started` is called once they
/// are ready or their launch failed.
fn launch_bridge(
    run_dir: &Path,
    port_info: &[(String, String)],
    request: impl FnOnce(String) -> LaunchRequest,
    started: impl FnOnce(),
) -> Result<Bridge, MigrateError> {
    let port = protocol::open_port(port_info)?;
    let request = request(port.clone());
    let launch_failed = |why: String| MigrateError::Spawn {
        program: request.program.first().cloned().unwrap_or_default(),
        why,
    };
    let waited = launch_request::submit(run_dir, &request)
        .map_err(|e| e.to_string())
        .and_then(|()| launch_request::wait(run_dir, &request.id, LAUNCH_POLL));
    started();
    let bridge = waited
        .map_err(|why| launch_failed(format!("the launch of the replacements failed: {why}")))
        .and_then(|()| protocol::accept_bridge(&port));
    protocol::close_port(&port);
    launch_request::clean(run_dir, &request.id);
    bridge
}

/// A replacement process started by `rankmig run` for the request at `path`
/// ([`launch_request::ENV_JOIN`]): makes its state buffer ready (the request gives its
/// size); once every process of its launch has, the first says they are ready, and all
/// connect to old rank 0's port. Returns the intercommunicator with old rank 0 and the
/// buffer. Collective over `MPI_COMM_WORLD`.
pub(super) fn join_launch(path: &Path) -> Result<(InterCommunicator, StateBuffer), MigrateError> {
    let request = launch_request::read(path)?;
    let world = mpi::topology::SimpleCommunicator::world();
    let size = usize::try_from(world.rank())
        .ok()
        .and_then(|i| request.state_sizes.get(i).copied());
    let buffer = size.map(protocol::state_buffer).unwrap_or_default();
    crate::migrate::timeline::step("new: state buffer ready");
    protocol::barrier_without_spinning(&world);
    if world.rank() == 0 {
        let run_dir = path.parent().unwrap_or(Path::new("."));
        launch_request::mark_ready(run_dir, &request.id)?;
    }
    crate::migrate::timeline::step("new: connecting to old rank 0");
    Ok((protocol::connect_to_job(&request.port)?, buffer))
}
