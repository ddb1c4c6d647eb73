//! Room for the large arrays a matrix reader fills, reserved once and backed by
//! transparent huge pages where the kernel offers them (Linux, `transparent_hugepage`
//! = `always` or `madvise`).
//!
//! A 4096-rank dense text with no zero entry gives 16.7 million nonzeros: 200 MB of
//! columns and volumes, which the kernel would otherwise fault in 4 KiB at a time
//! (about 50 000 faults, as long as the parsing itself), and which doubling growth
//! would copy again and again. Once a reader knows how many entries can come, it
//! reserves that much (virtual memory: pages are only backed when written) and advises
//! it `MADV_HUGEPAGE`, so the kernel backs it 2 MiB at a time. The advice changes how
//! memory is backed, never its contents; where the reservation or the advice is
//! refused (another OS, THP `never`, a strict overcommit policy) the arrays grow as
//! usual.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;

/// Bytes of the smallest reserved room worth faulting in on another thread.
const PREFAULT_MIN: usize = 8 << 20;
/// Bytes faulted in per `madvise` call, so that a stop request is seen soon.
const PREFAULT_STEP: usize = 2 << 20;

/// Makes room in `v` for `total` elements in all (no effect when it already has it or
/// the memory is refused) and advises the kernel to back the room with huge pages.
pub(super) fn reserve<T>(v: &mut Vec<T>, total: usize) {
    let Some(additional) = total.checked_sub(v.len()) else {
        return;
    };
    if v.capacity() >= total || v.try_reserve_exact(additional).is_err() {
        return;
    }
    crate::huge_pages::advise_capacity(v);
}

/// Gives back the room of `v` beyond its length when it is more than an eighth: a
/// reservation made from an upper bound.
pub(super) fn trim<T>(v: &mut Vec<T>) {
    if v.capacity() - v.len() > v.len() / 8 {
        v.shrink_to_fit();
    }
}

/// Faults in the reserved room of a reader's two parallel arrays (entry `i` of one goes
/// with entry `i` of the other) on another thread, a little ahead of the reader
/// (`MADV_POPULATE_WRITE`, Linux 5.14+): the kernel's clearing of fresh pages (as long
/// as the parsing itself on a large dense text) runs beside the parsing instead of
/// inside it. It stays at most [`PREFAULT_AHEAD`] bytes of each array, and never more
/// than the reader has filled, ahead of the entries the reader has announced
/// ([`Prefault::advance`]), so memory is not faulted in for a reservation the input will
/// not fill. Nothing is written from user space: a
/// page the reader touched first is left as it is, and a populated page is the zero page
/// the reader would have faulted in. Stopped and joined when dropped; declare it before
/// the arrays it covers, so that it is dropped (its thread joined) before they are freed
/// or reallocated.
pub(super) struct Prefault {
    shared: Arc<Progress>,
    thread: Option<JoinHandle<()>>,
}

/// What the reader tells the prefault thread.
struct Progress {
    /// Entries filled so far.
    entries: AtomicUsize,
    stop: AtomicBool,
}

/// Bytes of each array faulted in ahead of the reader.
const PREFAULT_AHEAD: usize = 32 << 20;

