//! The runtime an application holds: its communicator, its checkpoints, and the
//! reconfiguration points where ranks migrate.
//!
//! # A migration, phase by phase
//!
//! Five phases, each in one file, in this order. The first makes a `Migration` value
//! (`migration.rs`: the plan, its planning time, the change it answers, the view to go
//! back to), which every later phase takes.
//!
//! 1. **Check and plan** — `reconfigure.rs` (`Job::reconfiguration_point`): at a
//!    `checkpoint!` call the pacer (`pacing.rs`) makes due, rank 0 reads the
//!    availability file and every rank receives what it saw, with the contention
//!    watch's decision (`contention.rs`). Nothing changed: back to the application.
//!    Else the placement, the live matrix and (multi-host) the hosts' trees
//!    (`host_trees.rs`) are gathered, rank 0 plans and every rank receives the plan. A
//!    plan without moves is recorded; a plan the MPI cannot spawn for
//!    (`Job::spawn_refused`) ends the job, to be launched again from a checkpoint
//!    (`Job::relaunch`); any other goes on to the spawn.
//! 2. **Spawn** — `spawn.rs` (`Job::carry_out`), one of two ways. In the background,
//!    where the MPI allows it (`Job::start_background_migration`): the checkpoint a
//!    relaunch would start from (when `rankmig run` watches spawns), then rank 0's
//!    helper thread spawns the replacements, or asks `rankmig run` to launch them, while
//!    the ranks compute; the checks that follow tell when it is complete
//!    (`Job::advance_background_spawn`). With the application held instead
//!    (`Job::migrate_blocking`): the same checkpoint, the leaving ranks' state
//!    serialised (`Job::serialise_leaving_state`, in `migration.rs`), then a spawn that
//!    gives the new processes at once, and on to the hand-over.
//! 3. **Join** (a background spawn only) — `background.rs`
//!    (`Job::join_background_migration`): at the check that finds the spawn complete,
//!    every rank is held, the helper thread is joined, the leaving ranks serialise their
//!    state, and the job joins the new processes. A spawn still running when the
//!    application ends is called off there (`Job::call_off_background_migration`).
//! 4. **Hand-over, rebuild and record** — `migration.rs` (`Job::complete_migration`):
//!    rank 0 sends each new process its assignment, each leaving rank its state; the
//!    ranks that stay take the new communicator and bind again, rank 0 records the
//!    migration (`outcome.rs` makes the record), the leaving ranks exit (`leave_now`,
//!    this file). A migration stopped before anyone moved (a checkpoint or a spawn that
//!    failed, a state that could not be serialised) is recorded by the same file
//!    (`Job::refuse_without_checkpoint`, `Job::record_abandoned`).
//! 5. **Arrival** — this file (`Job::arrive`): a new process receives its assignment
//!    and state and joins the job's new communicator; the application reads the state
//!    with [`Job::restore_or`]. A process that `rankmig run` launched instead of a
//!    spawn first makes its state buffer ready and connects (`join_launch`).

use std::time::{Duration, Instant};

use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::checkpoint::mpi_collective::DuplicateInProgress;
use crate::checkpoint::{CheckpointConfig, CheckpointContext, MpiCollective};
use crate::contention::cpu_busy::CpuBusyReader;
use crate::contention::{ContentionWatch, PressureReader, WaitReader};
use crate::launcher::{Departure, Launcher, MpiImplementation, launcher};
use crate::matrix::CommMatrix;
use crate::monitor::{
    self, AvailabilityWatcher, NewHosts, Paused, Row, Traffic, WatchOutcome, Window,
};
use crate::planner::{Location, Placement};

mod background;
mod binding;
mod comm_generation;
mod contention;
mod followed;
pub mod history;
mod host_trees;
mod iteration_mark;
mod iterations;
mod matrix_file;
mod migration;
mod outcome;
pub mod pacing;
mod reconfigure;
mod spawn;

use comm_generation::CommGeneration;
use followed::Followed;
use history::Lineage;
use iteration_mark::IterationMark;
use iterations::Iterations;
use migration::Assignment;
use outcome::{Outcome, RecordedAt};
use pacing::CheckPacer;

use crate::migrate::MigrateError;
use crate::migrate::protocol;
use crate::migrate::state_buffer::{LargestRegion, StateBuffer};
use crate::output_files::{OutputError, OutputFile, OutputFiles, Restored, Resume, WithOutputs};
use crate::run_dir::launch_request;
use crate::run_dir::record;
use crate::run_dir::settings::JobSettings;

