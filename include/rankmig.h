/* rankmig: checkpoint/restart and live migration of MPI ranks, C interface.
 * Generated from src/capi/mod.rs by cbindgen: do not edit
 * (RANKMIG_BLESS=1 cargo test --release --test it -- c_interface:: rewrites it).
 * Link with -lrankmig (before the MPI library, so that rankmig counts MPI_Send & co). */

#ifndef RANKMIG_H
#define RANKMIG_H

#include <stddef.h>
#include <mpi.h>

/*
 The major version of the library: a program built against one major version runs
 with any library of that major version (the SONAME is `librankmig.so.MAJOR`); an
 incompatible change of this interface raises it.
 */
#define RANKMIG_VERSION_MAJOR 1

/*
 The minor version: raised when the interface gains something.
 */
#define RANKMIG_VERSION_MINOR 2

/*
 The patch version: raised by a fix that leaves the interface as it was.
 */
#define RANKMIG_VERSION_PATCH 0

/*
 Success.
 */
#define RANKMIG_OK 0

/*
 A call before `rankmig_init`, after `rankmig_finalize`, from another thread (but
 `rankmig_checkpoint`: [`RANKMIG_ERR_THREAD`]), or a second `rankmig_init`.
 */
#define RANKMIG_ERR_NOT_INITIALISED -1

/*
 A bad argument: a null or non-UTF-8 name, a null region of nonzero size, a region
 whose size differs from the saved one, MPI not initialised.
 */
#define RANKMIG_ERR_ARGUMENT -2

/*
 The runtime failed: bad `RANKMIG_*` settings, checkpoint directory, migration.
 */
#define RANKMIG_ERR_RUNTIME -3

/*
 A bug inside rankmig (caught, never unwound into the caller).
 */
#define RANKMIG_ERR_INTERNAL -4

/*
 [`rankmig_checkpoint`] called where it does not belong: from a thread other than the
 one that called `rankmig_init`, or inside an OpenMP parallel region (even by its
 master thread). Refused before any collective: nothing is counted or saved, the job
 goes on as it was; [`rankmig_last_error`] names the two threads. Since 1.1.
 */
#define RANKMIG_ERR_THREAD -5

/*
 An output file ([`rankmig_open_output`]) refused or failed: a symbolic link (never
 followed), not a regular file of this user with one link, shorter than the length
 recorded for it, or an I/O error. Since 1.1.
 */
#define RANKMIG_ERR_FILE -6

/*
 [`rankmig_init`] in a program compiled with a header this library cannot serve: of
 another major version, or of a newer minor version (the program may call what this
 library lacks). [`rankmig_last_error`] names both versions; nothing was started.
 Since 1.2.
 */
#define RANKMIG_ERR_VERSION -7

/*
 [`rankmig_checkpoint`]: this call replaced the job's communicator (a migration); the
 callbacks of [`rankmig_on_comm`] have run with the new one.
 */
#define RANKMIG_COMM_CHANGED 1

/*
 A callback of [`rankmig_on_comm`]: the job's communicator, and the caller's `arg`.
 */
typedef void (*RankmigCommCallback)(MPI_Comm comm, void *arg);

/*
 A callback of [`rankmig_on_comm_fortran`]: the job's communicator as a Fortran handle
 (`MPI_Comm_c2f`), by value, and the caller's `arg`.
 */
typedef void (*RankmigFortranCommCallback)(int comm, void *arg);



#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/*
 [`rankmig_init`] of a program compiled with the header of version
 `header_major.header_minor`: the header's `rankmig_init(comm)` is a macro that calls
 this with its `RANKMIG_VERSION_MAJOR` and `RANKMIG_VERSION_MINOR`, so that a program
 run with a library that cannot serve it is told so before anything starts:
 [`RANKMIG_ERR_VERSION`], on every process alike (no collective is made). Since 1.2;
 programs compiled before call [`rankmig_init`] itself, unchecked.

 # Safety
 As [`rankmig_init`].
 */
