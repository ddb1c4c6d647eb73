//! The memory a process arriving by a migration receives the state of the rank it
//! replaces into, and the move of its pages into the program's own memory.
//!
//! A [`StateBuffer`] is an anonymous mapping of whole pages, mapped (page faults taken)
//! before the state arrives, with one page to spare so that the message can start at
//! any offset within a page. The leaving rank says which offset
//! ([`StateBuffer::receive_window`]): the one that puts the bytes of its largest C or
//! Fortran region at the same offset within a page as the region itself had, which is
//! where the same program allocating the same size will most likely have it again.
//! Then, when the program registers that region, its whole pages are moved into the
//! program's memory by the kernel ([`StateBuffer::move_into`], `mremap`) instead of
//! being copied: 256 MB in under a millisecond, against 130 ms to fault in and copy.
//!
//! ```
//! use rankmig::migrate::state_buffer::StateBuffer;
//!
//! let mut buffer = StateBuffer::prefaulted(100);
//! buffer.receive_window(10, 16).copy_from_slice(b"0123456789");
//! assert_eq!(buffer.as_slice(), b"0123456789");
//! assert_eq!(buffer.as_slice().as_ptr() as usize % 4096, 16);
//! ```

use std::ops::Range;

use crate::own_files::YIELD_CHUNK;

/// Received state: a message at a chosen offset within a page of its own mapping.
#[derive(Debug)]
pub struct StateBuffer {
    /// The mapping (page-aligned), or null when nothing is mapped.
    base: *mut u8,
    /// Its length in bytes (whole pages).
    mapped: usize,
    /// Where the message starts in the mapping.
    start: usize,
    /// The message's length.
    len: usize,
}

// SAFETY: the buffer owns its mapping; nothing else refers to it.
unsafe impl Send for StateBuffer {}

/// The system's page size.
///
/// ```
/// assert!(rankmig::migrate::state_buffer::page_size().is_power_of_two());
/// ```
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

impl Default for StateBuffer {
    fn default() -> Self {
        Self {
            base: std::ptr::null_mut(),
            mapped: 0,
            start: 0,
            len: 0,
        }
    }
}

impl StateBuffer {
    /// Room for a message of `capacity` bytes at any offset within a page, its pages
    /// mapped now, 256 KiB at a time with a yield of the CPU between (this runs beside
    /// the application). Empty when the memory cannot be had (the receive then maps
    /// its own).
    pub fn prefaulted(capacity: usize) -> Self {
        let buffer = Self::mapped_without_faulting(capacity.saturating_add(page_size()));
        buffer.fault_in();
        buffer
    }

    /// A buffer holding a copy of `bytes` (at the start of a page).
    pub fn copied_from(bytes: &[u8]) -> Self {
        let mut buffer = Self::prefaulted(bytes.len());
        buffer.receive_window(bytes.len(), 0).copy_from_slice(bytes);
        buffer
    }

    /// Maps every page of the mapping, a chunk at a time.
    fn fault_in(&self) {
        let mut done = 0;
        while done < self.mapped {
            let chunk = YIELD_CHUNK.min(self.mapped - done);
            // SAFETY: within the mapping; populating changes no byte.
            let rc = unsafe {
                libc::madvise(self.base.add(done).cast(), chunk, libc::MADV_POPULATE_WRITE)
            };
            if rc != 0 {
                // Older kernels: one write per page faults it in.
                for offset in (done..done + chunk).step_by(page_size()) {
                    // SAFETY: within the mapping, writable.
                    unsafe { self.base.add(offset).write_volatile(0) };
                }
            }
            done += chunk;
            std::thread::yield_now();
        }
    }

    /// The bytes a message of `len` bytes is received into, starting `in_page` bytes
    /// into a page (reduced modulo the page size); the mapping is replaced by a larger
    /// one (not prefaulted) when it is too small.
    pub fn receive_window(&mut self, len: usize, in_page: usize) -> &mut [u8] {
        let page = page_size();
        let in_page = in_page % page;
        if in_page.saturating_add(len) > self.mapped {
            *self = Self::mapped_without_faulting(in_page.saturating_add(len));
        }
        if self.base.is_null() {
            self.start = 0;
            self.len = 0;
            return &mut [];
        }
        self.start = in_page;
        self.len = len;
        // SAFETY: start + len lies within the mapping, which this buffer owns.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(self.start), self.len) }
    }

