//! The per-rank checkpoint file: header layout, read and verification (written with
//! [`crate::own_files::write_atomic_recycling`]).
//!
//! A file is a fixed 128-byte header followed by the payload (the bincode encoding of
//! the application's state). All integers are little-endian.
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 8 | magic `RMIGCKPT` |
//! | 8 | 4 | format version ([`FORMAT_VERSION`]) |
//! | 12 | 4 | checksum algorithm (1 = XXH3-64) |
//! | 16 | 4 | rank |
//! | 20 | 4 | rank count |
//! | 24 | 8 | epoch |
//! | 32 | 8 | `checkpoint!` calls made when the state was saved |
//! | 40 | 8 | payload length in bytes |
//! | 48 | 8 | XXH3-64 of the payload |
//! | 56 | 2 | length of the job name |
//! | 58 | 6 | reserved, zero |
//! | 64 | 56 | job name, UTF-8, zero padded |
//! | 120 | 8 | XXH3-64 of bytes 0..120 (header checksum) |

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use crate::own_files::{self, SAFE_OPEN_FLAGS, check_own_dir, check_own_file, euid, open_error};

/// The first eight bytes of every checkpoint file.
pub const MAGIC: [u8; 8] = *b"RMIGCKPT";
/// The file format written by this version of rankmig.
pub const FORMAT_VERSION: u32 = 1;
/// Size of the fixed header; the payload starts at this offset.
pub const HEADER_LEN: usize = 128;
/// Longest job name, in bytes, that fits in the header.
pub const JOB_NAME_MAX: usize = 56;
/// Identifier of the payload checksum algorithm (XXH3, 64 bits).
pub const CHECKSUM_XXH3: u32 = 1;

/// The decoded header of a checkpoint file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileHeader {
    /// Format version of the file.
    pub version: u32,
    /// Rank that wrote the file.
    pub rank: u32,
    /// Number of ranks of the job that wrote it.
    pub ranks: u32,
    /// Epoch number.
    pub epoch: u64,
    /// Number of `checkpoint!` calls made when the state was saved.
    pub calls: u64,
    /// Length of the payload in bytes.
    pub payload_len: u64,
    /// XXH3-64 of the payload.
    pub checksum: u64,
    /// Name of the job that wrote it.
    pub job: String,
}

/// Checksum of a payload (XXH3, 64 bits).
///
/// ```
/// let a = rankmig::checkpoint::storage::payload_checksum(b"state");
/// assert_eq!(a, rankmig::checkpoint::storage::payload_checksum(b"state"));
/// ```
pub fn payload_checksum(payload: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(payload)
}

