//! When the ranks look at the availability file: every `--check-every` calls when the
//! user fixed it, else about every `--check-interval` of wall time.
//!
//! A check is collective (rank 0 reads the file and broadcasts what it saw), so checking
//! at every few `checkpoint!` calls of a loop whose iteration takes microseconds costs
//! more than the loop. Paced by time, the ranks agree at each check on the number of
//! calls until the next one: rank 0 measures the calls per second since the last check
//! and broadcasts the stride, so every rank enters the next check at the same call.

use std::time::{Duration, Instant};

pub use crate::run_dir::settings::CheckSpacing;
use mpi::traits::{Communicator, Root};

use crate::contention::{CheckSample, WaitSample};

/// Calls before the first check when paced by time (the rate is not known yet).
const FIRST_STRIDE: u64 = 10;
/// A stride grows at most this many times from one check to the next, so a few fast
/// first calls do not push the next check far away.
const MAX_GROWTH: u64 = 8;
/// Largest stride: about 16 million calls.
const MAX_STRIDE: u64 = 1 << 24;

/// The call count of the next check, agreed by all ranks.
#[derive(Debug, Clone)]
pub struct CheckPacer {
    spacing: CheckSpacing,
    stride: u64,
    next_check: u64,
    last_calls: u64,
    last_time: Instant,
    /// A shorter time between checks while something waits for one (a spawn running
    /// in the background); `None` for the usual spacing.
    hurry: Option<Duration>,
}

impl CheckPacer {
    /// A pacer whose first check comes after `calls` calls have been made.
    pub fn starting_at(spacing: CheckSpacing, calls: u64) -> Self {
        let stride = match spacing {
            CheckSpacing::Calls(n) => n.max(1),
            CheckSpacing::Millis(_) => FIRST_STRIDE,
        };
        Self {
            spacing,
            stride,
            next_check: calls + stride,
            last_calls: calls,
            last_time: Instant::now(),
            hurry: None,
        }
    }

    /// A pacer taken over from a replaced rank: its next check is at `next_check`, with
    /// the stride it used.
    pub fn resume(spacing: CheckSpacing, next_check: u64, stride: u64) -> Self {
        Self {
            spacing,
            stride: stride.max(1),
            next_check,
            last_calls: next_check.saturating_sub(stride),
            last_time: Instant::now(),
            hurry: None,
        }
    }

    /// True when call number `calls` is a check.
    #[inline]
    pub fn due(&self, calls: u64) -> bool {
        calls >= self.next_check
    }

    /// The call count of the next check.
    pub fn next_check(&self) -> u64 {
        self.next_check
    }

    /// The current stride in calls.
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// At the check of call `calls`: sets the next one. Collective over `comm` when paced
    /// by time (rank 0 decides the stride, every rank gets the same).
    pub fn after_check<C: Communicator>(&mut self, comm: &C, calls: u64) {
        if let CheckSpacing::Millis(_) = self.spacing {
            let mut stride = self.proposed_stride(comm, calls);
            comm.process_at_rank(0).broadcast_into(&mut stride);
            self.stride = stride.max(1);
        }
        self.advance(calls);
    }

    /// [`CheckPacer::after_check`] that also hands every rank's `sample` (its waits for
    /// a CPU and, on one rank per node, the node's CPU pressure: [`crate::contention`])
    /// to rank 0, the only rank that judges them: a gather of (wait, wall, node stall,
    /// node wall, busy ticks and total ticks of the CPUs it reads for the watch's caps,
    /// its CPU) to rank 0, then the check's broadcast of the stride when paced by time.
    /// Every rank's samples, in rank order, on rank 0; `None` on the other ranks.
    pub fn after_check_gathering<C: Communicator>(
        &mut self,
        comm: &C,
        calls: u64,
        sample: CheckSample,
    ) -> Option<Vec<CheckSample>> {
        // A node wall time (a total of ticks) of 0 says the rank read no pressure (no
        // CPUs for the caps); u64::MAX, that it is bound to no CPU of its own.
        let pressure = sample.pressure.unwrap_or_default();
        let busy = sample.busy.unwrap_or_default();
        let mine = [
            sample.wait.wait_ns,
            sample.wait.wall_ns,
            pressure.wait_ns,
            pressure.wall_ns,
            busy.wait_ns,
            busy.wall_ns,
            sample.cpu.map_or(u64::MAX, |c| c as u64),
        ];
        let root = comm.process_at_rank(0);
        let gathered = if comm.rank() == 0 {
            let n = usize::try_from(comm.size()).unwrap_or(0);
            let mut all = vec![0u64; mine.len() * n];
            root.gather_into_root(&mine[..], &mut all[..]);
            Some(all)
        } else {
            root.gather_into(&mine[..]);
            None
        };
        self.after_check(comm, calls);
        gathered.map(|all| {
            all.chunks_exact(mine.len())
                .map(|c| CheckSample {
                    wait: WaitSample {
                        wait_ns: c[0],
                        wall_ns: c[1],
                    },
                    pressure: (c[3] > 0).then_some(WaitSample {
                        wait_ns: c[2],
                        wall_ns: c[3],
                    }),
                    busy: (c[5] > 0).then_some(WaitSample {
                        wait_ns: c[4],
                        wall_ns: c[5],
                    }),
                    cpu: usize::try_from(c[6]).ok().filter(|_| c[6] != u64::MAX),
                })
                .collect()
        })
    }

