//! The files a rank writes through rankmig (issue 54): output that stays right across
//! migrations and restarts.
//!
//! A rank opens an output file with [`OutputFiles::open`] (in Rust `Job::output_file`,
//! in C `rankmig_open_output`, in Fortran the `rankmig` module's `rankmig_open_output`)
//! and writes through it. rankmig buffers what is written and:
//!
//! - at each checkpoint, flushes every open file (to the disk: `fdatasync`) and records
//!   how many bytes each holds in the checkpoint, beside the state ([`OutputRecord`],
//!   after the state in the rank's checkpoint file, so it is committed with it);
//! - at a restart from that checkpoint, truncates each file to the recorded length when
//!   the program opens it again: what was written after the checkpoint is written again
//!   by the resumed loop, exactly once;
//! - at a migration, flushes and closes the leaving rank's files before its state is
//!   handed over, the record travelling with the state; the arriving process opens each
//!   for appending at that point, and never truncates it;
//! - at a fresh start, creates the file or truncates it, as `fopen(path, "w")` would.
//!
//! Whichever rank opens a file records it: a file per rank, or one only rank 0 opens
//! (it follows rank 0 when rank 0 moves). A path is never followed through a symbolic
//! link, must be a regular file of this user with one link ([`crate::own_files`]), and
//! must hold at least the recorded bytes; otherwise the open fails ([`OutputError`]).
//!
//! ```
//! use std::io::Write;
//! use rankmig::output_files::{OutputFiles, OutputRecord, Resume};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let path = dir.path().join("out.txt");
//! // A first run: 2 lines, a checkpoint, 1 more line, then the process dies.
//! let files = OutputFiles::default();
//! files.start(Resume::Fresh, OutputRecord::default());
//! let mut out = files.open(&path)?;
//! writeln!(out, "iteration 1")?;
//! writeln!(out, "iteration 2")?;
//! let record = files.record()?; // what a checkpoint stores
//! writeln!(out, "iteration 3")?;
//! out.flush()?;
//! drop((out, files));
//! // The restart from that checkpoint truncates the file to its recorded length.
//! let files = OutputFiles::default();
//! files.start(Resume::Restart, record);
//! let mut out = files.open(&path)?;
//! writeln!(out, "iteration 3")?;
//! out.close()?;
//! assert_eq!(std::fs::read_to_string(&path)?, "iteration 1\niteration 2\niteration 3\n");
//! # Ok(()) }
//! ```

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::de::{DeserializeOwned, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::own_files::{self, FileError};

/// Bytes buffered per file before they are written to it.
pub const BUFFER: usize = 64 << 10;

/// Why an output file could not be opened, written or recorded.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path is a symbolic link, not a regular file, another user's file or a file
    /// with several links (refused: neither followed nor written), or an I/O error.
    #[error("output file: {0}")]
    File(#[from] FileError),
    /// The file holds fewer bytes than were recorded for it: it was cut or replaced
    /// since, and the lines the run wrote before cannot be kept.
    #[error(
        "output file {path}: holds {size} bytes, fewer than the {recorded} bytes {recorded_by} \
         recorded; it was truncated or replaced since (restore it, or start the job afresh)"
    )]
    Shorter {
        /// The file.
        path: PathBuf,
        /// Its size now.
        size: u64,
        /// The size recorded.
        recorded: u64,
        /// Who recorded it: "the checkpoint", "the process this one replaces".
        recorded_by: &'static str,
    },
    /// The path is already open as an output file of this process.
    #[error("output file {path}: already open in this process")]
    AlreadyOpen {
        /// The file.
        path: PathBuf,
    },
    /// A file opened before the job knows whether it resumes: in Rust, before
    /// `Job::restore_or`.
    #[error(
        "output file {path}: opened before the state was restored; open output files after \
         Job::restore_or (whether to truncate the file depends on it)"
    )]
    BeforeRestore {
        /// The file.
        path: PathBuf,
    },
    /// A handle that names no open output file (never opened, or closed).
    #[error("output file handle {handle}: no such open file")]
    NotOpen {
        /// The handle.
        handle: usize,
    },
}

/// How this process's state started, which decides what an open does to a file with a
/// recorded length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// A fresh start: every file is created or truncated to 0.
    Fresh,
    /// A restart from a checkpoint: a recorded file is truncated to its recorded
    /// length, any other created or truncated.
    Restart,
    /// A process that replaces a migrated rank: a recorded file is opened for appending
    /// as it is, never truncated; any other too (created if missing).
    Arrival,
}