    /// A mapping of at least `bytes` bytes, its pages faulted in as they are written.
    fn mapped_without_faulting(bytes: usize) -> Self {
        let page = page_size();
        let Some(mapped) = bytes.checked_add(page - 1).map(|b| b / page * page) else {
            return Self::default();
        };
        // SAFETY: a fresh private anonymous mapping; no address is given.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped.max(page),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Self::default();
        }
        Self {
            base: base.cast(),
            mapped: mapped.max(page),
            start: 0,
            len: 0,
        }
    }

    /// The message received.
    pub fn as_slice(&self) -> &[u8] {
        if self.base.is_null() {
            return &[];
        }
        // SAFETY: within the mapping, which stays mapped while self lives (pages moved
        // out by move_into are replaced by empty ones).
        unsafe { std::slice::from_raw_parts(self.base.add(self.start), self.len) }
    }

    /// Puts the bytes `range` of the message into `dest` (`range.len()` bytes):
    /// the whole pages of `dest` are moved there from this buffer (`mremap`; they read
    /// as zeros here afterwards) when the two have the same offset within a page and
    /// `dest`'s pages are private anonymous memory ([`moves_pages_safely`]); anything
    /// else is copied. Returns true when pages were moved.
    ///
    /// # Safety
    /// `dest` is valid for writes of `range.len()` bytes and does not overlap this
    /// buffer.
    pub unsafe fn move_into(&mut self, range: Range<usize>, dest: *mut u8) -> bool {
        let Some(source) = self.as_slice().get(range.clone()) else {
            return false;
        };
        let source = source.as_ptr();
        let len = range.len();
        let page = page_size();
        let movable = whole_pages_moved(source as usize, dest as usize, len, page)
            .filter(|pages| moves_pages_safely(pages.clone()));
        let moved = movable.is_some_and(|pages| {
            let offset = pages.start - dest as usize;
            // SAFETY: both ranges are whole pages: the source inside this buffer's
            // mapping, the destination inside the caller's writable private anonymous
            // memory (checked); the source stays mapped (MREMAP_DONTUNMAP).
            let done = unsafe {
                libc::mremap(
                    source.add(offset) as *mut libc::c_void,
                    pages.len(),
                    pages.len(),
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP,
                    pages.start as *mut libc::c_void,
                )
            };
            if done == libc::MAP_FAILED {
                return false;
            }
            // SAFETY: the parts before and after the moved pages, within both.
            unsafe {
                std::ptr::copy_nonoverlapping(source, dest, offset);
                let after = offset + pages.len();
                std::ptr::copy_nonoverlapping(source.add(after), dest.add(after), len - after);
            }
            true
        });
        if !moved {
            // SAFETY: by the caller, dest holds len writable bytes; source is ours.
            unsafe {
                populate_for_write(dest, len);
                std::ptr::copy_nonoverlapping(source, dest, len);
            }
        }
        moved
    }
}

impl Drop for StateBuffer {
    fn drop(&mut self) {
        if !self.base.is_null() {
            // SAFETY: the mapping this buffer made and owns.
            unsafe { libc::munmap(self.base.cast(), self.mapped) };
        }
    }
}

/// The largest memory region of a state (a C or Fortran program's): where its bytes lie
/// in the state's serialised form and in the program's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargestRegion {
    /// Where its bytes start in the serialised state.
    pub offset: usize,
    /// Where the program's memory of it starts within a page.
    pub in_page: usize,
    /// The address of the program's memory of it.
    pub address: usize,
    /// Its length in bytes.
    pub len: usize,
}

impl LargestRegion {
    /// Where within a page a state message must start whose serialised state follows
    /// `counters` bytes of counters, for this region's bytes to lie at the same offset
    /// within a page as the region does ([`StateBuffer::receive_window`]).
    ///
    /// ```
    /// use rankmig::migrate::state_buffer::LargestRegion;
    ///
    /// let region = LargestRegion { offset: 30, in_page: 16, address: 0x1010, len: 1 };
    /// let start = region.message_in_page(20, 4096);
    /// assert_eq!((start + 20 + 30) % 4096, 16);
    /// ```
    pub fn message_in_page(&self, counters: usize, page: usize) -> usize {
        let at = (counters.wrapping_add(self.offset)) % page;
        (self.in_page % page + page - at) % page
    }
}

