//! The availability file as every rank sees it: rank 0 reads it and broadcasts what it
//! found, so all ranks take the same decision at the same call.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mpi::traits::Communicator;
use serde::{Deserialize, Serialize};

use crate::availability::{Availability, AvailabilityDiff, AvailabilityFormat};

use super::gather::broadcast_bytes;

/// What a check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WatchOutcome {
    /// The content is the one seen last time.
    Unchanged,
    /// A new content that parses, offers cores and differs from the current view (the
    /// difference: [`AvailabilityWatcher::last_diff`]).
    Changed {
        /// The new availability.
        availability: Availability,
    },
    /// A new content that is refused (parse error, no cores, unreadable or deleted file):
    /// the job keeps its placement. The same content is not reported again.
    Refused {
        /// One line naming the file, the line and the value.
        message: String,
    },
}

/// Watches an availability file by content (a hash of the bytes, not the mtime), and
/// holds the availability the job currently follows.
///
/// A bad edit (parse error, half-written line, no cores at all, unreadable or deleted
/// file) is [`WatchOutcome::Refused`] once, keeps the current view, and the file is read
/// again at the next check, so a later good edit is seen. Content that parses to the
/// current view (a revert, a comment) is [`WatchOutcome::Unchanged`].
///
/// ```no_run
/// use rankmig::availability::{Availability, AvailabilityFormat};
/// use rankmig::monitor::{AvailabilityWatcher, WatchOutcome};
/// let universe = mpi::initialize().expect("MPI");
/// let world = universe.world();
/// let now = Availability::load("av".as_ref(), AvailabilityFormat::Auto)?;
/// let mut watcher = AvailabilityWatcher::with_current("av", now);
/// if let WatchOutcome::Changed { availability } = watcher.check(&world) {
///     let diff = watcher.last_diff().expect("set by a change");
///     println!("{} nodes now: {diff}", availability.nodes().len());
/// }
/// # Ok::<(), rankmig::availability::AvailabilityError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AvailabilityWatcher {
    path: PathBuf,
    /// Hash of the content (or of the read error) seen last; 0 = nothing seen yet.
    last_hash: u64,
    current: Option<Availability>,
    last_diff: Option<AvailabilityDiff>,
    allocation: Vec<String>,
    lost_hosts: Vec<String>,
    /// What a content naming a host outside `allocation` gets.
    new_hosts: NewHosts,
    /// How long a new content must stay the same before it is acted on.
    settle: Duration,
    /// A new content seen by rank 0 and not yet acted on: its hash, when first seen.
    pending: Option<(u64, Instant)>,
    /// Rank 0 reports no change before this instant ([`AvailabilityWatcher::retry_later`]).
    quiet_until: Option<Instant>,
    /// Where rank 0 keeps a copy of each content it accepts
    /// ([`AvailabilityWatcher::keeping_accepted`]).
    accepted_copy: Option<PathBuf>,
}

