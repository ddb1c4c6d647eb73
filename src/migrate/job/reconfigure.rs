//! The reconfiguration decision: at an availability check, whether the job moves and
//! where, planned on rank 0 and agreed by every rank.

use std::time::Instant;

use mpi::traits::{Communicator, CommunicatorCollectives};
use serde::{Deserialize, Serialize};

use crate::availability::Availability;
use crate::matrix::{CommMatrix, SymGraph};
use crate::monitor::gather::broadcast_bytes;
use crate::monitor::{self, Traffic, WatchOutcome, Window};
use crate::planner::{Location, NodeTrees, Placement, Plan, PlanOptions, RankSlots, plan_on};
use crate::topology::{LeafKind, TopologySpec, Tree};

use super::contention::{self, Decision};
use super::migration::Migration;
use super::outcome::Outcome;
use super::{Job, MigrateError};

impl Job {
    /// Checks the availability; plans and migrates when it changed, or when rank 0's
    /// contention watch found a node to leave ([`crate::contention`]).
    pub(super) fn reconfiguration_point<T: Serialize>(
        &mut self,
        state: &T,
    ) -> Result<(), MigrateError> {
        // The checkpoint communicator's duplicate, if a migration left it in progress,
        // is complete before anything else can start one (a rank that leaves must not
        // leave it unfinished).
        self.ckpt.collective().communicator();
        if self.pending.is_some() {
            if self.advance_background_spawn(state)? {
                return self.join_background_migration(state);
            }
            return Ok(());
        }
        let t0 = Instant::now();
        // The content followed so far, to go back to should a migration be refused (its
        // view is kept below, when it is replaced: nothing is copied at each check).
        let hash_before = self.availability.last_hash();
        let (seen, contention, matrix_due) = self.check_with_decisions();
        if !matches!(seen, WatchOutcome::Unchanged) || contention.is_some() {
            self.changes += 1;
        }
        let availability = match seen {
            WatchOutcome::Changed { availability } => availability,
            WatchOutcome::Refused { message } => {
                self.write_matrix_if(matrix_due);
                self.record(Outcome::refusal("refused", message, t0));
                return Ok(());
            }
            // The contention watch asks for a plan while the file is unchanged: made
            // for the availability followed (lowered for planning on rank 0).
            WatchOutcome::Unchanged => {
                match (self.availability.view.as_ref()).filter(|_| contention.is_some()) {
                    Some(view) => view.clone(),
                    None => {
                        self.write_matrix_if(matrix_due);
                        self.iterations.charge(t0.elapsed().as_secs_f64(), 0.0);
                        return Ok(());
                    }
                }
            }
        };
        crate::migrate::timeline::step("availability change seen");
        let placement = monitor::gather_placement(&self.comm, &self.location);
        let generations = self.note_generations(&placement);
        let live = monitor::gather_matrix(&self.comm, Window::SinceStart, Traffic::All);
        self.export_matrix(live.clone());
        self.live_bytes = self.settings.matrix.is_none().then(|| live.total());
        let host_trees = if self.settings.multi_host() && self.settings.node_topology.is_none() {
            super::host_trees::gather_host_trees(
                &self.comm,
                &placement,
                self.settings.cache_levels(),
            )
        } else {
            Vec::new()
        };
        let planning = match self.is_root() {
            true => contention::planning_availability(
                &self.contention,
                &availability,
                self.settings.cores_per_rank,
            ),
            false => availability.clone(),
        };
        let planned = self.plan_on_root(&planning, &placement, &live, host_trees);
        let plan = match planned {
            Ok(p) => p,
            Err(message) => {
                if self.is_root() {
                    log::warn!(
                        "cannot plan for the new availability, the job keeps its placement: {message}"
                    );
                }
                self.record(Outcome::refusal("plan failed", message, t0));
                return Ok(());
            }
        };
        let scheduling = t0.elapsed().as_secs_f64();
        crate::migrate::timeline::step("plan made");
        let change = match (&contention, &self.availability.view) {
            (Some(why), Some(old)) if *old == availability => why.clone(),
            (Some(why), Some(old)) => format!("{why}; {}", old.diff(&availability)),
            (_, None) => "initial".to_owned(),
            (None, Some(old)) => old.diff(&availability).to_string(),
        };
        let before = self.availability.follow(availability, hash_before);
        let migration = Migration {
            plan,
            scheduling,
            change,
            before,
        };
        if migration.plan.moves.is_empty() {
            self.placement = Some(migration.plan.placement.clone());
            // The nodes' places in the availability may have changed.
            self.bind();
            self.record(migration.outcome("no moves"));
            return Ok(());
        }
        if let Some(why) = self.spawn_refused(&migration.plan, &placement, generations.as_deref()) {
            return self.relaunch(state, &migration, why);
        }
        self.carry_out(state, migration)
    }