/// What a checkpoint (or a migration's state message) holds of a rank's output files:
/// each file's path, as the program gave it, and how many bytes it held after the last
/// flush.
///
/// ```
/// use rankmig::output_files::OutputRecord;
/// let mut record = OutputRecord::default();
/// record.set("out-0.txt".as_ref(), 42);
/// let bytes = bincode::serialize(&record).unwrap();
/// let back: OutputRecord = bincode::deserialize(&bytes).unwrap();
/// assert_eq!(back.written("out-0.txt".as_ref()), Some(42));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputRecord {
    files: Vec<(PathBuf, u64)>,
}

/// First field of a serialised [`OutputRecord`]: what is read after a state is one.
const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"RMof");

impl OutputRecord {
    /// The recorded length of `path`, if any.
    pub fn written(&self, path: &Path) -> Option<u64> {
        self.files.iter().find(|(p, _)| p == path).map(|(_, n)| *n)
    }

    /// Records `written` bytes for `path`.
    pub fn set(&mut self, path: &Path, written: u64) {
        match self.files.iter_mut().find(|(p, _)| p == path) {
            Some(entry) => entry.1 = written,
            None => self.files.push((path.to_path_buf(), written)),
        }
    }

    /// The recorded files and lengths, in the order they were recorded.
    pub fn files(&self) -> &[(PathBuf, u64)] {
        &self.files
    }

    /// True without any file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

impl Serialize for OutputRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let files: Vec<(&[u8], u64)> = (self.files.iter())
            .map(|(p, n)| (p.as_os_str().as_bytes(), *n))
            .collect();
        let mut t = serializer.serialize_tuple(2)?;
        t.serialize_element(&RECORD_MAGIC)?;
        t.serialize_element(&files)?;
        t.end()
    }
}

impl<'de> Deserialize<'de> for OutputRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OutputRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an output file record")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OutputRecord, A::Error> {
                let magic: u32 = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                if magic != RECORD_MAGIC {
                    return Err(serde::de::Error::custom("not an output file record"));
                }
                let files: Vec<(Vec<u8>, u64)> = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(1, &self))?;
                Ok(OutputRecord {
                    files: (files.into_iter())
                        .map(|(p, n)| (PathBuf::from(OsString::from_vec(p)), n))
                        .collect(),
                })
            }
        }
        deserializer.deserialize_tuple(2, V)
    }
}

/// Opens `path` for appending as the rules of [`Resume`] say, given the length
/// recorded for it (`recorded`); returns the file and its length after the open (where
/// the next byte goes).
///
/// - `truncate` (a fresh start, a restart, a file this process closed and opens again):
///   without a recorded length the file is created or cut to 0; with one it must hold
///   at least that many bytes and is cut to it (a missing file is created when the
///   recorded length is 0).
/// - not `truncate` (an arrival): the file is opened as it is (created if missing);
///   with a recorded length it must hold at least that many bytes.
///
/// The file is opened without following a symbolic link and checked on the open
/// descriptor to be a regular file of this user with one link before anything is cut.
///
/// ```
/// use rankmig::output_files::open_at;
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.txt");
/// std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
/// let (_file, at) = open_at(&path, Some(8), true).unwrap();
/// assert_eq!((at, std::fs::read_to_string(&path).unwrap()), (8, "one\ntwo\n".into()));
/// let e = open_at(&path, Some(100), true).unwrap_err();
/// assert!(e.to_string().contains("fewer than the 100 bytes"), "{e}");
/// ```
pub fn open_at(
    path: &Path,
    recorded: Option<u64>,
    truncate: bool,
) -> Result<(File, u64), OutputError> {
    let create = recorded.is_none_or(|n| n == 0) || !truncate;
    let file = OpenOptions::new()
        .append(true)
        .create(create)
        .mode(0o666)
        .custom_flags(own_files::SAFE_OPEN_FLAGS)
        .open(path)
        .map_err(|e| match (e.kind(), recorded) {
            (std::io::ErrorKind::NotFound, Some(n)) => OutputError::Shorter {
                path: path.to_path_buf(),
                size: 0,
                recorded: n,
                recorded_by: recorder(truncate),
            },
            _ => OutputError::File(own_files::open_error("open", path, e)),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| FileError::io("stat", path, e))?;
    own_files::check_own_file(&meta, path)?;
    let size = meta.len();
    if let Some(n) = recorded {
        if size < n {
            return Err(OutputError::Shorter {
                path: path.to_path_buf(),
                size,
                recorded: n,
                recorded_by: recorder(truncate),
            });
        }
    }
    let keep = match (truncate, recorded) {
        (false, _) => size,
        (true, Some(n)) => n,
        (true, None) => 0,
    };
    if keep < size {
        file.set_len(keep)
            .map_err(|e| FileError::io("truncate", path, e))?;
    }
    Ok((file, keep))
}

fn recorder(truncate: bool) -> &'static str {
    if truncate {
        "the checkpoint"
    } else {
        "the process this one replaces"
    }
}

