//! The availability file as every rank sees it: rank 0 reads it and broadcasts what it
//! found, so all ranks take the same decision at the same call.

use std::path::{Path, PathBuf};

use mpi::topology::SimpleCommunicator;
use mpi::traits::Communicator;
use serde::{Deserialize, Serialize};

use crate::availability::{Availability, AvailabilityFormat};

use super::gather::broadcast_bytes;

/// What a check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WatchOutcome {
    /// The content is the one seen last time.
    Unchanged,
    /// A new content that parses and offers cores.
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

/// Watches an availability file by content (a hash of the bytes, not the mtime).
///
/// ```no_run
/// use rankmig::monitor::{AvailabilityWatcher, WatchOutcome};
/// let universe = mpi::initialize().expect("MPI");
/// let world = universe.world();
/// let mut watcher = AvailabilityWatcher::new("av");
/// if let WatchOutcome::Changed { availability } = watcher.check(&world) {
///     println!("{} nodes", availability.nodes().len());
/// }
/// ```
#[derive(Debug, Clone)]
pub struct AvailabilityWatcher {
    path: PathBuf,
    last_hash: u64,
}

impl AvailabilityWatcher {
    /// A watcher that has seen nothing yet: the first check reports the content.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::resume(path, 0)
    }

    /// A watcher that has already seen the content hashing to `last_hash` (handed over
    /// to a process that replaces rank 0).
    pub fn resume(path: impl Into<PathBuf>, last_hash: u64) -> Self {
        Self {
            path: path.into(),
            last_hash,
        }
    }

    /// Hash of the content seen last.
    pub fn last_hash(&self) -> u64 {
        self.last_hash
    }

    /// The file watched.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Collective over `comm`: rank 0 reads the file; every rank returns the same
    /// outcome. A refused edit is printed once by rank 0.
    pub fn check(&mut self, comm: &SimpleCommunicator) -> WatchOutcome {
        let mine = (comm.rank() == 0).then(|| {
            let (outcome, hash) = self.read();
            serde_json::to_vec(&(outcome, hash)).unwrap_or_default()
        });
        let bytes = broadcast_bytes(comm, mine);
        let (outcome, hash): (WatchOutcome, u64) =
            serde_json::from_slice(&bytes).unwrap_or((WatchOutcome::Unchanged, self.last_hash));
        self.last_hash = hash;
        if let (WatchOutcome::Refused { message }, 0) = (&outcome, comm.rank()) {
            eprintln!("rankmig: availability edit refused, the job keeps its placement: {message}");
        }
        outcome
    }

    /// Rank 0's reading: the outcome and the hash of what it read.
    fn read(&self) -> (WatchOutcome, u64) {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) => {
                let message = format!(
                    "{}: cannot read availability file: {e}",
                    self.path.display()
                );
                let hash = xxhash_rust::xxh3::xxh3_64(message.as_bytes()) | 1;
                return self.unless_seen(WatchOutcome::Refused { message }, hash);
            }
        };
        // Never 0: 0 means "nothing seen yet".
        let hash = xxhash_rust::xxh3::xxh3_64(&bytes) | 2;
        if hash == self.last_hash {
            return (WatchOutcome::Unchanged, hash);
        }
        let text = String::from_utf8_lossy(&bytes);
        let origin = self.path.display().to_string();
        let outcome = match Availability::parse(&text, &origin, AvailabilityFormat::Auto) {
            Ok(availability) => WatchOutcome::Changed { availability },
            Err(e) => WatchOutcome::Refused {
                message: e.to_string(),
            },
        };
        (outcome, hash)
    }

    fn unless_seen(&self, outcome: WatchOutcome, hash: u64) -> (WatchOutcome, u64) {
        if hash == self.last_hash {
            (WatchOutcome::Unchanged, hash)
        } else {
            (outcome, hash)
        }
    }
}
