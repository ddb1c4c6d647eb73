//! The few collective operations the checkpoint context needs, behind a small trait,
//! so the context runs with MPI ([`super::MpiCollective`], feature `mpi`) or in a
//! single process ([`LocalCollective`]) for tests and non-MPI programs.

/// Collective operations over the ranks of a job.
///
/// Every rank must call the collective methods in the same order (as with MPI
/// collectives).
pub trait Collective {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// Replaces each element of `values` by its maximum over all ranks.
    fn all_max(&self, values: &mut [u64]);
    /// Waits until every rank has reached this call.
    fn barrier(&self);
    /// Sends each `(to, bytes)` of `sends` and receives one message from each rank of
    /// `from`, returned in that order, each behind `reserve` zero bytes (room for a
    /// header). Every rank calls it at the same point; a rank named in another's `from`
    /// must send it exactly one message, and a message may go to this rank itself.
    fn exchange_bytes(&self, sends: &[(u32, &[u8])], from: &[u32], reserve: usize) -> Vec<Vec<u8>>;
    /// The name of the host this rank runs on (where its node-local checkpoints go,
    /// see [`super::levels`]): the kernel's host name ([`kernel_host_name`]).
    fn host_name(&self) -> String {
        kernel_host_name()
    }
}

/// The collective of a job with a single rank: every operation is the identity.
///
/// ```
/// use rankmig::checkpoint::{Collective, LocalCollective};
/// let c = LocalCollective;
/// let mut v = [3, 1];
/// c.all_max(&mut v);
/// assert_eq!((c.rank(), c.size(), v), (0, 1, [3, 1]));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalCollective;

impl Collective for LocalCollective {
    fn rank(&self) -> u32 {
        0
    }

    fn size(&self) -> u32 {
        1
    }

    fn all_max(&self, _values: &mut [u64]) {}

    fn barrier(&self) {}

    fn exchange_bytes(&self, sends: &[(u32, &[u8])], from: &[u32], reserve: usize) -> Vec<Vec<u8>> {
        from.iter()
            .map(|&f| {
                let mut buf = vec![0u8; reserve];
                if let Some((_, bytes)) = sends.iter().find(|(to, _)| *to == f) {
                    buf.extend_from_slice(bytes);
                }
                buf
            })
            .collect()
    }
}

/// This process's host name as the kernel gives it (`gethostname`); empty if it cannot.
/// Emulated hosts (UTS namespaces) have their own.
pub fn kernel_host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; the name is NUL-terminated or fills it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Minimum over all ranks of `v`, through [`Collective::all_max`].
pub fn all_min<C: Collective + ?Sized>(c: &C, v: u64) -> u64 {
    let mut a = [u64::MAX - v];
    c.all_max(&mut a);
    u64::MAX - a[0]
}
