//! The MPI side of a migration: spawn the replacement processes, hand each its rank's
//! state straight from memory, rebuild a communicator with the same size and rank
//! numbers, free the temporary communicators.
//!
//! Old ranks (all of them, collectively) and the new processes meet in a merged
//! intracommunicator: old ranks first (0..N-1), new processes after (N..N+k-1), new
//! process j replacing the j-th leaving rank in ascending order. A split keyed by the
//! logical rank, in which the leavers do not take part, gives the new communicator.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::time::Instant;

use mpi::ffi;
use mpi::point_to_point::Status;
use mpi::raw::{AsRaw, FromRaw};
use mpi::topology::{Color, InterCommunicator, MergeOrder, SimpleCommunicator};
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Source};

use crate::mpi_request::wait_sleeping;

use super::MigrateError;
use super::state_buffer::StateBuffer;
use super::state_message::StateMessage;
use crate::run_dir::record::PhaseTimes;

/// Tag of the assignment message (rank 0 → new process).
const TAG_ASSIGNMENT: i32 = 0x5a41;
/// Tag of the state message (leaving rank → its replacement).
const TAG_STATE: i32 = 0x5a53;
/// Tag of the message before it: where within a page the state message is to start
/// ([`StateBuffer::receive_window`]) and the length of each of its parts
/// ([`StateMessage::layout`]).
const TAG_STATE_LAYOUT: i32 = 0x5a50;
/// Tag of the replacement's word to the leaving rank that every part of the state has
/// arrived: the leaving rank exits only then, as an MPI may still hold a part it was
/// given in its own queue (one did over TCP with 16 ranks on the emulated cluster: the
/// last part was lost with the process, and its replacement waited for it; which MPI:
/// docs/mpi-implementations.md).
const TAG_STATE_RECEIVED: i32 = 0x5a52;
/// Tag of old rank 0's word to the new processes of a background spawn, over the
/// bridge ([`BridgeWord`]).
const TAG_BRIDGE: i32 = 0x5a42;
/// Tag of old rank 0's word to a new process of a background spawn giving the size of
/// the state it will receive, over the bridge.
const TAG_STATE_SIZE: i32 = 0x5a5a;
/// Tag of the `MPI_Intercomm_create` that joins the old ranks and the new processes of
/// a background spawn.
const TAG_JOIN: i32 = 0x5a4a;
/// How long a new process of a background spawn sleeps between two looks for old rank
/// 0's word: it waits without taking a CPU from the application's ranks.
const BRIDGE_POLL: std::time::Duration = std::time::Duration::from_millis(1);
/// How long a process that waits for others during the exchange sleeps between two
/// looks: the ranks that send the state meanwhile get the CPUs of an oversubscribed
/// node instead of sharing them with processes spinning in MPI's progress loop.
const EXCHANGE_POLL: std::time::Duration = std::time::Duration::from_micros(100);
/// Bytes added to the announced state size of a background spawn's buffer, for the
/// counters that go first in the state message.
const STATE_SLACK: usize = 1 << 20;

/// Old rank 0's word to each new process of a background spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BridgeWord {
    /// Every old rank joins now: take part in the `MPI_Intercomm_create`.
    Join = 1,
    /// The migration is called off (the application ended, or the plan is void):
    /// leave without joining.
    Dismiss = 2,
}

/// The outcome on an old rank.
pub enum OldRankOutcome {
    /// This rank stays: here is the new communicator.
    Stay(SimpleCommunicator),
    /// This rank has been replaced: it must exit without finalizing MPI.
    Leave,
}

/// Makes MPI calls on `comm` return error codes instead of aborting the job.
pub fn return_errors(comm: &impl AsRaw<Raw = ffi::MPI_Comm>) {
    // SAFETY: a valid communicator handle and a predefined error handler.
    unsafe {
        ffi::MPI_Comm_set_errhandler(comm.as_raw(), ffi::RSMPI_ERRORS_RETURN);
    }
}