int rankmig_init_v(MPI_Comm *comm, int header_major, int header_minor);

/*
 Starts the runtime; call it after `MPI_Init`, on every process of `MPI_COMM_WORLD`
 (collective). Sets `*comm` (unless `comm` is null) to the job's communicator, which
 replaces `MPI_COMM_WORLD` everywhere in the program. In a process spawned by a
 migration, joins the job in place of the rank it replaces.

 The checkpoint settings are rankmig's defaults (directory `rankmig-ckpt`, a save
 about every 300 s, 2 epochs kept, job named after the executable) overridden by the
 `RANKMIG_CKPT_*` variables and `RANKMIG_RESTART`, as `rankmig run` sets them.

 Returns 0, or a negative code ([`rankmig_last_error`] says why).

 # Safety
 `comm` is null or points to writable memory for one `MPI_Comm`.
 */
int rankmig_init(MPI_Comm *comm);

/*
 The job's communicator now: it changes at migrations, so take it again after every
 [`rankmig_checkpoint`]. `MPI_COMM_NULL` before [`rankmig_init`].
 */
MPI_Comm rankmig_comm(void);

/*
 [`rankmig_comm`] as a Fortran handle (`MPI_Comm_c2f`), for the `rankmig` Fortran
 module. `MPI_COMM_NULL`'s handle before [`rankmig_init`].
 */
int rankmig_comm_fortran(void);

/*
 Registers `bytes` bytes at `data` as state saved under `name`. In a resumed process
 (after a restart, or in a process that arrived by a migration) the saved bytes of
 `name` are copied into `data` here, once. Register again under the same name when
 the region moves or its size changes. The memory must stay valid until the next
 registration of `name` or [`rankmig_finalize`].

 # Safety
 `name` is a NUL-terminated string; `data` is valid for reads and writes of `bytes`
 bytes (it may be null when `bytes` is 0).
 */
int rankmig_register(const char *name, void *data, size_t bytes);

/*
 The loop's checkpoint point; collective. Counts a call and, when due, saves the
 registered regions or takes part in a reconfiguration. A process whose rank moves
 elsewhere exits inside this call (status 0). Returns [`RANKMIG_COMM_CHANGED`] (1)
 when this call replaced the job's communicator (every [`rankmig_on_comm`] callback
 has then run with the new one, before the return), 0 when it did not, or a negative
 code: the job then keeps running as it was (no rank has moved).

 Order of communicators at a migration: the new job communicator is created first,
 the callbacks run with it, and the old one is freed by rankmig only after; a
 communicator the program derived from the old one is the program's to free (in its
 callback).

 The call belongs on the thread that called [`rankmig_init`], outside any OpenMP
 parallel region (after the region's end, where its threads have joined). From
 another thread, or inside a parallel region (even on its master thread), it returns
 [`RANKMIG_ERR_THREAD`] at once, before any collective: nothing is counted or saved,
 and the job goes on as it was.
 */
int rankmig_checkpoint(void);

/*
 Registers `callback`, called with the job's communicator and `arg`: once at once,
 then in every process each time the job's communicator is replaced (inside
 [`rankmig_checkpoint`], after a migration, before it returns), after the callbacks
 registered before it. A process that arrived by migration gets the current
 communicator when it registers. Use it to rebuild communicators derived from the
 job's (`MPI_Cart_create`, `MPI_Comm_split`, `MPI_Comm_dup`): free the old derived one
 and create the new one there. The callback may make collective calls on `comm`
 (every process of the job runs it at the same point).

 # Safety
 `callback` must be callable with any communicator of the job, and `arg` valid
 whenever it is called, until [`rankmig_finalize`].
 */
int rankmig_on_comm(RankmigCommCallback callback, void *arg);

/*
 [`rankmig_on_comm`] for Fortran (the `rankmig` module's `rankmig_on_comm`): the
 callback receives the communicator as a Fortran handle, by value. Same calls, same
 order as the C callbacks (the two kinds are called in registration order).

 # Safety
 `callback` must be callable with any communicator handle of the job, and `arg` valid
 whenever it is called, until [`rankmig_finalize`].
 */
