//! Checkpoint levels: a node-local directory first, a partner's copy on another host,
//! and the shared directory in the background (issue 53).
//!
//! With [`super::CheckpointConfig::local`] set, a save is written to this host's
//! node-local directory (`LOCAL/job-NAME/epoch-E/rank-R.ckpt`, `%h` in `LOCAL` replaced
//! by the host name), and the rank's serialised state also travels over MPI to its
//! partner ([`super::partner`]), whose writer thread stores it in *its* host's local
//! directory as `copy-R.ckpt` ([`epoch::copy_file_name`]). Once every rank's files are written,
//! the lowest rank of each host writes the epoch's commit marker there and prunes that
//! host's older epochs: the epoch is committed at the node level. Every
//! [`super::CheckpointConfig::flush_every`]-th epoch is then copied, file by file, to
//! the shared directory by a second background thread; rank 0 commits it there once
//! every rank's copy is written and checked.
//!
//! A restart takes the cheapest level that is whole ([`NodeLevel::restore`]): the
//! newest node-level epoch for which every rank's file is held by some rank (its own,
//! or a partner's copy that the holder sends it over MPI), unless the shared directory
//! holds a newer committed epoch.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::collective::{Collective, ExchangeInProgress};
use super::config::CheckpointConfig;
use super::epoch::{self, CommitMarker, EpochEntry};
use super::error::CheckpointError;
use super::partner::{self, PartnerMap};
use super::restore::{self, Loaded};
use super::storage::{self, Expected, FORMAT_VERSION, FileHeader, HEADER_LEN};
use super::writer::{CopyFile, WriteJob, WriteOutcome, Writer};
use crate::own_files;

/// Where a restored state came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Every rank read its own file from its host's node-local directory.
    Local,
    /// Some rank's file came from a partner's copy on another host.
    Partner,
    /// The shared checkpoint directory.
    Shared,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Local => "node-local",
            Self::Partner => "partner copies",
            Self::Shared => "shared directory",
        })
    }
}

/// A state restored from the node level.
pub struct NodeRestore<T> {
    /// The epoch.
    pub epoch: u64,
    /// `checkpoint!` calls at that epoch.
    pub calls: u64,
    /// The state.
    pub state: T,
    /// [`Level::Local`] or [`Level::Partner`].
    pub level: Level,
}

/// The partner copies of a save on their way ([`NodeLevel::start_partner_copies`]).
pub struct PartnerTransfer<E> {
    exchange: E,
    /// The ranks whose copies this rank receives, in the exchange's order.
    from: Vec<u32>,
    /// The header of this rank's own file of the save (its rank replaced in each copy).
    header: FileHeader,
}

impl<E> fmt::Debug for PartnerTransfer<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartnerTransfer")
            .field("from", &self.from)
            .field("epoch", &self.header.epoch)
            .finish_non_exhaustive()
    }
}

impl<E: ExchangeInProgress> PartnerTransfer<E> {
    /// Whether the transfer has ended; never blocks.
    pub fn test(&mut self) -> bool {
        self.exchange.test()
    }

    /// Waits for the transfer to end. Returns the copies received, as files for the
    /// writer thread, and the buffers sent, for reuse.
    pub fn finish(self) -> (Vec<CopyFile>, Vec<Vec<u8>>) {
        let done = self.exchange.finish();
        let header = self.header;
        let copies = self
            .from
            .iter()
            .zip(done.received)
            .map(|(&rank, buf)| CopyFile {
                name: epoch::copy_file_name(rank),
                header: FileHeader {
                    rank,
                    ..header.clone()
                },
                buf,
            })
            .collect();
        (copies, done.sent)
    }
}

/// This rank's node-local level: its directory, the partners of the last save, and the
/// flush to the shared directory in flight.
#[derive(Debug)]
pub struct NodeLevel {
    /// This job's sub-directory of this host's node-local directory.
    epochs_dir: PathBuf,
    /// This job's sub-directory of the shared directory.
    shared_dir: PathBuf,
    flush_every: u64,
    /// Hosts and partners as of the last save.
    partners: Option<PartnerMap>,
    flusher: Writer,
    /// Epoch being flushed, and its outcome once known.
    flushing: Option<u64>,
    flush_outcome: Option<WriteOutcome>,
    /// The buffer the last partner transfer sent, kept for the next one.
    send_buffer: Vec<u8>,
}

