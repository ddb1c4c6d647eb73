//! Slurm's `srun` as the launcher: the job is one job step, started with Slurm's own
//! process management interface (`srun --mpi=TYPE`), with no `mpirun`, `mpiexec`,
//! hydra proxy or Open MPI daemon.
//!
//! Facts this launcher relies on, checked on the emulated Slurm (Debian's Slurm 22.05,
//! `srun --mpi=list`: pmi2, pmix (v4), cray_shasta) with PyPI's MPICH 5.0.2:
//! - `srun --mpi=pmi2 --distribution=arbitrary` with `SLURM_HOSTFILE` naming one host
//!   per rank, in rank order, starts rank *i* on the host of line *i* (`n2 n1 n2` put
//!   ranks 0 and 2 on n2, read with `hostname` from each task);
//! - `MPI_Comm_spawn` is not served by Slurm's PMI (MPICH's issue 5835), but two steps
//!   of one allocation join with `MPI_Open_port`/`MPI_Comm_accept`/`MPI_Comm_connect`:
//!   the replacements of a migration are started as a new step on their hosts
//!   (`srun --overlap`, sharing the CPUs of the running step) and join the job as
//!   they do after `rankmig run` starts them with hydra
//!   ([`crate::run_dir::launch_request`]). An MPI that cannot join another step
//!   ([`super::Capabilities::launch_replacements`] false: Open MPI) moves ranks by a
//!   relaunch from a checkpoint, as a new step;
//! - `srun --mpi=pmix` starts Open MPI's ranks (Debian's 4.1.4, PyPI's 4.1.8 and
//!   5.0.11 checked) once each node's `slurmstepd` has a PMIx directory of its own
//!   (Slurm makes it under `TmpFS`, per node on the emulated Slurm);
//! - the ranks bind themselves ([`crate::run_dir::cpu_sets`] and the ranks' own
//!   binding), so the step is started with `--cpu-bind=none`;
//! - srun passes its whole environment to the tasks (`--export=ALL`, its default).
//!
//! Everything that belongs to the MPI library (how a replaced rank leaves, the spawn
//! and port info keys) is the MPI's own launcher's.

use std::fmt::Write as _;
use std::process::Command;

use super::{
    Capabilities, Departure, FailureClue, JobLaunch, Launcher, MpiImplementation, launcher,
};
use crate::planner::Placement;

/// The variable naming the file of hosts `srun --distribution=arbitrary` reads.
pub const ENV_SLURM_HOSTFILE: &str = "SLURM_HOSTFILE";

/// The variable giving a task its rank in its job step.
pub const WORLD_RANK_VARIABLE: &str = "SLURM_PROCID";

/// `srun` launching the ranks of an MPI implementation.
#[derive(Debug, Clone, Copy)]
pub struct Srun {
    mpi: MpiImplementation,
}

/// One per implementation, for [`super::launcher_for`].
pub(super) static FOR_OPENMPI4: Srun = Srun::new(MpiImplementation::OpenMpi4);
/// See [`FOR_OPENMPI4`].
pub(super) static FOR_OPENMPI5: Srun = Srun::new(MpiImplementation::OpenMpi5);
/// See [`FOR_OPENMPI4`].
pub(super) static FOR_MPICH: Srun = Srun::new(MpiImplementation::Mpich);

impl Srun {
    /// `srun` for ranks built with `mpi`.
    pub const fn new(mpi: MpiImplementation) -> Self {
        Self { mpi }
    }

    /// The process management interface `srun --mpi` uses for this MPI unless told:
    /// `pmi2` for MPICH, `pmix` for Open MPI.
    ///
    /// ```
    /// use rankmig::launcher::{MpiImplementation, srun::Srun};
    /// assert_eq!(Srun::new(MpiImplementation::Mpich).default_pmi(), "pmi2");
    /// assert_eq!(Srun::new(MpiImplementation::OpenMpi4).default_pmi(), "pmix");
    /// ```
    pub fn default_pmi(&self) -> &'static str {
        match self.mpi {
            MpiImplementation::Mpich => "pmi2",
            MpiImplementation::OpenMpi4 | MpiImplementation::OpenMpi5 => "pmix",
        }
    }

    fn mpi_launcher(&self) -> &'static dyn Launcher {
        launcher(self.mpi)
    }
}

