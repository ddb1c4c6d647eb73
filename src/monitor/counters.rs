//! Per-destination counters of what this process sends, in ranks of the job's
//! communicator.
//!
//! Fed by the interposed MPI functions ([`super::interpose`]). Counting starts when the
//! job communicator is set ([`set_job_communicator`]); before that, while rankmig itself
//! communicates ([`Paused`]), and while counting is switched off ([`set_counting`] or
//! `RANKMIG_MONITOR=off`), calls are only forwarded.
//!
//! The hot path takes no lock: the counters are a dense `Vec<AtomicU64>` per kind,
//! shared through an `Arc` that every thread caches with the generation it was read at
//! (the generation changes when the job communicator is replaced or a communicator is
//! freed); each thread also caches the rank translation of the communicators it sends
//! on. Only persistent requests go through a mutex, and only when some exist.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

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
    /// A row of `n` zeros.
    ///
    /// ```
    /// let r = rankmig::monitor::Row::zeros(3);
    /// assert_eq!(r.p2p_bytes, vec![0, 0, 0]);
    /// ```
    pub fn zeros(n: usize) -> Self {
        Self {
            p2p_bytes: vec![0; n],
            p2p_messages: vec![0; n],
            collective_bytes: vec![0; n],
        }
    }

    /// Element-wise `self − other` (saturating; missing entries count as 0).
    ///
    /// ```
    /// use rankmig::monitor::Row;
    /// let mut a = Row::zeros(2);
    /// a.p2p_bytes = vec![10, 4];
    /// let mut b = Row::zeros(2);
    /// b.p2p_bytes = vec![3, 9];
    /// assert_eq!(a.minus(&b).p2p_bytes, vec![7, 0]);
    /// ```
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

/// Dense atomic counters of one job communicator.
struct Counters {
    job_comm: usize,
    job_group: ffi::MPI_Group,
    size: usize,
    p2p_bytes: Vec<AtomicU64>,
    p2p_messages: Vec<AtomicU64>,
    collective_bytes: Vec<AtomicU64>,
    /// Baselines of the windows, touched only by gathers and reconfigurations.
    windows: Mutex<Windows>,
}

/// Totals at the last reconfiguration and at the last decayed gather.
struct Windows {
    at_reconfiguration: Row,
    at_decay: Row,
    decayed_p2p: Vec<f64>,
    decayed_all: Vec<f64>,
}

// SAFETY: the group handle is a plain identifier, used (translated against) only
// through the MPI library, which the job initialised with the thread level it needs.
unsafe impl Send for Counters {}
// SAFETY: as above; everything else is atomics or behind a mutex.
unsafe impl Sync for Counters {}

impl Counters {
    fn new(job_comm: usize, job_group: ffi::MPI_Group, start: &Row, size: usize) -> Self {
        let atomics = |v: &[u64]| -> Vec<AtomicU64> {
            (0..size)
                .map(|j| AtomicU64::new(v.get(j).copied().unwrap_or(0)))
                .collect()
        };
        let start = Row {
            p2p_bytes: start.p2p_bytes.iter().copied().take(size).collect(),
            p2p_messages: start.p2p_messages.iter().copied().take(size).collect(),
            collective_bytes: start.collective_bytes.iter().copied().take(size).collect(),
        };
        Self {
            job_comm,
            job_group,
            size,
            p2p_bytes: atomics(&start.p2p_bytes),
            p2p_messages: atomics(&start.p2p_messages),
            collective_bytes: atomics(&start.collective_bytes),
            windows: Mutex::new(Windows {
                at_reconfiguration: start.clone(),
                at_decay: start,
                decayed_p2p: vec![0.0; size],
                decayed_all: vec![0.0; size],
            }),
        }
    }

    fn total(&self) -> Row {
        let read = |v: &[AtomicU64]| v.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        Row {
            p2p_bytes: read(&self.p2p_bytes),
            p2p_messages: read(&self.p2p_messages),
            collective_bytes: read(&self.collective_bytes),
        }
    }