impl NodeLevel {
    /// This host's node-local directory for `config` (created mode 0700, checked as the
    /// shared one is), and this job's sub-directory in it; `None` without
    /// [`CheckpointConfig::local`]. Not collective.
    pub fn open(
        config: &CheckpointConfig,
        host: &str,
        allow_shared: bool,
        shared_dir: &Path,
    ) -> Result<Option<Self>, CheckpointError> {
        let Some(dir) = config.local_dir_on(host) else {
            return Ok(None);
        };
        storage::prepare_dir(&dir, allow_shared)?;
        let epochs_dir = super::job_dir::job_epochs_dir(&dir, &config.job);
        storage::ensure_own_subdir(&epochs_dir)?;
        Ok(Some(Self {
            epochs_dir,
            shared_dir: shared_dir.to_path_buf(),
            flush_every: config.flush_every,
            partners: None,
            flusher: Writer::new(),
            flushing: None,
            flush_outcome: None,
            send_buffer: Vec::new(),
        }))
    }

    /// This job's directory on this host.
    pub fn epochs_dir(&self) -> &Path {
        &self.epochs_dir
    }

    /// Highest epoch named in this host's directory (0 if none).
    pub fn max_epoch(&self) -> Result<u64, CheckpointError> {
        epoch::max_epoch(&self.epochs_dir)
    }

    /// Starts sending this rank's serialised state (`buf`, behind [`HEADER_LEN`]
    /// reserved bytes) to its partner and receiving the states of the ranks it keeps
    /// copies of ([`Collective::start_exchange`]): the transfer goes on while the
    /// application computes, and [`PartnerTransfer::finish`] gives the copies as files
    /// for the writer thread. The payload is copied into a send buffer kept for the
    /// next save, so the writer thread writes `buf` meanwhile. Collective: the ranks
    /// gather their hosts first, so the partners follow the ranks when they move. With
    /// every rank on one host there is no partner, and a note says so.
    pub fn start_partner_copies<C: Collective + ?Sized>(
        &mut self,
        coll: &C,
        buf: &[u8],
        header: &FileHeader,
    ) -> (PartnerTransfer<C::Exchange>, Option<String>) {
        let map = where_ranks_run(coll);
        let me = coll.rank();
        let sends: Vec<(u32, Vec<u8>)> = map
            .partner_of(me)
            .map(|p| {
                let mut out = std::mem::take(&mut self.send_buffer);
                out.clear();
                out.extend_from_slice(buf.get(HEADER_LEN..).unwrap_or_default());
                (p, out)
            })
            .into_iter()
            .collect();
        let from = map.keeps_copies_of(me);
        let exchange = coll.start_exchange(sends, &from, HEADER_LEN);
        let note = (map.host_count() < 2).then(|| {
            "every rank runs on one host: no partner copies (the node-local files alone are kept)"
                .to_owned()
        });
        self.partners = Some(map);
        let transfer = PartnerTransfer {
            exchange,
            from,
            header: header.clone(),
        };
        (transfer, note)
    }

    /// Keeps the send buffer of a finished [`PartnerTransfer`] for the next save.
    pub fn reuse_send_buffer(&mut self, buf: Vec<u8>) {
        if buf.capacity() >= self.send_buffer.capacity() {
            self.send_buffer = buf;
        }
    }

    /// Commits `marker`'s epoch at the node level on this host, if this rank is its
    /// host's lowest: writes the marker in the epoch's node-local directory and prunes
    /// the host's older epochs of this job, keeping `keep`. Returns why epochs were left
    /// in place. Not collective.
    pub fn commit(
        &self,
        rank: u32,
        marker: &CommitMarker,
        keep: usize,
    ) -> Result<Vec<String>, CheckpointError> {
        let leads = self
            .partners
            .as_ref()
            .is_none_or(|map| map.leads_its_host(rank));
        if !leads {
            return Ok(Vec::new());
        }
        let dir = self.epochs_dir.join(epoch::epoch_dir_name(marker.epoch));
        marker.write(&dir)?;
        let r = epoch::apply_retention(
            &self.epochs_dir,
            keep,
            marker.epoch,
            &marker.job,
            marker.ranks,
        )?;
        Ok(r.left
            .into_iter()
            .map(|(e, why)| format!("node-local retention left epoch {e} in place: {why}"))
            .collect())
    }