impl FileHeader {
    /// Encodes the header into the first [`HEADER_LEN`] bytes of `out`.
    ///
    /// The job name must be at most [`JOB_NAME_MAX`] bytes (checked by the
    /// configuration); a longer one is cut.
    pub fn encode(&self, out: &mut [u8; HEADER_LEN]) {
        out.fill(0);
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&self.version.to_le_bytes());
        out[12..16].copy_from_slice(&CHECKSUM_XXH3.to_le_bytes());
        out[16..20].copy_from_slice(&self.rank.to_le_bytes());
        out[20..24].copy_from_slice(&self.ranks.to_le_bytes());
        out[24..32].copy_from_slice(&self.epoch.to_le_bytes());
        out[32..40].copy_from_slice(&self.calls.to_le_bytes());
        out[40..48].copy_from_slice(&self.payload_len.to_le_bytes());
        out[48..56].copy_from_slice(&self.checksum.to_le_bytes());
        let job = &self.job.as_bytes()[..self.job.len().min(JOB_NAME_MAX)];
        out[56..58].copy_from_slice(&(job.len() as u16).to_le_bytes());
        out[64..64 + job.len()].copy_from_slice(job);
        let sum = payload_checksum(&out[..120]);
        out[120..128].copy_from_slice(&sum.to_le_bytes());
    }

    /// Decodes a header, checking magic, version and header checksum.
    ///
    /// A newer format version gives [`CheckpointError::Refused`]; any other damage
    /// gives [`CheckpointError::Corrupt`]. `path` is only used in messages.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Self, CheckpointError> {
        if bytes.len() < HEADER_LEN {
            return Err(CheckpointError::corrupt(
                path,
                format!("truncated header: {} bytes, need {HEADER_LEN}", bytes.len()),
            ));
        }
        if bytes[0..8] != MAGIC {
            return Err(CheckpointError::corrupt(path, "bad magic"));
        }
        let version = le_u32(bytes, 8);
        if version > FORMAT_VERSION {
            return Err(CheckpointError::refused(
                path,
                format!(
                    "format version {version} is newer than {FORMAT_VERSION}, the newest this build reads"
                ),
            ));
        }
        if version != FORMAT_VERSION {
            return Err(CheckpointError::corrupt(
                path,
                format!("unknown format version {version}"),
            ));
        }
        let stored = le_u64(bytes, 120);
        let computed = payload_checksum(&bytes[..120]);
        if stored != computed {
            return Err(CheckpointError::corrupt(
                path,
                format!("header checksum {stored:016x} != computed {computed:016x}"),
            ));
        }
        Self::decode_fields(bytes, version, path)
    }

    fn decode_fields(bytes: &[u8], version: u32, path: &Path) -> Result<Self, CheckpointError> {
        let algo = le_u32(bytes, 12);
        if algo != CHECKSUM_XXH3 {
            return Err(CheckpointError::corrupt(
                path,
                format!("unknown checksum algorithm {algo}"),
            ));
        }
        let job_len = usize::from(u16::from_le_bytes([bytes[56], bytes[57]]));
        if job_len > JOB_NAME_MAX {
            return Err(CheckpointError::corrupt(
                path,
                format!("job name length {job_len}"),
            ));
        }
        let job = std::str::from_utf8(&bytes[64..64 + job_len])
            .map_err(|_| CheckpointError::corrupt(path, "job name is not UTF-8"))?
            .to_owned();
        Ok(Self {
            version,
            rank: le_u32(bytes, 16),
            ranks: le_u32(bytes, 20),
            epoch: le_u64(bytes, 24),
            calls: le_u64(bytes, 32),
            payload_len: le_u64(bytes, 40),
            checksum: le_u64(bytes, 48),
            job,
        })
    }

    /// Size the whole file must have (saturated at `u64::MAX`, a size no file has).
    pub fn file_len(&self) -> u64 {
        (HEADER_LEN as u64).saturating_add(self.payload_len)
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// What a file is expected to contain when read back for a restart.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// Job name.
    pub job: &'a str,
    /// Rank this file belongs to.
    pub rank: u32,
    /// Rank count of the job.
    pub ranks: u32,
    /// Epoch of the directory holding the file.
    pub epoch: u64,
}

/// Checks that a decoded header belongs to this job, rank and epoch.
///
/// Another job or rank count gives [`CheckpointError::Refused`]; a file in the wrong
/// place gives [`CheckpointError::Corrupt`].
pub fn check_identity(h: &FileHeader, want: &Expected, path: &Path) -> Result<(), CheckpointError> {
    if h.job != want.job {
        return Err(CheckpointError::refused(
            path,
            format!("written by job {:?}, this job is {:?}", h.job, want.job),
        ));
    }
    if h.ranks != want.ranks {
        return Err(CheckpointError::refused(
            path,
            format!(
                "written by a {}-rank job, this job has {} ranks",
                h.ranks, want.ranks
            ),
        ));
    }
    if h.rank != want.rank || h.epoch != want.epoch {
        return Err(CheckpointError::corrupt(
            path,
            format!(
                "header says rank {} epoch {}, expected rank {} epoch {}",
                h.rank, h.epoch, want.rank, want.epoch
            ),
        ));
    }
    Ok(())
}

/// Opens an existing file of the checkpoint directory for reading without following
/// a link or blocking on a FIFO, and checks on the open descriptor that it is a
/// regular file of this user with one link. Returns the file and its size.
pub fn open_own_file(path: &Path) -> Result<(File, u64), CheckpointError> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(SAFE_OPEN_FLAGS)
        .open(path)
        .map_err(|e| open_error("open", path, e))?;
    let meta = f
        .metadata()
        .map_err(|e| CheckpointError::io("stat", path, e))?;
    check_own_file(&meta, path)?;
    Ok((f, meta.len()))
}

