//! One job per availability file.
//!
//! The availability file says how many cores each node offers to *the* job that
//! follows it. Two `rankmig run` following one file would each place their ranks on
//! every core it offers, and both would take every core a node gives back. So `rankmig
//! run` holds an exclusive lock (`flock(2)`) on a lock file beside the availability file
//! (`DIR/.NAME.rankmig-lock`) for as long as it runs, relaunches included, and a second
//! run on the same file is refused with the first one's process id and run directory.
//! The lock is on a file of its own because editors replace the availability file (a
//! new inode) on every save. The kernel releases the lock when the process ends, how
//! ever it ends. Where the lock file cannot be created (a directory the user may not
//! write), the run goes on unguarded and says so.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock file that guards `availability`: `.NAME.rankmig-lock` beside it.
///
/// ```
/// use std::path::Path;
/// use rankmig::supervisor::availability_lock::lock_path;
/// assert_eq!(lock_path(Path::new("/jobs/av.txt")), Path::new("/jobs/.av.txt.rankmig-lock"));
/// ```
pub fn lock_path(availability: &Path) -> PathBuf {
    let name = availability
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    availability.with_file_name(format!(".{name}.rankmig-lock"))
}

/// Why a run may not follow an availability file.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: another rankmig run follows this availability file ({holder}); two jobs following one file would each take every core it offers: give each job a file of its own (lock {})",
    availability.display(),
    lock.display()
)]
pub struct AvailabilityTaken {
    /// The availability file.
    pub availability: PathBuf,
    /// Its lock file.
    pub lock: PathBuf,
    /// What the holder wrote into the lock file (its process id and run directory).
    pub holder: String,
}

/// The lock held on an availability file while this process runs (released when
/// dropped or when the process ends).
#[derive(Debug)]
pub struct AvailabilityLock {
    _file: File,
}

impl AvailabilityLock {
    /// Takes the lock of `availability` for the run in `run_dir`. `Ok(None)`: the lock
    /// file cannot be created, the run goes on unguarded (logged).
    ///
    /// ```
    /// use rankmig::supervisor::availability_lock::AvailabilityLock;
    /// let dir = tempfile::tempdir()?;
    /// let av = dir.path().join("av");
    /// std::fs::write(&av, "n1 2\n")?;
    /// let first = AvailabilityLock::take(&av, &dir.path().join("run1"))?;
    /// assert!(first.is_some());
    /// // Held: another taker (here, another open file of this process) is refused,
    /// // and told who holds it.
    /// let refused = AvailabilityLock::take(&av, &dir.path().join("run2")).unwrap_err();
    /// assert!(refused.holder.contains("run1"));
    /// drop(first);
    /// assert!(AvailabilityLock::take(&av, &dir.path().join("run2"))?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn take(availability: &Path, run_dir: &Path) -> Result<Option<Self>, AvailabilityTaken> {
        let lock = lock_path(availability);
        let mut file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
        {
            Ok(f) => f,
            Err(e) => {
                log::warn!(
                    "{}: cannot create it ({e}): nothing keeps a second rankmig run from following {} too",
                    lock.display(),
                    availability.display()
                );
                return Ok(None);
            }
        };
        // SAFETY: flock(2) on a descriptor this function owns.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !locked {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(AvailabilityTaken {
                availability: availability.to_owned(),
                lock,
                holder: if holder.is_empty() {
                    "its process id is not recorded".to_owned()
                } else {
                    holder.to_owned()
                },
            });
        }
        let me = format!(
            "process {} with run directory {}\n",
            std::process::id(),
            run_dir.display()
        );
        let written = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(me.as_bytes()));
        if let Err(e) = written {
            log::debug!("{}: cannot record this run in it: {e}", lock.display());
        }
        Ok(Some(Self { _file: file }))
    }
}
