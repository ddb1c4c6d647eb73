//! The checkpoint context: decides when to save, saves in the background, commits
//! epochs collectively and restores at restart.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::collective::{Collective, LocalCollective};
use super::config::{CheckpointConfig, Interval};
use super::epoch::{self, CommitMarker};
use super::error::CheckpointError;
use super::job_dir;
use super::levels::{Level, NodeLevel, PartnerTransfer};
use super::restore::{self, Loaded, LocalFinder};
use super::storage::{self, FORMAT_VERSION, FileHeader, HEADER_LEN};
use super::thread_owner::ThreadOwner;
use super::writer::{CopyFile, WriteJob, WriteOutcome, Writer};

/// Delay from a save to the first collective check of its write (time interval
/// mode); each further check while the write goes on waits twice as long as the one
/// before, up to [`COMMIT_CHECK_MAX`]. An epoch is so committed at most about twice its
/// write's time (or [`COMMIT_CHECK_MAX`]) after its save, for a number of checks that
/// grows with the logarithm of the write's time.
pub const COMMIT_CHECK_FIRST: Duration = Duration::from_millis(10);

/// Longest delay between two collective checks of a write in flight (time interval
/// mode; see [`COMMIT_CHECK_FIRST`]).
pub const COMMIT_CHECK_MAX: Duration = Duration::from_secs(1);

/// Checkpoint/restart state of one rank.
///
/// Build one per rank with the same configuration, restore (or create) the state
/// with [`CheckpointContext::restore_or`], call [`crate::checkpoint!`] at a safe point
/// of the main loop, and [`CheckpointContext::finalize`] at the end. All ranks must
/// make the same sequence of calls: the context's collective steps rely on it.
///
/// ```
/// use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, LocalCollective};
/// # fn main() -> Result<(), rankmig::checkpoint::CheckpointError> {
/// # let tmp = tempfile::tempdir().unwrap();
/// let cfg = CheckpointConfig::new(tmp.path()).job("doc").every(10);
/// let mut ctx = CheckpointContext::new(cfg, LocalCollective)?;
/// let mut state: (u64, Vec<f64>) = ctx.restore_or(|| (0, vec![0.0; 100]))?;
/// while state.0 < 25 {
///     state.1[0] += 1.0;
///     state.0 += 1;
///     rankmig::checkpoint!(ctx, state);
/// }
/// ctx.finalize()?;
/// assert_eq!(ctx.last_committed(), Some(2));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CheckpointContext<C: Collective = LocalCollective> {
    config: CheckpointConfig,
    /// This job's own sub-directory of the checkpoint directory: its epochs and
    /// spare files (see [`job_dir`]).
    epochs_dir: PathBuf,
    coll: C,
    calls: u64,
    next_event: u64,
    last_save_call: u64,
    last_save_time: Instant,
    rate_sample: Option<(u64, u64)>,
    next_epoch: u64,
    pending: Option<u64>,
    /// Collective checks of the write in flight so far (spaces the next one).
    commit_checks: u32,
    outcome: Option<WriteOutcome>,
    /// The partner copies of the save in flight on their way, and the channel that
    /// hands them to the writer thread once received. Declared before `writer`: it is
    /// dropped first, so a writer thread waiting for the copies is let go before the
    /// writer's drop joins it.
    partner: Option<CopiesOnTheirWay<C::Exchange>>,
    writer: Writer,
    restored: Option<u64>,
    committed: Option<u64>,
    notes: Vec<String>,
    /// The thread that created the context: `checkpoint!` calls belong there
    /// ([`super::thread_owner`]).
    owner: ThreadOwner,
    /// The node-local level, with [`CheckpointConfig::local`] ([`super::levels`]).
    node: Option<NodeLevel>,
    /// The level the state was restored from.
    restored_level: Option<Level>,
}

/// The partner copies of the save in flight ([`NodeLevel::start_partner_copies`]), and
/// the channel that hands them to the writer thread, which waits for them after this
/// rank's own file ([`WriteJob::late_copies`]).
#[derive(Debug)]
struct CopiesOnTheirWay<E> {
    transfer: PartnerTransfer<E>,
    to_writer: Sender<Vec<CopyFile>>,
}

/// A rank's checkpoint schedule and epoch counters, handed to the process that replaces
/// it when it migrates, so every rank keeps saving at the same calls.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Handover {
    /// `checkpoint!` calls so far.
    pub calls: u64,
    /// Call at which the slow path runs next.
    pub next_event: u64,
    /// Call of the last save.
    pub last_save_call: u64,
    /// Agreed (calls, nanoseconds) rate sample of the time interval mode.
    pub rate_sample: Option<(u64, u64)>,
    /// Next epoch number.
    pub next_epoch: u64,
    /// Epoch restored from.
    pub restored: Option<u64>,
    /// Newest committed epoch.
    pub committed: Option<u64>,
}

