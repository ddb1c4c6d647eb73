//! The background writer: one thread per context, at most one write in flight.
//!
//! The caller serialises the state into a buffer that starts with [`HEADER_LEN`]
//! reserved bytes, then [`Writer::submit`]s it. The thread computes the payload
//! checksum, fills the header, writes the file atomically, checks it, and hands the
//! buffer back so the next save reuses its memory.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

use super::error::CheckpointError;
use super::storage::{self, FileHeader, HEADER_LEN};
use crate::own_files;

/// One file to write.
#[derive(Debug)]
pub struct WriteJob {
    /// The epoch directory (created if missing).
    pub dir: PathBuf,
    /// File name inside `dir`.
    pub name: String,
    /// Header; `payload_len` and `checksum` are filled in by the writer.
    pub header: FileHeader,
    /// [`HEADER_LEN`] reserved bytes followed by the payload.
    pub buf: Vec<u8>,
    /// A retired file of this rank to overwrite instead of creating a new one.
    pub spare: Option<PathBuf>,
    /// Other ranks' files (partner copies), on their way when the job was submitted:
    /// received from here once this rank's own file is written, then written into
    /// `dir`; the outcome waits for them. A sender dropped without sending is noted in
    /// [`WriteOutcome::notes`].
    pub late_copies: Option<Receiver<Vec<CopyFile>>>,
    /// A checkpoint file whose content is written instead of `buf` (a flush of a
    /// node-local file to the shared directory): read and verified by the writer
    /// thread, whose header then replaces `header`.
    pub source: Option<PathBuf>,
    /// Where the file goes instead when it cannot be written to `dir` (a full or broken
    /// node-local directory: the epoch's directory in the shared one), said in
    /// [`WriteOutcome::notes`] and [`WriteOutcome::fell_back`].
    pub fallback: Option<PathBuf>,
}

/// Another rank's file in a [`WriteJob`]: a partner copy.
#[derive(Debug)]
pub struct CopyFile {
    /// File name inside the job's directory.
    pub name: String,
    /// Header; `payload_len` and `checksum` are filled in by the writer.
    pub header: FileHeader,
    /// [`HEADER_LEN`] reserved bytes followed by the payload.
    pub buf: Vec<u8>,
}

/// The result of a write, with the buffer given back for reuse.
#[derive(Debug)]
pub struct WriteOutcome {
    /// Epoch written.
    pub epoch: u64,
    /// `Ok` once the file is durable and checked.
    pub result: Result<(), CheckpointError>,
    /// The job's buffer, for reuse.
    pub buf: Vec<u8>,
    /// What went wrong without failing the write: the file written to
    /// [`WriteJob::fallback`] instead, a partner copy not written.
    pub notes: Vec<String>,
    /// Whether the file went to [`WriteJob::fallback`].
    pub fell_back: bool,
}

/// Handle on the writer thread.
#[derive(Debug, Default)]
pub struct Writer {
    tx: Option<Sender<WriteJob>>,
    rx: Option<Receiver<WriteOutcome>>,
    thread: Option<JoinHandle<()>>,
    in_flight: bool,
    done: Option<WriteOutcome>,
    spare: Vec<u8>,
    /// A larger reusable buffer being made ready on a thread of its own
    /// ([`Writer::warm`]).
    warming: Option<JoinHandle<Vec<u8>>>,
}

/// A zero-filled buffer of `bytes` bytes whose every page has been written once: the
/// page faults of fresh memory (five times the cost of the copy itself on the machines
/// measured) are paid by whoever calls this, not by the copy that fills the buffer later.
/// The CPU is yielded every [`own_files::YIELD_CHUNK`] bytes, as a background write does
/// ([`own_files::write_yielding`]): made on a thread beside the application, the buffer
/// never holds a CPU for a whole scheduler slice.
///
/// ```
/// let buf = rankmig::checkpoint::writer::prefaulted(1 << 20);
/// assert_eq!(buf.len(), 1 << 20);
/// assert!(buf.iter().all(|&b| b == 0));
/// ```
// `vec![0; bytes]` would allocate zeroed memory, mapped only when first touched: the
// opposite of the point.
#[allow(clippy::slow_vector_initialization)]
pub fn prefaulted(bytes: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(bytes);
    while buf.len() < bytes {
        let end = bytes.min(buf.len() + own_files::YIELD_CHUNK);
        buf.resize(end, 0);
        std::thread::yield_now();
    }
    buf
}

