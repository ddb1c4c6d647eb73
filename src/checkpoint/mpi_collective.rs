//! [`Collective`] over an MPI communicator (rsmpi).

use std::cell::LazyCell;
use std::os::raw::c_int;
use std::time::Duration;

use mpi::collective::SystemOperation;
use mpi::ffi;
use mpi::raw::{AsRaw, FromRaw};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use super::collective::{Collective, ExchangeInProgress, Exchanged};
use crate::mpi_request::wait_sleeping;

/// The checkpoint collectives over an MPI communicator.
///
/// It owns its communicator (a duplicate of the one given, so checkpoint traffic
/// never matches the application's), and the communicator can be replaced at run
/// time with [`MpiCollective::set_communicator`], e.g. after ranks have migrated.
///
/// ```no_run
/// use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, MpiCollective};
/// let universe = mpi::initialize().expect("MPI initialises once");
/// let world = universe.world();
/// let coll = MpiCollective::new(&world);
/// let mut ctx = CheckpointContext::new(CheckpointConfig::from_env()?, coll)?;
/// // later, after a communicator change:
/// ctx.collective_mut().set_communicator(&universe.world());
/// # Ok::<(), rankmig::checkpoint::CheckpointError>(())
/// ```
pub struct MpiCollective {
    /// The duplicate: made, or completed at its first use.
    comm: LazyCell<SimpleCommunicator, Box<dyn FnOnce() -> SimpleCommunicator>>,
}

impl MpiCollective {
    /// Builds the collective on a duplicate of `comm`.
    pub fn new<C: Communicator>(comm: &C) -> Self {
        let duplicate = comm.duplicate();
        Self {
            comm: LazyCell::new(Box::new(move || duplicate)),
        }
    }

    /// Replaces the communicator with a duplicate of `comm`. Every rank of the new
    /// communicator must call this at the same point, between two collective calls.
    pub fn set_communicator<C: Communicator>(&mut self, comm: &C) {
        *self = Self::new(comm);
    }

    /// Collective operations over `duplicate`, a duplicate of the job's communicator
    /// still being made ([`DuplicateInProgress::start`]): it is completed at the first
    /// collective operation, so the caller goes on meanwhile.
    pub fn over_duplicate_in_progress(duplicate: DuplicateInProgress) -> Self {
        Self {
            comm: LazyCell::new(Box::new(move || duplicate.complete())),
        }
    }

    /// Replaces the communicator with `duplicate`, as for
    /// [`MpiCollective::over_duplicate_in_progress`].
    pub fn set_duplicate_in_progress(&mut self, duplicate: DuplicateInProgress) {
        *self = Self::over_duplicate_in_progress(duplicate);
    }

    /// The (duplicated) communicator in use, completed first if it is still being made.
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }
}

/// How often a duplicate in progress is tested while waited for.
const DUPLICATE_POLL: Duration = Duration::from_micros(100);

/// A duplicate of a communicator being made (`MPI_Comm_idup`): it takes every process of
/// the communicator, and none waits for it before it needs it. Dropped unfinished, it is
/// completed (without spinning) and freed.
pub struct DuplicateInProgress {
    duplicate: ffi::MPI_Comm,
    request: ffi::MPI_Request,
}

impl DuplicateInProgress {
    /// Starts duplicating `comm`. Collective: every process of `comm` must start its
    /// duplicate this way at the same point (a blocking `MPI_Comm_dup` does not match an
    /// `MPI_Comm_idup`).
    pub fn start(comm: &SimpleCommunicator) -> Self {
        // SAFETY: reading predefined handles.
        let (mut duplicate, mut request) =
            unsafe { (ffi::RSMPI_COMM_NULL, ffi::RSMPI_REQUEST_NULL) };
        // SAFETY: a valid communicator; both out-parameters are valid.
        unsafe { ffi::MPI_Comm_idup(comm.as_raw(), &mut duplicate, &mut request) };
        Self { duplicate, request }
    }

    /// The duplicate, once made: tested every [`DUPLICATE_POLL`], sleeping between, so
    /// that a process waiting for the others takes no CPU meanwhile.
    pub fn complete(self) -> SimpleCommunicator {
        let duplicate = self.wait();
        std::mem::forget(self);
        // SAFETY: the completed MPI_Comm_idup made a valid intracommunicator.
        unsafe { SimpleCommunicator::from_raw(duplicate) }
    }

    fn wait(&self) -> ffi::MPI_Comm {
        wait_sleeping(self.request, DUPLICATE_POLL);
        self.duplicate
    }
}

impl Drop for DuplicateInProgress {
    fn drop(&mut self) {
        let mut duplicate = self.wait();
        // SAFETY: a communicator made by the completed MPI_Comm_idup, used by nobody.
        unsafe { ffi::MPI_Comm_free(&mut duplicate) };
    }
}

impl std::fmt::Debug for MpiCollective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the rank and size: reading them would complete a duplicate in progress.
        f.debug_struct("MpiCollective").finish_non_exhaustive()
    }
}