/// Regions this small are copied: moving pages (or sending them apart) would gain
/// nothing.
pub const SMALLEST_MOVED: usize = 1 << 20;

/// The addresses of the whole pages of `len` bytes at `dest`, when `len` bytes at
/// `source` lie at the same offset within their pages and the region is large enough
/// to be worth moving.
fn whole_pages_moved(source: usize, dest: usize, len: usize, page: usize) -> Option<Range<usize>> {
    if len < SMALLEST_MOVED || source % page != dest % page {
        return None;
    }
    whole_pages(dest, len, page)
}

/// Maps the whole pages of `len` bytes at `data` (1 MiB or more) for writing in one
/// call (`MADV_POPULATE_WRITE`, Linux 5.14) before they are copied into: a region the
/// application has just allocated (an arrival's, or one restored) is then not filled
/// one page fault at a time (256 MB here: 82 ms to populate and 25 ms to copy, against
/// 142 ms copying into fresh memory). Where the call is not supported the copy faults
/// the pages in as before.
///
/// ```
/// let mut fresh: Vec<u8> = Vec::with_capacity(2 << 20);
/// // SAFETY: `fresh` holds that many writable bytes.
/// unsafe { rankmig::migrate::state_buffer::populate_for_write(fresh.as_mut_ptr(), 2 << 20) };
/// ```
///
/// # Safety
/// `data` is valid for writes of `len` bytes.
pub unsafe fn populate_for_write(data: *mut u8, len: usize) {
    if len < SMALLEST_MOVED {
        return;
    }
    if let Some(pages) = whole_pages(data as usize, len, page_size()) {
        // SAFETY: the range lies within the caller's writable region; populating
        // changes no byte of it.
        unsafe {
            libc::madvise(
                pages.start as *mut libc::c_void,
                pages.len(),
                libc::MADV_POPULATE_WRITE,
            )
        };
    }
}

/// The addresses of the whole pages (of `page` bytes) within `len` bytes at `start`,
/// if there is one.
fn whole_pages(start: usize, len: usize, page: usize) -> Option<Range<usize>> {
    let first = start.checked_next_multiple_of(page)?;
    let end = start.checked_add(len)? / page * page;
    (end > first).then_some(first..end)
}

/// True when every page of `pages` lies in private anonymous writable memory of this
/// process (`/proc/self/maps`): the program's heap or a mapping of its allocator, not
/// shared memory, a file, a stack or memory of a device. Only such pages may be
/// replaced by moved ones without changing what the program's memory is.
fn moves_pages_safely(pages: Range<usize>) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .is_ok_and(|maps| covered_by_private_anonymous(&maps, pages))
}

