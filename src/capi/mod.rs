//! The C interface (`include/rankmig.h`): the same job runtime as [`crate::migrate::Job`],
//! for C, C++ and Fortran programs that register their state as memory regions.
//!
//! ```c
//! MPI_Init(&argc, &argv);
//! MPI_Comm comm;
//! if (rankmig_init(&comm) != 0) { fprintf(stderr, "%s\n", rankmig_last_error()); ... }
//! rankmig_register("iter", &iter, sizeof iter);       /* restored here when resumed */
//! rankmig_register("grid", grid, bytes);
//! while (iter < iters) {
//!     comm = rankmig_comm();                          /* changes at migrations */
//!     ... compute, exchange through comm ...
//!     iter++;
//!     if (rankmig_checkpoint() < 0) { ... }           /* may save, or move this rank */
//! }
//! rankmig_finalize();
//! MPI_Finalize();
//! ```
//!
//! Every call returns an error code instead of aborting; the message of the last error
//! of the calling thread is [`rankmig_last_error`]. The runtime belongs to the thread
//! that called [`rankmig_init`] (MPI's main thread); calls from another thread fail with
//! [`RANKMIG_ERR_NOT_INITIALISED`], except [`rankmig_checkpoint`], which fails with
//! [`RANKMIG_ERR_THREAD`] from another thread and inside an OpenMP parallel region.

pub mod logger;
mod regions;

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use mpi::ffi::MPI_Comm;
use mpi::raw::AsRaw;
use mpi::traits::Communicator;

use crate::checkpoint::CheckpointConfig;
use crate::checkpoint::CheckpointError;
use crate::checkpoint::thread_owner::{self, ThreadLabel};
use crate::migrate::{Job, MigrateError};
use regions::{Region, Regions, SavedRegions};

/// The major version of the library: a program built against one major version runs
/// with any library of that major version (the SONAME is `librankmig.so.MAJOR`); an
/// incompatible change of this interface raises it.
pub const RANKMIG_VERSION_MAJOR: c_int = 1;
/// The minor version: raised when the interface gains something.
pub const RANKMIG_VERSION_MINOR: c_int = 2;
/// The patch version: raised by a fix that leaves the interface as it was.
pub const RANKMIG_VERSION_PATCH: c_int = 0;

// The header's version is the package's (Cargo.toml), checked by the compiler.
const _: () = assert!(
    RANKMIG_VERSION_MAJOR == version_part(env!("CARGO_PKG_VERSION_MAJOR"))
        && RANKMIG_VERSION_MINOR == version_part(env!("CARGO_PKG_VERSION_MINOR"))
        && RANKMIG_VERSION_PATCH == version_part(env!("CARGO_PKG_VERSION_PATCH")),
    "RANKMIG_VERSION_* in src/capi/mod.rs differ from Cargo.toml's version"
);

/// A part of the package's version as a number, at compile time.
const fn version_part(digits: &str) -> c_int {
    let bytes = digits.as_bytes();
    let mut value: c_int = 0;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as c_int;
        i += 1;
    }
    value
}

/// Success.
pub const RANKMIG_OK: c_int = 0;
/// A call before `rankmig_init`, after `rankmig_finalize`, from another thread (but
/// `rankmig_checkpoint`: [`RANKMIG_ERR_THREAD`]), or a second `rankmig_init`.
pub const RANKMIG_ERR_NOT_INITIALISED: c_int = -1;
/// A bad argument: a null or non-UTF-8 name, a null region of nonzero size, a region
/// whose size differs from the saved one, MPI not initialised.
pub const RANKMIG_ERR_ARGUMENT: c_int = -2;
/// The runtime failed: bad `RANKMIG_*` settings, checkpoint directory, migration.
pub const RANKMIG_ERR_RUNTIME: c_int = -3;
/// A bug inside rankmig (caught, never unwound into the caller).
pub const RANKMIG_ERR_INTERNAL: c_int = -4;
/// [`rankmig_checkpoint`] called where it does not belong: from a thread other than the
/// one that called `rankmig_init`, or inside an OpenMP parallel region (even by its
/// master thread). Refused before any collective: nothing is counted or saved, the job
/// goes on as it was; [`rankmig_last_error`] names the two threads. Since 1.1.
pub const RANKMIG_ERR_THREAD: c_int = -5;

