//! A code with a derived communicator: the job's ranks split into even and odd halves
//! (`MPI_Comm_split`), each iteration summing in its half and then over the job. The
//! halves are rebuilt whenever the job's communicator changes (a migration), which
//! [`Job::comm_generation`] tells.
//!
//! ```text
//! mpirun -np 4 target/release/examples/split_sum --iters 100000
//! rankmig run -n 4 -a av -- target/release/examples/split_sum --iters 100000000 --stop-file stop
//! ```
//!
//! Prints `iterations: N` and `checksum: <16 hex digits>` on rank 0: the same for the
//! same rank count and iterations, wherever the ranks ran. With `--stop-file PATH` the
//! run ends at the first multiple of 500 iterations at which that file exists.

use std::process::ExitCode;

use mpi::collective::SystemOperation;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::{Communicator, CommunicatorCollectives};
use rankmig::checkpoint::CheckpointConfig;
use rankmig::migrate::Job;
use serde::{Deserialize, Serialize};

/// The state saved at each checkpoint.
#[derive(Serialize, Deserialize)]
struct State {
    iter: u64,
    acc: u64,
}

/// Iterations between two looks for the stop file.
const STOP_CHECK: u64 = 100;

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("split_sum: MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    match run(universe) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            use std::io::Write;
            let _ = std::io::stderr().write_all(format!("split_sum: {e}\n").as_bytes());
            ExitCode::FAILURE
        }
    }
}

/// `--iters K [--stop-file PATH]`.
fn parse_args() -> Result<(u64, Option<std::path::PathBuf>), String> {
    let (mut iters, mut stop) = (1000, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--iters" => {
                iters = value
                    .parse()
                    .map_err(|_| format!("--iters {value:?}: not a whole number"))?
            }
            "--stop-file" => stop = Some(value.into()),
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    Ok((iters, stop))
}

/// The half (even or odd ranks) of `comm` this rank belongs to.
fn half_of(comm: &SimpleCommunicator) -> SimpleCommunicator {
    let color = Color::with_value(comm.rank() % 2);
    comm.split_by_color(color).expect("every rank has a color")
}

fn run(universe: mpi::environment::Universe) -> Result<(), Box<dyn std::error::Error>> {
    let (iters, stop_file) = parse_args()?;
    let cfg = CheckpointConfig::new("split-sum-ckpt")
        .job("split-sum")
        .with_env()?;
    let mut job = Job::init(universe, cfg)?;
    let mut state = job.restore_or(|| State { iter: 0, acc: 0 })?;
    // The derived communicator, and the communicator generation it was made from.
    let mut half = half_of(job.comm());
    let mut made_at = job.comm_generation();
    while state.iter < iters {
        if job.comm_generation() != made_at {
            half = half_of(job.comm());
            made_at = job.comm_generation();
        }
        if let Some(file) = stop_file.as_ref().filter(|_| state.iter % STOP_CHECK == 0) {
            let (here, mut anywhere) = (u8::from(file.exists()), 0u8);
            job.comm()
                .all_reduce_into(&here, &mut anywhere, SystemOperation::max());
            if anywhere != 0 {
                break;
            }
        }
        let rank = job.comm().rank() as u64;
        let mine = (rank + 1) * (state.iter % 1000 + 1);
        let (mut in_half, mut in_job) = (0u64, 0u64);
        half.all_reduce_into(&mine, &mut in_half, SystemOperation::sum());
        job.comm()
            .all_reduce_into(&in_half, &mut in_job, SystemOperation::sum());
        state.acc = state.acc.wrapping_mul(31).wrapping_add(in_job);
        state.iter += 1;
        rankmig::checkpoint!(job, state);
    }
    job.finalize()?;
    if job.comm().rank() == 0 {
        println!("iterations: {}", state.iter);
        println!("checksum: {:016x}", state.acc);
    }
    Ok(())
}
