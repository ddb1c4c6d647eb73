//! This rank's iterations, as `rankmig run` reads them: each `checkpoint!` call's
//! record (its compute time, then the planning and migration time and the wait share
//! of a check), kept until the next check writes them to the run directory, and the
//! iteration mark ([`IterationMark`]).

use std::path::Path;
use std::time::Instant;

use super::iteration_mark::IterationMark;
use crate::run_dir::record::{self, IterationRecord};

/// The iteration records not yet written, and the mark.
pub(super) struct Iterations {
    /// The records since the last check (kept only with a run directory).
    pending: Vec<IterationRecord>,
    /// When the last call returned to the application.
    last_end: Instant,
    /// Where this rank notes the iteration it is at, for `rankmig run` to read after a
    /// failure (`None` without a run directory).
    mark: Option<IterationMark>,
}

impl Iterations {
    /// No iteration yet; `mark` notes the ones to come.
    pub(super) fn new(mark: Option<IterationMark>) -> Self {
        Self {
            pending: Vec::new(),
            last_end: Instant::now(),
            mark,
        }
    }

    /// Call `calls` of `checkpoint!` begins: the iteration before it ends now (its
    /// record kept when `recorded`), and the mark says `calls`.
    #[inline]
    pub(super) fn tick(&mut self, calls: u64, recorded: bool) {
        let now = Instant::now();
        if recorded {
            self.pending.push(IterationRecord {
                iteration: calls,
                compute: (now - self.last_end).as_secs_f64(),
                scheduling: 0.0,
                migration: 0.0,
                wait_share: None,
                pressure_share: None,
            });
        }
        self.last_end = now;
        if let Some(mark) = &self.mark {
            mark.set(calls);
        }
    }

    /// The call returns to the application now: the next iteration's compute starts.
    pub(super) fn back_to_application(&mut self) {
        self.last_end = Instant::now();
    }

    /// Adds the time of a phase to the current iteration's record.
    pub(super) fn charge(&mut self, scheduling: f64, migration: f64) {
        if let Some(last) = self.pending.last_mut() {
            last.scheduling += scheduling;
            last.migration += migration;
        }
    }

    /// The share of the current iteration's check window this rank waited for a CPU
    /// (`None` where it could not measure it), and its node's CPU pressure where this
    /// rank read it.
    pub(super) fn note_wait_share(&mut self, share: Option<f64>, pressure: Option<f64>) {
        if let Some(last) = self.pending.last_mut() {
            last.wait_share = share;
            last.pressure_share = pressure;
        }
    }

    /// Appends the records kept to rank `rank`'s file in `run_dir` (if any), and
    /// forgets them.
    pub(super) fn flush(&mut self, run_dir: Option<&Path>, rank: usize) {
        if let Some(dir) = run_dir {
            if let Err(e) = record::append_iterations(dir, rank, &self.pending) {
                log::warn!(
                    "rank {rank}: cannot record iterations in {}: {e}",
                    dir.display()
                );
            }
        }
        self.pending.clear();
    }
}