    /// Whether `epoch` is one the shared directory receives.
    pub fn flushes(&self, epoch: u64) -> bool {
        epoch % self.flush_every == 0
    }

    /// Starts copying this rank's node-local file of `epoch` to the shared directory on
    /// the flush thread; with `already_there` (the save went to the shared directory,
    /// [`WriteJob::fallback`]) there is nothing to copy. Not collective; at most one
    /// flush is in flight. A flush that cannot start counts as failed
    /// ([`NodeLevel::flush_state`]).
    pub fn start_flush(&mut self, rank: u32, epoch: u64, already_there: bool) {
        if already_there {
            self.flushing = Some(epoch);
            self.flush_outcome = Some(WriteOutcome {
                epoch,
                result: Ok(()),
                buf: Vec::new(),
                notes: Vec::new(),
                fell_back: false,
            });
            return;
        }
        let name = epoch::rank_file_name(rank);
        let source = self
            .epochs_dir
            .join(epoch::epoch_dir_name(epoch))
            .join(&name);
        let job = WriteJob {
            dir: self.shared_dir.join(epoch::epoch_dir_name(epoch)),
            name,
            header: FileHeader::default(),
            buf: Vec::new(),
            spare: Some(epoch::spare_path(&self.shared_dir, rank)),
            late_copies: None,
            source: Some(source),
            fallback: None,
        };
        self.flushing = Some(epoch);
        if let Err(e) = self.flusher.submit(job) {
            self.flush_outcome = Some(WriteOutcome {
                epoch,
                result: Err(e),
                buf: Vec::new(),
                notes: Vec::new(),
                fell_back: false,
            });
        }
    }

    /// The epoch being flushed, if any.
    pub fn flushing(&self) -> Option<u64> {
        self.flushing
    }

    /// This rank's flush as two numbers for an [`Collective::all_max`]: whether it is
    /// still going on, and this rank + 1 if it failed (else 0). `wait` blocks until it
    /// ends.
    pub fn flush_state(&mut self, rank: u32, wait: bool) -> [u64; 2] {
        if self.flushing.is_none() {
            return [0, 0];
        }
        if self.flush_outcome.is_none() && (wait || self.flusher.poll()) {
            self.flush_outcome = self.flusher.wait();
        }
        match &self.flush_outcome {
            None => [1, 0],
            Some(o) if o.result.is_err() => [0, u64::from(rank) + 1],
            Some(_) => [0, 0],
        }
    }

    /// Ends the flush once every rank's has ended (`failed`: highest failing rank + 1,
    /// or 0): returns the epoch to commit in the shared directory, or `None` with a note
    /// when some rank's copy failed (the node level still holds the epoch).
    pub fn end_flush(&mut self, failed: u64) -> (Option<u64>, Option<String>) {
        let epoch = self.flushing.take();
        let outcome = self.flush_outcome.take();
        let Some(epoch) = epoch else {
            return (None, None);
        };
        if failed == 0 {
            return (Some(epoch), None);
        }
        let why = match outcome.map(|o| o.result) {
            Some(Err(e)) => e.to_string(),
            _ => format!("rank {} could not copy its file", failed - 1),
        };
        (
            None,
            Some(format!(
                "epoch {epoch} was not flushed to {} ({why}); the node-local level keeps it",
                self.shared_dir.display()
            )),
        )
    }