/// An output file ([`rankmig_open_output`]) refused or failed: a symbolic link (never
/// followed), not a regular file of this user with one link, shorter than the length
/// recorded for it, or an I/O error. Since 1.1.
pub const RANKMIG_ERR_FILE: c_int = -6;

/// [`rankmig_init`] in a program compiled with a header this library cannot serve: of
/// another major version, or of a newer minor version (the program may call what this
/// library lacks). [`rankmig_last_error`] names both versions; nothing was started.
/// Since 1.2.
pub const RANKMIG_ERR_VERSION: c_int = -7;
/// [`rankmig_checkpoint`]: this call replaced the job's communicator (a migration); the
/// callbacks of [`rankmig_on_comm`] have run with the new one.
pub const RANKMIG_COMM_CHANGED: c_int = 1;

/// A callback of [`rankmig_on_comm`]: the job's communicator, and the caller's `arg`.
pub type RankmigCommCallback = Option<unsafe extern "C" fn(comm: MPI_Comm, arg: *mut c_void)>;

/// A callback of [`rankmig_on_comm_fortran`]: the job's communicator as a Fortran handle
/// (`MPI_Comm_c2f`), by value, and the caller's `arg`.
pub type RankmigFortranCommCallback = Option<unsafe extern "C" fn(comm: c_int, arg: *mut c_void)>;

/// The runtime of this process, held by the thread that initialised it.
struct Runtime {
    job: Job,
    regions: Regions,
    saved: SavedRegions,
    /// The callbacks of [`rankmig_on_comm`], in registration order.
    on_comm: Vec<CommCallback>,
    /// The Fortran callbacks of [`rankmig_on_comm_fortran`] and their arguments, each
    /// the `arg` of a [`fortran_callback`] in `on_comm` (boxed: stable addresses).
    #[expect(
        clippy::vec_box,
        reason = "the callbacks hold their addresses: they must not move when the Vec grows"
    )]
    fortran: Vec<Box<FortranCallback>>,
}

/// A registered [`rankmig_on_comm_fortran`] callback and its argument.
type FortranCallback = (unsafe extern "C" fn(c_int, *mut c_void), *mut c_void);

/// The [`rankmig_on_comm`] callback standing for a Fortran one: converts the
/// communicator and calls it.
///
/// # Safety
/// `arg` is a [`FortranCallback`] of the runtime.
unsafe extern "C" fn fortran_callback(comm: MPI_Comm, arg: *mut c_void) {
    // SAFETY: by the caller, a boxed FortranCallback alive until rankmig_finalize.
    let (callback, arg) = unsafe { *arg.cast::<FortranCallback>() };
    // SAFETY: converting the job's communicator; the callback was promised callable.
    unsafe { callback(mpi::ffi::RSMPI_Comm_c2f(comm), arg) };
}

/// A registered [`rankmig_on_comm`] callback and its argument.
type CommCallback = (unsafe extern "C" fn(MPI_Comm, *mut c_void), *mut c_void);

/// Calls `callbacks` in order with `comm`, outside any borrow of the runtime (a
/// callback may call `rankmig_comm` or `rankmig_generation`).
fn announce_comm(comm: MPI_Comm, callbacks: &[CommCallback]) {
    for (callback, arg) in callbacks {
        // SAFETY: the caller of rankmig_on_comm promised a callable function and an
        // argument valid until rankmig_finalize.
        unsafe { callback(comm, *arg) };
    }
}

/// The thread that called [`rankmig_init`], while the runtime runs: a call from another
/// thread finds no runtime of its own, and is told which thread has it.
static INIT_THREAD: std::sync::Mutex<Option<ThreadLabel>> = std::sync::Mutex::new(None);