/// A rank of a job that may migrate.
///
/// The job takes the MPI [`Universe`] over: after a migration `MPI_COMM_WORLD` of a
/// replacement process holds only the processes spawned with it, so the only
/// communicator to use is [`Job::comm`]. MPI is finalized when the job is dropped.
///
/// ```no_run
/// use rankmig::checkpoint::CheckpointConfig;
/// use rankmig::migrate::Job;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let universe = mpi::initialize().ok_or("MPI")?;
/// let mut job = Job::init(universe, CheckpointConfig::new("ckpt").with_env()?)?;
/// if !job.is_replacement() {
///     // set-up that must not run again in a process that replaces a migrated rank
/// }
/// let mut state: (u64, Vec<f64>) = job.restore_or(|| (0, vec![0.0; 1024]))?;
/// while state.0 < 1000 {
///     let comm = job.comm(); // re-borrow every iteration: it changes at migrations
///     // ... compute, exchange halos through `comm` ...
///     state.0 += 1;
///     rankmig::checkpoint!(job, state); // may save, or move this rank elsewhere
/// }
/// job.finalize()?;
/// # Ok(()) }
/// ```
pub struct Job {
    settings: JobSettings,
    comm: SimpleCommunicator,
    ckpt: CheckpointContext<MpiCollective>,
    ckpt_due: bool,
    calls: u64,
    pacer: CheckPacer,
    location: Location,
    /// The availability the job follows, and the watcher of its file.
    availability: Followed,
    placement: Option<Placement>,
    /// In a process that arrived by migration, until [`Job::restore_or`]: the state
    /// message and where the state starts in it (after the replaced rank's counters).
    arrived_state: Option<(StateBuffer, usize)>,
    /// Where the state's largest memory region lies ([`Job::place_largest_region`]).
    largest_region: Option<LargestRegion>,
    reconfigurations: u64,
    changes: u64,
    started: Instant,
    /// The iteration records not yet written, and the iteration mark.
    iterations: Iterations,
    /// This process's launch, the launches so far and where each has run.
    lineage: Lineage,
    /// True in a process spawned by a migration to replace a rank.
    replacement: bool,
    /// [`Job::finalize`] has run (else dropping the job notes its end).
    finished: bool,
    /// How many times this process's job communicator has been replaced, and whether
    /// since the last [`Job::event`] returned.
    comm_generation: CommGeneration,
    /// Bytes of the live matrix at the last reconfiguration point (rank 0), when plans
    /// are made from it (no `--matrix`): recorded, so `rankmig run` can say when nothing
    /// was counted.
    live_bytes: Option<f64>,
    /// A migration whose replacement processes are being started in the background.
    pending: Option<background::PendingMigration>,
    /// Rank 0: when it last wrote the run directory's matrix ([`Job::write_run_matrix`]).
    matrix_written: Option<Instant>,
    /// Rank 0: the thread that writes the run directory's matrix.
    matrix_file: matrix_file::MatrixFile,
    /// This rank's reading of its waits for a CPU, with the contention watch on.
    waits: Option<WaitReader>,
    /// With the contention watch on, this process's reading of its node's CPU pressure
    /// (`/proc/pressure/cpu`, where the kernel gives it), used while it is its node's
    /// lowest rank.
    pressure: Option<PressureReader>,
    /// With the contention watch on, this rank's reading of the CPUs rank 0 asked it to
    /// read: those the watch took ranks off ([`crate::contention::cpu_busy`]).
    busy: Option<CpuBusyReader>,
    /// Rank 0: the contention watch's window and lowered nodes ([`contention`]).
    contention: ContentionWatch,
    /// The files this rank writes through rankmig ([`Job::output_file`]): recorded in
    /// each checkpoint, handed over at a migration.
    outputs: OutputFiles,
    /// MPI itself, finalized when the job is dropped (declared last: dropped after the
    /// communicators). `None` when the application initialised MPI (the C interface).
    _universe: Option<Universe>,
}

impl Job {
    /// Starts the runtime. Collective over the processes of `MPI_COMM_WORLD`. In a
    /// process spawned by a migration, joins the job in place of the rank it replaces
    /// (and `config` is replaced by the job's).
    ///
    /// Errors: bad `RANKMIG_*` settings, an unreadable placement file, checkpoint
    /// directory problems, a failed arrival.
    pub fn init(universe: Universe, config: CheckpointConfig) -> Result<Self, MigrateError> {
        let mut job = Self::init_on_world(config)?;
        job._universe = Some(universe);
        Ok(job)
    }

