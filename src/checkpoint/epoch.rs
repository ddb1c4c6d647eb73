//! Epoch directories: naming, the commit marker, listing and retention.
//!
//! A checkpoint directory holds one sub-directory per epoch, `epoch-000000000042`,
//! with one file per rank, `rank-000003.ckpt`, and, once every rank has written and
//! verified its file, the commit marker `COMMIT` written by rank 0.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use super::storage::{self, FORMAT_VERSION};

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

impl CommitMarker {
    /// Text form written to the marker file, one `key=value` per line.
    pub fn to_text(&self) -> String {
        format!(
            "format={}\njob={}\nranks={}\nepoch={}\n",
            self.version, self.job, self.ranks, self.epoch
        )
    }

    /// Parses the text form; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, CheckpointError> {
        let field = |key: &str| -> Result<&str, CheckpointError> {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .ok_or_else(|| CheckpointError::corrupt(path, format!("commit marker lacks {key}")))
        };
        let num = |key: &str| -> Result<u64, CheckpointError> {
            let v = field(key)?;
            v.parse().map_err(|_| {
                CheckpointError::corrupt(path, format!("commit marker {key}={v:?} is not a number"))
            })
        };
        let version = u32::try_from(num("format")?)
            .map_err(|_| CheckpointError::corrupt(path, "commit marker format out of range"))?;
        let ranks = u32::try_from(num("ranks")?)
            .map_err(|_| CheckpointError::corrupt(path, "commit marker ranks out of range"))?;
        Ok(Self {
            version,
            job: field("job")?.to_owned(),
            ranks,
            epoch: num("epoch")?,
        })
    }

    /// Reads the marker of an epoch directory; `Ok(None)` when there is none.
    pub fn read(epoch_dir: &Path) -> Result<Option<Self>, CheckpointError> {
        let path = epoch_dir.join(COMMIT_MARKER);
        match fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CheckpointError::io("read", path, e)),
        }
    }

    /// Writes the marker atomically into `epoch_dir`.
    pub fn write(&self, epoch_dir: &Path) -> Result<(), CheckpointError> {
        storage::write_atomic(epoch_dir, COMMIT_MARKER, self.to_text().as_bytes()).map(|_| ())
    }

    /// Checks that the epoch belongs to this job and rank count and that its format is
    /// readable; mismatches give [`CheckpointError::Refused`].
    pub fn check(&self, job: &str, ranks: u32, path: &Path) -> Result<(), CheckpointError> {
        if self.version > FORMAT_VERSION {
            return Err(CheckpointError::refused(
                path,
                format!(
                    "format version {} is newer than {FORMAT_VERSION}, the newest this build reads",
                    self.version
                ),
            ));
        }
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

/// Lists the epoch directories of `dir`, newest first. A missing `dir` has none.
pub fn list_epochs(dir: &Path) -> Result<Vec<EpochEntry>, CheckpointError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckpointError::io("list", dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| CheckpointError::io("list", dir, e))?;
        let Some(epoch) = entry.file_name().to_str().and_then(parse_epoch_dir_name) else {
            continue;
        };
        if entry.path().is_dir() {
            out.push(EpochEntry {
                epoch,
                path: entry.path(),
            });
        }
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.epoch));
    Ok(out)
}

/// Highest epoch number present in `dir` (committed or not), 0 if none.
pub fn max_epoch(dir: &Path) -> Result<u64, CheckpointError> {
    Ok(list_epochs(dir)?.first().map_or(0, |e| e.epoch))
}

/// Directory (inside the checkpoint directory) holding retired rank files kept for
/// reuse, at most one per rank.
pub const SPARE_DIR: &str = ".spare";

/// Path where a retired file of rank `rank` waits to be reused.
pub fn spare_path(dir: &Path, rank: u32) -> PathBuf {
    dir.join(SPARE_DIR).join(rank_file_name(rank))
}

/// Removes an epoch directory: the commit marker first, so a removal cut short
/// leaves an uncommitted epoch, never a committed one with missing files.
pub fn remove_epoch(entry: &EpochEntry) -> Result<(), CheckpointError> {
    remove_marker(entry)?;
    fs::remove_dir_all(&entry.path).map_err(|e| CheckpointError::io("remove", &entry.path, e))
}

fn remove_marker(entry: &EpochEntry) -> Result<(), CheckpointError> {
    let marker = entry.path.join(COMMIT_MARKER);
    match fs::remove_file(&marker) {
        Ok(()) => storage::sync_dir(&entry.path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CheckpointError::io("remove", marker, e)),
    }
}

/// Retires an epoch of the checkpoint directory `dir`: removes its commit marker
/// first, moves its rank files to [`SPARE_DIR`] for reuse by the next saves (a
/// rename, much cheaper than unlinking a large file), then removes the directory.
pub fn retire_epoch(dir: &Path, entry: &EpochEntry) -> Result<(), CheckpointError> {
    remove_marker(entry)?;
    let spare_dir = dir.join(SPARE_DIR);
    storage::create_private_dir(&spare_dir)?;
    let rd = fs::read_dir(&entry.path).map_err(|e| CheckpointError::io("list", &entry.path, e))?;
    for item in rd {
        let item = item.map_err(|e| CheckpointError::io("list", &entry.path, e))?;
        let rank = item.file_name().to_str().and_then(parse_rank_file_name);
        let moved = rank.is_some_and(|r| fs::rename(item.path(), spare_path(dir, r)).is_ok());
        if !moved {
            remove_any(&item.path())?;
        }
    }
    fs::remove_dir(&entry.path).map_err(|e| CheckpointError::io("remove", &entry.path, e))
}

fn remove_any(path: &Path) -> Result<(), CheckpointError> {
    let r = if path.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(CheckpointError::io("remove", path, e))
        }
        _ => Ok(()),
    }
}

/// Applies retention after epoch `committed` was committed: keeps the `keep` newest
/// committed epochs (at least 1), removes older committed epochs and every
/// uncommitted epoch older than `committed`. Returns the removed epoch numbers.
pub fn apply_retention(
    dir: &Path,
    keep: usize,
    committed: u64,
) -> Result<Vec<u64>, CheckpointError> {
    let keep = keep.max(1);
    let mut kept = 0usize;
    let mut removed = Vec::new();
    for entry in list_epochs(dir)? {
        if entry.epoch > committed {
            continue;
        }
        let is_committed = matches!(entry.marker(), Ok(Some(_)));
        if is_committed && kept < keep {
            kept += 1;
            continue;
        }
        if entry.epoch < committed {
            retire_epoch(dir, &entry)?;
            removed.push(entry.epoch);
        }
    }
    if !removed.is_empty() {
        storage::sync_dir(dir)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make_epoch(dir: &Path, epoch: u64, committed: bool) -> EpochEntry {
        let path = dir.join(epoch_dir_name(epoch));
        storage::create_private_dir(&path).unwrap();
        storage::write_atomic(&path, &rank_file_name(0), b"data").unwrap();
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
        let removed = apply_retention(dir.path(), 2, 5).unwrap();
        assert_eq!(removed, vec![3, 2, 1]);
        let left: Vec<u64> = list_epochs(dir.path())
            .unwrap()
            .iter()
            .map(|e| e.epoch)
            .collect();
        assert_eq!(left, vec![6, 5, 4]);
    }
}
