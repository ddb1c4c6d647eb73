//! Epoch directories: naming, the commit marker, listing and retention.
//!
//! A checkpoint directory holds one sub-directory per epoch, `epoch-000000000042`,
//! with one file per rank, `rank-000003.ckpt`, and, once every rank has written and
//! verified its file, the commit marker `COMMIT` written by rank 0.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use super::storage::{self, FORMAT_VERSION};
use crate::own_files;

/// Name of the commit marker file inside an epoch directory.
pub const COMMIT_MARKER: &str = "COMMIT";
const EPOCH_PREFIX: &str = "epoch-";
const RANK_PREFIX: &str = "rank-";
const RANK_SUFFIX: &str = ".ckpt";

/// Directory name of epoch `epoch`.
///
/// ```
/// assert_eq!(rankmig::checkpoint::epoch::epoch_dir_name(42), "epoch-000000000042");
/// ```
pub fn epoch_dir_name(epoch: u64) -> String {
    format!("{EPOCH_PREFIX}{epoch:012}")
}

/// File name of rank `rank`'s file inside an epoch directory.
///
/// ```
/// assert_eq!(rankmig::checkpoint::epoch::rank_file_name(3), "rank-000003.ckpt");
/// ```
pub fn rank_file_name(rank: u32) -> String {
    format!("{RANK_PREFIX}{rank:06}{RANK_SUFFIX}")
}

/// File name of a partner's copy of rank `rank`'s file inside a node-local epoch
/// directory (see [`super::levels`]).
///
/// ```
/// assert_eq!(rankmig::checkpoint::epoch::copy_file_name(3), "copy-000003.ckpt");
/// ```
pub fn copy_file_name(rank: u32) -> String {
    format!("copy-{rank:06}{RANK_SUFFIX}")
}

