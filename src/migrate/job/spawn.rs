//! The spawn: a migration's replacement processes started, one of two ways
//! ([`Job::carry_out`]).
//!
//! **In the background**, where the MPI allows it ([`Job::blocking_spawn_reason`]):
//! with `MPI_THREAD_MULTIPLE`, a plan's replacement processes are started by a helper
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
//! Checks come about every [`PENDING_CHECK_INTERVAL`] meanwhile; each asks whether
//! the checkpoint, then the spawn, is complete ([`Job::advance_background_spawn`]);
//! once the spawn is, the job joins the new processes (`background.rs`).
//!
//! Where the launcher can start replacements with a launch of their own
//! ([`crate::launcher::Capabilities::launch_replacements`]) and `rankmig run` is there
//! to do it, the helper does not spawn: it asks `rankmig run` for that launch and
//! accepts the replacements once they wait in `MPI_Comm_connect`
//! ([`crate::run_dir::launch_request`]), because such an MPI's spawn holds the
//! application's MPI calls until its children have started (which MPI: the launcher's
//! file and docs/mpi-implementations.md).
//!
//! **With the application held** ([`Job::migrate_blocking`]): when `rankmig run`
//! watches spawns, the checkpoint a relaunch would start from is committed first; the
//! leaving ranks serialise their state, and every rank takes part in `MPI_Comm_spawn`,
//! which gives the new processes at once.
//!
//! Either way the spawn ends with the hand-over (`migration.rs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use serde::Serialize;

use super::background::PendingMigration;
use super::migration::{Held, Migration, SPAWN_FAILED_OUTCOME, UNSERIALISED_OUTCOME};
use super::{Job, MigrateError};
use crate::launcher::Launcher;
use crate::migrate::protocol::{self, Bridge};
use crate::planner::{Move, Placement};
use crate::run_dir::launch_request::{self, LaunchRequest};
use crate::run_dir::record::PhaseTimes;
use crate::run_dir::settings::{ENV_BLOCKING_SPAWN, JobSettings};

/// Time between two availability checks while a spawn runs in the background, so that
/// the ranks join the new processes soon after they are ready.
pub const PENDING_CHECK_INTERVAL: Duration = Duration::from_millis(20);

/// What old rank 0's helper thread runs to start the replacements and make the bridge.
type BackgroundStart = Box<dyn FnOnce() -> Result<Bridge, MigrateError> + Send>;

impl Job {
    /// Carries `migration` out: its spawn in the background where the MPI allows it
    /// ([`Job::start_background_migration`]), else with the application held for it
    /// ([`Job::migrate_blocking`]). Collective over the old communicator.
    pub(super) fn carry_out<T: Serialize>(
        &mut self,
        state: &T,
        migration: Migration,
    ) -> Result<(), MigrateError> {
        if self.blocking_spawn_reason().is_none() {
            return self.start_background_migration(state, migration);
        }
        self.migrate_blocking(state, migration)
    }

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

    /// Calls a held `migration` off (`outcome`, `detail`): the time since the ranks were
    /// `held` counts as the iteration's migration time, and the record says why.
    fn abandon_held(
        &mut self,
        outcome: &str,
        detail: String,
        migration: &Migration,
        held: Instant,
    ) {
        self.iterations
            .charge(migration.scheduling, held.elapsed().as_secs_f64());
        self.record_abandoned(outcome, detail, migration);
    }

    /// Carries `migration` out with every rank held for the spawn (where the spawn
    /// cannot run in the background, [`Job::blocking_spawn_reason`]). Collective.
    pub(super) fn migrate_blocking<T: Serialize>(
        &mut self,
        state: &T,
        migration: Migration,
    ) -> Result<(), MigrateError> {
        let held = Instant::now();
        let scheduling = migration.scheduling;
        self.ckpt.finalize()?;
        // First: the checkpoint handed over to the new processes must be this one. Its
        // time counts in the iteration's migration time and in the pause, not in the
        // recorded phases.
        if let Err(e) = self.before_watched_spawn(state, migration.plan.moves.len()) {
            // Every rank has the same outcome (a checkpoint's result is agreed).
            self.iterations
                .charge(scheduling, held.elapsed().as_secs_f64());
            self.refuse_without_checkpoint(&e, migration);
            return Ok(());
        }
        // Serialised before the spawn: a leaving rank that cannot serialise calls the
        // migration off before any process is started.
        let leaving = match self.serialise_leaving_state(state, &migration.plan) {
            Ok(leaving) => leaving,
            Err(failed) => {
                self.abandon_held(UNSERIALISED_OUTCOME, failed.to_string(), &migration, held);
                return Ok(());
            }
        };
        let spawn_start = Instant::now();
        let moves = migration.spawn_order(&self.settings.hosts);
        let (program, args) = self.replacement_command(&moves, &migration.plan.placement)?;
        let groups = self.spawn_request(&moves);
        let spawned = protocol::spawn(&self.comm, &program, &args, &groups);
        self.after_watched_spawn();
        let inter = match spawned {
            Ok(inter) => inter,
            Err(e) => {
                self.abandon_held(SPAWN_FAILED_OUTCOME, e.to_string(), &migration, held);
                return Ok(());
            }
        };
        let phases = PhaseTimes {
            spawn: spawn_start.elapsed().as_secs_f64(),
            ..PhaseTimes::default()
        };
        self.iterations.charge(scheduling, 0.0);
        let so_far = Held {
            phases,
            since: held,
            planned_iteration: None,
        };
        self.complete_migration(leaving, &migration, inter, so_far)
    }

