//! Exercises the monitor under real `mpirun` and prints what it saw as one JSON line on
//! rank 0 (for `tests/it/monitor_mpi.rs`).
//!
//! ```text
//! mpirun -np 4 target/release/examples/monitor_probe            # traffic pattern
//! mpirun -np 4 target/release/examples/monitor_probe placement  # locations, binding
//! mpirun -np 4 target/release/examples/monitor_probe watch DIR  # availability edits
//! ```
//!
//! **Traffic pattern** (n ranks, 4 for the exact figures of the test). Rank r sends:
//! - ring, blocking: 1000 bytes to r−1 (mod n), 3 times (standard, synchronous,
//!   standard sends);
//! - 2D halo, immediate: on a 2 × (n/2) grid without wrap-around, 24 bytes to each
//!   neighbour in its row and 32 bytes to the one in its column;
//! - a persistent request of 40 bytes to r+2 (mod n), started 5 times;
//! - the send halves of a sendrecv of 16 bytes to r+3 (mod n) and of a
//!   sendrecv-replace of 8 bytes to r+1 (mod n);
//! - collectives: an all-to-all of 8 bytes per rank, a broadcast of 16 bytes from rank
//!   0, an all-reduce of one `f64`, a barrier.
//!
//! Then the same pattern once more, for the exponentially decayed window (alpha 0.5).
//!
//! **placement**: every rank finds its location (`RANKMIG_NODE`/`RANKMIG_CORE`, or
//! `RANKMIG_PLACEMENT`), binds itself, and rank 0 prints the gathered placement and each
//! rank's allowed CPUs.
//!
//! **watch DIR**: rank 0 edits `DIR/av` between collective checks (good, bad,
//! half-written, no cores, deleted, the current content again, good); every rank
//! records its outcomes, and rank 0 prints all ranks' records. Then a time-based
//! [`CheckSchedule`] with rank-dependent iteration times: the calls at which each rank
//! found a check due.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use mpi::collective::SystemOperation;
use mpi::request::WaitGuard;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};
use rankmig::availability::{Availability, AvailabilityFormat};
use rankmig::matrix::CommMatrix;
use rankmig::monitor::gather::all_gather_bytes;
use rankmig::monitor::location::{LogicalCore, allowed_cpus};
use rankmig::monitor::{self, AvailabilityWatcher, CheckSchedule, Traffic, WatchOutcome, Window};
use serde_json::{Value, json};

