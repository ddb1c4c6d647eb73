//! [`Collective`] over an MPI communicator (rsmpi).

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives};

use super::collective::Collective;

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
    comm: SimpleCommunicator,
}

impl MpiCollective {
    /// Builds the collective on a duplicate of `comm`.
    pub fn new<C: Communicator>(comm: &C) -> Self {
        Self {
            comm: comm.duplicate(),
        }
    }

    /// Replaces the communicator with a duplicate of `comm`. Every rank of the new
    /// communicator must call this at the same point, between two collective calls.
    pub fn set_communicator<C: Communicator>(&mut self, comm: &C) {
        self.comm = comm.duplicate();
    }

    /// Collective operations over `duplicate`, a duplicate of the job's communicator
    /// made by the caller (e.g. with `MPI_Comm_idup`, waited for without spinning:
    /// every process of the communicator must then make it the same way, since a
    /// blocking and a nonblocking collective do not match).
    pub fn over_duplicate(duplicate: SimpleCommunicator) -> Self {
        Self { comm: duplicate }
    }

    /// Replaces the communicator with `duplicate`, made as for
    /// [`MpiCollective::over_duplicate`].
    pub fn set_duplicate(&mut self, duplicate: SimpleCommunicator) {
        self.comm = duplicate;
    }

    /// The (duplicated) communicator in use.
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }
}

impl std::fmt::Debug for MpiCollective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiCollective")
            .field("rank", &self.comm.rank())
            .field("size", &self.comm.size())
            .finish()
    }
}

impl Collective for MpiCollective {
    fn rank(&self) -> u32 {
        u32::try_from(self.comm.rank()).unwrap_or(0)
    }

    fn size(&self) -> u32 {
        u32::try_from(self.comm.size()).unwrap_or(1)
    }

    fn all_max(&self, values: &mut [u64]) {
        let send = values.to_vec();
        self.comm
            .all_reduce_into(&send[..], values, SystemOperation::max());
    }

    fn barrier(&self) {
        self.comm.barrier();
    }
}
