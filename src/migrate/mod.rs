//! Live migration with the rank count kept.
//!
//! An application holds a [`Job`]: it talks through [`Job::comm`] and calls
//! [`crate::checkpoint!`] on the job at a safe point of its main loop. Every
//! `RANKMIG_CHECK_EVERY` calls the ranks agree on one view of the availability file
//! (rank 0 reads it and broadcasts); when it changed, they gather their locations, rank
//! 0 plans with the two-step planner and broadcasts the plan, and if ranks must move:
//! replacement processes are spawned (`MPI_Comm_spawn`), each receives the state of the
//! rank it replaces straight from that rank's memory, a communicator with the same size
//! and rank numbers is built (merge, then split keyed by the old rank), the temporary
//! communicators are freed, and the replaced processes exit. If the spawn fails, no rank
//! leaves and the run directory records why.
//!
//! This module is the runtime inside every application process. What differs between
//! MPI implementations (how a replaced rank leaves, the spawn info keys, whether a spawn
//! back onto a left host works) it asks [`crate::launcher`]. What it shares with
//! `rankmig run` ([`crate::supervisor`], a separate program) is the run directory
//! ([`crate::run_dir`]): the settings it is started with, the records it writes, the
//! spawn marker and the replacement launch requests; the two never import each other.

#[cfg(feature = "mpi")]
pub mod finalize;
#[cfg(feature = "mpi")]
pub mod job;
#[cfg(feature = "mpi")]
pub mod protocol;
pub mod state_buffer;
pub mod state_message;
pub mod timeline;

#[cfg(feature = "mpi")]
pub use job::Job;

/// Why a migration step failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// A checkpoint operation failed.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// The placement file could not be read.
    #[error(transparent)]
    Placement(#[from] crate::planner::PlacementError),
    /// The replacement processes could not be spawned.
    #[error("cannot spawn '{program}': {why}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        why: String,
    },
    /// A message between old and new processes was malformed.
    #[error("migration message: {0}")]
    Message(#[from] serde_json::Error),
    /// The state could not be (de)serialised.
    #[error("cannot transfer the state: {0}")]
    State(String),
    /// The protocol went wrong.
    #[error("migration protocol: {0}")]
    Protocol(&'static str),
    /// A `RANKMIG_*` variable has a value the job cannot use.
    #[error(transparent)]
    Settings(#[from] crate::run_dir::settings::SettingsError),
    /// A process of a background spawn was dismissed before it joined the job (the
    /// application ended first): it leaves.
    #[error("the migration this process was started for was called off")]
    Dismissed,
    /// A replacement launched by `rankmig run` could not read its request or say
    /// it is ready.
    #[error(transparent)]
    Request(#[from] crate::run_dir::launch_request::RequestError),
    /// An I/O error (run directory, executable path).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An output file written through rankmig could not be opened, written, flushed or
    /// handed over ([`crate::output_files`]).
    #[error(transparent)]
    Output(#[from] crate::output_files::OutputError),
}