    /// [`Job::init`] in a process whose MPI was initialised by someone else (the C
    /// interface): the caller finalizes MPI after the job is dropped.
    pub(crate) fn init_on_world(config: CheckpointConfig) -> Result<Self, MigrateError> {
        let world = SimpleCommunicator::world();
        if let Some(parent) = world.parent() {
            return Self::arrive(parent, StateBuffer::default());
        }
        if let Some(request) = std::env::var_os(launch_request::ENV_JOIN).filter(|v| !v.is_empty())
        {
            let (parent, buffer) = join_launch(std::path::Path::new(&request))?;
            return Self::arrive(parent, buffer);
        }
        let mut settings = JobSettings::from_env()?;
        if settings.mpi.is_none() {
            settings.mpi = Some(implementation_of_library());
        }
        let ckpt = CheckpointContext::new(config, MpiCollective::new(&world))?;
        let rank = world.rank() as usize;
        let placement = match &settings.placement {
            Some(p) => Some(Placement::load(p)?),
            None => None,
        };
        let location = placement
            .as_ref()
            .filter(|p| rank < p.len())
            .map(|p| p.location(rank).clone())
            .unwrap_or_else(|| Location {
                node: monitor::location::hostname(),
                core: rank,
            });
        // Only rank 0 names placement files (and hands the count over when it moves).
        let earlier_migrations = match (&settings.run_dir, rank) {
            (Some(dir), 0) => record::migrations_recorded(dir),
            _ => 0,
        };
        let settings_run_dir = settings.run_dir.clone();
        let mut job = Self {
            pacer: CheckPacer::starting_at(settings.check_spacing, 0),
            waits: settings.contention.on().then(WaitReader::start),
            pressure: settings
                .contention
                .on()
                .then(PressureReader::open)
                .flatten(),
            busy: None,
            settings,
            comm: world,
            ckpt,
            ckpt_due: false,
            calls: 0,
            location,
            availability: Followed::nothing(),
            placement,
            arrived_state: None,
            largest_region: None,
            reconfigurations: earlier_migrations,
            changes: 0,
            started: Instant::now(),
            iterations: Iterations::new(iteration_mark(settings_run_dir.as_deref(), rank)),
            lineage: Lineage::first(),
            replacement: false,
            finished: false,
            comm_generation: CommGeneration::default(),
            live_bytes: None,
            pending: None,
            matrix_written: None,
            matrix_file: matrix_file::MatrixFile::default(),
            contention: ContentionWatch::starting(0.0),
            outputs: OutputFiles::default(),
            _universe: None,
        };
        monitor::set_job_communicator(&job.comm, None);
        log::debug!(
            "rank {rank} of {} started on {} (core {}); availability file: {}",
            job.comm.size(),
            job.location.node,
            job.location.core,
            (job.settings.availability.as_ref()).map_or("none".into(), |p| p.display().to_string())
        );
        job.start_watching();
        job.check_host_and_bind();
        job.note_process("start");
        Ok(job)
    }

    /// A job started by `mpirun`: its availability watcher, following the content the
    /// launch was placed for, else the file's first content (a collective check).
    fn start_watching(&mut self) {
        let Some(path) = self.settings.availability.clone() else {
            return;
        };
        let mut watcher = AvailabilityWatcher::new(path)
            .in_allocation(
                self.settings.hosts.clone(),
                self.settings.lost_hosts.clone(),
            )
            .new_hosts(new_hosts_policy(&self.settings))
            .settling(self.settings.settle())
            .keeping_accepted(record::accepted_availability(
                self.settings.run_dir.as_deref(),
            ));
        if let Some(path) = &self.settings.planned_availability {
            // Rank 0 reads the copy and every rank judges the same bytes, so all
            // agree on whether the (collective) first check below is made.
            let mine = (self.comm.rank() == 0).then(|| std::fs::read(path).unwrap_or_default());
            let bytes = monitor::gather::broadcast_bytes(&self.comm, mine);
            if !bytes.is_empty() {
                watcher = watcher.planned(&bytes);
            }
        }
        match watcher.current() {
            Some(current) => self.availability.view = Some(current.clone()),
            None => {
                if let WatchOutcome::Changed { availability } = watcher.check(&self.comm) {
                    self.availability.view = Some(availability);
                }
            }
        }
        self.availability.watcher = Some(watcher);
    }

