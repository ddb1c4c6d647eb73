//! A code one of whose ranks cannot serialise its state: what a migration that needs
//! that rank's state does (it is called off, every rank stays and computes on).
//!
//! ```text
//! rankmig run -n 4 -a av --spawn-timeout 0 -- \
//!     target/release/examples/unserialisable_state --unserialisable-rank 1 --iters 100000000 --stop-file stop
//! ```
//!
//! Each iteration sums a value of every rank over the job. The state of the rank named
//! by `--unserialisable-rank` fails to serialise (its `Serialize` returns an error, as a
//! user's own implementation may), so any checkpoint of it fails: run it with
//! `--spawn-timeout 0`, which writes no checkpoint before a migration. Prints
//! `iterations: N` and `checksum: <16 hex digits>` on rank 0, the same for the same rank
//! count and iterations wherever the ranks ran. With `--stop-file PATH` the run ends at
//! the first multiple of 500 iterations at which that file exists.

use std::process::ExitCode;

use mpi::collective::SystemOperation;
use mpi::traits::{Communicator, CommunicatorCollectives};
use rankmig::checkpoint::CheckpointConfig;
use rankmig::migrate::Job;
use serde::{Deserialize, Serialize, Serializer};

/// The state saved at each checkpoint.
#[derive(Serialize, Deserialize)]
struct State {
    iter: u64,
    acc: u64,
    /// True on the rank whose state cannot be serialised.
    #[serde(serialize_with = "refuse_when_marked")]
    unserialisable: bool,
}

/// Serialises `false`; fails for `true`.
fn refuse_when_marked<S: Serializer>(marked: &bool, s: S) -> Result<S::Ok, S::Error> {
    if *marked {
        return Err(serde::ser::Error::custom(
            "this rank's state refuses to be serialised (--unserialisable-rank)",
        ));
    }
    s.serialize_bool(false)
}

/// Iterations between two looks for the stop file.
const STOP_CHECK: u64 = 100;

/// What the command line asks for.
struct Args {
    iters: u64,
    stop_file: Option<std::path::PathBuf>,
    unserialisable_rank: Option<i32>,
}

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("unserialisable_state: MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match parse_args().and_then(|args| run(universe, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("unserialisable_state: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--iters K [--stop-file PATH] [--unserialisable-rank R]`.
fn parse_args() -> Result<Args, Box<dyn std::error::Error>> {
    let mut args = Args {
        iters: 1000,
        stop_file: None,
        unserialisable_rank: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || format!("{flag} {value:?}: not a whole number");
        match flag.as_str() {
            "--iters" => args.iters = value.parse().map_err(|_| number())?,
            "--unserialisable-rank" => {
                args.unserialisable_rank = Some(value.parse().map_err(|_| number())?)
            }
            "--stop-file" => args.stop_file = Some(value.into()),
            _ => return Err(format!("unknown argument {flag:?}").into()),
        }
    }
    Ok(args)
}

fn run(universe: mpi::environment::Universe, args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = CheckpointConfig::new("unserialisable-ckpt")
        .job("unserialisable")
        .with_env()?;
    let mut job = Job::init(universe, cfg)?;
    let rank = job.comm().rank();
    let mut state = job.restore_or(|| State {
        iter: 0,
        acc: 0,
        unserialisable: args.unserialisable_rank == Some(rank),
    })?;
    while state.iter < args.iters {
        if let Some(file) = args
            .stop_file
            .as_ref()
            .filter(|_| state.iter % STOP_CHECK == 0)
        {
            let (here, mut anywhere) = (u8::from(file.exists()), 0u8);
            job.comm()
                .all_reduce_into(&here, &mut anywhere, SystemOperation::max());
            if anywhere != 0 {
                break;
            }
        }
        let mine = (job.comm().rank() as u64 + 1) * (state.iter % 1000 + 1);
        let mut sum = 0u64;
        job.comm()
            .all_reduce_into(&mine, &mut sum, SystemOperation::sum());
        state.acc = state.acc.wrapping_mul(31).wrapping_add(sum);
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
