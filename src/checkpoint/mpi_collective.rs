//! [`Collective`] over an MPI communicator (rsmpi).

use std::cell::LazyCell;
use std::time::Duration;

use mpi::collective::SystemOperation;
use mpi::ffi;
use mpi::raw::{AsRaw, FromRaw};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Source};

use super::collective::Collective;
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

    /// Every receive is posted before any send, so the blocking sends cannot wait on
    /// each other; each message goes as its length, then in pieces of at most
    /// [`EXCHANGE_PIECE`] bytes (MPI counts are `int`).
    fn exchange_bytes(&self, sends: &[(u32, &[u8])], from: &[u32], reserve: usize) -> Vec<Vec<u8>> {
        let comm = self.communicator();
        let rank_of = |r: u32| comm.process_at_rank(i32::try_from(r).unwrap_or(i32::MAX));
        let mut lens = vec![0u64; from.len()];
        mpi::request::scope(|scope| {
            let pending: Vec<_> = lens
                .iter_mut()
                .zip(from)
                .map(|(len, &f)| rank_of(f).immediate_receive_into_with_tag(scope, len, TAG_LENGTH))
                .collect();
            for (to, bytes) in sends {
                rank_of(*to).send_with_tag(&(bytes.len() as u64), TAG_LENGTH);
            }
            for request in pending {
                request.wait();
            }
        });
        let mut bufs: Vec<Vec<u8>> = lens
            .iter()
            .map(|&len| vec![0u8; reserve + usize::try_from(len).unwrap_or(usize::MAX)])
            .collect();
        mpi::request::scope(|scope| {
            let mut pending = Vec::new();
            for (buf, &f) in bufs.iter_mut().zip(from) {
                for piece in buf[reserve..].chunks_mut(EXCHANGE_PIECE) {
                    pending
                        .push(rank_of(f).immediate_receive_into_with_tag(scope, piece, TAG_BYTES));
                }
            }
            for (to, bytes) in sends {
                for piece in bytes.chunks(EXCHANGE_PIECE) {
                    rank_of(*to).send_with_tag(piece, TAG_BYTES);
                }
            }
            for request in pending {
                request.wait();
            }
        });
        bufs
    }
}

/// Largest piece of a message of [`Collective::exchange_bytes`], in bytes.
pub const EXCHANGE_PIECE: usize = 1 << 30;
const TAG_LENGTH: i32 = 7101;
const TAG_BYTES: i32 = 7102;