    /// A new process: receive the assignment and state (into `buffer` if it was made
    /// ready beforehand), join the new communicator.
    fn arrive(
        parent: mpi::topology::InterCommunicator,
        buffer: StateBuffer,
    ) -> Result<Self, MigrateError> {
        let arrival = match protocol::new_process_exchange(parent, buffer, |bytes| {
            let a: Assignment = serde_json::from_slice(bytes)?;
            Ok(a.rank)
        }) {
            Err(MigrateError::Dismissed) => {
                leave_now(launcher(implementation_of_library()).departure())
            }
            other => other?,
        };
        let a: Assignment = serde_json::from_slice(&arrival.assignment)?;
        // Made as the ranks that stay make theirs (MPI_Comm_idup: a blocking and a
        // nonblocking collective do not match: mixed, the job may hang), and completed
        // at the checkpoint's first collective: the arrival goes on to the application.
        let coll =
            MpiCollective::over_duplicate_in_progress(DuplicateInProgress::start(&arrival.comm));
        let ckpt = CheckpointContext::adopt(a.checkpoint.config(), coll, &a.handover)?;
        // The state message carries the replaced rank's counters, then its state, read
        // from there by restore_or (not copied out).
        let mut counters = std::io::Cursor::new(arrival.state.as_slice());
        let row: Option<Row> = bincode::deserialize_from(&mut counters)
            .map_err(|e| MigrateError::State(e.to_string()))?;
        // Then the lengths of its output files, flushed and closed before it sent them.
        let outputs_record = bincode::deserialize_from(&mut counters)
            .map_err(|e| MigrateError::State(e.to_string()))?;
        let outputs = OutputFiles::default();
        outputs.start(Resume::Arrival, outputs_record);
        let state_offset =
            usize::try_from(counters.position()).map_err(|e| MigrateError::State(e.to_string()))?;
        monitor::set_job_communicator(&arrival.comm, row);
        let watcher = a.settings.availability.clone().map(|path| {
            AvailabilityWatcher::resume(path, a.view_hash)
                .in_allocation(a.settings.hosts.clone(), a.settings.lost_hosts.clone())
                .new_hosts(new_hosts_policy(&a.settings))
                .settling(a.settings.settle())
                .keeping_accepted(record::accepted_availability(a.settings.run_dir.as_deref()))
        });
        let mark = iteration_mark(a.settings.run_dir.as_deref(), a.rank);
        let job = Self {
            pacer: CheckPacer::resume(a.settings.check_spacing, a.next_check, a.check_stride),
            waits: (a.settings.contention.on()).then(WaitReader::start),
            pressure: (a.settings.contention.on())
                .then(PressureReader::open)
                .flatten(),
            busy: None,
            settings: a.settings,
            comm: arrival.comm,
            ckpt,
            ckpt_due: false,
            calls: a.calls,
            location: a.location,
            availability: Followed {
                view: a.view,
                watcher,
            },
            placement: Some(a.placement),
            arrived_state: Some((arrival.state, state_offset)),
            largest_region: None,
            reconfigurations: a.reconfigurations,
            changes: a.changes,
            started: Instant::now() - Duration::from_secs_f64(a.elapsed.max(0.0)),
            iterations: Iterations::new(mark),
            lineage: Lineage::arrived(a.generation, a.history),
            replacement: true,
            finished: false,
            comm_generation: CommGeneration::arrived(a.comm_changes),
            live_bytes: None,
            pending: None,
            matrix_written: None,
            matrix_file: matrix_file::MatrixFile::default(),
            contention: a.contention,
            outputs,
            _universe: None,
        };
        job.check_host_and_bind();
        job.note_process("arrived");
        crate::migrate::timeline::step("new: ready");
        Ok(job)
    }

    /// The communicator to use now. It changes when ranks migrate: take it again after
    /// every `checkpoint!`.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// True in a process spawned by a migration to replace a rank: the code before the
    /// main loop runs again in such a process, and set-up that must happen once per job
    /// (opening an output file for writing, printing a banner) can be skipped. Its state
    /// comes from [`Job::restore_or`], handed over by the rank it replaces.
    pub fn is_replacement(&self) -> bool {
        self.replacement
    }

    /// True when the state does not start fresh: in a process that arrived by migration
    /// (from [`Job::init`] on), and after a restart from a checkpoint in every process
    /// (once [`Job::restore_or`] has restored it). False at a fresh start. Set-up under
    /// `if !job.is_resumed()` is therefore skipped by a replacement and by every process
    /// at a restart; set-up that must run again at a restart goes outside it (the
    /// C interface's `rankmig_resumed()` is the same).
    ///
    /// ```no_run
    /// # use rankmig::migrate::Job;
    /// # fn f(job: &mut Job) -> Result<(), rankmig::migrate::MigrateError> {
    /// let state: u64 = job.restore_or(|| 0)?;
    /// if !job.is_resumed() {
    ///     println!("starting afresh"); // not at a restart, not in a replacement
    /// }
    /// # let _ = state; Ok(()) }
    /// ```
    pub fn is_resumed(&self) -> bool {
        self.replacement || self.ckpt.restored_epoch().is_some()
    }