/// Parses an epoch directory name; `None` for anything else.
pub fn parse_epoch_dir_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(EPOCH_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Parses a rank file name; `None` for anything else.
pub fn parse_rank_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(RANK_PREFIX)?.strip_suffix(RANK_SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Longest commit marker read, in bytes (a real one is under 100).
pub const MARKER_MAX_LEN: u64 = 4096;

/// Content of a commit marker: which job, rank count and format the epoch belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitMarker {
    /// Format version of the epoch's files.
    pub version: u32,
    /// Job name.
    pub job: String,
    /// Rank count (number of files in the epoch).
    pub ranks: u32,
    /// Epoch number.
    pub epoch: u64,
}

const MARKER_KEYS: [&str; 4] = ["format", "job", "ranks", "epoch"];

impl CommitMarker {
    /// Text form written to the marker file, one `key=value` per line.
    pub fn to_text(&self) -> String {
        format!(
            "format={}\njob={}\nranks={}\nepoch={}\n",
            self.version, self.job, self.ranks, self.epoch
        )
    }

    /// Parses the text form; `path` is only used in messages. Each of the keys
    /// `format`, `job`, `ranks`, `epoch` must appear exactly once and nothing else.
    pub fn parse(text: &str, path: &Path) -> Result<Self, CheckpointError> {
        let bad = |why: String| CheckpointError::corrupt(path, format!("commit marker {why}"));
        let mut values: [Option<&str>; 4] = [None; 4];
        // Lines end at '\n' only: `lines()` would also eat a '\r', so a job name ending
        // in '\r' would read back as another name (found by the checkpoint fuzzer).
        for line in text.split_terminator('\n') {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("line {line:?} is not key=value")))?;
            if value.chars().any(char::is_control) {
                return Err(bad(format!("{key}={value:?} has a control character")));
            }
            let i = MARKER_KEYS
                .iter()
                .position(|k| *k == key)
                .ok_or_else(|| bad(format!("has unknown key {key:?}")))?;
            if values[i].replace(value).is_some() {
                return Err(bad(format!("repeats {key}")));
            }
        }
        let field = |i: usize| values[i].ok_or_else(|| bad(format!("lacks {}", MARKER_KEYS[i])));
        let num = |i: usize| -> Result<u64, CheckpointError> {
            let v = field(i)?;
            v.parse()
                .map_err(|_| bad(format!("{}={v:?} is not a number", MARKER_KEYS[i])))
        };
        let version = u32::try_from(num(0)?).map_err(|_| bad("format out of range".into()))?;
        let ranks = u32::try_from(num(2)?).map_err(|_| bad("ranks out of range".into()))?;
        Ok(Self {
            version,
            job: field(1)?.to_owned(),
            ranks,
            epoch: num(3)?,
        })
    }

    /// Reads the marker of an epoch directory; `Ok(None)` when there is none. The
    /// marker must be a regular file of this user, at most [`MARKER_MAX_LEN`] bytes.
    pub fn read(epoch_dir: &Path) -> Result<Option<Self>, CheckpointError> {
        let path = epoch_dir.join(COMMIT_MARKER);
        match storage::read_small_text(&path, MARKER_MAX_LEN) {
            Ok(text) => Self::parse(&text, &path).map(Some),
            Err(CheckpointError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Writes the marker atomically into `epoch_dir`.
    pub fn write(&self, epoch_dir: &Path) -> Result<(), CheckpointError> {
        own_files::write_atomic(epoch_dir, COMMIT_MARKER, self.to_text().as_bytes())?;
        Ok(())
    }

    /// A marker of a newer format than this build reads is refused (not corrupt).
    fn refuse_newer_format(&self, path: &Path) -> Result<(), CheckpointError> {
        if self.version > FORMAT_VERSION {
            return Err(CheckpointError::refused(
                path,
                format!(
                    "format version {} is newer than {FORMAT_VERSION}, the newest this build reads",
                    self.version
                ),
            ));
        }
        Ok(())
    }

    /// Checks that the marker describes epoch `epoch` in this build's format with at
    /// least one rank. A newer format gives [`CheckpointError::Refused`], anything
    /// else [`CheckpointError::Corrupt`].
    pub fn verify(&self, epoch: u64, path: &Path) -> Result<(), CheckpointError> {
        self.refuse_newer_format(path)?;
        let bad = |why: String| {
            Err(CheckpointError::corrupt(
                path,
                format!("commit marker {why}"),
            ))
        };
        if self.version != FORMAT_VERSION {
            return bad(format!("has unknown format version {}", self.version));
        }
        if self.epoch != epoch {
            return bad(format!(
                "says epoch {}, its directory is epoch {epoch}",
                self.epoch
            ));
        }
        if self.ranks == 0 {
            return bad("says 0 ranks".into());
        }
        if self.job.is_empty() {
            return bad("has an empty job name".into());
        }
        Ok(())
    }

    /// Checks that the epoch belongs to this job and rank count and that its format is
    /// readable; mismatches give [`CheckpointError::Refused`].
    pub fn check(&self, job: &str, ranks: u32, path: &Path) -> Result<(), CheckpointError> {
        self.refuse_newer_format(path)?;
        if self.job != job {
            return Err(CheckpointError::refused(
                path,
                format!("written by job {:?}, this job is {job:?}", self.job),
            ));
        }
        if self.ranks != ranks {
            return Err(CheckpointError::refused(
                path,
                format!(
                    "written by a {}-rank job, this job has {ranks} ranks",
                    self.ranks
                ),
            ));
        }
        Ok(())
    }
}

/// One epoch directory found on disk.
#[derive(Debug, Clone)]
pub struct EpochEntry {
    /// Epoch number.
    pub epoch: u64,
    /// Path of the epoch directory.
    pub path: PathBuf,
}

impl EpochEntry {
    /// Path of rank `rank`'s file in this epoch.
    pub fn rank_file(&self, rank: u32) -> PathBuf {
        self.path.join(rank_file_name(rank))
    }

    /// The commit marker, `Ok(None)` if the epoch is not committed.
    pub fn marker(&self) -> Result<Option<CommitMarker>, CheckpointError> {
        CommitMarker::read(&self.path)
    }
}

/// An entry named like an epoch that is not a directory of this user (a link, a
/// file, another user's directory): listed so it can be reported, never used.
#[derive(Debug, Clone)]
pub struct IgnoredEntry {
    /// Epoch number from the name.
    pub epoch: u64,
    /// Its path.
    pub path: PathBuf,
    /// Why it is ignored.
    pub reason: String,
}

/// The epoch-named entries of a checkpoint directory.
#[derive(Debug, Clone, Default)]
pub struct EpochScan {
    /// Real directories of this user, newest first.
    pub epochs: Vec<EpochEntry>,
    /// Everything else named `epoch-N`, newest first.
    pub ignored: Vec<IgnoredEntry>,
}

/// Lists the entries of `dir` named like epochs without following links: real
/// directories of this user become epochs, anything else is ignored (with the reason).
/// A missing `dir` has none.
pub fn scan_epochs(dir: &Path) -> Result<EpochScan, CheckpointError> {
    let mut scan = EpochScan::default();
    for found in storage::scan_own_subdirs(dir, parse_epoch_dir_name)? {
        let (epoch, path) = (found.key, found.path);
        match found.checked {
            Ok(()) => scan.epochs.push(EpochEntry { epoch, path }),
            Err(reason) => scan.ignored.push(IgnoredEntry {
                epoch,
                path,
                reason,
            }),
        }
    }
    scan.epochs.sort_by_key(|e| std::cmp::Reverse(e.epoch));
    scan.ignored.sort_by_key(|e| std::cmp::Reverse(e.epoch));
    Ok(scan)
}

/// Lists the epoch directories of `dir`, newest first (see [`scan_epochs`]).
pub fn list_epochs(dir: &Path) -> Result<Vec<EpochEntry>, CheckpointError> {
    Ok(scan_epochs(dir)?.epochs)
}

/// Highest epoch number named in `dir` (committed or not, and counting names that are
/// not usable directories, so a new epoch never takes their name), 0 if none.
pub fn max_epoch(dir: &Path) -> Result<u64, CheckpointError> {
    let scan = scan_epochs(dir)?;
    let used = scan.epochs.first().map_or(0, |e| e.epoch);
    let ignored = scan.ignored.first().map_or(0, |e| e.epoch);
    Ok(used.max(ignored))
}

/// The epoch after `epoch`, or [`CheckpointError::Refused`] naming the directory of
/// `epoch` when there is none (the counter never wraps onto older epochs).
pub fn next_epoch(dir: &Path, epoch: u64) -> Result<u64, CheckpointError> {
    epoch.checked_add(1).ok_or_else(|| {
        CheckpointError::refused(
            dir.join(epoch_dir_name(epoch)),
            format!("epoch number {epoch} leaves no room for a next epoch; move it away"),
        )
    })
}

/// Directory (inside the checkpoint directory) holding retired rank files kept for
/// reuse, at most one per rank.
pub const SPARE_DIR: &str = ".spare";

/// Path where a retired file of rank `rank` waits to be reused.
pub fn spare_path(dir: &Path, rank: u32) -> PathBuf {
    dir.join(SPARE_DIR).join(rank_file_name(rank))
}

/// Whose an epoch is, as far as retention and discarding are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// This job (job name and rank count): it may be removed.
    ThisJob,
    /// Another job, or unknown: it is left alone, for the reason given.
    NotThisJob(String),
}

/// Decides whether `entry` belongs to job `job` with `ranks` ranks: by its commit
/// marker, or, without one, by the headers of its rank files (all readable ones must
/// name this job and at least one must exist; an empty directory is this job's).
/// An unreadable marker or a foreign entry makes it not this job's.
pub fn owner(entry: &EpochEntry, job: &str, ranks: u32) -> Owner {
    let marker_path = entry.path.join(COMMIT_MARKER);
    match entry.marker() {
        Ok(Some(m)) if m.job == job && m.ranks == ranks => return Owner::ThisJob,
        Ok(Some(m)) => {
            return Owner::NotThisJob(format!(
                "committed by job {:?} with {} ranks",
                m.job, m.ranks
            ));
        }
        Ok(None) => {}
        Err(e) => return Owner::NotThisJob(format!("unreadable marker: {e}")),
    }
    let rd = match fs::read_dir(&entry.path) {
        Ok(rd) => rd,
        Err(e) => return Owner::NotThisJob(format!("cannot list it: {e}")),
    };
    let (mut ours, mut entries) = (0usize, 0usize);
    for item in rd {
        let Ok(item) = item else {
            return Owner::NotThisJob("cannot list it".into());
        };
        entries += 1;
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        let bare = name
            .strip_prefix('.')
            .and_then(|n| n.split_once(".tmp").map(|(n, _)| n))
            .unwrap_or(name);
        if parse_rank_file_name(bare).is_none() {
            continue;
        }
        if let Ok((h, _)) = storage::read_header(&item.path()) {
            if h.job != job || h.ranks != ranks {
                return Owner::NotThisJob(format!(
                    "{} was written by job {:?} with {} ranks",
                    item.path().display(),
                    h.job,
                    h.ranks
                ));
            }
            ours += 1;
        }
    }
    if ours > 0 || entries == 0 {
        Owner::ThisJob
    } else {
        Owner::NotThisJob(format!(
            "{} is missing and no file names this job",
            marker_path.display()
        ))
    }
}

/// What [`retire_epoch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retired {
    /// The epoch is gone.
    Removed,
    /// The epoch was left untouched, for the reason given.
    Left(String),
}