    /// Restores the newest node-level epoch that is whole, unless the shared directory
    /// holds a newer committed one (`Ok(None)`: restore from the shared directory).
    /// Collective.
    ///
    /// Each rank lists the files its host holds in committed epochs; for the newest
    /// epoch every rank's file is held somewhere, a rank without its own file receives
    /// it from a holder (it is written into this host's directory first), then every
    /// rank loads and verifies its file. A failure anywhere drops the epoch and an older
    /// one is tried.
    pub fn restore<T: DeserializeOwned, C: Collective + ?Sized>(
        &mut self,
        coll: &C,
        job: &str,
        notes: &mut Vec<String>,
    ) -> Result<Option<NodeRestore<T>>, CheckpointError> {
        let (me, ranks) = (coll.rank(), coll.size());
        let held = match self.holdings(job, ranks) {
            Ok(held) => held,
            Err(e) => {
                notes.push(format!("node-local files not read: {e}"));
                BTreeMap::new()
            }
        };
        let shared_newest = self.shared_newest(coll, job, ranks);
        let mut bound = u64::MAX;
        loop {
            let here = held.range(..=bound).next_back().map_or(0, |(&e, _)| e);
            let mut a = [here];
            coll.all_max(&mut a);
            let epoch = a[0];
            if epoch == 0 || epoch < shared_newest {
                return Ok(None);
            }
            bound = epoch - 1;
            let files = held.get(&epoch).cloned().unwrap_or_default();
            let holders = agree_holders(coll, &files.keys().copied().collect::<Vec<_>>());
            if let Some(missing) = holders.iter().position(|&h| h == 0) {
                notes.push(format!(
                    "node-local epoch {epoch} not whole: no host holds rank {missing}'s file"
                ));
                continue;
            }
            let fetched = self.fetch_missing(coll, epoch, &holders, &files);
            let path = match files.get(&me) {
                Some(path) if holders[me as usize] == u64::MAX => path.clone(),
                _ => self.rank_path(epoch, me),
            };
            let received = holders[me as usize] != u64::MAX;
            let used_copy =
                u64::from(received || path.file_name() != Some(epoch::rank_file_name(me).as_ref()));
            let want = Expected {
                job,
                rank: me,
                ranks,
                epoch,
            };
            let loaded = fetched.and_then(|()| {
                let (file, header) = storage::open_checked(&path)?;
                storage::check_identity(&header, &want, &path)?;
                Ok((file, header))
            });
            match restore::load_agreed::<T, C>(coll, loaded, &path, &self.epochs_dir)? {
                Loaded::State(state, calls) => {
                    let mut a = [used_copy, u64::from(received)];
                    coll.all_max(&mut a);
                    if a[1] != 0 {
                        let marker = CommitMarker {
                            version: FORMAT_VERSION,
                            job: job.to_owned(),
                            ranks,
                            epoch,
                        };
                        notes.extend(self.commit_received(coll, &marker));
                    }
                    let level = if a[0] != 0 {
                        Level::Partner
                    } else {
                        Level::Local
                    };
                    return Ok(Some(NodeRestore {
                        epoch,
                        calls,
                        state,
                        level,
                    }));
                }
                Loaded::Skipped(here) => {
                    let why = here
                        .map_or_else(|| "damaged on another rank".to_owned(), |e| e.to_string());
                    notes.push(format!("node-local epoch {epoch} skipped: {why}"));
                }
            }
        }
    }

    fn rank_path(&self, epoch: u64, rank: u32) -> PathBuf {
        self.epochs_dir
            .join(epoch::epoch_dir_name(epoch))
            .join(epoch::rank_file_name(rank))
    }

    /// The files this host holds in each committed epoch of this job, by rank (its own
    /// file, else a partner's copy), their headers, identities and sizes checked
    /// (payloads are checked when loaded).
    fn holdings(
        &self,
        job: &str,
        ranks: u32,
    ) -> Result<BTreeMap<u64, BTreeMap<u32, PathBuf>>, CheckpointError> {
        let mut held = BTreeMap::new();
        for entry in epoch::list_epochs(&self.epochs_dir)? {
            if !committed_for(&entry, job, ranks) {
                continue;
            }
            let mut files = BTreeMap::new();
            for rank in 0..ranks {
                let want = Expected {
                    job,
                    rank,
                    ranks,
                    epoch: entry.epoch,
                };
                let found = [epoch::rank_file_name(rank), epoch::copy_file_name(rank)]
                    .into_iter()
                    .map(|name| entry.path.join(name))
                    .find(|path| {
                        storage::read_header(path).is_ok_and(|(h, size)| {
                            size == h.file_len() && storage::check_identity(&h, &want, path).is_ok()
                        })
                    });
                if let Some(path) = found {
                    files.insert(rank, path);
                }
            }
            if !files.is_empty() {
                held.insert(entry.epoch, files);
            }
        }
        Ok(held)
    }

