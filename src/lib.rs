//! # rankmig
//!
//! Moves the ranks of a running MPI application between cluster nodes when nodes come
//! and go, keeping the rank count, and chooses where each rank lands from how the ranks
//! communicate and from the hardware tree (hwloc), with a two-step TreeMatch mapper.
//!
//! Module layering (dependencies point downwards only):
//!
//! | layer | modules |
//! |---|---|
//! | top | CLI (`src/main.rs`, [`cli`]) |
//! | middle | [`checkpoint`] |
//! | algorithm | [`treematch`] |
//! | bottom | [`topology`], [`matrix`] |

pub mod availability;
#[cfg(feature = "mpi")]
pub mod capi;
pub mod checkpoint;
pub mod emulated_cluster;
pub mod lines;
pub mod matrix;
pub mod migrate;
#[cfg(feature = "mpi")]
pub mod monitor;
pub mod output;
pub mod planner;
pub mod topology;
pub mod treematch;