    /// Rank 0's stride for the next interval when paced by time (0 on the other ranks);
    /// the fixed stride when paced by calls.
    fn proposed_stride<C: Communicator>(&self, comm: &C, calls: u64) -> u64 {
        let CheckSpacing::Millis(ms) = self.spacing else {
            return self.stride;
        };
        if comm.rank() != 0 {
            return 0;
        }
        let interval = Duration::from_millis(ms).min(self.hurry.unwrap_or(Duration::MAX));
        let elapsed = self.last_time.elapsed();
        stride_for(calls - self.last_calls, elapsed, interval, self.stride)
    }

    /// Sets the next check `stride` calls after `calls`.
    fn advance(&mut self, calls: u64) {
        self.last_calls = calls;
        self.last_time = Instant::now();
        self.next_check = calls + self.stride;
    }
}

impl CheckPacer {
    /// Checks about every `interval` (when paced by time) until [`CheckPacer::relax`]:
    /// the current stride shrinks at once in proportion, so the next check comes
    /// sooner. The same on every rank (it depends on agreed values only). A spacing
    /// fixed in calls is left as it is.
    pub fn hurry(&mut self, calls: u64, interval: Duration) {
        let CheckSpacing::Millis(ms) = self.spacing else {
            return;
        };
        self.hurry = Some(interval);
        let usual = Duration::from_millis(ms);
        if interval < usual {
            let ratio = usual.as_secs_f64() / interval.as_secs_f64().max(1e-6);
            self.stride = ((self.stride as f64 / ratio).ceil() as u64).max(1);
            self.next_check = self.next_check.min(calls + self.stride);
        }
    }

    /// Back to the usual spacing from the next check on.
    pub fn relax(&mut self) {
        self.hurry = None;
    }
}

/// The number of calls that should take about `interval`, given that `calls` took
/// `elapsed`; at most [`MAX_GROWTH`] times `previous`, at least 1.
pub fn stride_for(calls: u64, elapsed: Duration, interval: Duration, previous: u64) -> u64 {
    let secs = elapsed.as_secs_f64();
    let wanted = if secs <= 0.0 || calls == 0 {
        previous.saturating_mul(MAX_GROWTH)
    } else {
        (calls as f64 * interval.as_secs_f64() / secs).ceil() as u64
    };
    wanted
        .min(previous.saturating_mul(MAX_GROWTH))
        .clamp(1, MAX_STRIDE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_calls_grow_the_stride_gradually_up_to_the_interval() {
        // 10 calls in 1 ms, interval 1 s: wants 10 000, allowed 80 this time.
        let s = stride_for(10, Duration::from_millis(1), Duration::from_secs(1), 10);
        assert_eq!(s, 80);
        // 80 calls in 8 ms: wants 10 000, within 8 × 2000.
        let s = stride_for(80, Duration::from_millis(8), Duration::from_secs(1), 2000);
        assert_eq!(s, 10_000);
    }

    #[test]
    fn slow_calls_shrink_the_stride_at_once_but_not_below_one() {
        let s = stride_for(1000, Duration::from_secs(10), Duration::from_secs(1), 1000);
        assert_eq!(s, 100);
        let s = stride_for(5, Duration::from_secs(50), Duration::from_secs(1), 5);
        assert_eq!(s, 1);
    }

    #[test]
    fn a_hurried_pacer_checks_sooner_until_relaxed() {
        let mut p = CheckPacer::starting_at(CheckSpacing::Millis(1000), 0);
        p.stride = 5000;
        p.next_check = 5000;
        p.hurry(100, Duration::from_millis(20));
        assert_eq!((p.stride(), p.next_check()), (100, 200));
        p.relax();
        assert_eq!(p.hurry, None);
        let mut fixed = CheckPacer::starting_at(CheckSpacing::Calls(7), 0);
        fixed.hurry(3, Duration::from_millis(20));
        assert_eq!((fixed.stride(), fixed.next_check()), (7, 7));
    }

    #[test]
    fn fixed_spacing_keeps_its_stride() {
        let p = CheckPacer::starting_at(CheckSpacing::Calls(7), 3);
        assert_eq!((p.next_check(), p.stride()), (10, 7));
        assert!(!p.due(9));
        assert!(p.due(10));
    }
}
