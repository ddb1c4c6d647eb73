//! `rankmig inspect DIR [--verify]`: what a checkpoint directory holds.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use super::epoch::{self, CommitMarker};
use super::error::CheckpointError;
use super::job_dir;
use super::storage::{self, FileHeader};

/// State of one rank file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// Header valid and size right (and, with verification, checksum right).
    Ok,
    /// Damaged: the reason.
    Corrupt(String),
    /// Could not be read, or not a regular file of this user (a link, a FIFO, ...):
    /// the reason. Not read further.
    Unreadable(String),
}

/// One rank file of an epoch.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// Rank from the file name.
    pub rank: u32,
    /// Path of the file.
    pub path: PathBuf,
    /// Size on disk in bytes.
    pub size: u64,
    /// Header, if it could be decoded.
    pub header: Option<FileHeader>,
    /// Whether the file is usable.
    pub status: FileStatus,
}

/// One epoch directory.
#[derive(Debug, Clone)]
pub struct EpochReport {
    /// Epoch number.
    pub epoch: u64,
    /// Path of the epoch directory.
    pub path: PathBuf,
    /// The commit marker, if present and readable.
    pub marker: Option<CommitMarker>,
    /// Why the marker could not be read, if it is present but damaged.
    pub marker_error: Option<String>,
    /// Rank files found, by rank.
    pub files: Vec<FileReport>,
    /// Ranks below the marker's rank count without a file.
    pub missing: Vec<u32>,
}

impl EpochReport {
    /// Whether the epoch carries a valid commit marker.
    pub fn is_complete(&self) -> bool {
        self.marker.is_some()
    }

    /// Whether the epoch is complete but has a damaged or missing file.
    pub fn is_damaged(&self) -> bool {
        self.is_complete()
            && (!self.missing.is_empty() || self.files.iter().any(|f| f.status != FileStatus::Ok))
    }
}

/// The epochs of one job directory (or of epochs lying directly in the inspected
/// directory), newest first.
#[derive(Debug, Clone)]
pub struct JobReport {
    /// Job name of the directory (`DIR/job-NAME`); `None` for epochs lying directly in
    /// the inspected directory that is not itself a job directory (the layout before
    /// job directories, which no job reads).
    pub job: Option<String>,
    /// The directory holding these epochs.
    pub path: PathBuf,
    /// Epochs, newest first.
    pub epochs: Vec<EpochReport>,
    /// Entries named like epochs that are not directories of this user (never used).
    pub ignored: Vec<epoch::IgnoredEntry>,
}

impl JobReport {
    /// Whether a complete epoch has a corrupt, unreadable or missing file, a marker is
    /// damaged or unreadable, an epoch names another job than its directory, or an
    /// entry named like an epoch is not one.
    pub fn has_corruption(&self) -> bool {
        !self.ignored.is_empty()
            || self.epochs.iter().any(|e| {
                e.is_damaged() || e.marker_error.is_some() || self.foreign_marker(e).is_some()
            })
    }

    /// The job named by `e`'s commit marker when it is not this directory's job.
    fn foreign_marker<'a>(&self, e: &'a EpochReport) -> Option<&'a str> {
        let (Some(job), Some(m)) = (&self.job, &e.marker) else {
            return None;
        };
        (m.job != *job).then_some(m.job.as_str())
    }
}

/// What a checkpoint directory holds: its job directories, each with its epochs.
#[derive(Debug, Clone)]
pub struct InspectReport {
    /// The directory inspected.
    pub dir: PathBuf,
    /// Whether payload checksums were recomputed.
    pub verified: bool,
    /// The epochs lying directly in the directory first (if any, or if the directory
    /// is itself a job directory), then one entry per job directory, by job name.
    pub jobs: Vec<JobReport>,
    /// Entries named like job directories that are not directories of this user
    /// (never used).
    pub ignored_job_dirs: Vec<job_dir::IgnoredJobDir>,
    /// Why a job would refuse this directory (writable by others, or another user's),
    /// if it would. Inspecting it is safe: nothing is followed or written.
    pub dir_warning: Option<String>,
}

impl InspectReport {
    /// Whether any job's epochs show corruption (see [`JobReport::has_corruption`]) or
    /// an entry named like a job directory is not one.
    pub fn has_corruption(&self) -> bool {
        !self.ignored_job_dirs.is_empty() || self.jobs.iter().any(JobReport::has_corruption)
    }

    /// Every epoch found, job after job.
    pub fn epochs(&self) -> impl Iterator<Item = &EpochReport> {
        self.jobs.iter().flat_map(|j| j.epochs.iter())
    }

