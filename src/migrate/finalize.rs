//! The end of a job whose launch lost members.
//!
//! A replaced rank may leave without `MPI_Finalize` ([`crate::launcher::Departure`]).
//! With some implementations the `MPI_Finalize` of the ranks that stayed then waits for
//! the ranks that left, for ever
//! ([`crate::launcher::Launcher::finalize_waits_for_departed_ranks`] says which, and
//! why). There, [`Job::finalize`](super::Job::finalize) after a migration calls
//! [`end_without_library_finalize`], and the `MPI_Finalize` interposed here waits for
//! every rank of the job at a barrier and returns without calling the library's: a
//! correct MPI program has completed all its communication before `MPI_Finalize`, so
//! once every rank is there no message is in flight. The program goes on after
//! `MPI_Finalize` as usual and ends without MPI having been finalized, as a replaced
//! rank does (the launch allows it); `MPI_Finalized` answers true. In every other
//! process both forward to the library.
//!
//! The Fortran entries (`mpi_finalize_` and its other manglings, `mpi_finalize_f08_`)
//! are interposed the same way, since an implementation's Fortran finalize may call
//! `PMPI_Finalize` directly.

use std::ffi::c_int;
use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use mpi::ffi::{self, MPI_Comm};
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;

use crate::monitor::fortran::Next;

/// A communicator handle kept for the end of the process.
struct Handle(MPI_Comm);

// SAFETY: an MPI handle names an object of the library, usable from any thread under
// MPI_THREAD_MULTIPLE; it is only read once, by the thread calling MPI_Finalize.
unsafe impl Send for Handle {}

/// The duplicate of the job's communicator the interposed `MPI_Finalize` waits on, set
/// by [`end_without_library_finalize`].
static FINAL_BARRIER: Mutex<Option<Handle>> = Mutex::new(None);

/// The interposed `MPI_Finalize` ran without calling the library's.
static ENDED: AtomicBool = AtomicBool::new(false);

/// Makes the process's `MPI_Finalize` a barrier over (a duplicate of) `comm` instead of
/// the library's. Collective over `comm`.
pub(crate) fn end_without_library_finalize(comm: &SimpleCommunicator) {
    // SAFETY: a null handle is written over by MPI_Comm_dup.
    let mut dup: MPI_Comm = unsafe { std::mem::zeroed() };
    // SAFETY: `comm` is a valid communicator; `dup` receives the new handle. The
    // duplicate is never freed: the process ends without finalizing MPI.
    let rc = unsafe { ffi::PMPI_Comm_dup(comm.as_raw(), &mut dup) };
    if rc == ffi::MPI_SUCCESS as c_int {
        if let Ok(mut kept) = FINAL_BARRIER.lock() {
            *kept = Some(Handle(dup));
        }
    } else {
        log::warn!(
            "cannot duplicate the job communicator for the end (error {rc}); MPI_Finalize may wait for departed ranks"
        );
    }
}

/// The barrier that replaces the library's finalize, if this process has one; true
/// when it ran (and the library's finalize must be skipped).
fn waited_instead_of_finalizing() -> bool {
    let Some(Handle(comm)) = FINAL_BARRIER.lock().ok().and_then(|mut kept| kept.take()) else {
        return false;
    };
    // SAFETY: the duplicate made by end_without_library_finalize, still valid.
    unsafe { ffi::PMPI_Barrier(comm) };
    let _ = std::io::stdout().flush();
    ENDED.store(true, Ordering::SeqCst);
    true
}

/// Interposed: after a migration where the library's finalize would wait for departed
/// ranks, a barrier over the job instead; else the library's `MPI_Finalize`.
///
/// # Safety
/// As `MPI_Finalize`: called once, after the process's MPI calls.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    if waited_instead_of_finalizing() {
        return ffi::MPI_SUCCESS as c_int;
    }
    // SAFETY: forwarded as called.
    unsafe { ffi::PMPI_Finalize() }
}

/// Interposed: true also after an `MPI_Finalize` that skipped the library's.
///
/// # Safety
/// As `MPI_Finalized`: `flag` points to a writable int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    if ENDED.load(Ordering::SeqCst) && !flag.is_null() {
        // SAFETY: the caller's int.
        unsafe { *flag = 1 };
        return ffi::MPI_SUCCESS as c_int;
    }
    // SAFETY: forwarded as called.
    unsafe { ffi::PMPI_Finalized(flag) }
}

/// The implementation's Fortran finalize, looked up as the counting wrappers look up
/// theirs ([`Next`]).
static LIBRARY_FORTRAN_FINALIZE: Next = Next::new(
    &[
        c"pmpi_finalize_",
        c"pmpi_finalize",
        c"pmpi_finalize__",
        c"PMPI_FINALIZE",
    ],
    "mpi_finalize_\0",
);

/// The Fortran `MPI_FINALIZE(IERROR)`: as [`MPI_Finalize`].
///
/// # Safety
/// `ierror` points to a writable int (or is null).
unsafe fn fortran_finalize(ierror: *mut c_int) {
    let code = if waited_instead_of_finalizing() {
        ffi::MPI_SUCCESS as c_int
    } else {
        // SAFETY: the library's Fortran finalize takes its error code by reference.
        let finalize = unsafe {
            std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn(*mut c_int)>(
                LIBRARY_FORTRAN_FINALIZE.get(),
            )
        };
        let mut code = 0;
        // SAFETY: the library's Fortran finalize, with a valid error argument.
        unsafe { finalize(&mut code) };
        code
    };
    if !ierror.is_null() {
        // SAFETY: the caller's int.
        unsafe { *ierror = code };
    }
}

macro_rules! fortran_finalize_entry {
    ($($name:ident),*) => {$(
        /// Interposed Fortran `MPI_FINALIZE`, as [`MPI_Finalize`].
        ///
        /// # Safety
        /// `ierror` points to a writable int.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ierror: *mut c_int) {
            // SAFETY: the caller's argument, forwarded.
            unsafe { fortran_finalize(ierror) }
        }
    )*};
}

fortran_finalize_entry!(
    mpi_finalize,
    mpi_finalize_,
    mpi_finalize__,
    MPI_FINALIZE,
    mpi_finalize_f08_
);