/// Rank 0 checks that `program` can be started before anyone commits to a spawn:
/// Open MPI 4.1 aborts the whole job when a spawned process fails to start, so a
/// program that is missing or not executable must be caught here. Collective; every
/// rank gets the verdict.
pub fn preflight(comm: &SimpleCommunicator, program: &str) -> Result<(), MigrateError> {
    let local = if comm.rank() == 0 {
        executable(program)
    } else {
        Ok(())
    };
    let mut failed = 0u32;
    comm.all_reduce_into(
        &u32::from(local.is_err()),
        &mut failed,
        mpi::collective::SystemOperation::max(),
    );
    match (failed, local) {
        (0, _) => Ok(()),
        (_, Err(e)) => Err(e),
        (_, Ok(())) => Err(MigrateError::Spawn {
            program: program.to_owned(),
            why: "rank 0 found it cannot be started".into(),
        }),
    }
}

fn executable(program: &str) -> Result<(), MigrateError> {
    use std::os::unix::fs::PermissionsExt;
    let error = |why: String| MigrateError::Spawn {
        program: program.to_owned(),
        why,
    };
    let meta = std::fs::metadata(program).map_err(|e| error(e.to_string()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(error("not an executable file".into()));
    }
    Ok(())
}

/// Processes to start on one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnGroup {
    /// The host; `None` lets the MPI choose (this host when the job runs on logical
    /// nodes).
    pub host: Option<String>,
    /// How many processes.
    pub count: usize,
    /// The spawn info keys and values that put them there, in the launcher's words
    /// ([`crate::launcher::Launcher::spawn_info`]); empty: `MPI_INFO_NULL`.
    pub info: Vec<(String, String)>,
}

/// Spawns the processes of `groups` (in order: the new processes are numbered group
/// by group) running `program args`, from every rank of `comm` (collective, root 0),
/// with one `MPI_Comm_spawn_multiple` command per group. Every rank learns whether it
/// worked.
pub fn spawn(
    comm: &SimpleCommunicator,
    program: &str,
    args: &[String],
    groups: &[SpawnGroup],
) -> Result<InterCommunicator, MigrateError> {
    preflight(comm, program)?;
    return_errors(comm);
    let spawn_error = |why: String| MigrateError::Spawn {
        program: program.to_owned(),
        why,
    };
    let c_program = CString::new(program).map_err(|e| spawn_error(e.to_string()))?;
    let c_args: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|e| spawn_error(e.to_string()))?;
    let mut argv: Vec<*mut c_char> = c_args
        .iter()
        .map(|a| a.as_ptr() as *mut c_char)
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect();
    let total: usize = groups.iter().map(|g| g.count).sum();
    let infos = SpawnInfos::new(groups).map_err(spawn_error)?;
    let mut commands: Vec<*mut c_char> = vec![c_program.as_ptr() as *mut c_char; groups.len()];
    let mut argvs: Vec<*mut *mut c_char> = vec![argv.as_mut_ptr(); groups.len()];
    let mut counts: Vec<c_int> = groups.iter().map(|g| g.count as c_int).collect();
    let mut errcodes: Vec<c_int> = vec![0; total];
    // SAFETY: reading a predefined MPI handle.
    let mut inter = unsafe { ffi::RSMPI_COMM_NULL };
    // SAFETY: handles are valid; the command, argv and info arrays have one entry per
    // group and outlive the call; errcodes has one slot per process.
    let rc = unsafe {
        ffi::MPI_Comm_spawn_multiple(
            groups.len() as c_int,
            commands.as_mut_ptr(),
            argvs.as_mut_ptr(),
            counts.as_mut_ptr(),
            infos.handles.as_ptr() as *mut ffi::MPI_Info,
            0,
            comm.as_raw(),
            &mut inter,
            errcodes.as_mut_ptr(),
        )
    };
    drop(infos);
    let local_failed = rc != ffi::MPI_SUCCESS as c_int
        // SAFETY: reading a predefined MPI handle.
        || inter == unsafe { ffi::RSMPI_COMM_NULL }
        || errcodes.iter().any(|&c| c != ffi::MPI_SUCCESS as c_int);
    let mut failed = 0u32;
    comm.all_reduce_into(
        &u32::from(local_failed),
        &mut failed,
        mpi::collective::SystemOperation::max(),
    );
    if failed != 0 {
        // SAFETY: reading a predefined MPI handle.
        if inter != unsafe { ffi::RSMPI_COMM_NULL } {
            // SAFETY: a valid handle we own.
            unsafe { ffi::MPI_Comm_free(&mut inter) };
        }
        return Err(spawn_error(format!(
            "MPI_Comm_spawn_multiple of {total} process(es) on {} failed (return code {rc})",
            describe(groups)
        )));
    }
    // SAFETY: MPI returned a valid intercommunicator.
    unsafe { InterCommunicator::try_from_raw(inter) }
        .ok_or_else(|| spawn_error("MPI returned no intercommunicator".into()))
}

