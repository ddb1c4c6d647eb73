//! Open MPI 4.1 and its ORTE runtime (Debian 12's `openmpi-bin` 4.1.4 with PMIx 4.2.2).
//!
//! Facts this launcher relies on, checked on an emulated cluster:
//! - The initial placement is carried out by the sequential mapper (`--map-by seq`):
//!   line *i* of the hostfile names the host of rank *i*; every other host of the
//!   allocation follows, so that ORTE starts a daemon there and processes can later be
//!   spawned on it. With a rankfile, or with `--mca rmaps seq`, the spawns of later
//!   migrations are mapped by the same mapper and fail; `--map-by seq` maps only the
//!   initial job.
//! - A spawn onto a host whose slots are in use fails ("All nodes which are allocated
//!   for this job are already filled") unless `rmaps_base_oversubscribe` is set.
//! - A process that exits without `MPI_Finalize` aborts the job unless
//!   `orte_allowed_exit_without_sync` is set; an early `MPI_Finalize` blocks until every
//!   rank finalizes, so a replaced rank exits without it.
//! - `async_mpi_finalize` drops the PMIx fence at the start of `MPI_Finalize`: with
//!   replaced ranks gone without finalizing, the fence sometimes never completed and the
//!   ranks that stayed hung in `MPI_Finalize` (1 run in 5; 0 in 8 with it).
//! - Once every process of a launch has left a host, that host's daemon forgets the
//!   launch and a later spawn there aborts the job ([`Capabilities::spawn_onto_left_host`]
//!   is false; see `migrate::job::history`). A spawn cannot add hosts.
//! - The rsh agent is `OMPI_MCA_plm_rsh_agent`. On an emulated cluster the runtime and
//!   TCP use loopback, and `mpi_yield_when_idle` keeps ranks that share cores from
//!   spinning (38 ms per Jacobi iteration without it, under 1 ms with it).
//!
//! - The `ob1` messaging layer's shared-memory transport (`vader`) connects only the
//!   processes of one launch: after a spawn, a replacement talks to its neighbours on
//!   the same host over TCP (a C program spawning one child: 0.9 µs between two ranks of
//!   the launch, 9.5 µs to the child). The `ucx` messaging layer (UCX 1.13 here) reaches
//!   the child through shared memory (0.08 and 0.10 µs). Debian builds it, but it
//!   declines to run without an InfiniBand device unless `pml_ucx_tls` and
//!   `pml_ucx_devices` are `any`. So the launch asks for `pml ucx,ob1` with both set to
//!   `any` ([`messaging_layer_options`]): UCX where it starts, `ob1` where it does not.
//!   A user's own choice of `pml` is kept.
//! - With `pml ucx`, `MPI_Finalize` ends in a PMIx fence over the process's launch
//!   (`mca_pml_ucx_del_procs`), which never completes once replaced ranks of that launch
//!   have left without finalizing (seen in 1 run of 2 of the pause probe: every survivor
//!   spinning in `opal_common_ucx_mca_pmix_fence`). `async_mpi_finalize` does not drop
//!   that fence; so after a migration the ranks end without `MPI_Finalize`
//!   ([`Launcher::finalize_waits_for_departed_ranks`]).

use std::fmt::Write as _;
use std::process::Command;

use super::{
    Capabilities, Departure, FailureClue, JobLaunch, Launcher, MpiImplementation,
    hosts_without_ranks, open_mpi_lost_host, owned_pairs, running_as_root,
};
use crate::planner::Placement;

/// The `--mca` options choosing the messaging layer: `pml ucx,ob1` with UCX allowed on
/// any device (see the module's facts), unless the user chose a `pml` already (in the
/// launcher options, the job's variables, or `OMPI_MCA_pml` in the environment:
/// `user_set_in_environment`).
///
/// ```
/// use rankmig::launcher::{JobLaunch, openmpi4::messaging_layer_options};
/// use rankmig::planner::Placement;
/// let placement = Placement::new(vec![]);
/// let mut job = JobLaunch { placement: &placement, hostfile: None, env: &[], user_args: &[], program: &[] };
/// assert!(messaging_layer_options(&job, false).join(" ").contains("pml ucx,ob1"));
/// assert!(messaging_layer_options(&job, true).is_empty());
/// let mine = ["--mca".to_owned(), "pml".to_owned(), "ob1".to_owned()];
/// job.user_args = &mine;
/// assert!(messaging_layer_options(&job, false).is_empty());
/// ```
pub fn messaging_layer_options(job: &JobLaunch<'_>, user_set_in_environment: bool) -> Vec<String> {
    let chosen_in_args = job
        .user_args
        .windows(2)
        .any(|w| w[0].ends_with("mca") && w[1] == "pml");
    let chosen_in_env = job.env.iter().any(|(k, _)| k == "OMPI_MCA_pml");
    if user_set_in_environment || chosen_in_args || chosen_in_env {
        return Vec::new();
    }
    [
        "pml",
        "ucx,ob1",
        "pml_ucx_tls",
        "any",
        "pml_ucx_devices",
        "any",
    ]
    .chunks(2)
    .flat_map(|kv| ["--mca".to_owned(), kv[0].to_owned(), kv[1].to_owned()])
    .collect()
}

