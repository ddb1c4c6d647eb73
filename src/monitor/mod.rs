//! The running job's view: where every rank runs, how much every pair of ranks talks,
//! and the availability all ranks agree on.
//!
//! - [`counters`] and [`interpose`]: bytes and messages each rank sends to each other
//!   rank, counted through MPI's profiling interface (Open MPI 4.1.4's MPI_T monitoring
//!   counters cannot be read, Open MPI issue 9260), point-to-point and collectives apart;
//!   [`fortran`]: the same calls through their Fortran entry points.
//! - [`gather`]: the matrix and the placement on every rank.
//! - [`location`]: a rank's logical node and core, and binding it to a real core.
//! - [`watch`] and [`schedule`]: the availability file, read by rank 0 and broadcast, at
//!   calls all ranks agree on.
//! - [`export`]: the gathered matrix in TreeMatch's format, for offline planning.

pub mod counters;
pub mod error;
pub mod export;
pub mod fortran;
pub mod gather;
pub mod interpose;
pub mod location;
pub mod schedule;
pub mod watch;

pub use counters::{
    Paused, Row, mark_reconfiguration, set_counting, set_job_communicator, snapshot,
};
pub use error::MonitorError;
pub use export::{export_matrix, export_matrix_from_env};
pub use gather::{Traffic, Window, gather_matrix, gather_placement};
pub use location::{LogicalCore, bind_to, own_location};
pub use schedule::CheckSchedule;
pub use watch::{AvailabilityWatcher, NewHosts, WatchOutcome};