    /// The epochs of job `job`, if it has a directory.
    pub fn job(&self, job: &str) -> Option<&JobReport> {
        self.jobs.iter().find(|j| j.job.as_deref() == Some(job))
    }
}

/// Lists the job directories of `dir` and their epochs, with per-rank file sizes and
/// stored checksums; `dir` may also be one job directory.
///
/// Headers and sizes are always checked, and the commit marker fully (format version,
/// epoch number, and job and rank count against every file's header and the job
/// directory's name); with `verify` every payload is read and its checksum
/// recomputed. Nothing is followed through a link and only regular files of this user
/// are read, never past the length their header announces.
/// [`InspectReport::has_corruption`] then tells whether a complete epoch is damaged
/// (`rankmig inspect DIR --verify` exits non-zero on it).
///
/// ```
/// # let tmp = tempfile::tempdir().unwrap();
/// let report = rankmig::checkpoint::inspect(tmp.path(), true)?;
/// assert!(report.jobs.is_empty() && !report.has_corruption());
/// println!("{report}");
/// # Ok::<(), rankmig::checkpoint::CheckpointError>(())
/// ```
pub fn inspect(dir: &Path, verify: bool) -> Result<InspectReport, CheckpointError> {
    if !dir.is_dir() {
        return Err(CheckpointError::io(
            "inspect",
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        ));
    }
    let dir_warning = storage::prepare_dir_check(dir).err().map(|e| e.to_string());
    let own_job = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(job_dir::parse_job_dir_name);
    let top = inspect_job(own_job.clone(), dir, verify)?;
    let mut jobs = Vec::new();
    if own_job.is_some() || !top.epochs.is_empty() || !top.ignored.is_empty() {
        jobs.push(top);
    }
    let scan = job_dir::scan_job_dirs(dir)?;
    for j in &scan.jobs {
        jobs.push(inspect_job(Some(j.job.clone()), &j.path, verify)?);
    }
    Ok(InspectReport {
        dir: dir.to_path_buf(),
        verified: verify,
        jobs,
        ignored_job_dirs: scan.ignored,
        dir_warning,
    })
}

fn inspect_job(
    job: Option<String>,
    path: &Path,
    verify: bool,
) -> Result<JobReport, CheckpointError> {
    let scan = epoch::scan_epochs(path)?;
    let epochs = scan
        .epochs
        .iter()
        .map(|e| inspect_epoch(e, verify))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(JobReport {
        job,
        path: path.to_path_buf(),
        epochs,
        ignored: scan.ignored,
    })
}

fn inspect_epoch(entry: &epoch::EpochEntry, verify: bool) -> Result<EpochReport, CheckpointError> {
    let marker_path = entry.path.join(epoch::COMMIT_MARKER);
    let (marker, marker_error) = match entry.marker().and_then(|m| {
        m.map(|m| m.verify(entry.epoch, &marker_path).map(|()| m))
            .transpose()
    }) {
        Ok(m) => (m, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut files = Vec::new();
    let rd = fs::read_dir(&entry.path).map_err(|e| CheckpointError::io("list", &entry.path, e))?;
    for item in rd {
        let item = item.map_err(|e| CheckpointError::io("list", &entry.path, e))?;
        if let Some(rank) = item
            .file_name()
            .to_str()
            .and_then(epoch::parse_rank_file_name)
        {
            files.push(inspect_file(rank, &item.path(), entry.epoch, verify));
        }
    }
    files.sort_by_key(|f| f.rank);
    if let Some(m) = &marker {
        for f in &mut files {
            check_against_marker(f, m);
        }
    }
    let ranks = marker.as_ref().map_or(0, |m| m.ranks);
    let missing = (0..ranks)
        .filter(|r| files.binary_search_by_key(r, |f| f.rank).is_err())
        .collect();
    Ok(EpochReport {
        epoch: entry.epoch,
        path: entry.path.clone(),
        marker,
        marker_error,
        files,
        missing,
    })
}

/// Marks a file whose header disagrees with the epoch's commit marker.
fn check_against_marker(f: &mut FileReport, m: &CommitMarker) {
    if f.status != FileStatus::Ok {
        return;
    }
    if f.rank >= m.ranks {
        f.status = FileStatus::Corrupt(format!(
            "rank {} in an epoch of {} ranks (commit marker)",
            f.rank, m.ranks
        ));
    } else if let Some(h) = &f.header {
        if h.job != m.job || h.ranks != m.ranks {
            f.status = FileStatus::Corrupt(format!(
                "header says job {:?} with {} ranks, commit marker says job {:?} with {}",
                h.job, h.ranks, m.job, m.ranks
            ));
        }
    }
}

fn inspect_file(rank: u32, path: &Path, epoch: u64, verify: bool) -> FileReport {
    // Size of the entry itself, not of what a link points to.
    let size = fs::symlink_metadata(path).map(|m| m.len()).unwrap_or(0);
    let checked = if verify {
        storage::read_verified(path).map(|(h, _)| h)
    } else {
        storage::read_header(path).and_then(|(h, size)| {
            if size == h.file_len() {
                Ok(h)
            } else {
                Err(CheckpointError::corrupt(
                    path,
                    format!("file is {size} bytes, header says {}", h.file_len()),
                ))
            }
        })
    };
    let (header, mut status) = match checked {
        Ok(h) => (Some(h), FileStatus::Ok),
        Err(e) if e.is_corruption() => (
            storage::read_header(path).ok().map(|(h, _)| h),
            FileStatus::Corrupt(e.to_string()),
        ),
        Err(e) => (None, FileStatus::Unreadable(e.to_string())),
    };
    if let Some(h) = &header {
        if status == FileStatus::Ok && (h.rank != rank || h.epoch != epoch) {
            status = FileStatus::Corrupt(format!(
                "header says rank {} epoch {}, file name says rank {rank} epoch {epoch}",
                h.rank, h.epoch
            ));
        }
    }
    FileReport {
        rank,
        path: path.to_path_buf(),
        size,
        header,
        status,
    }
}

impl fmt::Display for InspectReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.verified {
            "checksums verified"
        } else {
            "headers checked"
        };
        writeln!(
            f,
            "{}: {} epoch(s) in {} job director(ies), {how}",
            self.dir.display(),
            self.epochs().count(),
            self.jobs.iter().filter(|j| j.job.is_some()).count()
        )?;
        if let Some(w) = &self.dir_warning {
            writeln!(f, "WARNING: {w}")?;
        }
        for j in &self.jobs {
            write!(f, "{j}")?;
        }
        for i in &self.ignored_job_dirs {
            writeln!(f, "{}: IGNORED: {}", i.path.display(), i.reason)?;
        }
        Ok(())
    }
}

