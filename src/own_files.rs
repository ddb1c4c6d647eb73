//! Files of this user: an entry checked to be ours (a regular file with one link, or a
//! real directory, owned by this user, not a link), opened without following a link or
//! blocking on a FIFO, and written atomically and durably ([`write_atomic`]).
//!
//! The checkpoint files and their commit markers are written this way, and so is the
//! availability `rankmig run --rms` writes into the run directory.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a file of ours could not be checked, opened or written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// An I/O operation on a file or directory failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done ("write", "rename", ...).
        op: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The entry is not what we write: a symbolic link, a FIFO or device, a file or
    /// directory of another user, a file with more than one link. It is neither
    /// followed, read, reused nor removed.
    #[error("refusing to use {path}: {reason}")]
    Unsafe {
        /// The entry concerned.
        path: PathBuf,
        /// What it is, e.g. "a symbolic link".
        reason: String,
    },
}

impl FileError {
    /// Builds a [`FileError::Io`] for `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Builds a [`FileError::Unsafe`] for `path`.
    pub fn unsafe_entry(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Unsafe {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// Flags of every open of a file of ours: a symbolic link is not followed (`ELOOP`), a
/// FIFO does not block the open.
pub const SAFE_OPEN_FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// The effective user id of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// What kind of entry a file type is, for messages.
fn kind(ft: fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else {
        "a regular file"
    }
}

/// Checks metadata (of an open file, or from `symlink_metadata`) of an entry that
/// should be a regular file owned by this user with a single link.
pub fn check_own_file(meta: &Metadata, path: &Path) -> Result<(), FileError> {
    if !meta.file_type().is_file() {
        return Err(FileError::unsafe_entry(
            path,
            format!("not a regular file but {}", kind(meta.file_type())),
        ));
    }
    check_owner(meta, path)?;
    if meta.nlink() != 1 {
        return Err(FileError::unsafe_entry(
            path,
            format!("has {} hard links, a file of ours has one", meta.nlink()),
        ));
    }
    Ok(())
}

/// Checks `symlink_metadata` of an entry that should be a directory (not a link to
/// one) owned by this user.
pub fn check_own_dir(meta: &Metadata, path: &Path) -> Result<(), FileError> {
    if !meta.file_type().is_dir() {
        return Err(FileError::unsafe_entry(
            path,
            format!("not a directory but {}", kind(meta.file_type())),
        ));
    }
    check_owner(meta, path)
}

/// Checks that the entry of `meta` belongs to this user.
fn check_owner(meta: &Metadata, path: &Path) -> Result<(), FileError> {
    let me = euid();
    if meta.uid() != me {
        return Err(FileError::unsafe_entry(
            path,
            format!("owned by uid {}, not by this user (uid {me})", meta.uid()),
        ));
    }
    Ok(())
}

/// Turns an open error into [`FileError::Unsafe`] when it comes from the safety
/// flags (a link, or a FIFO without a reader), else into [`FileError::Io`].
pub fn open_error(op: &'static str, path: &Path, e: std::io::Error) -> FileError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => FileError::unsafe_entry(path, "a symbolic link"),
        Some(libc::ENXIO) => FileError::unsafe_entry(path, "a FIFO or device"),
        _ => FileError::io(op, path, e),
    }
}

/// Bytes written between two yields of the CPU by [`write_yielding`].
pub const YIELD_CHUNK: usize = 256 << 10;

/// Writes `bytes` to `f` [`YIELD_CHUNK`] bytes at a time, yielding the CPU after each
/// (`sched_yield`): a checkpoint written in the background then does not hold a CPU
/// for a whole scheduler slice while a rank of the application waits for it, as
/// every rank of a collective would wait in turn.
pub fn write_yielding(f: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    for chunk in bytes.chunks(YIELD_CHUNK) {
        f.write_all(chunk)?;
        std::thread::yield_now();
    }
    Ok(())
}

/// Writes `bytes` to `dir/name` atomically and durably.
///
/// A temporary file in the same directory (mode 0600) is written, fsynced and
/// renamed over the target, then the directory is fsynced. A reader sees either the
/// old file, no file, or the complete new one.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, FileError> {
    write_atomic_recycling(dir, name, bytes, None)
}

/// Like [`write_atomic`], but first tries to take over the file `spare` (a retired
/// checkpoint file of the same rank) as the temporary file and overwrite it in
/// place: rewriting allocated blocks is much cheaper than allocating new ones and
/// unlinking the old ones. Without a usable spare it creates a new file.
///
/// Nothing is written through a link: a spare is used only if it is a regular file of
/// this user with one link (checked on the open descriptor, opened without following
/// links), and a new temporary file is created exclusively (`O_CREAT|O_EXCL`), under
/// another name if something that is not a leftover file of ours holds the usual one.
/// The target name must be free or hold a regular file of this user.
pub fn write_atomic_recycling(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    spare: Option<&Path>,
) -> Result<PathBuf, FileError> {
    let target = dir.join(name);
    match fs::symlink_metadata(&target) {
        Ok(meta) => check_own_file(&meta, &target)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(FileError::io("stat", &target, e)),
    }
    let base = dir.join(format!(".{name}.tmp"));
    let (mut f, tmp, recycled) = match spare.and_then(|s| take_spare(s, &base)) {
        Some(f) => (f, base, true),
        None => {
            let (f, tmp) = create_temporary(&base)?;
            (f, tmp, false)
        }
    };
    write_yielding(&mut f, bytes).map_err(|e| FileError::io("write", &tmp, e))?;
    if recycled {
        f.set_len(bytes.len() as u64)
            .map_err(|e| FileError::io("truncate", &tmp, e))?;
    }
    f.sync_all().map_err(|e| FileError::io("fsync", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, &target).map_err(|e| FileError::io("rename", &tmp, e))?;
    sync_dir(dir)?;
    Ok(target)
}

/// Moves the spare file to `tmp` and opens it for overwriting, if it is a regular
/// file of this user with one link in a real directory of this user (not a link to
/// one: the file would then be someone else's); `None` (and the spare left alone, or
/// the moved name removed) otherwise.
fn take_spare(spare: &Path, tmp: &Path) -> Option<File> {
    let parent = spare.parent()?;
    check_own_dir(&fs::symlink_metadata(parent).ok()?, parent).ok()?;
    let meta = fs::symlink_metadata(spare).ok()?;
    check_own_file(&meta, spare).ok()?;
    match fs::symlink_metadata(tmp) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        _ => return None,
    }
    fs::rename(spare, tmp).ok()?;
    let opened = OpenOptions::new()
        .write(true)
        .custom_flags(SAFE_OPEN_FLAGS)
        .open(tmp)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| check_own_file(&m, tmp).is_ok()))
        .filter(|f| f.set_permissions(fs::Permissions::from_mode(0o600)).is_ok());
    if opened.is_none() {
        // Replaced between the check and the rename: drop the name, not the target.
        let _ = fs::remove_file(tmp);
    }
    opened
}

