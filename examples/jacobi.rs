//! 2D Jacobi solver of the Poisson problem `-Δu = 1` on the unit square with `u = 0`
//! on the boundary, on an `N x N` interior grid whose rows are split over the ranks,
//! with checkpoint/restart.
//!
//! ```text
//! mpirun -np 4 target/release/examples/jacobi --size 512 --iters 1000
//! RANKMIG_CKPT_DIR=/tmp/ck RANKMIG_CKPT_EVERY=50 mpirun -np 4 .../jacobi --size 512 --iters 1000
//! RANKMIG_CKPT_DIR=/tmp/ck RANKMIG_RESTART=1 mpirun -np 4 .../jacobi --size 512 --iters 1000
//! ```
//!
//! The solver runs on a [`rankmig::migrate::Job`]: under `rankmig run` its ranks move
//! between logical nodes when the availability file changes, with the same result.
//!
//! With `--stop-file PATH` the run ends early, at the first multiple of 500 iterations
//! at which that file exists (a run that lasts as long as its caller needs, on a
//! machine of any speed); the same `--iters` count without it gives the same checksum.
//!
//! With `--fail-at K` the last rank exits with code 3 when it reaches iteration K, at
//! every launch that gets there (an application's own bug, for the tests of
//! `rankmig run --auto-restart`).
//! With `--times DIR` each process writes the time of each of its iterations, by its own
//! clock, to `DIR/times-PID.txt` (`rank iteration seconds` lines). MPI is initialised
//! with `MPI_THREAD_MULTIPLE`, so that rankmig starts replacement processes in the
//! background.
//!
//! Prints `iterations: <count>` and one line `checksum: <16 hex digits>` (XXH3-64 of the final global grid,
//! row-major, little-endian f64) on stdout; the result is bit-exact and the same for
//! any rank count that divides `N`. Everything else goes to stderr.

use std::process::ExitCode;
use std::time::Instant;

use mpi::environment::Universe;
use mpi::point_to_point::send_receive_into;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};
use rankmig::checkpoint::CheckpointConfig;
use rankmig::migrate::Job;
use serde::{Deserialize, Serialize};

/// The state saved at each checkpoint: the iteration counter and this rank's rows (as
/// one block of bytes: one copy into a checkpoint or a migration's state message, not
/// serde's number by number).
#[derive(Serialize, Deserialize)]
struct State {
    iter: u64,
    #[serde(with = "rankmig::checkpoint::bulk")]
    rows: Vec<f64>,
}

/// Command line: `--size N --iters K [--stop-file PATH] [--fail-at K] [--times DIR]`.
struct Args {
    size: usize,
    iters: u64,
    /// When this file exists, the run ends at the next multiple of [`STOP_CHECK`]
    /// iterations (every rank agrees on which), before `iters`.
    stop_file: Option<std::path::PathBuf>,
    /// The last rank exits with code 3 at this iteration.
    fail_at: Option<u64>,
    /// Each process writes the time of each of its iterations, by its own clock, to
    /// `DIR/times-PID.txt` at the end (`rank iteration seconds` lines).
    times: Option<std::path::PathBuf>,
}