impl Collective for MpiCollective {
    type Exchange = MpiExchange;

    fn rank(&self) -> u32 {
        u32::try_from(self.communicator().rank()).unwrap_or(0)
    }

    fn size(&self) -> u32 {
        u32::try_from(self.communicator().size()).unwrap_or(1)
    }

    fn all_max(&self, values: &mut [u64]) {
        let send = values.to_vec();
        self.communicator()
            .all_reduce_into(&send[..], values, SystemOperation::max());
    }

    fn barrier(&self) {
        self.communicator().barrier();
    }

    /// Nonblocking sends and receives, each message as its length, then in pieces of at
    /// most [`EXCHANGE_PIECE`] bytes (MPI counts are `int`), advanced by every MPI call
    /// of the process and by [`ExchangeInProgress::test`].
    fn start_exchange(
        &self,
        sends: Vec<(u32, Vec<u8>)>,
        from: &[u32],
        reserve: usize,
    ) -> MpiExchange {
        MpiExchange::start(self.communicator(), sends, from, reserve)
    }
}

/// Largest piece of a message of [`Collective::start_exchange`], in bytes.
pub const EXCHANGE_PIECE: usize = 1 << 30;
const TAG_LENGTH: i32 = 7101;
const TAG_BYTES: i32 = 7102;

/// How often an exchange in progress is tested while waited for.
const EXCHANGE_POLL: Duration = Duration::from_micros(50);

/// An exchange of [`MpiCollective`]'s [`Collective::start_exchange`] in progress:
/// nonblocking sends of each message (its length, then its pieces) and receives of the
/// lengths; once the lengths are in, the receives of the pieces. The buffers live here
/// until every request has completed, so MPI never reads or writes freed memory; it is
/// waited for when dropped unfinished. Not `Send`: its requests are tested on the
/// thread that started them.
pub struct MpiExchange {
    comm: ffi::MPI_Comm,
    from: Vec<u32>,
    reserve: usize,
    /// The lengths of the messages sent (read by their sends) and received.
    sent_lengths: Box<[u64]>,
    received_lengths: Box<[u64]>,
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
    /// Receives of the lengths: once they are in, the pieces' receives are posted.
    length_receives: Vec<ffi::MPI_Request>,
    /// Sends of lengths and pieces, then receives of pieces. A send of pieces may wait
    /// for its receiver to post their receives, which it does once its own lengths are
    /// in, whatever its sends: so the lengths are waited for apart.
    transfers: Vec<ffi::MPI_Request>,
    /// Whether the receives of the pieces are posted (the lengths are in).
    receiving_pieces: bool,
}

impl MpiExchange {
    fn start(
        comm: &SimpleCommunicator,
        sends: Vec<(u32, Vec<u8>)>,
        from: &[u32],
        reserve: usize,
    ) -> Self {
        let mut this = Self {
            comm: comm.as_raw(),
            from: from.to_vec(),
            reserve,
            sent_lengths: sends.iter().map(|(_, b)| b.len() as u64).collect(),
            received_lengths: vec![0; from.len()].into_boxed_slice(),
            sent: Vec::with_capacity(sends.len()),
            received: Vec::new(),
            length_receives: Vec::new(),
            transfers: Vec::new(),
            receiving_pieces: false,
        };
        // One pointer to each array, taken once: the elements are reached through it.
        let received_lengths = this.received_lengths.as_mut_ptr();
        let sent_lengths = this.sent_lengths.as_ptr();
        for i in 0..from.len() {
            let source = rank_number(this.from[i]);
            // SAFETY: `i` is within `received_lengths`.
            let length = unsafe { received_lengths.add(i) };
            // SAFETY: `received_lengths` is boxed and lives, unmoved, until the request
            // completes (the exchange waits for it before freeing anything).
            this.length_receives
                .push(unsafe { receive(length, 1, uint64(), source, TAG_LENGTH, this.comm) });
        }
        for (i, (to, bytes)) in sends.into_iter().enumerate() {
            let dest = rank_number(to);
            // SAFETY: `i` is within `sent_lengths`.
            let length = unsafe { sent_lengths.add(i) };
            // SAFETY: as above, for `sent_lengths`.
            this.transfers
                .push(unsafe { send(length, 1, uint64(), dest, TAG_LENGTH, this.comm) });
            for piece in bytes.chunks(EXCHANGE_PIECE) {
                // SAFETY: the piece is in a vector kept in `sent` until the request
                // completes; moving the vector does not move its heap memory.
                this.transfers.push(unsafe {
                    send(
                        piece.as_ptr(),
                        piece_count(piece.len()),
                        uint8(),
                        dest,
                        TAG_BYTES,
                        this.comm,
                    )
                });
            }
            this.sent.push(bytes);
        }
        this
    }

