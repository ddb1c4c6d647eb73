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

/// Counts a collective in which every rank sends `count` elements to every other rank.
fn each_to_all_others(comm: MPI_Comm, count: c_int, datatype: MPI_Datatype) {
    if active() {
        to_all_others(comm, bytes_of(count, datatype));
    }
}

/// Counts a collective in which every other rank sends `count` elements to the root.
fn others_to_root(comm: MPI_Comm, root: c_int, count: c_int, datatype: MPI_Datatype) {
    if active() {
        to_root(comm, root, bytes_of(count, datatype));
    }
}

/// Counts a collective in which the root sends `count` elements to every other rank.
fn root_to_others(comm: MPI_Comm, root: c_int, count: c_int, datatype: MPI_Datatype) {
    if active() && is_root(comm, root) {
        to_all_others(comm, bytes_of(count, datatype));
    }
}

/// The C entry points: each takes the place of the MPI library's function of the same
/// name, runs its `before` block (counting; the arguments are in scope), calls the
/// library's `PMPI_` entry with the arguments unchanged and returns its result. An
/// `after(rc)` block instead runs once the library has answered `rc`.
macro_rules! interpose {
    ($(
        $(#[doc = $doc:literal])+
        fn $name:ident => $pmpi:ident($($arg:ident: $ty:ty),+ $(,)?)
        $(before $before:block)?
        $(after($rc:ident) $after:block)?
    )+) => {$(
        $(#[doc = $doc])+
        ///
        /// # Safety
        /// The caller passes valid MPI arguments, as for the MPI function.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),+) -> c_int {
            $(
                #[allow(unused_unsafe)]
                // SAFETY: the caller's arguments of the MPI call.
                unsafe { $before };
            )?
            // SAFETY: forwarded as received.
            let rc = unsafe { ffi::$pmpi($($arg),+) };
            $(
                let $rc = rc;
                #[allow(unused_unsafe)]
                // SAFETY: the caller's arguments, as the library left them.
                unsafe { $after };
            )?
            rc
        }
    )+};
}

/// Sends of one buffer to one rank (`Send`, `Ssend`, `Bsend`, `Rsend`; with a request,
/// `Isend`, `Issend`, `Ibsend`, `Irsend`): same signature, counted alike.
macro_rules! send {
    ($($name:ident => $pmpi:ident $(, $request:ident)?;)+) => {
        interpose! {$(
            /// Interposed: counts the send, then calls the library.
            fn $name => $pmpi(
                buf: *const c_void,
                count: c_int,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
                $($request: *mut MPI_Request,)?
            )
            before { record_send(comm, dest, count, datatype) }
        )+}
    };
}

send! {
    MPI_Send => PMPI_Send;
    MPI_Ssend => PMPI_Ssend;
    MPI_Bsend => PMPI_Bsend;
    MPI_Rsend => PMPI_Rsend;
    MPI_Isend => PMPI_Isend, request;
    MPI_Issend => PMPI_Issend, request;
    MPI_Ibsend => PMPI_Ibsend, request;
    MPI_Irsend => PMPI_Irsend, request;
}

/// Collectives in which each rank sends one part of `sendcount` elements (`Allgather`,
/// `Alltoall`, `Allgatherv`; with a root, `Gather`, `Scatter`, `Gatherv`): the same
/// arguments but for the receive counts (in parentheses), counted by the function named
/// after each.
macro_rules! one_part_each {
    ($(
        $(#[doc = $doc:literal])+
        fn $name:ident => $pmpi:ident($($recv:ident: $recv_ty:ty),+)$(, $root:ident)?: $count:ident;
    )+) => {
        interpose! {$(
            $(#[doc = $doc])+
            fn $name => $pmpi(
                sendbuf: *const c_void,
                sendcount: c_int,
                sendtype: MPI_Datatype,
                recvbuf: *mut c_void,
                $($recv: $recv_ty,)+
                recvtype: MPI_Datatype,
                $($root: c_int,)?
                comm: MPI_Comm,
            )
            before { $count(comm, $($root,)? sendcount, sendtype) }
        )+}
    };
}

one_part_each! {
    /// Interposed: every rank sends its part to every other rank.
    fn MPI_Allgather => PMPI_Allgather(recvcount: c_int): each_to_all_others;
    /// Interposed: every rank sends its part to every other rank.
    fn MPI_Alltoall => PMPI_Alltoall(recvcount: c_int): each_to_all_others;
    /// Interposed: every rank sends its part to every other rank.
    fn MPI_Allgatherv => PMPI_Allgatherv(recvcounts: *const c_int, displs: *const c_int):
        each_to_all_others;
    /// Interposed: every other rank sends its part to the root.
    fn MPI_Gather => PMPI_Gather(recvcount: c_int), root: others_to_root;
    /// Interposed: every other rank sends its part to the root.
    fn MPI_Gatherv => PMPI_Gatherv(recvcounts: *const c_int, displs: *const c_int), root:
        others_to_root;
    /// Interposed: the root sends each other rank its part.
    fn MPI_Scatter => PMPI_Scatter(recvcount: c_int), root: root_to_others;
}

interpose! {
    /// Interposed: remembers a persistent send, counted at each start.
    fn MPI_Send_init => PMPI_Send_init(
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        dest: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    )
    after(rc) {
        if rc == ffi::MPI_SUCCESS as c_int && !request.is_null() {
            // The library has just written the request handle.
            record_persistent(*request, comm, dest, count, datatype);
        }
    }

    /// Interposed: counts a started persistent send.
    fn MPI_Start => PMPI_Start(request: *mut MPI_Request)
    before {
        if !request.is_null() {
            // A request handle owned by the caller.
            record_starts(std::slice::from_ref(&*request));
        }
    }

    /// Interposed: counts started persistent sends.
    fn MPI_Startall => PMPI_Startall(count: c_int, requests: *mut MPI_Request)
    before {
        if !requests.is_null() {
            // The caller's array has `count` handles.
            let n = usize::try_from(count).unwrap_or(0);
            record_starts(std::slice::from_raw_parts(requests, n));
        }
    }

    /// Interposed: forgets a freed persistent request.
    fn MPI_Request_free => PMPI_Request_free(request: *mut MPI_Request)
    before {
        if !request.is_null() {
            // A request handle owned by the caller.
            forget_request(*request);
        }
    }

    /// Interposed: forgets the rank translation of a freed communicator.
    fn MPI_Comm_free => PMPI_Comm_free(comm: *mut MPI_Comm)
    before {
        if !comm.is_null() {
            forget_translations();
        }
    }

    /// Interposed: counts the send half.
    fn MPI_Sendrecv => PMPI_Sendrecv(
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
    )
    before { record_send(comm, dest, sendcount, sendtype) }

    /// Interposed: counts the send half.
    fn MPI_Sendrecv_replace => PMPI_Sendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    )
    before { record_send(comm, dest, count, datatype) }

    /// Interposed: the root sends the buffer to every other rank.
    fn MPI_Bcast => PMPI_Bcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    )
    before { root_to_others(comm, root, count, datatype) }

    /// Interposed: every other rank sends its buffer to the root.
    fn MPI_Reduce => PMPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    )
    before { others_to_root(comm, root, count, datatype) }

    /// Interposed: every rank sends its buffer to every other rank.
    fn MPI_Allreduce => PMPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    )
    before { each_to_all_others(comm, count, datatype) }

    /// Interposed: every rank sends rank i `sendcounts[i]` elements.
    fn MPI_Alltoallv => PMPI_Alltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    )
    before {
        if active() {
            // One count per rank, as MPI requires.
            per_rank(comm, sendcounts, sendtype);
        }
    }

    /// Interposed: the root sends each other rank `sendcounts[i]` elements.
    fn MPI_Scatterv => PMPI_Scatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    )
    before {
        if active() && is_root(comm, root) {
            // At the root, one count per rank, as MPI requires.
            per_rank(comm, sendcounts, sendtype);
        }
    }
}
