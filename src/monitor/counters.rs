//! Per-destination counters of what this process sends, in ranks of the job's
//! communicator.
//!
//! Fed by the interposed MPI functions ([`super::interpose`]). Counting starts when the
//! job communicator is set ([`set_job_communicator`]); before that, and while rankmig
//! itself communicates ([`Paused`]), calls are only forwarded.

use std::cell::Cell;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::Mutex;

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;

/// What one process has sent to each rank of the job.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Point-to-point bytes to each rank.
    pub p2p_bytes: Vec<u64>,
    /// Point-to-point messages to each rank.
    pub p2p_messages: Vec<u64>,
    /// Bytes sent inside collectives, under the model of [`super::interpose`].
    pub collective_bytes: Vec<u64>,
}

impl Row {
    fn zeros(n: usize) -> Self {
        Self {
            p2p_bytes: vec![0; n],
            p2p_messages: vec![0; n],
            collective_bytes: vec![0; n],
        }
    }

    /// Element-wise `self − other` (saturating).
    pub fn minus(&self, other: &Row) -> Row {
        let sub = |a: &[u64], b: &[u64]| -> Vec<u64> {
            a.iter()
                .enumerate()
                .map(|(i, x)| x.saturating_sub(b.get(i).copied().unwrap_or(0)))
                .collect()
        };
        Row {
            p2p_bytes: sub(&self.p2p_bytes, &other.p2p_bytes),
            p2p_messages: sub(&self.p2p_messages, &other.p2p_messages),
            collective_bytes: sub(&self.collective_bytes, &other.collective_bytes),
        }
    }
}

struct State {
    job_comm: ffi::MPI_Comm,
    job_group: ffi::MPI_Group,
    size: usize,
    total: Row,
    at_reconfiguration: Row,
    /// Exponentially decayed bytes (point to point + collectives) per destination, and
    /// the totals when it was last updated.
    decayed: Vec<f64>,
    at_decay: Row,
    /// Local rank → job rank, per communicator handle.
    translation: HashMap<usize, Vec<c_int>>,
    /// Persistent send requests: handle → (job rank, bytes).
    persistent: HashMap<usize, (usize, u64)>,
}

// SAFETY: the raw MPI handles are plain identifiers used under the mutex only.
unsafe impl Send for State {}

static STATE: Mutex<Option<State>> = Mutex::new(None);

thread_local! {
    static PAUSED: Cell<bool> = const { Cell::new(false) };
}

/// While alive, this thread's MPI calls are not counted (rankmig's own traffic).
pub struct Paused {
    was: bool,
}

impl Paused {
    /// Pauses counting on this thread.
    pub fn new() -> Self {
        Self {
            was: PAUSED.with(|p| p.replace(true)),
        }
    }
}

impl Default for Paused {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        PAUSED.with(|p| p.set(self.was));
    }
}

fn counting() -> bool {
    !PAUSED.with(Cell::get)
}

/// Counts from now on in ranks of `comm` (the job's communicator). Called again after
/// a migration rebuilds it: counts restart from `carried` (the replaced rank's row for a
/// new process) or from the current totals.
///
/// `RANKMIG_MONITOR=off` in the environment disables counting (calls are only
/// forwarded), e.g. to measure what counting costs.
pub fn set_job_communicator(comm: &SimpleCommunicator, carried: Option<Row>) {
    if std::env::var("RANKMIG_MONITOR").is_ok_and(|v| v == "off") {
        return;
    }
    let _pause = Paused::new();
    let raw = comm.as_raw();
    let mut group: ffi::MPI_Group = unsafe { ffi::RSMPI_GROUP_NULL };
    let mut size: c_int = 0;
    // SAFETY: a valid communicator; out-parameters are valid.
    unsafe {
        ffi::PMPI_Comm_group(raw, &mut group);
        ffi::PMPI_Comm_size(raw, &mut size);
    }
    let size = size.max(0) as usize;
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let previous = guard.take();
    let total = match (carried, previous) {
        (Some(row), _) => row,
        (None, Some(old)) if old.size == size => {
            free_group(old.job_group);
            old.total
        }
        (None, Some(old)) => {
            free_group(old.job_group);
            Row::zeros(size)
        }
        (None, None) => Row::zeros(size),
    };
    *guard = Some(State {
        job_comm: raw,
        job_group: group,
        size,
        at_reconfiguration: total.clone(),
        decayed: vec![0.0; size],
        at_decay: total.clone(),
        total,
        translation: HashMap::new(),
        persistent: HashMap::new(),
    });
}

fn free_group(mut group: ffi::MPI_Group) {
    // SAFETY: a group we created with PMPI_Comm_group.
    unsafe { ffi::PMPI_Group_free(&mut group) };
}

/// Starts the "since the last reconfiguration" window now.
pub fn mark_reconfiguration() {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = guard.as_mut() {
        s.at_reconfiguration = s.total.clone();
    }
}

/// This process's counts since start, and since the last reconfiguration.
pub fn snapshot() -> Option<(Row, Row)> {
    let guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .as_ref()
        .map(|s| (s.total.clone(), s.total.minus(&s.at_reconfiguration)))
}

/// Updates and returns the exponentially decayed row: every call multiplies the old
/// value by `alpha` and adds the bytes (point to point + collectives) sent since the
/// previous call. Empty when counting is not set up.
pub fn decayed(alpha: f64) -> Vec<f64> {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = guard.as_mut() else {
        return Vec::new();
    };
    let new = s.total.minus(&s.at_decay);
    for (j, d) in s.decayed.iter_mut().enumerate() {
        *d = *d * alpha + (new.p2p_bytes[j] + new.collective_bytes[j]) as f64;
    }
    s.at_decay = s.total.clone();
    s.decayed.clone()
}