fn main() -> ExitCode {
    // The library's messages (a refused edit, ...) go through `log`; print warnings.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let Some(universe) = mpi::initialize() else {
        eprintln!("monitor_probe: MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("pattern") => Ok(traffic(&world)),
        Some("placement") => placement(&world),
        Some("watch") => match args.get(1) {
            Some(dir) => Ok(watch(&world, Path::new(dir))),
            None => Err("watch needs a directory".to_owned()),
        },
        Some(other) => Err(format!("unknown mode {other:?}")),
    };
    match result {
        Ok(json) => {
            if world.rank() == 0 {
                println!("{json}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("monitor_probe: rank {}: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}

fn dense(m: &CommMatrix) -> Vec<Vec<f64>> {
    (0..m.order())
        .map(|i| (0..m.order()).map(|j| m.get(i, j)).collect())
        .collect()
}

fn traffic(world: &SimpleCommunicator) -> Value {
    monitor::set_job_communicator(world, None);
    pattern(world);
    let p2p = monitor::gather_matrix(world, Window::SinceStart, Traffic::PointToPoint);
    let all = monitor::gather_matrix(world, Window::SinceStart, Traffic::All);
    let messages = monitor::snapshot().map(|(total, _)| total.p2p_messages);
    let messages = all_gather_bytes(world, &serde_json::to_vec(&messages).unwrap_or_default());
    let messages: Vec<Value> = messages
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
        .collect();
    // Decayed window (alpha = 0.5): the pattern once, then once more.
    let decayed_once = monitor::gather_matrix(world, Window::Decayed { alpha: 0.5 }, Traffic::All);
    monitor::mark_reconfiguration();
    pattern(world);
    let decayed_twice = monitor::gather_matrix(world, Window::Decayed { alpha: 0.5 }, Traffic::All);
    let recent = monitor::gather_matrix(world, Window::SinceReconfiguration, Traffic::All);
    let total = monitor::gather_matrix(world, Window::SinceStart, Traffic::All);
    json!({
        "p2p": dense(&p2p),
        "all": dense(&all),
        "messages": messages,
        "decayed_once": dense(&decayed_once),
        "decayed_twice": dense(&decayed_twice),
        "since_reconfiguration": dense(&recent),
        "since_start_twice": dense(&total),
    })
}

fn pattern(world: &SimpleCommunicator) {
    let (rank, n) = (world.rank(), world.size());
    let at = |k: i32| world.process_at_rank((rank + k).rem_euclid(n));
    // Ring: blocking sends to r−1, received from r+1 (the second one synchronous).
    let ring = [7u8; 1000];
    for i in 0..3 {
        let mut got = [0u8; 1000];
        mpi::request::scope(|scope| {
            let _guard = WaitGuard::from(at(1).immediate_receive_into(scope, &mut got[..]));
            if i == 1 {
                at(-1).synchronous_send(&ring[..]);
            } else {
                at(-1).send(&ring[..]);
            }
        });
    }
    halo(world);
    persistent(world, rank, n);
    // Sendrecv: send to r+3, receive from r−3.
    let mut back = [0u8; 16];
    mpi::point_to_point::send_receive_into(&[3u8; 16][..], &at(3), &mut back[..], &at(-3));
    // Sendrecv-replace: send to r+1, receive from r−1.
    let mut buf = [rank as u8; 8];
    mpi::point_to_point::send_receive_replace_into(&mut buf[..], &at(1), &at(-1));
    // Collectives.
    let send = vec![5u8; 8 * n as usize];
    let mut recv = vec![0u8; 8 * n as usize];
    world.all_to_all_into(&send[..], &mut recv[..]);
    let mut b = [rank as u8; 16];
    world.process_at_rank(0).broadcast_into(&mut b[..]);
    let mut sum = 0f64;
    world.all_reduce_into(&1f64, &mut sum, SystemOperation::sum());
    world.barrier();
}

/// 2D halo on a 2 × (n/2) grid (rank r at row r / (n/2), column r % (n/2)), immediate
/// sends: 24 bytes along rows, 32 bytes along columns.
fn halo(world: &SimpleCommunicator) {
    let (rank, n) = (world.rank(), world.size());
    let cols = (n / 2).max(1);
    let (row, col) = (rank / cols, rank % cols);
    let mut neighbours: Vec<(i32, usize)> = Vec::new();
    if col > 0 {
        neighbours.push((rank - 1, 24));
    }
    if col + 1 < cols {
        neighbours.push((rank + 1, 24));
    }
    if row == 0 && rank + cols < n {
        neighbours.push((rank + cols, 32));
    }
    if row == 1 {
        neighbours.push((rank - cols, 32));
    }
    let out: Vec<Vec<u8>> = neighbours.iter().map(|&(_, b)| vec![2u8; b]).collect();
    let mut inbox: Vec<Vec<u8>> = neighbours.iter().map(|&(_, b)| vec![0u8; b]).collect();
    mpi::request::multiple_scope(2 * neighbours.len(), |scope, coll| {
        for ((&(peer, _), buf), data) in neighbours.iter().zip(inbox.iter_mut()).zip(&out) {
            let p = world.process_at_rank(peer);
            coll.add(p.immediate_receive_into(scope, &mut buf[..]));
            coll.add(p.immediate_send(scope, &data[..]));
        }
        let mut done = Vec::new();
        coll.wait_all(&mut done);
    });
}

/// A persistent send of 40 bytes to r+2, started 5 times, matched by plain receives.
fn persistent(world: &SimpleCommunicator, rank: i32, n: i32) {
    use mpi::ffi;
    use mpi::raw::AsRaw;
    let to = (rank + 2).rem_euclid(n);
    let from = (rank - 2).rem_euclid(n);
    let buf = [9u8; 40];
    // SAFETY: reading a predefined MPI handle.
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
    for i in 0..5 {
        let mut got = [0u8; 40];
        // SAFETY: as above.
        unsafe {
            if i % 2 == 0 {
                ffi::MPI_Start(&mut request);
            } else {
                ffi::MPI_Startall(1, &mut request);
            }
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

fn placement(world: &SimpleCommunicator) -> Result<Value, String> {
    let rank = world.rank() as usize;
    let me = monitor::own_location(rank).map_err(|e| e.to_string())?;
    let logical =
        LogicalCore::of_location(&me, |k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
    let bound = monitor::bind_to(logical).map_err(|e| e.to_string());
    let placement = monitor::gather_placement(world, &me);
    let mine = json!({
        "real_core": bound.as_ref().ok(),
        "bind_error": bound.as_ref().err(),
        "cpus": allowed_cpus(),
    });
    let all = all_gather_bytes(world, &serde_json::to_vec(&mine).unwrap_or_default());
    let bindings: Vec<Value> = all
        .iter()
        .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
        .collect();
    Ok(json!({
        "placement": placement.to_text(),
        "bindings": bindings,
    }))
}

/// One outcome as JSON: its kind, and the diff or the message.
fn outcome_json(outcome: &WatchOutcome, watcher: &AvailabilityWatcher) -> Value {
    match outcome {
        WatchOutcome::Unchanged => json!({"kind": "unchanged"}),
        WatchOutcome::Changed { availability } => json!({
            "kind": "changed",
            "total_cores": availability.total_cores(),
            "diff": watcher.last_diff().map(ToString::to_string),
        }),
        WatchOutcome::Refused { message } => json!({"kind": "refused", "message": message}),
    }
}

fn watch(world: &SimpleCommunicator, dir: &Path) -> Value {
    let path = dir.join("av");
    let root = world.rank() == 0;
    let first = "n1 2\nn2 2\n";
    if root {
        let _ = std::fs::write(&path, first);
    }
    world.barrier();
    let current = Availability::parse(first, "av", AvailabilityFormat::Auto)
        .expect("the first availability parses");
    let mut watcher = AvailabilityWatcher::with_current(&path, current);
    // (content rank 0 writes before the check; None = leave the file, "-" = delete it)
    let steps: [Option<&str>; 11] = [
        None,
        Some("n1 2\nn2 1\nn3 2\n"),
        None,
        Some("n1 2\nn2 two\n"),
        None,
        Some("n1 2\nn2"),
        Some("n1 0\nn2 0\n"),
        Some("-"),
        None,
        Some("# back to the current view\nn1 2\nn2 1\nn3 2\n"),
        Some("n1 4\n"),
    ];
    let mut seen = Vec::new();
    for step in steps {
        if root {
            match step {
                Some("-") => {
                    let _ = std::fs::remove_file(&path);
                }
                Some(text) => {
                    let _ = std::fs::write(&path, text);
                }
                None => {}
            }
        }
        let outcome = watcher.check(world);
        seen.push(outcome_json(&outcome, &watcher));
    }
    // A time-based schedule: 40 calls, ranks agree every 4 calls whether 30 ms passed.
    let mut schedule = CheckSchedule::every(Duration::from_millis(30), 4);
    let mut due_at = Vec::new();
    for call in 1..=40u64 {
        std::thread::sleep(Duration::from_millis(2 + 2 * world.rank() as u64));
        if schedule.due(world) {
            due_at.push(call);
        }
    }
    let mine = json!({"outcomes": seen, "due_at": due_at});
    let all = all_gather_bytes(world, &serde_json::to_vec(&mine).unwrap_or_default());
    Value::Array(
        all.iter()
            .map(|b| serde_json::from_slice(b).unwrap_or(Value::Null))
            .collect(),
    )
}