/// Records (or, with `None`, forgets) the thread that holds the runtime.
fn set_init_thread(thread: Option<ThreadLabel>) {
    *INIT_THREAD.lock().unwrap_or_else(|e| e.into_inner()) = thread;
}

thread_local! {
    static RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// An error of a C call: its code and message.
struct CallError(c_int, String);

impl CallError {
    fn runtime(e: impl std::fmt::Display) -> Self {
        Self(RANKMIG_ERR_RUNTIME, e.to_string())
    }

    fn argument(message: impl Into<String>) -> Self {
        Self(RANKMIG_ERR_ARGUMENT, message.into())
    }

    /// A checkpoint call from where it does not belong ([`RANKMIG_ERR_THREAD`]).
    fn misplaced(e: &CheckpointError) -> Self {
        Self(RANKMIG_ERR_THREAD, e.to_string())
    }

    /// A failed checkpoint call: [`RANKMIG_ERR_THREAD`] for a misplaced one, else a
    /// runtime error.
    fn checkpoint(e: MigrateError) -> Self {
        match &e {
            MigrateError::Checkpoint(c @ CheckpointError::Misplaced { .. }) => Self::misplaced(c),
            _ => Self::runtime(e),
        }
    }

    fn not_initialised() -> Self {
        Self(
            RANKMIG_ERR_NOT_INITIALISED,
            "rankmig_init has not been called on this thread (or rankmig_finalize was)".into(),
        )
    }
}

/// Runs `body`, turning an error or a panic into a code and the last-error message.
fn call(body: impl FnOnce() -> Result<c_int, CallError>) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let why = (panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(CallError(
            RANKMIG_ERR_INTERNAL,
            format!("internal error: {why}"),
        ))
    });
    match outcome {
        Ok(code) => code,
        Err(CallError(code, message)) => {
            set_last_error(&message);
            code
        }
    }
}

fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// Runs `body` on the initialised runtime.
fn with_runtime<R>(
    body: impl FnOnce(&mut Runtime) -> Result<R, CallError>,
) -> Result<R, CallError> {
    RUNTIME.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| {
            CallError(
                RANKMIG_ERR_INTERNAL,
                "rankmig called from inside rankmig".into(),
            )
        })?;
        match slot.as_mut() {
            Some(runtime) => body(runtime),
            None => Err(CallError::not_initialised()),
        }
    })
}

fn mpi_is_initialised() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time.
    unsafe { mpi::ffi::MPI_Initialized(&mut flag) };
    flag != 0
}

/// Why a program compiled with the header of version `major.minor` cannot run with
/// this library, if it cannot: another major version, or a newer minor version.
fn header_refused(major: c_int, minor: c_int) -> Option<String> {
    let library =
        format!("{RANKMIG_VERSION_MAJOR}.{RANKMIG_VERSION_MINOR}.{RANKMIG_VERSION_PATCH}");
    let why = if major != RANKMIG_VERSION_MAJOR {
        "another major version"
    } else if minor > RANKMIG_VERSION_MINOR {
        "a newer interface than this library's"
    } else {
        return None;
    };
    Some(format!(
        "this program was compiled with the rankmig header {major}.{minor} and runs with the library {library} (librankmig.so.{RANKMIG_VERSION_MAJOR}): {why}; rebuild it against the library it runs with, or put that library's directory first in LD_LIBRARY_PATH"
    ))
}

/// [`rankmig_init`] of a program compiled with the header of version
/// `header_major.header_minor`: the header's `rankmig_init(comm)` is a macro that calls
/// this with its `RANKMIG_VERSION_MAJOR` and `RANKMIG_VERSION_MINOR`, so that a program
/// run with a library that cannot serve it is told so before anything starts:
/// [`RANKMIG_ERR_VERSION`], on every process alike (no collective is made). Since 1.2;
/// programs compiled before call [`rankmig_init`] itself, unchecked.
///
/// # Safety
/// As [`rankmig_init`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_init_v(
    comm: *mut MPI_Comm,
    header_major: c_int,
    header_minor: c_int,
) -> c_int {
    if let Some(why) = header_refused(header_major, header_minor) {
        return call(|| Err(CallError(RANKMIG_ERR_VERSION, why)));
    }
    // SAFETY: the caller's guarantee on `comm`.
    unsafe { rankmig_init(comm) }
}

