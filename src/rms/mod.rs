//! Resource managers: what the batch system says about the job's nodes, turned into
//! the availability the job follows.
//!
//! With `rankmig run --rms slurm`, nobody edits an availability file: the supervisor
//! asks Slurm ([`slurm`]) about the nodes of the job's allocation every check interval.
//! Each node offers the CPUs the allocation gives it there, or none when Slurm wants it
//! back ([`Withdrawal`]): it is drained, draining, down or failing, or a maintenance
//! reservation (`flags=maint`) on it starts within the lead time (`--rms-lead`). An
//! availability file given beside it (`--availability`) caps each node's offer.
//!
//! ```
//! use rankmig::allocation::Allocation;
//! use rankmig::rms::{NodeStatus, Reservation, node_offers};
//! let allocation = Allocation::from_slurm("n[1-3]", Some("3(x3)")).unwrap();
//! let status = |name: &str, state: &str, reason: &str| NodeStatus {
//!     name: name.into(), state: state.into(), reason: reason.into(),
//! };
//! let statuses = [status("n1", "mixed", "none"), status("n2", "drained", "fan failure"),
//!                 status("n3", "allocated", "none")];
//! let maint = Reservation { name: "m1".into(), nodes: vec!["n3".into()],
//!                           start: 1_090, end: 2_000, maintenance: true };
//! let offers = node_offers(&allocation, &statuses, &[maint], None, 1_000, 300).unwrap();
//! assert_eq!(offers.iter().map(|o| o.cores).collect::<Vec<_>>(), [3, 0, 0]);
//! assert_eq!(offers[1].withdrawal.as_ref().unwrap().to_string(), "drained: fan failure");
//! assert_eq!(offers[2].withdrawal.as_ref().unwrap().to_string(),
//!            "maintenance reservation m1 starts in 90 s");
//! ```

pub mod slurm;

use std::fmt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::allocation::Allocation;
use crate::availability::Availability;

/// How long a command of the resource manager may take before it counts as hung.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(15);

/// Default lead time (`--rms-lead`): a node whose maintenance starts within it is
/// emptied now.
pub const DEFAULT_LEAD_SECONDS: u64 = 300;

/// File of the run directory into which the supervisor writes the availability the
/// resource manager gives; the ranks watch it as they watch an edited file.
pub const RMS_AVAILABILITY: &str = "rms-availability";

/// A resource manager `rankmig run` can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ResourceManager {
    /// Slurm (`sinfo`, `scontrol`), inside a job allocation (`salloc`, `sbatch`).
    Slurm,
}

/// What `rankmig run --rms` was asked to do; saved in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmsSettings {
    /// The resource manager.
    pub manager: ResourceManager,
    /// The job whose nodes are followed (`SLURM_JOB_ID`).
    pub job_id: String,
    /// Seconds before a maintenance reservation starts when its nodes are emptied.
    pub lead_seconds: u64,
    /// Hand nodes that Slurm wants back to it once no rank runs there
    /// (`--rms-release`).
    pub release: bool,
    /// An availability file that caps each node's offer (`--availability` beside
    /// `--rms`).
    pub cap: Option<std::path::PathBuf>,
}

/// What the resource manager reports about one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    /// The node.
    pub name: String,
    /// Its state as the resource manager prints it (`idle`, `mixed`, `drained`,
    /// `down*`, ...).
    pub state: String,
    /// The reason an administrator gave (`none` when there is none).
    pub reason: String,
}

impl NodeStatus {
    /// True when the state means the node must not hold ranks: drained, draining,
    /// down or failing (with or without Slurm's `*`, not responding).
    ///
    /// ```
    /// use rankmig::rms::NodeStatus;
    /// let s = |state: &str| NodeStatus { name: "n1".into(), state: state.into(), reason: "none".into() };
    /// assert!(s("drained").is_unavailable() && s("draining").is_unavailable());
    /// assert!(s("down*").is_unavailable() && s("failing").is_unavailable());
    /// assert!(!s("mixed").is_unavailable() && !s("allocated").is_unavailable());
    /// ```
    pub fn is_unavailable(&self) -> bool {
        let state = self
            .state
            .trim_end_matches(['*', '~', '#', '%', '$', '@', '^', '-', '!']);
        ["drain", "down", "fail"]
            .iter()
            .any(|s| state.starts_with(s))
    }
}

/// A reservation of nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// Its name.
    pub name: String,
    /// The nodes it holds.
    pub nodes: Vec<String>,
    /// When it starts and ends, in seconds since the Unix epoch.
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// A maintenance reservation (`flags=maint`).
    pub maintenance: bool,
}

