//! What counting costs, and how long gathering the matrix takes.
//!
//! Not a criterion bench: the work runs under `mpirun`. Run outside `mpirun`, this
//! program launches itself twice:
//!
//! 1. **halo**, 4 ranks: a halo-exchange loop (a 1D Jacobi sweep on 128 × 256 local
//!    rows, one row of 256 `f64` to each neighbour with rsmpi's immediate sends and
//!    receives), in blocks of 200 iterations with counting switched on and off in turn
//!    (`rankmig::monitor::set_counting`) in the same processes. Per block: the slowest
//!    rank's time per iteration. Prints the medians of the on and off blocks and their
//!    ratio, and the cost of one counted send measured alone (sends to `MPI_PROC_NULL`
//!    cannot be counted, so: to this rank itself, counting on against off).
//! 2. **gather**, for each rank count N of `RANKMIG_BENCH_GATHER_RANKS` (a comma list,
//!    default `2,4,16`): the median time of `gather_matrix` (one all-gather of N rows of
//!    N `f64`) over 200 calls. Beyond the cores of the machine the ranks share cores and
//!    the figure measures the operating system's scheduling more than the gather.
//!
//! `cargo bench --bench monitor -- --test` (or no `mpirun`) exits at once, saying why.
//! `RANKMIG_BENCH_BLOCKS` sets the number of blocks per setting (default 40).

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--test" || a == "--list") {
        println!("monitor bench: test mode, nothing measured");
        return ExitCode::SUCCESS;
    }
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return child(args.get(i + 1).map(String::as_str).unwrap_or(""));
    }
    if Command::new("mpirun").arg("--version").output().is_err() {
        println!("monitor bench: mpirun not found, nothing measured");
        return ExitCode::SUCCESS;
    }
    let gather_ranks: Vec<usize> = std::env::var("RANKMIG_BENCH_GATHER_RANKS")
        .unwrap_or_else(|_| "2,4,16".to_owned())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    let mut ok = launch(4, "halo");
    for ranks in gather_ranks {
        ok &= launch(ranks, "gather");
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs this program under `mpirun -np ranks` in `mode`; true when it succeeded.
fn launch(ranks: usize, mode: &str) -> bool {
    let Ok(me) = std::env::current_exe() else {
        println!("monitor bench: cannot find this executable");
        return false;
    };
    let status = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
        ])
        .args(["-np", &ranks.to_string()])
        .arg(me)
        .args(["--child", mode])
        .status();
    match status {
        Ok(s) if s.success() => true,
        other => {
            println!("monitor bench: mpirun -np {ranks} ({mode}) failed: {other:?}");
            false
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn child(_mode: &str) -> ExitCode {
    println!("monitor bench: built without the mpi feature, nothing measured");
    ExitCode::SUCCESS
}

#[cfg(feature = "mpi")]
fn child(mode: &str) -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("monitor bench: MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    rankmig::monitor::set_job_communicator(&world, None);
    match mode {
        "halo" => mpi_bench::halo(&world),
        "gather" => mpi_bench::gather(&world),
        other => {
            eprintln!("monitor bench: unknown mode {other:?}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(feature = "mpi")]
mod mpi_bench {
    use std::time::Instant;

    use mpi::collective::SystemOperation;
    use mpi::request::WaitGuard;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Source};
    use rankmig::monitor::{self, Paused, Traffic, Window};

    const ROWS: usize = 128;
    const COLS: usize = 256;
    const ITERS_PER_BLOCK: usize = 200;

    fn median(v: &mut [f64]) -> f64 {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    }

    /// The slowest rank's value.
    fn slowest(world: &SimpleCommunicator, mine: f64) -> f64 {
        let _bench_traffic = Paused::new();
        let mut max = 0f64;
        world.all_reduce_into(&mine, &mut max, SystemOperation::max());
        max
    }

    /// One Jacobi sweep on `u` (ROWS + 2 halo rows of COLS) after exchanging halos.
    fn iteration(world: &SimpleCommunicator, u: &mut [f64], next: &mut [f64]) {
        let (rank, n) = (world.rank(), world.size());
        let (first, last) = (COLS..2 * COLS, ROWS * COLS..(ROWS + 1) * COLS);
        let mut from_up = vec![0f64; COLS];
        let mut from_down = vec![0f64; COLS];
        mpi::request::scope(|scope| {
            let mut guards = Vec::new();
            if rank > 0 {
                let up = world.process_at_rank(rank - 1);
                guards.push(WaitGuard::from(
                    up.immediate_receive_into(scope, &mut from_up[..]),
                ));
                guards.push(WaitGuard::from(up.immediate_send(scope, &u[first.clone()])));
            }
            if rank + 1 < n {
                let down = world.process_at_rank(rank + 1);
                guards.push(WaitGuard::from(
                    down.immediate_receive_into(scope, &mut from_down[..]),
                ));
                guards.push(WaitGuard::from(
                    down.immediate_send(scope, &u[last.clone()]),
                ));
            }
        });
        u[..COLS].copy_from_slice(&from_up);
        u[(ROWS + 1) * COLS..].copy_from_slice(&from_down);
        for i in 1..=ROWS {
            for j in 1..COLS - 1 {
                let k = i * COLS + j;
                next[k] = 0.25 * (u[k - COLS] + u[k + COLS] + u[k - 1] + u[k + 1] + 1e-4);
            }
        }
        u[COLS..(ROWS + 1) * COLS].copy_from_slice(&next[COLS..(ROWS + 1) * COLS]);
    }

    pub fn halo(world: &SimpleCommunicator) {
        let blocks: usize = std::env::var("RANKMIG_BENCH_BLOCKS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(40);
        let mut u = vec![0f64; (ROWS + 2) * COLS];
        let mut next = u.clone();
        for _ in 0..ITERS_PER_BLOCK {
            iteration(world, &mut u, &mut next); // warm-up
        }
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for block in 0..2 * blocks {
            let counting = block % 2 == 0;
            monitor::set_counting(counting);
            world.barrier();
            let t0 = Instant::now();
            for _ in 0..ITERS_PER_BLOCK {
                iteration(world, &mut u, &mut next);
            }
            let t = slowest(world, t0.elapsed().as_secs_f64()) / ITERS_PER_BLOCK as f64;
            if counting { &mut on } else { &mut off }.push(t);
        }
        monitor::set_counting(true);
        let counted = monitor::gather_matrix(world, Window::SinceStart, Traffic::PointToPoint);
        let per_send = send_cost(world);
        if world.rank() == 0 {
            let (on, off) = (median(&mut on), median(&mut off));
            println!(
                "monitor bench: halo exchange, {} ranks, {ROWS}x{COLS} local rows, {} blocks of {ITERS_PER_BLOCK} iterations per setting",
                world.size(),
                blocks
            );
            println!(
                "  counting off  {:>9.2} us per iteration (median)",
                off * 1e6
            );
            println!(
                "  counting on   {:>9.2} us per iteration (median)",
                on * 1e6
            );
            println!(
                "  ratio on/off  {:>9.4}  ({:+.2} %)",
                on / off,
                100.0 * (on / off - 1.0)
            );
            println!(
                "  one send to self: {:.1} ns counting off, {:.1} ns on ({:+.1} ns per counted send)",
                per_send.0 * 1e9,
                per_send.1 * 1e9,
                (per_send.1 - per_send.0) * 1e9
            );
            println!(
                "  bytes counted: {} (rank 0 -> 1: {})",
                counted.total(),
                counted.get(0, 1)
            );
        }
    }

    /// Median time of one immediate send to self (plus its receive), counting off and on.
    fn send_cost(world: &SimpleCommunicator) -> (f64, f64) {
        let me = world.process_at_rank(world.rank());
        let data = [1u8; 8];
        let mut got = [0u8; 8];
        let mut time = |counting: bool| {
            monitor::set_counting(counting);
            let mut samples = Vec::new();
            for _ in 0..15 {
                let t0 = Instant::now();
                for _ in 0..2000 {
                    mpi::request::scope(|scope| {
                        let _r = WaitGuard::from(me.immediate_receive_into(scope, &mut got[..]));
                        let _s = WaitGuard::from(me.immediate_send(scope, &data[..]));
                    });
                }
                samples.push(t0.elapsed().as_secs_f64() / 2000.0);
            }
            median(&mut samples)
        };
        let off = time(false);
        let on = time(true);
        monitor::set_counting(true);
        (off, on)
    }

    pub fn gather(world: &SimpleCommunicator) {
        let n = world.size();
        // Some traffic so the rows are not all zeros.
        let right = world.process_at_rank((world.rank() + 1) % n);
        let left = world.process_at_rank((world.rank() + n - 1) % n);
        let mut got = [0u8; 64];
        mpi::point_to_point::send_receive_into(&[1u8; 64][..], &right, &mut got[..], &left);
        let mut samples = Vec::new();
        let mut total = 0.0;
        for _ in 0..200 {
            world.barrier();
            let t0 = Instant::now();
            let m = monitor::gather_matrix(world, Window::SinceStart, Traffic::All);
            samples.push(slowest(world, t0.elapsed().as_secs_f64()));
            total = m.total();
        }
        if world.rank() == 0 {
            let mut sorted = samples.clone();
            let med = median(&mut sorted);
            let best = sorted.first().copied().unwrap_or(f64::NAN);
            println!(
                "monitor bench: gather_matrix, {n} ranks ({n}x{n} f64), 200 calls: median {:.1} us, best {:.1} us (slowest rank per call; {} bytes in the matrix)",
                med * 1e6,
                best * 1e6,
                total
            );
        }
    }
}