/// True when the mappings of `maps` (the text of `/proc/PID/maps`) that are private,
/// anonymous (or the heap) and writable cover `pages` without a gap.
fn covered_by_private_anonymous(maps: &str, pages: Range<usize>) -> bool {
    let mut covered_to = pages.start;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(span), Some(perms), Some(_offset), Some(_dev), Some(inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        let name = fields.next().unwrap_or("");
        let Some((from, to)) = span.split_once('-') else {
            continue;
        };
        let (Ok(from), Ok(to)) = (
            usize::from_str_radix(from, 16),
            usize::from_str_radix(to, 16),
        ) else {
            continue;
        };
        if to <= covered_to || from >= pages.end {
            continue;
        }
        let plain = perms.starts_with("rw") && perms.ends_with('p') && inode == "0";
        if from > covered_to || !plain || !(name.is_empty() || name == "[heap]") {
            return false;
        }
        covered_to = to;
        if covered_to >= pages.end {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_starts_at_the_offset_asked_for_within_a_page() {
        let page = page_size();
        let mut buffer = StateBuffer::prefaulted(3 * page);
        let window = buffer.receive_window(2 * page, page + 40);
        assert_eq!(window.len(), 2 * page);
        assert_eq!(
            window.as_ptr() as usize % page,
            40,
            "reduced modulo the page"
        );
        window.fill(7);
        assert!(buffer.as_slice().iter().all(|&b| b == 7));
        // Larger than the mapping: a new one, still at the offset asked for.
        let window = buffer.receive_window(10 * page, 8);
        assert_eq!(window.as_ptr() as usize % page, 8);
        window[10 * page - 1] = 1;
        assert_eq!(buffer.as_slice().len(), 10 * page);
    }

    #[test]
    fn pages_move_only_at_the_same_offset_within_a_page_and_past_the_smallest_size() {
        let page = 4096;
        let big = 3 << 20;
        assert_eq!(
            whole_pages_moved(16, 0x10_0010, big, page),
            Some(0x10_1000..(0x10_0010 + big) / page * page)
        );
        assert_eq!(whole_pages_moved(16, 0x10_0020, big, page), None);
        assert_eq!(whole_pages_moved(16, 0x10_0010, 4096, page), None);
    }

    #[test]
    fn only_whole_pages_inside_the_region_are_populated() {
        assert_eq!(whole_pages(4096, 3 * 4096, 4096), Some(4096..4 * 4096));
        // Partial pages at both ends are left to the copy.
        assert_eq!(whole_pages(4099, 3 * 4096, 4096), Some(8192..4 * 4096));
        assert_eq!(whole_pages(4099, 4096, 4096), None);
        assert_eq!(whole_pages(usize::MAX - 10, 20, 4096), None);
    }

    #[test]
    fn only_private_anonymous_writable_memory_takes_moved_pages() {
        let maps = "\
00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/app
01000000-02000000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7f0000100000-7f0000200000 rw-p 00000000 00:00 0
7f0000200000-7f0000300000 rw-s 00000000 00:05 4242 /dev/shm/win
7f0000300000-7f0000400000 rw-p 00000000 08:02 9 /data/file
7ffc00000000-7ffc00100000 rw-p 00000000 00:00 0 [stack]
";
        let ok = |a: usize, b: usize| covered_by_private_anonymous(maps, a..b);
        assert!(ok(0x0100_1000, 0x0100_3000), "the heap");
        assert!(
            ok(0x7f00_0000_1000, 0x7f00_0018_0000),
            "two adjacent mappings"
        );
        assert!(
            !ok(0x7f00_001f_0000, 0x7f00_0021_0000),
            "runs into shared memory"
        );
        assert!(!ok(0x7f00_0030_0000, 0x7f00_0030_1000), "a file");
        assert!(!ok(0x7ffc_0000_0000, 0x7ffc_0000_1000), "the stack");
        assert!(!ok(0x0200_0000, 0x0200_1000), "not mapped");
        assert!(!ok(0x0040_0000, 0x0040_1000), "not writable");
    }

    #[test]
    fn a_large_region_at_the_same_offset_gets_its_pages_moved_and_every_byte() {
        let page = page_size();
        let len = (3 << 20) + 5;
        // The destination: fresh memory from the allocator, as a program's malloc.
        let mut dest: Vec<u8> = Vec::with_capacity(len + page);
        let in_page = dest.as_ptr() as usize % page;
        let mut buffer = StateBuffer::prefaulted(len + 100);
        let window = buffer.receive_window(len + 100, in_page + page - 100 % page);
        for (i, b) in window.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let expected = buffer.as_slice()[100..100 + len].to_vec();
        // SAFETY: dest has len writable bytes; the buffer is a mapping of its own.
        let moved = unsafe { buffer.move_into(100..100 + len, dest.as_mut_ptr()) };
        // SAFETY: every byte was written by move_into.
        unsafe { dest.set_len(len) };
        assert!(moved, "same offset within a page, private anonymous memory");
        assert!(dest == expected, "every byte arrives");
        let first_moved = 100 + (page - in_page) % page;
        assert!(
            buffer.as_slice()[first_moved..first_moved + page]
                .iter()
                .all(|&b| b == 0),
            "moved pages read as zeros where they were"
        );
    }

    #[test]
    fn a_region_at_another_offset_is_copied() {
        let page = page_size();
        let len = 2 << 20;
        let mut dest: Vec<u8> = Vec::with_capacity(len + 1);
        let in_page = (dest.as_ptr() as usize + 1) % page;
        let mut buffer = StateBuffer::prefaulted(len);
        buffer.receive_window(len, in_page).fill(9);
        // SAFETY: dest has len writable bytes; the buffer is a mapping of its own.
        let moved = unsafe { buffer.move_into(0..len, dest.as_mut_ptr()) };
        // SAFETY: written by move_into.
        unsafe { dest.set_len(len) };
        assert!(!moved);
        assert!(dest.iter().all(|&b| b == 9));
        assert!(
            buffer.as_slice().iter().all(|&b| b == 9),
            "the source is kept"
        );
    }
}
