//! MPICH and its hydra process manager (`mpiexec`), as in MPICH 5.0.2 from PyPI; the
//! MPIs built on MPICH that launch with hydra (Intel MPI, MVAPICH) take the same
//! options.
//!
//! Facts this launcher relies on, checked on an emulated cluster:
//! - Rank *i* starts on its planned host when the hostfile lists runs of consecutive
//!   ranks as `HOST:COUNT` lines in rank order (`h2:1`, `h1:1`, `h2:2` puts ranks 0, 2
//!   and 3 on h2); a host may appear more than once. Without a hostfile every rank
//!   starts on this host. A spawn with info `host` starts its processes on that host,
//!   also a host outside the hostfile ([`Capabilities::add_hosts`]), and also a host
//!   the job's processes have left ([`Capabilities::spawn_onto_left_host`]).
//! - `MPI_Comm_spawn_multiple` does not keep each command's `host`: every process went
//!   to the host of the last command (`h1`, `h3` gave two processes on h3). One command
//!   whose info key `hostfile` names a file of `HOST:COUNT` lines places its processes
//!   in the file's order, as at launch ([`Launcher::spawn_hostfile_key`]).
//! - hydra passes the caller's whole environment to the ranks by default; it rejects
//!   Open MPI's `--allow-run-as-root`, `--mca`, `-x` and `--oversubscribe`, and runs as
//!   root without a flag. `-bind-to none` together with a spawn fails ("duplicate
//!   setting: binding"), so no binding option is given (hydra binds nothing by default).
//! - A replaced rank that exits without `MPI_Finalize` ends the job ("BAD TERMINATION
//!   ... EXIT CODE: 9"); it calls `MPI_Finalize`, made non-collective by
//!   `MPIR_CVAR_NO_COLLECTIVE_FINALIZE=1`, then exits with `exit` (MPICH 5.0 sends
//!   `PMI_Finalize` from an `atexit` handler; after `_exit` hydra's proxy SIGKILLed
//!   the ranks it still ran, see `migrate::job::leave_now`).
//! - The agent is `HYDRA_LAUNCHER=ssh` with `HYDRA_LAUNCHER_EXEC=AGENT`, one executable
//!   path (hydra does not split it into words), called as `AGENT -x HOST "COMMAND"`.
//! - Its failure messages name a lost host as `RUNNING AT HOST` or `connect to host HOST`.
//! - Intel MPI 2021.18 (PyPI `impi-rt`) takes the same options and agent variables; its
//!   `MPI_Comm_spawn` segfaulted in `MPIDI_OFI_mpi_open_port` when every rank was on one
//!   host (its network layer not started) until `I_MPI_SPAWN=on`, which the launch sets
//!   unless the caller did (MPICH ignores it).
//! - MPICH's progress loop polls without yielding the CPU, so ranks that share cores
//!   (a node the plan oversubscribes, or a machine with fewer cores than ranks) each
//!   wait a time slice per exchange: 500 iterations of a ring exchange and an
//!   `MPI_Allreduce`, 4 ranks on 2 cores, took 3.9-5.2 s with MPICH 5.0.2. With
//!   `MPIR_CVAR_CH4_PROGRESS_THROTTLE=1` and
//!   `MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=100` (a rank yields after 100
//!   polls that found nothing) they took 0.08 s; 1 000 polls gave 0.7 s, 10 000 gave 4
//!   s. 200 000 iterations at 2 ranks on 2 cores took the same with and without (0.76-1.10
//!   s, three runs each). The launch sets both unless the caller did ([`YIELDING`]);
//!   MPICH 4.0.2 knows neither and ignores them.

use std::fmt::Write as _;
use std::process::Command;

use super::failure_clue::{after, first_number, word_after};
use super::{
    Capabilities, Departure, FailureClue, JobLaunch, Launcher, MpiImplementation, host_after,
    host_runs,
};
use crate::planner::Placement;

/// The variable giving a process its rank in its launch or spawn (hydra).
pub const WORLD_RANK_VARIABLE: &str = "PMI_RANK";

/// MPICH (hydra).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mpich;

/// The variable naming hydra's remote shell program.
const AGENT_VARIABLE: &str = "HYDRA_LAUNCHER_EXEC";

