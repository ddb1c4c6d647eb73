//! MPI profiling-interface interposition: these functions take the place of the MPI
//! library's for every binary linked with rankmig, count what is sent, and call the
//! library's `PMPI_` entry points. rsmpi's calls, and any other caller's, come here.
//!
//! Point-to-point: `Send`, `Ssend`, `Bsend`, `Rsend`, `Isend`, `Issend`, `Ibsend`,
//! `Irsend`, `Sendrecv`, `Sendrecv_replace`, and persistent sends (`Send_init`, counted
//! at every `Start`/`Startall`). Bytes = count × type size; one message per call.
//!
//! Collectives, counted apart (the volume each rank sends, under a simple model that
//! ignores the algorithm the library picks; `n` = ranks of the communicator):
//!
//! | call | who sends what to whom |
//! |---|---|
//! | `Bcast` | the root sends the buffer to each of the n − 1 other ranks |
//! | `Reduce` | each non-root rank sends its buffer to the root |
//! | `Allreduce` | each rank sends its buffer to each other rank |
//! | `Gather`, `Gatherv` | each non-root rank sends its part to the root |
//! | `Scatter`, `Scatterv` | the root sends each other rank its part |
//! | `Allgather`, `Allgatherv` | each rank sends its part to each other rank |
//! | `Alltoall`, `Alltoallv` | each rank sends each other rank its part |
//! | `Barrier` | nothing |
//!
//! A rank's sends to itself are not counted. On an intercommunicator "the other ranks"
//! are the remote group's and the root is the process passing `MPI_ROOT`. Non-blocking
//! and neighbourhood collectives, one-sided communication and file I/O are not counted.
//!
//! Sends are counted before the library is called (a call that then fails is counted
//! all the same); persistent sends are remembered only when `Send_init` succeeds.
//! Every function forwards its arguments unchanged and returns the library's result;
//! when counting is not set up (no job communicator), switched off or paused, it only
//! forwards.

use std::os::raw::{c_int, c_void};

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Status};

use super::counters::{
    active, bytes_of, forget_request, forget_translations, is_inter, my_rank, peers,
    record_collective, record_persistent, record_send, record_starts,
};

/// Sends `bytes` to every other rank of `comm` (every remote rank of an
/// intercommunicator).
pub(super) fn to_all_others(comm: MPI_Comm, bytes: u64) {
    let me = if is_inter(comm) { -1 } else { my_rank(comm) };
    record_collective(
        comm,
        (0..peers(comm))
            .filter(move |&r| r != me)
            .map(move |r| (r, bytes)),
    );
}

/// Whether this process is the root of a rooted collective.
pub(super) fn is_root(comm: MPI_Comm, root: c_int) -> bool {
    if is_inter(comm) {
        root == ffi::MPI_ROOT
    } else {
        my_rank(comm) == root
    }
}

/// Sends `bytes` to `root`, unless this is the root (or in the root's group of an
/// intercommunicator).
pub(super) fn to_root(comm: MPI_Comm, root: c_int, bytes: u64) {
    if root >= 0 && (is_inter(comm) || my_rank(comm) != root) {
        record_collective(comm, std::iter::once((root, bytes)));
    }
}

/// Sends `counts[i]` elements of `datatype` to each other rank `i`.
///
/// # Safety
/// `counts` is null or has one count per rank one sends to on `comm`.
pub(super) unsafe fn per_rank(comm: MPI_Comm, counts: *const c_int, datatype: MPI_Datatype) {
    if counts.is_null() {
        return;
    }
    let me = if is_inter(comm) { -1 } else { my_rank(comm) };
    let unit = bytes_of(1, datatype);
    let n = usize::try_from(peers(comm)).unwrap_or(0);
    // SAFETY: the caller's array has one count per rank.
    let counts = unsafe { std::slice::from_raw_parts(counts, n) };
    record_collective(
        comm,
        counts
            .iter()
            .enumerate()
            .map(|(r, &c)| (r as c_int, u64::try_from(c).unwrap_or(0) * unit))
            .filter(|&(r, _)| r != me),
    );
}

macro_rules! blocking_send {
    ($name:ident, $pmpi:ident) => {
        /// Interposed: counts the send, then calls the library.
        ///
        /// # Safety
        /// The caller passes valid MPI arguments, as for the MPI function.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            record_send(comm, dest, count, datatype);
            // SAFETY: forwarded as received.
            unsafe { ffi::$pmpi(buf, count, datatype, dest, tag, comm) }
        }
    };
}

macro_rules! immediate_send {
    ($name:ident, $pmpi:ident) => {
        /// Interposed: counts the send, then calls the library.
        ///
        /// # Safety
        /// The caller passes valid MPI arguments, as for the MPI function.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            record_send(comm, dest, count, datatype);
            // SAFETY: forwarded as received.
            unsafe { ffi::$pmpi(buf, count, datatype, dest, tag, comm, request) }
        }
    };
}

