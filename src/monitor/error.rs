//! What can go wrong in the monitor (all of it recoverable: the job may go on).

use std::path::PathBuf;

use crate::planner::PlacementError;

/// Why a monitor operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// An environment variable holds a value that cannot be used.
    #[error("{name}={value:?}: {reason}")]
    Env {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The placement file named by `RANKMIG_PLACEMENT` cannot be used.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// The placement file has no line for this rank.
    #[error("{}: no line for rank {rank} (the file places {ranks} ranks)", path.display())]
    NotPlaced {
        /// The placement file.
        path: PathBuf,
        /// This rank.
        rank: usize,
        /// Ranks the file places.
        ranks: usize,
    },
    /// The process could not be bound to its core (it may run unbound).
    #[error("cannot bind to real core {core}: {why}")]
    Bind {
        /// The real core (hwloc logical index).
        core: usize,
        /// Why.
        why: String,
    },
    /// The process could not be bound to its CPUs (it may run unbound).
    #[error("cannot bind to CPUs {cpus}: {why}")]
    BindCpus {
        /// The CPUs (OS numbers, as a list such as `0-1`).
        cpus: String,
        /// Why.
        why: String,
    },
    /// A matrix could not be written.
    #[error("{}: cannot write the matrix: {source}", path.display())]
    Export {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