/// MPICH's control variables that make a rank yield its CPU after 100 polls that found
/// nothing to do, so that ranks sharing cores do not wait a time slice per exchange
/// (measured in the module doc). Each is set at launch unless the caller's environment
/// sets it.
pub const YIELDING: [(&str, &str); 2] = [
    ("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1"),
    ("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "100"),
];

/// The variables every MPICH launch gives its ranks, whatever starts them (hydra or
/// srun): a non-collective finalize, `I_MPI_SPAWN=on` and [`YIELDING`] unless the
/// caller set them, then the job's own variables.
pub(super) fn set_rank_variables(cmd: &mut Command, job: &JobLaunch<'_>) {
    cmd.env("MPIR_CVAR_NO_COLLECTIVE_FINALIZE", "1");
    for (name, value) in [("I_MPI_SPAWN", "on")].iter().chain(&YIELDING) {
        if std::env::var_os(name).is_none() {
            cmd.env(name, value);
        }
    }
    for (k, v) in job.env {
        cmd.env(k, v);
    }
}

impl Launcher for Mpich {
    fn implementation(&self) -> MpiImplementation {
        MpiImplementation::Mpich
    }

    fn program(&self) -> &'static str {
        "mpiexec"
    }

    /// Runs of consecutive ranks on one host, `HOST:COUNT`, in rank order. Hosts
    /// without ranks are not listed: a spawn reaches them all the same.
    ///
    /// ```
    /// use rankmig::launcher::{Launcher, mpich::Mpich};
    /// use rankmig::planner::{Location, Placement};
    /// let at = |n: &[&str]| Placement::new(n.iter().map(|n| Location { node: (*n).into(), core: 0 }).collect());
    /// let hosts = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
    /// assert_eq!(Mpich.hostfile(&at(&["b", "a", "b", "b"]), &hosts), "b:1\na:1\nb:2\n");
    /// ```
    fn hostfile(&self, placement: &Placement, _hosts: &[String]) -> String {
        let mut out = String::new();
        for (host, count) in host_runs(placement) {
            let _ = writeln!(out, "{host}:{count}");
        }
        out
    }

    /// `mpiexec -f HOSTFILE -n N` (or `-n N` on this host), the user's options, the
    /// program; the variables reach the ranks through the environment of `mpiexec`.
    fn command(&self, job: &JobLaunch<'_>) -> Command {
        let mut cmd = Command::new(self.program());
        if let Some(hostfile) = job.hostfile {
            cmd.arg("-f").arg(hostfile);
        }
        cmd.args(["-n", &job.placement.len().to_string()]);
        // The wait status of every rank, for `rankmig run` to name the one that failed
        // (its "BAD TERMINATION" block may name one it killed itself).
        cmd.arg("-print-all-exitcodes");
        set_rank_variables(&mut cmd, job);
        cmd.args(job.user_args).args(job.program);
        cmd
    }

    /// hydra's extra arguments of its launcher.
    fn slurm_srun_args_variable(&self) -> &'static str {
        "HYDRA_LAUNCHER_EXTRA_ARGS"
    }

    fn agent_variable(&self) -> &'static str {
        AGENT_VARIABLE
    }

    /// Inside a Slurm job hydra starts one proxy per hostfile line with `srun
    /// --nodelist`, which refuses a node named twice ("Only allocated 3 nodes asked
    /// for 5") and starts the proxies on the nodes in the job's order, not the
    /// hostfile's (hostfile n2:3 n4:3 n3:2 gave 3 ranks on n3 and 2 on n4, read from
    /// outside), both measured on the emulated Slurm; unless another launcher is set.
    fn srun_needs_one_block_per_host(&self, get: &dyn Fn(&str) -> Option<String>) -> bool {
        get("HYDRA_LAUNCHER").is_none_or(|l| l.trim().is_empty() || l == "slurm")
    }

    /// hydra's launcher kind (`ssh`), then its program.
    fn agent_settings(&self, agent: &str) -> Vec<(String, String)> {
        vec![
            ("HYDRA_LAUNCHER".into(), "ssh".into()),
            (AGENT_VARIABLE.into(), agent.into()),
        ]
    }

    fn emulated_cluster_settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    fn lost_host(&self, line: &str, hosts: &[String]) -> Option<String> {
        host_after(line, "RUNNING AT ", hosts)
            .or_else(|| host_after(line, "connect to host ", hosts))
    }

    /// hydra's messages: its "BAD TERMINATION" block ("PID P RUNNING AT H", "EXIT
    /// CODE: C", "EXIT STRING: Killed (signal S)"), on its standard output, and its
    /// `-print-all-exitcodes` line.
    ///
    /// ```
    /// use rankmig::launcher::{FailureClue, Launcher, mpich::Mpich};
    /// assert_eq!(
    ///     Mpich.failure_clue("=   PID 1234 RUNNING AT h2"),
    ///     Some(FailureClue::RunningAt { pid: 1234, host: Some("h2".into()) })
    /// );
    /// assert_eq!(Mpich.failure_clue("=   EXIT CODE: 9"), Some(FailureClue::ExitCode(9)));
    /// assert_eq!(
    ///     Mpich.failure_clue("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)"),
    ///     Some(FailureClue::KilledBy(9))
    /// );
    /// assert_eq!(
    ///     Mpich.failure_clue("[mpiexec@vm] Exit codes: [h1] 0,9 [h2] 0,768"),
    ///     Some(FailureClue::ExitStatuses(vec![("h1".into(), vec![0, 9]), ("h2".into(), vec![0, 768])]))
    /// );
    /// assert_eq!(Mpich.failure_clue("  Exit code:    7"), None);
    /// ```
    fn failure_clue(&self, line: &str) -> Option<FailureClue> {
        let line = line.trim_start_matches(['=', ' ', '\t']);
        if let Some(rest) = after(line, "] Exit codes:") {
            return Some(FailureClue::ExitStatuses(exit_statuses(rest)));
        }
        if let Some(rest) = after(line, "EXIT CODE:") {
            return first_number(rest).map(FailureClue::ExitCode);
        }
        if let Some(rest) = after(line, "PID ") {
            if !rest.contains("RUNNING AT") {
                return None;
            }
            return Some(FailureClue::RunningAt {
                pid: first_number(rest)?,
                host: word_after(rest, "RUNNING AT "),
            });
        }
        after(line, "EXIT STRING:")
            .and_then(|rest| after(rest, "(signal "))
            .and_then(first_number)
            .map(FailureClue::KilledBy)
    }

    /// hydra's `-print-all-exitcodes` line, which `rankmig run` asks for.
    ///
    /// ```
    /// use rankmig::launcher::{Launcher, mpich::Mpich};
    /// assert!(Mpich.is_summary_line("[mpiexec@vm] Exit codes: [vm] 0,0"));
    /// assert!(!Mpich.is_summary_line("iterations: 5"));
    /// ```
    fn is_summary_line(&self, line: &str) -> bool {
        line.starts_with("[mpiexec@") && line.contains("] Exit codes:")
    }

    fn local_rank_variable(&self) -> &'static str {
        "MPI_LOCALRANKID"
    }

    fn departure(&self) -> Departure {
        Departure::FinalizeThenExit
    }

    fn spawn_hostfile_key(&self) -> Option<&'static str> {
        Some("hostfile")
    }

    /// `port_name_size` = `4096`: MPICH 5.0.2 with OFI makes port names of about 430
    /// bytes, more than its `MPI_MAX_PORT_NAME` (256), and `MPI_Open_port` fails
    /// ("no space for port_name tag") unless the info allows more.
    fn open_port_info(&self) -> Vec<(String, String)> {
        vec![("port_name_size".into(), "4096".into())]
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            spawn: true,
            spawn_onto_left_host: true,
            add_hosts: true,
            spawn_across_daemons: true,
            background_spawn: true,
            launch_replacements: true,
        }
    }
}