blocking_send!(MPI_Send, PMPI_Send);
blocking_send!(MPI_Ssend, PMPI_Ssend);
blocking_send!(MPI_Bsend, PMPI_Bsend);
blocking_send!(MPI_Rsend, PMPI_Rsend);
immediate_send!(MPI_Isend, PMPI_Isend);
immediate_send!(MPI_Issend, PMPI_Issend);
immediate_send!(MPI_Ibsend, PMPI_Ibsend);
immediate_send!(MPI_Irsend, PMPI_Irsend);

/// Interposed: remembers a persistent send, counted at each start.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Send_init(
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: forwarded as received.
    let rc = unsafe { ffi::PMPI_Send_init(buf, count, datatype, dest, tag, comm, request) };
    if rc == ffi::MPI_SUCCESS as c_int && !request.is_null() {
        // SAFETY: the library just wrote the request handle.
        record_persistent(unsafe { *request }, comm, dest, count, datatype);
    }
    rc
}

/// Interposed: counts a started persistent send.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    if !request.is_null() {
        // SAFETY: a request handle owned by the caller.
        record_starts(std::slice::from_ref(unsafe { &*request }));
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Start(request) }
}

/// Interposed: counts started persistent sends.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    if !requests.is_null() {
        let n = usize::try_from(count).unwrap_or(0);
        // SAFETY: the caller's array has `count` handles.
        record_starts(unsafe { std::slice::from_raw_parts(requests, n) });
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Startall(count, requests) }
}

/// Interposed: forgets a freed persistent request.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    if !request.is_null() {
        // SAFETY: a request handle owned by the caller.
        forget_request(unsafe { *request });
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Request_free(request) }
}

/// Interposed: forgets the rank translation of a freed communicator.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    if !comm.is_null() {
        forget_translations();
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Comm_free(comm) }
}

/// Interposed: counts the send half.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    record_send(comm, dest, sendcount, sendtype);
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Sendrecv(
            sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
            recvtag, comm, status,
        )
    }
}

/// Interposed: counts the send half.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    record_send(comm, dest, count, datatype);
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Sendrecv_replace(
            buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
        )
    }
}

/// Interposed: the root sends the buffer to every other rank.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if active() && is_root(comm, root) {
        to_all_others(comm, bytes_of(count, datatype));
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Bcast(buffer, count, datatype, root, comm) }
}

/// Interposed: every other rank sends its buffer to the root.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if active() {
        to_root(comm, root, bytes_of(count, datatype));
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm) }
}

/// Interposed: every rank sends its buffer to every other rank.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> c_int {
    if active() {
        to_all_others(comm, bytes_of(count, datatype));
    }
    // SAFETY: forwarded as received.
    unsafe { ffi::PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm) }
}

/// Interposed: every other rank sends its part to the root.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if active() {
        to_root(comm, root, bytes_of(sendcount, sendtype));
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Gather(
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
        )
    }
}

/// Interposed: every other rank sends its part to the root.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if active() {
        to_root(comm, root, bytes_of(sendcount, sendtype));
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Gatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
        )
    }
}

/// Interposed: the root sends each other rank its part.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if active() && is_root(comm, root) {
        to_all_others(comm, bytes_of(sendcount, sendtype));
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Scatter(
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
        )
    }
}

/// Collectives where every rank sends `sendcount` elements to every other rank
/// (`Allgather`, `Alltoall`): same signature, same model.
macro_rules! to_everyone {
    ($name:ident, $pmpi:ident) => {
        /// Interposed: every rank sends its part to every other rank.
        ///
        /// # Safety
        /// The caller passes valid MPI arguments, as for the MPI function.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            comm: MPI_Comm,
        ) -> c_int {
            if active() {
                to_all_others(comm, bytes_of(sendcount, sendtype));
            }
            // SAFETY: forwarded as received.
            unsafe {
                ffi::$pmpi(
                    sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                )
            }
        }
    };
}

to_everyone!(MPI_Allgather, PMPI_Allgather);
to_everyone!(MPI_Alltoall, PMPI_Alltoall);

/// Interposed: every rank sends its part to every other rank.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    if active() {
        to_all_others(comm, bytes_of(sendcount, sendtype));
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Allgatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
        )
    }
}

/// Interposed: every rank sends rank i `sendcounts[i]` elements.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    if active() {
        // SAFETY: one count per rank, as MPI requires.
        unsafe { per_rank(comm, sendcounts, sendtype) };
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Alltoallv(
            sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
        )
    }
}

/// Interposed: the root sends each other rank `sendcounts[i]` elements.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    if active() && is_root(comm, root) {
        // SAFETY: at the root, one count per rank, as MPI requires.
        unsafe { per_rank(comm, sendcounts, sendtype) };
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Scatterv(
            sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
        )
    }
}
