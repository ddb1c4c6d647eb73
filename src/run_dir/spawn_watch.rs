//! A spawn that never completes, caught from outside the job.
//!
//! Open MPI 4.1.4 with PMIx 4.2 (Debian 12's packages) sometimes never completes an
//! `MPI_Comm_spawn`: one new process stays in `PMIx_Init`, the ranks wait in the
//! connect/accept exchange, and nothing inside the job can time out (measured here:
//! about one job in five whose second migration spawned; never a first spawn). The
//! same intermittent hang is reported upstream for Open MPI 4.1 with an external PMIx
//! 4 (openpmix/openpmix#2735).
//!
//! So when `rankmig run` watches the job (a run directory and a spawn timeout), every
//! migration first commits a checkpoint of all ranks, and rank 0 leaves a marker file
//! in the run directory for the time of the spawn ([`begin`], [`end`]). `rankmig run`
//! checks the marker's age ([`overdue`]): past the timeout it stops the job and
//! launches it again from that checkpoint, placed for the current availability, so a
//! hung spawn costs the timeout and a restart, not the job.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// The marker file of the run directory: present while rank 0 is in a spawn; it holds
/// what is being spawned.
pub const SPAWN_MARKER: &str = "spawn-in-progress";

/// Milliseconds a spawn may take before `rankmig run` stops the job and launches it
/// again from the checkpoint taken before the spawn; 0 (or unset) = nobody watches, and
/// migrations take no extra checkpoint.
pub const ENV_SPAWN_TIMEOUT_MS: &str = "RANKMIG_SPAWN_TIMEOUT_MS";

/// The default spawn timeout of `rankmig run`: two minutes. A spawn of a few processes
/// takes 0.3 to 2 seconds here.
pub const DEFAULT_SPAWN_TIMEOUT_MS: u64 = 120_000;

/// Rank 0, just before spawning: leaves the marker, saying `what` is spawned.
pub fn begin(run_dir: &Path, what: &str) {
    let path = run_dir.join(SPAWN_MARKER);
    if let Err(e) = std::fs::write(&path, format!("{what}\n")) {
        log::warn!(
            "cannot write {}: a hung spawn would not be caught: {e}",
            path.display()
        );
    }
}

/// Rank 0, once the spawn returned (whether it worked or not): removes the marker.
pub fn end(run_dir: &Path) {
    let _ = std::fs::remove_file(run_dir.join(SPAWN_MARKER));
}

/// `rankmig run`: what the job is spawning, when the marker is older than `timeout`.
pub fn overdue(run_dir: &Path, timeout: Duration) -> Option<String> {
    let path = run_dir.join(SPAWN_MARKER);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let age = SystemTime::now()
        .duration_since(meta.modified().ok()?)
        .ok()?;
    if !meta.is_file() || age < timeout {
        return None;
    }
    let what = std::fs::read_to_string(&path).unwrap_or_default();
    Some(what.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_overdue_only_past_the_timeout_and_only_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(overdue(dir.path(), Duration::ZERO), None);
        begin(dir.path(), "migration 2: 2 processes");
        assert_eq!(overdue(dir.path(), Duration::from_secs(3600)), None);
        assert_eq!(
            overdue(dir.path(), Duration::ZERO).as_deref(),
            Some("migration 2: 2 processes")
        );
        end(dir.path());
        assert_eq!(overdue(dir.path(), Duration::ZERO), None);
    }
}
