//! The running job's view: where every rank runs, how much every pair of ranks talks,
//! and the availability all ranks agree on.
//!
//! - [`counters`] and [`interpose`]: bytes and messages each rank sends to each other
//!   rank, counted through MPI's profiling interface (Open MPI 4.1.4's MPI_T monitoring
//!   counters cannot be read, Open MPI issue 9260), point-to-point and collectives apart.
//! - [`gather`]: the matrix and the placement on every rank.
//! - [`location`]: binding a rank to a real core of its logical node.
//! - [`watch`]: the availability file, read by rank 0 and broadcast.

pub mod counters;
pub mod gather;
pub mod interpose;
pub mod location;
pub mod watch;

pub use counters::{Paused, Row, mark_reconfiguration, set_job_communicator, snapshot};
pub use gather::{Traffic, Window, gather_matrix, gather_placement};
pub use watch::{AvailabilityWatcher, WatchOutcome};