/// The PMI types `srun --mpi=list` prints (its lines after the heading, and the
/// versions of `specific pmix plugin versions available: pmix_v4`).
///
/// ```
/// use rankmig::launcher::srun::pmi_types;
/// let listed = "MPI plugin types are...\n\tpmix\n\tnone\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n";
/// assert_eq!(pmi_types(listed), ["pmix", "none", "pmi2", "pmix_v4"]);
/// ```
pub fn pmi_types(listed: &str) -> Vec<String> {
    let mut types = Vec::new();
    for line in listed.lines() {
        if let Some(versions) = line.split("available:").nth(1) {
            types.extend(versions.split_whitespace().map(str::to_owned));
        } else if line.starts_with([' ', '\t']) {
            types.extend(line.split_whitespace().map(str::to_owned));
        }
    }
    types
}

impl Launcher for Srun {
    fn implementation(&self) -> MpiImplementation {
        self.mpi
    }

    fn program(&self) -> &'static str {
        "srun"
    }

    /// `SLURM_HOSTFILE`'s form: one host per rank, in rank order.
    ///
    /// ```
    /// use rankmig::launcher::{Launcher, MpiImplementation, srun::Srun};
    /// use rankmig::planner::{Location, Placement};
    /// let at = |n: &[&str]| Placement::new(n.iter().map(|n| Location { node: (*n).into(), core: 0 }).collect());
    /// let srun = Srun::new(MpiImplementation::Mpich);
    /// assert_eq!(srun.hostfile(&at(&["n2", "n1", "n2"]), &[]), "n2\nn1\nn2\n");
    /// ```
    fn hostfile(&self, placement: &Placement, _hosts: &[String]) -> String {
        let mut out = String::new();
        for l in placement.locations() {
            let _ = writeln!(out, "{}", l.node);
        }
        out
    }

    /// `srun --overlap --mpi=TYPE --kill-on-bad-exit=1 --cpu-bind=none -n N
    /// --distribution=arbitrary` with `SLURM_HOSTFILE` (multi-host mode), the user's
    /// options, the program. `--kill-on-bad-exit=1`: a rank killed or failed ends the
    /// step, as `mpirun` ends its job (srun's default, unless the site's `KillOnBadExit`
    /// says otherwise, leaves the other ranks waiting for it in MPI until the stall
    /// watch stops them; measured here: 60 s lost before the restart). The MPI's
    /// own launch variables (MPICH: non-collective finalize, yielding polls) and the
    /// ranks' variables through srun's environment. TYPE is
    /// [`Srun::default_pmi`] unless the user's options give `--mpi`.
    fn command(&self, job: &JobLaunch<'_>) -> Command {
        let mut cmd = Command::new(self.program());
        cmd.arg("--overlap");
        if !job.user_args.iter().any(|a| a.starts_with("--mpi")) {
            cmd.arg(format!("--mpi={}", self.default_pmi()));
        }
        if !job
            .user_args
            .iter()
            .any(|a| a.starts_with("--kill-on-bad-exit") || a == "-K")
        {
            cmd.arg("--kill-on-bad-exit=1");
        }
        cmd.args(["--cpu-bind=none", "-n", &job.placement.len().to_string()]);
        if let Some(hostfile) = job.hostfile {
            cmd.arg("--distribution=arbitrary");
            cmd.env(ENV_SLURM_HOSTFILE, hostfile);
        }
        // salloc's --ntasks-per-node would contradict the step's own task count.
        cmd.env_remove("SLURM_NTASKS_PER_NODE");
        match self.mpi {
            MpiImplementation::Mpich => super::mpich::set_rank_variables(&mut cmd, job),
            MpiImplementation::OpenMpi4 | MpiImplementation::OpenMpi5 => {
                cmd.envs(job.env.iter().map(|(k, v)| (k, v)));
            }
        }
        cmd.args(job.user_args).args(job.program);
        cmd
    }

    /// True: a SIGKILLed srun leaves the step's tasks running on the nodes (seen on the
    /// emulated Slurm: after the stall watch killed srun, the ranks of the nodes left
    /// alive ran on beside the relaunched job).
    fn ranks_outlive_a_killed_launcher(&self) -> bool {
        true
    }

    /// Not used: srun is the step launcher itself.
    fn slurm_srun_args_variable(&self) -> &'static str {
        "SLURM_OVERLAP"
    }

    /// None: the step is started with `--overlap` on the command line.
    fn slurm_settings(&self, _get: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        Vec::new()
    }

    fn agent_variable(&self) -> &'static str {
        self.mpi_launcher().agent_variable()
    }

    fn emulated_cluster_settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// srun's `srun: error: HOST: task N: ...` and `srun: error: Node failure on HOST`.
    ///
    /// ```
    /// use rankmig::launcher::{Launcher, MpiImplementation, srun::Srun};
    /// let srun = Srun::new(MpiImplementation::Mpich);
    /// let hosts = ["n1".to_owned(), "n2".to_owned()];
    /// assert_eq!(srun.lost_host("srun: error: Node failure on n2", &hosts), Some("n2".into()));
    /// assert_eq!(srun.lost_host("srun: error: n1: task 0: Killed", &hosts), None);
    /// ```
    fn lost_host(&self, line: &str, hosts: &[String]) -> Option<String> {
        super::host_after(line, "Node failure on ", hosts)
    }

    /// srun's `srun: error: HOST: task R: Killed` (a signal: SIGKILL) and `... task R:
    /// Exited with exit code C`.
    ///
    /// ```
    /// use rankmig::launcher::{FailureClue, Launcher, MpiImplementation, srun::Srun};
    /// let srun = Srun::new(MpiImplementation::Mpich);
    /// assert_eq!(
    ///     srun.failure_clue("srun: error: n2: task 3: Killed"),
    ///     Some(FailureClue::Signalled { rank: 3, pid: None, host: Some("n2".into()), signal: 9 })
    /// );
    /// assert_eq!(srun.failure_clue("srun: error: n1: task 0: Exited with exit code 7"), Some(FailureClue::ExitCode(7)));
    /// assert_eq!(srun.failure_clue("iterations: 5"), None);
    /// assert!(matches!(
    ///     srun.failure_clue("slurmstepd-n1: error: *** STEP 17.0 ON n1 CANCELLED AT 2026-11-29T06:56:47 ***"),
    ///     Some(FailureClue::Cancelled(_))
    /// ));
    /// ```
    ///
    /// And `slurmstepd`'s `*** STEP J.S ON HOST CANCELLED AT TIME ***` (Slurm cancelled
    /// the step: [`super::slurm_cancel`]).
    fn failure_clue(&self, line: &str) -> Option<FailureClue> {
        if let Some(cancel) = super::slurm_cancel(line) {
            return Some(FailureClue::Cancelled(cancel));
        }
        let rest = line.trim().strip_prefix("srun: error: ")?;
        let (host, rest) = rest.split_once(": task ")?;
        let (rank, what) = rest.split_once(':')?;
        let rank: usize = rank.trim().parse().ok()?;
        let what = what.trim();
        if what == "Killed" {
            return Some(FailureClue::Signalled {
                rank,
                pid: None,
                host: Some(host.trim().to_owned()),
                signal: libc::SIGKILL,
            });
        }
        let code = what.strip_prefix("Exited with exit code ")?;
        code.trim().parse().ok().map(FailureClue::ExitCode)
    }

    fn local_rank_variable(&self) -> &'static str {
        "SLURM_LOCALID"
    }

    fn departure(&self) -> Departure {
        self.mpi_launcher().departure()
    }

    fn finalize_waits_for_departed_ranks(&self) -> bool {
        self.mpi_launcher().finalize_waits_for_departed_ranks()
    }

    fn spawn_hostfile_key(&self) -> Option<&'static str> {
        self.mpi_launcher().spawn_hostfile_key()
    }

    fn open_port_info(&self) -> Vec<(String, String)> {
        self.mpi_launcher().open_port_info()
    }

    /// No spawn (Slurm's PMI does not serve `MPI_Comm_spawn`); replacements as a new
    /// step where the MPI joins another launch, else a relaunch; within the allocation.
    fn capabilities(&self) -> Capabilities {
        let mpi = self.mpi_launcher().capabilities();
        Capabilities {
            spawn: false,
            spawn_onto_left_host: true,
            add_hosts: false,
            spawn_across_daemons: true,
            background_spawn: mpi.background_spawn,
            launch_replacements: mpi.launch_replacements,
        }
    }
}
