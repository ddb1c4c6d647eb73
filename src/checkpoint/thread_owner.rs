//! Where a `checkpoint!` call belongs: on the thread that created the checkpoint
//! context (for the job runtime and the C interface, the thread that called `Job::init`
//! or `rankmig_init`: MPI's main thread), outside any
//! OpenMP parallel region. A call from elsewhere is refused before any collective step
//! and counts nothing, so the ranks' call counts, on which their collective steps
//! agree, stay the same ([`super::CheckpointError::Misplaced`]).
//!
//! In a hybrid (MPI+OpenMP) rank the master thread of a parallel region is the thread
//! that initialised rankmig, so the thread alone does not tell: where an OpenMP runtime
//! is loaded (its `omp_in_parallel` is found with `dlsym(RTLD_DEFAULT, ...)`), a call
//! inside an active parallel region is refused too.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A thread as messages name it: its OS thread id (`gettid`, as `top -H`, `ps -L`,
/// `/proc/PID/task/` and debuggers show it) and its name, where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadLabel {
    /// The OS thread id.
    pub tid: i32,
    /// The thread's name (`std::thread::Builder::name`; the main thread's is `main`).
    pub name: Option<String>,
}

impl ThreadLabel {
    /// The calling thread.
    pub fn current() -> Self {
        Self {
            // SAFETY: the gettid system call has no preconditions. (Not glibc's gettid
            // wrapper: it came with glibc 2.30, and the library must load on older ones.)
            tid: unsafe { libc::syscall(libc::SYS_gettid) } as i32,
            name: std::thread::current().name().map(str::to_owned),
        }
    }
}

impl std::fmt::Display for ThreadLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "thread {} ({name})", self.tid),
            None => write!(f, "thread {}", self.tid),
        }
    }
}

/// The thread a checkpoint context belongs to (the one that created it).
#[derive(Debug)]
pub struct ThreadOwner {
    key: u64,
    label: ThreadLabel,
}

thread_local! {
    /// This thread's key ([`thread_key`]); 0 until it is asked for.
    static KEY: Cell<u64> = const { Cell::new(0) };
}

/// The next thread key handed out.
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// A number that stands for the calling thread, never given to another (a thread-local
/// read: cheap enough for every `checkpoint!` call, unlike `gettid`, a system call).
#[inline]
fn thread_key() -> u64 {
    KEY.with(|key| match key.get() {
        0 => {
            let new = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
            key.set(new);
            new
        }
        known => known,
    })
}

/// `int omp_in_parallel(void)` of the OpenMP API.
type OmpInParallel = unsafe extern "C" fn() -> c_int;

/// The loaded OpenMP runtime's `omp_in_parallel`, looked up once.
static OMP_IN_PARALLEL: OnceLock<Option<OmpInParallel>> = OnceLock::new();

/// `omp_in_parallel` where an OpenMP runtime is loaded in the process (libgomp, libomp,
/// the Intel one): looked up at the first call, in the libraries loaded then (the
/// program's own and those it links; a runtime `dlopen`ed later is not seen).
fn omp_in_parallel() -> Option<OmpInParallel> {
    *OMP_IN_PARALLEL.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no other
        // precondition.
        let symbol: *mut c_void =
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"omp_in_parallel".as_ptr()) };
        (!symbol.is_null()).then(|| {
            // SAFETY: an OpenMP runtime's omp_in_parallel is `int omp_in_parallel(void)`.
            unsafe { std::mem::transmute::<*mut c_void, OmpInParallel>(symbol) }
        })
    })
}

/// True inside an active OpenMP parallel region (a team of more than one thread), on
/// any of its threads; false where no OpenMP runtime is loaded.
#[inline]
pub fn in_parallel_region() -> bool {
    // SAFETY: omp_in_parallel takes nothing and may be called from any thread.
    omp_in_parallel().is_some_and(|f| unsafe { f() } != 0)
}

impl ThreadOwner {
    /// The calling thread (and looks `omp_in_parallel` up).
    pub fn current() -> Self {
        omp_in_parallel();
        Self {
            key: thread_key(),
            label: ThreadLabel::current(),
        }
    }

    /// The owner, for messages.
    pub fn label(&self) -> &ThreadLabel {
        &self.label
    }

    /// True when the calling thread is the owner, outside any OpenMP parallel region:
    /// a call belongs here. A few nanoseconds (a thread-local read, and a call into the
    /// OpenMP runtime where one is loaded).
    #[inline]
    pub fn in_place(&self) -> bool {
        thread_key() == self.key && !in_parallel_region()
    }

    /// `Ok` where [`ThreadOwner::in_place`], else the error that says where the call was
    /// made and where it belongs.
    pub fn check(&self) -> Result<(), super::CheckpointError> {
        if self.in_place() {
            return Ok(());
        }
        Err(super::CheckpointError::Misplaced {
            owner: self.label.clone(),
            caller: ThreadLabel::current(),
            in_parallel: in_parallel_region(),
        })
    }
}

/// How [`super::CheckpointError::Misplaced`] says where the call was made.
pub(super) fn called_from(owner: &ThreadLabel, caller: &ThreadLabel, in_parallel: &bool) -> String {
    let region = if *in_parallel {
        " inside an OpenMP parallel region"
    } else {
        ""
    };
    if caller.tid == owner.tid {
        format!("on {caller}, the thread that initialised rankmig,{region}")
    } else {
        format!("from {caller}{region}, not from {owner} that initialised rankmig")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_key_stands_for_one_thread() {
        let mine = thread_key();
        assert_eq!(thread_key(), mine);
        let other = std::thread::spawn(thread_key).join().unwrap();
        assert_ne!(other, mine);
    }

    #[test]
    fn the_owner_is_in_place_on_its_thread_only() {
        let owner = ThreadOwner::current();
        assert!(owner.in_place(), "no OpenMP runtime in the tests");
        assert!(owner.check().is_ok());
        assert_eq!(owner.label().tid, ThreadLabel::current().tid);
        let e = std::thread::Builder::new()
            .name("worker".into())
            .spawn(move || owner.check())
            .unwrap()
            .join()
            .unwrap()
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("(worker), not from thread "), "{text}");
        assert!(!text.contains("OpenMP parallel region,"), "{text}");
    }

    #[test]
    fn the_message_says_where_the_call_was_made() {
        let owner = ThreadLabel {
            tid: 10,
            name: Some("main".into()),
        };
        let worker = ThreadLabel {
            tid: 11,
            name: None,
        };
        assert_eq!(
            called_from(&owner, &owner, &true),
            "on thread 10 (main), the thread that initialised rankmig, inside an OpenMP parallel region"
        );
        assert_eq!(
            called_from(&owner, &worker, &true),
            "from thread 11 inside an OpenMP parallel region, not from thread 10 (main) that initialised rankmig"
        );
    }
}
