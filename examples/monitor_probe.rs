//! Sends a known pattern with every kind of MPI call the monitor counts, then prints the
//! gathered matrices as JSON on rank 0 (for `tests/monitor_mpi.rs`).
//!
//! With n ranks, rank r sends:
//! - a blocking message of 1000 bytes to r−1 (mod n), 3 times (ring);
//! - an immediate message of 200 bytes to r−1 (mod n);
//! - a persistent request of 40 bytes to r+2 (mod n), started 5 times;
//! - the send half of a sendrecv of 16 bytes to r+3 (mod n);
//! - one all-to-all of 8 bytes to every rank (collective).
//!
//! Then the same pattern once more, for the exponentially decayed window.
//!
//! ```text
//! mpirun -np 4 target/release/examples/monitor_probe
//! ```

use mpi::request::WaitGuard;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Source};
use rankmig::monitor::{self, Traffic, Window};

fn main() {
    let Some(universe) = mpi::initialize() else {
        eprintln!("monitor_probe: MPI could not be initialised");
        std::process::exit(1);
    };
    let world = universe.world();
    monitor::set_job_communicator(&world, None);
    pattern(&world);
    let p2p = monitor::gather_matrix(&world, Window::SinceStart, Traffic::PointToPoint);
    let all = monitor::gather_matrix(&world, Window::SinceStart, Traffic::All);
    // Decayed window (alpha = 0.5): the pattern once, then once more.
    let decayed_once = monitor::gather_matrix(&world, Window::Decayed { alpha: 0.5 }, Traffic::All);
    pattern(&world);
    let decayed_twice =
        monitor::gather_matrix(&world, Window::Decayed { alpha: 0.5 }, Traffic::All);
    if world.rank() == 0 {
        let dense = |m: &rankmig::matrix::CommMatrix| -> Vec<Vec<f64>> {
            (0..m.order())
                .map(|i| (0..m.order()).map(|j| m.get(i, j)).collect())
                .collect()
        };
        let json = serde_json::json!({
            "p2p": dense(&p2p),
            "all": dense(&all),
            "decayed_once": dense(&decayed_once),
            "decayed_twice": dense(&decayed_twice),
        });
        println!("{json}");
    }
}

fn pattern(world: &SimpleCommunicator) {
    let (rank, n) = (world.rank(), world.size());
    let at = |k: i32| world.process_at_rank((rank + k).rem_euclid(n));
    // Ring: blocking sends to r−1, received from r+1.
    let ring = [7u8; 1000];
    for _ in 0..3 {
        let mut got = [0u8; 1000];
        mpi::request::scope(|scope| {
            let _guard = WaitGuard::from(at(1).immediate_receive_into(scope, &mut got[..]));
            at(-1).send(&ring[..]);
        });
    }
    // Immediate send to r−1, received from r+1.
    let small = [1u8; 200];
    let mut got = [0u8; 200];
    mpi::request::scope(|scope| {
        let _recv = WaitGuard::from(at(1).immediate_receive_into(scope, &mut got[..]));
        let _send = WaitGuard::from(at(-1).immediate_send(scope, &small[..]));
    });
    persistent(world, rank, n);
    // Sendrecv: send to r+3, receive from r−3.
    let mut back = [0u8; 16];
    mpi::point_to_point::send_receive_into(&[3u8; 16][..], &at(3), &mut back[..], &at(-3));
    // All-to-all of 8 bytes per rank.
    let send = vec![5u8; 8 * n as usize];
    let mut recv = vec![0u8; 8 * n as usize];
    world.all_to_all_into(&send[..], &mut recv[..]);
}

/// A persistent send of 40 bytes to r+2, started 5 times, matched by plain receives.
fn persistent(world: &SimpleCommunicator, rank: i32, n: i32) {
    use mpi::ffi;
    use mpi::raw::AsRaw;
    let to = (rank + 2).rem_euclid(n);
    let from = (rank - 2).rem_euclid(n);
    let buf = [9u8; 40];
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: valid buffer, type, ranks and communicator; the request is completed
    // (waited) before the buffer goes out of scope and freed at the end.
    unsafe {
        ffi::MPI_Send_init(
            buf.as_ptr().cast(),
            40,
            ffi::RSMPI_UINT8_T,
            to,
            11,
            world.as_raw(),
            &mut request,
        );
    }
    for _ in 0..5 {
        let mut got = [0u8; 40];
        // SAFETY: as above.
        unsafe {
            ffi::MPI_Start(&mut request);
        }
        let _ = world
            .process_at_rank(from)
            .receive_into_with_tag(&mut got[..], 11);
        // SAFETY: as above.
        unsafe {
            let mut status = std::mem::zeroed();
            ffi::MPI_Wait(&mut request, &mut status);
        }
    }
    // SAFETY: as above.
    unsafe {
        ffi::MPI_Request_free(&mut request);
    }
}
