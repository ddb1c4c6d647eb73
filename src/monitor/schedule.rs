//! When to check the availability: every K calls, or about every T seconds decided by
//! all ranks together, so that every rank checks at the same call.

use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::traits::{Communicator, CommunicatorCollectives};

use super::counters::Paused;

/// Decides at which calls the ranks check (the same calls on every rank).
///
/// With a period, the ranks agree every `every_calls` calls, with an all-reduce (max) of
/// the time elapsed since the last check: a check is due when the slowest clock has
/// passed the period. Without a period, a check is due at calls K, 2K, ... with no
/// communication.
///
/// ```
/// use rankmig::monitor::CheckSchedule;
/// let mut s = CheckSchedule::every_calls(3);
/// let due: Vec<bool> = (0..6).map(|_| s.tick_calls_only()).collect();
/// assert_eq!(due, [false, false, true, false, false, true]);
/// ```
#[derive(Debug, Clone)]
pub struct CheckSchedule {
    every_calls: u64,
    period: Option<Duration>,
    calls: u64,
    last: Instant,
}

impl CheckSchedule {
    /// A check every `k` calls (`k` at least 1).
    pub fn every_calls(k: u64) -> Self {
        Self {
            every_calls: k.max(1),
            period: None,
            calls: 0,
            last: Instant::now(),
        }
    }

    /// A check about every `period`, the ranks agreeing every `k` calls (`k` at least 1).
    pub fn every(period: Duration, k: u64) -> Self {
        Self {
            period: Some(period),
            ..Self::every_calls(k)
        }
    }

    /// Calls counted so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Counts one call; true when a check is due at it. Collective over `comm` every K
    /// calls when the schedule has a period (every rank must call it at every call).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use rankmig::monitor::CheckSchedule;
    /// let universe = mpi::initialize().expect("MPI");
    /// let world = universe.world();
    /// let mut schedule = CheckSchedule::every(Duration::from_secs(2), 10);
    /// for _iteration in 0..1000 {
    ///     // ... one iteration ...
    ///     if schedule.due(&world) {
    ///         // every rank gets here at the same iteration
    ///     }
    /// }
    /// ```
    pub fn due<C: Communicator>(&mut self, comm: &C) -> bool {
        if !self.tick_calls_only() {
            return false;
        }
        let Some(period) = self.period else {
            return true;
        };
        let _rankmig_traffic = Paused::new();
        let mine = self.last.elapsed().as_secs_f64();
        let mut slowest = 0f64;
        comm.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
        let due = slowest >= period.as_secs_f64();
        if due {
            self.last = Instant::now();
        }
        due
    }

    /// Counts one call; true at calls K, 2K, ... (the period, if any, is not looked at).
    pub fn tick_calls_only(&mut self) -> bool {
        self.calls += 1;
        self.calls % self.every_calls == 0
    }
}