/// Starts the runtime; call it after `MPI_Init`, on every process of `MPI_COMM_WORLD`
/// (collective). Sets `*comm` (unless `comm` is null) to the job's communicator, which
/// replaces `MPI_COMM_WORLD` everywhere in the program. In a process spawned by a
/// migration, joins the job in place of the rank it replaces.
///
/// The checkpoint settings are rankmig's defaults (directory `rankmig-ckpt`, a save
/// about every 300 s, 2 epochs kept, job named after the executable) overridden by the
/// `RANKMIG_CKPT_*` variables and `RANKMIG_RESTART`, as `rankmig run` sets them.
///
/// Returns 0, or a negative code ([`rankmig_last_error`] says why).
///
/// # Safety
/// `comm` is null or points to writable memory for one `MPI_Comm`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_init(comm: *mut MPI_Comm) -> c_int {
    call(|| {
        if RUNTIME.with(|cell| cell.borrow().is_some()) {
            return Err(CallError(
                RANKMIG_ERR_NOT_INITIALISED,
                "rankmig_init was already called".into(),
            ));
        }
        if !mpi_is_initialised() {
            return Err(CallError::argument("call MPI_Init before rankmig_init"));
        }
        logger::install();
        let config = CheckpointConfig::new("rankmig-ckpt")
            .with_env()
            .map_err(CallError::runtime)?;
        let mut job = Job::init_on_world(config).map_err(CallError::runtime)?;
        // The job communicator's rank: a local call. (Not the checkpoint collective's,
        // whose duplicate may still be in progress in a process that arrived by migration
        // and must be completed by every rank together.)
        logger::set_rank(u32::try_from(job.comm().rank()).unwrap_or(0));
        // A module's LD_LIBRARY_PATH may have put another MPI's library in place of the
        // one built against: said, not refused (the same ABI may run).
        crate::mpi_build::warn_if_library_differs();
        let saved = match job.take_arrived_state() {
            // Arrived by a migration: the regions stay in the state message until
            // registered (one copy, into the program's memory).
            Some((message, offset)) => SavedRegions::in_message(message, offset)
                .map_err(|e| CallError::runtime(format!("cannot read the state received: {e}")))?,
            None => job
                .restore_or(SavedRegions::default)
                .map_err(CallError::runtime)?,
        };
        if !comm.is_null() {
            // SAFETY: by the caller.
            unsafe { *comm = job.comm().as_raw() };
        }
        RUNTIME.with(|cell| {
            *cell.borrow_mut() = Some(Runtime {
                job,
                regions: Regions::default(),
                saved,
                on_comm: Vec::new(),
                fortran: Vec::new(),
            })
        });
        set_init_thread(Some(ThreadLabel::current()));
        Ok(RANKMIG_OK)
    })
}

/// The job's communicator now: it changes at migrations, so take it again after every
/// [`rankmig_checkpoint`]. `MPI_COMM_NULL` before [`rankmig_init`].
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_comm() -> MPI_Comm {
    match with_runtime(|rt| Ok(rt.job.comm().as_raw())) {
        Ok(comm) => comm,
        // SAFETY: reading an MPI predefined handle.
        Err(_) => unsafe { mpi::ffi::RSMPI_COMM_NULL },
    }
}

/// [`rankmig_comm`] as a Fortran handle (`MPI_Comm_c2f`), for the `rankmig` Fortran
/// module. `MPI_COMM_NULL`'s handle before [`rankmig_init`].
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_comm_fortran() -> c_int {
    // SAFETY: converting a valid (or null) communicator handle.
    unsafe { mpi::ffi::RSMPI_Comm_c2f(rankmig_comm()) }
}