/// Retires an epoch of the checkpoint directory `dir`: checks first that the epoch
/// directory is a real directory of this user holding only regular files of this
/// user (otherwise nothing is touched: [`Retired::Left`]); then removes its commit
/// marker, moves its rank files to [`SPARE_DIR`] for reuse by the next saves (a
/// rename, much cheaper than unlinking a large file), removes the other files and
/// the directory. A removal cut short leaves an uncommitted epoch, never a committed
/// one with missing files. Nothing is followed through a link.
pub fn retire_epoch(dir: &Path, entry: &EpochEntry) -> Result<Retired, CheckpointError> {
    let meta = fs::symlink_metadata(&entry.path)
        .map_err(|e| CheckpointError::io("stat", &entry.path, e))?;
    if let Err(e) = own_files::check_own_dir(&meta, &entry.path) {
        return Ok(Retired::Left(e.to_string()));
    }
    let mut files = Vec::new();
    let rd = fs::read_dir(&entry.path).map_err(|e| CheckpointError::io("list", &entry.path, e))?;
    for item in rd {
        let item = item.map_err(|e| CheckpointError::io("list", &entry.path, e))?;
        let path = item.path();
        let meta = item
            .metadata()
            .map_err(|e| CheckpointError::io("stat", &path, e))?;
        if let Err(e) = own_files::check_own_file(&meta, &path) {
            return Ok(Retired::Left(e.to_string()));
        }
        let rank = item.file_name().to_str().and_then(parse_rank_file_name);
        files.push((path, rank));
    }
    remove_marker(entry)?;
    let spare_dir = dir.join(SPARE_DIR);
    let spare_ok = storage::ensure_own_subdir(&spare_dir).is_ok();
    for (path, rank) in files {
        if path.file_name().is_some_and(|n| n == COMMIT_MARKER) {
            continue;
        }
        let moved = spare_ok
            && rank.is_some_and(|r| {
                let to = spare_path(dir, r);
                spare_slot_free(&to) && fs::rename(&path, to).is_ok()
            });
        if !moved {
            remove_file(&path)?;
        }
    }
    fs::remove_dir(&entry.path).map_err(|e| CheckpointError::io("remove", &entry.path, e))?;
    Ok(Retired::Removed)
}