impl fmt::Display for JobReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.job {
            Some(job) => writeln!(
                f,
                "job {job:?} ({}): {} epoch(s)",
                self.path.display(),
                self.epochs.len()
            )?,
            None => writeln!(
                f,
                "epochs directly in {} (the layout before job directories: no job reads \
                 them; move them into the job's directory job-NAME to restart from them): \
                 {} epoch(s)",
                self.path.display(),
                self.epochs.len()
            )?,
        }
        for e in &self.epochs {
            write!(f, "{e}")?;
            if let Some(other) = self.foreign_marker(e) {
                writeln!(
                    f,
                    "  WRONG JOB: committed by job {other:?}, not this directory's"
                )?;
            }
        }
        for i in &self.ignored {
            writeln!(f, "epoch {}: IGNORED: {}", i.epoch, i.reason)?;
        }
        Ok(())
    }
}

impl fmt::Display for EpochReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (&self.marker, &self.marker_error) {
            (Some(m), _) if self.is_damaged() => {
                format!("complete, DAMAGED (job {}, {} ranks)", m.job, m.ranks)
            }
            (Some(m), _) => format!("complete (job {}, {} ranks)", m.job, m.ranks),
            (None, Some(err)) => format!("BAD COMMIT MARKER: {err}"),
            (None, None) => "incomplete (no commit marker)".to_owned(),
        };
        writeln!(f, "epoch {}: {state}", self.epoch)?;
        for file in &self.files {
            let sum = file
                .header
                .as_ref()
                .map_or_else(|| "-".repeat(16), |h| format!("{:016x}", h.checksum));
            let status = match &file.status {
                FileStatus::Ok => "ok".to_owned(),
                FileStatus::Corrupt(why) => format!("CORRUPT: {why}"),
                FileStatus::Unreadable(why) => format!("UNREADABLE: {why}"),
            };
            writeln!(
                f,
                "  rank {:>6}  {:>12} bytes  xxh3 {sum}  {status}",
                file.rank, file.size
            )?;
        }
        for r in &self.missing {
            writeln!(f, "  rank {r:>6}  MISSING")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{CheckpointConfig, CheckpointContext, LocalCollective};

    fn make(dir: &Path, saves: u64) {
        make_job(dir, "insp", saves);
    }

    fn make_job(dir: &Path, job: &str, saves: u64) {
        let cfg = CheckpointConfig::new(dir).job(job).every(1).keep(10);
        let mut ctx = CheckpointContext::new(cfg, LocalCollective).unwrap();
        for i in 0..saves {
            ctx.checkpoint(&vec![i; 1000]).unwrap();
        }
        ctx.finalize().unwrap();
    }

    #[test]
    fn lists_and_verifies() {
        let tmp = tempfile::tempdir().unwrap();
        make(tmp.path(), 3);
        let r = inspect(tmp.path(), true).unwrap();
        assert_eq!(r.epochs().count(), 3);
        assert!(r.epochs().all(EpochReport::is_complete));
        assert!(!r.has_corruption());
        let text = r.to_string();
        assert!(text.contains("epoch 3: complete"), "{text}");
        assert!(text.contains("rank      0"), "{text}");
    }

    #[test]
    fn flipped_byte_found_only_with_verify() {
        let tmp = tempfile::tempdir().unwrap();
        make(tmp.path(), 2);
        let f = tmp
            .path()
            .join(job_dir::job_dir_name("insp"))
            .join(epoch::epoch_dir_name(2))
            .join(epoch::rank_file_name(0));
        let mut b = fs::read(&f).unwrap();
        let last = b.len() - 1;
        b[last] ^= 1;
        fs::write(&f, b).unwrap();
        assert!(!inspect(tmp.path(), false).unwrap().has_corruption());
        let r = inspect(tmp.path(), true).unwrap();
        assert!(r.has_corruption());
        assert!(r.to_string().contains("CORRUPT"), "{r}");
    }

    #[test]
    fn missing_file_and_incomplete_epoch() {
        let tmp = tempfile::tempdir().unwrap();
        make(tmp.path(), 2);
        let e2 = job_dir::job_epochs_dir(tmp.path(), "insp").join(epoch::epoch_dir_name(2));
        fs::remove_file(e2.join(epoch::rank_file_name(0))).unwrap();
        let r = inspect(tmp.path(), false).unwrap();
        assert!(r.has_corruption());
        assert_eq!(r.jobs[0].epochs[0].missing, vec![0]);
        fs::remove_file(e2.join(epoch::COMMIT_MARKER)).unwrap();
        let r = inspect(tmp.path(), true).unwrap();
        assert!(!r.has_corruption());
        assert!(r.to_string().contains("incomplete"));
    }

    #[test]
    fn each_job_is_listed_with_its_own_epochs_and_old_layout_epochs_apart() {
        let tmp = tempfile::tempdir().unwrap();
        make_job(tmp.path(), "a", 2);
        make_job(tmp.path(), "b", 3);
        // An epoch of the layout before job directories, directly in the directory.
        let old = tmp.path().join(epoch::epoch_dir_name(7));
        fs::rename(
            job_dir::job_epochs_dir(tmp.path(), "b").join(epoch::epoch_dir_name(1)),
            &old,
        )
        .unwrap();
        let r = inspect(tmp.path(), false).unwrap();
        let jobs: Vec<Option<&str>> = r.jobs.iter().map(|j| j.job.as_deref()).collect();
        assert_eq!(jobs, [None, Some("a"), Some("b")]);
        let numbers = |j: &JobReport| j.epochs.iter().map(|e| e.epoch).collect::<Vec<_>>();
        assert_eq!(numbers(r.job("a").unwrap()), [2, 1]);
        assert_eq!(numbers(r.job("b").unwrap()), [3, 2]);
        assert_eq!(numbers(&r.jobs[0]), [7]);
        let text = r.to_string();
        assert!(text.contains("5 epoch(s) in 2 job director(ies)"), "{text}");
        assert!(text.contains("epochs directly in"), "{text}");
        // The old epoch says epoch 1 in its marker: damaged where it lies now.
        assert!(r.jobs[0].epochs[0].marker_error.is_some(), "{text}");
        // A job directory inspected on its own.
        let only_a = inspect(&job_dir::job_epochs_dir(tmp.path(), "a"), false).unwrap();
        assert_eq!(only_a.jobs.len(), 1);
        assert_eq!(only_a.jobs[0].job.as_deref(), Some("a"));
        assert_eq!(numbers(&only_a.jobs[0]), [2, 1]);
    }

    #[test]
    fn an_epoch_of_another_job_in_a_job_directory_is_flagged() {
        let tmp = tempfile::tempdir().unwrap();
        make_job(tmp.path(), "a", 1);
        let (a, b) = (
            job_dir::job_epochs_dir(tmp.path(), "a"),
            job_dir::job_epochs_dir(tmp.path(), "b"),
        );
        fs::rename(&a, &b).unwrap();
        let r = inspect(tmp.path(), false).unwrap();
        assert!(r.has_corruption(), "{r}");
        assert!(
            r.to_string().contains("WRONG JOB: committed by job \"a\""),
            "{r}"
        );
    }
}