/// Reads a small text file of the checkpoint directory (a commit marker) safely,
/// refusing one longer than `max` bytes.
pub fn read_small_text(path: &Path, max: u64) -> Result<String, CheckpointError> {
    let (f, _) = open_own_file(path)?;
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CheckpointError::io("read", path, e))?;
    if bytes.len() as u64 > max {
        return Err(CheckpointError::corrupt(
            path,
            format!("longer than {max} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| CheckpointError::corrupt(path, "not UTF-8"))
}

/// Opens the checkpoint file `path` ([`open_own_file`]), reads its header and checks
/// that the file's size is the one the header announces. Returns the file, positioned
/// after the header, the header, and the header's bytes.
fn open_sized(path: &Path) -> Result<(File, FileHeader, Vec<u8>), CheckpointError> {
    let (mut f, size) = open_own_file(path)?;
    let (header, head) = read_header_from(&mut f, path)?;
    let len = header.file_len();
    if size != len {
        return Err(CheckpointError::corrupt(
            path,
            format!("file is {size} bytes, header says {len}"),
        ));
    }
    Ok((f, header, head))
}

/// Reads a whole checkpoint file and verifies its length and payload checksum.
///
/// The file is opened with [`open_own_file`]; nothing is read past the length its
/// header announces, and that length must be the file's size, so a file that never
/// ends (a device) or lies about its size cannot exhaust memory. Returns the header
/// and the whole file content (the payload starts at [`HEADER_LEN`]).
pub fn read_verified(path: &Path) -> Result<(FileHeader, Vec<u8>), CheckpointError> {
    let (f, header, head) = open_sized(path)?;
    let len = header.file_len();
    let too_big = || CheckpointError::corrupt(path, format!("{len} bytes do not fit in memory"));
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(len).map_err(|_| too_big())?)
        .map_err(|_| too_big())?;
    bytes.extend_from_slice(&head);
    f.take(header.payload_len)
        .read_to_end(&mut bytes)
        .map_err(|e| CheckpointError::io("read", path, e))?;
    verify_payload(&header, &bytes, path)?;
    Ok((header, bytes))
}

/// Opens a checkpoint file for a restore: reads and checks its header and checks that
/// the file's size is the one the header announces, without reading the payload.
/// Returns the open file, positioned at the payload's first byte (read it with
/// [`super::payload::load`], which verifies the checksum), and the header.
pub fn open_checked(path: &Path) -> Result<(File, FileHeader), CheckpointError> {
    let (f, header, _) = open_sized(path)?;
    Ok((f, header))
}

/// Checks length and checksum of a file already in memory.
pub fn verify_payload(h: &FileHeader, bytes: &[u8], path: &Path) -> Result<(), CheckpointError> {
    if bytes.len() as u64 != h.file_len() {
        return Err(CheckpointError::corrupt(
            path,
            format!(
                "file is {} bytes, header says {}",
                bytes.len(),
                h.file_len()
            ),
        ));
    }
    let sum = payload_checksum(&bytes[HEADER_LEN..]);
    if sum != h.checksum {
        return Err(CheckpointError::corrupt(
            path,
            format!("payload checksum {sum:016x} != stored {:016x}", h.checksum),
        ));
    }
    Ok(())
}

fn read_header_from(f: &mut File, path: &Path) -> Result<(FileHeader, Vec<u8>), CheckpointError> {
    let mut buf = Vec::with_capacity(HEADER_LEN);
    f.take(HEADER_LEN as u64)
        .read_to_end(&mut buf)
        .map_err(|e| CheckpointError::io("read", path, e))?;
    Ok((FileHeader::decode(&buf, path)?, buf))
}

/// Reads only the header of a file (opened with [`open_own_file`]) and its size.
pub fn read_header(path: &Path) -> Result<(FileHeader, u64), CheckpointError> {
    let (mut f, size) = open_own_file(path)?;
    Ok((read_header_from(&mut f, path)?.0, size))
}

/// Creates `dir` (and its parents) with mode 0700 if it does not exist.
pub fn create_private_dir(dir: &Path) -> Result<(), CheckpointError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| CheckpointError::io("create directory", dir, e))
}