/// Creates a new temporary file exclusively, mode 0600: at `base`, after removing a
/// leftover regular file of ours there, else at `base.1`, `base.2`, ... when `base`
/// holds something else (which is left alone).
fn create_temporary(base: &Path) -> Result<(File, PathBuf), FileError> {
    const TRIES: u32 = 8;
    for i in 0..TRIES {
        let tmp = if i == 0 {
            base.to_path_buf()
        } else {
            let mut s = base.as_os_str().to_owned();
            s.push(format!(".{i}"));
            PathBuf::from(s)
        };
        match fs::symlink_metadata(&tmp) {
            Ok(meta) if check_own_file(&meta, &tmp).is_ok() => {
                fs::remove_file(&tmp).map_err(|e| FileError::io("remove", &tmp, e))?;
            }
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FileError::io("stat", &tmp, e)),
        }
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(SAFE_OPEN_FLAGS)
            .open(&tmp)
            .map_err(|e| open_error("create", &tmp, e))?;
        return Ok((f, tmp));
    }
    Err(FileError::unsafe_entry(
        base,
        format!(
            "this name and {} others are taken by foreign entries",
            TRIES - 1
        ),
    ))
}

/// Fsyncs a directory so that renames and removals in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| FileError::io("fsync directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_is_private_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_atomic(dir.path(), "f", b"one").unwrap();
        let p2 = write_atomic(dir.path(), "f", b"two, longer").unwrap();
        assert_eq!(p, p2);
        assert_eq!(fs::read(&p).unwrap(), b"two, longer");
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!dir.path().join(".f.tmp").exists());
    }

    #[test]
    fn a_link_in_place_of_the_target_is_refused_and_left() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::write(&elsewhere, b"theirs").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("f")).unwrap();
        let e = write_atomic(dir.path(), "f", b"ours").unwrap_err();
        assert!(matches!(e, FileError::Unsafe { .. }), "{e}");
        assert!(e.to_string().contains("a symbolic link"), "{e}");
        assert_eq!(fs::read(&elsewhere).unwrap(), b"theirs");
    }
}