/// Why the resource manager wants a node back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Withdrawal {
    /// Drained, draining, down or failing.
    Unavailable {
        /// The state.
        state: String,
        /// The reason given (`none` when none).
        reason: String,
    },
    /// A maintenance reservation starts within the lead time, or has started.
    Maintenance {
        /// The reservation.
        reservation: String,
        /// Seconds until it starts (0: started).
        starts_in: u64,
    },
}

impl fmt::Display for Withdrawal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable { state, reason } if reason == "none" || reason.is_empty() => {
                write!(f, "{state}")
            }
            Self::Unavailable { state, reason } => write!(f, "{state}: {reason}"),
            Self::Maintenance {
                reservation,
                starts_in: 0,
            } => write!(f, "in maintenance reservation {reservation}"),
            Self::Maintenance {
                reservation,
                starts_in,
            } => write!(
                f,
                "maintenance reservation {reservation} starts in {starts_in} s"
            ),
        }
    }
}

/// One node's offer, and why it is 0 when the resource manager wants the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmsOffer {
    /// The node.
    pub name: String,
    /// Cores it offers.
    pub cores: usize,
    /// Why the resource manager wants it back, if it does.
    pub withdrawal: Option<Withdrawal>,
}

/// Why the resource manager could not be asked, or its answer not read.
#[derive(Debug, thiserror::Error)]
pub enum RmsError {
    /// The command could not be started.
    #[error("{command}: cannot run: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The error.
        source: std::io::Error,
    },
    /// The command did not end in time.
    #[error("{command}: no answer after {} s", seconds)]
    TimedOut {
        /// The command.
        command: String,
        /// The timeout.
        seconds: u64,
    },
    /// The command failed.
    #[error("{command}: exit {code}: {stderr}")]
    Failed {
        /// The command.
        command: String,
        /// Its exit code (-1: killed by a signal).
        code: i32,
        /// What it wrote on standard error.
        stderr: String,
    },
    /// Its output does not read as expected.
    #[error("{command}: unexpected output line {line:?}: {reason}")]
    Output {
        /// The command.
        command: String,
        /// The line.
        line: String,
        /// What is wrong.
        reason: String,
    },
    /// A node of the allocation is missing from the answer.
    #[error("{command} says nothing of node {node}")]
    MissingNode {
        /// The command.
        command: String,
        /// The node.
        node: String,
    },
    /// The availability file that caps the offers is unusable.
    #[error(transparent)]
    Cap(#[from] crate::availability::AvailabilityError),
    /// The availability file could not be written.
    #[error("{}: cannot write: {reason}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// `--rms slurm` outside a Slurm job.
    #[error(
        "--rms slurm needs a Slurm job: run it inside salloc or an sbatch script ({0} is not set)"
    )]
    NotInJob(&'static str),
}

/// The offer of each node of `allocation`, in its order: its slots, capped by `cap`
/// (a node `cap` leaves out offers 0), or 0 when the resource manager wants it back.
/// `now` and the reservations' times are seconds since the Unix epoch. A node missing
/// from `statuses` is an error: the caller keeps the job where it is.
pub fn node_offers(
    allocation: &Allocation,
    statuses: &[NodeStatus],
    reservations: &[Reservation],
    cap: Option<&Availability>,
    now: u64,
    lead_seconds: u64,
) -> Result<Vec<RmsOffer>, RmsError> {
    allocation
        .hosts()
        .iter()
        .map(|host| {
            let status = statuses
                .iter()
                .find(|s| s.name == host.name)
                .ok_or_else(|| RmsError::MissingNode {
                    command: "the resource manager".into(),
                    node: host.name.clone(),
                })?;
            let withdrawal = withdrawal(status, reservations, now, lead_seconds);
            let cores = match (&withdrawal, cap) {
                (Some(_), _) => 0,
                (None, Some(cap)) => host.slots.min(cap.cores(&host.name)),
                (None, None) => host.slots,
            };
            Ok(RmsOffer {
                name: host.name.clone(),
                cores,
                withdrawal,
            })
        })
        .collect()
}

/// Why the resource manager wants the node of `status` back, if it does: its state
/// first, then the earliest maintenance reservation on it that has started or starts
/// within `lead_seconds` of `now` and has not ended.
pub fn withdrawal(
    status: &NodeStatus,
    reservations: &[Reservation],
    now: u64,
    lead_seconds: u64,
) -> Option<Withdrawal> {
    if status.is_unavailable() {
        return Some(Withdrawal::Unavailable {
            state: status.state.clone(),
            reason: status.reason.clone(),
        });
    }
    reservations
        .iter()
        .filter(|r| r.maintenance && r.end > now && r.nodes.contains(&status.name))
        .filter(|r| r.start <= now.saturating_add(lead_seconds))
        .min_by_key(|r| r.start)
        .map(|r| Withdrawal::Maintenance {
            reservation: r.name.clone(),
            starts_in: r.start.saturating_sub(now),
        })
}

