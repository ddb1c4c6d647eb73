//! The Fortran entry points of the calls [`super::interpose`] counts, for Fortran
//! programs (`mpif.h`, `use mpi`, `use mpi_f08`), the way profiling tools wrap them:
//! each converts the Fortran handles (`MPI_Comm_f2c`, `MPI_Type_f2c`,
//! `MPI_Request_f2c`), counts as the C function does, and calls the implementation's
//! Fortran profiling entry (`pmpi_send_`, ...), found with `dlsym` at the first call
//! (so that programs without Fortran MPI, the Rust ones among them, link without it).
//!
//! Names: every mangling compilers use for `mpif.h` and `use mpi` (`mpi_send`,
//! `mpi_send_`, `mpi_send__`, `MPI_SEND`), and the `mpi_f08` entries of Open MPI
//! (`mpi_send_f08_`, forwarded to `pmpi_send_f08_`). Arguments are passed by reference;
//! none of these calls has a character argument (no hidden lengths), so every argument
//! is forwarded as the pointer it is.
//!
//! Which Fortran entries reach the C functions (`nm -D`, undefined symbols):
//!
//! | implementation | `mpif.h`, `use mpi` | `use mpi_f08` |
//! |---|---|---|
//! | Open MPI 4.1 (Debian) | `PMPI_*`: not seen in C | `mpi_*_f08_` → `ompi_*_f` → `PMPI_*`: not seen in C |
//! | MPICH 4.0.2 (Debian) | `MPI_*`: seen in C | `mpi_*_f08ts_` → `MPI_*`: seen in C |
//!
//! Nothing is counted twice whatever the implementation: a wrapper counts, then
//! forwards with counting paused on its thread ([`super::Paused`]), so the C function
//! an MPICH Fortran entry calls only forwards. MPICH's `mpi_f08` entries with a buffer
//! (`mpi_send_f08ts_`) are not wrapped: they call the C functions, which count. Its
//! entries without one have Open MPI's names (`mpi_start_f08_`, `mpi_startall_f08_`,
//! `mpi_request_free_f08_`, `mpi_comm_free_f08_`), so they are wrapped too, and forwarded
//! to MPICH's profiling names for them (`pmpir_start_f08_`, ...).

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Request};

use super::counters::{
    Paused, active, bytes_of, forget_request, forget_translations, record_persistent, record_send,
    record_starts,
};
use super::interpose::{is_root, per_rank, to_all_others, to_root};

/// The implementation's Fortran entry a wrapper forwards to: the first of `names`
/// that the process has, else the definition of the wrapper's own name (`own`, NUL
/// terminated) that rankmig's hides; looked up once.
pub(crate) struct Next {
    names: &'static [&'static CStr],
    own: &'static str,
    found: AtomicPtr<c_void>,
}

