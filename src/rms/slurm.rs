//! Slurm, asked through its own commands: `sinfo` for the state of the job's nodes,
//! `scontrol show reservation` for maintenance windows, `scontrol update JobId=…
//! NodeList=…` to hand nodes back.
//!
//! Every command runs with a timeout ([`super::COMMAND_TIMEOUT`]); a command that fails
//! or hangs is an error the caller reports, and the job keeps its placement.
//!
//! ```
//! use rankmig::rms::slurm::{parse_node_states, parse_reservations};
//! let nodes = parse_node_states("n1|mixed|none\nn3|drained|fan failure\n").unwrap();
//! assert_eq!(nodes[1].state, "drained");
//! assert_eq!(nodes[1].reason, "fan failure");
//! let text = "ReservationName=m1 StartTime=1795626565 EndTime=1795627165 \
//!             Duration=00:10:00 Nodes=n[2-3] NodeCnt=2 Flags=MAINT,IGNORE_JOBS,SPEC_NODES\n";
//! let r = parse_reservations(text).unwrap();
//! assert_eq!(r[0].nodes, ["n2", "n3"]);
//! assert!(r[0].maintenance);
//! assert!(parse_reservations("No reservations in the system\n").unwrap().is_empty());
//! ```

use std::path::Path;
use std::process::Command;

use super::{COMMAND_TIMEOUT, NodeStatus, Reservation, RmsError, output_within};
use crate::allocation::{Allocation, expand_counts, expand_hostlist};

/// The variable naming the Slurm job this process runs in.
pub const ENV_JOB_ID: &str = "SLURM_JOB_ID";

/// The variable giving the tasks per node of the Slurm job (`2,3(x2)`).
pub const ENV_TASKS_PER_NODE: &str = "SLURM_TASKS_PER_NODE";

/// The Slurm job this process runs in ([`ENV_JOB_ID`]), if any.
pub fn current_job() -> Option<String> {
    job_in(&|k: &str| std::env::var(k).ok())
}

/// The Slurm job the environment `env` reads names ([`ENV_JOB_ID`], not empty), if any.
pub fn job_in(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env(ENV_JOB_ID).filter(|v| !v.trim().is_empty())
}

/// The `sinfo` output format: node, long state, reason.
const SINFO_FORMAT: &str = "%N|%T|%E";

/// The rsh-like agent that runs a command on one node of the job through Slurm, for
/// probing hosts ([`crate::supervisor::probe`]): the host name and the command follow.
pub const PROBE_AGENT: &str = "srun --overlap --nodes=1 --ntasks=1 --quiet --nodelist";

/// Slurm's client commands, each given [`COMMAND_TIMEOUT`] to answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slurm;

impl Slurm {
    /// The state of each node of `nodes` (`sinfo -N -n …`).
    pub fn node_states(&self, nodes: &[String]) -> Result<Vec<NodeStatus>, RmsError> {
        let mut sinfo = Command::new("sinfo");
        sinfo
            .args(["--noheader", "--Node", "--nodes"])
            .arg(nodes.join(","))
            .args(["--format", SINFO_FORMAT]);
        parse_node_states(&output_within(&mut sinfo, COMMAND_TIMEOUT)?)
    }

    /// Every reservation (`scontrol show reservation`), times in Unix seconds.
    pub fn reservations(&self) -> Result<Vec<Reservation>, RmsError> {
        let mut scontrol = Command::new("scontrol");
        scontrol
            .args(["--oneliner", "show", "reservation"])
            .env("SLURM_TIME_FORMAT", "%s");
        parse_reservations(&output_within(&mut scontrol, COMMAND_TIMEOUT)?)
    }

    /// Shrinks job `job_id` to the nodes `keep` (`scontrol update JobId=… NodeList=…`):
    /// Slurm ends the job's processes on the others and may give them to other work.
    /// `scontrol` writes its environment-reset scripts into `dir`.
    pub fn release(&self, job_id: &str, keep: &[String], dir: &Path) -> Result<(), RmsError> {
        let mut scontrol = Command::new("scontrol");
        scontrol
            .current_dir(dir)
            .arg("update")
            .arg(format!("JobId={job_id}"))
            .arg(format!("NodeList={}", keep.join(",")));
        output_within(&mut scontrol, COMMAND_TIMEOUT).map(drop)
    }
}

