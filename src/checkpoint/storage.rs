//! The per-rank checkpoint file: header layout, atomic write, read and verification.
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

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::CheckpointError;

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
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Flags of every open in the checkpoint directory: a symbolic link is not followed
/// (`ELOOP`), a FIFO does not block the open.
const SAFE_OPEN_FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK;

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
pub fn check_own_file(meta: &Metadata, path: &Path) -> Result<(), CheckpointError> {
    if !meta.file_type().is_file() {
        return Err(CheckpointError::unsafe_entry(
            path,
            format!("not a regular file but {}", kind(meta.file_type())),
        ));
    }
    check_owner(meta, path)?;
    if meta.nlink() != 1 {
        return Err(CheckpointError::unsafe_entry(
            path,
            format!("has {} hard links, a checkpoint file has one", meta.nlink()),
        ));
    }
    Ok(())
}

/// Checks `symlink_metadata` of an entry that should be a directory (not a link to
/// one) owned by this user.
pub fn check_own_dir(meta: &Metadata, path: &Path) -> Result<(), CheckpointError> {
    if !meta.file_type().is_dir() {
        return Err(CheckpointError::unsafe_entry(
            path,
            format!("not a directory but {}", kind(meta.file_type())),
        ));
    }
    check_owner(meta, path)
}

fn check_owner(meta: &Metadata, path: &Path) -> Result<(), CheckpointError> {
    let me = euid();
    if meta.uid() != me {
        return Err(CheckpointError::unsafe_entry(
            path,
            format!("owned by uid {}, not by this user (uid {me})", meta.uid()),
        ));
    }
    Ok(())
}

/// Turns an open error into [`CheckpointError::Unsafe`] when it comes from the safety
/// flags (a link, or a FIFO without a reader), else into [`CheckpointError::Io`].
fn open_error(op: &'static str, path: &Path, e: std::io::Error) -> CheckpointError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => CheckpointError::unsafe_entry(path, "a symbolic link"),
        Some(libc::ENXIO) => CheckpointError::unsafe_entry(path, "a FIFO or device"),
        _ => CheckpointError::io(op, path, e),
    }
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

/// Reads a whole checkpoint file and verifies its length and payload checksum.
///
/// The file is opened with [`open_own_file`]; nothing is read past the length its
/// header announces, and that length must be the file's size, so a file that never
/// ends (a device) or lies about its size cannot exhaust memory. Returns the header
/// and the whole file content (the payload starts at [`HEADER_LEN`]).
pub fn read_verified(path: &Path) -> Result<(FileHeader, Vec<u8>), CheckpointError> {
    let (mut f, size) = open_own_file(path)?;
    let (header, head) = read_header_from(&mut f, path)?;
    let len = header.file_len();
    if size != len {
        return Err(CheckpointError::corrupt(
            path,
            format!("file is {size} bytes, header says {len}"),
        ));
    }
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
/// directory) with mode 0700 if missing, and checks it is a real directory of this
/// user, not a link to one.
pub fn ensure_own_subdir(dir: &Path) -> Result<(), CheckpointError> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(CheckpointError::io("create directory", dir, e)),
    }
    let meta = fs::symlink_metadata(dir).map_err(|e| CheckpointError::io("stat", dir, e))?;
    check_own_dir(&meta, dir)
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
            .and_then(|meta| check_own_dir(&meta, &path))
            .map_err(|e| e.to_string());
        found.push(NamedSubdir { key, path, checked });
    }
    Ok(found)
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
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, CheckpointError> {
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
) -> Result<PathBuf, CheckpointError> {
    let target = dir.join(name);
    match fs::symlink_metadata(&target) {
        Ok(meta) => check_own_file(&meta, &target)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(CheckpointError::io("stat", &target, e)),
    }
    let base = dir.join(format!(".{name}.tmp"));
    let (mut f, tmp, recycled) = match spare.and_then(|s| take_spare(s, &base)) {
        Some(f) => (f, base, true),
        None => {
            let (f, tmp) = create_temporary(&base)?;
            (f, tmp, false)
        }
    };
    write_yielding(&mut f, bytes).map_err(|e| CheckpointError::io("write", &tmp, e))?;
    if recycled {
        f.set_len(bytes.len() as u64)
            .map_err(|e| CheckpointError::io("truncate", &tmp, e))?;
    }
    f.sync_all()
        .map_err(|e| CheckpointError::io("fsync", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, &target).map_err(|e| CheckpointError::io("rename", &tmp, e))?;
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
fn create_temporary(base: &Path) -> Result<(File, PathBuf), CheckpointError> {
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
                fs::remove_file(&tmp).map_err(|e| CheckpointError::io("remove", &tmp, e))?;
            }
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::io("stat", &tmp, e)),
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
    Err(CheckpointError::unsafe_entry(
        base,
        format!(
            "this name and {} others are taken by foreign entries",
            TRIES - 1
        ),
    ))
}

/// Fsyncs a directory so that renames and removals in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), CheckpointError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| CheckpointError::io("fsync directory", dir, e))
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