/// Bytes of `count` elements of `datatype`.
pub(super) fn bytes_of(count: c_int, datatype: ffi::MPI_Datatype) -> u64 {
    let mut size: c_int = 0;
    // SAFETY: a datatype handle given by the application to an MPI call.
    unsafe { ffi::PMPI_Type_size(datatype, &mut size) };
    (count.max(0) as u64) * (size.max(0) as u64)
}

/// Records a point-to-point send of `bytes` to `dest` (a rank of `comm`).
pub(super) fn record_send(comm: ffi::MPI_Comm, dest: c_int, bytes: u64) {
    if !counting() {
        return;
    }
    with_state(|s| {
        if let Some(job_rank) = s.job_rank(comm, dest) {
            s.total.p2p_bytes[job_rank] += bytes;
            s.total.p2p_messages[job_rank] += 1;
        }
    });
}

/// Records `bytes` sent to each local rank in `dests` inside a collective on `comm`.
pub(super) fn record_collective(comm: ffi::MPI_Comm, dests: impl Iterator<Item = (c_int, u64)>) {
    if !counting() {
        return;
    }
    with_state(|s| {
        for (dest, bytes) in dests {
            if let Some(job_rank) = s.job_rank(comm, dest) {
                s.total.collective_bytes[job_rank] += bytes;
            }
        }
    });
}

/// Remembers a persistent send request.
pub(super) fn record_persistent(
    request: ffi::MPI_Request,
    comm: ffi::MPI_Comm,
    dest: c_int,
    bytes: u64,
) {
    if !counting() {
        return;
    }
    with_state(|s| {
        if let Some(job_rank) = s.job_rank(comm, dest) {
            s.persistent.insert(request.0 as usize, (job_rank, bytes));
        }
    });
}

/// Counts one start of a persistent request (if it is a send we remembered).
pub(super) fn record_start(request: ffi::MPI_Request) {
    if !counting() {
        return;
    }
    with_state(|s| {
        if let Some(&(job_rank, bytes)) = s.persistent.get(&(request.0 as usize)) {
            s.total.p2p_bytes[job_rank] += bytes;
            s.total.p2p_messages[job_rank] += 1;
        }
    });
}

/// Forgets a freed request.
pub(super) fn forget_request(request: ffi::MPI_Request) {
    with_state(|s| {
        s.persistent.remove(&(request.0 as usize));
    });
}

/// Forgets the rank translation of a communicator about to be freed.
pub(super) fn forget_comm(comm: ffi::MPI_Comm) {
    with_state(|s| {
        s.translation.remove(&(comm.0 as usize));
    });
}

/// Size of `comm` (remote size for an intercommunicator: the ranks one sends to).
pub(super) fn peers(comm: ffi::MPI_Comm) -> c_int {
    let mut inter: c_int = 0;
    let mut size: c_int = 0;
    // SAFETY: a communicator given to an MPI call by the application.
    unsafe {
        ffi::PMPI_Comm_test_inter(comm, &mut inter);
        if inter != 0 {
            ffi::PMPI_Comm_remote_size(comm, &mut size);
        } else {
            ffi::PMPI_Comm_size(comm, &mut size);
        }
    }
    size
}

/// Rank of this process in `comm`.
pub(super) fn my_rank(comm: ffi::MPI_Comm) -> c_int {
    let mut rank: c_int = -1;
    // SAFETY: as above.
    unsafe { ffi::PMPI_Comm_rank(comm, &mut rank) };
    rank
}

fn with_state(f: impl FnOnce(&mut State)) {
    let _pause = Paused::new();
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = guard.as_mut() {
        f(s);
    }
}

impl State {
    /// Job rank of local rank `rank` of `comm`, if it is in the job.
    fn job_rank(&mut self, comm: ffi::MPI_Comm, rank: c_int) -> Option<usize> {
        if rank < 0 {
            return None; // MPI_PROC_NULL, MPI_ANY_SOURCE and the like
        }
        if comm.0 == self.job_comm.0 {
            return ((rank as usize) < self.size).then_some(rank as usize);
        }
        let key = comm.0 as usize;
        if !self.translation.contains_key(&key) {
            let table = translate(comm, self.job_group);
            self.translation.insert(key, table);
        }
        let table = self.translation.get(&key)?;
        let job = *table.get(rank as usize)?;
        (job >= 0 && (job as usize) < self.size).then_some(job as usize)
    }
}

/// For every rank one can send to on `comm`, its rank in `job_group` (or < 0).
fn translate(comm: ffi::MPI_Comm, job_group: ffi::MPI_Group) -> Vec<c_int> {
    let n = peers(comm);
    let mut inter: c_int = 0;
    let mut group: ffi::MPI_Group = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: valid handles; out-parameters sized to `n`.
    unsafe {
        ffi::PMPI_Comm_test_inter(comm, &mut inter);
        if inter != 0 {
            ffi::PMPI_Comm_remote_group(comm, &mut group);
        } else {
            ffi::PMPI_Comm_group(comm, &mut group);
        }
    }
    let ranks: Vec<c_int> = (0..n).collect();
    let mut out = vec![-1; n.max(0) as usize];
    // SAFETY: both arrays have `n` elements.
    unsafe {
        ffi::PMPI_Group_translate_ranks(group, n, ranks.as_ptr(), job_group, out.as_mut_ptr());
    }
    free_group(group);
    out
}
