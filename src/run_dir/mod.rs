//! The run directory: the files `rankmig run` and the ranks of its job both read and
//! write, and their formats.
//!
//! `rankmig run` ([`crate::supervisor`]) and the runtime in every rank
//! ([`crate::migrate`]) are two programs; this module is all they share. The name and
//! format of each file are defined here and nowhere else:
//!
//! - [`settings`]: what `rankmig run` tells the ranks, as `RANKMIG_*` environment
//!   variables, and their defaults;
//! - [`record`]: the records of a run (placements, reconfigurations, per-iteration
//!   times, process events, the communication matrix, stalls) and what the ranks tell
//!   `rankmig run` through files (a relaunch wanted, a rank off its planned host);
//! - [`spawn_watch`]: the marker rank 0 leaves while a spawn is under way, whose age
//!   `rankmig run` checks;
//! - [`cpu_sets`]: the CPUs of each process of a launch or spawn of ranks of several
//!   cores, read by `rankmig bind-exec` before the program starts;
//! - [`launch_request`]: rank 0's request that `rankmig run` launch replacement
//!   processes instead of a spawn, and the replies.
//!
//! Nothing here uses MPI: the module builds without the `mpi` feature.

pub mod cpu_sets;
pub mod launch_request;
pub mod record;
pub mod settings;
pub mod spawn_watch;
