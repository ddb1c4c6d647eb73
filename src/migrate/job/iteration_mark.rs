//! The iteration a rank is at, kept where it outlives the process: a file of the run
//! directory mapped into memory ([`crate::run_dir::record::iteration_mark_file`]), so
//! each `checkpoint!` call costs one store, and a rank killed by a signal still leaves
//! the iteration it died at for `rankmig run` to read
//! ([`crate::run_dir::record::iteration_mark`]).

use std::fs::OpenOptions;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// A rank's iteration count, mapped from its file (shared mapping: the page cache keeps
/// what was stored after the process dies).
pub(super) struct IterationMark {
    word: NonNull<AtomicU64>,
}

// SAFETY: the mapping is private to this value and only reached through an atomic.
unsafe impl Send for IterationMark {}
// SAFETY: as above; every access is an atomic store.
unsafe impl Sync for IterationMark {}

impl IterationMark {
    /// Maps the 8-byte file `path` (created, or reused by a process that replaces the
    /// rank). `None`, logged, when it cannot be created or mapped: the job runs on
    /// without it.
    pub(super) fn open(path: &Path) -> Option<Self> {
        match Self::map(path) {
            Ok(mark) => Some(mark),
            Err(e) => {
                log::warn!("cannot keep the iteration in {}: {e}", path.display());
                None
            }
        }
    }

    fn map(path: &Path) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        file.set_len(8)?;
        // SAFETY: a fresh shared mapping of 8 bytes of a file opened read-write; the
        // file may be closed once mapped.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let word = NonNull::new(addr.cast::<AtomicU64>())
            .ok_or_else(|| std::io::Error::other("mmap returned a null address"))?;
        Ok(Self { word })
    }

    /// Notes that the rank is at `iteration` (its `checkpoint!` calls).
    #[inline]
    pub(super) fn set(&self, iteration: u64) {
        // SAFETY: the mapping lives as long as `self` and is page-aligned.
        unsafe { self.word.as_ref() }.store(iteration.to_le(), Ordering::Relaxed);
    }
}

impl Drop for IterationMark {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.word.as_ptr().cast(), 8) };
    }
}
