//! Open MPI 5 and its PRRTE runtime (`mpirun`), as in Open MPI 5.0.11 from PyPI.
//!
//! Facts this launcher relies on, checked on an emulated cluster:
//! - Rank *i* starts on its planned host with one application context per run of
//!   consecutive ranks on one host (`-np 2 --host h2:2 PROGRAM : ...`), under the
//!   default mapper: `--map-by seq` together with later spawns crashed a `prted` in
//!   `libpmix` in 3 runs of 4. The hostfile lists every host of the allocation, so that
//!   PRRTE starts a daemon on each, and gives each host as many slots as the job has
//!   ranks (a spawn beyond a host's slots fails).
//! - `rmaps_base_oversubscribe` is ignored: a spawn names its host with the process
//!   count (`host=h3:2`), and logical nodes on one host map with `:OVERSUBSCRIBE`.
//! - A migration needs `--with-ft ulfm`: without it a replaced rank's exit ends the job
//!   ("Socket closed ... MPI_ERRORS_ARE_FATAL"). `async_mpi_finalize` is still needed
//!   (without it 4 runs of 4 hung in `MPI_Finalize`). A replaced rank that calls
//!   `MPI_Finalize` crashes: it exits without it.
//! - A spawn back onto a host that a still-running launch has left fails, as with Open
//!   MPI 4.1 ([`Capabilities::spawn_onto_left_host`] is false).
//! - The application contexts' `--host` options make the job's allocation: a spawn
//!   onto another host of the hostfile fails ("All nodes which are allocated for this
//!   job are already filled"), also with `map_by :OVERSUBSCRIBE` in its info (refused:
//!   "Conflicting directives"). Every spawn therefore adds its target host
//!   (`PMIX_ADD_HOST=HOST:COUNT`), which also reaches hosts outside the hostfile.
//! - No spawn works when more than one `prted` takes part (multi-host mode,
//!   [`Capabilities::spawn_across_daemons`] is false): PRRTE 3.0.14's connect step of
//!   `MPI_Comm_spawn` corrupts a `prted`'s heap (`connect_release()` in
//!   `src/prted/pmix/pmix_server_dyn.c` destructs `info[1]` of a one-element array; the
//!   crash follows in `dmodex_req`, `pmix_server_fence.c`), found with valgrind and
//!   cores. Multi-host spawns succeeded in 0 runs of 3 (4 or 8 ranks, any target host,
//!   rankfile or `--host`, with or without `PMIX_ADD_HOST`; earlier: "PRTE has lost
//!   communication with a remote daemon", also with `routed direct` or
//!   `PMIX_MCA_gds=hash`). A migration in multi-host mode therefore relaunches the job
//!   from a checkpoint, placed for the new availability (hosts outside the hostfile
//!   included, with `--allow-new-hosts`). With a single daemon (logical nodes of this
//!   host) spawns work and ranks migrate live.
//! - The agent is `PRTE_MCA_plm_ssh_agent` (`OMPI_MCA_plm_rsh_agent` is ignored).
//!   Loopback cannot carry PRRTE's out-of-band channel; the default interface works.
//! - When a host's daemon is lost mid-run, `prterun` prints "A daemon failed to report
//!   back" with the host on a line `Remote host: HOST`, and exits 0 (5.0.11).
//! - With the `ofi` transport a spawn on one host took 1.1 to 1.5 s, 0.15 to 0.3 s
//!   without it: an emulated cluster leaves `ofi` out.

use std::fmt::Write as _;
use std::process::Command;

use super::{
    Capabilities, Departure, FailureClue, JobLaunch, Launcher, MpiImplementation, host_after,
    host_runs, open_mpi_lost_host, owned_pairs, running_as_root,
};
use crate::planner::Placement;

/// Open MPI 5 (PRRTE).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenMpi5;

/// The variable naming PRRTE's ssh agent.
const AGENT_VARIABLE: &str = "PRTE_MCA_plm_ssh_agent";
/// PRRTE's extra options for the `srun` that starts its daemons inside a Slurm job.
const SLURM_SRUN_ARGS_VARIABLE: &str = "PRTE_MCA_plm_slurm_args";

/// The PMIx variable giving a process its rank in its launch (PRRTE, and srun's pmix).
pub const PMIX_RANK_VARIABLE: &str = "PMIX_RANK";

impl Launcher for OpenMpi5 {
    fn implementation(&self) -> MpiImplementation {
        MpiImplementation::OpenMpi5
    }