/// The offers as an availability file in the native form, one `NAME CORES` line per
/// node, the reason a node offers nothing as a comment.
///
/// ```
/// use rankmig::rms::{RmsOffer, Withdrawal, availability_text};
/// let offers = [
///     RmsOffer { name: "n1".into(), cores: 3, withdrawal: None },
///     RmsOffer { name: "n2".into(), cores: 0, withdrawal: Some(Withdrawal::Unavailable {
///         state: "drained".into(), reason: "fan failure".into() }) },
/// ];
/// assert_eq!(availability_text(&offers), "n1 3\nn2 0 # drained: fan failure\n");
/// ```
pub fn availability_text(offers: &[RmsOffer]) -> String {
    let mut text = String::new();
    for offer in offers {
        text.push_str(&format!("{} {}", offer.name, offer.cores));
        if let Some(why) = &offer.withdrawal {
            text.push_str(&format!(" # {why}"));
        }
        text.push('\n');
    }
    text
}

/// Seconds since the Unix epoch now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Runs `command`, waiting at most `timeout`, and returns its standard output.
pub fn output_within(command: &mut Command, timeout: Duration) -> Result<String, RmsError> {
    let shown = format!("{command:?}").replace('"', "");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| RmsError::Spawn {
            command: shown.clone(),
            source,
        })?;
    // Read both pipes while waiting, so a long answer cannot fill one and stall.
    let out = read_all(child.stdout.take());
    let err = read_all(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RmsError::TimedOut {
                    command: shown,
                    seconds: timeout.as_secs(),
                });
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        return Err(RmsError::Failed {
            command: shown,
            code: status.code().unwrap_or(-1),
            stderr: stderr.trim().to_owned(),
        });
    }
    Ok(stdout)
}

/// Reads `pipe` to its end on a thread of its own.
fn read_all<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut text);
        }
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_that_hangs_is_reported_after_the_timeout_and_one_that_fails_with_its_stderr() {
        let start = Instant::now();
        let hung = output_within(Command::new("sleep").arg("5"), Duration::from_millis(200));
        assert!(matches!(hung, Err(RmsError::TimedOut { .. })), "{hung:?}");
        assert!(start.elapsed() < Duration::from_secs(3));
        let failed = output_within(
            Command::new("sh").args(["-c", "echo broken >&2; exit 3"]),
            COMMAND_TIMEOUT,
        );
        let message = failed.expect_err("exit 3").to_string();
        assert!(message.contains("exit 3: broken"), "{message}");
        let ok = output_within(Command::new("echo").arg("n1"), COMMAND_TIMEOUT);
        assert_eq!(ok.expect("echo runs"), "n1\n");
    }

    #[test]
    fn an_availability_file_caps_each_node_and_a_node_it_leaves_out_offers_nothing() {
        let allocation = Allocation::from_slurm("n[1-3]", Some("3(x3)")).unwrap();
        let statuses: Vec<NodeStatus> = ["n1", "n2", "n3"]
            .iter()
            .map(|n| NodeStatus {
                name: (*n).into(),
                state: "mixed".into(),
                reason: "none".into(),
            })
            .collect();
        let cap = Availability::parse("n1 2\nn2 8\n", "cap", Default::default()).unwrap();
        let offers = node_offers(&allocation, &statuses, &[], Some(&cap), 0, 300).unwrap();
        let cores: Vec<usize> = offers.iter().map(|o| o.cores).collect();
        assert_eq!(cores, [2, 3, 0]);
        let missing = node_offers(&allocation, &statuses[..2], &[], None, 0, 300);
        assert!(
            matches!(missing, Err(RmsError::MissingNode { ref node, .. }) if node == "n3"),
            "{missing:?}"
        );
    }

    #[test]
    fn a_maintenance_window_counts_only_within_the_lead_and_before_its_end() {
        let status = NodeStatus {
            name: "n1".into(),
            state: "allocated".into(),
            reason: "none".into(),
        };
        let maint = |start, end, maintenance| Reservation {
            name: "r".into(),
            nodes: vec!["n1".into()],
            start,
            end,
            maintenance,
        };
        assert!(withdrawal(&status, &[maint(1_500, 2_000, true)], 1_000, 300).is_none());
        assert!(withdrawal(&status, &[maint(1_300, 2_000, true)], 1_000, 300).is_some());
        assert!(withdrawal(&status, &[maint(500, 2_000, true)], 1_000, 300).is_some());
        assert!(withdrawal(&status, &[maint(500, 900, true)], 1_000, 300).is_none());
        assert!(withdrawal(&status, &[maint(1_100, 2_000, false)], 1_000, 300).is_none());
    }
}