fn describe(groups: &[SpawnGroup]) -> String {
    groups
        .iter()
        .map(|g| format!("{}×{}", g.host.as_deref().unwrap_or("any host"), g.count))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One MPI info object per spawn group (`MPI_INFO_NULL` when the group has no keys),
/// freed on drop.
struct SpawnInfos {
    handles: Vec<ffi::MPI_Info>,
}

impl SpawnInfos {
    fn new(groups: &[SpawnGroup]) -> Result<Self, String> {
        let mut infos = Self {
            handles: Vec::with_capacity(groups.len()),
        };
        for g in groups {
            infos.push(&g.info)?;
        }
        Ok(infos)
    }

    /// One info object holding `keys` (`MPI_INFO_NULL` when empty).
    fn of_keys(keys: &[(String, String)]) -> Result<Self, String> {
        let mut infos = Self {
            handles: Vec::with_capacity(1),
        };
        infos.push(keys)?;
        Ok(infos)
    }

    /// Adds an info object holding `keys`.
    fn push(&mut self, keys: &[(String, String)]) -> Result<(), String> {
        // SAFETY: reading a constant handle.
        let mut info = unsafe { ffi::RSMPI_INFO_NULL };
        if !keys.is_empty() {
            // SAFETY: creating an info object; it is freed on drop.
            unsafe { ffi::MPI_Info_create(&mut info) };
        }
        self.handles.push(info);
        for (key, value) in keys {
            let key = CString::new(key.as_str()).map_err(|e| e.to_string())?;
            let value = CString::new(value.as_str()).map_err(|e| e.to_string())?;
            // SAFETY: a valid info object and valid C strings.
            unsafe { ffi::MPI_Info_set(info, key.as_ptr(), value.as_ptr()) };
        }
        Ok(())
    }
}

impl Drop for SpawnInfos {
    fn drop(&mut self) {
        for info in &mut self.handles {
            // SAFETY: reading a predefined MPI handle.
            if *info != unsafe { ffi::RSMPI_INFO_NULL } {
                // SAFETY: an info object we created and no longer use.
                unsafe { ffi::MPI_Info_free(info) };
            }
        }
    }
}

/// The bridge of a background spawn: an intracommunicator of old rank 0 (rank 0) and
/// the new processes (ranks 1..=k, in spawn order), made by merging the spawn's
/// intercommunicator. Held as a raw handle so that the helper thread that makes it can
/// hand it to the main thread.
#[derive(Debug)]
pub struct Bridge(ffi::MPI_Comm);

// SAFETY: an MPI handle is a plain value; with MPI_THREAD_MULTIPLE any thread may use
// it, and the bridge is used by one thread at a time (the helper, then the main one).
unsafe impl Send for Bridge {}

impl Bridge {
    /// The bridge as a communicator (freed with `MPI_Comm_free` when dropped).
    fn into_comm(self) -> SimpleCommunicator {
        // SAFETY: a valid intracommunicator made by MPI_Intercomm_merge.
        unsafe { SimpleCommunicator::from_raw(self.0) }
    }
}

/// Background spawn, on old rank 0's helper thread: spawns `groups` from a private
/// duplicate of `MPI_COMM_SELF` (so it shares no communicator with the application's
/// main thread, whose collectives go on meanwhile) and merges with the new processes
/// into the [`Bridge`]; `spawned` is called once the spawn call has returned, before
/// the merge. New process `j` is then told `state_sizes[j]`, the size of the state it
/// will receive, and makes a buffer that size ready; the bridge is returned once each
/// has said it is ready. Needs `MPI_THREAD_MULTIPLE`.
pub fn spawn_bridge(
    program: &str,
    args: &[String],
    groups: &[SpawnGroup],
    state_sizes: &[u64],
    spawned: impl FnOnce(),
) -> Result<Bridge, MigrateError> {
    let own = SimpleCommunicator::self_comm().duplicate();
    let inter = spawn(&own, program, args, groups);
    spawned();
    bridge_with(inter?, state_sizes)
}

/// The [`Bridge`] of old rank 0 and the new processes at the other end of `inter`:
/// new process `j` is told `state_sizes[j]` and makes a buffer that size ready;
/// returned once each has said it is ready.
fn bridge_with(inter: InterCommunicator, state_sizes: &[u64]) -> Result<Bridge, MigrateError> {
    let merged = inter.merge(MergeOrder::Low);
    crate::migrate::timeline::step("rank 0: bridge merged");
    free_intercomm(inter);
    for (j, size) in state_sizes.iter().enumerate() {
        merged
            .process_at_rank(j as i32 + 1)
            .send_with_tag(size, TAG_STATE_SIZE);
    }
    // Complete once every new process has its buffer ready (it answers then): the
    // ranks are held only after that.
    for j in 1..=state_sizes.len() {
        wait_for_message(&merged, j as i32, TAG_STATE_SIZE);
        let _ready = merged
            .process_at_rank(j as i32)
            .receive_with_tag::<u8>(TAG_STATE_SIZE);
    }
    let raw = merged.as_raw();
    std::mem::forget(merged);
    Ok(Bridge(raw))
}

/// Bytes kept for a port name: more than any implementation's name needs with the
/// info its launcher gives ([`crate::launcher::Launcher::open_port_info`]).
const PORT_NAME_BYTES: usize = 4096;

/// Old rank 0's helper: opens a port for replacement processes of another launch to
/// connect to, with the info keys `info` (the launcher's).
pub fn open_port(info: &[(String, String)]) -> Result<String, MigrateError> {
    let info = SpawnInfos::of_keys(info).map_err(|why| MigrateError::Spawn {
        program: "MPI_Open_port".into(),
        why,
    })?;
    let mut name = vec![0 as c_char; PORT_NAME_BYTES + 1];
    // SAFETY: a valid info handle (or MPI_INFO_NULL) and a buffer longer than any
    // port name the info allows.
    let rc = unsafe { ffi::MPI_Open_port(info.handles[0], name.as_mut_ptr()) };
    if rc != ffi::MPI_SUCCESS as c_int {
        return Err(MigrateError::Protocol("MPI_Open_port failed"));
    }
    // SAFETY: MPI wrote a NUL-terminated name into the buffer.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

/// Closes a port made by [`open_port`].
pub fn close_port(port: &str) {
    if let Ok(c) = CString::new(port) {
        // SAFETY: the name of a port this process opened.
        unsafe { ffi::MPI_Close_port(c.as_ptr()) };
    }
}

/// Old rank 0's helper, once the processes of another launch wait in
/// [`connect_to_job`] on `port`: accepts them from a private duplicate of
/// `MPI_COMM_SELF` and makes the [`Bridge`] with them as [`spawn_bridge`] does.
///
/// The processes made their state buffers ready before they connected (their launch
/// request gave the sizes), so the bridge is complete once merged: old rank 0's helper
/// makes no MPI call after the merge (where the implementation serialises a process's
/// MPI calls, its polls would hold the application's own calls on that rank;
/// docs/measured.md).
pub fn accept_bridge(port: &str) -> Result<Bridge, MigrateError> {
    let own = SimpleCommunicator::self_comm().duplicate();
    return_errors(&own);
    let inter = port_call(port, &own, ffi::MPI_Comm_accept, "MPI_Comm_accept")?;
    crate::migrate::timeline::step("rank 0: accepted the new processes");
    bridge_with(inter, &[])
}

/// A replacement process of another launch: connects, with every process of its
/// `MPI_COMM_WORLD`, to old rank 0's `port`; the intercommunicator stands for the
/// parent one of a spawned process ([`new_process_exchange`]).
pub fn connect_to_job(port: &str) -> Result<InterCommunicator, MigrateError> {
    let world = SimpleCommunicator::world();
    return_errors(&world);
    port_call(port, &world, ffi::MPI_Comm_connect, "MPI_Comm_connect")
}

type PortCall = unsafe extern "C" fn(
    *const c_char,
    ffi::MPI_Info,
    c_int,
    ffi::MPI_Comm,
    *mut ffi::MPI_Comm,
) -> c_int;

/// `MPI_Comm_accept` or `MPI_Comm_connect` on `port` over `comm` (root 0).
fn port_call(
    port: &str,
    comm: &SimpleCommunicator,
    call: PortCall,
    name: &'static str,
) -> Result<InterCommunicator, MigrateError> {
    let c_port = CString::new(port).map_err(|_| MigrateError::Protocol("a port name holds NUL"))?;
    // SAFETY: reading predefined handles.
    let (mut inter, info) = unsafe { (ffi::RSMPI_COMM_NULL, ffi::RSMPI_INFO_NULL) };
    // SAFETY: a valid port name, communicator and out-parameter.
    let rc = unsafe { call(c_port.as_ptr(), info, 0, comm.as_raw(), &mut inter) };
    if rc != ffi::MPI_SUCCESS as c_int {
        return Err(MigrateError::Protocol(name));
    }
    // SAFETY: MPI returned a valid intercommunicator.
    unsafe { InterCommunicator::try_from_raw(inter) }.ok_or(MigrateError::Protocol(name))
}

/// Old ranks (collective over `comm`), once a background spawn of `new_processes`
/// processes is complete: rank 0 tells every new process to join over `bridge` (only
/// rank 0 has it), then all meet them in one intercommunicator, old ranks as its local
/// group, as [`spawn`] would have returned it.
pub fn join_background_spawn(
    comm: &SimpleCommunicator,
    bridge: Option<Bridge>,
    new_processes: usize,
) -> Result<InterCommunicator, MigrateError> {
    let bridge = bridge.map(Bridge::into_comm);
    if let Some(b) = &bridge {
        tell_new_processes(b, new_processes, BridgeWord::Join);
    }
    let peer = bridge.as_ref().map_or(comm.as_raw(), |b| b.as_raw());
    // SAFETY: reading a predefined handle.
    let mut inter = unsafe { ffi::RSMPI_COMM_NULL };
    // SAFETY: valid communicators; the peer communicator and remote leader are used on
    // the local leader (rank 0) only, where the peer is the bridge and rank 1 its first
    // new process.
    let rc = unsafe { ffi::MPI_Intercomm_create(comm.as_raw(), 0, peer, 1, TAG_JOIN, &mut inter) };
    free_comm(bridge);
    if rc != ffi::MPI_SUCCESS as c_int {
        return Err(MigrateError::Protocol(
            "MPI_Intercomm_create with the new processes failed",
        ));
    }
    // SAFETY: MPI returned a valid intercommunicator.
    unsafe { InterCommunicator::try_from_raw(inter) }.ok_or(MigrateError::Protocol(
        "MPI_Intercomm_create returned no communicator",
    ))
}

/// Old rank 0: calls a completed background spawn off; its `new_processes` processes
/// leave without joining.
pub fn dismiss_background_spawn(bridge: Bridge, new_processes: usize) {
    let bridge = bridge.into_comm();
    tell_new_processes(&bridge, new_processes, BridgeWord::Dismiss);
    free_comm(Some(bridge));
}

fn tell_new_processes(bridge: &SimpleCommunicator, new_processes: usize, word: BridgeWord) {
    for j in 1..=new_processes {
        bridge
            .process_at_rank(j as i32)
            .send_with_tag(&(word as u8), TAG_BRIDGE);
    }
}

/// Frees an intracommunicator with `MPI_Comm_free`, which does not wait for the others.
fn free_comm(comm: Option<SimpleCommunicator>) {
    if let Some(comm) = comm {
        let mut raw = comm.as_raw();
        std::mem::forget(comm);
        // SAFETY: a valid communicator handle owned by us and no longer used.
        unsafe { ffi::MPI_Comm_free(&mut raw) };
    }
}

/// Frees an intercommunicator with `MPI_Comm_free` (rsmpi's drop would call the
/// collective `MPI_Comm_disconnect`, which the other side does not join).
pub fn free_intercomm(inter: InterCommunicator) {
    let mut raw = inter.as_raw();
    std::mem::forget(inter);
    // SAFETY: a valid intercommunicator handle owned by us and no longer used.
    unsafe { ffi::MPI_Comm_free(&mut raw) };
}

/// Old ranks' half of the exchange, after a successful spawn. `leavers` are the leaving
/// ranks in ascending order; `assignments[j]` is the message for new process j (only
/// rank 0's copy is used); `state` is this rank's state message (leavers only).
///
/// The new communicator is made first (merge, then a split in which the leavers do not
/// take part): a rank that stays goes back to the application at once, while each
/// leaving rank hands its state to its replacement and leaves once the replacement says
/// it has all of it; the application waits for the arrivals only where it talks to
/// them.
pub fn old_ranks_exchange(
    comm: &SimpleCommunicator,
    inter: InterCommunicator,
    leavers: &[usize],
    assignments: &[Vec<u8>],
    state: Option<&StateMessage<'_>>,
    times: &mut PhaseTimes,
    started: Instant,
) -> OldRankOutcome {
    let merged = inter.merge(MergeOrder::Low);
    crate::migrate::timeline::step("old: merged with the new processes");
    times.spawn = started.elapsed().as_secs_f64();
    let rebuild_start = Instant::now();
    let rank = comm.rank() as usize;
    let n = comm.size() as usize;
    let my_slot = leavers.iter().position(|&r| r == rank);
    let color = if my_slot.is_some() {
        Color::undefined()
    } else {
        Color::with_value(0)
    };
    // The assignments name the rank each new process takes, its key in the split.
    if rank == 0 {
        for (j, message) in assignments.iter().enumerate() {
            merged
                .process_at_rank((n + j) as i32)
                .send_with_tag(&message[..], TAG_ASSIGNMENT);
        }
    }
    let new_comm = merged.split_by_color_with_key(color, rank as i32);
    crate::migrate::timeline::step("old: new communicator made");
    times.rebuild = rebuild_start.elapsed().as_secs_f64();
    let transfer_start = Instant::now();
    if let (Some(j), Some(state)) = (my_slot, state) {
        let replacement = merged.process_at_rank((n + j) as i32);
        replacement.send_with_tag(&state.layout()[..], TAG_STATE_LAYOUT);
        for part in state.parts() {
            replacement.send_with_tag(part, TAG_STATE);
        }
        wait_for_message(&merged, (n + j) as i32, TAG_STATE_RECEIVED);
        let _received = replacement.receive_with_tag::<u8>(TAG_STATE_RECEIVED);
    }
    crate::migrate::timeline::step("old: assignments and state sent");
    times.transfer = transfer_start.elapsed().as_secs_f64();
    drop(merged);
    free_intercomm(inter);
    match new_comm {
        Some(c) => OldRankOutcome::Stay(c),
        None => OldRankOutcome::Leave,
    }
}

/// What a new process receives.
pub struct Arrival {
    /// The new job communicator (this process has the replaced rank's number).
    pub comm: SimpleCommunicator,
    /// Rank 0's assignment message.
    pub assignment: Vec<u8>,
    /// The replaced rank's serialised state.
    pub state: StateBuffer,
}

/// New processes' half of the exchange. `buffer`: memory made ready for the state
/// ([`state_buffer`]; empty if old rank 0 is to tell the size first). `replaced_rank_of`
/// decodes the rank this process replaces from the assignment message.
///
/// A process of a background spawn first waits, without taking a CPU, for old rank 0's
/// [`BridgeWord`]: it joins the old ranks ([`join_background_spawn`]) or, dismissed,
/// returns [`MigrateError::Dismissed`].
pub fn new_process_exchange(
    parent: InterCommunicator,
    mut buffer: StateBuffer,
    replaced_rank_of: impl FnOnce(&[u8]) -> Result<usize, MigrateError>,
) -> Result<Arrival, MigrateError> {
    let mut merged = parent.merge(MergeOrder::High);
    crate::migrate::timeline::step("new: bridge merged");
    free_intercomm(parent);
    loop {
        match wait_for_rank_zero(&merged) {
            TAG_STATE_SIZE => {
                let (size, _) = merged
                    .process_at_rank(0)
                    .receive_with_tag::<u64>(TAG_STATE_SIZE);
                buffer = state_buffer(size);
                crate::migrate::timeline::step("new: state buffer ready");
                merged
                    .process_at_rank(0)
                    .send_with_tag(&1u8, TAG_STATE_SIZE);
            }
            TAG_BRIDGE => {
                crate::migrate::timeline::step("new: told to join");
                merged = join_old_ranks(merged)?;
                crate::migrate::timeline::step("new: joined the old ranks");
                break;
            }
            _ => break,
        }
    }
    wait_for_message(&merged, 0, TAG_ASSIGNMENT);
    let (assignment, _) = merged
        .process_at_rank(0)
        .receive_vec_with_tag::<u8>(TAG_ASSIGNMENT);
    let rank = replaced_rank_of(&assignment)?;
    // Keyed by the rank replaced, as the old ranks are by theirs; the state follows.
    let comm = merged
        .split_by_color_with_key(Color::with_value(0), rank as i32)
        .ok_or(MigrateError::Protocol(
            "the new communicator excludes a new process",
        ))?;
    crate::migrate::timeline::step("new: new communicator made");
    wait_for_message(&merged, rank as i32, TAG_STATE_LAYOUT);
    let (layout, _) = merged
        .process_at_rank(rank as i32)
        .receive_vec_with_tag::<u64>(TAG_STATE_LAYOUT);
    let state = receive_parts(&merged, rank as i32, &layout, buffer)?;
    merged
        .process_at_rank(rank as i32)
        .send_with_tag(&1u8, TAG_STATE_RECEIVED);
    crate::migrate::timeline::step("new: state received");
    drop(merged);
    if comm.rank() as usize != rank {
        return Err(MigrateError::Protocol(
            "the new process did not get the replaced rank's number",
        ));
    }
    Ok(Arrival {
        comm,
        assignment,
        state,
    })
}

/// Memory made ready ([`StateBuffer::prefaulted`]) to receive a state of `size` bytes
/// into: a little more, as the counters go first and a state may grow a little
/// meanwhile.
pub fn state_buffer(size: u64) -> StateBuffer {
    let size = usize::try_from(size).unwrap_or(0);
    StateBuffer::prefaulted(size.saturating_add(size / 16 + STATE_SLACK))
}

/// The tag of the first message old rank 0 sends on `merged`, once it is there; looked
/// for every [`BRIDGE_POLL`], so that a process waiting for a background spawn to be
/// joined sleeps instead of spinning in MPI's progress loop.
fn wait_for_rank_zero(merged: &SimpleCommunicator) -> i32 {
    let root = merged.process_at_rank(0);
    loop {
        if let Some(status) = root.immediate_probe() {
            return status.tag();
        }
        std::thread::sleep(BRIDGE_POLL);
    }
}

/// A new process of a background spawn, `bridge` being its merge with old rank 0:
/// receives old rank 0's word and, told to join, meets every old rank; returns the
/// merge of old ranks (low) and new processes (high), as in a blocking spawn.
fn join_old_ranks(bridge: SimpleCommunicator) -> Result<SimpleCommunicator, MigrateError> {
    let (word, _) = bridge.process_at_rank(0).receive_with_tag::<u8>(TAG_BRIDGE);
    if word != BridgeWord::Join as u8 {
        free_comm(Some(bridge));
        return Err(MigrateError::Dismissed);
    }
    let world = SimpleCommunicator::world();
    // SAFETY: reading a predefined handle.
    let mut inter = unsafe { ffi::RSMPI_COMM_NULL };
    // SAFETY: valid communicators; this process's world holds the new processes, whose
    // leader (world rank 0, bridge rank 1) reaches old rank 0 as bridge rank 0.
    let rc = unsafe {
        ffi::MPI_Intercomm_create(world.as_raw(), 0, bridge.as_raw(), 0, TAG_JOIN, &mut inter)
    };
    free_comm(Some(bridge));
    if rc != ffi::MPI_SUCCESS as c_int {
        return Err(MigrateError::Protocol(
            "MPI_Intercomm_create with the old ranks failed",
        ));
    }
    // SAFETY: MPI returned a valid intercommunicator.
    let inter = unsafe { InterCommunicator::try_from_raw(inter) }.ok_or(MigrateError::Protocol(
        "MPI_Intercomm_create returned no communicator",
    ))?;
    let merged = inter.merge(MergeOrder::High);
    free_intercomm(inter);
    Ok(merged)
}

/// Returns once a message from `source` with `tag` is there to receive (its status),
/// looking every [`EXCHANGE_POLL`] instead of spinning in a blocking receive.
fn wait_for_message(comm: &SimpleCommunicator, source: i32, tag: i32) -> Status {
    let process = comm.process_at_rank(source);
    loop {
        if let Some(status) = process.immediate_probe_with_tag(tag) {
            return status;
        }
        std::thread::sleep(EXCHANGE_POLL);
    }
}

/// Receives the parts of the state message from `source` one after the other into
/// `buffer`, as `layout` ([`StateMessage::layout`]) says: starting that many bytes into
/// a page, each part after the one before. The buffer's memory is used when it is
/// large enough (made ready beforehand, see [`StateBuffer::prefaulted`]).
fn receive_parts(
    comm: &SimpleCommunicator,
    source: i32,
    layout: &[u64],
    mut buffer: StateBuffer,
) -> Result<StateBuffer, MigrateError> {
    let [in_page, parts @ ..] = layout else {
        return Err(MigrateError::Protocol(
            "the state's layout message is empty",
        ));
    };
    let lengths: Vec<usize> = parts
        .iter()
        .map(|&len| usize::try_from(len).unwrap_or(usize::MAX))
        .collect();
    let total = lengths
        .iter()
        .try_fold(0usize, |sum, &len| sum.checked_add(len))
        .ok_or(MigrateError::Protocol(
            "the state's parts add up past memory",
        ))?;
    let in_page = usize::try_from(*in_page).unwrap_or(0);
    let window = buffer.receive_window(total, in_page);
    if window.len() != total {
        return Err(MigrateError::Protocol(
            "no memory could be mapped for the state received",
        ));
    }
    let mut rest = window;
    for len in lengths {
        let (part, after) = rest.split_at_mut(len);
        wait_for_message(comm, source, TAG_STATE);
        comm.process_at_rank(source)
            .receive_into_with_tag(part, TAG_STATE);
        rest = after;
    }
    Ok(buffer)
}

/// The largest of every rank's `value` over `comm` (`MPI_Iallreduce`), waited for
/// sleeping [`EXCHANGE_POLL`] between looks: the ranks that have nothing to do while
/// others work (the leaving ranks serialise their state) leave them the CPUs of an
/// oversubscribed node. Collective.
pub fn largest_without_spinning(comm: &SimpleCommunicator, value: u64) -> u64 {
    let mut largest = 0u64;
    // SAFETY: reading a predefined handle.
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: one u64 in each buffer, both alive until the request is complete (it is
    // waited for below); a valid communicator and out-parameter.
    unsafe {
        ffi::MPI_Iallreduce(
            (&value as *const u64).cast(),
            (&mut largest as *mut u64).cast(),
            1,
            ffi::RSMPI_UINT64_T,
            ffi::RSMPI_MAX,
            comm.as_raw(),
            &mut request,
        )
    };
    wait_sleeping(request, EXCHANGE_POLL);
    largest
}

/// A barrier over `comm` (`MPI_Ibarrier`) waited for sleeping [`BRIDGE_POLL`] between
/// looks: processes that wait for others to start take no CPU meanwhile.
pub fn barrier_without_spinning(comm: &SimpleCommunicator) {
    // SAFETY: reading a predefined handle.
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    // SAFETY: a valid communicator and out-parameter.
    unsafe { ffi::MPI_Ibarrier(comm.as_raw(), &mut request) };
    wait_sleeping(request, BRIDGE_POLL);
}
