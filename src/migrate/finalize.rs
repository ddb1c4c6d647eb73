//! The end of a job whose launch lost members.
//!
//! A replaced rank leaves without `MPI_Finalize` (Open MPI). With some implementations
//! the `MPI_Finalize` of the ranks that stayed then waits for the ranks that left, for
//! ever ([`crate::launcher::Launcher::finalize_waits_for_departed_ranks`]: Open MPI 4.1
//! with `pml ucx`). There, [`Job::finalize`](super::Job::finalize) after a migration
//! calls [`end_without_library_finalize`], and the `MPI_Finalize` interposed here waits
//! for every rank of the job at a barrier and returns without calling the library's: a
//! correct MPI program has completed all its communication before `MPI_Finalize`, so once
//! every rank is there no message is in flight; the process then exits as a replaced rank
//! does (the launch allows it). Code after `MPI_Finalize` still runs, and
//! `MPI_Finalized` answers true. In every other process both forward to the library.
//!
//! The Fortran entries (`mpi_finalize_` and its other manglings, `mpi_finalize_f08_`)
//! are interposed the same way, since Open MPI's call `PMPI_Finalize` directly.

use std::ffi::{CStr, c_int, c_void};
use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use mpi::ffi::{self, MPI_Comm};
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;

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

/// The implementation's Fortran finalize (`pmpi_finalize_` and its manglings), found
/// with `dlsym`; `None` without Fortran MPI.
fn fortran_library_finalize() -> Option<unsafe extern "C" fn(*mut c_int)> {
    const NAMES: [&CStr; 4] = [
        c"pmpi_finalize_",
        c"pmpi_finalize",
        c"pmpi_finalize__",
        c"PMPI_FINALIZE",
    ];
    NAMES.iter().find_map(|name| {
        // SAFETY: a NUL-terminated name looked up in the global scope.
        let address: *mut c_void = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        // SAFETY: the Fortran finalize takes its error code by reference.
        (!address.is_null()).then(|| unsafe {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_int)>(address)
        })
    })
}

/// The Fortran `MPI_FINALIZE(IERROR)`: as [`MPI_Finalize`].
///
/// # Safety
/// `ierror` points to a writable int (or is null).
unsafe fn fortran_finalize(ierror: *mut c_int) {
    let code = if waited_instead_of_finalizing() {
        ffi::MPI_SUCCESS as c_int
    } else if let Some(finalize) = fortran_library_finalize() {
        let mut code = 0;
        // SAFETY: the library's Fortran finalize, with a valid error argument.
        unsafe { finalize(&mut code) };
        code
    } else {
        // SAFETY: the C finalize, when no Fortran one exists.
        unsafe { ffi::PMPI_Finalize() }
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
