//! Finding the newest epoch this rank can restore from, and agreeing on one.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::collective::Collective;
use super::epoch::{self, EpochEntry};
use super::error::CheckpointError;
use super::storage::{self, Expected, FileHeader};

/// A file of this rank whose header, identity and size check, kept open until the
/// ranks agree; its payload is read, decoded and verified afterwards, in one pass
/// ([`super::payload::load`]).
#[derive(Debug)]
pub struct Candidate {
    /// Epoch number.
    pub epoch: u64,
    /// Header of the file.
    pub header: FileHeader,
    /// The open file, positioned at the first byte of its payload.
    pub file: std::fs::File,
    /// Path of the file, for messages.
    pub path: std::path::PathBuf,
}

/// Scans the epochs of one rank, newest first, verifying files on demand.
#[derive(Debug)]
pub struct LocalFinder<'a> {
    epochs: Vec<EpochEntry>,
    job: &'a str,
    rank: u32,
    ranks: u32,
    /// Why epochs were skipped, one line each.
    pub notes: Vec<String>,
    /// The newest valid file found so far at or below the last bound.
    pub candidate: Option<Candidate>,
    /// Whether an epoch was skipped for a reason that is not corruption (an I/O error
    /// such as `EACCES`, a link, a FIFO): such epochs must not be discarded.
    pub skipped_unreadable: bool,
}

impl<'a> LocalFinder<'a> {
    /// Lists the epochs of `dir` for rank `rank` of a `ranks`-rank job `job`.
    /// Entries named like epochs that are not directories of this user are noted and
    /// never used.
    pub fn new(dir: &Path, job: &'a str, rank: u32, ranks: u32) -> Result<Self, CheckpointError> {
        let scan = epoch::scan_epochs(dir)?;
        let notes = scan
            .ignored
            .iter()
            .map(|i| format!("ignored epoch {}: {}", i.epoch, i.reason))
            .collect();
        Ok(Self {
            epochs: scan.epochs,
            job,
            rank,
            ranks,
            notes,
            candidate: None,
            skipped_unreadable: false,
        })
    }

    /// The newest committed epoch `<= bound` whose file's header, identity and size
    /// check here (0 if none); its payload is verified when it is read
    /// ([`LocalFinder::reject`] drops it if that fails).
    ///
    /// Damaged or missing files and uncommitted epochs are skipped with a note; so are
    /// unreadable or untrusted ones (an I/O error, a link, a FIFO), which also set
    /// [`LocalFinder::skipped_unreadable`]; another job's epochs are skipped with a
    /// note (and kept); an epoch of this job with another rank count, or of a newer
    /// format, is an error.
    pub fn best_at_most(&mut self, bound: u64) -> Result<u64, CheckpointError> {
        if let Some(c) = &self.candidate {
            if c.epoch <= bound {
                return Ok(c.epoch);
            }
            self.candidate = None;
        }
        let entries: Vec<EpochEntry> = self
            .epochs
            .iter()
            .filter(|e| e.epoch <= bound)
            .cloned()
            .collect();
        for entry in entries {
            // Anything newer than the bound was skipped elsewhere; drop it for good.
            self.epochs.retain(|e| e.epoch < entry.epoch);
            match self.try_epoch(&entry) {
                Ok(None) => self.notes.push(format!(
                    "skipped epoch {}: another job's (kept)",
                    entry.epoch
                )),
                Ok(Some(c)) => {
                    let epoch = c.epoch;
                    self.candidate = Some(c);
                    return Ok(epoch);
                }
                Err(e @ CheckpointError::Refused { .. }) => return Err(e),
                Err(e) => self.skip(entry.epoch, &e),
            }
        }
        Ok(0)
    }

    /// Notes why `epoch` was skipped: damaged or missing, or unreadable (then
    /// [`LocalFinder::skipped_unreadable`] is set, so that nothing is discarded).
    fn skip(&mut self, epoch: u64, e: &CheckpointError) {
        if e.is_corruption() || is_missing(e) {
            self.notes.push(format!("skipped epoch {epoch}: {e}"));
        } else {
            self.skipped_unreadable = true;
            self.notes.push(format!(
                "skipped epoch {epoch} (unreadable, not damaged: kept): {e}"
            ));
        }
    }

    /// Drops the candidate of `epoch`, whose payload failed to read or verify here
    /// with `e` (damaged, or unreadable), noting why as [`LocalFinder::best_at_most`]
    /// does for a header.
    pub fn reject(&mut self, epoch: u64, e: &CheckpointError) {
        if self.candidate.as_ref().is_some_and(|c| c.epoch == epoch) {
            self.candidate = None;
        }
        self.skip(epoch, e);
    }

    /// The file of this rank in `entry`, its header checked; `None` when the epoch is
    /// another job's (a directory shared by two jobs: each restores its own newest epoch).
    fn try_epoch(&self, entry: &EpochEntry) -> Result<Option<Candidate>, CheckpointError> {
        let marker_path = entry.path.join(epoch::COMMIT_MARKER);
        let marker = entry.marker()?.ok_or_else(|| {
            CheckpointError::corrupt(&marker_path, "no commit marker (epoch incomplete)")
        })?;
        marker.verify(entry.epoch, &marker_path)?;
        if marker.job != self.job {
            return Ok(None);
        }
        marker.check(self.job, self.ranks, &marker_path)?;
        let path = entry.rank_file(self.rank);
        let (file, header) = storage::open_checked(&path)?;
        let want = Expected {
            job: self.job,
            rank: self.rank,
            ranks: self.ranks,
            epoch: entry.epoch,
        };
        storage::check_identity(&header, &want, &path)?;
        Ok(Some(Candidate {
            epoch: entry.epoch,
            header,
            file,
            path,
        }))
    }
}