/// Registers `bytes` bytes at `data` as state saved under `name`. In a resumed process
/// (after a restart, or in a process that arrived by a migration) the saved bytes of
/// `name` are copied into `data` here, once. Register again under the same name when
/// the region moves or its size changes. The memory must stay valid until the next
/// registration of `name` or [`rankmig_finalize`].
///
/// # Safety
/// `name` is a NUL-terminated string; `data` is valid for reads and writes of `bytes`
/// bytes (it may be null when `bytes` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_register(
    name: *const c_char,
    data: *mut c_void,
    bytes: usize,
) -> c_int {
    call(|| {
        if name.is_null() {
            return Err(CallError::argument("rankmig_register: name is NULL"));
        }
        // SAFETY: by the caller, NUL-terminated.
        let name = unsafe { CStr::from_ptr(name) };
        let name = name
            .to_str()
            .map_err(|_| CallError::argument("rankmig_register: name is not UTF-8"))?;
        if data.is_null() && bytes > 0 {
            return Err(CallError::argument(format!(
                "rankmig_register: region '{name}' of {bytes} bytes at NULL"
            )));
        }
        let region = Region {
            name: name.to_owned(),
            data: data.cast(),
            bytes,
        };
        with_runtime(|rt| {
            // SAFETY: by the caller, `data` holds `bytes` writable bytes.
            unsafe { rt.saved.copy_into(&region) }
                .map_err(|e| CallError::argument(format!("rankmig_register: {e}")))?;
            rt.regions.register(region);
            // SAFETY: rankmig_register's contract: every registered region stays valid
            // until registered again or rankmig_finalize; the program is inside
            // rankmig_checkpoint whenever a migration reads it.
            unsafe { rt.job.place_largest_region(rt.regions.largest()) };
            Ok(RANKMIG_OK)
        })
    })
}

/// The loop's checkpoint point; collective. Counts a call and, when due, saves the
/// registered regions or takes part in a reconfiguration. A process whose rank moves
/// elsewhere exits inside this call (status 0). Returns [`RANKMIG_COMM_CHANGED`] (1)
/// when this call replaced the job's communicator (every [`rankmig_on_comm`] callback
/// has then run with the new one, before the return), 0 when it did not, or a negative
/// code: the job then keeps running as it was (no rank has moved).
///
/// Order of communicators at a migration: the new job communicator is created first,
/// the callbacks run with it, and the old one is freed by rankmig only after; a
/// communicator the program derived from the old one is the program's to free (in its
/// callback).
///
/// The call belongs on the thread that called [`rankmig_init`], outside any OpenMP
/// parallel region (after the region's end, where its threads have joined). From
/// another thread, or inside a parallel region (even on its master thread), it returns
/// [`RANKMIG_ERR_THREAD`] at once, before any collective: nothing is counted or saved,
/// and the job goes on as it was.
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_checkpoint() -> c_int {
    call(|| {
        refuse_from_another_thread()?;
        let changed = with_runtime(|rt| {
            let changed =
                rt.job.tick() && rt.job.event(&rt.regions).map_err(CallError::checkpoint)?;
            Ok(changed.then(|| (rt.job.comm().as_raw(), rt.on_comm.clone())))
        })?;
        match changed {
            Some((comm, callbacks)) => {
                announce_comm(comm, &callbacks);
                Ok(RANKMIG_COMM_CHANGED)
            }
            None => Ok(RANKMIG_OK),
        }
    })
}

/// [`RANKMIG_ERR_THREAD`] when the runtime runs, but on another thread than the caller.
fn refuse_from_another_thread() -> Result<(), CallError> {
    if RUNTIME.with(|cell| cell.try_borrow().map_or(true, |r| r.is_some())) {
        return Ok(());
    }
    let owner = INIT_THREAD
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    match owner {
        Some(owner) => Err(CallError::misplaced(&CheckpointError::Misplaced {
            owner,
            caller: ThreadLabel::current(),
            in_parallel: thread_owner::in_parallel_region(),
        })),
        None => Ok(()),
    }
}