    /// At a check: the pacing exchange, before which every rank's waits (and each
    /// node's CPU pressure, read by its lowest rank) are gathered to rank 0 when the
    /// contention watch is on (only rank 0 judges them). This rank's wait share, and
    /// the node's pressure share where it read it, go into its iteration record; rank 0
    /// adds every rank's samples to its window. Collective.
    pub(super) fn pace_and_gather_waits(&mut self) {
        let Some(waits) = self.waits.as_mut() else {
            self.pacer.after_check(&self.comm, self.calls);
            return;
        };
        let rank = self.comm.rank() as usize;
        let reads_pressure = contention::reads_node_pressure(rank, self.placement.as_ref());
        let mine = contention::sample(waits, &mut self.pressure, reads_pressure, &mut self.busy);
        let all = (self.pacer).after_check_gathering(&self.comm, self.calls, mine);
        // A rank whose kernel gives no run-queue delay measured nothing (zero wall
        // time): its row leaves the share empty rather than writing 0.
        let share = (mine.wait.wall_ns > 0).then(|| mine.wait.share());
        self.iterations
            .note_wait_share(share, mine.pressure.map(|p| p.share()));
        if let Some(all) = all {
            self.contention.add_checks(&all);
        }
    }

    /// Rank 0, at a check: the contention watch's decision ([`contention::decide`]). A
    /// node to leave is returned (the reason), to be announced with the availability
    /// broadcast; a decision that moves nothing is recorded here. `None` on the other
    /// ranks, and without the watch.
    fn contention_decision(&mut self) -> Option<String> {
        if !self.is_root() || self.waits.is_none() {
            return None;
        }
        let now = self.started.elapsed().as_secs_f64();
        let job = (self.placement.as_ref(), self.availability.view.as_ref());
        match contention::decide(&mut self.contention, &self.settings, now, job) {
            Decision::Quiet => None,
            Decision::Move(why) => Some(why),
            Decision::Record { outcome, why } => {
                self.changes += 1;
                self.record(Outcome {
                    change: why,
                    detail: None,
                    ..Outcome::refusal(outcome, String::new(), Instant::now())
                });
                None
            }
        }
    }

    /// Rank 0 with the contention watch on: which rank reads which CPUs for the
    /// watch's caps ([`contention::busy_readers`]); empty elsewhere.
    fn busy_readers(&mut self) -> Vec<(usize, Vec<usize>)> {
        if !self.is_root() || self.waits.is_none() {
            return Vec::new();
        }
        contention::busy_readers(
            &mut self.contention,
            &self.settings,
            self.placement.as_ref(),
        )
    }

    /// The check's broadcast of what rank 0 saw in the availability file, carrying rank
    /// 0's decisions: the contention watch's node to leave, whether the matrix is
    /// written at this check, and which ranks read the CPUs the watch took ranks off
    /// (which this rank then follows). Collective.
    fn check_with_decisions(&mut self) -> (WatchOutcome, Option<String>, bool) {
        let note = (
            self.contention_decision(),
            self.matrix_due(),
            self.busy_readers(),
        );
        let (seen, note) = match self.availability.watcher.as_mut() {
            Some(w) => w.check_carrying(&self.comm, Some(note)),
            None => (WatchOutcome::Unchanged, None),
        };
        let (contention, matrix_due, readers) = note.unwrap_or((None, false, Vec::new()));
        self.follow_busy_readers(&readers);
        (seen, contention, matrix_due)
    }

    /// With the contention watch on: this rank reads the CPUs rank 0 gave it in
    /// `readers`, or none ([`contention::follow_readers`]).
    fn follow_busy_readers(&mut self, readers: &[(usize, Vec<usize>)]) {
        if self.waits.is_some() {
            let rank = self.comm.rank() as usize;
            contention::follow_readers(&mut self.busy, readers, rank);
        }
    }

    /// Why the implementation cannot carry `plan` out by spawning, if it cannot: a
    /// target host whose daemon forgot a launch that still runs (see [`super::history`];
    /// `generations` is `None` outside multi-host mode), or, in multi-host mode, an
    /// implementation whose spawns fail when several daemons manage the job
    /// ([`crate::launcher::Capabilities::spawn_across_daemons`]). The job then
    /// relaunches from a checkpoint instead.
    fn spawn_refused(
        &self,
        plan: &Plan,
        placement: &Placement,
        generations: Option<&[u32]>,
    ) -> Option<String> {
        let capabilities = self.launcher().capabilities();
        let title = self.launcher().implementation().title();
        if let (false, Some(generations)) = (capabilities.spawn_onto_left_host, generations) {
            let targets = plan.moves.iter().map(|m| m.to.node.as_str());
            let hazards = self
                .lineage
                .history
                .hazards(placement, generations, targets);
            if let Some(hazard) = hazards.first() {
                return Some(format!("{title} {hazard}"));
            }
        }
        if !capabilities.spawn
            && (self.blocking_spawn_reason().is_some() || self.replacement_launch_dir().is_none())
        {
            return Some(format!(
                "the ranks were started by srun, whose process management does not serve MPI_Comm_spawn, and {title}'s replacements cannot join the job as a new step here ({})",
                self.blocking_spawn_reason()
                    .unwrap_or_else(|| format!("{title} cannot join a separate launch"))
            ));
        }
        if !capabilities.spawn_across_daemons && self.settings.multi_host() {
            return Some(format!(
                "{title} cannot spawn processes while the job runs under one runtime daemon per host (its spawns crash a daemon when several are involved)"
            ));
        }
        None
    }