/// Prepares the checkpoint directory `dir` itself (not empty: the caller has refused
/// that): creates it (and its parents) with mode 0700 if missing, and checks it is a
/// directory owned by this user that neither its group nor others may write into,
/// unless `allow_shared` ([`CheckpointError::UnsafeDir`]). The path itself may be a
/// link chosen by the user; what lies inside is never followed.
pub fn prepare_dir(dir: &Path, allow_shared: bool) -> Result<(), CheckpointError> {
    create_private_dir(dir)?;
    if allow_shared {
        return match fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(CheckpointError::unsafe_entry(dir, "not a directory")),
            Err(e) => Err(CheckpointError::io("stat", dir, e)),
        };
    }
    prepare_dir_check(dir)
}

/// The checks of [`prepare_dir`] on an existing directory, without creating it and
/// without the opt-in: a directory of this user that its group and others cannot
/// write into.
pub fn prepare_dir_check(dir: &Path) -> Result<(), CheckpointError> {
    let meta = fs::metadata(dir).map_err(|e| CheckpointError::io("stat", dir, e))?;
    if !meta.is_dir() {
        return Err(CheckpointError::unsafe_entry(dir, "not a directory"));
    }
    let refuse = |reason| {
        Err(CheckpointError::UnsafeDir {
            path: dir.to_path_buf(),
            mode: meta.mode() & 0o7777,
            owner: meta.uid(),
            reason,
        })
    };
    if meta.uid() != euid() {
        return refuse("belongs to another user");
    }
    if meta.mode() & 0o022 != 0 {
        return refuse("is writable by its group or by others");
    }
    Ok(())
}

/// Creates the sub-directory `dir` of the checkpoint directory (an epoch, the spare
/// directory, a job's directory) with mode 0700 if missing, and checks it is a real
/// directory of this user, not a link to one.
///
/// When this call created `dir`, its parent is fsynced before returning, so the new
/// entry survives a crash of the machine: the first epoch of a job, which `--auto-restart`
/// restarts from, is then durable in its parent (its files and commit marker are
/// fsynced with the epoch directory itself). Returns that parent, the directory it
/// synced; `None` when `dir` already existed (another rank created it, and that rank's
/// write, which the commit waits for, synced the parent).
pub fn ensure_own_subdir(dir: &Path) -> Result<Option<PathBuf>, CheckpointError> {
    let created = match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(CheckpointError::io("create directory", dir, e)),
    };
    let meta = fs::symlink_metadata(dir).map_err(|e| CheckpointError::io("stat", dir, e))?;
    check_own_dir(&meta, dir)?;
    if !created {
        return Ok(None);
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    own_files::sync_dir(parent)?;
    Ok(Some(parent.to_path_buf()))
}

/// One entry of `dir` whose name [`scan_own_subdirs`] accepted.
#[derive(Debug, Clone)]
pub struct NamedSubdir<T> {
    /// What the name says (an epoch number, a job name).
    pub key: T,
    /// Its path.
    pub path: PathBuf,
    /// `Ok` for a real directory of this user; otherwise why it is not used (a link, a
    /// file, another user's directory).
    pub checked: Result<(), String>,
}

/// The entries of `dir` whose names `parse` accepts, each checked without following
/// links to be a real directory of this user ([`check_own_dir`]). A missing `dir` has
/// none.
pub fn scan_own_subdirs<T>(
    dir: &Path,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<NamedSubdir<T>>, CheckpointError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckpointError::io("list", dir, e)),
    };
    let mut found = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| CheckpointError::io("list", dir, e))?;
        let Some(key) = entry.file_name().to_str().and_then(&parse) else {
            continue;
        };
        let path = entry.path();
        // DirEntry::metadata does not follow a link.
        let checked = entry
            .metadata()
            .map_err(|e| CheckpointError::io("stat", &path, e))
            .and_then(|meta| Ok(check_own_dir(&meta, &path)?))
            .map_err(|e| e.to_string());
        found.push(NamedSubdir { key, path, checked });
    }
    Ok(found)
}