/// Iterations between two looks for the stop file.
const STOP_CHECK: u64 = 100;

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        size: 256,
        iters: 100,
        stop_file: None,
        fail_at: None,
        times: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |_| format!("{flag} {value:?}: not a whole number");
        match flag.as_str() {
            "--size" => args.size = value.parse().map_err(bad)?,
            "--iters" => args.iters = value.parse().map_err(bad)?,
            "--stop-file" => args.stop_file = Some(value.into()),
            "--fail-at" => args.fail_at = Some(value.parse().map_err(bad)?),
            "--times" => args.times = Some(value.into()),
            _ => {
                return Err(format!(
                    "unknown argument {flag:?} (use --size N --iters K [--stop-file PATH] [--fail-at K] [--times DIR])"
                ));
            }
        }
    }
    if args.size == 0 {
        return Err("--size must be positive".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    // rankmig's library reports through the `log` crate (a rank not on its planned
    // host, an abandoned migration, checkpoint notes): warnings are shown unless
    // RUST_LOG says otherwise.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    // MPI_THREAD_MULTIPLE lets rankmig start replacement processes in the background
    // while the ranks compute; with less, a migration holds them for the whole spawn.
    let Some((universe, _threading)) = mpi::initialize_with_threading(mpi::Threading::Multiple)
    else {
        eprintln!("jacobi: MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    // The world rank names this process in messages; the job's own rank may differ in
    // a process that replaced a migrated rank.
    let world_rank = universe.world().rank();
    match run(universe) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say(&format!("jacobi: process of world rank {world_rank}: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn run(universe: Universe) -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let n = args.size;
    let cfg = CheckpointConfig::new("jacobi-ckpt")
        .job(format!("jacobi-n{n}"))
        .with_env()?;
    // A process spawned by a migration joins the job here. The job takes MPI over: its
    // communicator is the only one, MPI_COMM_WORLD is not the job's after a migration.
    let mut job = Job::init(universe, cfg)?;
    let ranks = job.comm().size() as usize;
    if n % ranks != 0 {
        return Err(format!("{ranks} ranks do not divide the grid size {n}").into());
    }
    let local = n / ranks;
    let mut state = job.restore_or(|| State {
        iter: 0,
        rows: vec![0.0; local * n],
    })?;
    if state.rows.len() != local * n {
        return Err(format!(
            "restored {} values, expected {}",
            state.rows.len(),
            local * n
        )
        .into());
    }
    report_start(&job, &state, &args, ranks);
    let start = Instant::now();
    let h2 = (1.0 / (n as f64 + 1.0)).powi(2);
    let (mut up, mut down, mut next) = (vec![0.0; n], vec![0.0; n], vec![0.0; local * n]);
    let mut times = IterationTimes::new(args.times.is_some());
    while state.iter < args.iters && !stop_requested(job.comm(), &args, state.iter) {
        let began = Instant::now();
        halo_exchange(job.comm(), &state.rows, n, &mut up, &mut down);
        sweep(&state.rows, &up, &down, n, h2, &mut next);
        std::mem::swap(&mut state.rows, &mut next);
        state.iter += 1;
        fail_if_asked(&job, &args, state.iter);
        rankmig::checkpoint!(job, state);
        times.push(state.iter, began);
    }
    if let Some(dir) = &args.times {
        times.write(dir, job.comm().rank())?;
    }
    job.finalize()?;
    if job.comm().rank() == 0 {
        eprintln!(
            "jacobi: {} iterations done in {:.3} s, last committed epoch {:?}",
            state.iter,
            start.elapsed().as_secs_f64(),
            job.checkpoints().last_committed()
        );
    }
    if job.comm().rank() == 0 {
        println!("iterations: {}", state.iter);
    }
    print_checksum(job.comm(), &state.rows, n);
    Ok(())
}

/// `--fail-at`: the last rank exits with code 3 at that iteration.
fn fail_if_asked(job: &Job, args: &Args, iter: u64) {
    let rank = job.comm().rank();
    if args.fail_at == Some(iter) && rank == job.comm().size() - 1 {
        say(&format!(
            "jacobi: rank {rank} fails at iteration {iter} (--fail-at)"
        ));
        std::process::exit(3);
    }
}

/// This process's iteration times by its own clock (`--times`), from its first
/// iteration (a process that arrived by migration: from its arrival).
struct IterationTimes {
    on: bool,
    times: Vec<(u64, f64)>,
}

impl IterationTimes {
    fn new(on: bool) -> Self {
        Self {
            on,
            times: Vec::new(),
        }
    }

    fn push(&mut self, iteration: u64, began: Instant) {
        if self.on {
            self.times.push((iteration, began.elapsed().as_secs_f64()));
        }
    }

    /// Writes `DIR/times-PID.txt`: `rank iteration seconds` lines.
    fn write(&self, dir: &std::path::Path, rank: i32) -> std::io::Result<()> {
        use std::fmt::Write as _;
        let mut text = String::new();
        for (iteration, secs) in &self.times {
            let _ = writeln!(text, "{rank} {iteration} {secs:.9}");
        }
        std::fs::write(dir.join(format!("times-{}.txt", std::process::id())), text)
    }
}

/// At every [`STOP_CHECK`]-th iteration, true on every rank when the stop file exists
/// for any rank (collective then).
fn stop_requested(comm: &SimpleCommunicator, args: &Args, iter: u64) -> bool {
    let Some(file) = &args.stop_file else {
        return false;
    };
    if iter % STOP_CHECK != 0 {
        return false;
    }
    let here = u8::from(file.exists());
    let mut anywhere = 0u8;
    comm.all_reduce_into(
        &here,
        &mut anywhere,
        mpi::collective::SystemOperation::max(),
    );
    anywhere != 0
}

/// Writes `line` and a newline to stderr in one `write` (as `eprintln!` may not), so
/// that lines several ranks write at once do not interleave.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn report_start(job: &Job, state: &State, args: &Args, ranks: usize) {
    let ctx = job.checkpoints();
    for note in ctx.notes() {
        say(&format!("jacobi: rank {}: {note}", ctx.rank()));
    }
    // Once per job: a process that replaced rank 0 in a migration says nothing here.
    if ctx.rank() != 0 || job.is_replacement() {
        return;
    }
    eprintln!(
        "jacobi: grid {n}x{n}, {ranks} ranks, {} iterations, checkpoints in {}",
        args.iters,
        ctx.dir().display(),
        n = args.size
    );
    if let (Some(epoch), Some(level)) = (ctx.restored_epoch(), ctx.restored_level()) {
        eprintln!(
            "jacobi: restored epoch {epoch} at iteration {}, read from the {level}",
            state.iter
        );
    }
}

/// Sends the first row up and the last row down; receives the halo rows `up` (the row
/// above ours) and `down` (the row below). Rows outside the grid stay zero.
fn halo_exchange(
    world: &SimpleCommunicator,
    rows: &[f64],
    n: usize,
    up: &mut [f64],
    down: &mut [f64],
) {
    let (rank, size) = (world.rank(), world.size());
    let first = &rows[..n];
    let last = &rows[rows.len() - n..];
    let above = (rank > 0).then(|| world.process_at_rank(rank - 1));
    let below = (rank + 1 < size).then(|| world.process_at_rank(rank + 1));
    // first rows go up, the row below arrives
    match (&above, &below) {
        (Some(a), Some(b)) => drop(send_receive_into(first, a, down, b)),
        (Some(a), None) => a.send(first),
        (None, Some(b)) => drop(b.receive_into(down)),
        (None, None) => {}
    }
    // last rows go down, the row above arrives
    match (&above, &below) {
        (Some(a), Some(b)) => drop(send_receive_into(last, b, up, a)),
        (None, Some(b)) => b.send(last),
        (Some(a), None) => drop(a.receive_into(up)),
        (None, None) => {}
    }
}

/// One Jacobi sweep: `next = (up + down + left + right + h²) / 4` at every point,
/// always summed in the same order so any row split gives the same bits.
fn sweep(rows: &[f64], up: &[f64], down: &[f64], n: usize, h2: f64, next: &mut [f64]) {
    let local = rows.len() / n;
    for i in 0..local {
        let above = if i == 0 {
            up
        } else {
            &rows[(i - 1) * n..i * n]
        };
        let below = if i + 1 == local {
            down
        } else {
            &rows[(i + 1) * n..(i + 2) * n]
        };
        let row = &rows[i * n..(i + 1) * n];
        let out = &mut next[i * n..(i + 1) * n];
        for j in 0..n {
            let left = if j == 0 { 0.0 } else { row[j - 1] };
            let right = if j + 1 == n { 0.0 } else { row[j + 1] };
            out[j] = 0.25 * ((above[j] + below[j]) + (left + right) + h2);
        }
    }
}

/// Gathers the grid on rank 0 and prints its XXH3-64 there.
fn print_checksum(world: &SimpleCommunicator, rows: &[f64], n: usize) {
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.gather_into(rows);
        return;
    }
    let mut all = vec![0.0f64; n * n];
    root.gather_into_root(rows, &mut all[..]);
    let bytes: Vec<u8> = all.iter().flat_map(|x| x.to_le_bytes()).collect();
    println!("checksum: {:016x}", xxhash_rust::xxh3::xxh3_64(&bytes));
}
