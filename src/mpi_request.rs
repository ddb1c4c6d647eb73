//! Waiting for a nonblocking MPI request without holding a CPU.
//!
//! `MPI_Wait` may spin: a rank waiting for the others would take a core from the
//! ranks it waits for. `wait_sleeping` (for the crate's own requests) tests the
//! request and sleeps between tests.

use std::os::raw::c_int;
use std::time::Duration;

use mpi::ffi;

/// Waits for `request` to complete, testing it every `poll` and sleeping between.
pub(crate) fn wait_sleeping(mut request: ffi::MPI_Request, poll: Duration) {
    loop {
        let mut done: c_int = 0;
        // SAFETY: a valid request, tested until it completes (then freed by MPI).
        unsafe { ffi::MPI_Test(&mut request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
        if done != 0 {
            return;
        }
        std::thread::sleep(poll);
    }
}
