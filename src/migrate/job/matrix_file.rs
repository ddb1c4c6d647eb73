//! Rank 0's writes of the run directory's matrix ([`record::MATRIX`]), on a thread of
//! their own: the application's call gathers the matrix (one row per rank to rank 0)
//! and hands it over; the text, the write and its two fsyncs happen beside the
//! application. Each write is still one rename ([`own_files::write_atomic`]): a reader
//! sees the previous matrix or the new one whole.
//!
//! At most one write is made at a time. A matrix handed over while one is being written
//! waits; a newer one handed over meanwhile replaces it (the file holds counts since
//! the launch, so the newest says all an older one would). [`MatrixFile::finish`]
//! waits for every write handed over: at the job's end, and before a process leaves
//! the job.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::matrix::{CommMatrix, MatrixFormat};
use crate::own_files;
use crate::run_dir::record;

/// One matrix to write.
#[derive(Debug)]
pub(super) struct MatrixWrite {
    /// The run directory.
    pub dir: PathBuf,
    /// The counts.
    pub matrix: CommMatrix,
    /// The run's `--matrix-format`.
    pub format: MatrixFormat,
}

/// What writes a [`MatrixWrite`]: [`write_or_warn`], or a test's stand-in.
type WriteFn = Box<dyn FnMut(MatrixWrite) + Send>;

/// Rank 0's writer of the run directory's matrix; its thread starts at the first write.
pub(super) struct MatrixFile {
    tx: Option<Sender<MatrixWrite>>,
    /// The thread, which gives `write` back when it ends.
    thread: Option<JoinHandle<WriteFn>>,
    /// What writes, while no thread runs.
    write: Option<WriteFn>,
}

impl std::fmt::Debug for MatrixFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixFile")
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl Default for MatrixFile {
    fn default() -> Self {
        Self::writing_with(Box::new(write_or_warn))
    }
}

impl MatrixFile {
    /// A writer whose thread calls `write` for each matrix it writes.
    fn writing_with(write: WriteFn) -> Self {
        Self {
            tx: None,
            thread: None,
            write: Some(write),
        }
    }

    /// Hands `job` to the thread (started now if it is not running) and returns at
    /// once. Without a thread (it could not be started), the matrix is written here.
    pub(super) fn write(&mut self, job: MatrixWrite) {
        if self.tx.is_none() {
            self.start();
        }
        let job = match &self.tx {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        match self.write.as_mut() {
            Some(write) => write(job),
            None => write_or_warn(job),
        }
    }

    /// Waits until every matrix handed over is written; the thread ends (the next
    /// [`MatrixFile::write`] starts another).
    pub(super) fn finish(&mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            match thread.join() {
                Ok(write) => self.write = Some(write),
                Err(_) => log::warn!("the thread writing the communication matrix panicked"),
            }
        }
    }

    fn start(&mut self) {
        let Some(mut write) = self.write.take() else {
            return;
        };
        let (tx, rx) = mpsc::channel::<MatrixWrite>();
        let spawned = std::thread::Builder::new()
            .name("rankmig-matrix".into())
            .spawn(move || {
                while let Some(job) = newest(&rx) {
                    write(job);
                }
                write
            });
        match spawned {
            Ok(thread) => {
                self.tx = Some(tx);
                self.thread = Some(thread);
            }
            // `write` went with the closure: matrices are written by the caller.
            Err(e) => log::warn!("cannot start the thread writing the communication matrix: {e}"),
        }
    }
}

impl Drop for MatrixFile {
    /// The writes handed over are made before the job goes.
    fn drop(&mut self) {
        self.finish();
    }
}

/// The next matrix to write: waits for one, then takes the newest of those waiting.
/// `None` once the sender is gone and nothing waits.
fn newest(rx: &Receiver<MatrixWrite>) -> Option<MatrixWrite> {
    let mut job = rx.recv().ok()?;
    while let Ok(newer) = rx.try_recv() {
        job = newer;
    }
    Some(job)
}

/// Writes `job`'s matrix to its run directory's [`record::MATRIX`] in its format, in one
/// rename; returns the file's path.
fn write_now(job: &MatrixWrite) -> Result<PathBuf, own_files::FileError> {
    let text = job.matrix.to_text(job.format);
    own_files::write_atomic(&job.dir, record::MATRIX, &text)
}

/// [`write_now`], a failure logged: the job goes on without its matrix file.
fn write_or_warn(job: MatrixWrite) {
    if let Err(e) = write_now(&job) {
        log::warn!("cannot write the communication matrix: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn matrix(bytes: f64) -> CommMatrix {
        CommMatrix::from_triples(2, [(0, 1, bytes)])
    }

    fn job(dir: &std::path::Path, bytes: f64) -> MatrixWrite {
        MatrixWrite {
            dir: dir.to_path_buf(),
            matrix: matrix(bytes),
            format: MatrixFormat::Dense,
        }
    }

    #[test]
    fn the_matrix_is_written_whole_by_the_time_finish_returns() {
        let tmp = tempfile::tempdir().unwrap();
        let mut file = MatrixFile::default();
        file.write(job(tmp.path(), 7.0));
        file.finish();
        let written = std::fs::read(tmp.path().join(record::MATRIX)).unwrap();
        assert_eq!(written, matrix(7.0).to_text(MatrixFormat::Dense));
        // A later write starts the thread again.
        file.write(job(tmp.path(), 9.0));
        drop(file);
        let written = std::fs::read(tmp.path().join(record::MATRIX)).unwrap();
        assert_eq!(written, matrix(9.0).to_text(MatrixFormat::Dense));
    }

    /// The caller does not wait for a write in progress, and of the matrices handed
    /// over meanwhile only the newest is written.
    #[test]
    fn a_write_in_progress_holds_no_caller_and_the_newest_matrix_wins() {
        let (started_tx, started) = mpsc::channel::<()>();
        let (open, gate) = mpsc::channel::<()>();
        let written = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&written);
        let mut file = MatrixFile::writing_with(Box::new(move |w: MatrixWrite| {
            let _ = started_tx.send(());
            // A caller that waited for this write would never open the gate: the
            // write then gives up and the test fails below instead of hanging.
            let opened = gate.recv_timeout(Duration::from_secs(60));
            seen.lock()
                .unwrap()
                .push((w.matrix.get(0, 1), opened.is_ok()));
        }));
        let dir = std::path::Path::new("/nonexistent");
        file.write(job(dir, 1.0));
        started.recv().unwrap();
        file.write(job(dir, 2.0));
        file.write(job(dir, 3.0));
        open.send(()).unwrap();
        open.send(()).unwrap();
        file.finish();
        assert_eq!(*written.lock().unwrap(), [(1.0, true), (3.0, true)]);
    }
}