impl AvailabilityWatcher {
    /// A watcher that has seen nothing yet: the first check reports the content.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::resume(path, 0)
    }

    /// A watcher whose job follows `current`: the first check reports a change only if
    /// the file says something else.
    pub fn with_current(path: impl Into<PathBuf>, current: Availability) -> Self {
        Self {
            current: Some(current),
            ..Self::new(path)
        }
    }

    /// A watcher that has already seen the content hashing to `last_hash` (handed over
    /// to a process that replaces rank 0).
    pub fn resume(path: impl Into<PathBuf>, last_hash: u64) -> Self {
        Self {
            path: path.into(),
            last_hash,
            current: None,
            last_diff: None,
            allocation: Vec::new(),
            lost_hosts: Vec::new(),
            new_hosts: NewHosts::default(),
            settle: Duration::ZERO,
            pending: None,
            quiet_until: None,
            accepted_copy: None,
        }
    }

    /// Takes back the last change: the job could not carry it out and still follows
    /// `previous` (the view before it, whose file content hashed to `previous_hash`).
    /// The file's content is then a change again, reported at the first check after
    /// `delay`. Collective in effect: every rank must call it alike.
    ///
    /// ```
    /// use std::time::Duration;
    /// use rankmig::monitor::watch::AvailabilityWatcher;
    /// let mut w = AvailabilityWatcher::new("av").planned(b"n1 2\n");
    /// let (view, hash) = (w.current().cloned(), w.last_hash());
    /// // ... a check reports an edit, which the job cannot carry out ...
    /// w.retry_later(view, hash, Duration::from_secs(10));
    /// assert_eq!(w.last_hash(), hash);
    /// ```
    pub fn retry_later(
        &mut self,
        previous: Option<Availability>,
        previous_hash: u64,
        delay: Duration,
    ) {
        self.current = previous;
        self.last_hash = previous_hash;
        self.pending = None;
        self.quiet_until = Some(Instant::now() + delay);
    }

    /// The same watcher acting on an edit only once the file has kept the same content
    /// for `settle` (as rank 0 sees it at its checks): a file written in two steps
    /// gives one change, not two. The first content a new watcher reads is taken at
    /// once. `Duration::ZERO` (the default) acts at the first check that sees an edit.
    pub fn settling(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// The same watcher keeping, at `copy`, the bytes of each content rank 0 accepts (a
    /// [`WatchOutcome::Changed`]), replaced atomically: `rankmig run` relaunches on it
    /// when the file is unusable at a relaunch. A copy that cannot be written is logged.
    pub fn keeping_accepted(mut self, copy: Option<PathBuf>) -> Self {
        self.accepted_copy = copy;
        self
    }

    /// The same watcher following `current` (e.g. after [`AvailabilityWatcher::resume`]).
    pub fn following(mut self, current: Option<Availability>) -> Self {
        self.current = current;
        self
    }

    /// Multi-host mode: a content naming a host outside `allocation` is refused (file,
    /// line and host named), and the hosts of `lost` offer no core whatever the file
    /// says. An empty `allocation` accepts any name (logical nodes).
    pub fn in_allocation(mut self, allocation: Vec<String>, lost: Vec<String>) -> Self {
        self.allocation = allocation;
        self.lost_hosts = lost;
        self
    }

    /// The same watcher with `policy` for hosts outside the allocation (refused by
    /// default).
    pub fn new_hosts(mut self, policy: NewHosts) -> Self {
        self.new_hosts = policy;
        self
    }

    /// The same watcher for a job placed for the content `bytes` of its file (a copy
    /// the launcher kept): it follows that content, so the first check reports a change
    /// (after the settle time) only when the file now says something else. Apply it
    /// after [`AvailabilityWatcher::in_allocation`] and
    /// [`AvailabilityWatcher::new_hosts`]. Content it would refuse leaves the watcher
    /// as it was (its first check then takes the file as it is).
    ///
    /// ```
    /// use rankmig::monitor::watch::AvailabilityWatcher;
    /// let w = AvailabilityWatcher::new("av").planned(b"n1 2\nn2 2\n");
    /// assert_eq!(w.current().map(|a| a.total_cores()), Some(4));
    /// assert_ne!(w.last_hash(), 0);
    /// ```
    pub fn planned(mut self, bytes: &[u8]) -> Self {
        if let WatchOutcome::Changed { availability } = self.judge(bytes) {
            self.last_hash = content_hash(bytes);
            self.current = Some(availability);
        }
        self
    }

    /// Hash of the content acted on last.
    pub fn last_hash(&self) -> u64 {
        self.last_hash
    }

    /// The file watched.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The availability the job follows (the last accepted one).
    pub fn current(&self) -> Option<&Availability> {
        self.current.as_ref()
    }

    /// What the last [`WatchOutcome::Changed`] changed (from nothing, the first time a
    /// watcher without a current view accepts a file: every node is added).
    pub fn last_diff(&self) -> Option<&AvailabilityDiff> {
        self.last_diff.as_ref()
    }

    /// Collective over `comm`: rank 0 reads the file; every rank returns the same
    /// outcome and updates its view the same way. A refused edit is logged once, by
    /// rank 0 (`log` warning). With a settle time, a new content is reported only once
    /// rank 0 has seen it unchanged for that long ([`AvailabilityWatcher::settling`]).
    pub fn check<C: Communicator>(&mut self, comm: &C) -> WatchOutcome {
        self.check_carrying::<C, ()>(comm, None).0
    }

    /// [`AvailabilityWatcher::check`] whose broadcast also carries rank 0's `note` (the
    /// job's decisions taken on rank 0: the contention watch's, [`crate::contention`],
    /// and whether the matrix is written) to every rank: no collective of its own.
    /// `note` is read on rank 0 only; every rank returns rank 0's.
    pub fn check_carrying<C: Communicator, N: Serialize + serde::de::DeserializeOwned>(
        &mut self,
        comm: &C,
        note: Option<N>,
    ) -> (WatchOutcome, Option<N>) {
        let mine = (comm.rank() == 0).then(|| {
            let (outcome, hash) = self.read_settled();
            serde_json::to_vec(&(outcome, hash, note)).unwrap_or_default()
        });
        let bytes = broadcast_bytes(comm, mine);
        let (outcome, hash, note): (WatchOutcome, u64, Option<N>) = serde_json::from_slice(&bytes)
            .unwrap_or((WatchOutcome::Unchanged, self.last_hash, None));
        self.last_hash = hash;
        match &outcome {
            WatchOutcome::Changed { availability } => {
                self.last_diff = Some(match self.current.take() {
                    Some(before) => before.diff(availability),
                    None => AvailabilityDiff {
                        added: (availability.nodes().iter())
                            .map(|n| (n.name.clone(), n.cores))
                            .collect(),
                        ..AvailabilityDiff::default()
                    },
                });
                self.current = Some(availability.clone());
            }
            WatchOutcome::Refused { message } if comm.rank() == 0 => {
                log::warn!("availability edit refused, the job keeps its placement: {message}");
            }
            _ => {}
        }
        (outcome, note)
    }

    /// Rank 0's reading, held back while a new content has not settled: then the
    /// outcome is `Unchanged`, the hash stays the last one acted on, and the content is
    /// not parsed.
    fn read_settled(&mut self) -> (WatchOutcome, u64) {
        if self.quiet_until.is_some_and(|t| Instant::now() < t) {
            return (WatchOutcome::Unchanged, self.last_hash);
        }
        self.quiet_until = None;
        let (content, hash) = self.read_content();
        if hash == self.last_hash {
            self.pending = None;
            return (WatchOutcome::Unchanged, hash);
        }
        if self.holding_back(hash) {
            return (WatchOutcome::Unchanged, self.last_hash);
        }
        let outcome = match content {
            Ok(bytes) => {
                let outcome = self.judge(&bytes);
                if matches!(outcome, WatchOutcome::Changed { .. }) {
                    self.keep_accepted(&bytes);
                }
                outcome
            }
            Err(message) => WatchOutcome::Refused { message },
        };
        (outcome, hash)
    }

    /// Writes `bytes` to the accepted copy, if kept: a temporary file renamed over it.
    fn keep_accepted(&self, bytes: &[u8]) {
        let Some(copy) = &self.accepted_copy else {
            return;
        };
        let tmp = copy.with_extension("tmp");
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, copy));
        if let Err(e) = written {
            log::warn!(
                "cannot keep the accepted availability in {}: {e}",
                copy.display()
            );
        }
    }

    /// True while a new content (hash `hash`) has not stayed the same for the settle
    /// time. The first content a watcher reads is never held back.
    fn holding_back(&mut self, hash: u64) -> bool {
        if self.last_hash == 0 || self.settle.is_zero() {
            self.pending = None;
            return false;
        }
        match self.pending {
            Some((seen, since)) if seen == hash => {
                let settled = since.elapsed() >= self.settle;
                if settled {
                    self.pending = None;
                }
                !settled
            }
            _ => {
                self.pending = Some((hash, Instant::now()));
                true
            }
        }
    }

    /// The file's bytes, or why it cannot be read, and the hash of either: content
    /// hashes are even, read-error hashes odd, and never 0 ("nothing seen yet").
    fn read_content(&self) -> (Result<Vec<u8>, String>, u64) {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                let hash = content_hash(&bytes);
                (Ok(bytes), hash)
            }
            Err(e) => {
                let message = format!(
                    "{}: cannot read availability file: {e}",
                    self.path.display()
                );
                let hash = xxhash_rust::xxh3::xxh3_64(message.as_bytes()) | 1;
                (Err(message), hash)
            }
        }
    }

    /// What a new content means for the job: a change, the current view again, or a
    /// refusal naming the file, line and value.
    fn judge(&self, bytes: &[u8]) -> WatchOutcome {
        let text = String::from_utf8_lossy(bytes);
        let origin = self.path.display().to_string();
        let parsed = Availability::parse(&text, &origin, AvailabilityFormat::Auto)
            .map_err(|e| e.to_string())
            .and_then(|a| self.within_allocation(a, &origin));
        match parsed {
            Ok(availability)
                if self
                    .current
                    .as_ref()
                    .is_some_and(|c| same_offers(c, &availability)) =>
            {
                WatchOutcome::Unchanged
            }
            Ok(availability) => WatchOutcome::Changed { availability },
            Err(message) => WatchOutcome::Refused { message },
        }
    }

    /// The availability as the job may use it: refused when it names a host outside
    /// the allocation; lost hosts removed.
    fn within_allocation(
        &self,
        availability: Availability,
        origin: &str,
    ) -> Result<Availability, String> {
        use crate::allocation::{check_hosts, without_lost_hosts};
        if self.allocation.is_empty() {
            return Ok(availability);
        }
        match &self.new_hosts {
            NewHosts::Allowed => {}
            NewHosts::Refused { why } => check_hosts(&self.allocation, &availability, origin)
                .map_err(|e| format!("{e} ({why})"))?,
        }
        without_lost_hosts(&availability, &self.lost_hosts).map_err(|e| {
            format!(
                "{origin}: {e} (hosts lost earlier: {})",
                self.lost_hosts.join(", ")
            )
        })
    }
}

/// The hash of a file content: even, never 0 (read errors hash odd).
fn content_hash(bytes: &[u8]) -> u64 {
    (xxhash_rust::xxh3::xxh3_64(bytes) & !1) | 2
}

/// What a watcher in multi-host mode does with a content naming a host outside the
/// allocation ([`AvailabilityWatcher::new_hosts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewHosts {
    /// Refused, the refusal saying `why` (what would allow it, or what cannot).
    Refused {
        /// Appended to the refusal, in parentheses.
        why: String,
    },
    /// Taken like the others (`rankmig run --allow-new-hosts`): its ranks are spawned
    /// there.
    Allowed,
}

impl Default for NewHosts {
    fn default() -> Self {
        Self::Refused {
            why: "only hosts of the allocation can be used".into(),
        }
    }
}

/// Same nodes, cores and CPUs in the same order (line numbers aside).
fn same_offers(a: &Availability, b: &Availability) -> bool {
    let key = |n: &crate::availability::NodeOffer| (n.name.clone(), n.cores, n.cpus.clone());
    a.nodes().len() == b.nodes().len() && a.nodes().iter().map(key).eq(b.nodes().iter().map(key))
}
