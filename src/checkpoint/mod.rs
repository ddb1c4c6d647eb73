//! Application-level checkpoint/restart (issue 4).
//!
//! The application's state is any `Serialize + DeserializeOwned` value. A
//! [`CheckpointContext`] decides when to save (every N calls or about every S seconds,
//! decided collectively so all ranks save at the same call), serialises the state
//! into memory with bincode and writes it on a background thread (one write in
//! flight), one file per rank and one directory per epoch, atomically and with a
//! checksum. Soon after every rank has written and checked its file (see below), rank
//! 0 writes the epoch's commit marker; older epochs beyond `keep` are then removed. At restart the
//! ranks agree on the newest committed epoch whose files verify everywhere.
//!
//! ```no_run
//! # #[cfg(feature = "mpi")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, MpiCollective};
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct State { iter: u64, rows: Vec<f64> }
//!
//! let universe = mpi::initialize().ok_or("MPI already initialised")?;
//! let world = universe.world();
//! let mut ctx = CheckpointContext::new(CheckpointConfig::from_env()?, MpiCollective::new(&world))?;
//! let mut state = ctx.restore_or(|| State { iter: 0, rows: vec![0.0; 1 << 20] })?;
//! while state.iter < 1000 {
//!     // exchange halos, compute ...
//!     state.iter += 1;
//!     rankmig::checkpoint!(ctx, state);
//! }
//! ctx.finalize()?;
//! # Ok(()) }
//! # #[cfg(not(feature = "mpi"))]
//! # fn main() {}
//! ```
//!
//! Environment: `RANKMIG_CKPT_DIR`, `RANKMIG_CKPT_EVERY`, `RANKMIG_CKPT_SECONDS`,
//! `RANKMIG_CKPT_FIRST_SECONDS`,
//! `RANKMIG_CKPT_KEEP`, `RANKMIG_RESTART=1`, `RANKMIG_CKPT_JOB`,
//! `RANKMIG_CKPT_ALLOW_SHARED_DIR=1` (see [`config`]).
//!
//! Layout: `DIR/job-NAME/` per job name (see [`job_dir`]), holding
//! `epoch-000000000042/rank-000003.ckpt` (one file per rank, see [`storage`] for the
//! header), `epoch-.../COMMIT` (the commit marker, see [`epoch`]), and `.spare/`
//! (retired files overwritten in place by later saves, which is cheaper than unlinking
//! them and allocating new ones). Jobs sharing `DIR` number their epochs
//! independently; epochs lying directly in `DIR` (the layout before job directories)
//! are not read.
//!
//! The directory must be visible to every rank (a shared file system) since rank 0
//! writes the commit markers. An epoch is committed at the first collective check
//! after all writes finish: after a save the ranks check 1, 2, 4, ... calls apart with
//! a call interval, and 10 ms, 20 ms, 40 ms, ... apart (at most
//! [`context::COMMIT_CHECK_MAX`]) with a time interval; at the latest at the next save
//! or at [`CheckpointContext::finalize`].
//!
//! # The directory belongs to its user
//!
//! Whoever can write into the checkpoint directory could otherwise turn a save, a
//! restart or `rankmig inspect` against the user. So:
//!
//! - The directory must be owned by the user and not writable by its group or by
//!   others; otherwise [`CheckpointContext::new`] fails with
//!   [`CheckpointError::UnsafeDir`] naming it and its mode. To use a shared directory
//!   anyway, set `RANKMIG_CKPT_ALLOW_SHARED_DIR=1` or
//!   [`CheckpointConfig::allow_shared_dir`]. An empty path is refused.
//! - Nothing inside it is followed through a link: files are opened with
//!   `O_NOFOLLOW|O_NONBLOCK` (a FIFO never blocks) and checked on the open descriptor
//!   to be regular files of the user with one link; the job directory, epoch
//!   directories and `.spare` must be real directories of the user. Temporary files are created exclusively,
//!   mode 0600; a spare is reused only when it passes the same checks.
//! - A read never goes past the length the file's header announces, and that length
//!   must be the file's size.
//! - Only regular files and directories of the user are removed; an epoch holding
//!   anything else is left whole, with a note ([`CheckpointContext::notes`], also
//!   printed once on standard error).
//! - An unreadable file (an I/O error such as `EACCES`, or an entry failing the
//!   checks above) is not corruption: the epoch is skipped at restart and nothing is
//!   discarded. Only damaged or incomplete epochs are discarded.
//! - Retention and discarding touch only this job's epochs (same job name and rank
//!   count, from the commit marker or, without one, the rank files' headers).
//! - Epoch numbers never wrap: an epoch number without a successor is an error
//!   naming its directory.
//!
//! These checks guard against entries planted beforehand; they are not atomic
//! against another user racing in a shared directory, which is why such a
//! directory is refused by default.

pub mod bulk;
pub mod collective;
pub mod config;
pub mod context;
pub mod epoch;
pub mod error;
pub mod inspect;
pub mod job_dir;
pub mod levels;
#[cfg(feature = "mpi")]
pub mod mpi_collective;
pub mod partner;
pub mod payload;
pub mod restore;
pub mod storage;
pub mod thread_owner;
pub mod writer;

pub use collective::{Collective, ExchangeInProgress, Exchanged, LocalCollective};
pub use config::{CheckpointConfig, Interval};
pub use context::{CheckpointContext, Handover};
pub use error::CheckpointError;
pub use inspect::{InspectReport, inspect};
#[cfg(feature = "mpi")]
pub use mpi_collective::MpiCollective;

#[cfg(test)]
mod context_tests;
#[cfg(test)]
mod levels_tests;
