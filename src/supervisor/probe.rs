//! Is a host still there? Asked the way the MPI launcher reaches it: its rsh agent runs
//! `true` on the host.
//!
//! When a host dies unannounced, the launcher ends the job, but its messages do not
//! always name the host (Open MPI 4.1, killing an emulated host's daemon and ranks, gave
//! "ORTE was unable to reliably start one or more daemons", naming none). After a failed
//! launch, and before a restart, `rankmig run` probes the hosts of the allocation: a
//! host the agent cannot run `true` on within [`PROBE_TIMEOUT`] is lost.
//!
//! The agent is `RANKMIG_PROBE_AGENT` if set, else the one the launcher's own variable
//! sets ([`crate::launcher::Launcher::agent_in_env`]; its first alternative when it
//! lists several, `ssh : rsh`), else, inside a Slurm job (`SLURM_JOB_ID` set), `srun
//! --overlap` onto the host ([`crate::rms::slurm::PROBE_AGENT`]), else `ssh -o
//! BatchMode=yes -o ConnectTimeout=10`. Where hosts are reached by another launcher
//! (PBS's `tm`) and `ssh` between nodes is not allowed, every host would probe as lost:
//! set `RANKMIG_PROBE_AGENT=none` there (then only hosts named in the launcher's
//! messages count as lost).

use std::process::Command;
use std::time::Duration;

/// How long a host has to answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// The agent to probe hosts with (`none`: no probing), before Open MPI's.
pub const ENV_PROBE_AGENT: &str = "RANKMIG_PROBE_AGENT";

/// The agent used when the launcher's is not set.
const DEFAULT_AGENT: [&str; 5] = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"];

/// Runs `true` on hosts through an rsh-like agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostProbe {
    /// The agent's command line, before the host name; empty = probing is off.
    agent: Vec<String>,
    timeout: Duration,
}

impl HostProbe {
    /// The probe for the agent command line `agent`, else `ssh`. The value `none`
    /// switches probing off.
    ///
    /// ```
    /// use rankmig::supervisor::probe::HostProbe;
    /// let p = HostProbe::from_agent(Some("/opt/rankmig emulated-host : rsh"));
    /// assert_eq!(p.agent(), ["/opt/rankmig", "emulated-host"]);
    /// assert_eq!(HostProbe::from_agent(None).agent()[0], "ssh");
    /// assert!(HostProbe::from_agent(Some("none")).agent().is_empty());
    /// ```
    pub fn from_agent(agent: Option<&str>) -> Self {
        let agent: Vec<String> = match agent.map(str::trim) {
            Some("none") => Vec::new(),
            Some(a) if !a.is_empty() => a
                .split(':')
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            _ => DEFAULT_AGENT.iter().map(|s| (*s).to_owned()).collect(),
        };
        Self {
            agent,
            timeout: PROBE_TIMEOUT,
        }
    }

    /// The probe of this process's environment: `RANKMIG_PROBE_AGENT`, else the agent
    /// `launcher`'s variable sets, else `srun` inside a Slurm job, else `ssh`.
    pub fn from_env(launcher: &dyn crate::launcher::Launcher) -> Self {
        let agent = std::env::var(ENV_PROBE_AGENT)
            .ok()
            .or_else(|| launcher.agent_in_env())
            .or_else(|| {
                crate::rms::slurm::current_job().map(|_| crate::rms::slurm::PROBE_AGENT.to_owned())
            });
        Self::from_agent(agent.as_deref())
    }

    /// The agent's command line before the host name (empty: probing is off).
    pub fn agent(&self) -> &[String] {
        &self.agent
    }

    /// The hosts of `hosts` that do not answer, in the order given. All are probed at
    /// once, each for at most the probe's timeout. With probing off, none.
    pub fn unreachable(&self, hosts: &[String]) -> Vec<String> {
        if self.agent.is_empty() {
            return Vec::new();
        }
        let answers: Vec<bool> = std::thread::scope(|scope| {
            let probes: Vec<_> = hosts
                .iter()
                .map(|h| scope.spawn(move || self.answers(h)))
                .collect();
            probes
                .into_iter()
                .map(|p| p.join().unwrap_or(false))
                .collect()
        });
        hosts
            .iter()
            .zip(answers)
            .filter(|(_, ok)| !ok)
            .map(|(h, _)| h.clone())
            .collect()
    }

    /// True when `true` ran on `host` and exited 0 in time.
    fn answers(&self, host: &str) -> bool {
        let Some((program, args)) = self.agent.split_first() else {
            return true;
        };
        let mut command = Command::new(program);
        command.args(args).args([host, "true"]);
        crate::rms::output_within(&mut command, self.timeout).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_host_answers_when_the_agent_runs_true_there() {
        // `env HOST true` runs HOST as a command: "true" answers, a missing one not.
        let probe = HostProbe::from_agent(Some("env"));
        let lost = probe.unreachable(&["true".into(), "/nonexistent/host".into()]);
        assert_eq!(lost, ["/nonexistent/host"]);
        assert!(
            HostProbe::from_agent(Some("none"))
                .unreachable(&["x".into()])
                .is_empty()
        );
    }

    #[test]
    fn a_host_that_hangs_is_lost_after_the_timeout() {
        let probe = HostProbe {
            agent: vec!["sh".into(), "-c".into(), "sleep 5".into()],
            timeout: Duration::from_millis(200),
        };
        // `sh -c 'sleep 5' h1 true` hangs: lost after 0.2 s, not 5.
        let start = Instant::now();
        assert_eq!(probe.unreachable(&["h1".into()]), ["h1"]);
        assert!(start.elapsed() < Duration::from_secs(3));
    }
}