    /// Multi-host mode: the generation of every rank's process (on every rank), noted in
    /// the spawn history with where they run. Collective. Logical nodes share one
    /// daemon, which never forgets a launch that still runs: `None`.
    fn note_generations(&mut self, placement: &Placement) -> Option<Vec<u32>> {
        if !self.settings.multi_host() {
            return None;
        }
        let mut all = vec![0u32; self.comm.size() as usize];
        self.comm
            .all_gather_into(&self.lineage.generation, &mut all[..]);
        self.lineage.history.record(placement, &all);
        Some(all)
    }

    /// Instead of spawning (which would abort the job or crash a daemon, see
    /// [`Job::spawn_refused`]): a checkpoint of every rank now, a request to `rankmig run` to launch the job again
    /// from it with a placement for the current availability, and every process ends.
    /// Collective.
    fn relaunch<T: Serialize>(
        &mut self,
        state: &T,
        migration: &Migration,
        why: String,
    ) -> Result<(), MigrateError> {
        if self.is_root() {
            log::warn!("{why}: the job restarts from a checkpoint taken now instead");
        }
        self.commit_checkpoint_now(state)?;
        self.record(Outcome {
            detail: Some(why.clone()),
            ..migration.outcome("relaunch")
        });
        if let (true, Some(dir)) = (self.is_root(), &self.settings.run_dir) {
            crate::run_dir::record::request_relaunch(dir, &why);
        }
        self.comm.barrier();
        self.flush_records();
        self.matrix_file.finish();
        self.note_process("relaunch");
        super::leave_now(self.launcher().departure())
    }

    /// Rank 0 plans; everyone receives the plan (or the reason there is none).
    pub(super) fn plan_on_root(
        &self,
        availability: &Availability,
        placement: &Placement,
        live: &CommMatrix,
        host_trees: Vec<(String, Tree)>,
    ) -> Result<Plan, String> {
        // Planning that fails for any reason, a bug included, is a refusal: the job
        // keeps its placement.
        let planned: Option<Result<Plan, String>> = self.is_root().then(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let graph = self.planning_graph(placement.len(), live)?;
                let cores_tree = self.planning_tree(availability)?;
                // Ranks of several cores: nodes and trees counted in rank slots.
                let slots = RankSlots::new(self.settings.cores_per_rank);
                let in_ranks = slots
                    .availability(availability, &|node| {
                        (host_trees.iter())
                            .find(|(host, _)| host == node)
                            .map_or(&cores_tree, |(_, tree)| tree)
                    })
                    .map_err(|e| e.to_string())?;
                let node_tree = slots.tree(&cores_tree).map_err(|e| e.to_string())?;
                let mut trees = NodeTrees::uniform(&node_tree);
                for (host, tree) in &host_trees {
                    trees = trees.with_node(host, slots.tree(tree).map_err(|e| e.to_string())?);
                }
                plan_on(
                    &in_ranks,
                    placement,
                    &graph,
                    &trees,
                    &PlanOptions::default(),
                )
                .map_err(|e| e.to_string())
            }))
            .unwrap_or_else(|_| Err("the planner failed (a bug: please report it)".into()))
        });
        let bytes =
            planned.map(|p| serde_json::to_vec(&p.map(PlanMessage::from)).unwrap_or_default());
        let bytes = broadcast_bytes(&self.comm, bytes);
        let message: Result<PlanMessage, String> =
            serde_json::from_slice(&bytes).map_err(|e| format!("plan message: {e}"))?;
        message.map(PlanMessage::into_plan)
    }

    /// The default tree of a node: `--node-topology`, else (multi-host mode) the live
    /// tree of this rank's host (used for hosts whose own tree was not gathered), else a
    /// flat logical node.
    fn planning_tree(&self, availability: &Availability) -> Result<Tree, String> {
        let loaded = match &self.settings.node_topology {
            Some(spec) => spec
                .parse::<TopologySpec>()
                .and_then(|t| t.load_with(LeafKind::Core, self.settings.cache_levels())),
            None if self.settings.multi_host() => {
                TopologySpec::Live.load_with(LeafKind::Core, self.settings.cache_levels())
            }
            None => crate::planner::logical_node_tree(availability, self.settings.cores_per_node),
        };
        loaded.map_err(|e| e.to_string())
    }

    /// The matrix file given to `rankmig run --matrix`, else the live counts.
    pub(super) fn planning_graph(
        &self,
        ranks: usize,
        live: &CommMatrix,
    ) -> Result<SymGraph, String> {
        match &self.settings.matrix {
            Some(path) => {
                let m = CommMatrix::load(path, self.settings.matrix_format)
                    .map_err(|e| e.to_string())?;
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
}

/// A plan as broadcast (the plan itself is serialisable; this keeps the wire format
/// in one place).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct PlanMessage {
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
    pub(super) fn into_plan(self) -> Plan {
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
