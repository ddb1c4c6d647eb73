//! rankmig's integration tests, in one test binary: one module per subject and the
//! helpers they share in [`support`]. One binary links MPI, hwloc and plotters once
//! instead of once per subject.
//!
//! Select a subject with a filter on the module path, which libtest matches as a
//! substring of `module::test_name`:
//!
//! ```text
//! cargo test --test it -- migrate_mpi::
//! cargo test --test it -- linked_mpi:: cluster_mpi::
//! ```
//!
//! The tests that run MPI jobs, the emulated cluster or the emulated Slurm take
//! [`support::mpi_lock`] first: they share this process and run one at a time, as they
//! did when each subject was a binary of its own (cargo runs test binaries one after
//! the other).

mod support;

mod ambiguous_inputs;
mod bounded_work;
mod c_interface;
mod c_programs;
mod checkpoint_hostile;
mod checkpoint_mpi;
mod cli_inspect;
mod cli_map;
mod cli_run;
mod cli_simulate;
mod cluster_mpi;
mod contention_mpi;
mod derived_comm;
mod docs_names;
mod faults_mpi;
mod fuzz_parsers;
mod help_examples;
mod hybrid;
mod installed;
mod layering;
mod linked_mpi;
mod live_matrix;
mod map_cores_per_rank;
mod mapper_optimum;
mod mapper_quality;
mod matrix_formats;
mod migrate_mpi;
mod misplaced_checkpoint;
mod monitor_mpi;
mod planner;
mod rankfile_mpirun;
mod report;
mod restart_early;
mod shared_caches;
mod size_bounds;
mod slurm_rms;
mod thirdparty_c;
mod topology_files;
mod verify_restart;