    fn windows(&self) -> std::sync::MutexGuard<'_, Windows> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The counters of the current job communicator (`None` before it is set).
static CURRENT: RwLock<Option<Arc<Counters>>> = RwLock::new(None);
/// Bumped when [`CURRENT`] is replaced or a communicator is freed: threads then
/// re-read [`CURRENT`] and drop their rank translations.
static GENERATION: AtomicU64 = AtomicU64::new(1);
/// Runtime switch ([`set_counting`]).
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Persistent send requests: handle → (job rank, bytes), with their number (so that
/// `MPI_Start` on a job without persistent sends takes no lock).
static PERSISTENT: Mutex<Option<HashMap<usize, (usize, u64)>>> = Mutex::new(None);
static PERSISTENT_COUNT: AtomicUsize = AtomicUsize::new(0);

/// One thread's view: the counters and the rank translations it has looked up.
struct Local {
    generation: u64,
    counters: Option<Arc<Counters>>,
    /// Communicator handle → job rank of each rank one can send to on it (< 0: none).
    translation: HashMap<usize, Box<[c_int]>>,
}

thread_local! {
    static PAUSED: Cell<bool> = const { Cell::new(false) };
    static LOCAL: RefCell<Local> = RefCell::new(Local {
        generation: 0,
        counters: None,
        translation: HashMap::new(),
    });
}

/// While alive, this thread's MPI calls are not counted (rankmig's own traffic).
///
/// ```no_run
/// let _rankmig_traffic = rankmig::monitor::Paused::new();
/// // MPI calls made here are forwarded, not counted.
/// ```
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

/// Switches counting on or off for the whole process at run time (calls are always
/// forwarded). `RANKMIG_MONITOR=off` switches it off when the job communicator is set.
///
/// ```no_run
/// rankmig::monitor::set_counting(false); // e.g. to measure what counting costs
/// ```
pub fn set_counting(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether this thread counts now: switched on, not paused, and a job communicator set.
pub(super) fn active() -> bool {
    ENABLED.load(Ordering::Relaxed) && !PAUSED.with(Cell::get) && local_counters().is_some()
}

/// This thread's counters, if counting is set up (none while the thread exits).
fn local_counters() -> Option<Arc<Counters>> {
    LOCAL
        .try_with(|l| refreshed(&mut l.borrow_mut()))
        .ok()
        .flatten()
}

/// Brings this thread's view up to date; the counters, if counting is set up.
fn refreshed(local: &mut Local) -> Option<Arc<Counters>> {
    let now = GENERATION.load(Ordering::Acquire);
    if local.generation != now {
        local.generation = now;
        local.translation.clear();
        local.counters = CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone();
    }
    local.counters.clone()
}

/// Counts from now on in ranks of `comm` (the job's communicator). Called again after
/// a migration rebuilds it: counts restart from `carried` (the replaced rank's row, for
/// a new process) or carry on from the current totals (when the size is unchanged).
///
/// `RANKMIG_MONITOR=off` in the environment switches counting off (calls are only
/// forwarded), e.g. to measure what counting costs.
///
/// ```no_run
/// let universe = mpi::initialize().expect("MPI");
/// let world = universe.world();
/// rankmig::monitor::set_job_communicator(&world, None);
/// ```
pub fn set_job_communicator(comm: &SimpleCommunicator, carried: Option<Row>) {
    if std::env::var("RANKMIG_MONITOR").is_ok_and(|v| v == "off") {
        set_counting(false);
    }
    let _pause = Paused::new();
    let raw = comm.as_raw();
    // SAFETY: reading MPI's predefined null group handle, which nothing writes.
    let mut group: ffi::MPI_Group = unsafe { ffi::RSMPI_GROUP_NULL };
    let mut size: c_int = 0;
    // SAFETY: a valid communicator; out-parameters are valid.
    unsafe {
        ffi::PMPI_Comm_group(raw, &mut group);
        ffi::PMPI_Comm_size(raw, &mut size);
    }
    let size = usize::try_from(size).unwrap_or(0);
    let mut current = CURRENT.write().unwrap_or_else(|e| e.into_inner());
    let start = match (carried, current.as_ref()) {
        (Some(row), _) => row,
        (None, Some(old)) if old.size == size => old.total(),
        _ => Row::zeros(size),
    };
    if let Some(old) = current.take() {
        free_group(old.job_group);
    }
    *current = Some(Arc::new(Counters::new(raw.0 as usize, group, &start, size)));
    GENERATION.fetch_add(1, Ordering::AcqRel);
    forget_all_requests();
}

fn free_group(mut group: ffi::MPI_Group) {
    // SAFETY: a group we created with PMPI_Comm_group.
    unsafe { ffi::PMPI_Group_free(&mut group) };
}

fn current() -> Option<Arc<Counters>> {
    CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Starts the "since the last reconfiguration" window now.
///
/// ```no_run
/// rankmig::monitor::mark_reconfiguration();
/// ```
pub fn mark_reconfiguration() {
    if let Some(c) = current() {
        let total = c.total();
        c.windows().at_reconfiguration = total;
    }
}

/// This process's counts since start, and since the last reconfiguration (`None`
/// before the job communicator is set).
///
/// ```no_run
/// if let Some((total, recent)) = rankmig::monitor::snapshot() {
///     println!("{:?} {:?}", total.p2p_bytes, recent.p2p_bytes);
/// }
/// ```
pub fn snapshot() -> Option<(Row, Row)> {
    let c = current()?;
    let total = c.total();
    let recent = total.minus(&c.windows().at_reconfiguration);
    Some((total, recent))
}

/// Updates and returns the exponentially decayed rows (point to point, and point to
/// point plus collectives): every call multiplies the old values by `alpha` and adds
/// the bytes sent since the previous call. Empty when counting is not set up.
pub fn decayed(alpha: f64) -> (Vec<f64>, Vec<f64>) {
    let Some(c) = current() else {
        return (Vec::new(), Vec::new());
    };
    let total = c.total();
    let mut w = c.windows();
    let new = total.minus(&w.at_decay);
    let Windows {
        decayed_p2p,
        decayed_all,
        ..
    } = &mut *w;
    for (j, (p, a)) in decayed_p2p
        .iter_mut()
        .zip(decayed_all.iter_mut())
        .enumerate()
    {
        let p2p = new.p2p_bytes.get(j).copied().unwrap_or(0) as f64;
        let coll = new.collective_bytes.get(j).copied().unwrap_or(0) as f64;
        *p = *p * alpha + p2p;
        *a = *a * alpha + p2p + coll;
    }
    w.at_decay = total;
    (w.decayed_p2p.clone(), w.decayed_all.clone())
}

/// Bytes of `count` elements of `datatype`.
pub(super) fn bytes_of(count: c_int, datatype: ffi::MPI_Datatype) -> u64 {
    let mut size: c_int = 0;
    // SAFETY: a datatype handle given by the application to an MPI call.
    unsafe { ffi::PMPI_Type_size(datatype, &mut size) };
    u64::try_from(count).unwrap_or(0) * u64::try_from(size).unwrap_or(0)
}

/// Runs `f` with the counters and the job rank of `dest` (a rank of `comm`), when this
/// thread counts and `dest` is in the job.
fn with_job_rank(comm: ffi::MPI_Comm, dest: c_int, f: impl FnOnce(&Counters, usize)) {
    if !ENABLED.load(Ordering::Relaxed) || PAUSED.with(Cell::get) || dest < 0 {
        return; // dest < 0: MPI_PROC_NULL and the like
    }
    // try_with: an MPI call from a thread-local destructor is forwarded, not counted.
    let _ = LOCAL.try_with(|l| {
        let mut local = l.borrow_mut();
        let Some(counters) = refreshed(&mut local) else {
            return;
        };
        if let Some(job) = job_rank(&mut local, &counters, comm, dest) {
            f(&counters, job);
        }
    });
}

fn job_rank(local: &mut Local, c: &Counters, comm: ffi::MPI_Comm, rank: c_int) -> Option<usize> {
    let rank = usize::try_from(rank).ok()?;
    let key = comm.0 as usize;
    if key == c.job_comm {
        return (rank < c.size).then_some(rank);
    }
    let table = local
        .translation
        .entry(key)
        .or_insert_with(|| translate(comm, c.job_group));
    let job = usize::try_from(*table.get(rank)?).ok()?;
    (job < c.size).then_some(job)
}

/// Records a point-to-point send of `count` elements of `datatype` to `dest`.
pub(super) fn record_send(
    comm: ffi::MPI_Comm,
    dest: c_int,
    count: c_int,
    datatype: ffi::MPI_Datatype,
) {
    with_job_rank(comm, dest, |c, j| {
        c.p2p_bytes[j].fetch_add(bytes_of(count, datatype), Ordering::Relaxed);
        c.p2p_messages[j].fetch_add(1, Ordering::Relaxed);
    });
}

/// Records `bytes` sent to each rank `dest` of `comm` inside a collective.
pub(super) fn record_collective(comm: ffi::MPI_Comm, dests: impl Iterator<Item = (c_int, u64)>) {
    for (dest, bytes) in dests {
        with_job_rank(comm, dest, |c, j| {
            c.collective_bytes[j].fetch_add(bytes, Ordering::Relaxed);
        });
    }
}

/// Remembers a persistent send request, counted at each start.
pub(super) fn record_persistent(
    request: ffi::MPI_Request,
    comm: ffi::MPI_Comm,
    dest: c_int,
    count: c_int,
    datatype: ffi::MPI_Datatype,
) {
    with_job_rank(comm, dest, |_, j| {
        let mut map = PERSISTENT.lock().unwrap_or_else(|e| e.into_inner());
        let map = map.get_or_insert_with(HashMap::new);
        map.insert(request.0 as usize, (j, bytes_of(count, datatype)));
        PERSISTENT_COUNT.store(map.len(), Ordering::Relaxed);
    });
}

/// Counts the starts of persistent requests (those that are sends we remembered).
pub(super) fn record_starts(requests: &[ffi::MPI_Request]) {
    if PERSISTENT_COUNT.load(Ordering::Relaxed) == 0
        || !ENABLED.load(Ordering::Relaxed)
        || PAUSED.with(Cell::get)
    {
        return;
    }
    let Some(c) = local_counters() else {
        return;
    };
    let map = PERSISTENT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(map) = map.as_ref() else { return };
    for r in requests {
        if let Some(&(j, bytes)) = map.get(&(r.0 as usize)) {
            if j < c.size {
                c.p2p_bytes[j].fetch_add(bytes, Ordering::Relaxed);
                c.p2p_messages[j].fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Forgets a freed request.
pub(super) fn forget_request(request: ffi::MPI_Request) {
    if PERSISTENT_COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut map = PERSISTENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(map) = map.as_mut() {
        map.remove(&(request.0 as usize));
        PERSISTENT_COUNT.store(map.len(), Ordering::Relaxed);
    }
}

/// Forgets every persistent request (their job ranks are of a replaced communicator).
fn forget_all_requests() {
    let mut map = PERSISTENT.lock().unwrap_or_else(|e| e.into_inner());
    *map = None;
    PERSISTENT_COUNT.store(0, Ordering::Relaxed);
}

/// Forgets the rank translations (a communicator is about to be freed; its handle may
/// be reused for another one).
pub(super) fn forget_translations() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// Whether `comm` is an intercommunicator.
pub(super) fn is_inter(comm: ffi::MPI_Comm) -> bool {
    let mut inter: c_int = 0;
    // SAFETY: a communicator given to an MPI call by the application.
    unsafe { ffi::PMPI_Comm_test_inter(comm, &mut inter) };
    inter != 0
}

/// Ranks one sends to on `comm`: its size, or the remote size of an intercommunicator.
pub(super) fn peers(comm: ffi::MPI_Comm) -> c_int {
    let mut size: c_int = 0;
    // SAFETY: a communicator given to an MPI call by the application.
    unsafe {
        if is_inter(comm) {
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

/// For every rank one can send to on `comm`, its rank in `job_group` (or < 0).
fn translate(comm: ffi::MPI_Comm, job_group: ffi::MPI_Group) -> Box<[c_int]> {
    let n = peers(comm).max(0);
    // SAFETY: reading MPI's predefined null group handle, which nothing writes.
    let mut group: ffi::MPI_Group = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: valid handles; out-parameters sized to `n`.
    unsafe {
        if is_inter(comm) {
            ffi::PMPI_Comm_remote_group(comm, &mut group);
        } else {
            ffi::PMPI_Comm_group(comm, &mut group);
        }
    }
    let ranks: Vec<c_int> = (0..n).collect();
    let mut out = vec![-1; n as usize];
    // SAFETY: both arrays have `n` elements.
    unsafe {
        ffi::PMPI_Group_translate_ranks(group, n, ranks.as_ptr(), job_group, out.as_mut_ptr());
    }
    free_group(group);
    out.into_boxed_slice()
}