int rankmig_on_comm_fortran(RankmigFortranCommCallback callback, void *arg);

/*
 How many times the job's communicator has been replaced in this process (a process
 that arrived by migration starts with the count of that migration); 0 before
 [`rankmig_init`].
 */
unsigned long rankmig_generation(void);

/*
 1 in a process that arrived by migration, and after a restart from a checkpoint in
 every process (`rankmig_init` restored it), from [`rankmig_init`] on; 0 at a fresh
 start and before [`rankmig_init`]. Set-up under `if (!rankmig_resumed())` is
 therefore skipped by a process that arrived and by every process at a restart;
 set-up that must run again at a restart goes outside it.
 */
int rankmig_resumed(void);

/*
 Opens `path` as an output file of this rank, written with [`rankmig_write_output`],
 and sets `*handle` to its handle. Call it after [`rankmig_init`], in every process
 that writes the file (a process that arrived by migration too). Each checkpoint
 flushes the file and records its length; a restart from that checkpoint truncates
 it to that length here (so the lines of the iterations after the checkpoint are
 not there twice); a process that arrived by migration appends to it where the rank
 it replaces stopped (that one flushed and closed it before handing its state over),
 never truncating it; a fresh start creates or truncates it. A file of every rank
 (one path per rank) or of rank 0 alone alike: the rank that opens it records it.

 Returns 0; [`RANKMIG_ERR_FILE`] when the path is a symbolic link (never followed),
 not a regular file of this user with one link, shorter than recorded, or cannot be
 opened; [`RANKMIG_ERR_ARGUMENT`] for a null or non-UTF-8 path, a null handle or a
 path already open ([`rankmig_last_error`] says why).

 # Safety
 `path` is a NUL-terminated string; `handle` points to writable memory for one `int`.
 */
int rankmig_open_output(const char *path, int *handle);

/*
 Writes `bytes` bytes at `data` to the output file `handle` (buffered by rankmig;
 flushed at each checkpoint, at a migration, by [`rankmig_close_output`] and by
 [`rankmig_finalize`]). Returns 0, or a negative code ([`rankmig_last_error`]).

 # Safety
 `data` is valid for reads of `bytes` bytes (it may be null when `bytes` is 0).
 */
int rankmig_write_output(int handle, const void *data, size_t bytes);

/*
 Flushes and closes the output file `handle`. Its length stays recorded: opened again
 by this process it is appended to. [`rankmig_finalize`] closes every file still
 open. Returns 0, or a negative code ([`rankmig_last_error`]).
 */
int rankmig_close_output(int handle);

/*
 Waits for the last checkpoint, writes the last records and ends the runtime
 (collective); call it before `MPI_Finalize`. The communicators of the job are freed:
 [`rankmig_comm`] then returns `MPI_COMM_NULL`.
 */
int rankmig_finalize(void);

/*
 The library's version, `MAJOR.MINOR.PATCH` (`"1.2.0"`): the version of the library
 the program runs with, which may differ from the `RANKMIG_VERSION_*` of the header
 it was compiled with (same major version: compatible). The string is static.
 */
const char *rankmig_version(void);

/*
 The message of the calling thread's last failed call (empty if none). The pointer
 stays valid until the next failing call on this thread.
 */
const char *rankmig_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* RANKMIG_H */

/* A program compiled with this header starts the runtime through rankmig_init_v,
 * with the header's version: a library that cannot serve it (another major version,
 * an older minor version) refuses with RANKMIG_ERR_VERSION, naming both. (After the
 * declarations, which it would rewrite; guarded apart.) */
#ifndef RANKMIG_INIT_CHECKS_VERSION
#define RANKMIG_INIT_CHECKS_VERSION
#define rankmig_init(comm) rankmig_init_v((comm), RANKMIG_VERSION_MAJOR, RANKMIG_VERSION_MINOR)
#endif
