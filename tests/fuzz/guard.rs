//! The allocator of the integration-test binary (`tests/it`, which holds the fuzz
//! tests): the system allocator, recording per thread the largest single request since
//! the last reset, so that an input making a parser allocate in
//! proportion to a number it read (instead of to its own length) is a finding. A
//! request above [`ABORT_ABOVE`] is refused after printing the input being run, so a
//! finding that would exhaust the machine still names its input.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Requests above this many bytes are refused (the process then aborts).
pub const ABORT_ABOVE: usize = 1 << 30;

/// The system allocator with a high-water mark of single requests.
pub struct Guard;

#[global_allocator]
static GUARD: Guard = Guard;

thread_local! {
    // Per thread, so that tests running side by side do not see each other's requests.
    // Const-initialised cells without destructors: using them never allocates.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static CURRENT_INPUT: Cell<u64> = const { Cell::new(u64::MAX) };
}

// SAFETY: every call is forwarded unchanged to `System`, except requests above
// `ABORT_ABOVE`, which get a null pointer as an allocation failure would.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if note(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if note(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Records a request; true when it must be refused.
fn note(size: usize) -> bool {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    if size > ABORT_ABOVE {
        let input = CURRENT_INPUT.try_with(Cell::get).unwrap_or(u64::MAX);
        let mut msg = *b"fuzz guard: oversized allocation during input #                    \n";
        let mut n = input;
        let mut at = msg.len() - 2;
        loop {
            msg[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
            at -= 1;
        }
        // SAFETY: writing a stack buffer to stderr; no allocation.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
        return true;
    }
    false
}

/// Starts input `index`: resets the high-water mark.
pub fn start_input(index: u64) {
    CURRENT_INPUT.with(|c| c.set(index));
    LARGEST.with(|l| l.set(0));
}

/// The largest single request since [`start_input`].
pub fn largest_request() -> usize {
    LARGEST.with(Cell::get)
}
