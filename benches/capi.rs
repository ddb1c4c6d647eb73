//! The cost of a `rankmig_checkpoint()` that does not save, from the C interface, in a
//! singleton MPI process (no `mpirun`), with rankmig's default checkpoint settings (a
//! save about every 300 s, so no save happens during the measurement) and a 1 MiB
//! region registered.
//!
//! Baseline measured in the same run: `MPI_Comm_rank` on the job's communicator, the
//! cheapest MPI call a loop makes.
//!
//! `availability_check`: the slow path a `checkpoint!` call takes about once a second
//! under `rankmig run` (the pacing exchange, then rank 0 reads the availability file
//! and broadcasts what it found), made of the same calls the job makes, without and
//! with the contention watch (which reads the `schedstat` of each of the rank's threads,
//! under `/proc/self/task/`, on rank 0 also `/proc/pressure/cpu` where the kernel gives
//! it, and turns the pacing broadcast into an all-gather of the waits). In a singleton
//! the collectives cost little: the difference is mostly the reads. `contention watch
//! on, matrix note`: the same
//! check with the note the job carries since it writes the run directory's matrix while
//! it runs (whether the matrix is due); `matrix_export`: what a check adds when it is
//! due, every few seconds.
//!
//! `cargo bench --bench capi`.

#[cfg(feature = "mpi")]
fn main() {
    use std::hint::black_box;

    use criterion::Criterion;
    use rankmig::capi::{rankmig_checkpoint, rankmig_comm, rankmig_init, rankmig_register};

    let Some(universe) = mpi::initialize() else {
        eprintln!("capi bench: MPI could not be initialised");
        std::process::exit(1);
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // SAFETY: single-threaded set-up, before the runtime reads the environment.
    unsafe { std::env::set_var("RANKMIG_CKPT_DIR", dir.path().join("ckpt")) };
    // SAFETY: MPI is initialised; a null communicator pointer is allowed.
    let code = unsafe { rankmig_init(std::ptr::null_mut()) };
    assert_eq!(code, 0, "rankmig_init");
    let mut state = vec![0u8; 1 << 20];
    // SAFETY: `state` outlives every checkpoint call of this bench.
    let code =
        unsafe { rankmig_register(c"state".as_ptr(), state.as_mut_ptr().cast(), state.len()) };
    assert_eq!(code, 0, "rankmig_register");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("capi");
    group.bench_function("rankmig_checkpoint/no save", |b| {
        b.iter(|| black_box(rankmig_checkpoint()))
    });
    group.bench_function("baseline/MPI_Comm_rank", |b| {
        b.iter(|| {
            let mut rank = 0;
            // SAFETY: a valid communicator and out pointer.
            unsafe { mpi::ffi::MPI_Comm_rank(rankmig_comm(), &mut rank) };
            black_box(rank)
        })
    });
    group.finish();
    availability_check(&mut c, dir.path(), &universe.world());
    c.final_summary();
    assert_eq!(rankmig::capi::rankmig_finalize(), 0, "rankmig_finalize");
    drop(universe);
}

/// The availability check without and with the contention watch (see the module doc).
#[cfg(feature = "mpi")]
fn availability_check(
    c: &mut criterion::Criterion,
    dir: &std::path::Path,
    world: &mpi::topology::SimpleCommunicator,
) {
    use std::hint::black_box;

    use rankmig::contention::{CheckSample, PressureReader, WaitReader};
    use rankmig::migrate::job::pacing::{CheckPacer, CheckSpacing};
    use rankmig::monitor::AvailabilityWatcher;

    let av = dir.join("av");
    std::fs::write(&av, "n1 2\nn2 2\n").expect("availability file");
    let mut group = c.benchmark_group("availability_check");
    let mut watcher = AvailabilityWatcher::new(&av);
    let mut pacer = CheckPacer::starting_at(CheckSpacing::Millis(1000), 0);
    let mut calls = 0u64;
    group.bench_function("watch off", |b| {
        b.iter(|| {
            calls += 10;
            pacer.after_check(world, calls);
            black_box(watcher.check(world))
        })
    });
    let mut reader = WaitReader::start();
    assert!(reader.reads(), "this kernel gives schedstat");
    // Rank 0 is its node's lowest rank: it also reads the node's CPU pressure.
    let mut pressure = PressureReader::open();
    // This rank's sample of a check: its own waits and its node's CPU pressure.
    let mut sample = || CheckSample {
        wait: reader.sample(),
        pressure: pressure.as_mut().and_then(|p| p.sample().ok().flatten()),
        ..CheckSample::default()
    };
    group.bench_function("contention watch on", |b| {
        b.iter(|| {
            calls += 10;
            let mine = sample();
            let all = pacer.after_check_gathering(world, calls, mine);
            black_box((all, watcher.check_carrying::<_, String>(world, None)))
        })
    });
    // The job's check since the run directory's matrix is written while it runs: rank
    // 0's note carries whether the matrix is due (not due here: its gather and write
    // come every few seconds, `matrix_export` below).
    group.bench_function("contention watch on, matrix note", |b| {
        b.iter(|| {
            calls += 10;
            let mine = sample();
            let all = pacer.after_check_gathering(world, calls, mine);
            let note = Some((None::<String>, false));
            black_box((all, watcher.check_carrying(world, note)))
        })
    });
    group.finish();
    matrix_export(c, dir, world);
}

/// What a check costs when the run directory's matrix is due (every
/// `rankmig::migrate::job::MATRIX_EVERY`): the gather at rank 0 (one rank here) and
/// rank 0's atomic write of a 64-rank matrix of a 2-D halo exchange, as text in
/// TreeMatch's format.
#[cfg(feature = "mpi")]
fn matrix_export(
    c: &mut criterion::Criterion,
    dir: &std::path::Path,
    world: &mpi::topology::SimpleCommunicator,
) {
    use std::hint::black_box;

    use rankmig::matrix::{CommMatrix, MatrixFormat};
    use rankmig::monitor::{Traffic, Window};

    let n = 64;
    let side = 8;
    let halo = (0..n).flat_map(|r| {
        let (x, y) = (r % side, r / side);
        let right = ((x + 1) % side) + y * side;
        let below = x + ((y + 1) % side) * side;
        [(r, right, 123_456.0), (r, below, 654_321.0)]
    });
    let matrix = CommMatrix::from_triples(n, halo);
    let mut group = c.benchmark_group("matrix_export");
    group.bench_function("gather at rank 0", |b| {
        b.iter(|| {
            black_box(rankmig::monitor::gather::gather_matrix_at_root(
                world,
                Window::SinceStart,
                Traffic::All,
            ))
        })
    });
    group.bench_function("64 ranks, text and atomic write", |b| {
        b.iter(|| {
            let text = matrix.to_text(MatrixFormat::Dense);
            black_box(rankmig::own_files::write_atomic(dir, "matrix.mat", &text)).expect("write")
        })
    });
    group.finish();
}

#[cfg(not(feature = "mpi"))]
fn main() {
    println!("capi bench: built without the mpi feature, nothing measured");
}