impl Prefault {
    /// Starts faulting in the spare capacity of `a` and `b` ahead of the reader; `None`
    /// when there is too little of it, or no such thread on this system.
    pub(super) fn start<A, B>(a: &Vec<A>, b: &Vec<B>) -> Option<Self> {
        let sizes = (std::mem::size_of::<A>(), std::mem::size_of::<B>());
        let spare = (a.capacity() - a.len()) * sizes.0 + (b.capacity() - b.len()) * sizes.1;
        if !cfg!(target_os = "linux") || spare < PREFAULT_MIN {
            return None;
        }
        let arrays = [
            Array {
                start: a.as_ptr() as usize,
                element: sizes.0,
                end: a.as_ptr() as usize + a.capacity() * sizes.0,
            },
            Array {
                start: b.as_ptr() as usize,
                element: sizes.1,
                end: b.as_ptr() as usize + b.capacity() * sizes.1,
            },
        ];
        let shared = Arc::new(Progress {
            entries: AtomicUsize::new(a.len().min(b.len())),
            stop: AtomicBool::new(false),
        });
        let seen = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rankmig-prefault".into())
            .spawn(move || populate_ahead(arrays, &seen))
            .ok()?;
        Some(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// The reader has filled `entries` entries of each array.
    #[inline]
    pub(super) fn advance(&self, entries: usize) {
        self.shared.entries.store(entries, Ordering::Relaxed);
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // A panic in the helper thread only means fewer pages were prefaulted.
            let _ = thread.join();
        }
    }
}

/// One array's buffer, as addresses.
#[derive(Clone, Copy)]
struct Array {
    start: usize,
    element: usize,
    end: usize,
}

/// Keeps each array populated up to [`PREFAULT_AHEAD`] bytes past the reader, until
/// stopped, done or refused.
fn populate_ahead(arrays: [Array; 2], progress: &Progress) {
    let mut done = arrays.map(|a| a.start);
    loop {
        if progress.stop.load(Ordering::Relaxed) {
            return;
        }
        let entries = progress.entries.load(Ordering::Relaxed);
        let mut idle = true;
        for (array, done) in arrays.iter().zip(done.iter_mut()) {
            let reader_at = array
                .start
                .saturating_add(entries.saturating_mul(array.element));
            // Never further ahead than the reader has come: at most twice the memory a
            // slowly filling array needs.
            let ahead = PREFAULT_AHEAD.min((reader_at - array.start).max(PREFAULT_STEP));
            let want = reader_at.saturating_add(ahead).min(array.end);
            if *done < want {
                let to = (*done + PREFAULT_STEP).min(want);
                if !populate(*done, to - *done) {
                    return;
                }
                *done = to;
                idle = false;
            }
        }
        if idle {
            if done.iter().zip(&arrays).all(|(d, a)| *d >= a.end) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

/// One `MADV_POPULATE_WRITE` over the whole pages inside `[start, start + bytes)`;
/// false when the kernel refuses it.
fn populate(start: usize, bytes: usize) -> bool {
    const PAGE: usize = 4096;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    if end <= first {
        return true;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: [first, end) lies inside the spare capacity of a live vector (the caller
    // joins this thread before that vector is freed or reallocated). MADV_POPULATE_WRITE
    // only faults pages in, as a write would, without writing: contents do not change.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_POPULATE_WRITE,
        ) == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_room_keeps_the_values_and_trim_gives_back_the_rest() {
        let mut v: Vec<u32> = vec![7, 8];
        reserve(&mut v, 3_000_000);
        assert!(v.capacity() >= 3_000_000);
        assert_eq!(v, [7, 8]);
        v.extend(0..1_000_000);
        trim(&mut v);
        assert!(v.capacity() < 1_200_000, "{}", v.capacity());
        assert_eq!(v.len(), 1_000_002);
        assert_eq!(
            v[2..].iter().map(|&x| u64::from(x)).sum::<u64>(),
            (0..1_000_000u64).sum::<u64>()
        );
    }

    #[test]
    fn prefaulting_beside_the_filling_changes_no_value() {
        let (mut a, mut b): (Vec<u32>, Vec<f64>) = (Vec::new(), Vec::new());
        assert!(Prefault::start(&a, &b).is_none(), "nothing to prefault");
        reserve(&mut a, 4_000_000);
        reserve(&mut b, 4_000_000);
        let prefault = Prefault::start(&a, &b);
        if cfg!(target_os = "linux") {
            assert!(prefault.is_some());
        }
        for i in 0..4_000_000u32 {
            a.push(i);
            b.push(f64::from(i) * 0.5);
            if i % 4096 == 0
                && let Some(p) = &prefault
            {
                p.advance(a.len());
            }
        }
        drop(prefault);
        assert!(a.iter().enumerate().all(|(i, &x)| x as usize == i));
        assert!(b.iter().enumerate().all(|(i, &x)| x == i as f64 * 0.5));
    }

    #[test]
    fn a_reservation_beyond_memory_is_ignored() {
        let mut v: Vec<u64> = Vec::new();
        reserve(&mut v, usize::MAX / 16);
        assert_eq!(v.capacity(), 0);
    }
}