/// "[h1] 0,9 [h2] 0,768": each host and the wait statuses of its ranks.
fn exit_statuses(text: &str) -> Vec<(String, Vec<i32>)> {
    text.split('[')
        .filter_map(|group| {
            let (host, codes) = group.split_once(']')?;
            let codes = codes
                .trim()
                .split(',')
                .map(|c| c.trim().parse().ok())
                .collect::<Option<Vec<i32>>>()?;
            Some((host.trim().to_owned(), codes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::Location;

    /// The launch asks MPICH to yield after polls that found nothing, unless the caller
    /// set a variable itself; a job variable given to the launch still wins.
    #[test]
    fn the_launch_makes_ranks_yield_unless_the_caller_chose() {
        let placement = Placement::new(vec![Location {
            node: "n1".into(),
            core: 0,
        }]);
        let job_env = [(YIELDING[1].0.to_owned(), "5".to_owned())];
        let cmd = Mpich.command(&JobLaunch {
            placement: &placement,
            hostfile: None,
            env: &job_env,
            user_args: &[],
            program: &["a.out".to_owned()],
        });
        let env_of = |name: &str| {
            cmd.get_envs()
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v)
                .map(|v| v.to_string_lossy().into_owned())
        };
        let (throttle, value) = YIELDING[0];
        if std::env::var_os(throttle).is_none() {
            assert_eq!(env_of(throttle).as_deref(), Some(value));
        } else {
            assert_eq!(env_of(throttle), None, "the caller's value is inherited");
        }
        assert_eq!(env_of(YIELDING[1].0).as_deref(), Some("5"));
    }
}
