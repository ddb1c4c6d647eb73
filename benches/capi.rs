//! The cost of a `rankmig_checkpoint()` that does not save, from the C interface, in a
//! singleton MPI process (no `mpirun`), with rankmig's default checkpoint settings (a
//! save about every 300 s, so no save happens during the measurement) and a 1 MiB
//! region registered.
//!
//! Baseline measured in the same run: `MPI_Comm_rank` on the job's communicator, the
//! cheapest MPI call a loop makes. `cargo bench --bench capi`.

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
    c.final_summary();
    assert_eq!(rankmig::capi::rankmig_finalize(), 0, "rankmig_finalize");
    drop(universe);
}

#[cfg(not(feature = "mpi"))]
fn main() {
    println!("capi bench: built without the mpi feature, nothing measured");
}