/// What the ranks agreed on at a check: whether every rank's write is done, the
/// highest failing rank + 1 (0 if none), and the longest time since the last save.
struct Agreed {
    all_done: bool,
    failed: u64,
    elapsed_ns: u64,
}

impl<C: Collective> CheckpointContext<C> {
    /// Builds the context; collective (every rank calls it).
    ///
    /// Creates the directory (mode 0700) and numbers the next epoch after the
    /// highest one any rank sees, so an old epoch is never overwritten. Refuses an
    /// empty directory path, a directory other users may write into (unless
    /// [`CheckpointConfig::allow_shared_dir`]) and an epoch number with no successor.
    pub fn new(config: CheckpointConfig, coll: C) -> Result<Self, CheckpointError> {
        let epochs_dir = job_dir::job_epochs_dir(&config.dir, &config.job);
        let host = coll.host_name();
        let local = config
            .validate()
            .and_then(|()| prepare_dirs(&config, config.allow_shared_dir, &epochs_dir))
            .and_then(|()| NodeLevel::open(&config, &host, config.allow_shared_dir, &epochs_dir))
            .and_then(|node| {
                let on_node = node.as_ref().map(NodeLevel::max_epoch).transpose()?;
                let max = epoch::max_epoch(&epochs_dir)?.max(on_node.unwrap_or(0));
                Ok((node, max))
            });
        let (node, max_here) =
            restore::agree(&coll, local, "open the checkpoint directory", &config.dir)?;
        let mut a = [max_here];
        coll.all_max(&mut a);
        let next_epoch = epoch::next_epoch(&epochs_dir, a[0])?;
        let mut ctx = Self {
            config,
            epochs_dir,
            coll,
            calls: 0,
            next_event: 0,
            last_save_call: 0,
            last_save_time: Instant::now(),
            rate_sample: None,
            next_epoch,
            pending: None,
            commit_checks: 0,
            outcome: None,
            partner: None,
            writer: Writer::new(),
            restored: None,
            committed: None,
            notes: Vec::new(),
            owner: ThreadOwner::current(),
            node,
            restored_level: None,
        };
        ctx.schedule_after_save();
        Ok(ctx)
    }

    /// Builds the context of a process that replaces a migrated rank, from the
    /// [`Handover`] of the rank it replaces. Not collective: the other ranks keep their
    /// contexts. The handover must have been taken with no write in flight (after
    /// [`CheckpointContext::finalize`]).
    pub fn adopt(
        config: CheckpointConfig,
        coll: C,
        handover: &Handover,
    ) -> Result<Self, CheckpointError> {
        config.validate()?;
        // The migration runtime rebuilds the configuration of a replacement process
        // from its own settings, so the environment's opt-in counts here too.
        let allow_shared = config.allow_shared_dir
            || std::env::var(super::config::ENV_ALLOW_SHARED_DIR).is_ok_and(|v| v.trim() == "1");
        let epochs_dir = job_dir::job_epochs_dir(&config.dir, &config.job);
        prepare_dirs(&config, allow_shared, &epochs_dir)?;
        let node = NodeLevel::open(&config, &coll.host_name(), allow_shared, &epochs_dir)?;
        Ok(Self {
            config,
            epochs_dir,
            coll,
            calls: handover.calls,
            next_event: handover.next_event,
            last_save_call: handover.last_save_call,
            last_save_time: Instant::now(),
            rate_sample: handover.rate_sample,
            next_epoch: handover.next_epoch,
            pending: None,
            commit_checks: 0,
            outcome: None,
            partner: None,
            writer: Writer::new(),
            restored: handover.restored,
            committed: handover.committed,
            notes: Vec::new(),
            owner: ThreadOwner::current(),
            node,
            restored_level: None,
        })
    }

