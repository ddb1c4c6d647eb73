//! The error type of the checkpoint module.

use std::path::PathBuf;

/// Everything that can go wrong while saving, restoring or inspecting checkpoints.
///
/// Each message names the file (or environment variable) and the offending value.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// An I/O operation on a file or directory failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("write", "rename", ...).
        op: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An environment variable or a configuration value is malformed.
    #[error("invalid configuration {name}={value:?}: {reason}")]
    Config {
        /// The variable or setting name, e.g. `RANKMIG_CKPT_EVERY`.
        name: &'static str,
        /// The value that was given.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A checkpoint file is damaged (truncated, flipped bits, wrong header).
    #[error("corrupt checkpoint file {path}: {reason}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What check failed, with the values seen.
        reason: String,
    },
    /// A checkpoint was written by another job, another rank count or a newer format,
    /// and must not be used by this job.
    #[error("refusing checkpoint {path}: {reason}")]
    Refused {
        /// The file or epoch directory concerned.
        path: PathBuf,
        /// The mismatch, naming both values.
        reason: String,
    },
    /// Something in the checkpoint directory is not what rankmig writes there: a
    /// symbolic link, a FIFO or device, a file or directory of another user, a file
    /// with more than one link. It is neither followed, read, reused nor removed.
    #[error("refusing to use {path}: {reason}")]
    Unsafe {
        /// The entry concerned.
        path: PathBuf,
        /// What it is, e.g. "a symbolic link".
        reason: String,
    },
    /// The checkpoint directory itself may be written by other users (or belongs to
    /// another user), who could plant links or FIFOs in it.
    #[error(
        "checkpoint directory {path} (mode {mode:o}, owner uid {owner}) {reason}; \
         make it private (chmod go-w) or set RANKMIG_CKPT_ALLOW_SHARED_DIR=1 to use it anyway"
    )]
    UnsafeDir {
        /// The checkpoint directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Its owner.
        owner: u32,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A collective step failed on another rank; that rank's own message says why.
    #[error("rank {rank} failed to {what} in {dir} (see that rank's message)")]
    OtherRank {
        /// The (highest) rank that failed.
        rank: u64,
        /// What was being done, e.g. "restore the checkpoint".
        what: &'static str,
        /// The checkpoint directory.
        dir: PathBuf,
    },
    /// A restart was requested but no complete epoch verifies on every rank.
    #[error("no usable checkpoint in {dir}: {detail}")]
    NoCheckpoint {
        /// The checkpoint directory.
        dir: PathBuf,
        /// Which epochs were skipped and why.
        detail: String,
    },
    /// The state could not be serialised or deserialised.
    #[error("serialisation of the state for {path}: {source}")]
    Serde {
        /// The checkpoint file concerned.
        path: PathBuf,
        /// The serialiser's error.
        #[source]
        source: bincode::Error,
    },
    /// Writing an epoch failed on some rank, so it was not committed.
    #[error("checkpoint epoch {epoch} in {dir} failed on rank {rank}")]
    EpochFailed {
        /// The epoch number.
        epoch: u64,
        /// The checkpoint directory.
        dir: PathBuf,
        /// The lowest failing rank.
        rank: u64,
    },
    /// The background writer thread stopped unexpectedly.
    #[error("the checkpoint writer thread has stopped")]
    WriterGone,
    /// A `checkpoint!` call (or `rankmig_checkpoint`) from a thread other than the one
    /// that created the context (that called `rankmig_init` or `Job::init`), or inside
    /// an OpenMP parallel region ([`super::thread_owner`]). Refused before any
    /// collective step: the call counts nothing, and the job goes on as it was.
    #[error(
        "checkpoint called {}: the call belongs outside parallel regions, on the thread that \
         called rankmig_init (Job::init, CheckpointContext::new); it was refused, nothing \
         was saved",
        super::thread_owner::called_from(.owner, .caller, .in_parallel)
    )]
    Misplaced {
        /// The thread the context belongs to.
        owner: super::thread_owner::ThreadLabel,
        /// The thread that made the call.
        caller: super::thread_owner::ThreadLabel,
        /// True when the call was made inside an OpenMP parallel region.
        in_parallel: bool,
    },
}

impl From<crate::own_files::FileError> for CheckpointError {
    fn from(e: crate::own_files::FileError) -> Self {
        use crate::own_files::FileError;
        match e {
            FileError::Io { op, path, source } => Self::Io { op, path, source },
            FileError::Unsafe { path, reason } => Self::Unsafe { path, reason },
        }
    }
}

impl CheckpointError {
    /// Builds an [`CheckpointError::Io`] for `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Builds a [`CheckpointError::Corrupt`] for `path`.
    pub fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// Builds a [`CheckpointError::Unsafe`] for `path`.
    pub fn unsafe_entry(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Unsafe {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// Whether this error says the data is damaged ([`CheckpointError::Corrupt`]), as
    /// opposed to unreadable or untrusted: only damaged epochs may be discarded.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Self::Corrupt { .. })
    }

    /// Builds a [`CheckpointError::Refused`] for `path`.
    pub fn refused(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Refused {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
