//! Gathering the job's view on every rank: the communication matrix and the placement.
//! rankmig's own traffic here is not counted.

use mpi::datatype::PartitionMut;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

use crate::matrix::CommMatrix;
use crate::planner::{Location, Placement};

use super::counters::{Paused, Row, snapshot};

/// Which part of the run a matrix covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// Everything since the job started (a replacement process carries on the counts of
    /// the rank it replaces).
    SinceStart,
    /// Since the last reconfiguration.
    SinceReconfiguration,
    /// Exponentially decayed: at every gather with this window, the previous values are
    /// multiplied by `alpha` (0 < alpha ≤ 1) and the bytes sent since the previous such
    /// gather are added (`decayed = decayed·alpha + new_since_last_gather`). One decayed
    /// state per process, shared by both [`Traffic`] kinds: every decayed gather ages it.
    Decayed {
        /// Weight kept from one gather to the next.
        alpha: f64,
    },
}

/// What the matrix counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Point-to-point bytes only.
    PointToPoint,
    /// Point-to-point and collective bytes.
    All,
}

/// The bytes each rank sent to each other rank (row = sender), on every rank:
/// collective over `comm`, the job's communicator, one all-gather of one row per rank.
/// Zero everywhere when counting is not set up. This traffic itself is not counted.
///
/// ```no_run
/// use rankmig::monitor::{Traffic, Window, gather_matrix};
/// let universe = mpi::initialize().expect("MPI");
/// let world = universe.world();
/// rankmig::monitor::set_job_communicator(&world, None);
/// // ... the application communicates ...
/// let m = gather_matrix(&world, Window::SinceStart, Traffic::PointToPoint);
/// println!("{} bytes in all", m.total());
/// ```
pub fn gather_matrix<C: Communicator>(comm: &C, window: Window, traffic: Traffic) -> CommMatrix {
    let _pause = Paused::new();
    let n = usize::try_from(comm.size()).unwrap_or(0);
    let row = row_of(n, window, traffic);
    let mut all = vec![0f64; n * n];
    comm.all_gather_into(&row[..], &mut all[..]);
    matrix_of(n, &all)
}

/// [`gather_matrix`] on rank 0 only (`None` on the other ranks): one gather of one row
/// per rank to rank 0 instead of an all-gather, for a matrix only rank 0 writes.
/// Collective over `comm`. This traffic itself is not counted.
pub fn gather_matrix_at_root<C: Communicator>(
    comm: &C,
    window: Window,
    traffic: Traffic,
) -> Option<CommMatrix> {
    let _pause = Paused::new();
    let n = usize::try_from(comm.size()).unwrap_or(0);
    let row = row_of(n, window, traffic);
    let root = comm.process_at_rank(0);
    if comm.rank() != 0 {
        root.gather_into(&row[..]);
        return None;
    }
    let mut all = vec![0f64; n * n];
    root.gather_into_root(&row[..], &mut all[..]);
    Some(matrix_of(n, &all))
}

/// The matrix of `n` ranks from its rows laid end to end.
fn matrix_of(n: usize, all: &[f64]) -> CommMatrix {
    CommMatrix::from_triples(n, all.iter().enumerate().map(|(k, &b)| (k / n, k % n, b)))
}

/// This rank's row of `n` values for `window` and `traffic`.
fn row_of(n: usize, window: Window, traffic: Traffic) -> Vec<f64> {
    match window {
        Window::Decayed { alpha } => {
            let (p2p, all) = super::counters::decayed(alpha);
            let mut d = match traffic {
                Traffic::PointToPoint => p2p,
                Traffic::All => all,
            };
            d.resize(n, 0.0);
            d
        }
        _ => own_row(n, window, traffic)
            .iter()
            .map(|&b| b as f64)
            .collect(),
    }
}

fn own_row(n: usize, window: Window, traffic: Traffic) -> Vec<u64> {
    let Some((total, recent)) = snapshot() else {
        return vec![0; n];
    };
    let row: Row = match window {
        Window::SinceStart => total,
        Window::SinceReconfiguration | Window::Decayed { .. } => recent,
    };
    let mut out = vec![0u64; n];
    for (j, slot) in out.iter_mut().enumerate() {
        let p2p = row.p2p_bytes.get(j).copied().unwrap_or(0);
        let coll = row.collective_bytes.get(j).copied().unwrap_or(0);
        *slot = match traffic {
            Traffic::PointToPoint => p2p,
            Traffic::All => p2p + coll,
        };
    }
    out
}

/// Every rank's location, in rank order, on every rank (collective over `comm`; node
/// names travel as JSON bytes: an all-gather of lengths, then of the bytes).
///
/// ```no_run
/// use mpi::traits::Communicator;
/// use rankmig::planner::Location;
/// let universe = mpi::initialize().expect("MPI");
/// let world = universe.world();
/// let me = Location { node: "n1".into(), core: 0 };
/// let placement = rankmig::monitor::gather_placement(&world, &me);
/// assert_eq!(placement.len(), world.size() as usize);
/// ```
pub fn gather_placement<C: Communicator>(comm: &C, me: &Location) -> Placement {
    let mine = serde_json::to_vec(me).unwrap_or_default();
    let locations = all_gather_bytes(comm, &mine)
        .iter()
        .map(|b| {
            serde_json::from_slice(b).unwrap_or_else(|_| Location {
                node: "?".into(),
                core: 0,
            })
        })
        .collect();
    Placement::new(locations)
}

/// Rank 0 broadcasts `bytes` (its `Some`); every rank returns them. Collective.
pub fn broadcast_bytes<C: Communicator>(comm: &C, bytes: Option<Vec<u8>>) -> Vec<u8> {
    let _pause = Paused::new();
    let root = comm.process_at_rank(0);
    let mut len = bytes.as_ref().map_or(0u64, |b| b.len() as u64);
    root.broadcast_into(&mut len);
    let mut buf = bytes.unwrap_or_else(|| vec![0u8; len as usize]);
    buf.resize(len as usize, 0);
    if len > 0 {
        root.broadcast_into(&mut buf[..]);
    }
    buf
}

/// Every rank's `mine`, in rank order, on every rank. Collective.
pub fn all_gather_bytes<C: Communicator>(comm: &C, mine: &[u8]) -> Vec<Vec<u8>> {
    let _pause = Paused::new();
    let n = usize::try_from(comm.size()).unwrap_or(0);
    let mut lengths = vec![0i32; n];
    comm.all_gather_into(&(mine.len() as i32), &mut lengths[..]);
    let displs: Vec<i32> = lengths
        .iter()
        .scan(0i32, |acc, &l| {
            let d = *acc;
            *acc += l;
            Some(d)
        })
        .collect();
    let total: i32 = lengths.iter().sum();
    let mut all = vec![0u8; total.max(0) as usize];
    {
        let mut partition = PartitionMut::new(&mut all[..], &lengths[..], &displs[..]);
        comm.all_gather_varcount_into(mine, &mut partition);
    }
    lengths
        .iter()
        .zip(&displs)
        .map(|(&l, &d)| all[d as usize..(d + l) as usize].to_vec())
        .collect()
}