    /// The schedule and epoch counters a replacement process needs to continue this
    /// rank's checkpoints (see [`CheckpointContext::adopt`]). Call it after
    /// [`CheckpointContext::finalize`], when no write is in flight.
    pub fn handover(&self) -> Handover {
        Handover {
            calls: self.calls,
            next_event: self.next_event,
            last_save_call: self.last_save_call,
            rate_sample: self.rate_sample,
            next_epoch: self.next_epoch,
            restored: self.restored,
            committed: self.committed,
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// The collective in use.
    pub fn collective(&self) -> &C {
        &self.coll
    }

    /// Mutable access to the collective, e.g. to replace an MPI communicator.
    pub fn collective_mut(&mut self) -> &mut C {
        &mut self.coll
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.coll.rank()
    }

    /// Number of `checkpoint!` calls so far (continued from the checkpoint after a
    /// restart).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Epoch restored from, if the state came from a checkpoint.
    pub fn restored_epoch(&self) -> Option<u64> {
        self.restored
    }

    /// The level the state was restored from: node-local files, partner copies or the
    /// shared directory ([`super::levels`]).
    pub fn restored_level(&self) -> Option<Level> {
        self.restored_level
    }

    /// Newest epoch committed by this context.
    pub fn last_committed(&self) -> Option<u64> {
        self.committed
    }

    /// Why epochs were skipped at restart, or left in place by retention or by the
    /// discarding of newer epochs at restart, one line each (this rank's view).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Returns the saved state when restarting (`restart` set, e.g.
    /// `RANKMIG_RESTART=1`), else `fresh()`. Collective.
    ///
    /// At restart the ranks agree on the newest committed epoch whose files verify on
    /// every rank; damaged epochs are skipped. It is an error if none is left, or if
    /// the newest committed epoch belongs to another job, another rank count or a
    /// newer format.
    pub fn restore_or<T, F>(&mut self, fresh: F) -> Result<T, CheckpointError>
    where
        T: DeserializeOwned,
        F: FnOnce() -> T,
    {
        if self.config.restart {
            self.restore()
        } else {
            Ok(fresh())
        }
    }

    /// Restores the newest epoch valid on every rank (see
    /// [`CheckpointContext::restore_or`]). Collective.
    ///
    /// The ranks agree on the newest epoch whose files' headers check everywhere; each
    /// then reads, decodes and verifies its file in one pass ([`super::payload::load`]: large
    /// blocks such as [`super::bulk`] vectors are read straight into their memory). If
    /// that file is damaged or unreadable on some rank, every rank drops the epoch
    /// and they agree on an older one; the state is returned only from a file whose
    /// checksum verified.
    pub fn restore<T: DeserializeOwned>(&mut self) -> Result<T, CheckpointError> {
        if let Some(mut node) = self.node.take() {
            let mut notes = Vec::new();
            let found = node.restore::<T, C>(&self.coll, &self.config.job, &mut notes);
            self.node = Some(node);
            self.note(notes);
            if let Some(found) = found? {
                self.restored_at(found.epoch, found.calls, found.level);
                return Ok(found.state);
            }
        }
        self.restore_shared()
    }

    /// Restores from the shared directory ([`CheckpointContext::restore`]). Collective.
    fn restore_shared<T: DeserializeOwned>(&mut self) -> Result<T, CheckpointError> {
        let dir = self.epochs_dir.clone();
        let (rank, ranks) = (self.coll.rank(), self.coll.size());
        let finder = LocalFinder::new(&dir, &self.config.job, rank, ranks);
        let mut finder = restore::agree(&self.coll, finder, "list the checkpoint directory", &dir)?;
        let mut bound = u64::MAX;
        let (epoch, calls, state) = loop {
            let agreed = restore::agree_on_epoch_at_most(&self.coll, &mut finder, &dir, bound);
            let cand = match agreed {
                Ok(cand) => cand,
                Err(e) => {
                    self.notes.append(&mut finder.notes);
                    return Err(self.explain_missing_checkpoint(e));
                }
            };
            let epoch = cand.epoch;
            let opened = Ok((cand.file, cand.header));
            match restore::load_agreed::<T, C>(&self.coll, opened, &cand.path, &dir) {
                Ok(Loaded::State(state, calls)) => break (epoch, calls, state),
                Ok(Loaded::Skipped(here)) => {
                    if let Some(e) = here {
                        finder.reject(epoch, &e);
                    }
                    bound = epoch.saturating_sub(1);
                }
                Err(e) => {
                    self.notes.append(&mut finder.notes);
                    return Err(e);
                }
            }
        };
        self.notes.append(&mut finder.notes);
        self.discard_newer(epoch, finder.skipped_unreadable)?;
        self.restored_at(epoch, calls, Level::Shared);
        Ok(state)
    }

    /// Continues from epoch `epoch`, saved at call `calls`, restored from `level`.
    fn restored_at(&mut self, epoch: u64, calls: u64, level: Level) {
        if self.coll.rank() == 0 {
            log::info!("checkpoint: restored epoch {epoch} from the {level}");
        }
        self.restored = Some(epoch);
        self.restored_level = Some(level);
        self.calls = calls;
        self.last_save_call = self.calls;
        self.last_save_time = Instant::now();
        self.rate_sample = None;
        self.schedule_after_save();
    }

    /// Rank 0 removes this job's epochs newer than the restored one (they are damaged
    /// or incomplete somewhere), unless some rank skipped one as unreadable rather
    /// than damaged: then nothing is removed. Collective.
    fn discard_newer(
        &mut self,
        restored: u64,
        unreadable_here: bool,
    ) -> Result<(), CheckpointError> {
        let mut a = [u64::from(unreadable_here)];
        self.coll.all_max(&mut a);
        if a[0] != 0 {
            self.note(vec![format!(
                "epochs newer than {restored} kept: unreadable on some rank, not damaged"
            )]);
            return Ok(());
        }
        let (job, ranks) = (self.config.job.clone(), self.coll.size());
        let dir = self.epochs_dir.clone();
        let local = if self.coll.rank() == 0 {
            epoch::list_epochs(&dir).and_then(|list| {
                let mut left = Vec::new();
                for e in list.iter().filter(|e| e.epoch > restored) {
                    let why = match epoch::owner(e, &job, ranks) {
                        epoch::Owner::NotThisJob(why) => why,
                        epoch::Owner::ThisJob => match epoch::retire_epoch(&dir, e)? {
                            epoch::Retired::Removed => continue,
                            epoch::Retired::Left(why) => why,
                        },
                    };
                    left.push(format!("kept newer epoch {}: {why}", e.epoch));
                }
                Ok(left)
            })
        } else {
            Ok(Vec::new())
        };
        let left = restore::agree(&self.coll, local, "discard damaged epochs", &dir)?;
        self.note(left);
        Ok(())
    }

    /// Counts a `checkpoint!` call; `true` when the slow path
    /// ([`CheckpointContext::event`]) must run. Used by the macro. A call from a thread
    /// other than the context's, or inside an OpenMP parallel region, is not counted
    /// and goes to the slow path, which refuses it
    /// ([`CheckpointError::Misplaced`]).
    #[doc(hidden)]
    #[inline(always)]
    pub fn tick(&mut self) -> bool {
        if !self.in_place() {
            return true;
        }
        self.count_call()
    }

    /// [`CheckpointContext::tick`] without the thread check, for a caller that made it
    /// ([`CheckpointContext::in_place`]).
    #[inline(always)]
    pub(crate) fn count_call(&mut self) -> bool {
        self.calls += 1;
        self.calls >= self.next_event
    }

    /// True when a call made now belongs here: on the thread that created the context,
    /// outside any OpenMP parallel region.
    #[inline(always)]
    pub(crate) fn in_place(&self) -> bool {
        self.owner.in_place()
    }

    /// `Ok` when a `checkpoint!` call made now belongs here: on the thread that created
    /// the context, outside any OpenMP parallel region; else
    /// [`CheckpointError::Misplaced`], which names both threads.
    pub fn check_thread(&self) -> Result<(), CheckpointError> {
        self.owner.check()
    }

    /// Counts a call and saves `state` if a save is due. Collective. Same as
    /// [`crate::checkpoint!`] but returns the error instead of propagating it.
    #[inline]
    pub fn checkpoint<T: Serialize>(&mut self, state: &T) -> Result<(), CheckpointError> {
        if self.tick() {
            self.event(state)
        } else {
            Ok(())
        }
    }

    /// The slow path of a `checkpoint!` call: a save, or a collective check of the
    /// write in flight and of the clock. Used by the macro.
    #[doc(hidden)]
    #[inline(never)]
    #[cold]
    pub fn event<T: Serialize>(&mut self, state: &T) -> Result<(), CheckpointError> {
        // Before any collective step: a misplaced call would wait for the other
        // ranks' calls from a thread MPI does not serve, or save a state other
        // threads are changing.
        self.owner.check()?;
        match self.config.interval {
            Interval::Calls(n) => self.calls_event(state, n),
            Interval::Time(d) => self.time_event(state, d),
        }
    }

    fn calls_event<T: Serialize>(&mut self, state: &T, n: u64) -> Result<(), CheckpointError> {
        if self.calls % n == 0 {
            self.save(state)
        } else {
            let ag = self.exchange(0);
            if ag.all_done {
                self.complete_pending(ag.failed)?;
            }
            self.settle_flush(false)?;
            self.schedule_after_save();
            Ok(())
        }
    }

    fn time_event<T: Serialize>(&mut self, state: &T, d: Duration) -> Result<(), CheckpointError> {
        let elapsed = u64::try_from(self.last_save_time.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let ag = self.exchange(elapsed);
        if ag.all_done {
            self.complete_pending(ag.failed)?;
        }
        self.settle_flush(false)?;
        let since = self.calls - self.last_save_call;
        if since > 0 && ag.elapsed_ns > 0 {
            self.rate_sample = Some((since, ag.elapsed_ns));
        }
        let interval = self.due_ns(d);
        if ag.elapsed_ns >= interval {
            self.save(state)
        } else {
            let wait = self.next_check_ns(interval - ag.elapsed_ns);
            self.next_event = self.calls + self.time_step(wait);
            Ok(())
        }
    }

    /// Nanoseconds from the last save (or the start) to the next save: the interval
    /// `d`, or [`CheckpointConfig::first`] when shorter and no epoch was saved or
    /// restored yet. Depends on agreed values only.
    fn due_ns(&self, d: Duration) -> u64 {
        let never_saved =
            self.committed.is_none() && self.restored.is_none() && self.pending.is_none();
        let due = match self.config.first {
            Some(first) if never_saved => d.min(first),
            _ => d,
        };
        u64::try_from(due.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Nanoseconds to the next time check when the next save is `to_save_ns` away:
    /// sooner while a write is in flight, so that its epoch is committed soon after
    /// every rank's write ended ([`COMMIT_CHECK_FIRST`], doubling up to
    /// [`COMMIT_CHECK_MAX`]). Counts the check. Depends on agreed values only.
    fn next_check_ns(&mut self, to_save_ns: u64) -> u64 {
        if !self.in_flight() {
            return to_save_ns;
        }
        let first = u64::try_from(COMMIT_CHECK_FIRST.as_nanos()).unwrap_or(u64::MAX);
        let max = u64::try_from(COMMIT_CHECK_MAX.as_nanos()).unwrap_or(u64::MAX);
        let delay = first
            .saturating_mul(1u64 << self.commit_checks.min(32))
            .min(max);
        self.commit_checks = self.commit_checks.saturating_add(1);
        to_save_ns.min(delay)
    }

    /// Calls until the next time check: the calls expected in `remaining_ns` at the
    /// agreed rate, at least 1 and at most twice the calls observed (so a bad
    /// estimate is corrected geometrically). Depends on agreed values only, so every
    /// rank computes the same.
    fn time_step(&self, remaining_ns: u64) -> u64 {
        let Some((calls, ns)) = self.rate_sample else {
            return 1;
        };
        let est = u128::from(remaining_ns) * u128::from(calls) / u128::from(ns.max(1));
        let est = u64::try_from(est).unwrap_or(u64::MAX);
        est.clamp(1, calls.saturating_mul(2).max(1))
    }

    /// Forces a save of `state` now, whatever the interval. Collective.
    pub fn save_now<T: Serialize>(&mut self, state: &T) -> Result<(), CheckpointError> {
        self.save(state)
    }

    /// True while this rank's write of the last save is still going on (not
    /// collective; the epoch is committed at the next collective check, soon after
    /// every rank's write ended).
    pub fn writing(&mut self) -> bool {
        self.advance_partner_copies(false);
        if self.pending.is_some() && self.outcome.is_none() && self.writer.poll() {
            self.outcome = self.writer.wait();
        }
        self.pending.is_some() && self.outcome.is_none()
    }

    /// Starts making the buffer the next save is copied into ready for a state of
    /// `state_bytes` serialised bytes (`bincode::serialized_size`) on a thread of its
    /// own (its memory mapped, page by page), so that the save that follows, once
    /// [`CheckpointContext::warming`] is false, copies at memory speed. Not collective.
    pub fn warm_buffer(&mut self, state_bytes: u64) {
        let bytes = usize::try_from(state_bytes).unwrap_or(usize::MAX);
        self.writer.warm(HEADER_LEN.saturating_add(bytes));
    }

    /// Whether the buffer asked for with [`CheckpointContext::warm_buffer`] is
    /// still being made ready (not collective).
    pub fn warming(&self) -> bool {
        self.writer.warming()
    }

    /// Takes the save buffer, for a copy of the state that is not a checkpoint (the
    /// state message of a rank that moves): the last save's, whose memory is mapped
    /// already; empty when a write has it or no save was made. The next save makes
    /// its own.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        let mut buf = self.writer.take_buffer();
        buf.clear();
        buf
    }

    /// True when a save is written (or being written) but its epoch not yet committed.
    pub fn uncommitted(&self) -> bool {
        self.pending.is_some()
    }

    /// Waits for the last write, commits its epoch, and stops the writer. Collective;
    /// call it once after the main loop.
    /// With a node-local level, also waits for the flush to the shared directory in
    /// flight and commits it there.
    pub fn finalize(&mut self) -> Result<(), CheckpointError> {
        self.wait_and_commit()?;
        self.settle_flush(true)
    }

    /// With a node-local level: agrees on the flush to the shared directory in flight
    /// (waiting for this rank's with `wait`) and, once every rank's copy is written,
    /// commits its epoch in the shared directory. Collective (every rank takes part,
    /// flush or not); nothing without a node-local level.
    fn settle_flush(&mut self, wait: bool) -> Result<(), CheckpointError> {
        let rank = self.coll.rank();
        let Some(node) = self.node.as_mut() else {
            return Ok(());
        };
        let mut a = node.flush_state(rank, wait);
        self.coll.all_max(&mut a);
        if a[0] != 0 {
            return Ok(());
        }
        let (flushed, note) = node.end_flush(a[1]);
        self.note(note.into_iter().collect());
        if let Some(epoch) = flushed {
            let committed = if rank == 0 {
                self.commit(epoch)
            } else {
                Ok(Vec::new())
            };
            let left = restore::agree(
                &self.coll,
                committed,
                "commit the flushed epoch",
                &self.epochs_dir,
            )?;
            self.note(left);
        }
        Ok(())
    }

    /// The directory this job's saves go to: the node-local one, else the shared one.
    fn save_dir(&self) -> &Path {
        self.node
            .as_ref()
            .map_or(&self.epochs_dir, NodeLevel::epochs_dir)
    }

    fn save<T: Serialize>(&mut self, state: &T) -> Result<(), CheckpointError> {
        self.wait_and_commit()?;
        self.settle_flush(false)?;
        let epoch = self.next_epoch;
        let following = epoch::next_epoch(&self.epochs_dir, epoch)?;
        let dir = self.save_dir().join(epoch::epoch_dir_name(epoch));
        let name = epoch::rank_file_name(self.coll.rank());
        let mut buf = self.writer.take_buffer();
        buf.clear();
        buf.resize(HEADER_LEN, 0);
        if let Err(source) = bincode::serialize_into(&mut buf, state) {
            return Err(CheckpointError::Serde {
                path: dir.join(name),
                source,
            });
        }
        let header = self.header(epoch);
        let spare = Some(epoch::spare_path(self.save_dir(), self.coll.rank()));
        let late_copies = match self.node.as_mut() {
            Some(node) => {
                let (transfer, note) = node.start_partner_copies(&self.coll, &buf, &header);
                self.note(note.into_iter().collect());
                let (tx, rx) = mpsc::channel();
                self.partner = Some(CopiesOnTheirWay {
                    transfer,
                    to_writer: tx,
                });
                Some(rx)
            }
            None => None,
        };
        self.writer.submit(WriteJob {
            dir,
            name,
            header,
            buf,
            spare,
            late_copies,
            source: None,
            fallback: self
                .node
                .as_ref()
                .map(|_| self.epochs_dir.join(epoch::epoch_dir_name(epoch))),
        })?;
        self.pending = Some(epoch);
        self.commit_checks = 0;
        self.next_epoch = following;
        self.last_save_call = self.calls;
        self.last_save_time = Instant::now();
        self.schedule_after_save();
        Ok(())
    }

    fn header(&self, epoch: u64) -> FileHeader {
        FileHeader {
            version: FORMAT_VERSION,
            rank: self.coll.rank(),
            ranks: self.coll.size(),
            epoch,
            calls: self.calls,
            payload_len: 0,
            checksum: 0,
            job: self.config.job.clone(),
        }
    }

    /// Whether a write of this job's, or a flush of it to the shared directory, is in
    /// flight: the collective checks then come sooner, so that its epoch is committed
    /// soon after it is written. Agreed on every rank.
    fn in_flight(&self) -> bool {
        self.pending.is_some() || self.node.as_ref().is_some_and(|n| n.flushing().is_some())
    }

    /// Sets the next call needing the slow path after a save (or at start).
    fn schedule_after_save(&mut self) {
        self.next_event = match self.config.interval {
            Interval::Calls(n) => {
                let next_save = (self.calls / n + 1).saturating_mul(n);
                if self.in_flight() {
                    // Checks 1, 2, 4, ... calls apart while the write (or the flush to
                    // the shared directory) goes on.
                    let step = 1u64 << self.commit_checks.min(63);
                    self.commit_checks = self.commit_checks.saturating_add(1);
                    self.calls.saturating_add(step).min(next_save)
                } else {
                    next_save
                }
            }
            Interval::Time(d) => {
                let interval = self.due_ns(d);
                let wait = self.next_check_ns(interval);
                self.calls + self.time_step(wait)
            }
        };
    }

    /// Collective check: takes this rank's write outcome if ready, then agrees.
    fn exchange(&mut self, elapsed_ns: u64) -> Agreed {
        self.advance_partner_copies(false);
        if self.pending.is_some() && self.outcome.is_none() && self.writer.poll() {
            self.outcome = self.writer.wait();
        }
        let not_done = u64::from(self.pending.is_some() && self.outcome.is_none());
        let mut a = [not_done, self.local_failed(), elapsed_ns];
        self.coll.all_max(&mut a);
        Agreed {
            all_done: a[0] == 0,
            failed: a[1],
            elapsed_ns: a[2],
        }
    }

    /// Hands the partner copies of the save in flight to the writer thread once their
    /// transfer has ended (waiting for it with `wait`), and keeps the send buffer for
    /// the next save. Not collective: the transfer advances inside MPI calls.
    fn advance_partner_copies(&mut self, wait: bool) {
        let Some(on_the_way) = self.partner.as_mut() else {
            return;
        };
        if !wait && !on_the_way.transfer.test() {
            return;
        }
        let Some(on_the_way) = self.partner.take() else {
            return;
        };
        let (copies, sent) = on_the_way.transfer.finish();
        // The writer thread may be gone, or not waiting (its own file failed): the
        // copies are then not kept, as its outcome says.
        let _ = on_the_way.to_writer.send(copies);
        if let Some(node) = self.node.as_mut() {
            sent.into_iter().for_each(|b| node.reuse_send_buffer(b));
        }
    }

    fn local_failed(&self) -> u64 {
        match &self.outcome {
            Some(o) if o.result.is_err() => u64::from(self.coll.rank()) + 1,
            _ => 0,
        }
    }

    /// Waits for this rank's write in flight, agrees on the outcome, commits.
    fn wait_and_commit(&mut self) -> Result<(), CheckpointError> {
        if self.pending.is_none() {
            return Ok(());
        }
        self.advance_partner_copies(true);
        if self.outcome.is_none() {
            self.outcome = self.writer.wait();
        }
        let mut a = [self.local_failed()];
        self.coll.all_max(&mut a);
        self.complete_pending(a[0])
    }

    /// With every rank's write finished: commits the pending epoch if none failed
    /// (`failed` = highest failing rank + 1, or 0). Collective.
    fn complete_pending(&mut self, failed: u64) -> Result<(), CheckpointError> {
        let Some(epoch) = self.pending.take() else {
            return Ok(());
        };
        let outcome = self.outcome.take();
        let (local, fell_back) = match outcome {
            Some(o) => {
                self.writer.recycle(o.buf);
                self.warn(o.notes);
                (o.result, o.fell_back)
            }
            None => (Err(CheckpointError::WriterGone), false),
        };
        if failed != 0 {
            local?;
            return Err(CheckpointError::EpochFailed {
                epoch,
                dir: self.epochs_dir.clone(),
                rank: failed - 1,
            });
        }
        let rank = self.coll.rank();
        if let Some(node) = &self.node {
            // A host whose node-local commit fails loses nothing: the epoch goes to the
            // shared directory whole, as when a save could not be written there.
            let (left, failed) = match node.commit(rank, &self.marker(epoch), self.config.keep) {
                Ok(left) => (left, false),
                Err(e) => {
                    let why = format!(
                        "epoch {epoch} not committed in the node-local directory ({e}): flushed to the shared directory"
                    );
                    self.warn(vec![why]);
                    (Vec::new(), true)
                }
            };
            self.note(left);
            self.committed = Some(epoch);
            return self.flush_if_due(epoch, fell_back, failed);
        }
        let committed = if rank == 0 {
            self.commit(epoch)
        } else {
            Ok(Vec::new())
        };
        let left = restore::agree(&self.coll, committed, "commit the epoch", &self.epochs_dir)?;
        self.note(left);
        self.committed = Some(epoch);
        Ok(())
    }

    /// With a node-local level, after `epoch` was committed: starts its flush to the
    /// shared directory when it is one of those flushed and none is in flight, or in any
    /// case when some rank's file went to the shared directory already (`fell_back`
    /// here) or some host could not commit it (`commit_failed` here), waiting first for
    /// the flush in flight: the shared directory then holds the whole epoch. Collective.
    fn flush_if_due(
        &mut self,
        epoch: u64,
        fell_back: bool,
        commit_failed: bool,
    ) -> Result<(), CheckpointError> {
        let mut a = [u64::from(fell_back || commit_failed)];
        self.coll.all_max(&mut a);
        if a[0] != 0 {
            self.settle_flush(true)?;
        }
        let rank = self.coll.rank();
        if let Some(node) = self.node.as_mut() {
            if a[0] != 0 || (node.flushes(epoch) && node.flushing().is_none()) {
                node.start_flush(rank, epoch, fell_back);
            }
        }
        Ok(())
    }

    /// The commit marker of `epoch` of this job.
    fn marker(&self, epoch: u64) -> CommitMarker {
        CommitMarker {
            version: FORMAT_VERSION,
            job: self.config.job.clone(),
            ranks: self.coll.size(),
            epoch,
        }
    }

    /// Rank 0: writes the commit marker of `epoch`, then applies retention. Returns
    /// why epochs retention would have removed were left alone.
    fn commit(&self, epoch: u64) -> Result<Vec<String>, CheckpointError> {
        let marker = self.marker(epoch);
        let dir = self.epochs_dir.join(epoch::epoch_dir_name(epoch));
        marker.write(&dir)?;
        let r = epoch::apply_retention(
            &self.epochs_dir,
            self.config.keep,
            epoch,
            &self.config.job,
            self.coll.size(),
        )?;
        Ok(r.left
            .into_iter()
            .map(|(e, why)| format!("retention left epoch {e} in place: {why}"))
            .collect())
    }

    /// Records notes: each new one is also printed once on standard error, since a
    /// left-alone epoch or directory entry is something the user must look at.
    fn note(&mut self, notes: Vec<String>) {
        self.record_notes(notes, log::Level::Info);
    }

    /// Records notes of something that went wrong without failing the save (a save that
    /// went to the shared directory instead, a partner copy not kept), each new one
    /// printed as a warning.
    fn warn(&mut self, notes: Vec<String>) {
        self.record_notes(notes, log::Level::Warn);
    }

    fn record_notes(&mut self, notes: Vec<String>, level: log::Level) {
        for n in notes {
            if !self.notes.contains(&n) {
                log::log!(level, "checkpoint: rank {}: {n}", self.coll.rank());
                self.notes.push(n);
            }
        }
    }

    /// Adds to a [`CheckpointError::NoCheckpoint`] what else the checkpoint directory
    /// holds: epochs of other job names, and epochs left directly in it by a rankmig
    /// from before job directories (not read, so as not to take another job's).
    fn explain_missing_checkpoint(&self, e: CheckpointError) -> CheckpointError {
        let CheckpointError::NoCheckpoint { dir, mut detail } = e else {
            return e;
        };
        let top = &self.config.dir;
        let old_layout = epoch::scan_epochs(top).map_or(0, |s| s.epochs.len());
        if old_layout > 0 {
            detail.push_str(&format!(
                "; {} holds {old_layout} epoch director(ies) directly (the layout before \
                 job directories), which are not read: to restart from them, move them \
                 into {} (mv {}/epoch-* {}/)",
                top.display(),
                self.epochs_dir.display(),
                top.display(),
                self.epochs_dir.display()
            ));
        }
        let others: Vec<String> = job_dir::scan_job_dirs(top)
            .map(|s| s.jobs)
            .unwrap_or_default()
            .into_iter()
            .filter(|j| j.job != self.config.job)
            .map(|j| format!("{:?}", j.job))
            .collect();
        if !others.is_empty() {
            detail.push_str(&format!(
                "; {} also holds checkpoints of job(s) {} (this job is {:?}; the job name \
                 is set with {})",
                top.display(),
                others.join(", "),
                self.config.job,
                super::config::ENV_JOB
            ));
        }
        CheckpointError::NoCheckpoint { dir, detail }
    }

    /// The checkpoint directory.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// This job's sub-directory of the checkpoint directory, which holds its epochs
    /// (`DIR/job-NAME`, see [`job_dir::job_dir_name`]).
    pub fn epochs_dir(&self) -> &Path {
        &self.epochs_dir
    }
}

/// Creates (or checks) the checkpoint directory and this job's sub-directory in it.
fn prepare_dirs(
    config: &CheckpointConfig,
    allow_shared: bool,
    epochs_dir: &Path,
) -> Result<(), CheckpointError> {
    if config.dir.as_os_str().is_empty() {
        return Err(CheckpointError::Config {
            name: super::config::ENV_DIR,
            value: String::new(),
            reason: "the checkpoint directory must not be empty",
        });
    }
    storage::prepare_dir(&config.dir, allow_shared)?;
    storage::ensure_own_subdir(epochs_dir)?;
    Ok(())
}

/// Saves the application state at a safe point if a save is due, else costs a few
/// nanoseconds. Propagates a [`CheckpointError`] with `?`, so the enclosing function
/// must return a `Result` whose error converts from it. Collective: every rank must
/// reach the same calls.
///
/// ```
/// use rankmig::checkpoint::{CheckpointConfig, CheckpointContext, CheckpointError, LocalCollective};
/// fn run(dir: &std::path::Path) -> Result<u64, CheckpointError> {
///     let mut ctx = CheckpointContext::new(CheckpointConfig::new(dir).job("m").every(4), LocalCollective)?;
///     let mut iter: u64 = ctx.restore_or(|| 0)?;
///     while iter < 10 {
///         iter += 1;
///         rankmig::checkpoint!(ctx, iter);
///     }
///     ctx.finalize()?;
///     Ok(iter)
/// }
/// # let tmp = tempfile::tempdir().unwrap();
/// assert_eq!(run(tmp.path()).unwrap(), 10);
/// ```
#[macro_export]
macro_rules! checkpoint {
    ($ctx:expr, $state:expr) => {
        if $ctx.tick() {
            $ctx.event(&$state)?;
        }
    };
}
