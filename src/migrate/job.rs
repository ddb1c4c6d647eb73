//! The runtime an application holds: its communicator, its checkpoints, and the
//! reconfiguration points where ranks migrate.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::availability::Availability;
use crate::checkpoint::{CheckpointConfig, CheckpointContext, Handover, Interval, MpiCollective};
use crate::matrix::{CommMatrix, MatrixFormat, SymGraph};
use crate::monitor::gather::broadcast_bytes;
use crate::monitor::{self, AvailabilityWatcher, Paused, Row, Traffic, WatchOutcome, Window};
use crate::planner::{Location, Placement, Plan, PlanOptions, plan};

use super::MigrateError;
use super::protocol::{self, OldRankOutcome};
use super::record::PhaseTimes;
use super::record::{self, IterationRecord, Reconfiguration};
use super::settings::JobSettings;

/// A rank of a job that may migrate.
///
/// ```no_run
/// use rankmig::checkpoint::CheckpointConfig;
/// use rankmig::migrate::Job;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let universe = mpi::initialize().ok_or("MPI")?;
/// let mut job = Job::init(universe.world(), CheckpointConfig::new("ckpt").with_env()?)?;
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
    next_check: u64,
    location: Location,
    view: Option<Availability>,
    watcher: Option<AvailabilityWatcher>,
    placement: Option<Placement>,
    arrived_state: Option<Vec<u8>>,
    reconfigurations: u64,
    changes: u64,
    started: Instant,
    last_end: Instant,
    pending_records: Vec<IterationRecord>,
}

/// Everything a new process needs from rank 0 to continue the replaced rank.
#[derive(Debug, Serialize, Deserialize)]
struct Assignment {
    rank: usize,
    location: Location,
    handover: Handover,
    checkpoint: CheckpointSettings,
    settings: JobSettings,
    calls: u64,
    next_check: u64,
    view: Option<Availability>,
    view_hash: u64,
    placement: Placement,
    reconfigurations: u64,
    changes: u64,
    elapsed: f64,
}

/// The parts of a [`CheckpointConfig`] a new process needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CheckpointSettings {
    dir: PathBuf,
    every_calls: Option<u64>,
    every_nanos: Option<u64>,
    keep: usize,
    job: String,
}

impl CheckpointSettings {
    fn of(c: &CheckpointConfig) -> Self {
        let (every_calls, every_nanos) = match c.interval {
            Interval::Calls(n) => (Some(n), None),
            Interval::Time(d) => (None, Some(d.as_nanos().min(u128::from(u64::MAX)) as u64)),
        };
        Self {
            dir: c.dir.clone(),
            every_calls,
            every_nanos,
            keep: c.keep,
            job: c.job.clone(),
        }
    }

    fn config(&self) -> CheckpointConfig {
        let config = CheckpointConfig::new(&self.dir)
            .keep(self.keep)
            .job(&self.job);
        match (self.every_calls, self.every_nanos) {
            (Some(n), _) => config.every(n),
            (None, Some(ns)) => config.every_duration(Duration::from_nanos(ns)),
            (None, None) => config,
        }
    }
}

