//! Advice to the kernel to back a large vector with transparent huge pages (Linux,
//! `transparent_hugepage` = `always` or `madvise`).
//!
//! Memory the allocator takes fresh from the kernel is faulted in page by page when it
//! is first written: 4 KiB at a time, each fault clearing its page. For a vector of
//! many MiB that costs more than the copy that fills it (`cargo bench --bench bulk`,
//! 256 MiB of fresh memory filled by one copy: median 228 ms, 86 ms with the advice,
//! 2026-11-27). Advised, the kernel backs the vector's whole 2 MiB pages with huge pages,
//! one fault each. The advice changes how memory is backed, never its contents; where
//! it is refused (another OS, THP `never`) the vector keeps ordinary pages.

/// Size of a transparent huge page on x86-64 and most arm64 kernels.
pub const HUGE_PAGE: usize = 2 << 20;

/// Advises huge pages for the whole 2 MiB pages of `v`'s buffer (its capacity, written
/// or not), when it spans at least two of them. Best to call before the buffer is
/// first written: pages already faulted in stay as they are until the kernel merges
/// them.
///
/// ```
/// let mut v: Vec<f64> = Vec::with_capacity(1 << 20); // 8 MiB, not written yet
/// rankmig::huge_pages::advise_capacity(&v);
/// v.resize(1 << 20, 0.5);
/// assert!(v.iter().all(|&x| x == 0.5));
/// ```
pub fn advise_capacity<T>(v: &Vec<T>) {
    let start = v.as_ptr() as usize;
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE_PAGE {
        return;
    }
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end <= first {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: [first, end) lies inside one live allocation (the vector's buffer);
    // MADV_HUGEPAGE only changes how the kernel backs those pages, not their contents or
    // their validity. Its result is ignored: refusal leaves ordinary pages.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}