impl Writer {
    /// A writer; its thread starts at the first submit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the reusable buffer (empty the first time, then the last one written, or
    /// the one [`Writer::warm`] made ready, waited for if it is not yet).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        if let Some(warmed) = self.warming.take().and_then(|h| h.join().ok()) {
            self.recycle(warmed);
        }
        std::mem::take(&mut self.spare)
    }

    /// Starts making a reusable buffer of at least `bytes` bytes ready on a thread of
    /// its own ([`prefaulted`]), unless the one there is large enough: the next save
    /// then copies the state into memory that is already mapped. [`Writer::warming`]
    /// says when it is done.
    pub fn warm(&mut self, bytes: usize) {
        if self.spare.capacity() >= bytes || self.warming.is_some() {
            return;
        }
        self.warming = std::thread::Builder::new()
            .name("rankmig-warm".into())
            .spawn(move || prefaulted(bytes))
            .ok();
    }

    /// Whether a buffer asked for with [`Writer::warm`] is still being made ready.
    pub fn warming(&self) -> bool {
        self.warming.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Whether a write was submitted and its outcome not yet taken.
    pub fn is_busy(&self) -> bool {
        self.in_flight || self.done.is_some()
    }

    /// Hands a job to the thread. The previous outcome must have been taken
    /// ([`Writer::wait`]) first: at most one write is in flight.
    pub fn submit(&mut self, job: WriteJob) -> Result<(), CheckpointError> {
        debug_assert!(!self.is_busy(), "one write in flight at most");
        if self.tx.is_none() {
            self.start()?;
        }
        let tx = self.tx.as_ref().ok_or(CheckpointError::WriterGone)?;
        tx.send(job).map_err(|_| CheckpointError::WriterGone)?;
        self.in_flight = true;
        Ok(())
    }

    /// Whether the write in flight has finished (without blocking).
    pub fn poll(&mut self) -> bool {
        if self.in_flight {
            if let Some(rx) = &self.rx {
                match rx.try_recv() {
                    Ok(out) => self.finish(out),
                    Err(TryRecvError::Empty) => return false,
                    Err(TryRecvError::Disconnected) => self.finish_gone(),
                }
            }
        }
        true
    }

    /// Waits for the write in flight and returns its outcome; `None` if none.
    pub fn wait(&mut self) -> Option<WriteOutcome> {
        if self.in_flight {
            match self.rx.as_ref().map(Receiver::recv) {
                Some(Ok(out)) => self.finish(out),
                _ => self.finish_gone(),
            }
        }
        let out = self.done.take()?;
        Some(out)
    }

    /// Gives a buffer back for reuse by the next save (the larger of it and the one
    /// kept is kept).
    pub fn recycle(&mut self, buf: Vec<u8>) {
        if buf.capacity() >= self.spare.capacity() {
            self.spare = buf;
        }
    }

    fn finish(&mut self, out: WriteOutcome) {
        self.in_flight = false;
        self.done = Some(out);
    }

    fn finish_gone(&mut self) {
        self.in_flight = false;
        self.done = Some(WriteOutcome {
            epoch: 0,
            result: Err(CheckpointError::WriterGone),
            buf: Vec::new(),
            notes: Vec::new(),
            fell_back: false,
        });
    }

    fn start(&mut self) -> Result<(), CheckpointError> {
        let (job_tx, job_rx) = mpsc::channel::<WriteJob>();
        let (out_tx, out_rx) = mpsc::channel::<WriteOutcome>();
        let thread = std::thread::Builder::new()
            .name("rankmig-ckpt-writer".into())
            .spawn(move || {
                for job in job_rx {
                    if out_tx.send(run_job(job)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| CheckpointError::io("spawn writer thread for", "checkpoint", e))?;
        self.tx = Some(job_tx);
        self.rx = Some(out_rx);
        self.thread = Some(thread);
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Fills in the header of `job.buf` and writes it atomically, then checks it; if that
/// fails, writes it to the job's fallback directory, if any; then waits for the partner
/// copies and writes them, a copy that fails being noted, not failing the write.
pub fn run_job(mut job: WriteJob) -> WriteOutcome {
    let epoch = job.header.epoch;
    let mut notes = Vec::new();
    let mut fell_back = false;
    let mut result = write_job(&mut job).map(drop);
    if let (Err(e), Some(fallback)) = (&result, job.fallback.take()) {
        let why = e.to_string();
        result = write_in(&fallback, &job.name, &job.buf, &job.header, None).map(|_| {
            fell_back = true;
            notes.push(format!(
                "epoch {epoch} written to {} instead of the node-local directory: {why}",
                fallback.display()
            ));
        });
    }
    if result.is_ok() {
        if let Some(late) = job.late_copies.take() {
            match late.recv() {
                Ok(mut copies) => notes.extend(write_copies(&job.dir, &mut copies)),
                Err(_) => notes.push(format!(
                    "partner copies of epoch {epoch} not received: their transfer was abandoned"
                )),
            }
        }
    }
    WriteOutcome {
        epoch,
        result,
        buf: job.buf,
        notes,
        fell_back,
    }
}

/// Writes the partner copies into `dir`; returns why each copy that failed did.
fn write_copies(dir: &Path, copies: &mut [CopyFile]) -> Vec<String> {
    let mut notes = Vec::new();
    for copy in copies {
        let path = dir.join(&copy.name);
        let written = fill_header(&mut copy.header, &mut copy.buf, &path)
            .and_then(|()| write_in(dir, &copy.name, &copy.buf, &copy.header, None));
        if let Err(e) = written {
            notes.push(format!(
                "partner copy of rank {} not kept for epoch {}: {e}",
                copy.header.rank, copy.header.epoch
            ));
        }
    }
    notes
}

/// Writes `job`'s file ([`run_job`]). Returns the directories fsynced because a
/// directory of the path was created for it ([`storage::ensure_own_subdir`]): the
/// checkpoint directory when the job's directory was made, the job's directory when the
/// epoch's was (the file itself and the epoch directory are synced by the atomic write).
fn write_job(job: &mut WriteJob) -> Result<Vec<PathBuf>, CheckpointError> {
    if let Some(source) = job.source.take() {
        let (header, bytes) = storage::read_verified(&source)?;
        job.header = header;
        job.buf = bytes;
    }
    fill_header(&mut job.header, &mut job.buf, &job.dir.join(&job.name))?;
    write_in(
        &job.dir,
        &job.name,
        &job.buf,
        &job.header,
        job.spare.as_deref(),
    )
}

/// Writes the file `name` of `buf` (its header filled in) into the epoch directory
/// `dir` atomically and checks it. The job directory holding the epoch is made again if
/// it was removed meanwhile (a run directory removed while the job runs is put back
/// without it). Returns the directories fsynced because a directory was created (see
/// [`write_job`]).
fn write_in(
    dir: &Path,
    name: &str,
    buf: &[u8],
    header: &FileHeader,
    spare: Option<&Path>,
) -> Result<Vec<PathBuf>, CheckpointError> {
    let mut synced = Vec::new();
    if let Some(job_dir) = dir.parent() {
        synced.extend(storage::ensure_own_subdir(job_dir)?);
    }
    synced.extend(storage::ensure_own_subdir(dir)?);
    let path = own_files::write_atomic_recycling(dir, name, buf, spare)?;
    storage::verify_written(&path, header)?;
    Ok(synced)
}

/// Computes the payload's length and checksum into `header` and writes the header into
/// the first [`HEADER_LEN`] bytes of `buf`.
fn fill_header(
    header: &mut FileHeader,
    buf: &mut [u8],
    path: &Path,
) -> Result<(), CheckpointError> {
    if buf.len() < HEADER_LEN {
        return Err(CheckpointError::corrupt(
            path,
            "internal: buffer shorter than the header",
        ));
    }
    let payload = &buf[HEADER_LEN..];
    header.payload_len = payload.len() as u64;
    header.checksum = storage::payload_checksum(payload);
    let mut head = [0u8; HEADER_LEN];
    header.encode(&mut head);
    buf[..HEADER_LEN].copy_from_slice(&head);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::storage::FORMAT_VERSION;

    fn job(dir: PathBuf, epoch: u64, payload: &[u8]) -> WriteJob {
        let mut buf = vec![0u8; HEADER_LEN];
        buf.extend_from_slice(payload);
        WriteJob {
            dir,
            name: "rank-000000.ckpt".into(),
            header: FileHeader {
                version: FORMAT_VERSION,
                rank: 0,
                ranks: 1,
                epoch,
                calls: 1,
                payload_len: 0,
                checksum: 0,
                job: "t".into(),
            },
            buf,
            spare: None,
            late_copies: None,
            source: None,
            fallback: None,
        }
    }

    #[test]
    fn writes_in_background_and_gives_buffer_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = Writer::new();
        w.submit(job(tmp.path().join("e1"), 1, b"abc")).unwrap();
        assert!(w.is_busy());
        let out = w.wait().unwrap();
        assert!(out.result.is_ok());
        assert_eq!(out.epoch, 1);
        assert_eq!(out.buf.len(), HEADER_LEN + 3);
        let (h, bytes) = storage::read_verified(&tmp.path().join("e1/rank-000000.ckpt")).unwrap();
        assert_eq!(h.payload_len, 3);
        assert_eq!(&bytes[HEADER_LEN..], b"abc");
        assert!(w.poll());
        assert!(w.wait().is_none());
    }

    /// The first save of an epoch creates its directory and fsyncs the job directory
    /// holding it (and the checkpoint directory, when the job directory is new too); a
    /// second rank's file in the same epoch creates nothing and syncs no parent.
    #[test]
    fn a_new_epoch_directory_is_synced_in_its_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let job_dir = tmp.path().join("job-t");
        let epoch_dir = job_dir.join("epoch-000001");
        let mut first = job(epoch_dir.clone(), 1, b"abc");
        assert_eq!(
            write_job(&mut first).unwrap(),
            [tmp.path().to_path_buf(), job_dir.clone()]
        );
        let mut second = job(epoch_dir.clone(), 1, b"def");
        second.name = "rank-000001.ckpt".into();
        assert_eq!(write_job(&mut second).unwrap(), Vec::<PathBuf>::new());
        let mut next = job(job_dir.join("epoch-000002"), 2, b"ghi");
        assert_eq!(write_job(&mut next).unwrap(), [job_dir]);
        assert!(storage::read_verified(&epoch_dir.join("rank-000001.ckpt")).is_ok());
    }

    #[test]
    fn failed_write_reports_error() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        let mut w = Writer::new();
        w.submit(job(file.join("sub"), 2, b"abc")).unwrap();
        let out = w.wait().unwrap();
        assert!(out.result.is_err());
    }
}