/// Registers `callback`, called with the job's communicator and `arg`: once at once,
/// then in every process each time the job's communicator is replaced (inside
/// [`rankmig_checkpoint`], after a migration, before it returns), after the callbacks
/// registered before it. A process that arrived by migration gets the current
/// communicator when it registers. Use it to rebuild communicators derived from the
/// job's (`MPI_Cart_create`, `MPI_Comm_split`, `MPI_Comm_dup`): free the old derived one
/// and create the new one there. The callback may make collective calls on `comm`
/// (every process of the job runs it at the same point).
///
/// # Safety
/// `callback` must be callable with any communicator of the job, and `arg` valid
/// whenever it is called, until [`rankmig_finalize`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_on_comm(callback: RankmigCommCallback, arg: *mut c_void) -> c_int {
    call(|| {
        let Some(callback) = callback else {
            return Err(CallError::argument("rankmig_on_comm: callback is NULL"));
        };
        let comm = with_runtime(|rt| {
            rt.on_comm.push((callback, arg));
            Ok(rt.job.comm().as_raw())
        })?;
        announce_comm(comm, &[(callback, arg)]);
        Ok(RANKMIG_OK)
    })
}

/// [`rankmig_on_comm`] for Fortran (the `rankmig` module's `rankmig_on_comm`): the
/// callback receives the communicator as a Fortran handle, by value. Same calls, same
/// order as the C callbacks (the two kinds are called in registration order).
///
/// # Safety
/// `callback` must be callable with any communicator handle of the job, and `arg` valid
/// whenever it is called, until [`rankmig_finalize`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_on_comm_fortran(
    callback: RankmigFortranCommCallback,
    arg: *mut c_void,
) -> c_int {
    call(|| {
        let Some(callback) = callback else {
            return Err(CallError::argument("rankmig_on_comm: callback is NULL"));
        };
        let (comm, stand_in) = with_runtime(|rt| {
            let mut boxed = Box::new((callback, arg));
            let stand_in: CommCallback = (fortran_callback, (&raw mut *boxed).cast());
            rt.fortran.push(boxed);
            rt.on_comm.push(stand_in);
            Ok((rt.job.comm().as_raw(), stand_in))
        })?;
        announce_comm(comm, &[stand_in]);
        Ok(RANKMIG_OK)
    })
}

/// How many times the job's communicator has been replaced in this process (a process
/// that arrived by migration starts with the count of that migration); 0 before
/// [`rankmig_init`].
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_generation() -> std::ffi::c_ulong {
    with_runtime(|rt| Ok(rt.job.comm_generation() as std::ffi::c_ulong)).unwrap_or(0)
}

/// 1 in a process that arrived by migration, and after a restart from a checkpoint in
/// every process (`rankmig_init` restored it), from [`rankmig_init`] on; 0 at a fresh
/// start and before [`rankmig_init`]. Set-up under `if (!rankmig_resumed())` is
/// therefore skipped by a process that arrived and by every process at a restart;
/// set-up that must run again at a restart goes outside it.
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_resumed() -> c_int {
    with_runtime(|rt| Ok(c_int::from(rt.job.is_resumed()))).unwrap_or(0)
}

/// An output file's error as a code and message.
fn output_error(e: crate::output_files::OutputError) -> CallError {
    use crate::output_files::OutputError;
    match e {
        OutputError::NotOpen { .. } | OutputError::AlreadyOpen { .. } => {
            CallError::argument(e.to_string())
        }
        _ => CallError(RANKMIG_ERR_FILE, e.to_string()),
    }
}

