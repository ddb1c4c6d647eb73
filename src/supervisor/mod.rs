//! `rankmig run`: the supervisor of a job. It reads the allocation, places the ranks,
//! starts the job with the launcher of its MPI implementation ([`crate::launcher`]),
//! prints each reconfiguration the ranks record, stops a hung spawn or a stalled job
//! and launches it again, restarts the job after a rank or a host is lost
//! ([`rank_failure`], [`probe`]), and with `--rms` follows
//! what the resource manager says about the job's nodes ([`rms_watch`]). It builds the
//! [`launch::RunSpec`] of a run from plain settings ([`run_settings`]), follows a new
//! Slurm job on a restart ([`slurm_job`]) and sets up an emulated cluster
//! ([`emulated`]).
//!
//! It talks to the ranks only through the environment of the launch
//! ([`crate::run_dir::settings`]) and the files of the run directory
//! ([`crate::run_dir::record`], [`crate::run_dir::spawn_watch`],
//! [`crate::run_dir::launch_request`]); it imports nothing of the runtime in the ranks
//! (`migrate`, another program).

pub mod availability_lock;
pub mod cores_per_rank;
pub mod emulated;
pub mod launch;
pub mod launch_command;
pub mod launch_method;
pub mod probe;
pub mod process_tree;
pub mod progress;
pub mod rank_environment;
pub mod rank_failure;
pub mod replacement_launch;
pub mod rms_watch;
pub mod run_dir_watch;
pub mod run_settings;
pub mod slurm_job;
pub mod stall_watch;
pub mod supervise;
