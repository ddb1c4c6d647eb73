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

/// Size of a transparent huge page on x86-64 and most arm64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Makes room in `v` for `total` elements in all (no effect when it already has it or
/// the memory is refused) and advises the kernel to back the room with huge pages.
pub(super) fn reserve<T>(v: &mut Vec<T>, total: usize) {
    let Some(additional) = total.checked_sub(v.len()) else {
        return;
    };
    if v.capacity() >= total || v.try_reserve_exact(additional).is_err() {
        return;
    }
    advise(v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>());
}

/// Gives back the room of `v` beyond its length when it is more than an eighth: a
/// reservation made from an upper bound.
pub(super) fn trim<T>(v: &mut Vec<T>) {
    if v.capacity() - v.len() > v.len() / 8 {
        v.shrink_to_fit();
    }
}

/// Advises the huge pages wholly inside `[start, start + bytes)`, for ranges of at least
/// two huge pages.
fn advise(start: usize, bytes: usize) {
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
            v[2..].iter().copied().sum::<u32>() as u64,
            (0..1_000_000u64).sum::<u64>() as u32 as u64
        );
    }

    #[test]
    fn a_reservation_beyond_memory_is_ignored() {
        let mut v: Vec<u64> = Vec::new();
        reserve(&mut v, usize::MAX / 16);
        assert_eq!(v.capacity(), 0);
    }
}