/// Checks a file just written: re-reads its header from disk, compares it with the
/// header written, and checks the file size. Cheap: the payload is not re-read (it
/// would only come from the page cache anyway).
pub fn verify_written(path: &Path, written: &FileHeader) -> Result<(), CheckpointError> {
    let (h, size) = read_header(path)?;
    if &h != written {
        return Err(CheckpointError::corrupt(
            path,
            "header read back differs from header written",
        ));
    }
    if size != h.file_len() {
        return Err(CheckpointError::corrupt(
            path,
            format!(
                "file is {size} bytes after write, expected {}",
                h.file_len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::own_files::{write_atomic, write_atomic_recycling};
    use std::os::unix::fs::PermissionsExt;

    fn header() -> FileHeader {
        FileHeader {
            version: FORMAT_VERSION,
            rank: 3,
            ranks: 4,
            epoch: 7,
            calls: 70,
            payload_len: 5,
            checksum: payload_checksum(b"hello"),
            job: "jacobi".into(),
        }
    }

    fn file_bytes(h: &FileHeader, payload: &[u8]) -> Vec<u8> {
        let mut hb = [0u8; HEADER_LEN];
        h.encode(&mut hb);
        let mut v = hb.to_vec();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn header_round_trips() {
        let h = header();
        let mut b = [0u8; HEADER_LEN];
        h.encode(&mut b);
        assert_eq!(FileHeader::decode(&b, Path::new("x")).unwrap(), h);
    }

    #[test]
    fn flipped_header_byte_is_corrupt() {
        let mut b = [0u8; HEADER_LEN];
        header().encode(&mut b);
        b[20] ^= 1;
        let e = FileHeader::decode(&b, Path::new("x")).unwrap_err();
        assert!(matches!(e, CheckpointError::Corrupt { .. }), "{e}");
    }

    #[test]
    fn newer_version_is_refused() {
        let mut b = [0u8; HEADER_LEN];
        header().encode(&mut b);
        b[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        let e = FileHeader::decode(&b, Path::new("f")).unwrap_err();
        assert!(matches!(e, CheckpointError::Refused { .. }), "{e}");
        assert!(e.to_string().contains("newer"), "{e}");
    }

    #[test]
    fn identity_mismatches() {
        let h = header();
        let want = Expected {
            job: "jacobi",
            rank: 3,
            ranks: 8,
            epoch: 7,
        };
        let e = check_identity(&h, &want, Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("4-rank"), "{e}");
        let want = Expected {
            job: "other",
            ranks: 4,
            ..want
        };
        let e = check_identity(&h, &want, Path::new("f")).unwrap_err();
        assert!(matches!(e, CheckpointError::Refused { .. }));
    }

    #[test]
    fn atomic_write_then_verified_read() {
        let dir = tempfile::tempdir().unwrap();
        let h = header();
        let p = write_atomic(dir.path(), "rank-3", &file_bytes(&h, b"hello")).unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        verify_written(&p, &h).unwrap();
        let (got, bytes) = read_verified(&p).unwrap();
        assert_eq!(got, h);
        assert_eq!(&bytes[HEADER_LEN..], b"hello");
        assert!(!dir.path().join(".rank-3.tmp").exists());
    }

    #[test]
    fn truncated_and_flipped_payload_are_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let h = header();
        let mut bytes = file_bytes(&h, b"hello");
        bytes.pop();
        let p = write_atomic(dir.path(), "t", &bytes).unwrap();
        let e = read_verified(&p).unwrap_err();
        assert!(e.to_string().contains("header says"), "{e}");
        let mut bytes = file_bytes(&h, b"hello");
        bytes[HEADER_LEN + 1] ^= 0x40;
        let p = write_atomic(dir.path(), "f", &bytes).unwrap();
        let e = read_verified(&p).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
    }

    #[test]
    fn recycled_spare_is_overwritten_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let spare = write_atomic(dir.path(), "old", &[7u8; 4096]).unwrap();
        let h = header();
        let bytes = file_bytes(&h, b"hello");
        let p = write_atomic_recycling(dir.path(), "new", &bytes, Some(&spare)).unwrap();
        assert!(!spare.exists());
        assert_eq!(fs::read(&p).unwrap(), bytes);
        let missing = dir.path().join("gone");
        let p = write_atomic_recycling(dir.path(), "new2", &bytes, Some(&missing)).unwrap();
        assert_eq!(read_verified(&p).unwrap().0, h);
    }

    #[test]
    fn private_dir_mode() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("a/b");
        create_private_dir(&d).unwrap();
        create_private_dir(&d).unwrap();
        let mode = fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