    /// Rank 0's newest committed epoch of this job in the shared directory (0 if none),
    /// known to every rank. Reads the directory's listing and commit markers only.
    fn shared_newest<C: Collective + ?Sized>(&self, coll: &C, job: &str, ranks: u32) -> u64 {
        let mut a = [0u64];
        if coll.rank() == 0 {
            a[0] = epoch::list_epochs(&self.shared_dir)
                .unwrap_or_default()
                .iter()
                .find(|e| committed_for(e, job, ranks))
                .map_or(0, |e| e.epoch);
        }
        coll.all_max(&mut a);
        a[0]
    }

    /// Sends the files of `epoch` this rank holds for ranks that lack their own (as
    /// `holders` says), and receives this rank's from its holder into this host's
    /// directory (committed there later, [`NodeLevel::commit_received`]). Collective.
    fn fetch_missing<C: Collective + ?Sized>(
        &self,
        coll: &C,
        epoch: u64,
        holders: &[u64],
        held: &BTreeMap<u32, PathBuf>,
    ) -> Result<(), CheckpointError> {
        let me = coll.rank();
        let mut files = Vec::new();
        for (rank, &holder) in holders.iter().enumerate() {
            let rank = rank as u32;
            if holder == u64::from(me) + 1 && rank != me {
                // A file that cannot be read now is sent empty: its rank drops the epoch.
                let bytes = held
                    .get(&rank)
                    .and_then(|path| storage::read_verified(path).ok())
                    .map_or_else(Vec::new, |(_, b)| b);
                files.push((rank, bytes));
            }
        }
        let mine = holders[me as usize];
        let from: Vec<u32> = if mine == u64::MAX {
            Vec::new()
        } else {
            vec![u32::try_from(mine - 1).unwrap_or(u32::MAX)]
        };
        let received = coll.start_exchange(files, &from, 0).finish().received;
        let Some(bytes) = received.into_iter().next() else {
            return Ok(());
        };
        let dir = self.epochs_dir.join(epoch::epoch_dir_name(epoch));
        storage::ensure_own_subdir(&dir)?;
        own_files::write_atomic(&dir, &epoch::rank_file_name(me), &bytes)?;
        Ok(())
    }

    /// After files were received into the hosts' directories for `epoch`: the lowest
    /// rank of each host commits the epoch there if it is not yet, so that a later
    /// restart finds the files. Collective (the ranks gather their hosts). Returns a
    /// note if the marker could not be written (this restore is not affected).
    fn commit_received<C: Collective + ?Sized>(
        &self,
        coll: &C,
        marker: &CommitMarker,
    ) -> Option<String> {
        if !where_ranks_run(coll).leads_its_host(coll.rank()) {
            return None;
        }
        let dir = self.epochs_dir.join(epoch::epoch_dir_name(marker.epoch));
        if !dir.is_dir() || matches!(CommitMarker::read(&dir), Ok(Some(_))) {
            return None;
        }
        marker.write(&dir).err().map(|e| {
            format!(
                "files received for node-local epoch {} left uncommitted: {e}",
                marker.epoch
            )
        })
    }
}

/// Whether `entry` is an epoch of job `job` with `ranks` ranks committed by a valid
/// marker (a marker that cannot be read or does not check counts as none).
fn committed_for(entry: &EpochEntry, job: &str, ranks: u32) -> bool {
    let path = entry.path.join(epoch::COMMIT_MARKER);
    entry
        .marker()
        .ok()
        .flatten()
        .is_some_and(|m| m.verify(entry.epoch, &path).is_ok() && m.check(job, ranks, &path).is_ok())
}

/// The hosts the ranks run on now, and their partners. Collective (the ranks gather
/// their host names).
fn where_ranks_run<C: Collective + ?Sized>(coll: &C) -> PartnerMap {
    PartnerMap::new(&partner::gather(
        coll,
        partner::host_id_of(&coll.host_name()),
    ))
}

/// For each rank, who holds its file: `u64::MAX` when the rank holds it itself, else
/// the highest holding rank + 1, or 0 when nobody does. Collective.
fn agree_holders<C: Collective + ?Sized>(coll: &C, held_here: &[u32]) -> Vec<u64> {
    let me = coll.rank();
    let mut holders = vec![0u64; coll.size() as usize];
    for &rank in held_here {
        if let Some(slot) = holders.get_mut(rank as usize) {
            *slot = if rank == me {
                u64::MAX
            } else {
                u64::from(me) + 1
            };
        }
    }
    coll.all_max(&mut holders);
    holders
}