/// One output file of this process.
#[derive(Debug)]
struct Entry {
    path: PathBuf,
    /// `None` once closed, or while handed over at a migration.
    file: Option<File>,
    /// Written by the program, not yet to the file.
    buffer: Vec<u8>,
    /// Bytes in the file (its length: where the buffer goes).
    flushed: u64,
    /// Closed by the program (a write fails; a new open appends to it).
    closed: bool,
}

impl Entry {
    /// Writes the buffer to the file (reopened first if it was handed over).
    fn flush(&mut self) -> Result<(), OutputError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        if self.file.is_none() {
            // Handed over at a migration that was then called off: this process goes on.
            let (file, at) = open_at(&self.path, Some(self.flushed), false)?;
            self.file = Some(file);
            self.flushed = at;
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        file.write_all(&self.buffer)
            .map_err(|e| FileError::io("write", &self.path, e))?;
        self.flushed += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), OutputError> {
        if self.buffer.len() + bytes.len() > BUFFER {
            self.flush()?;
        }
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= BUFFER {
            self.flush()?;
        }
        Ok(())
    }

    /// Flushes and syncs the file's data to the disk.
    fn sync(&mut self) -> Result<(), OutputError> {
        self.flush()?;
        if let Some(file) = &self.file {
            file.sync_data()
                .map_err(|e| FileError::io("fsync", &self.path, e))?;
        }
        Ok(())
    }
}

/// The output files of a process: in the order opened; a handle is an index.
#[derive(Debug, Default)]
struct Registry {
    /// How the state started; `None` until known.
    start: Option<Resume>,
    /// What the checkpoint restored or the rank this process replaces recorded.
    recorded: OutputRecord,
    entries: Vec<Entry>,
}

impl Registry {
    fn entry(&mut self, handle: usize) -> Result<&mut Entry, OutputError> {
        match self.entries.get_mut(handle) {
            Some(e) if !e.closed => Ok(e),
            _ => Err(OutputError::NotOpen { handle }),
        }
    }

    /// Flushes (and syncs) every file and records their lengths, with what was
    /// recorded before of files not opened since.
    fn record(&mut self) -> Result<OutputRecord, OutputError> {
        let mut record = self.recorded.clone();
        for entry in &mut self.entries {
            if !entry.closed {
                entry.sync()?;
            }
            record.set(&entry.path, entry.flushed);
        }
        Ok(record)
    }
}

/// The output files of a process (cheap to clone: the clones share them).
///
/// See the [module](self) for what happens at checkpoints, restarts and migrations.
#[derive(Debug, Clone, Default)]
pub struct OutputFiles {
    inner: Arc<Mutex<Registry>>,
}

impl OutputFiles {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while writing leaves the buffers as they were: still usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Says how this process's state started and what was recorded of its files (by the
    /// checkpoint restored, or by the rank it replaces); opens are refused before.
    pub fn start(&self, how: Resume, recorded: OutputRecord) {
        let mut r = self.lock();
        r.start = Some(how);
        r.recorded = recorded;
    }

    /// How the state started, once known.
    pub fn started(&self) -> Option<Resume> {
        self.lock().start
    }

    /// Opens `path` for writing through rankmig: created or truncated at a fresh start
    /// (or without a record of it), cut to its recorded length at a restart, appended
    /// to as it is in a process that arrived by migration (see [`open_at`]).
    pub fn open(&self, path: &Path) -> Result<OutputFile, OutputError> {
        let handle = self.open_handle(path)?;
        Ok(OutputFile {
            files: self.clone(),
            handle,
            path: path.to_path_buf(),
        })
    }

