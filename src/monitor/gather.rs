//! Gathering the job's view on every rank: the communication matrix and the placement.
//! rankmig's own traffic here is not counted.

use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
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
    /// gather are added. Counts point-to-point and collective bytes.
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

/// The bytes each rank sent to each other rank, on every rank (collective over `comm`,
/// the job's communicator). Zero everywhere when counting is not set up.
pub fn gather_matrix(comm: &SimpleCommunicator, window: Window, traffic: Traffic) -> CommMatrix {
    let _pause = Paused::new();
    let n = comm.size() as usize;
    let row: Vec<f64> = match window {
        Window::Decayed { alpha } => {
            let mut d = super::counters::decayed(alpha);
            d.resize(n, 0.0);
            d
        }
        _ => own_row(n, window, traffic)
            .iter()
            .map(|&b| b as f64)
            .collect(),
    };
    let mut all = vec![0f64; n * n];
    comm.all_gather_into(&row[..], &mut all[..]);
    CommMatrix::from_triples(n, all.iter().enumerate().map(|(k, &b)| (k / n, k % n, b)))
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

/// Every rank's location, in rank order, on every rank.
pub fn gather_placement(comm: &SimpleCommunicator, me: &Location) -> Placement {
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

/// Rank 0 broadcasts `bytes` (its `Some`); every rank returns them.
pub fn broadcast_bytes(comm: &SimpleCommunicator, bytes: Option<Vec<u8>>) -> Vec<u8> {
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

/// Every rank's `mine`, in rank order, on every rank.
pub fn all_gather_bytes(comm: &SimpleCommunicator, mine: &[u8]) -> Vec<Vec<u8>> {
    let _pause = Paused::new();
    let n = comm.size() as usize;
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