    fn program(&self) -> &'static str {
        "mpirun"
    }

    /// Every host of the allocation once, each with as many slots as the job has ranks:
    /// a later spawn onto a host beyond its slots fails ("All nodes which are allocated
    /// for this job are already filled"), and a host never runs more ranks than that.
    ///
    /// ```
    /// use rankmig::launcher::{Launcher, openmpi5::OpenMpi5};
    /// use rankmig::planner::{Location, Placement};
    /// let at = |n: &[&str]| Placement::new(n.iter().map(|n| Location { node: (*n).into(), core: 0 }).collect());
    /// let hosts = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
    /// assert_eq!(OpenMpi5.hostfile(&at(&["b", "a", "b"]), &hosts), "a slots=3\nb slots=3\nc slots=3\n");
    /// ```
    fn hostfile(&self, placement: &Placement, hosts: &[String]) -> String {
        let mut out = String::new();
        for h in hosts {
            let _ = writeln!(out, "{h} slots={}", placement.len());
        }
        out
    }

    /// `mpirun`: as root if need be, ULFM on, asynchronous finalize, no binding, each
    /// variable with `-x`, the user's options, then one application context per run of
    /// ranks on one host (multi-host, oversubscription allowed) or all ranks
    /// oversubscribed on this host.
    fn command(&self, job: &JobLaunch<'_>) -> Command {
        let mut cmd = Command::new(self.program());
        if running_as_root() {
            cmd.arg("--allow-run-as-root");
        }
        cmd.args(["--bind-to", "none"])
            .args(["--with-ft", "ulfm"])
            .args(["--mca", "async_mpi_finalize", "1"]);
        for (k, v) in job.env {
            cmd.env(k, v).args(["-x", k]);
        }
        cmd.args(job.user_args);
        match job.hostfile {
            Some(hostfile) => {
                // A plan may put more ranks on a host than it has slots (the rank
                // count stays when hosts go): inside a Slurm job PRRTE counts the
                // job's CPUs per node as slots and refused 4 ranks on a node of 3
                // ("Out of resource") without this.
                cmd.args(["--map-by", ":OVERSUBSCRIBE"])
                    .arg("--hostfile")
                    .arg(hostfile);
                for (i, (host, count)) in host_runs(job.placement).into_iter().enumerate() {
                    if i > 0 {
                        cmd.arg(":");
                    }
                    // The host's slots: as many as the job has ranks, for later spawns.
                    cmd.args(["-np", &count.to_string()])
                        .args(["--host", &format!("{host}:{}", job.placement.len())])
                        .args(job.program);
                }
            }
            None => {
                cmd.args(["--map-by", ":OVERSUBSCRIBE"])
                    .args(["-np", &job.placement.len().to_string()])
                    .args(job.program);
            }
        }
        cmd
    }

    /// PRRTE's `plm_slurm_args`.
    fn slurm_srun_args_variable(&self) -> &'static str {
        SLURM_SRUN_ARGS_VARIABLE
    }

    /// `--prtemca plm_slurm_args VALUE` (from `vars`, else from this process's
    /// environment): prterun 3.0.14 ignores that parameter in its
    /// environment (its `srun` line had no `--overlap`, and the relaunch after a node
    /// failure waited for the lost launch's step until a stall stopped it); given on
    /// its command line it is used.
    fn slurm_options(&self, vars: &[(String, String)]) -> Vec<String> {
        let value = vars
            .iter()
            .find(|(k, _)| k == SLURM_SRUN_ARGS_VARIABLE)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(SLURM_SRUN_ARGS_VARIABLE).ok());
        value.map_or_else(Vec::new, |v| {
            vec!["--prtemca".to_owned(), "plm_slurm_args".to_owned(), v]
        })
    }

    fn agent_variable(&self) -> &'static str {
        AGENT_VARIABLE
    }

    fn emulated_cluster_settings(&self) -> Vec<(String, String)> {
        owned_pairs(&[
            ("OMPI_MCA_btl", "^ofi"),
            ("OMPI_MCA_mtl", "^ofi"),
            ("OMPI_MCA_mpi_yield_when_idle", "1"),
        ])
    }

    /// Besides ORTE's forms, PRRTE's "A daemon failed to report back ..." block names
    /// the host on a line of its own: `Remote host:   h2`.
    fn lost_host(&self, line: &str, hosts: &[String]) -> Option<String> {
        open_mpi_lost_host(line, hosts).or_else(|| host_after(line, "Remote host:", hosts))
    }

    /// Open MPI's messages ([`super::failure_clue::open_mpi`]).
    fn failure_clue(&self, line: &str) -> Option<FailureClue> {
        super::failure_clue::open_mpi(line)
    }

    fn local_rank_variable(&self) -> &'static str {
        "OMPI_COMM_WORLD_LOCAL_RANK"
    }

    fn departure(&self) -> Departure {
        Departure::ExitWithoutFinalize
    }

    /// `host=HOST:COUNT`, and every target host added (`PMIX_ADD_HOST`), in the
    /// allocation or not (see the module's facts).
    fn spawn_info(&self, host: Option<&str>, count: usize) -> Vec<(String, String)> {
        let Some(host) = host else {
            return vec![("PMIX_MAPBY".into(), ":OVERSUBSCRIBE".into())];
        };
        vec![
            ("host".to_owned(), format!("{host}:{count}")),
            ("PMIX_ADD_HOST".to_owned(), format!("{host}:{count}")),
        ]
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            spawn: true,
            spawn_onto_left_host: false,
            add_hosts: true,
            spawn_across_daemons: false,
            background_spawn: false,
            launch_replacements: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_srun_options_go_on_prteruns_command_line() {
        let vars = OpenMpi5.slurm_settings(&|_| None);
        assert_eq!(
            OpenMpi5.slurm_options(&vars),
            ["--prtemca", "plm_slurm_args", "--overlap"]
        );
        let own = [(
            SLURM_SRUN_ARGS_VARIABLE.to_owned(),
            "--exclusive".to_owned(),
        )];
        assert!(
            OpenMpi5
                .slurm_settings(&|k| (k == SLURM_SRUN_ARGS_VARIABLE).then(|| "--exclusive".into()))
                .is_empty()
        );
        assert_eq!(OpenMpi5.slurm_options(&own)[2], "--exclusive");
    }
}