impl Next {
    pub(crate) const fn new(names: &'static [&'static CStr], own: &'static str) -> Self {
        Self {
            names,
            own,
            found: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Its address; aborts when the MPI library has none (a Fortran entry called
    /// without a Fortran MPI library: cannot happen through the linker).
    pub(crate) fn get(&self) -> *mut c_void {
        let found = self.found.load(Ordering::Relaxed);
        if !found.is_null() {
            return found;
        }
        for name in self.names {
            // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope,
            // where rankmig defines no pmpi_* entry.
            let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            if !address.is_null() {
                self.found.store(address, Ordering::Relaxed);
                return address;
            }
        }
        // An implementation without these profiling names: its own entry of the name,
        // the next definition after rankmig's (counting is paused while it runs).
        // SAFETY: `own` ends with NUL (built by the macro).
        let address = unsafe { libc::dlsym(libc::RTLD_NEXT, self.own.as_ptr().cast()) };
        if !address.is_null() {
            self.found.store(address, Ordering::Relaxed);
            return address;
        }
        eprintln!(
            "rankmig: the MPI library has no Fortran entry {:?}: a Fortran MPI call cannot be forwarded",
            self.names
        );
        std::process::abort();
    }
}

/// A Fortran `INTEGER` argument.
///
/// # Safety
/// `p` points to a Fortran default integer.
unsafe fn int(p: *mut c_void) -> c_int {
    // SAFETY: by the caller.
    unsafe { *p.cast::<c_int>() }
}

/// A Fortran communicator handle as a C one.
///
/// # Safety
/// `p` points to a Fortran communicator handle (`INTEGER` or `TYPE(MPI_Comm)`).
unsafe fn comm(p: *mut c_void) -> MPI_Comm {
    // SAFETY: by the caller; f2c of a handle the program passes to MPI.
    unsafe { ffi::RSMPI_Comm_f2c(int(p)) }
}

/// A Fortran datatype handle as a C one.
///
/// # Safety
/// `p` points to a Fortran datatype handle.
unsafe fn datatype(p: *mut c_void) -> MPI_Datatype {
    // SAFETY: by the caller.
    unsafe { ffi::RSMPI_Type_f2c(int(p)) }
}

/// A Fortran request handle as a C one.
///
/// # Safety
/// `p` points to a Fortran request handle.
unsafe fn request(p: *mut c_void) -> MPI_Request {
    // SAFETY: by the caller.
    unsafe { ffi::RSMPI_Request_f2c(int(p)) }
}

/// Counts a point-to-point send.
///
/// # Safety
/// The arguments of the Fortran call, as pointers.
unsafe fn send(count: *mut c_void, dtype: *mut c_void, dest: *mut c_void, c: *mut c_void) {
    if active() {
        // SAFETY: Fortran arguments of a send.
        unsafe { record_send(comm(c), int(dest), int(count), datatype(dtype)) };
    }
}

/// Whether the call succeeded: `ierr` is 0, or absent (an `mpi_f08` call without
/// `ierror`).
///
/// # Safety
/// `ierr` is null or points to a Fortran integer.
unsafe fn succeeded(ierr: *mut c_void) -> bool {
    // SAFETY: by the caller.
    ierr.is_null() || unsafe { int(ierr) } == ffi::MPI_SUCCESS as c_int
}

/// Counts `count` elements of `dtype` sent by every rank to every other rank.
///
/// # Safety
/// Fortran arguments of the collective.
unsafe fn everyone(count: *mut c_void, dtype: *mut c_void, c: *mut c_void) {
    if active() {
        // SAFETY: by the caller.
        unsafe { to_all_others(comm(c), bytes_of(int(count), datatype(dtype))) };
    }
}

/// Counts `count` elements of `dtype` sent to `root` by every other rank.
///
/// # Safety
/// Fortran arguments of the collective.
unsafe fn towards_root(count: *mut c_void, dtype: *mut c_void, root: *mut c_void, c: *mut c_void) {
    if active() {
        // SAFETY: by the caller.
        unsafe { to_root(comm(c), int(root), bytes_of(int(count), datatype(dtype))) };
    }
}

/// Counts `count` elements of `dtype` sent by the root to every other rank.
///
/// # Safety
/// Fortran arguments of the collective.
unsafe fn from_root(count: *mut c_void, dtype: *mut c_void, root: *mut c_void, c: *mut c_void) {
    if active() {
        // SAFETY: by the caller.
        let c = unsafe { comm(c) };
        // SAFETY: by the caller.
        if is_root(c, unsafe { int(root) }) {
            // SAFETY: by the caller.
            to_all_others(
                c,
                bytes_of(unsafe { int(count) }, unsafe { datatype(dtype) }),
            );
        }
    }
}

/// Wrappers of one call: `entries` forward to the first of `forward` found; `before`
/// runs before the call (counting), `after` after it, both with the arguments named
/// in `args` (pointers).
macro_rules! fortran {
    (
        $what:literal;
        entries: [$($name:ident),+ $(,)?] => $forward:tt;
        args: $args:tt;
        before: $before:block
        after: $after:block
    ) => {
        $( fortran!(@one $what, $name, $forward, $args, $before, $after); )+
    };
    (@one $what:literal, $name:ident, [$($next:literal),+], ($($arg:ident),+), $before:block, $after:block) => {
        #[doc = concat!("Fortran ", $what, ": counted, then forwarded to the implementation's entry.")]
        ///
        /// # Safety
        /// Called by a Fortran program with the arguments of the MPI call.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: *mut c_void),+) {
            static NEXT: Next = Next::new(&[$($next),+], concat!(stringify!($name), "\0"));
            // SAFETY: the implementation's entry of the same call, with the same
            // arguments (all by reference).
            let next = unsafe {
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn($(fortran!(@ptr $arg)),+)>(
                    NEXT.get(),
                )
            };
            #[allow(unused_unsafe)]
            // SAFETY: the program's arguments of the call.
            unsafe { $before };
            {
                let _forwarded = Paused::new();
                // SAFETY: forwarded as received.
                unsafe { next($($arg),+) };
            }
            #[allow(unused_unsafe)]
            // SAFETY: the program's arguments of the call.
            unsafe { $after };
        }
    };
    (@ptr $arg:ident) => { *mut c_void };
}

/// The `mpif.h` and `mpi_f08` wrappers of a call with the same arguments.
macro_rules! call {
    (
        $what:literal;
        mpif: [$($name:ident),+] => $forward:tt;
        f08: $f08:ident => $f08_forward:tt;
        args: $args:tt;
        before: $before:block
        after: $after:block
    ) => {
        fortran! {
            $what;
            entries: [$($name),+] => $forward;
            args: $args;
            before: $before
            after: $after
        }
        fortran! {
            $what;
            entries: [$f08] => $f08_forward;
            args: $args;
            before: $before
            after: $after
        }
    };
}

macro_rules! blocking_send {
    ($what:literal, [$($name:ident),+], $forward:tt, $f08:ident, $f08_forward:literal) => {
        call! {
            $what;
            mpif: [$($name),+] => $forward;
            f08: $f08 => [$f08_forward];
            args: (buf, count, dtype, dest, tag, c, ierr);
            before: { send(count, dtype, dest, c) }
            after: {}
        }
    };
}

macro_rules! immediate_send {
    ($what:literal, [$($name:ident),+], $forward:tt, $f08:ident, $f08_forward:literal) => {
        call! {
            $what;
            mpif: [$($name),+] => $forward;
            f08: $f08 => [$f08_forward];
            args: (buf, count, dtype, dest, tag, c, req, ierr);
            before: { send(count, dtype, dest, c) }
            after: {}
        }
    };
}

blocking_send!(
    "MPI_Send",
    [mpi_send, mpi_send_, mpi_send__, MPI_SEND],
    [c"pmpi_send_", c"pmpi_send", c"pmpi_send__", c"PMPI_SEND"],
    mpi_send_f08_,
    c"pmpi_send_f08_"
);
blocking_send!(
    "MPI_Ssend",
    [mpi_ssend, mpi_ssend_, mpi_ssend__, MPI_SSEND],
    [
        c"pmpi_ssend_",
        c"pmpi_ssend",
        c"pmpi_ssend__",
        c"PMPI_SSEND"
    ],
    mpi_ssend_f08_,
    c"pmpi_ssend_f08_"
);
blocking_send!(
    "MPI_Bsend",
    [mpi_bsend, mpi_bsend_, mpi_bsend__, MPI_BSEND],
    [
        c"pmpi_bsend_",
        c"pmpi_bsend",
        c"pmpi_bsend__",
        c"PMPI_BSEND"
    ],
    mpi_bsend_f08_,
    c"pmpi_bsend_f08_"
);
blocking_send!(
    "MPI_Rsend",
    [mpi_rsend, mpi_rsend_, mpi_rsend__, MPI_RSEND],
    [
        c"pmpi_rsend_",
        c"pmpi_rsend",
        c"pmpi_rsend__",
        c"PMPI_RSEND"
    ],
    mpi_rsend_f08_,
    c"pmpi_rsend_f08_"
);
immediate_send!(
    "MPI_Isend",
    [mpi_isend, mpi_isend_, mpi_isend__, MPI_ISEND],
    [
        c"pmpi_isend_",
        c"pmpi_isend",
        c"pmpi_isend__",
        c"PMPI_ISEND"
    ],
    mpi_isend_f08_,
    c"pmpi_isend_f08_"
);
immediate_send!(
    "MPI_Issend",
    [mpi_issend, mpi_issend_, mpi_issend__, MPI_ISSEND],
    [
        c"pmpi_issend_",
        c"pmpi_issend",
        c"pmpi_issend__",
        c"PMPI_ISSEND"
    ],
    mpi_issend_f08_,
    c"pmpi_issend_f08_"
);
immediate_send!(
    "MPI_Ibsend",
    [mpi_ibsend, mpi_ibsend_, mpi_ibsend__, MPI_IBSEND],
    [
        c"pmpi_ibsend_",
        c"pmpi_ibsend",
        c"pmpi_ibsend__",
        c"PMPI_IBSEND"
    ],
    mpi_ibsend_f08_,
    c"pmpi_ibsend_f08_"
);
immediate_send!(
    "MPI_Irsend",
    [mpi_irsend, mpi_irsend_, mpi_irsend__, MPI_IRSEND],
    [
        c"pmpi_irsend_",
        c"pmpi_irsend",
        c"pmpi_irsend__",
        c"PMPI_IRSEND"
    ],
    mpi_irsend_f08_,
    c"pmpi_irsend_f08_"
);

call! {
    "MPI_Send_init";
    mpif: [mpi_send_init, mpi_send_init_, mpi_send_init__, MPI_SEND_INIT]
        => [c"pmpi_send_init_", c"pmpi_send_init", c"pmpi_send_init__", c"PMPI_SEND_INIT"];
    f08: mpi_send_init_f08_ => [c"pmpi_send_init_f08_"];
    args: (buf, count, dtype, dest, tag, c, req, ierr);
    before: {}
    after: {
        if active() && succeeded(ierr) {
            record_persistent(request(req), comm(c), int(dest), int(count), datatype(dtype));
        }
    }
}

call! {
    "MPI_Start";
    mpif: [mpi_start, mpi_start_, mpi_start__, MPI_START]
        => [c"pmpi_start_", c"pmpi_start", c"pmpi_start__", c"PMPI_START"];
    f08: mpi_start_f08_ => [c"pmpi_start_f08_", c"pmpir_start_f08_"];
    args: (req, ierr);
    before: { record_starts(&[request(req)]) }
    after: {}
}

call! {
    "MPI_Startall";
    mpif: [mpi_startall, mpi_startall_, mpi_startall__, MPI_STARTALL]
        => [c"pmpi_startall_", c"pmpi_startall", c"pmpi_startall__", c"PMPI_STARTALL"];
    f08: mpi_startall_f08_ => [c"pmpi_startall_f08_", c"pmpir_startall_f08_"];
    args: (count, reqs, ierr);
    before: {
        let n = usize::try_from(int(count)).unwrap_or(0);
        let handles = std::slice::from_raw_parts(reqs.cast::<c_int>(), n);
        let converted: Vec<MPI_Request> =
            handles.iter().map(|&h| ffi::RSMPI_Request_f2c(h)).collect();
        record_starts(&converted);
    }
    after: {}
}

call! {
    "MPI_Request_free";
    mpif: [mpi_request_free, mpi_request_free_, mpi_request_free__, MPI_REQUEST_FREE]
        => [c"pmpi_request_free_", c"pmpi_request_free", c"pmpi_request_free__", c"PMPI_REQUEST_FREE"];
    f08: mpi_request_free_f08_ => [c"pmpi_request_free_f08_", c"pmpir_request_free_f08_"];
    args: (req, ierr);
    before: { forget_request(request(req)) }
    after: {}
}

call! {
    "MPI_Comm_free";
    mpif: [mpi_comm_free, mpi_comm_free_, mpi_comm_free__, MPI_COMM_FREE]
        => [c"pmpi_comm_free_", c"pmpi_comm_free", c"pmpi_comm_free__", c"PMPI_COMM_FREE"];
    f08: mpi_comm_free_f08_ => [c"pmpi_comm_free_f08_", c"pmpir_comm_free_f08_"];
    args: (c, ierr);
    before: { forget_translations() }
    after: {}
}

call! {
    "MPI_Sendrecv";
    mpif: [mpi_sendrecv, mpi_sendrecv_, mpi_sendrecv__, MPI_SENDRECV]
        => [c"pmpi_sendrecv_", c"pmpi_sendrecv", c"pmpi_sendrecv__", c"PMPI_SENDRECV"];
    f08: mpi_sendrecv_f08_ => [c"pmpi_sendrecv_f08_"];
    args: (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, c, status, ierr);
    before: { send(scount, stype, dest, c) }
    after: {}
}

call! {
    "MPI_Sendrecv_replace";
    mpif: [mpi_sendrecv_replace, mpi_sendrecv_replace_, mpi_sendrecv_replace__, MPI_SENDRECV_REPLACE]
        => [c"pmpi_sendrecv_replace_", c"pmpi_sendrecv_replace", c"pmpi_sendrecv_replace__", c"PMPI_SENDRECV_REPLACE"];
    f08: mpi_sendrecv_replace_f08_ => [c"pmpi_sendrecv_replace_f08_"];
    args: (buf, count, dtype, dest, stag, source, rtag, c, status, ierr);
    before: { send(count, dtype, dest, c) }
    after: {}
}

call! {
    "MPI_Bcast";
    mpif: [mpi_bcast, mpi_bcast_, mpi_bcast__, MPI_BCAST]
        => [c"pmpi_bcast_", c"pmpi_bcast", c"pmpi_bcast__", c"PMPI_BCAST"];
    f08: mpi_bcast_f08_ => [c"pmpi_bcast_f08_"];
    args: (buf, count, dtype, root, c, ierr);
    before: { from_root(count, dtype, root, c) }
    after: {}
}

call! {
    "MPI_Reduce";
    mpif: [mpi_reduce, mpi_reduce_, mpi_reduce__, MPI_REDUCE]
        => [c"pmpi_reduce_", c"pmpi_reduce", c"pmpi_reduce__", c"PMPI_REDUCE"];
    f08: mpi_reduce_f08_ => [c"pmpi_reduce_f08_"];
    args: (sbuf, rbuf, count, dtype, op, root, c, ierr);
    before: { towards_root(count, dtype, root, c) }
    after: {}
}

call! {
    "MPI_Allreduce";
    mpif: [mpi_allreduce, mpi_allreduce_, mpi_allreduce__, MPI_ALLREDUCE]
        => [c"pmpi_allreduce_", c"pmpi_allreduce", c"pmpi_allreduce__", c"PMPI_ALLREDUCE"];
    f08: mpi_allreduce_f08_ => [c"pmpi_allreduce_f08_"];
    args: (sbuf, rbuf, count, dtype, op, c, ierr);
    before: { everyone(count, dtype, c) }
    after: {}
}

call! {
    "MPI_Gather";
    mpif: [mpi_gather, mpi_gather_, mpi_gather__, MPI_GATHER]
        => [c"pmpi_gather_", c"pmpi_gather", c"pmpi_gather__", c"PMPI_GATHER"];
    f08: mpi_gather_f08_ => [c"pmpi_gather_f08_"];
    args: (sbuf, scount, stype, rbuf, rcount, rtype, root, c, ierr);
    before: { towards_root(scount, stype, root, c) }
    after: {}
}

call! {
    "MPI_Gatherv";
    mpif: [mpi_gatherv, mpi_gatherv_, mpi_gatherv__, MPI_GATHERV]
        => [c"pmpi_gatherv_", c"pmpi_gatherv", c"pmpi_gatherv__", c"PMPI_GATHERV"];
    f08: mpi_gatherv_f08_ => [c"pmpi_gatherv_f08_"];
    args: (sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, c, ierr);
    before: { towards_root(scount, stype, root, c) }
    after: {}
}

call! {
    "MPI_Scatter";
    mpif: [mpi_scatter, mpi_scatter_, mpi_scatter__, MPI_SCATTER]
        => [c"pmpi_scatter_", c"pmpi_scatter", c"pmpi_scatter__", c"PMPI_SCATTER"];
    f08: mpi_scatter_f08_ => [c"pmpi_scatter_f08_"];
    args: (sbuf, scount, stype, rbuf, rcount, rtype, root, c, ierr);
    before: { from_root(scount, stype, root, c) }
    after: {}
}

call! {
    "MPI_Scatterv";
    mpif: [mpi_scatterv, mpi_scatterv_, mpi_scatterv__, MPI_SCATTERV]
        => [c"pmpi_scatterv_", c"pmpi_scatterv", c"pmpi_scatterv__", c"PMPI_SCATTERV"];
    f08: mpi_scatterv_f08_ => [c"pmpi_scatterv_f08_"];
    args: (sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, c, ierr);
    before: {
        if active() {
            let c = comm(c);
            if is_root(c, int(root)) {
                per_rank(c, scounts.cast::<c_int>(), datatype(stype));
            }
        }
    }
    after: {}
}

call! {
    "MPI_Allgather";
    mpif: [mpi_allgather, mpi_allgather_, mpi_allgather__, MPI_ALLGATHER]
        => [c"pmpi_allgather_", c"pmpi_allgather", c"pmpi_allgather__", c"PMPI_ALLGATHER"];
    f08: mpi_allgather_f08_ => [c"pmpi_allgather_f08_"];
    args: (sbuf, scount, stype, rbuf, rcount, rtype, c, ierr);
    before: { everyone(scount, stype, c) }
    after: {}
}

call! {
    "MPI_Allgatherv";
    mpif: [mpi_allgatherv, mpi_allgatherv_, mpi_allgatherv__, MPI_ALLGATHERV]
        => [c"pmpi_allgatherv_", c"pmpi_allgatherv", c"pmpi_allgatherv__", c"PMPI_ALLGATHERV"];
    f08: mpi_allgatherv_f08_ => [c"pmpi_allgatherv_f08_"];
    args: (sbuf, scount, stype, rbuf, rcounts, displs, rtype, c, ierr);
    before: { everyone(scount, stype, c) }
    after: {}
}

call! {
    "MPI_Alltoall";
    mpif: [mpi_alltoall, mpi_alltoall_, mpi_alltoall__, MPI_ALLTOALL]
        => [c"pmpi_alltoall_", c"pmpi_alltoall", c"pmpi_alltoall__", c"PMPI_ALLTOALL"];
    f08: mpi_alltoall_f08_ => [c"pmpi_alltoall_f08_"];
    args: (sbuf, scount, stype, rbuf, rcount, rtype, c, ierr);
    before: { everyone(scount, stype, c) }
    after: {}
}

call! {
    "MPI_Alltoallv";
    mpif: [mpi_alltoallv, mpi_alltoallv_, mpi_alltoallv__, MPI_ALLTOALLV]
        => [c"pmpi_alltoallv_", c"pmpi_alltoallv", c"pmpi_alltoallv__", c"PMPI_ALLTOALLV"];
    f08: mpi_alltoallv_f08_ => [c"pmpi_alltoallv_f08_"];
    args: (sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, c, ierr);
    before: {
        if active() {
            per_rank(comm(c), scounts.cast::<c_int>(), datatype(stype));
        }
    }
    after: {}
}