    /// With the lengths in: allocates each received message and posts its pieces'
    /// receives.
    fn post_piece_receives(&mut self) {
        self.received = self
            .received_lengths
            .iter()
            .map(|&len| vec![0u8; self.reserve + usize::try_from(len).unwrap_or(usize::MAX)])
            .collect();
        for (buf, &f) in self.received.iter_mut().zip(&self.from) {
            for piece in buf[self.reserve..].chunks_mut(EXCHANGE_PIECE) {
                // SAFETY: the piece is in a vector kept in `received` until the request
                // completes.
                self.transfers.push(unsafe {
                    receive(
                        piece.as_mut_ptr(),
                        piece_count(piece.len()),
                        uint8(),
                        rank_number(f),
                        TAG_BYTES,
                        self.comm,
                    )
                });
            }
        }
        self.receiving_pieces = true;
    }
}

impl ExchangeInProgress for MpiExchange {
    fn test(&mut self) -> bool {
        if !self.receiving_pieces {
            if !all_done(&mut self.length_receives) {
                return false;
            }
            self.post_piece_receives();
        }
        all_done(&mut self.transfers)
    }

    fn finish(mut self) -> Exchanged {
        while !self.test() {
            std::thread::sleep(EXCHANGE_POLL);
        }
        Exchanged {
            received: std::mem::take(&mut self.received),
            sent: std::mem::take(&mut self.sent),
        }
    }
}

impl Drop for MpiExchange {
    /// An exchange dropped unfinished is carried to its end (its pieces' receives
    /// posted once the lengths are in, for the senders waiting on them), so that no
    /// request outlives its buffer; after `MPI_Finalize` the buffers are leaked instead.
    fn drop(&mut self) {
        if self.receiving_pieces && self.transfers.is_empty() {
            return;
        }
        let mut finalized: c_int = 0;
        // SAFETY: MPI_Finalized may be called at any time.
        unsafe { ffi::MPI_Finalized(&mut finalized) };
        if finalized != 0 {
            std::mem::forget(std::mem::take(&mut self.sent));
            std::mem::forget(std::mem::take(&mut self.received));
            std::mem::forget(std::mem::take(&mut self.sent_lengths));
            std::mem::forget(std::mem::take(&mut self.received_lengths));
            return;
        }
        while !self.test() {
            std::thread::sleep(EXCHANGE_POLL);
        }
    }
}

/// Whether every request of `requests` has completed (`MPI_Testall`); they are then
/// removed.
fn all_done(requests: &mut Vec<ffi::MPI_Request>) -> bool {
    if requests.is_empty() {
        return true;
    }
    let mut done: c_int = 0;
    // SAFETY: valid requests (completed ones are set to MPI_REQUEST_NULL by MPI).
    unsafe {
        ffi::MPI_Testall(
            c_int::try_from(requests.len()).unwrap_or(c_int::MAX),
            requests.as_mut_ptr(),
            &mut done,
            ffi::RSMPI_STATUSES_IGNORE,
        )
    };
    if done != 0 {
        requests.clear();
    }
    done != 0
}

fn rank_number(rank: u32) -> c_int {
    c_int::try_from(rank).unwrap_or(c_int::MAX)
}

fn piece_count(len: usize) -> c_int {
    // Pieces are at most EXCHANGE_PIECE (1 GiB) bytes.
    c_int::try_from(len).unwrap_or(c_int::MAX)
}

fn uint8() -> ffi::MPI_Datatype {
    // SAFETY: reading a predefined handle.
    unsafe { ffi::RSMPI_UINT8_T }
}

fn uint64() -> ffi::MPI_Datatype {
    // SAFETY: reading a predefined handle.
    unsafe { ffi::RSMPI_UINT64_T }
}

/// Posts `MPI_Isend` of `count` elements at `buf`.
///
/// # Safety
/// `buf` must stay valid and unchanged until the request completes.
unsafe fn send<T>(
    buf: *const T,
    count: c_int,
    datatype: ffi::MPI_Datatype,
    dest: c_int,
    tag: i32,
    comm: ffi::MPI_Comm,
) -> ffi::MPI_Request {
    // SAFETY: reading a predefined handle.
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: the caller keeps `buf` valid; `request` is a valid out-parameter.
    unsafe { ffi::MPI_Isend(buf.cast(), count, datatype, dest, tag, comm, &mut request) };
    request
}

/// Posts `MPI_Irecv` of `count` elements into `buf`.
///
/// # Safety
/// `buf` must stay valid, and untouched by anything else, until the request completes.
unsafe fn receive<T>(
    buf: *mut T,
    count: c_int,
    datatype: ffi::MPI_Datatype,
    source: c_int,
    tag: i32,
    comm: ffi::MPI_Comm,
) -> ffi::MPI_Request {
    // SAFETY: reading a predefined handle.
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: the caller keeps `buf` valid; `request` is a valid out-parameter.
    unsafe { ffi::MPI_Irecv(buf.cast(), count, datatype, source, tag, comm, &mut request) };
    request
}
