//! Replacement processes started by a second launch instead of a spawn.
//!
//! With MPICH, `MPI_Comm_spawn` on rank 0's helper thread holds every other MPI call
//! of the application until the new processes have started: its accept step keeps the
//! lock of the only virtual communication interface (VCI 0) and polls without yielding
//! until the first child connects back (MPICH 5.0's `ch4_spawn.c`; measured with
//! `scripts/spawn_hold.c`: 138-175 ms of `MPI_Allreduce` held). Joining processes of
//! a separate `mpiexec` with `MPI_Comm_accept` once they already wait in
//! `MPI_Comm_connect` holds it only for the accept (`scripts/hold_compare.sh`: 9-19 ms).
//!
//! So when `rankmig run` offers it ([`ENV_LAUNCHES_REPLACEMENTS`]), rank 0's helper
//! opens a port and leaves a [`LaunchRequest`] in the run directory ([`REQUEST_FILE`]);
//! `rankmig run` takes it ([`take`]) and starts the replacements with the MPI's
//! launcher, pointing them at the request ([`ENV_JOIN`]). When every replacement has
//! initialised MPI, the first says so ([`mark_ready`]) and all call
//! `MPI_Comm_connect`; the helper, which waits for that file without MPI calls
//! ([`wait`]), then accepts. A launch that ends or fails before that is reported with
//! [`mark_failed`], and the migration is recorded as failed with nobody moved.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Set by `rankmig run` (`1`) when it starts replacement processes on request; `0`
/// from the caller keeps the spawn.
pub const ENV_LAUNCHES_REPLACEMENTS: &str = "RANKMIG_LAUNCHES_REPLACEMENTS";

/// Set by `rankmig run` in the environment of a replacement launch: the path of the
/// request the replacements join for.
pub const ENV_JOIN: &str = "RANKMIG_JOIN";

/// The file of the run directory where rank 0 leaves its request.
pub const REQUEST_FILE: &str = "replacements-request.json";

/// What rank 0 asks `rankmig run` to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRequest {
    /// Names this request's files (`replacements-ID.json`, `.ready`, `.failed`).
    pub id: String,
    /// The migration it is for (its number in the run's records).
    pub migration: u64,
    /// The port the replacements connect to (`MPI_Open_port`).
    pub port: String,
    /// The host of each replacement process in order; empty on logical nodes (all on
    /// the host of `rankmig run`).
    pub hosts: Vec<String>,
    /// How many processes.
    pub count: usize,
    /// The program and its arguments.
    pub program: Vec<String>,
    /// The size in bytes of the state each process will receive, in order: each makes
    /// a buffer that size ready before its launch says it is ready, so that nothing
    /// of the kind is left for after old rank 0 has accepted them (empty: unknown).
    #[serde(default)]
    pub state_sizes: Vec<u64>,
}

impl LaunchRequest {
    /// A request for migration `migration` with a fresh id.
    ///
    /// ```
    /// use rankmig::run_dir::launch_request::LaunchRequest;
    /// let r = LaunchRequest::new(3, "port".into(), vec![], 2, vec!["/bin/app".into()]);
    /// assert!(r.id.starts_with("3-"));
    /// ```
    pub fn new(
        migration: u64,
        port: String,
        hosts: Vec<String>,
        count: usize,
        program: Vec<String>,
    ) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            id: format!("{migration}-{nanos}"),
            migration,
            port,
            hosts,
            count,
            program,
            state_sizes: Vec::new(),
        }
    }

    /// This request with the size of the state each process will receive, in order.
    ///
    /// ```
    /// use rankmig::run_dir::launch_request::LaunchRequest;
    /// let r = LaunchRequest::new(1, "port".into(), vec![], 2, vec!["/bin/app".into()])
    ///     .with_state_sizes(vec![8 << 20, 8 << 20]);
    /// assert_eq!(r.state_sizes.len(), r.count);
    /// ```
    pub fn with_state_sizes(mut self, state_sizes: Vec<u64>) -> Self {
        self.state_sizes = state_sizes;
        self
    }
}

/// Why a request file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Reading, writing or renaming failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a request.
    #[error("{path}: not a replacement request: {source}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RequestError + '_ {
    move |source| RequestError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The file of request `id` once taken: what [`ENV_JOIN`] names.
pub fn taken_path(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join(format!("replacements-{id}.json"))
}

fn ready_path(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join(format!("replacements-{id}.ready"))
}

fn failed_path(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join(format!("replacements-{id}.failed"))
}

