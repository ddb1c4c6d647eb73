//! MPI profiling-interface interposition: these functions take the place of the MPI
//! library's for every binary linked with rankmig, count what is sent, and call the
//! library's `PMPI_` entry points. rsmpi's calls, and any other caller's, come here.
//!
//! Point-to-point: `Send`, `Ssend`, `Bsend`, `Rsend`, `Isend`, `Issend`, `Ibsend`,
//! `Irsend`, `Sendrecv`, `Sendrecv_replace`, and persistent sends (`Send_init`, counted
//! at every `Start`/`Startall`). Bytes = count × type size; one message per call.
//!
//! Collectives, counted apart (the volume each rank sends, under a simple model that
//! ignores the algorithm the library picks): `Bcast` — the root sends the buffer to every
//! other rank; `Reduce` — every other rank sends its buffer to the root; `Allreduce` —
//! every rank sends its buffer to every other rank; `Gather(v)` — every other rank sends
//! its part to the root; `Scatter` — the root sends each rank its part; `Allgather(v)` —
//! every rank sends its part to every other rank; `Alltoall(v)` — every rank sends each
//! rank its part. A rank's sends to itself are not counted. `Barrier` sends nothing.

use std::os::raw::{c_int, c_void};

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Status};

use super::counters::{
    bytes_of, forget_comm, forget_request, my_rank, peers, record_collective, record_persistent,
    record_send, record_start,
};

/// Sends to every rank of `comm` but this one, `bytes` each.
fn to_all_others(comm: MPI_Comm, bytes: u64) {
    let me = my_rank(comm);
    record_collective(
        comm,
        (0..peers(comm))
            .filter(move |&r| r != me)
            .map(move |r| (r, bytes)),
    );
}

/// Sends `bytes` to `root` unless this is the root.
fn to_root(comm: MPI_Comm, root: c_int, bytes: u64) {
    if my_rank(comm) != root {
        record_collective(comm, std::iter::once((root, bytes)));
    }
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
            record_send(comm, dest, bytes_of(count, datatype));
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
            record_send(comm, dest, bytes_of(count, datatype));
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
        record_persistent(unsafe { *request }, comm, dest, bytes_of(count, datatype));
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
        record_start(unsafe { *request });
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
        for i in 0..count.max(0) as usize {
            // SAFETY: the caller's array has `count` handles.
            record_start(unsafe { *requests.add(i) });
        }
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
        // SAFETY: a communicator handle owned by the caller.
        forget_comm(unsafe { *comm });
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
    record_send(comm, dest, bytes_of(sendcount, sendtype));
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
    record_send(comm, dest, bytes_of(count, datatype));
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
    if my_rank(comm) == root {
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
    to_root(comm, root, bytes_of(count, datatype));
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
    to_all_others(comm, bytes_of(count, datatype));
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
    to_root(comm, root, bytes_of(sendcount, sendtype));
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
    to_root(comm, root, bytes_of(sendcount, sendtype));
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
    if my_rank(comm) == root {
        to_all_others(comm, bytes_of(sendcount, sendtype));
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Scatter(
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
        )
    }
}

/// Interposed: every rank sends its part to every other rank.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    to_all_others(comm, bytes_of(sendcount, sendtype));
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Allgather(
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
        )
    }
}

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
    to_all_others(comm, bytes_of(sendcount, sendtype));
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Allgatherv(
            sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
        )
    }
}

/// Interposed: every rank sends each other rank its part.
///
/// # Safety
/// The caller passes valid MPI arguments, as for the MPI function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    to_all_others(comm, bytes_of(sendcount, sendtype));
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Alltoall(
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
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
    if !sendcounts.is_null() {
        let me = my_rank(comm);
        let n = peers(comm);
        let unit = bytes_of(1, sendtype);
        // SAFETY: the caller's array has one count per rank.
        let counts: Vec<c_int> = (0..n.max(0) as usize)
            .map(|i| unsafe { *sendcounts.add(i) })
            .collect();
        record_collective(
            comm,
            counts
                .into_iter()
                .enumerate()
                .filter(move |&(r, _)| r as c_int != me)
                .map(move |(r, c)| (r as c_int, c.max(0) as u64 * unit)),
        );
    }
    // SAFETY: forwarded as received.
    unsafe {
        ffi::PMPI_Alltoallv(
            sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
        )
    }
}
