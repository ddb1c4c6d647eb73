//! Writing the gathered matrix for offline use (`rankmig map`/`plan`), in TreeMatch's
//! dense format, atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use mpi::traits::Communicator;

use crate::matrix::CommMatrix;

use super::error::MonitorError;
use super::gather::{Traffic, Window, gather_matrix};

/// Where the runtime writes the matrix, if set.
pub const ENV_MATRIX_OUT: &str = "RANKMIG_MATRIX_OUT";

/// Writes `matrix` to `path` in TreeMatch's format: a temporary file next to it,
/// flushed to disk, then renamed over `path` (a reader never sees half a matrix).
///
/// ```
/// use rankmig::matrix::{CommMatrix, MatrixFormat};
/// use rankmig::monitor::export_matrix;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("live.mat");
/// let m = CommMatrix::from_triples(2, [(0, 1, 8.0), (1, 0, 8.0)]);
/// export_matrix(&m, &path).unwrap();
/// assert_eq!(CommMatrix::load(&path, MatrixFormat::Dense).unwrap(), m);
/// ```
pub fn export_matrix(matrix: &CommMatrix, path: &Path) -> Result<(), MonitorError> {
    let error = |source| MonitorError::Export {
        path: path.to_owned(),
        source,
    };
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        let mut out = std::io::BufWriter::new(&mut f);
        matrix.write_dense(&mut out)?;
        out.flush()?;
        drop(out);
        f.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed.map_err(error)
}

/// The path in `RANKMIG_MATRIX_OUT`, if set and not empty.
pub fn matrix_out() -> Option<PathBuf> {
    std::env::var_os(ENV_MATRIX_OUT)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Collective over `comm` (the job's communicator), for the end of a run or each
/// reconfiguration: when `RANKMIG_MATRIX_OUT` is set, gathers the matrix (all traffic
/// since the start) and rank 0 writes it there. Returns the path written, if any; a
/// write failure is an error on rank 0 only.
///
/// ```no_run
/// let universe = mpi::initialize().expect("MPI");
/// let world = universe.world();
/// if let Err(e) = rankmig::monitor::export_matrix_from_env(&world) {
///     eprintln!("rankmig: {e}");
/// }
/// ```
pub fn export_matrix_from_env<C: Communicator>(comm: &C) -> Result<Option<PathBuf>, MonitorError> {
    let Some(path) = matrix_out() else {
        return Ok(None);
    };
    let matrix = gather_matrix(comm, Window::SinceStart, Traffic::All);
    if comm.rank() == 0 {
        export_matrix(&matrix, &path)?;
        Ok(Some(path))
    } else {
        Ok(None)
    }
}