    /// When `rankmig run` watches the spawns ([`crate::run_dir::spawn_watch`]): commits a
    /// checkpoint of every rank, to launch the job again from should the spawn of
    /// `processes` processes never complete, and rank 0 marks the spawn as begun.
    /// Collective.
    fn before_watched_spawn<T: Serialize>(
        &mut self,
        state: &T,
        processes: usize,
    ) -> Result<(), MigrateError> {
        if !self.settings.spawns_watched() {
            return Ok(());
        }
        self.commit_checkpoint_now(state)?;
        self.mark_spawn_begun(processes);
        Ok(())
    }

    /// Rank 0: the spawn returned (whether it worked or not).
    fn after_watched_spawn(&self) {
        if let Some(dir) = self.spawn_marker_dir() {
            crate::run_dir::spawn_watch::end(dir);
        }
    }

    /// Rank 0, when `rankmig run` watches the spawns: leaves the marker of a spawn of
    /// `processes` processes.
    fn mark_spawn_begun(&self, processes: usize) {
        if let Some(dir) = self.spawn_marker_dir() {
            let what = format!(
                "migration {} at iteration {}: {processes} process(es)",
                self.reconfigurations + 1,
                self.calls
            );
            crate::run_dir::spawn_watch::begin(dir, &what);
        }
    }

    /// Where rank 0 marks its spawns: the run directory when `rankmig run` watches
    /// them, on rank 0 only.
    fn spawn_marker_dir(&self) -> Option<&Path> {
        let watched = self.is_root() && self.settings.spawns_watched();
        self.settings.run_dir.as_deref().filter(|_| watched)
    }

