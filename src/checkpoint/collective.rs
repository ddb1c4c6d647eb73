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
    /// An exchange started by [`Collective::start_exchange`].
    type Exchange: ExchangeInProgress;
    /// Starts sending each `(to, bytes)` of `sends` and receiving one message from each
    /// rank of `from`, and returns the exchange in progress: the caller goes on and
    /// completes it later ([`ExchangeInProgress::test`], [`ExchangeInProgress::finish`],
    /// which gives the messages received in the order of `from`, each behind `reserve`
    /// zero bytes: room for a header). Every rank starts its exchange at the same point;
    /// a rank named in another's `from` must send it exactly one message, and a message
    /// may go to this rank itself. [`super::MpiCollective`] starts nonblocking sends and
    /// receives; [`LocalCollective`] exchanges at once.
    fn start_exchange(
        &self,
        sends: Vec<(u32, Vec<u8>)>,
        from: &[u32],
        reserve: usize,
    ) -> Self::Exchange;
    /// The name of the host this rank runs on (where its node-local checkpoints go,
    /// see [`super::levels`]): the kernel's host name ([`kernel_host_name`]).
    fn host_name(&self) -> String {
        kernel_host_name()
    }
}

/// An exchange started by [`Collective::start_exchange`].
pub trait ExchangeInProgress {
    /// Whether every message has been sent and received; never blocks. Advances the
    /// exchange (MPI progresses nonblocking transfers inside its calls).
    fn test(&mut self) -> bool;
    /// Waits for the exchange to end; the received messages, in the order of `from`,
    /// each behind its reserved bytes, and the sent ones, given back for reuse.
    fn finish(self) -> Exchanged;
}

/// A finished exchange: what [`ExchangeInProgress::finish`] returns.
///
/// ```
/// use rankmig::checkpoint::{Collective, ExchangeInProgress, LocalCollective};
/// let sent = LocalCollective.start_exchange(vec![(0, vec![7, 8])], &[0], 2).finish();
/// assert_eq!(sent.received, vec![vec![0, 0, 7, 8]]);
/// assert_eq!(sent.sent, vec![vec![7, 8]]);
/// ```
#[derive(Debug, Default)]
pub struct Exchanged {
    /// The messages received, in the order of the exchange's `from`, each behind its
    /// reserved zero bytes.
    pub received: Vec<Vec<u8>>,
    /// The messages sent, in the order given.
    pub sent: Vec<Vec<u8>>,
}

impl ExchangeInProgress for Exchanged {
    fn test(&mut self) -> bool {
        true
    }

    fn finish(self) -> Exchanged {
        self
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
    type Exchange = Exchanged;

    fn rank(&self) -> u32 {
        0
    }

    fn size(&self) -> u32 {
        1
    }

    fn all_max(&self, _values: &mut [u64]) {}

    fn barrier(&self) {}

    fn start_exchange(
        &self,
        sends: Vec<(u32, Vec<u8>)>,
        from: &[u32],
        reserve: usize,
    ) -> Exchanged {
        let received = from
            .iter()
            .map(|&f| {
                let mut buf = vec![0u8; reserve];
                if let Some((_, bytes)) = sends.iter().find(|(to, _)| *to == f) {
                    buf.extend_from_slice(bytes);
                }
                buf
            })
            .collect();
        Exchanged {
            received,
            sent: sends.into_iter().map(|(_, b)| b).collect(),
        }
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