    /// [`OutputFiles::open`], giving the handle of the C interface.
    pub fn open_handle(&self, path: &Path) -> Result<usize, OutputError> {
        let mut r = self.lock();
        let Some(start) = r.start else {
            return Err(OutputError::BeforeRestore {
                path: path.to_path_buf(),
            });
        };
        let mine = r.entries.iter().position(|e| e.path == path);
        if let Some(i) = mine {
            if !r.entries[i].closed {
                return Err(OutputError::AlreadyOpen {
                    path: path.to_path_buf(),
                });
            }
        }
        // A file this process closed is continued; else what was recorded for it.
        let (recorded, truncate) = match mine {
            Some(i) => (Some(r.entries[i].flushed), true),
            None => (
                r.recorded.written(path).filter(|_| start != Resume::Fresh),
                start != Resume::Arrival,
            ),
        };
        let (file, at) = open_at(path, recorded, truncate)?;
        let entry = Entry {
            path: path.to_path_buf(),
            file: Some(file),
            buffer: Vec::new(),
            flushed: at,
            closed: false,
        };
        match mine {
            Some(i) => {
                r.entries[i] = entry;
                Ok(i)
            }
            None => {
                r.entries.push(entry);
                Ok(r.entries.len() - 1)
            }
        }
    }

    /// Writes `bytes` to the file of `handle` (buffered).
    pub fn write(&self, handle: usize, bytes: &[u8]) -> Result<(), OutputError> {
        self.lock().entry(handle)?.write(bytes)
    }

    /// Writes what is buffered for `handle` to its file.
    pub fn flush(&self, handle: usize) -> Result<(), OutputError> {
        self.lock().entry(handle)?.flush()
    }

    /// Flushes and closes the file of `handle`. Its length stays recorded: opened again
    /// by this process, it is appended to.
    pub fn close(&self, handle: usize) -> Result<(), OutputError> {
        let mut r = self.lock();
        let entry = r.entry(handle)?;
        let flushed = entry.flush();
        entry.closed = true;
        entry.file = None;
        flushed
    }

    /// At a checkpoint: flushes every open file to the disk and returns the lengths to
    /// record.
    pub fn record(&self) -> Result<OutputRecord, OutputError> {
        self.lock().record()
    }

    /// At a migration that moves this rank: flushes every file to the disk, closes it
    /// and returns the lengths its replacement continues from. Should the migration be
    /// called off, the next write reopens the file.
    pub fn hand_over(&self) -> Result<OutputRecord, OutputError> {
        let mut r = self.lock();
        let record = r.record()?;
        for entry in &mut r.entries {
            entry.file = None;
        }
        Ok(record)
    }

    /// At the end: flushes and closes every file.
    pub fn close_all(&self) -> Result<(), OutputError> {
        let mut r = self.lock();
        let mut first_error = Ok(());
        for entry in r.entries.iter_mut().filter(|e| !e.closed) {
            let flushed = entry.flush();
            entry.closed = true;
            entry.file = None;
            if first_error.is_ok() {
                first_error = flushed;
            }
        }
        first_error
    }
}

/// An output file opened through rankmig ([`OutputFiles::open`], `Job::output_file`):
/// a buffered [`Write`]r whose length is recorded at each checkpoint and handed over at
/// each migration. Dropping it flushes and closes it (errors ignored: call
/// [`OutputFile::close`] to see them).
///
/// ```
/// use std::io::Write;
/// use rankmig::output_files::{OutputFiles, OutputRecord, Resume};
/// # let dir = tempfile::tempdir().unwrap();
/// let files = OutputFiles::default();
/// files.start(Resume::Fresh, OutputRecord::default());
/// let mut out = files.open(&dir.path().join("log.txt")).unwrap();
/// writeln!(out, "step 1").unwrap();
/// out.close().unwrap();
/// ```
#[derive(Debug)]
pub struct OutputFile {
    files: OutputFiles,
    handle: usize,
    path: PathBuf,
}

impl OutputFile {
    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and closes it.
    pub fn close(mut self) -> Result<(), OutputError> {
        let closed = self.files.close(self.handle);
        self.handle = usize::MAX;
        closed
    }
}

impl Write for OutputFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.files
            .write(self.handle, bytes)
            .map_err(std::io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.files.flush(self.handle).map_err(std::io::Error::other)
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if self.handle != usize::MAX {
            let _ = self.files.close(self.handle);
        }
    }
}

