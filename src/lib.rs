//! # rankmig
//!
//! Moves the ranks of a running MPI application between cluster nodes when nodes come
//! and go, keeping the rank count, and chooses where each rank lands from how the ranks
//! communicate and from the hardware tree (hwloc), with a two-step TreeMatch mapper.
//!
//! Module layering: a module uses only the modules to its right in its own layer and
//! the modules of the layers below it (`tests/it/layering.rs` reads every `crate::` path of
//! `src/` and fails on one that goes against this table):
//!
//! | layer | modules |
//! |---|---|
//! | programs | `rankmig` CLI (`src/main.rs`, `src/cli.rs`, `src/commands.rs`, `src/map_command.rs`, `src/report_command.rs`); [`supervisor`] (`rankmig run`); [`report`] (`rankmig report`); [`capi`] (C and Fortran interface) |
//! | runtime in every rank | [`migrate`] (the job, its pacing and history, the migration protocol) |
//! | the run directory | [`run_dir`] (the files `rankmig run` and the ranks both read and write, and their formats: settings, records, spawn marker, replacement launch requests) |
//! | services of the runtime | [`monitor`] (communication counts, locations, availability watch), [`checkpoint`](mod@checkpoint), [`output_files`] (the files a rank writes through rankmig, kept right across checkpoints, restarts and migrations) |
//! | launching and writing plans | [`emulated_cluster`], [`launcher`] (one file per MPI implementation), [`rms`] (Slurm), [`output`] (mappings, placements and plans as files and text) |
//! | planning | [`planner`], [`treematch`], [`contention`] (nodes whose CPUs something else takes, judged from the ranks' waits) |
//! | inputs | [`config`] (site and user configuration files), [`allocation`], [`availability`], [`topology`], [`matrix`], [`lines`], [`huge_pages`] |
//! | tools | [`own_files`] (files of this user: checked, opened without following links, written atomically), [`mpi_request`] (waiting for a nonblocking MPI request, sleeping between tests), [`mpi_build`] (the MPI this build was compiled against, compared with the one found at run time) |
//!
//! `supervisor` (with `report`) and `migrate` are two programs that meet only in the run
//! directory: both import [`run_dir`], neither imports the other (`tests/it/layering.rs`
//! checks this too).

// No panic on a value read from a user, a file or the system: the library returns its
// errors (tests may unwrap; see clippy.toml). Set here rather than in Cargo.toml's
// `[lints]`, which would hold tests, benches and examples to it too.
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod allocation;
pub mod availability;
#[cfg(feature = "mpi")]
pub mod capi;
pub mod checkpoint;
#[cfg(feature = "tools")]
pub mod config;
pub mod contention;
#[cfg(feature = "tools")]
pub mod emulated_cluster;
pub mod huge_pages;
pub mod launcher;
pub mod lines;
pub mod matrix;
pub mod migrate;
#[cfg(feature = "mpi")]
pub mod monitor;
pub mod mpi_build;
#[cfg(feature = "mpi")]
pub mod mpi_request;
#[cfg(feature = "tools")]
pub mod output;
pub mod output_files;
pub mod own_files;
pub mod planner;
#[cfg(feature = "tools")]
pub mod report;
#[cfg(feature = "tools")]
pub mod rms;
pub mod run_dir;
#[cfg(feature = "tools")]
pub mod supervisor;
pub mod topology;
pub mod treematch;