    /// Opens `path` as an output file of this rank, written through rankmig (see
    /// [`crate::output_files`]): each checkpoint flushes it and records its length; a
    /// restart from that checkpoint truncates it to that length here, so the lines of
    /// the iterations after the checkpoint are not there twice; a process that arrives
    /// by migration appends to it where the rank it replaces stopped, after that one
    /// flushed and closed it; a fresh start creates or truncates it. A file of every
    /// rank (one path per rank) or of one rank alone (rank 0's follows rank 0 when it
    /// moves) alike. Call it after [`Job::restore_or`] (which tells a restart from a
    /// fresh start), in every process that writes the file, replacements included.
    ///
    /// Errors ([`OutputError`]): the path is a symbolic link (never followed), not a
    /// regular file of this user with one link, shorter than recorded, already open, or
    /// opened before [`Job::restore_or`].
    ///
    /// ```no_run
    /// use std::io::Write;
    /// use mpi::traits::Communicator;
    /// # use rankmig::migrate::Job;
    /// # fn f(job: &mut Job) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut iter: u64 = job.restore_or(|| 0)?;
    /// let mut out = job.output_file(format!("out-{}.txt", job.comm().rank()))?;
    /// while iter < 100 {
    ///     iter += 1;
    ///     writeln!(out, "iteration {iter}")?;
    ///     rankmig::checkpoint!(job, iter);
    /// }
    /// out.close()?;
    /// job.finalize()?;
    /// # Ok(()) }
    /// ```
    pub fn output_file(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<OutputFile, OutputError> {
        self.outputs.open(path.as_ref())
    }

    /// The output files of this process, for the C interface's handles.
    #[doc(hidden)]
    pub fn output_files(&self) -> &OutputFiles {
        &self.outputs
    }

    /// This rank's logical location.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The checkpoint context (epochs, notes).
    pub fn checkpoints(&self) -> &CheckpointContext<MpiCollective> {
        &self.ckpt
    }

    /// How many times the job's communicator ([`Job::comm`]) has been replaced in this
    /// process: it goes up by one at each migration this process survives, and a process
    /// that arrives by migration starts with the count of that migration. Communicators
    /// derived from [`Job::comm`] (split, duplicated, Cartesian) must be rebuilt when it
    /// changes.
    ///
    /// ```no_run
    /// # use rankmig::migrate::Job;
    /// # fn f(job: &mut Job, state: &u64) -> Result<(), rankmig::migrate::MigrateError> {
    /// use mpi::traits::Communicator;
    /// let mut seen = job.comm_generation();
    /// let mut halves = job.comm().split_by_color(mpi::topology::Color::with_value(job.comm().rank() % 2));
    /// // in the loop:
    /// if job.tick() && job.event(state)? {
    ///     // event() returned true: the communicator changed in this call
    /// }
    /// if job.comm_generation() != seen {
    ///     seen = job.comm_generation();
    ///     halves = job.comm().split_by_color(mpi::topology::Color::with_value(job.comm().rank() % 2));
    /// }
    /// # let _ = halves; Ok(()) }
    /// ```
    pub fn comm_generation(&self) -> u64 {
        self.comm_generation.count()
    }

    /// The state: handed over by the rank this process replaces, restored from the
    /// newest valid checkpoint at a restart, or `fresh()`.
    pub fn restore_or<T, F>(&mut self, fresh: F) -> Result<T, MigrateError>
    where
        T: DeserializeOwned,
        F: FnOnce() -> T,
    {
        if let Some((bytes, offset)) = self.arrived_state.take() {
            let state = bytes.as_slice().get(offset..).unwrap_or_default();
            let state =
                bincode::deserialize(state).map_err(|e| MigrateError::State(e.to_string()))?;
            crate::migrate::timeline::step("new: state deserialised");
            return Ok(state);
        }
        let restored: Restored<T> = self.ckpt.restore_or(|| Restored {
            state: fresh(),
            record: Default::default(),
        })?;
        let how = match self.ckpt.restored_epoch() {
            Some(_) => Resume::Restart,
            None => Resume::Fresh,
        };
        self.outputs.start(how, restored.record);
        let state = restored.state;
        self.calls = self.ckpt.calls();
        self.pacer = CheckPacer::starting_at(self.settings.check_spacing, self.calls);
        if let Some(epoch) = self.ckpt.restored_epoch() {
            self.note_process_row("restarted", Some(epoch));
        }
        Ok(state)
    }

    /// In a process that arrived by a migration, before [`Job::restore_or`]: the state
    /// message and the offset where the serialised state starts, for a caller that
    /// reads the state in place instead of deserialising a copy (the C interface's
    /// regions). `None` elsewhere, or once taken.
    #[doc(hidden)]
    pub fn take_arrived_state(&mut self) -> Option<(StateBuffer, usize)> {
        self.arrived_state.take()
    }

    /// Tells where the state's largest memory region lies (the C interface's regions),
    /// or that there is none: a rank that moves then sends that region's bytes straight
    /// from its memory ([`crate::migrate::state_message`]), to arrive at the same offset
    /// within a page as the region has, so that its replacement can move their pages
    /// into the program's memory instead of copying them
    /// ([`crate::migrate::state_buffer`]).
    ///
    /// # Safety
    /// The region's memory stays valid for reads, and is left unchanged while the
    /// program is inside [`Job::event`], until the next call.
    #[doc(hidden)]
    pub unsafe fn place_largest_region(&mut self, region: Option<LargestRegion>) {
        self.largest_region = region;
    }

    /// Counts a `checkpoint!` call; true when [`Job::event`] must run. Used by the macro.
    #[doc(hidden)]
    #[inline]
    pub fn tick(&mut self) -> bool {
        if !self.ckpt.in_place() {
            // From another thread, or inside an OpenMP parallel region: not counted
            // (the ranks' counts decide their collective steps); event() refuses it.
            return true;
        }
        self.calls += 1;
        (self.iterations).tick(self.calls, self.settings.run_dir.is_some());
        self.ckpt_due = self.ckpt.count_call();
        self.ckpt_due || (self.settings.migrates() && self.pacer.due(self.calls))
    }

    /// The slow path of `checkpoint!`: a checkpoint save or check, and at every
    /// availability check a possible reconfiguration. Collective. A rank that is
    /// replaced does not return: its process exits. Returns true when this call
    /// replaced the job's communicator ([`Job::comm_generation`] went up). A call from a
    /// thread other than the one that called [`Job::init`], or inside an OpenMP
    /// parallel region, is refused first, before any collective
    /// ([`crate::checkpoint::CheckpointError::Misplaced`]).
    #[doc(hidden)]
    pub fn event<T: Serialize>(&mut self, state: &T) -> Result<bool, MigrateError> {
        self.ckpt.check_thread()?;
        let _rankmig_traffic_is_not_counted = Paused::new();
        if self.ckpt_due && !self.migration_holds_checkpoint() {
            let with_outputs = WithOutputs {
                state,
                files: &self.outputs,
            };
            self.ckpt.event(&with_outputs)?;
        }
        if self.settings.migrates() && self.pacer.due(self.calls) {
            // Paced before the check: processes spawned by it take the new pacing over.
            self.pace_and_gather_waits();
            self.reconfiguration_point(state)?;
            self.flush_records();
        }
        self.iterations.back_to_application();
        Ok(self.comm_generation.take_changed())
    }

    /// Saves `state` now and commits the epoch before returning. Collective.
    fn commit_checkpoint_now<T: Serialize>(&mut self, state: &T) -> Result<(), MigrateError> {
        let with_outputs = WithOutputs {
            state,
            files: &self.outputs,
        };
        self.ckpt.save_now(&with_outputs)?;
        self.ckpt.finalize()?;
        Ok(())
    }

    /// Waits for the last checkpoint and writes the last records. Collective.
    pub fn finalize(&mut self) -> Result<(), MigrateError> {
        let _rankmig_traffic_is_not_counted = Paused::new();
        self.call_off_background_migration();
        if self.settings.run_dir.is_some() || monitor::export::matrix_out().is_some() {
            // Only rank 0 writes it: one row per rank to rank 0, not an all-gather.
            let gathered = monitor::gather::gather_matrix_at_root(
                &self.comm,
                Window::SinceStart,
                Traffic::All,
            );
            if let Some(matrix) = gathered {
                self.export_matrix(matrix);
            }
        }
        // The run directory's matrix is written whole before the job ends.
        self.matrix_file.finish();
        self.ckpt.finalize()?;
        let closed = self.outputs.close_all();
        self.flush_records();
        self.note_process("finish");
        self.finished = true;
        log::debug!(
            "rank {} finished: {} checkpoint calls, {} reconfigurations",
            self.comm.rank(),
            self.calls,
            self.reconfigurations
        );
        if self.comm_generation.count() > 0 && self.launcher().finalize_waits_for_departed_ranks() {
            crate::migrate::finalize::end_without_library_finalize(&self.comm);
        }
        closed?;
        Ok(())
    }

    /// The launcher of the implementation that runs this job, as it was started (its
    /// own launcher or `srun`).
    fn launcher(&self) -> &'static dyn Launcher {
        let mpi = self.settings.mpi.unwrap_or_default();
        crate::launcher::launcher_for(mpi, self.settings.launch_method)
    }

