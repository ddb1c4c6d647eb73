//! Which launches ("generations") of the job have had processes on which host, to
//! steer clear of a limit on spawning of Open MPI 4.1 and 5 (an implementation whose
//! launcher has [`crate::launcher::Capabilities::spawn_onto_left_host`] skips this).
//!
//! Every `MPI_Comm_spawn` creates a new Open MPI job: generation 0 is the job `mpirun`
//! started, generation *k* the processes spawned by the *k*-th migration. Found with
//! Open MPI 4.1.4 on the emulated cluster: once every process of generation *g* has
//! left a host, that host's daemon no longer knows *g*; a process spawned there later
//! fails in `MPI_Init` ("ORTE_ERROR_LOG: Not supported in file
//! orte/orted/pmix/pmix_server_dyn.c at line 700", `ompi_dpm_dyn_init() failed`) as
//! long as a process of *g* still runs elsewhere, because it must connect to it, and
//! the whole job aborts. Reproduced with 8 ranks: h1..h4 → h3,h4 to h5 → h2 to h5 →
//! back to h2: the spawn on h2 failed, h2 having run generation-0 ranks that left while
//! generation 0 still ran on h1.
//!
//! [`SpawnHistory::hazards`] names such hosts before a migration; the job then restarts
//! from a checkpoint instead of spawning (fresh daemons know every job).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::planner::Placement;

/// The generations that have had a process on each host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnHistory {
    by_host: BTreeMap<String, BTreeSet<u32>>,
}

/// This process's place among the job's launches ("generations"): its own, how many
/// there have been, and where each has run.
#[derive(Debug, Clone)]
pub(super) struct Lineage {
    /// The launch this process belongs to: 0 = started by `mpirun`, k = spawned by the
    /// k-th spawning migration.
    pub(super) generation: u32,
    /// Generations created so far (the next spawn is generation `generations`).
    pub(super) generations: u32,
    /// Where each generation has run (multi-host mode).
    pub(super) history: SpawnHistory,
}

impl Lineage {
    /// A process started by `mpirun`: generation 0, the only one so far.
    pub(super) fn first() -> Self {
        Self {
            generation: 0,
            generations: 1,
            history: SpawnHistory::default(),
        }
    }

    /// A process of generation `generation` (the latest), with the history handed over.
    pub(super) fn arrived(generation: u32, history: SpawnHistory) -> Self {
        Self {
            generation,
            generations: generation + 1,
            history,
        }
    }

    /// The history once the next generation runs on `hosts`.
    pub(super) fn history_after<'a>(
        &self,
        hosts: impl IntoIterator<Item = &'a str>,
    ) -> SpawnHistory {
        let mut history = self.history.clone();
        history.record_spawn(hosts, self.generations);
        history
    }

    /// The next generation has been spawned; `history` says where it runs.
    pub(super) fn spawned(&mut self, history: SpawnHistory) {
        self.history = history;
        self.generations += 1;
    }
}

/// A host a spawn must avoid, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnHazard {
    /// The target host.
    pub host: String,
    /// A generation that ran there, has left it, and still runs elsewhere.
    pub generation: u32,
}

impl std::fmt::Display for SpawnHazard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot start processes on {}: its daemon forgot launch {} of the job when that launch's processes left it, and they still run elsewhere",
            self.host, self.generation
        )
    }
}

impl SpawnHistory {
    /// Notes that the processes of `placement`, of the generations `generations` (one per
    /// rank), run where the placement says.
    pub fn record(&mut self, placement: &Placement, generations: &[u32]) {
        for (location, &g) in placement.locations().iter().zip(generations) {
            self.note(&location.node, g);
        }
    }

    /// Notes that generation `generation` is spawned onto `hosts`.
    pub fn record_spawn<'a>(&mut self, hosts: impl IntoIterator<Item = &'a str>, generation: u32) {
        for host in hosts {
            self.note(host, generation);
        }
    }

    fn note(&mut self, host: &str, generation: u32) {
        self.by_host
            .entry(host.to_owned())
            .or_default()
            .insert(generation);
    }

    /// Target hosts of `targets` a spawn would fail on, given where the current
    /// processes run (`placement`) and their generations.
    ///
    /// ```
    /// use rankmig::migrate::job::history::SpawnHistory;
    /// use rankmig::planner::{Location, Placement};
    /// let at = |n: &[&str]| Placement::new(n.iter().map(|n| Location { node: (*n).into(), core: 0 }).collect());
    /// let mut h = SpawnHistory::default();
    /// h.record(&at(&["h1", "h2"]), &[0, 0]);
    /// // rank 1 moved from h2 to h5 as generation 1; rank 0 (generation 0) stays on h1
    /// h.record(&at(&["h1", "h5"]), &[0, 1]);
    /// let now = at(&["h1", "h5"]);
    /// let hazards = h.hazards(&now, &[0, 1], ["h2", "h3"]);
    /// assert_eq!(hazards.len(), 1);
    /// assert_eq!((hazards[0].host.as_str(), hazards[0].generation), ("h2", 0));
    /// ```
    pub fn hazards<'a>(
        &self,
        placement: &Placement,
        generations: &[u32],
        targets: impl IntoIterator<Item = &'a str>,
    ) -> Vec<SpawnHazard> {
        let alive: BTreeSet<u32> = generations.iter().copied().collect();
        let mut out = Vec::new();
        for host in targets.into_iter().collect::<BTreeSet<_>>() {
            let Some(ran) = self.by_host.get(host) else {
                continue;
            };
            let here: BTreeSet<u32> = placement
                .locations()
                .iter()
                .zip(generations)
                .filter(|(l, _)| l.node == host)
                .map(|(_, &g)| g)
                .collect();
            if let Some(&generation) = ran.iter().find(|g| alive.contains(g) && !here.contains(g)) {
                out.push(SpawnHazard {
                    host: host.to_owned(),
                    generation,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::Location;

    fn at(nodes: &[&str]) -> Placement {
        Placement::new(
            nodes
                .iter()
                .map(|n| Location {
                    node: (*n).into(),
                    core: 0,
                })
                .collect(),
        )
    }

    #[test]
    fn the_demo_step_that_failed_is_a_hazard_and_the_ones_that_worked_are_not() {
        let mut h = SpawnHistory::default();
        // generation 0 on h1..h4; h3, h4 → h5 (generation 1)
        h.record(&at(&["h1", "h2", "h3", "h4"]), &[0, 0, 0, 0]);
        let step1 = at(&["h1", "h2", "h5", "h5"]);
        h.record(&step1, &[0, 0, 1, 1]);
        // spawning onto h5 (new) was fine
        assert!(h.hazards(&step1, &[0, 0, 1, 1], ["h5"]).is_empty());
        // h2 → h5 (generation 2): h2 forgets generation 0, which runs on h1
        let step2 = at(&["h1", "h5", "h5", "h5"]);
        h.record(&step2, &[0, 2, 1, 1]);
        let hazards = h.hazards(&step2, &[0, 2, 1, 1], ["h2"]);
        assert_eq!(hazards.len(), 1);
        assert_eq!(hazards[0].generation, 0);
        // once generation 0 is gone everywhere, h2 is safe again
        let later = at(&["h5", "h5", "h5", "h5"]);
        h.record(&later, &[3, 2, 1, 1]);
        assert!(h.hazards(&later, &[3, 2, 1, 1], ["h2"]).is_empty());
        // h3 ran generation 0 only: safe; a host never used: safe
        assert!(h.hazards(&later, &[3, 2, 1, 1], ["h3", "h9"]).is_empty());
    }
}
