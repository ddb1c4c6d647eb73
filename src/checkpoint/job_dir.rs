//! Job directories: one sub-directory of the checkpoint directory per job.
//!
//! Each job keeps its epochs in `DIR/job-NAME/` (`NAME` is the job name with every
//! byte outside `A-Z a-z 0-9 . _ -` written `%XX`), so two jobs sharing a checkpoint
//! directory number their epochs independently and never see each other's epochs,
//! spare files or retention.

use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use super::storage;

const JOB_DIR_PREFIX: &str = "job-";

/// Directory name, inside the checkpoint directory, of job `job`'s epochs.
///
/// ```
/// use rankmig::checkpoint::job_dir::{job_dir_name, parse_job_dir_name};
/// assert_eq!(job_dir_name("jacobi-n64"), "job-jacobi-n64");
/// assert_eq!(job_dir_name("a b/c"), "job-a%20b%2Fc");
/// assert_eq!(parse_job_dir_name("job-a%20b%2Fc").as_deref(), Some("a b/c"));
/// ```
pub fn job_dir_name(job: &str) -> String {
    let mut name = String::with_capacity(JOB_DIR_PREFIX.len() + job.len());
    name.push_str(JOB_DIR_PREFIX);
    for b in job.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            name.push(char::from(b));
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name
}

/// The job name a job directory name stands for; `None` for any other name,
/// including a spelling [`job_dir_name`] would not write (so one job has one
/// directory).
pub fn parse_job_dir_name(name: &str) -> Option<String> {
    let encoded = name.strip_prefix(JOB_DIR_PREFIX)?;
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = tail.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    let job = String::from_utf8(bytes).ok()?;
    (!job.is_empty() && job_dir_name(&job) == name).then_some(job)
}

/// Path of job `job`'s epochs inside the checkpoint directory `dir`.
pub fn job_epochs_dir(dir: &Path, job: &str) -> PathBuf {
    dir.join(job_dir_name(job))
}

/// A job directory found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDir {
    /// Job name, from the directory name.
    pub job: String,
    /// Path of the directory.
    pub path: PathBuf,
}

/// An entry named like a job directory that is not a directory of this user (a
/// link, a file, another user's directory): listed so it can be reported, never used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredJobDir {
    /// Its path.
    pub path: PathBuf,
    /// Why it is ignored.
    pub reason: String,
}

/// The job directories of a checkpoint directory.
#[derive(Debug, Clone, Default)]
pub struct JobDirScan {
    /// Real directories of this user, by job name.
    pub jobs: Vec<JobDir>,
    /// Everything else named like a job directory, by path.
    pub ignored: Vec<IgnoredJobDir>,
}

/// Lists the entries of `dir` named like job directories without following links:
/// real directories of this user are jobs, anything else is ignored (with the
/// reason). A missing `dir` has none.
pub fn scan_job_dirs(dir: &Path) -> Result<JobDirScan, CheckpointError> {
    let mut scan = JobDirScan::default();
    for found in storage::scan_own_subdirs(dir, parse_job_dir_name)? {
        let (job, path) = (found.key, found.path);
        match found.checked {
            Ok(()) => scan.jobs.push(JobDir { job, path }),
            Err(reason) => scan.ignored.push(IgnoredJobDir { path, reason }),
        }
    }
    scan.jobs.sort_by(|a, b| a.job.cmp(&b.job));
    scan.ignored.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn names_round_trip_and_stay_one_path_component() {
        for job in ["jacobi", "a/b", "..", ".", "x%41", "é ü", "tab\u{7f}", "-"] {
            let name = job_dir_name(job);
            assert!(!name.contains('/') && name != "." && name != "..", "{name}");
            assert_eq!(parse_job_dir_name(&name).as_deref(), Some(job), "{name}");
        }
    }

    #[test]
    fn other_spellings_are_not_job_directories() {
        for name in [
            "jacobi", "job-", "job-%4", "job-%zz", "job-%41", "job-%2f", "job-a b", "job-%FF",
        ] {
            assert_eq!(parse_job_dir_name(name), None, "{name}");
        }
    }

    #[test]
    fn a_link_named_like_a_job_directory_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("job-a")).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("job-b")).unwrap();
        fs::write(tmp.path().join("job-c"), b"x").unwrap();
        fs::create_dir(tmp.path().join("epoch-000000000001")).unwrap();
        let scan = scan_job_dirs(tmp.path()).unwrap();
        let jobs: Vec<&str> = scan.jobs.iter().map(|j| j.job.as_str()).collect();
        assert_eq!(jobs, ["a"]);
        assert_eq!(scan.ignored.len(), 2, "{:?}", scan.ignored);
        assert!(
            scan.ignored[0].reason.contains("symbolic link"),
            "{:?}",
            scan.ignored
        );
        assert!(
            scan_job_dirs(&tmp.path().join("missing"))
                .unwrap()
                .jobs
                .is_empty()
        );
    }
}