    /// The spawn commands that start [`Migration::spawn_order`]'s moves on their target
    /// hosts: one per host with the launcher's info keys, or (where the launcher places
    /// a spawn through a hostfile) one for all, whose hostfile rank 0 writes into the run
    /// directory (else the temporary directory). Should rank 0 fail to write it, the
    /// spawn fails on every rank and the job stays where it is.
    fn spawn_request(&self, moves: &[&Move]) -> Vec<protocol::SpawnGroup> {
        let launcher = self.launcher();
        let hosts = &self.settings.hosts;
        let (true, Some(key)) = (self.settings.multi_host(), launcher.spawn_hostfile_key()) else {
            return spawn_groups(moves, hosts, launcher);
        };
        let dir = (self.settings.run_dir.clone()).unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!("spawn-hostfile-{}.txt", self.reconfigurations + 1));
        if self.is_root() {
            let targets = Placement::new(moves.iter().map(|m| m.to.clone()).collect());
            if let Err(e) = std::fs::write(&path, launcher.hostfile(&targets, hosts)) {
                log::warn!("cannot write the spawn hostfile {}: {e}", path.display());
            }
        }
        vec![protocol::SpawnGroup {
            host: None,
            count: moves.len(),
            info: vec![(key.to_owned(), path.display().to_string())],
        }]
    }

    /// Starts a migration in the background: when `rankmig run` watches spawns, first
    /// the checkpoint a relaunch would start from (written by the checkpoint writer),
    /// then, once every rank has written it and it is committed, the plan's spawn on a
    /// helper thread of rank 0 ([`Job::advance_background_spawn`]); every rank
    /// returns to the application at once. Collective.
    fn start_background_migration<T: Serialize>(
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
            let after = &pending.migration.plan.placement;
            let start = self.background_start(&moves, after, state_sizes)?;
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
        moves: &[&Move],
        after: &Placement,
        state_sizes: Vec<u64>,
    ) -> Result<BackgroundStart, MigrateError> {
        let (program, args) = self.replacement_command(moves, after)?;
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
    pub(super) fn replacement_launch_dir(&self) -> Option<PathBuf> {
        let offered = self.settings.launches_replacements
            && self.launcher().capabilities().launch_replacements;
        self.settings.run_dir.clone().filter(|_| offered)
    }

    /// At an availability check while a migration's spawn runs in the background:
    /// commits the checkpoint written for it once every rank has written it (and then
    /// starts the spawn). True, on every rank, once the spawn is complete: the job joins
    /// the new processes ([`Job::join_background_migration`]). A checkpoint that could
    /// not be committed calls the migration off. Collective.
    pub(super) fn advance_background_spawn<T: Serialize>(
        &mut self,
        state: &T,
    ) -> Result<bool, MigrateError> {
        let spawning = self
            .pending
            .as_ref()
            .is_some_and(PendingMigration::spawning);
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
            return Ok(false);
        }
        if !self.pending.as_ref().is_some_and(|p| p.saved) {
            self.save_for_relaunch(state);
            return Ok(false);
        }
        if self.ckpt.uncommitted() {
            // Every rank has written its checkpoint: committed now, whatever the
            // spawn is doing (a spawn that never completes then costs only what was
            // computed since).
            crate::migrate::timeline::step("relaunch checkpoint written by every rank");
            if let Err(e) = self.ckpt.finalize() {
                self.give_up_without_checkpoint(e.into());
                return Ok(false);
            }
        }
        if !self.pending.as_ref().is_some_and(|p| p.spawn_started) {
            self.start_background_spawn()?;
            return Ok(false);
        }
        Ok(busy[0] == 0)
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
    fn save_for_relaunch<T: Serialize>(&mut self, state: &T) {
        crate::migrate::timeline::step("relaunch checkpoint: every buffer warm");
        let with_outputs = crate::output_files::WithOutputs {
            state,
            files: &self.outputs,
        };
        match self.ckpt.save_now(&with_outputs) {
            Ok(()) => {
                crate::migrate::timeline::step("relaunch checkpoint: state copied");
                if let Some(pending) = self.pending.as_mut() {
                    pending.saved = true;
                }
            }
            Err(e) => self.give_up_without_checkpoint(e.into()),
        }
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
        pending.dismiss(&self.comm);
        self.refuse_without_checkpoint(&e, pending.migration);
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

impl Job {
    /// The program and arguments the replacements of `moves` (spawn order) start with,
    /// `after` being the placement once they have arrived: this program and its
    /// arguments, wrapped in `rankmig bind-exec` for ranks of several cores
    /// ([`super::binding::replacement_command`]).
    fn replacement_command(
        &self,
        moves: &[&Move],
        after: &Placement,
    ) -> Result<(String, Vec<String>), MigrateError> {
        let program = spawn_program(&self.settings)?;
        let args: Vec<String> = std::env::args().skip(1).collect();
        Ok(super::binding::replacement_command(
            &self.settings,
            moves,
            after,
            self.availability.view.as_ref(),
            (program, args),
            self.reconfigurations + 1,
            self.is_root(),
        ))
    }
}

/// The program replacement processes run: `RANKMIG_SPAWN_PROGRAM`, else this one.
fn spawn_program(settings: &JobSettings) -> Result<String, MigrateError> {
    Ok(match &settings.spawn_program {
        Some(p) => p.display().to_string(),
        None => std::env::current_exe()?.display().to_string(),
    })
}

/// The spawn requests of [`Migration::spawn_order`]'s moves: per target host, how many
/// processes and the info keys `launcher` needs to start them there (in multi-host
/// mode, where `hosts` is not empty; one group with no host on logical nodes).
fn spawn_groups(
    moves: &[&Move],
    hosts: &[String],
    launcher: &dyn Launcher,
) -> Vec<protocol::SpawnGroup> {
    let mut groups: Vec<protocol::SpawnGroup> = Vec::new();
    if hosts.is_empty() {
        groups.push(protocol::SpawnGroup {
            host: None,
            count: moves.len(),
            info: Vec::new(),
        });
    } else {
        for m in moves {
            match groups.last_mut() {
                Some(g) if g.host.as_deref() == Some(m.to.node.as_str()) => g.count += 1,
                _ => groups.push(protocol::SpawnGroup {
                    host: Some(m.to.node.clone()),
                    count: 1,
                    info: Vec::new(),
                }),
            }
        }
    }
    for g in &mut groups {
        g.info = launcher.spawn_info(g.host.as_deref(), g.count);
    }
    groups
}