/// Rank 0: leaves `request` for `rankmig run` (written whole, then renamed into place).
pub fn submit(run_dir: &Path, request: &LaunchRequest) -> Result<(), RequestError> {
    let path = run_dir.join(REQUEST_FILE);
    let partial = run_dir.join(format!("{REQUEST_FILE}.partial"));
    let bytes = serde_json::to_vec_pretty(request).map_err(|source| RequestError::Malformed {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&partial, bytes).map_err(io_error(&partial))?;
    std::fs::rename(&partial, &path).map_err(io_error(&path))
}

/// `rankmig run`: the request waiting in `run_dir`, if any, moved to its
/// [`taken_path`] so that it is taken once.
///
/// ```
/// use rankmig::run_dir::launch_request::{LaunchRequest, submit, take, taken_path};
/// let dir = tempfile::tempdir().unwrap();
/// assert!(take(dir.path()).is_none());
/// let r = LaunchRequest::new(1, "p".into(), vec!["h2".into()], 1, vec!["/bin/app".into()]);
/// submit(dir.path(), &r).unwrap();
/// assert_eq!(take(dir.path()).unwrap().unwrap(), r);
/// assert!(take(dir.path()).is_none());
/// assert!(taken_path(dir.path(), &r.id).exists());
/// ```
pub fn take(run_dir: &Path) -> Option<Result<LaunchRequest, RequestError>> {
    let path = run_dir.join(REQUEST_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(io_error(&path)(e))),
    };
    let request: LaunchRequest = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(source) => {
            let _ = std::fs::remove_file(&path);
            return Some(Err(RequestError::Malformed { path, source }));
        }
    };
    let taken = taken_path(run_dir, &request.id);
    Some(
        std::fs::rename(&path, &taken)
            .map_err(io_error(&taken))
            .map(|()| request),
    )
}

/// A replacement process: the request its launch was started for ([`ENV_JOIN`]).
pub fn read(path: &Path) -> Result<LaunchRequest, RequestError> {
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    serde_json::from_slice(&bytes).map_err(|source| RequestError::Malformed {
        path: path.to_path_buf(),
        source,
    })
}

/// The first replacement, once every replacement has initialised MPI: they are about
/// to connect.
pub fn mark_ready(run_dir: &Path, id: &str) -> Result<(), RequestError> {
    let path = ready_path(run_dir, id);
    std::fs::write(&path, b"").map_err(io_error(&path))
}

/// `rankmig run`: the launch of request `id` failed (`why`) before its processes
/// were ready.
pub fn mark_failed(run_dir: &Path, id: &str, why: &str) {
    let path = failed_path(run_dir, id);
    if let Err(e) = std::fs::write(&path, format!("{why}\n")) {
        log::warn!("cannot write {}: {e}", path.display());
    }
}

/// True once the replacements of request `id` said they are ready.
pub fn is_ready(run_dir: &Path, id: &str) -> bool {
    ready_path(run_dir, id).exists()
}

/// Rank 0's helper: waits, looking every `poll`, until the replacements of request
/// `id` are ready (`Ok`) or their launch failed (`Err` with why).
///
/// ```
/// use std::time::Duration;
/// use rankmig::run_dir::launch_request::{mark_failed, wait};
/// let dir = tempfile::tempdir().unwrap();
/// mark_failed(dir.path(), "7-1", "mpiexec exited with code 1");
/// let why = wait(dir.path(), "7-1", Duration::from_millis(1)).unwrap_err();
/// assert_eq!(why, "mpiexec exited with code 1");
/// ```
pub fn wait(run_dir: &Path, id: &str, poll: Duration) -> Result<(), String> {
    let (ready, failed) = (ready_path(run_dir, id), failed_path(run_dir, id));
    loop {
        if ready.exists() {
            return Ok(());
        }
        if let Ok(why) = std::fs::read_to_string(&failed) {
            return Err(why.trim().to_owned());
        }
        std::thread::sleep(poll);
    }
}

/// Removes the failure note of request `id` once read (its request and readiness
/// stay, for `rankmig run` to tell a launch that ended after joining from one that
/// never joined).
pub fn clean(run_dir: &Path, id: &str) {
    let _ = std::fs::remove_file(failed_path(run_dir, id));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_request_is_an_error_naming_the_file_and_is_not_taken_twice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(REQUEST_FILE), "{not json").unwrap();
        let err = take(dir.path()).unwrap().unwrap_err().to_string();
        assert!(err.contains(REQUEST_FILE), "{err}");
        assert!(take(dir.path()).is_none());
    }

    #[test]
    fn readiness_is_seen_once_marked_and_kept_after_cleaning() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_ready(dir.path(), "1-2"));
        mark_ready(dir.path(), "1-2").unwrap();
        assert!(is_ready(dir.path(), "1-2"));
        assert_eq!(wait(dir.path(), "1-2", Duration::from_millis(1)), Ok(()));
        clean(dir.path(), "1-2");
        assert!(is_ready(dir.path(), "1-2"));
    }

    #[test]
    fn a_failure_is_read_once_cleaned_away() {
        let dir = tempfile::tempdir().unwrap();
        mark_failed(dir.path(), "4-9", "no such host");
        clean(dir.path(), "4-9");
        mark_ready(dir.path(), "4-9").unwrap();
        assert_eq!(wait(dir.path(), "4-9", Duration::from_millis(1)), Ok(()));
    }
}