/// A state and the record of the output files, as a checkpoint holds them: the state's
/// bytes, then the record's (taken when the state is serialised: the files are flushed
/// there).
pub struct WithOutputs<'a, T> {
    /// The application's state.
    pub state: &'a T,
    /// The output files of the process.
    pub files: &'a OutputFiles,
}

impl<T: Serialize> Serialize for WithOutputs<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let record = self.files.record().map_err(serde::ser::Error::custom)?;
        let mut t = serializer.serialize_tuple(2)?;
        t.serialize_element(self.state)?;
        t.serialize_element(&record)?;
        t.end()
    }
}

/// A state read back from a checkpoint, with the record of the output files after it
/// (empty when the checkpoint has none: one written before output files, or by a
/// program that opened none).
#[derive(Debug)]
pub struct Restored<T> {
    /// The application's state.
    pub state: T,
    /// The record of the output files.
    pub record: OutputRecord,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Restored<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: DeserializeOwned> Visitor<'de> for V<T> {
            type Value = Restored<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a state, then the record of the output files")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Restored<T>, A::Error> {
                let state: T = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                // A checkpoint without a record ends with the state.
                let record = seq.next_element().ok().flatten().unwrap_or_default();
                Ok(Restored { state, record })
            }
        }
        deserializer.deserialize_tuple(2, V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(how: Resume, record: OutputRecord) -> OutputFiles {
        let f = OutputFiles::default();
        f.start(how, record);
        f
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn the_record_follows_the_state_and_an_old_checkpoint_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(Resume::Fresh, OutputRecord::default());
        let mut out = f.open(&dir.path().join("a")).unwrap();
        out.write_all(b"12345").unwrap();
        let state = (7u64, vec![1.5f64, 2.5]);
        let bytes = bincode::serialize(&WithOutputs {
            state: &state,
            files: &f,
        })
        .unwrap();
        assert_eq!(read(&dir.path().join("a")), "12345", "flushed by the save");
        let back: Restored<(u64, Vec<f64>)> = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back.state, state);
        assert_eq!(back.record.written(&dir.path().join("a")), Some(5));
        // The state alone reads as it did before records (trailing bytes allowed).
        let plain: (u64, Vec<f64>) = bincode::deserialize(&bytes).unwrap();
        assert_eq!(plain, state);
        // A checkpoint of the state alone (before output files): an empty record.
        let old: Restored<(u64, Vec<f64>)> =
            bincode::deserialize(&bincode::serialize(&state).unwrap()).unwrap();
        assert_eq!((old.state, old.record.is_empty()), (state, true));
    }

    #[test]
    fn a_restart_cuts_to_the_record_and_a_fresh_start_to_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "l1\nl2\nl3\n").unwrap();
        let mut record = OutputRecord::default();
        record.set(&path, 3);
        let f = files(Resume::Restart, record.clone());
        let mut out = f.open(&path).unwrap();
        assert_eq!(read(&path), "l1\n");
        writeln!(out, "l2").unwrap();
        out.close().unwrap();
        assert_eq!(read(&path), "l1\nl2\n");
        // Not recorded at a restart (opened after the checkpoint): from nothing.
        let other = dir.path().join("other");
        std::fs::write(&other, "old\n").unwrap();
        drop(f.open(&other).unwrap());
        assert_eq!(read(&other), "");
        // A fresh start ignores any record.
        let f = files(Resume::Fresh, record);
        drop(f.open(&path).unwrap());
        assert_eq!(read(&path), "");
    }

    #[test]
    fn an_arrival_appends_and_never_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "l1\nl2\n").unwrap();
        let mut record = OutputRecord::default();
        record.set(&path, 6);
        let f = files(Resume::Arrival, record.clone());
        let mut out = f.open(&path).unwrap();
        writeln!(out, "l3").unwrap();
        out.flush().unwrap();
        assert_eq!(read(&path), "l1\nl2\nl3\n");
        assert_eq!(f.record().unwrap().written(&path), Some(9));
        // A file the replaced rank did not record is appended to as well.
        let other = dir.path().join("other");
        std::fs::write(&other, "kept\n").unwrap();
        drop(f.open(&other).unwrap());
        assert_eq!(read(&other), "kept\n");
        // Shorter than the replaced rank left it: refused, nothing changed.
        record.set(&path, 100);
        let f = files(Resume::Arrival, record);
        let e = f.open(&path).unwrap_err();
        assert!(
            matches!(
                e,
                OutputError::Shorter {
                    size: 9,
                    recorded: 100,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("the process this one replaces"),
            "{e}"
        );
        assert_eq!(read(&path), "l1\nl2\nl3\n");
    }

    #[test]
    fn shorter_than_recorded_or_missing_is_refused_at_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "ab").unwrap();
        let mut record = OutputRecord::default();
        record.set(&path, 5);
        let missing = dir.path().join("missing");
        record.set(&missing, 4);
        let f = files(Resume::Restart, record);
        let e = f.open(&path).unwrap_err();
        assert!(
            matches!(
                e,
                OutputError::Shorter {
                    size: 2,
                    recorded: 5,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("the checkpoint recorded"), "{e}");
        assert_eq!(read(&path), "ab", "left as it was");
        let e = f.open(&missing).unwrap_err();
        assert!(matches!(e, OutputError::Shorter { size: 0, .. }), "{e}");
        assert!(!missing.exists(), "not created");
    }

    #[test]
    fn a_link_is_refused_and_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("theirs");
        std::fs::write(&target, "theirs\n").unwrap();
        let link = dir.path().join("out");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let f = files(Resume::Fresh, OutputRecord::default());
        let e = f.open(&link).unwrap_err();
        assert!(
            matches!(&e, OutputError::File(FileError::Unsafe { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("a symbolic link"), "{e}");
        assert_eq!(read(&target), "theirs\n");
        // A hard link (a file with two names) is refused too, and left whole.
        let hard = dir.path().join("hard");
        std::fs::hard_link(&target, &hard).unwrap();
        let e = f.open(&hard).unwrap_err();
        assert!(e.to_string().contains("2 hard links"), "{e}");
        assert_eq!(read(&target), "theirs\n");
        // A directory cannot be opened for writing: its path is in the message.
        let e = f.open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("Is a directory"), "{e}");
        assert!(
            e.to_string().contains(&dir.path().display().to_string()),
            "{e}"
        );
    }

    #[test]
    fn opening_before_the_start_is_known_twice_or_a_closed_handle_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let f = OutputFiles::default();
        let e = f.open(&path).unwrap_err();
        assert!(matches!(e, OutputError::BeforeRestore { .. }), "{e}");
        assert!(!path.exists());
        f.start(Resume::Fresh, OutputRecord::default());
        let h = f.open_handle(&path).unwrap();
        let e = f.open_handle(&path).unwrap_err();
        assert!(matches!(e, OutputError::AlreadyOpen { .. }), "{e}");
        f.write(h, b"one\n").unwrap();
        f.close(h).unwrap();
        let e = f.write(h, b"two\n").unwrap_err();
        assert!(
            matches!(e, OutputError::NotOpen { handle } if handle == h),
            "{e}"
        );
        // Opened again by the same process: continued, not truncated.
        let again = f.open_handle(&path).unwrap();
        f.write(again, b"two\n").unwrap();
        f.close_all().unwrap();
        assert_eq!(read(&path), "one\ntwo\n");
        assert_eq!(f.record().unwrap().written(&path), Some(8));
    }

    #[test]
    fn a_hand_over_flushes_and_closes_and_a_later_write_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let f = files(Resume::Fresh, OutputRecord::default());
        let h = f.open_handle(&path).unwrap();
        f.write(h, b"before\n").unwrap();
        let record = f.hand_over().unwrap();
        assert_eq!(record.written(&path), Some(7));
        assert_eq!(read(&path), "before\n");
        // The migration is called off: this process goes on writing.
        f.write(h, b"after\n").unwrap();
        f.close_all().unwrap();
        assert_eq!(read(&path), "before\nafter\n");
    }

    #[test]
    fn the_record_keeps_files_not_opened_again_and_large_writes_pass() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "xx").unwrap();
        let mut record = OutputRecord::default();
        record.set(&a, 2);
        let f = files(Resume::Restart, record);
        let h = f.open_handle(&b).unwrap();
        let big = vec![b'z'; 3 * BUFFER + 5];
        f.write(h, &big).unwrap();
        let now = f.record().unwrap();
        assert_eq!(now.written(&a), Some(2), "not opened since: kept");
        assert_eq!(now.written(&b), Some(big.len() as u64));
        assert_eq!(std::fs::metadata(&b).unwrap().len(), big.len() as u64);
    }
}