/// The Slurm variables of a launch inside job whose nodes `released` were released:
/// the node list, node count, CPUs and tasks per node of the nodes kept, as Slurm's
/// own resize script sets them. `tasks_per_node` is the job's `SLURM_TASKS_PER_NODE`
/// before the release (the allocation's slots are used when it is absent or unusable).
///
/// ```
/// use rankmig::allocation::Allocation;
/// use rankmig::rms::slurm::shrunk_job_environment;
/// let a = Allocation::from_slurm("n[1-3]", Some("3(x3)")).unwrap();
/// let env = shrunk_job_environment(&a, &["n1".into()], Some("2,3(x2)"));
/// assert!(env.contains(&("SLURM_JOB_NODELIST".into(), "n2,n3".into())));
/// assert!(env.contains(&("SLURM_NNODES".into(), "2".into())));
/// assert!(env.contains(&("SLURM_JOB_CPUS_PER_NODE".into(), "3,3".into())));
/// assert!(env.contains(&("SLURM_TASKS_PER_NODE".into(), "3,3".into())));
/// ```
pub fn shrunk_job_environment(
    allocation: &Allocation,
    released: &[String],
    tasks_per_node: Option<&str>,
) -> Vec<(String, String)> {
    let hosts = allocation.hosts();
    let tasks = tasks_per_node
        .and_then(|t| expand_counts(t, hosts.len()).ok())
        .unwrap_or_else(|| hosts.iter().map(|h| h.slots).collect());
    let kept: Vec<(&str, usize, usize)> = hosts
        .iter()
        .zip(tasks)
        .filter(|(h, _)| !released.contains(&h.name))
        .map(|(h, t)| (h.name.as_str(), h.slots, t))
        .collect();
    let join = |f: &dyn Fn(&(&str, usize, usize)) -> String| {
        kept.iter().map(f).collect::<Vec<_>>().join(",")
    };
    let nodes = join(&|k| k.0.to_owned());
    let count = kept.len().to_string();
    vec![
        ("SLURM_JOB_NODELIST".into(), nodes.clone()),
        ("SLURM_NODELIST".into(), nodes),
        ("SLURM_JOB_NUM_NODES".into(), count.clone()),
        ("SLURM_NNODES".into(), count),
        ("SLURM_JOB_CPUS_PER_NODE".into(), join(&|k| k.1.to_string())),
        (ENV_TASKS_PER_NODE.into(), join(&|k| k.2.to_string())),
    ]
}

/// Reads `sinfo --format '%N|%T|%E'` lines; a node listed in several partitions is
/// kept once.
pub fn parse_node_states(text: &str) -> Result<Vec<NodeStatus>, RmsError> {
    let mut nodes: Vec<NodeStatus> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut fields = line.splitn(3, '|');
        let (Some(name), Some(state), Some(reason)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(RmsError::Output {
                command: "sinfo".into(),
                line: line.to_owned(),
                reason: format!("expected NODE|STATE|REASON ({SINFO_FORMAT})"),
            });
        };
        if nodes.iter().all(|n| n.name != name) {
            nodes.push(NodeStatus {
                name: name.to_owned(),
                state: state.to_owned(),
                reason: reason.trim().to_owned(),
            });
        }
    }
    Ok(nodes)
}

/// Reads `scontrol --oneliner show reservation` printed with `SLURM_TIME_FORMAT=%s`.
pub fn parse_reservations(text: &str) -> Result<Vec<Reservation>, RmsError> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ReservationName="))
        .map(parse_reservation)
        .collect()
}

fn parse_reservation(line: &str) -> Result<Reservation, RmsError> {
    let bad = |reason: String| RmsError::Output {
        command: "scontrol show reservation".into(),
        line: line.to_owned(),
        reason,
    };
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| bad(format!("no {key}=")))
    };
    let seconds = |key: &str| {
        let value = field(key)?;
        value.parse::<u64>().map_err(|_| {
            bad(format!(
                "{key}={value} is not in seconds (SLURM_TIME_FORMAT=%s)"
            ))
        })
    };
    let nodes = match field("Nodes")? {
        "(null)" | "" => Vec::new(),
        list => expand_hostlist(list).map_err(bad)?,
    };
    Ok(Reservation {
        name: field("ReservationName")?.to_owned(),
        nodes,
        start: seconds("StartTime")?,
        end: seconds("EndTime")?,
        maintenance: field("Flags")?
            .split(',')
            .any(|f| f.eq_ignore_ascii_case("MAINT")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_without_three_fields_or_a_time_not_in_seconds_is_an_error_that_shows_it() {
        let e = parse_node_states("n1 idle\n").expect_err("two fields");
        assert!(e.to_string().contains("\"n1 idle\""), "{e}");
        let e = parse_reservations(
            "ReservationName=m StartTime=2026-11-25T17:09:25 EndTime=1 Nodes=n1 Flags=MAINT\n",
        )
        .expect_err("a date, not seconds");
        assert!(
            e.to_string().contains("StartTime=2026-11-25T17:09:25"),
            "{e}"
        );
    }

    #[test]
    fn a_node_in_two_partitions_is_kept_once_with_its_reason_whole() {
        let nodes =
            parse_node_states("n1|drained|fan failure: replace | soon\nn1|drained|x\n").unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].reason, "fan failure: replace | soon");
    }
}