    /// At a start or an arrival: warns (and records) when this process is not on its
    /// planned host ([`binding::warn_if_not_on_planned_host`]), then binds it.
    fn check_host_and_bind(&self) {
        let rank = self.comm.rank() as usize;
        binding::warn_if_not_on_planned_host(&self.settings, &self.location, rank, self.launcher());
        self.bind();
    }

    /// Binds this process to the core of its planned location ([`binding::bind`]), by
    /// the availability the job follows now.
    fn bind(&self) {
        let (rank, ranks) = (self.comm.rank() as usize, self.comm.size() as usize);
        let (placement, view) = (self.placement.as_ref(), self.availability.view.as_ref());
        binding::bind(&self.settings, &self.location, placement, view, rank, ranks);
    }

    fn is_root(&self) -> bool {
        self.comm.rank() == 0
    }

    /// Writes the iteration records kept since the last check.
    fn flush_records(&mut self) {
        let rank = self.comm.rank() as usize;
        (self.iterations).flush(self.settings.run_dir.as_deref(), rank);
    }

    /// Appends this process's `event` to `processes.csv` ([`record::ProcessRow`]; cpus =
    /// the CPUs the process may run on, after binding).
    fn note_process(&self, event: &str) {
        self.note_process_row(event, None);
    }

    /// [`Job::note_process`] with the checkpoint epoch the process restored.
    fn note_process_row(&self, event: &str, epoch: Option<u64>) {
        let level = epoch.and(self.ckpt.restored_level()).map(|l| l.to_string());
        if let Some(dir) = &self.settings.run_dir {
            let cpus = monitor::location::allowed_cpus().unwrap_or_default();
            record::ProcessRow {
                rank: self.comm.rank() as usize,
                pid: std::process::id(),
                node: &self.location.node,
                core: Some(self.location.core),
                event,
                cpus: &cpus,
                epoch,
                iteration: Some(self.calls),
                level: level.as_deref(),
            }
            .append(dir);
        }
    }