/// Opens `path` as an output file of this rank, written with [`rankmig_write_output`],
/// and sets `*handle` to its handle. Call it after [`rankmig_init`], in every process
/// that writes the file (a process that arrived by migration too). Each checkpoint
/// flushes the file and records its length; a restart from that checkpoint truncates
/// it to that length here (so the lines of the iterations after the checkpoint are
/// not there twice); a process that arrived by migration appends to it where the rank
/// it replaces stopped (that one flushed and closed it before handing its state over),
/// never truncating it; a fresh start creates or truncates it. A file of every rank
/// (one path per rank) or of rank 0 alone alike: the rank that opens it records it.
///
/// Returns 0; [`RANKMIG_ERR_FILE`] when the path is a symbolic link (never followed),
/// not a regular file of this user with one link, shorter than recorded, or cannot be
/// opened; [`RANKMIG_ERR_ARGUMENT`] for a null or non-UTF-8 path, a null handle or a
/// path already open ([`rankmig_last_error`] says why).
///
/// # Safety
/// `path` is a NUL-terminated string; `handle` points to writable memory for one `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_open_output(path: *const c_char, handle: *mut c_int) -> c_int {
    call(|| {
        if path.is_null() || handle.is_null() {
            return Err(CallError::argument(
                "rankmig_open_output: path or handle is NULL",
            ));
        }
        // SAFETY: by the caller, NUL-terminated.
        let path = unsafe { CStr::from_ptr(path) };
        let path = path
            .to_str()
            .map_err(|_| CallError::argument("rankmig_open_output: path is not UTF-8"))?;
        let opened = with_runtime(|rt| {
            (rt.job.output_files())
                .open_handle(std::path::Path::new(path))
                .map_err(output_error)
        })?;
        let opened = c_int::try_from(opened)
            .map_err(|_| CallError::argument("rankmig_open_output: too many output files"))?;
        // SAFETY: by the caller.
        unsafe { *handle = opened };
        Ok(RANKMIG_OK)
    })
}

/// Writes `bytes` bytes at `data` to the output file `handle` (buffered by rankmig;
/// flushed at each checkpoint, at a migration, by [`rankmig_close_output`] and by
/// [`rankmig_finalize`]). Returns 0, or a negative code ([`rankmig_last_error`]).
///
/// # Safety
/// `data` is valid for reads of `bytes` bytes (it may be null when `bytes` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rankmig_write_output(
    handle: c_int,
    data: *const c_void,
    bytes: usize,
) -> c_int {
    call(|| {
        if data.is_null() && bytes > 0 {
            return Err(CallError::argument(format!(
                "rankmig_write_output: {bytes} bytes at NULL"
            )));
        }
        let slice = if bytes == 0 {
            &[][..]
        } else {
            // SAFETY: by the caller.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), bytes) }
        };
        let handle = usize::try_from(handle).unwrap_or(usize::MAX);
        with_runtime(|rt| {
            (rt.job.output_files())
                .write(handle, slice)
                .map_err(output_error)
        })?;
        Ok(RANKMIG_OK)
    })
}

/// Flushes and closes the output file `handle`. Its length stays recorded: opened again
/// by this process it is appended to. [`rankmig_finalize`] closes every file still
/// open. Returns 0, or a negative code ([`rankmig_last_error`]).
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_close_output(handle: c_int) -> c_int {
    call(|| {
        let handle = usize::try_from(handle).unwrap_or(usize::MAX);
        with_runtime(|rt| (rt.job.output_files()).close(handle).map_err(output_error))?;
        Ok(RANKMIG_OK)
    })
}

/// Waits for the last checkpoint, writes the last records and ends the runtime
/// (collective); call it before `MPI_Finalize`. The communicators of the job are freed:
/// [`rankmig_comm`] then returns `MPI_COMM_NULL`.
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_finalize() -> c_int {
    call(|| {
        let mut runtime = RUNTIME
            .with(|cell| cell.borrow_mut().take())
            .ok_or_else(CallError::not_initialised)?;
        set_init_thread(None);
        runtime.job.finalize().map_err(CallError::runtime)?;
        Ok(RANKMIG_OK)
    })
}

/// The library's version, `MAJOR.MINOR.PATCH` (`"1.2.0"`): the version of the library
/// the program runs with, which may differ from the `RANKMIG_VERSION_*` of the header
/// it was compiled with (same major version: compatible). The string is static.
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_version() -> *const c_char {
    const VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(version) => version,
            Err(_) => panic!("the package version holds a NUL byte"),
        };
    VERSION.as_ptr()
}

/// The message of the calling thread's last failed call (empty if none). The pointer
/// stays valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn rankmig_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
