//! Application-level checkpoint/restart (issue 4).
//!
//! The application's state is any `Serialize + DeserializeOwned` value. A
//! [`CheckpointContext`] decides when to save (every N calls or about every S seconds,
//! decided collectively so all ranks save at the same call), serialises the state
//! into memory with bincode and writes it on a background thread (one write in
//! flight), one file per rank and one directory per epoch, atomically and with a
//! checksum. Once every rank has written and checked its file, rank 0 writes the
//! epoch's commit marker; older epochs beyond `keep` are then removed. At restart the
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
//! `RANKMIG_CKPT_KEEP`, `RANKMIG_RESTART=1`, `RANKMIG_CKPT_JOB` (see [`config`]).
//!
//! Layout: `DIR/epoch-000000000042/rank-000003.ckpt` (one file per rank, see
//! [`storage`] for the header), `DIR/epoch-.../COMMIT` (the commit marker, see
//! [`epoch`]), and `DIR/.spare/` (retired files overwritten in place by later saves,
//! which is cheaper than unlinking them and allocating new ones).
//!
//! The directory must be visible to every rank (a shared file system) since rank 0
//! writes the commit markers. An epoch is committed at the first collective check
//! after all writes finish (half-way to the next save with a call interval, at the
//! next time check with a time interval, at the latest at the next save or at
//! [`CheckpointContext::finalize`]).

pub mod collective;
pub mod config;
pub mod context;
pub mod epoch;
pub mod error;
pub mod inspect;
#[cfg(feature = "mpi")]
pub mod mpi_collective;
pub mod restore;
pub mod storage;
pub mod writer;

pub use collective::{Collective, LocalCollective};
pub use config::{CheckpointConfig, Interval};
pub use context::{CheckpointContext, Handover};
pub use error::CheckpointError;
pub use inspect::{InspectReport, inspect};
#[cfg(feature = "mpi")]
pub use mpi_collective::MpiCollective;

#[cfg(test)]
mod context_tests;