    /// Rank 0 appends what happened at a reconfiguration point to the run directory.
    fn record(&self, o: Outcome<'_>) {
        if !self.is_root() {
            return;
        }
        let Some(dir) = &self.settings.run_dir else {
            return;
        };
        let r = o.reconfiguration(RecordedAt {
            index: self.changes,
            iteration: self.calls,
            at_seconds: self.started.elapsed().as_secs_f64(),
            nodes: (self.availability.view.as_ref()).map_or(0, |v| v.nodes().len()),
            live_bytes: self.live_bytes,
        });
        if let Err(e) = record::append_reconfiguration(dir, &r) {
            log::warn!(
                "cannot record the reconfiguration in {}: {e}",
                dir.display()
            );
        }
    }

    /// Rank 0 writes the matrix to `RANKMIG_MATRIX_OUT` if set (TreeMatch's format)
    /// and has it written to the run directory ([`Job::write_run_matrix`]).
    fn export_matrix(&mut self, matrix: CommMatrix) {
        if !self.is_root() {
            return;
        }
        if let Some(path) = monitor::export::matrix_out() {
            if let Err(e) = monitor::export_matrix(&matrix, &path) {
                log::warn!("{e}");
            }
        }
        self.write_run_matrix(matrix);
    }

    /// Rank 0 hands `matrix` to the thread that writes the run directory's
    /// [`record::MATRIX`] ([`matrix_file`]), in the format `--matrix-format` names (an
    /// edge list for `edges`, else TreeMatch's dense format), atomically: a reader sees
    /// the previous matrix or the new one whole. The text and the write are not made in
    /// the application's call.
    fn write_run_matrix(&mut self, matrix: CommMatrix) {
        let Some(dir) = &self.settings.run_dir else {
            return;
        };
        self.matrix_file.write(matrix_file::MatrixWrite {
            dir: dir.clone(),
            matrix,
            format: self.settings.matrix_format,
        });
        self.matrix_written = Some(Instant::now());
    }

    /// Rank 0, at an availability check: whether the run directory's matrix is to be
    /// written at this check (never written yet by this process, or
    /// [`MATRIX_EVERY`] ago). Carried to every rank with the check's broadcast.
    fn matrix_due(&self) -> bool {
        self.is_root()
            && self.settings.run_dir.is_some()
            && self
                .matrix_written
                .is_none_or(|t| t.elapsed() >= MATRIX_EVERY)
    }

    /// At a check whose broadcast said so (`due`, the same on every rank): the matrix
    /// gathered at rank 0 and written to the run directory. Collective.
    fn write_matrix_if(&mut self, due: bool) {
        if !due {
            return;
        }
        let gathered =
            monitor::gather::gather_matrix_at_root(&self.comm, Window::SinceStart, Traffic::All);
        if let Some(matrix) = gathered {
            self.write_run_matrix(matrix);
        }
    }
}

/// How often, at most, rank 0 writes the run directory's matrix at the availability
/// checks while the job runs (besides each availability change the job acts on and
/// the end): one gather of a row per rank to rank 0 in the application's call, the file
/// written by a thread of rank 0 beside it.
pub const MATRIX_EVERY: Duration = Duration::from_secs(5);

impl Drop for Job {
    /// A job dropped without [`Job::finalize`] notes its process's end (`end`), so that
    /// `rankmig run` counts this rank as ended.
    fn drop(&mut self) {
        // A replaced process never gets here (it leaves with _exit); after MPI_Finalize
        // (a C program ending without rankmig_finalize) MPI may not be called.
        if !self.finished && !mpi_finalized() {
            self.note_process("end");
        }
    }
}