impl Job {
    /// Starts the runtime. Collective over `world`. In a process spawned by a
    /// migration, joins the job in place of the rank it replaces (and `config` is
    /// replaced by the job's).
    pub fn init(world: SimpleCommunicator, config: CheckpointConfig) -> Result<Self, MigrateError> {
        if let Some(parent) = world.parent() {
            return Self::arrive(parent);
        }
        let settings = JobSettings::from_env();
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
                node: hostname(),
                core: rank,
            });
        let mut job = Self {
            next_check: settings.check_every,
            settings,
            comm: world,
            ckpt,
            ckpt_due: false,
            calls: 0,
            location,
            view: None,
            watcher: None,
            placement,
            arrived_state: None,
            reconfigurations: 0,
            changes: 0,
            started: Instant::now(),
            last_end: Instant::now(),
            pending_records: Vec::new(),
        };
        monitor::set_job_communicator(&job.comm, None);
        if let Some(path) = job.settings.availability.clone() {
            let mut watcher = AvailabilityWatcher::new(path);
            if let WatchOutcome::Changed { availability } = watcher.check(&job.comm) {
                job.view = Some(availability);
            }
            job.watcher = Some(watcher);
        }
        job.bind();
        job.note_process("start");
        Ok(job)
    }

    /// A new process: receive the assignment and state, join the new communicator.
    fn arrive(parent: mpi::topology::InterCommunicator) -> Result<Self, MigrateError> {
        let arrival = protocol::new_process_exchange(parent, |bytes| {
            let a: Assignment = serde_json::from_slice(bytes)?;
            Ok(a.rank)
        })?;
        let a: Assignment = serde_json::from_slice(&arrival.assignment)?;
        let coll = MpiCollective::new(&arrival.comm);
        let ckpt = CheckpointContext::adopt(a.checkpoint.config(), coll, &a.handover)?;
        // The state message carries the replaced rank's counters, then its state.
        let (row, state): (Option<Row>, Vec<u8>) =
            bincode::deserialize(&arrival.state).map_err(|e| MigrateError::State(e.to_string()))?;
        monitor::set_job_communicator(&arrival.comm, row);
        let watcher = a
            .settings
            .availability
            .clone()
            .map(|path| AvailabilityWatcher::resume(path, a.view_hash));
        let job = Self {
            settings: a.settings,
            comm: arrival.comm,
            ckpt,
            ckpt_due: false,
            calls: a.calls,
            next_check: a.next_check,
            location: a.location,
            view: a.view,
            watcher,
            placement: Some(a.placement),
            arrived_state: Some(state),
            reconfigurations: a.reconfigurations,
            changes: a.changes,
            started: Instant::now() - Duration::from_secs_f64(a.elapsed.max(0.0)),
            last_end: Instant::now(),
            pending_records: Vec::new(),
        };
        job.bind();
        job.note_process("arrived");
        Ok(job)
    }

    /// The communicator to use now. It changes when ranks migrate: take it again after
    /// every `checkpoint!`.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// This rank's logical location.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The checkpoint context (epochs, notes).
    pub fn checkpoints(&self) -> &CheckpointContext<MpiCollective> {
        &self.ckpt
    }

    /// The state: handed over by the rank this process replaces, restored from the
    /// newest valid checkpoint at a restart, or `fresh()`.
    pub fn restore_or<T, F>(&mut self, fresh: F) -> Result<T, MigrateError>
    where
        T: DeserializeOwned,
        F: FnOnce() -> T,
    {
        if let Some(bytes) = self.arrived_state.take() {
            return bincode::deserialize(&bytes).map_err(|e| MigrateError::State(e.to_string()));
        }
        let state = self.ckpt.restore_or(fresh)?;
        self.calls = self.ckpt.calls();
        self.next_check = (self.calls / self.settings.check_every + 1) * self.settings.check_every;
        Ok(state)
    }

    /// Counts a `checkpoint!` call; true when [`Job::event`] must run. Used by the macro.
    #[doc(hidden)]
    #[inline]
    pub fn tick(&mut self) -> bool {
        self.calls += 1;
        let now = Instant::now();
        if self.settings.run_dir.is_some() {
            self.pending_records.push(IterationRecord {
                iteration: self.calls,
                compute: (now - self.last_end).as_secs_f64(),
                scheduling: 0.0,
                migration: 0.0,
            });
        }
        self.last_end = now;
        self.ckpt_due = self.ckpt.tick();
        self.ckpt_due || (self.settings.migrates() && self.calls >= self.next_check)
    }

    /// The slow path of `checkpoint!`: a checkpoint save or check, and at every
    /// availability check a possible reconfiguration. Collective. A rank that is
    /// replaced does not return: its process exits.
    #[doc(hidden)]
    pub fn event<T: Serialize>(&mut self, state: &T) -> Result<(), MigrateError> {
        let _rankmig_traffic_is_not_counted = Paused::new();
        if self.ckpt_due {
            self.ckpt.event(state)?;
        }
        if self.settings.migrates() && self.calls >= self.next_check {
            self.next_check = self.calls + self.settings.check_every;
            self.reconfiguration_point(state)?;
            self.flush_records();
        }
        self.last_end = Instant::now();
        Ok(())
    }

    /// Waits for the last checkpoint and writes the last records. Collective.
    pub fn finalize(&mut self) -> Result<(), MigrateError> {
        let _rankmig_traffic_is_not_counted = Paused::new();
        if std::env::var_os("RANKMIG_MATRIX_OUT").is_some() {
            let matrix = monitor::gather_matrix(&self.comm, Window::SinceStart, Traffic::All);
            self.export_matrix(&matrix);
        }
        self.ckpt.finalize()?;
        self.flush_records();
        self.note_process("finish");
        Ok(())
    }

    fn is_root(&self) -> bool {
        self.comm.rank() == 0
    }

    fn flush_records(&mut self) {
        if let Some(dir) = &self.settings.run_dir {
            let rank = self.comm.rank() as usize;
            if let Err(e) = record::append_iterations(dir, rank, &self.pending_records) {
                eprintln!(
                    "rankmig: rank {rank}: cannot record iterations in {}: {e}",
                    dir.display()
                );
            }
        }
        self.pending_records.clear();
    }

    /// Appends `rank,pid,node,core,event,cpus` to `processes.csv` (cpus = the CPUs the
    /// process may run on, after binding).
    fn note_process(&self, event: &str) {
        if let Some(dir) = &self.settings.run_dir {
            let cpus = monitor::location::allowed_cpus().unwrap_or_default();
            let line = format!(
                "{},{},{},{},{event},{}",
                self.comm.rank(),
                std::process::id(),
                self.location.node,
                self.location.core,
                cpus.replace(',', ";")
            );
            let _ = record::append_line(&dir.join("processes.csv"), &line);
        }
    }

    /// Adds the time of a phase to the current iteration's record.
    fn charge(&mut self, scheduling: f64, migration: f64) {
        if let Some(last) = self.pending_records.last_mut() {
            last.scheduling += scheduling;
            last.migration += migration;
        }
    }

    /// Binds this process to the real core of its logical location (best effort: a
    /// failure is reported and the rank runs unbound).
    ///
    /// Not when the job has more ranks than this machine has CPUs: pinned ranks that
    /// busy-wait starve one another and Open MPI's runtime (a spawn then hung in 4 of 6
    /// runs here, 0 of 6 unpinned), so oversubscribed ranks are left to the scheduler,
    /// as Open MPI itself does. `RANKMIG_BIND=off` also disables binding.
    fn bind(&self) {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if std::env::var("RANKMIG_BIND").is_ok_and(|v| v == "off")
            || self.comm.size() as usize > cpus
        {
            return;
        }
        let Some(view) = &self.view else { return };
        let node_index = view
            .nodes()
            .iter()
            .position(|n| n.name == self.location.node)
            .unwrap_or(0);
        let cores = self.settings.cores_per_node.max(1);
        if let Err(e) = monitor::location::bind_logical_core(node_index, self.location.core, cores)
        {
            eprintln!("rankmig: rank {}: {e}", self.comm.rank());
        }
    }

    /// Checks the availability; plans and migrates when it changed.
    fn reconfiguration_point<T: Serialize>(&mut self, state: &T) -> Result<(), MigrateError> {
        let t0 = Instant::now();
        let comm = &self.comm;
        let seen = self
            .watcher
            .as_mut()
            .map_or(WatchOutcome::Unchanged, |w| w.check(comm));
        if !matches!(seen, WatchOutcome::Unchanged) {
            self.changes += 1;
        }
        let availability = match seen {
            WatchOutcome::Unchanged => {
                self.charge(t0.elapsed().as_secs_f64(), 0.0);
                return Ok(());
            }
            WatchOutcome::Refused { message } => {
                self.record(Outcome::refusal("refused", message, t0));
                return Ok(());
            }
            WatchOutcome::Changed { availability } => availability,
        };
        let placement = monitor::gather_placement(&self.comm, &self.location);
        let live = monitor::gather_matrix(&self.comm, Window::SinceStart, Traffic::All);
        self.export_matrix(&live);
        let planned = self.plan_on_root(&availability, &placement, &live);
        let plan = match planned {
            Ok(p) => p,
            Err(message) => {
                if self.is_root() {
                    eprintln!(
                        "rankmig: cannot plan for the new availability, the job keeps its placement: {message}"
                    );
                }
                self.record(Outcome::refusal("plan failed", message, t0));
                return Ok(());
            }
        };
        let scheduling = t0.elapsed().as_secs_f64();
        let change = self.view.as_ref().map_or_else(
            || "initial".to_owned(),
            |old| old.diff(&availability).to_string(),
        );
        self.view = Some(availability);
        if plan.moves.is_empty() {
            self.placement = Some(plan.placement.clone());
            self.record(Outcome::of_plan("no moves", &change, &plan, scheduling));
            return Ok(());
        }
        self.migrate(state, &plan, scheduling, &change)
    }

    /// Rank 0 plans; everyone receives the plan (or the reason there is none).
    fn plan_on_root(
        &self,
        availability: &Availability,
        placement: &Placement,
        live: &CommMatrix,
    ) -> Result<Plan, String> {
        let planned: Option<Result<Plan, String>> = self.is_root().then(|| {
            let graph = self.planning_graph(placement.len(), live)?;
            let node_tree =
                super::launch::logical_node_tree(availability, self.settings.cores_per_node)
                    .map_err(|e| e.to_string())?;
            plan(
                availability,
                placement,
                &graph,
                &node_tree,
                &PlanOptions::default(),
            )
            .map_err(|e| e.to_string())
        });
        let bytes =
            planned.map(|p| serde_json::to_vec(&p.map(PlanMessage::from)).unwrap_or_default());
        let bytes = broadcast_bytes(&self.comm, bytes);
        let message: Result<PlanMessage, String> =
            serde_json::from_slice(&bytes).map_err(|e| format!("plan message: {e}"))?;
        message.map(PlanMessage::into_plan)
    }

    /// The matrix file given to `rankmig run --matrix`, else the live counts.
    fn planning_graph(&self, ranks: usize, live: &CommMatrix) -> Result<SymGraph, String> {
        match &self.settings.matrix {
            Some(path) => {
                let m = CommMatrix::load(path, MatrixFormat::Auto).map_err(|e| e.to_string())?;
                if m.order() != ranks {
                    return Err(format!(
                        "{}: {} ranks, the job has {ranks}",
                        path.display(),
                        m.order()
                    ));
                }
                Ok(m.symmetric())
            }
            None => Ok(live.symmetric()),
        }
    }

    /// Rank 0 writes the matrix to `RANKMIG_MATRIX_OUT` (TreeMatch's format), if set.
    fn export_matrix(&self, matrix: &CommMatrix) {
        if !self.is_root() {
            return;
        }
        let Some(path) = std::env::var_os("RANKMIG_MATRIX_OUT").map(PathBuf::from) else {
            return;
        };
        if let Err(e) = monitor::export_matrix(matrix, &path) {
            eprintln!("rankmig: {e}");
        }
    }

    /// Carries out `plan`. Collective over the old communicator.
    fn migrate<T: Serialize>(
        &mut self,
        state: &T,
        plan: &Plan,
        scheduling: f64,
        change: &str,
    ) -> Result<(), MigrateError> {
        self.ckpt.finalize()?;
        let migration_start = Instant::now();
        let rank = self.comm.rank() as usize;
        let leavers: Vec<usize> = plan.moves.iter().map(|m| m.rank).collect();
        let leaving = leavers.contains(&rank);
        let state_bytes = if leaving {
            let state =
                bincode::serialize(state).map_err(|e| MigrateError::State(e.to_string()))?;
            let row = monitor::snapshot().map(|(total, _)| total);
            bincode::serialize(&(row, state)).map_err(|e| MigrateError::State(e.to_string()))?
        } else {
            Vec::new()
        };
        let assignments = if self.is_root() {
            self.assignments(plan)?
        } else {
            Vec::new()
        };
        let program = match &self.settings.spawn_program {
            Some(p) => p.display().to_string(),
            None => std::env::current_exe()?.display().to_string(),
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut phases = PhaseTimes::default();
        let inter = match protocol::spawn(&self.comm, &program, &args, leavers.len()) {
            Ok(inter) => inter,
            Err(e) => {
                let message = e.to_string();
                if self.is_root() {
                    eprintln!("rankmig: migration abandoned, every rank stays: {message}");
                }
                self.charge(scheduling, migration_start.elapsed().as_secs_f64());
                self.record(Outcome {
                    detail: Some(message),
                    ..Outcome::of_plan("spawn failed", change, plan, scheduling)
                });
                return Ok(());
            }
        };
        let mut largest_state = 0u64;
        self.comm.all_reduce_into(
            &(state_bytes.len() as u64),
            &mut largest_state,
            mpi::collective::SystemOperation::max(),
        );
        let largest_state = largest_state as usize;
        let outcome = protocol::old_ranks_exchange(
            &self.comm,
            inter,
            &leavers,
            &assignments,
            &state_bytes,
            &mut phases,
            migration_start,
        );
        self.charge(scheduling, migration_start.elapsed().as_secs_f64());
        // The old rank 0 measured every phase: it records, whether it stays or leaves.
        self.reconfigurations += 1;
        self.placement = Some(plan.placement.clone());
        self.record(Outcome {
            phases,
            state_bytes: largest_state,
            ..Outcome::of_plan("migrated", change, plan, scheduling)
        });
        if self.is_root() {
            if let Some(dir) = &self.settings.run_dir {
                let path = dir.join(format!("placement-{}.txt", self.reconfigurations));
                let _ = std::fs::write(path, plan.placement.to_text());
            }
        }
        match outcome {
            OldRankOutcome::Leave => {
                self.flush_records();
                self.note_process("left");
                leave_now()
            }
            OldRankOutcome::Stay(comm) => {
                self.comm = comm;
                self.ckpt.collective_mut().set_communicator(&self.comm);
                monitor::set_job_communicator(&self.comm, None);
                monitor::mark_reconfiguration();
                Ok(())
            }
        }
    }

    /// Rank 0: the messages for the new processes, in the order of the leavers.
    fn assignments(&self, plan: &Plan) -> Result<Vec<Vec<u8>>, MigrateError> {
        plan.moves
            .iter()
            .map(|m| {
                let a = Assignment {
                    rank: m.rank,
                    location: m.to.clone(),
                    handover: self.ckpt.handover(),
                    checkpoint: CheckpointSettings::of(self.ckpt.config()),
                    settings: self.settings.clone(),
                    calls: self.calls,
                    next_check: self.next_check,
                    view: self.view.clone(),
                    view_hash: self
                        .watcher
                        .as_ref()
                        .map_or(0, AvailabilityWatcher::last_hash),
                    placement: plan.placement.clone(),
                    reconfigurations: self.reconfigurations + 1,
                    changes: self.changes,
                    elapsed: self.started.elapsed().as_secs_f64(),
                };
                Ok(serde_json::to_vec(&a)?)
            })
            .collect()
    }

    /// Rank 0 appends what happened at a reconfiguration point to the run directory.
    fn record(&self, o: Outcome<'_>) {
        if !self.is_root() {
            return;
        }
        let Some(dir) = &self.settings.run_dir else {
            return;
        };
        let r = Reconfiguration {
            index: self.changes,
            iteration: self.calls,
            at_seconds: self.started.elapsed().as_secs_f64(),
            change: o.change,
            nodes: self.view.as_ref().map_or(0, |v| v.nodes().len()),
            outcome: o.outcome.to_owned(),
            detail: o.detail,
            moves: o.plan.map_or(0, |p| p.moves.len()),
            minimum_moves: o.plan.map_or(0, |p| p.minimum_moves),
            hop_bytes_before: o.plan.map_or(0.0, |p| p.hop_bytes_before),
            hop_bytes_after: o.plan.map_or(0.0, |p| p.hop_bytes_after),
            scheduling: o.scheduling,
            phases: o.phases,
            state_bytes: o.state_bytes,
        };
        if let Err(e) = record::append_reconfiguration(dir, &r) {
            eprintln!(
                "rankmig: cannot record the reconfiguration in {}: {e}",
                dir.display()
            );
        }
    }
}