/// What the ranks agreed after each loaded its file of one epoch
/// ([`load_agreed`]).
#[derive(Debug)]
pub enum Loaded<T> {
    /// Every rank's file verified and decoded: the state and the `checkpoint!` calls
    /// it was saved at.
    State(T, u64),
    /// Some rank's file was damaged or unreadable: every rank drops the epoch. This
    /// rank's own error, if the trouble was here.
    Skipped(Option<CheckpointError>),
}

/// Loads this rank's file of an epoch (`opened`: the file at its payload and its
/// header, or why it could not be opened) in one pass ([`super::payload::load`]) and
/// agrees with the other ranks on the outcome. Collective.
///
/// A damaged or unreadable file anywhere gives [`Loaded::Skipped`] on every rank; a
/// payload that verifies but does not decode as a `T` fails on every rank (its own
/// error here, [`CheckpointError::OtherRank`] elsewhere; `dir` names the directory).
pub fn load_agreed<T: DeserializeOwned, C: Collective + ?Sized>(
    c: &C,
    opened: Result<(std::fs::File, FileHeader), CheckpointError>,
    path: &Path,
    dir: &Path,
) -> Result<Loaded<T>, CheckpointError> {
    let loaded = opened.and_then(|(file, header)| {
        let calls = header.calls;
        super::payload::load::<T>(file, &header, path).map(|state| (state, calls))
    });
    let decode_failed = matches!(&loaded, Err(CheckpointError::Serde { .. }));
    let skip_here = loaded.is_err() && !decode_failed;
    let mut a = [
        u64::from(skip_here),
        u64::from(decode_failed) * (u64::from(c.rank()) + 1),
    ];
    c.all_max(&mut a);
    if a[1] != 0 {
        loaded?;
        return Err(CheckpointError::OtherRank {
            rank: a[1] - 1,
            what: "decode the checkpoint",
            dir: dir.to_path_buf(),
        });
    }
    if a[0] != 0 {
        return Ok(Loaded::Skipped(loaded.err()));
    }
    loaded.map(|(state, calls)| Loaded::State(state, calls))
}

/// Whether an error is a file that does not exist (a missing rank file makes an
/// epoch incomplete, as corruption does).
fn is_missing(e: &CheckpointError) -> bool {
    matches!(e, CheckpointError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// Outcome of a reduction in which a rank may have failed: the failing rank, if any.
pub fn failed_rank<C: Collective + ?Sized>(c: &C, failed_here: bool) -> Option<u64> {
    let mut a = [if failed_here {
        u64::from(c.rank()) + 1
    } else {
        0
    }];
    c.all_max(&mut a);
    a[0].checked_sub(1)
}

/// Turns a local result into a collective one: if any rank failed, every rank
/// returns an error (its own, or [`CheckpointError::OtherRank`]).
pub fn agree<T, C: Collective + ?Sized>(
    c: &C,
    local: Result<T, CheckpointError>,
    what: &'static str,
    dir: &Path,
) -> Result<T, CheckpointError> {
    match (failed_rank(c, local.is_err()), local) {
        (_, Err(e)) => Err(e),
        (Some(rank), Ok(_)) => Err(CheckpointError::OtherRank {
            rank,
            what,
            dir: dir.to_path_buf(),
        }),
        (None, Ok(v)) => Ok(v),
    }
}

/// Agrees with the other ranks on the newest epoch whose file's header checks on every
/// rank ([`agree_on_epoch_at_most`] with no bound).
pub fn agree_on_epoch<C: Collective + ?Sized>(
    c: &C,
    finder: &mut LocalFinder,
    dir: &Path,
) -> Result<Candidate, CheckpointError> {
    agree_on_epoch_at_most(c, finder, dir, u64::MAX)
}

/// Agrees with the other ranks on the newest epoch at or below `bound` whose file's
/// header checks on every rank ([`LocalFinder::best_at_most`]).
///
/// Each round, every rank proposes its newest valid epoch at or below the bound; the
/// minimum becomes the new bound until all proposals are equal. Returns the
/// candidate of the agreed epoch.
pub fn agree_on_epoch_at_most<C: Collective + ?Sized>(
    c: &C,
    finder: &mut LocalFinder,
    dir: &Path,
    mut bound: u64,
) -> Result<Candidate, CheckpointError> {
    loop {
        let local = finder.best_at_most(bound);
        let v = *local.as_ref().unwrap_or(&0);
        let failed = if local.is_err() {
            u64::from(c.rank()) + 1
        } else {
            0
        };
        let mut a = [v, u64::MAX - v, failed];
        c.all_max(&mut a);
        let (max, min) = (a[0], u64::MAX - a[1]);
        if a[2] != 0 {
            local?;
            return Err(CheckpointError::OtherRank {
                rank: a[2] - 1,
                what: "accept the checkpoint",
                dir: dir.to_path_buf(),
            });
        }
        if min == 0 {
            return Err(no_checkpoint(dir, &finder.notes));
        }
        if max == min {
            return finder
                .candidate
                .take()
                .ok_or_else(|| no_checkpoint(dir, &finder.notes));
        }
        bound = min;
    }
}

fn no_checkpoint(dir: &Path, notes: &[String]) -> CheckpointError {
    let detail = if notes.is_empty() {
        "no complete epoch on this rank (or on another rank)".to_owned()
    } else {
        notes.join("; ")
    };
    CheckpointError::NoCheckpoint {
        dir: dir.to_path_buf(),
        detail,
    }
}