/// Whether a spare slot is empty or holds a regular file of ours (which a rename
/// may replace).
fn spare_slot_free(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(meta) => own_files::check_own_file(&meta, path).is_ok(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

fn remove_file(path: &Path) -> Result<(), CheckpointError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(CheckpointError::io("remove", path, e))
        }
        _ => Ok(()),
    }
}

fn remove_marker(entry: &EpochEntry) -> Result<(), CheckpointError> {
    let marker = entry.path.join(COMMIT_MARKER);
    match fs::remove_file(&marker) {
        Ok(()) => Ok(own_files::sync_dir(&entry.path)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CheckpointError::io("remove", marker, e)),
    }
}

/// What [`apply_retention`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retention {
    /// Epochs removed.
    pub removed: Vec<u64>,
    /// Epochs that would have been removed but were left alone, with the reason.
    pub left: Vec<(u64, String)>,
}

/// Applies retention after epoch `committed` of job `job` (`ranks` ranks) was
/// committed: keeps the `keep` newest committed epochs of this job (at least 1),
/// removes its older committed epochs and every uncommitted epoch of this job older
/// than `committed`. Epochs of other jobs, and anything that is not a plain epoch
/// directory of this user, are left alone (see [`owner`], [`retire_epoch`]).
pub fn apply_retention(
    dir: &Path,
    keep: usize,
    committed: u64,
    job: &str,
    ranks: u32,
) -> Result<Retention, CheckpointError> {
    let keep = keep.max(1);
    let mut kept = 0usize;
    let mut out = Retention::default();
    for entry in list_epochs(dir)? {
        if entry.epoch > committed {
            continue;
        }
        if let Owner::NotThisJob(why) = owner(&entry, job, ranks) {
            if entry.epoch < committed {
                out.left.push((entry.epoch, why));
            }
            continue;
        }
        let is_committed = matches!(entry.marker(), Ok(Some(_)));
        if is_committed && kept < keep {
            kept += 1;
            continue;
        }
        if entry.epoch < committed {
            match retire_epoch(dir, &entry)? {
                Retired::Removed => out.removed.push(entry.epoch),
                Retired::Left(why) => out.left.push((entry.epoch, why)),
            }
        }
    }
    if !out.removed.is_empty() {
        own_files::sync_dir(dir)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make_epoch(dir: &Path, epoch: u64, committed: bool) -> EpochEntry {
        let path = dir.join(epoch_dir_name(epoch));
        storage::create_private_dir(&path).unwrap();
        let h = storage::FileHeader {
            version: FORMAT_VERSION,
            rank: 0,
            ranks: 2,
            epoch,
            calls: 1,
            payload_len: 0,
            checksum: storage::payload_checksum(b""),
            job: "j".into(),
        };
        let mut b = [0u8; storage::HEADER_LEN];
        h.encode(&mut b);
        crate::own_files::write_atomic(&path, &rank_file_name(0), &b).unwrap();
        if committed {
            marker(epoch).write(&path).unwrap();
        }
        EpochEntry { epoch, path }
    }

    fn marker(epoch: u64) -> CommitMarker {
        CommitMarker {
            version: FORMAT_VERSION,
            job: "j".into(),
            ranks: 2,
            epoch,
        }
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(parse_epoch_dir_name(&epoch_dir_name(17)), Some(17));
        assert_eq!(parse_rank_file_name(&rank_file_name(5)), Some(5));
        assert_eq!(parse_epoch_dir_name("epoch-"), None);
        assert_eq!(parse_epoch_dir_name("epoch-12a"), None);
        assert_eq!(parse_rank_file_name(".rank-000001.ckpt.tmp"), None);
    }

    #[test]
    fn marker_round_trip_and_checks() {
        let m = marker(4);
        let p = Path::new("COMMIT");
        assert_eq!(CommitMarker::parse(&m.to_text(), p).unwrap(), m);
        assert!(m.check("j", 2, p).is_ok());
        let e = m.check("j", 8, p).unwrap_err();
        assert!(e.to_string().contains("2-rank job, this job has 8"), "{e}");
        assert!(m.check("k", 2, p).is_err());
        assert!(CommitMarker::parse("format=1\njob=j\n", p).is_err());
        let cr = "format=1\njob=j\r\nranks=2\nepoch=3\n";
        let e = CommitMarker::parse(cr, p).unwrap_err().to_string();
        assert!(e.contains("control character"), "{e}");
    }

    #[test]
    fn listing_is_newest_first_and_ignores_others() {
        let dir = tempfile::tempdir().unwrap();
        for e in [3, 1, 10] {
            make_epoch(dir.path(), e, true);
        }
        fs::create_dir(dir.path().join("other")).unwrap();
        let got: Vec<u64> = list_epochs(dir.path())
            .unwrap()
            .iter()
            .map(|e| e.epoch)
            .collect();
        assert_eq!(got, vec![10, 3, 1]);
        assert_eq!(max_epoch(dir.path()).unwrap(), 10);
        assert!(list_epochs(&dir.path().join("missing")).unwrap().is_empty());
    }

    #[test]
    fn retention_keeps_newest_committed() {
        let dir = tempfile::tempdir().unwrap();
        for e in 1..=5 {
            make_epoch(dir.path(), e, e != 3);
        }
        make_epoch(dir.path(), 6, false);
        let r = apply_retention(dir.path(), 2, 5, "j", 2).unwrap();
        assert_eq!(r.removed, vec![3, 2, 1]);
        let left: Vec<u64> = list_epochs(dir.path())
            .unwrap()
            .iter()
            .map(|e| e.epoch)
            .collect();
        assert_eq!(left, vec![6, 5, 4]);
    }
}