/// What happened at one reconfiguration point, for the record.
struct Outcome<'a> {
    outcome: &'a str,
    detail: Option<String>,
    change: String,
    plan: Option<&'a Plan>,
    scheduling: f64,
    phases: PhaseTimes,
    state_bytes: usize,
}

impl<'a> Outcome<'a> {
    /// An edit or a plan refused: the job keeps its placement.
    fn refusal(outcome: &'a str, message: String, since: Instant) -> Self {
        Self {
            outcome,
            change: message.clone(),
            detail: Some(message),
            plan: None,
            scheduling: since.elapsed().as_secs_f64(),
            phases: PhaseTimes::default(),
            state_bytes: 0,
        }
    }

    /// A plan was made for `change`.
    fn of_plan(outcome: &'a str, change: &str, plan: &'a Plan, scheduling: f64) -> Self {
        Self {
            outcome,
            detail: None,
            change: change.to_owned(),
            plan: Some(plan),
            scheduling,
            phases: PhaseTimes::default(),
            state_bytes: 0,
        }
    }
}

/// A plan as broadcast (the plan itself is serialisable; this keeps the wire format
/// in one place).
#[derive(Debug, Serialize, Deserialize)]
struct PlanMessage {
    moves: Vec<(usize, Location, Location)>,
    placement: Placement,
    minimum_moves: usize,
    hop_bytes_before: f64,
    hop_bytes_after: f64,
}

impl From<Plan> for PlanMessage {
    fn from(p: Plan) -> Self {
        Self {
            moves: p
                .moves
                .into_iter()
                .map(|m| (m.rank, m.from, m.to))
                .collect(),
            placement: p.placement,
            minimum_moves: p.minimum_moves,
            hop_bytes_before: p.hop_bytes_before,
            hop_bytes_after: p.hop_bytes_after,
        }
    }
}

impl PlanMessage {
    fn into_plan(self) -> Plan {
        Plan {
            moves: self
                .moves
                .into_iter()
                .map(|(rank, from, to)| crate::planner::Move { rank, from, to })
                .collect(),
            placement: self.placement,
            minimum_moves: self.minimum_moves,
            hop_bytes_before: self.hop_bytes_before,
            hop_bytes_after: self.hop_bytes_after,
            nodes: Default::default(),
        }
    }
}

/// Ends a replaced process: MPI is not finalized (an early `MPI_Finalize` would wait
/// for the whole job); the launcher allows this exit.
fn leave_now() -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::process::exit(0)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".to_owned())
}