/// True once `MPI_Finalize` has run in this process.
fn mpi_finalized() -> bool {
    let mut flag: std::ffi::c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time, also after MPI_Finalize.
    unsafe { mpi::ffi::MPI_Finalized(&mut flag) };
    flag != 0
}

/// The iteration mark of rank `rank` in `run_dir`, if the job has one.
fn iteration_mark(run_dir: Option<&std::path::Path>, rank: usize) -> Option<IterationMark> {
    IterationMark::open(&record::iteration_mark_file(run_dir?, rank))
}

/// What the job's watcher does with a host outside the allocation: allowed with
/// `--allow-new-hosts`, else refused with what would allow it, or why nothing can.
fn new_hosts_policy(settings: &JobSettings) -> NewHosts {
    let mpi = settings.mpi.unwrap_or_default();
    if settings.allow_new_hosts {
        return NewHosts::Allowed;
    }
    let why = if launcher(mpi).capabilities().add_hosts {
        format!(
            "rankmig run --allow-new-hosts lets {} start ranks on hosts outside the allocation",
            mpi.title()
        )
    } else {
        format!(
            "{} cannot start processes on a host outside those it was launched on",
            mpi.title()
        )
    };
    NewHosts::Refused { why }
}

/// The implementation `MPI_Get_library_version` names; the default implementation
/// when it names none this code knows.
fn implementation_of_library() -> MpiImplementation {
    let text = mpi::environment::library_version().unwrap_or_default();
    MpiImplementation::from_library_version(&text).unwrap_or_else(|| {
        let assumed = MpiImplementation::default();
        log::warn!(
            "MPI library {text:?} is not one rankmig knows; treating it as {}",
            assumed.title()
        );
        assumed
    })
}

/// A replacement process started by `rankmig run` for the request at `path`
/// ([`launch_request::ENV_JOIN`]): makes its state buffer ready (the request gives its
/// size); once every process of its launch has, the first says they are ready, and all
/// connect to old rank 0's port. Returns the intercommunicator with old rank 0 and the
/// buffer. Collective over `MPI_COMM_WORLD`.
fn join_launch(
    path: &std::path::Path,
) -> Result<(mpi::topology::InterCommunicator, StateBuffer), MigrateError> {
    let request = launch_request::read(path)?;
    let world = SimpleCommunicator::world();
    let size = usize::try_from(world.rank())
        .ok()
        .and_then(|i| request.state_sizes.get(i).copied());
    let buffer = size.map(protocol::state_buffer).unwrap_or_default();
    crate::migrate::timeline::step("new: state buffer ready");
    protocol::barrier_without_spinning(&world);
    if world.rank() == 0 {
        let run_dir = path.parent().unwrap_or(std::path::Path::new("."));
        launch_request::mark_ready(run_dir, &request.id)?;
    }
    crate::migrate::timeline::step("new: connecting to old rank 0");
    Ok((protocol::connect_to_job(&request.port)?, buffer))
}

/// Ends a replaced (or relaunched) process the way its implementation's launcher
/// expects ([`Departure`]): Open MPI's processes exit without `MPI_Finalize` (which
/// would wait for the whole job, or crash), the launch options allowing it; MPICH's
/// call a non-collective `MPI_Finalize` first (an exit without it ends the job).
///
/// MPICH 5.0's `MPI_Finalize` leaves the process manager's connection open: its
/// `PMI_Finalize` runs in an `atexit` handler (`MPIR_pmi_finalize_on_exit`), which
/// `_exit` skips. hydra's proxy then sees the PMI socket of a rank close without a
/// finalize and, unless it has already reaped that rank, SIGKILLs every process it
/// runs ("BAD TERMINATION ... EXIT CODE: 9" for a neighbour still leaving), and
/// `mpiexec` ends the job. So after `MPI_Finalize` the process ends with `exit`, which
/// runs the `atexit` handlers, called from a thread of its own: `exit` also runs the
/// calling thread's thread-local destructors, and this thread's (the C interface keeps
/// its job in one) would free communicators after `MPI_Finalize`.
pub(super) fn leave_now(departure: Departure) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    if departure == Departure::FinalizeThenExit {
        // SAFETY: MPI is initialised; the process exits right after, so no handle is
        // used again.
        unsafe { mpi::ffi::MPI_Finalize() };
        // SAFETY: exit(3) ends the process; this thread waits for it, its
        // thread-local values untouched.
        let exiting = std::thread::Builder::new()
            .name("rankmig-exit".into())
            .spawn(|| unsafe { libc::exit(0) });
        if exiting.is_ok() {
            loop {
                std::thread::park();
            }
        }
    }
    // _exit, not exit: exit would run thread-local destructors (the C interface keeps
    // its job in one), which free communicators. C's stdio buffers are flushed first.
    // SAFETY: fflush(NULL) flushes every C stream; _exit ends the process.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(0)
    }
}