/// Open MPI 4.1 (ORTE).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenMpi4;

/// The variable naming ORTE's rsh agent.
const AGENT_VARIABLE: &str = "OMPI_MCA_plm_rsh_agent";

/// The variable giving a process its rank in its launch or spawn (Open MPI 4.1 and 5).
pub const WORLD_RANK_VARIABLE: &str = "OMPI_COMM_WORLD_RANK";

impl Launcher for OpenMpi4 {
    fn implementation(&self) -> MpiImplementation {
        MpiImplementation::OpenMpi4
    }

    fn program(&self) -> &'static str {
        "mpirun"
    }

    /// The sequential-mapper hostfile: the host of each rank in rank order, then the
    /// other hosts of the allocation once each.
    ///
    /// ```
    /// use rankmig::launcher::{Launcher, openmpi4::OpenMpi4};
    /// use rankmig::planner::{Location, Placement};
    /// let p = Placement::new(vec![
    ///     Location { node: "b".into(), core: 0 },
    ///     Location { node: "a".into(), core: 0 },
    /// ]);
    /// let hosts = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
    /// assert_eq!(OpenMpi4.hostfile(&p, &hosts), "b\na\nc\n");
    /// ```
    fn hostfile(&self, placement: &Placement, hosts: &[String]) -> String {
        let mut out = String::new();
        for l in placement.locations() {
            let _ = writeln!(out, "{}", l.node);
        }
        for h in hosts_without_ranks(placement, hosts) {
            let _ = writeln!(out, "{h}");
        }
        out
    }

    /// `mpirun`: as root if need be, early exit of replaced processes allowed, no
    /// binding by Open MPI (ranks bind themselves to their planned core), the hostfile
    /// with the sequential mapper (multi-host) or `--oversubscribe` on this host
    /// (logical nodes), each variable passed with `-x`, the user's options, the program.
    /// `OMPI_MCA_*` variables of the caller reach `mpirun` as they are.
    fn command(&self, job: &JobLaunch<'_>) -> Command {
        let mut cmd = Command::new(self.program());
        if running_as_root() {
            cmd.arg("--allow-run-as-root");
        }
        cmd.args(["--bind-to", "none"])
            .args(["--mca", "orte_allowed_exit_without_sync", "1"])
            .args(["--mca", "async_mpi_finalize", "1"])
            .args(["--mca", "rmaps_base_oversubscribe", "1"]);
        match job.hostfile {
            Some(hostfile) => {
                cmd.arg("--hostfile")
                    .arg(hostfile)
                    .args(["--map-by", "seq"]);
            }
            None => {
                cmd.arg("--oversubscribe");
            }
        }
        cmd.args(["-np", &job.placement.len().to_string()]);
        cmd.args(messaging_layer_options(
            job,
            std::env::var_os("OMPI_MCA_pml").is_some(),
        ));
        for (k, v) in job.env {
            cmd.env(k, v).args(["-x", k]);
        }
        cmd.args(job.user_args).args(job.program);
        cmd
    }

    /// ORTE's `plm_slurm_args`.
    fn slurm_srun_args_variable(&self) -> &'static str {
        "OMPI_MCA_plm_slurm_args"
    }

    fn agent_variable(&self) -> &'static str {
        AGENT_VARIABLE
    }

    fn emulated_cluster_settings(&self) -> Vec<(String, String)> {
        owned_pairs(&[
            ("OMPI_MCA_oob_tcp_if_include", "lo"),
            ("OMPI_MCA_btl_tcp_if_include", "lo"),
            ("OMPI_MCA_mpi_yield_when_idle", "1"),
        ])
    }

    fn lost_host(&self, line: &str, hosts: &[String]) -> Option<String> {
        open_mpi_lost_host(line, hosts)
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

    /// True when the ranks run `pml ucx` (asked for in `OMPI_MCA_pml`, which `mpirun`
    /// sets in every rank from its `--mca` options).
    fn finalize_waits_for_departed_ranks(&self) -> bool {
        std::env::var("OMPI_MCA_pml").is_ok_and(|pml| pml.split(',').next() == Some("ucx"))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            spawn: true,
            spawn_onto_left_host: false,
            add_hosts: false,
            spawn_across_daemons: true,
            background_spawn: true,
            launch_replacements: false,
        }
    }
}
