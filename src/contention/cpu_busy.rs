//! How busy given CPUs were, from the kernel's per-CPU counters (`/proc/stat`): what the
//! contention watch reads on a core it took a rank off, to know whether whatever took
//! that core is still there before any rank goes back.
//!
//! Each `cpuN` line of `/proc/stat` gives the time CPU N spent in each state since boot,
//! in clock ticks (`USER_HZ`, 100 per second here):
//!
//! ```text
//! cpu0 550454 0 204323 428397 922 0 1293 778 0 0
//! ```
//!
//! user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice. The CPU is
//! busy for all of them but idle and iowait; guest time is already inside user and
//! nice, and is not added twice.

use std::path::{Path, PathBuf};

use super::WaitSample;

/// Where the kernel gives the time each CPU spent in each state.
pub const STAT_FILE: &str = "/proc/stat";

/// One CPU's counters: busy and total clock ticks since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    /// Ticks in every state but idle and iowait.
    pub busy: u64,
    /// Ticks in every state.
    pub total: u64,
}

/// A `cpuN` line of a stat file that is not the kernel's format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {what}: {text:?}", file.display())]
pub struct CpuStatError {
    /// The file.
    pub file: PathBuf,
    /// The line, from 1.
    pub line: usize,
    /// The line's text.
    pub text: String,
    /// What is wrong.
    pub what: &'static str,
}

/// The counters of the CPUs `cpus` (OS indexes) in the text of the stat file `file`,
/// in the order of `cpus`; a CPU the file does not list (offline) gives zero ticks.
///
/// ```
/// use rankmig::contention::cpu_busy::{CpuTicks, parse_cpu_ticks};
/// let text = "cpu  30 0 10 60 0 0 0 0 0 0\ncpu0 10 0 5 80 5 0 0 0 0 0\ncpu1 20 0 5 10 0 0 0 0 0 0\n";
/// let ticks = parse_cpu_ticks(std::path::Path::new("/proc/stat"), text, &[1, 0]).unwrap();
/// assert_eq!(ticks, [CpuTicks { busy: 25, total: 35 }, CpuTicks { busy: 15, total: 100 }]);
/// ```
pub fn parse_cpu_ticks(
    file: &Path,
    text: &str,
    cpus: &[usize],
) -> Result<Vec<CpuTicks>, CpuStatError> {
    let mut ticks = vec![CpuTicks::default(); cpus.len()];
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(index) = words
            .next()
            .and_then(|w| w.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let Some(slot) = cpus.iter().position(|&c| c == index) else {
            continue;
        };
        let error = |what| CpuStatError {
            file: file.to_owned(),
            line: i + 1,
            text: line.to_owned(),
            what,
        };
        let fields: Vec<u64> = words
            .map(str::parse::<u64>)
            .collect::<Result<_, _>>()
            .map_err(|_| error("a counter that is not a whole number of ticks"))?;
        if fields.len() < 4 {
            return Err(error("fewer than 4 counters (user nice system idle)"));
        }
        // guest and guest_nice (fields 9 and 10) are counted in user and nice already.
        let counted = &fields[..fields.len().min(8)];
        let total: u64 = counted.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let idle = fields[3].saturating_add(fields.get(4).copied().unwrap_or(0));
        ticks[slot] = CpuTicks {
            busy: total.saturating_sub(idle),
            total,
        };
    }
    Ok(ticks)
}

/// A reading of how busy some CPUs were between two readings: the growth of their
/// summed busy ticks over the growth of their summed total ticks.
#[derive(Debug)]
pub struct CpuBusyReader {
    path: PathBuf,
    /// The CPUs read (OS indexes).
    cpus: Vec<usize>,
    /// Their summed counters at the previous reading.
    last: Option<CpuTicks>,
}

impl CpuBusyReader {
    /// A reader of the CPUs `cpus` in [`STAT_FILE`].
    pub fn new(cpus: Vec<usize>) -> Self {
        Self::at(Path::new(STAT_FILE), cpus)
    }

    /// A reader of the CPUs `cpus` in the stat file `path`.
    pub fn at(path: &Path, cpus: Vec<usize>) -> Self {
        Self {
            path: path.to_owned(),
            cpus,
            last: None,
        }
    }

    /// The CPUs read.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// The busy ticks (as `wait_ns`) over the total ticks (as `wall_ns`) of the CPUs
    /// since the previous reading, both in ticks; `Ok(None)` at the first reading and
    /// when the file cannot be read now.
    pub fn sample(&mut self) -> Result<Option<WaitSample>, CpuStatError> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            self.last = None;
            return Ok(None);
        };
        let now = parse_cpu_ticks(&self.path, &text, &self.cpus)?.iter().fold(
            CpuTicks::default(),
            |a, t| CpuTicks {
                busy: a.busy.saturating_add(t.busy),
                total: a.total.saturating_add(t.total),
            },
        );
        let sample = self.last.map(|before| WaitSample {
            wait_ns: now.busy.saturating_sub(before.busy),
            wall_ns: now.total.saturating_sub(before.total),
        });
        self.last = Some(now);
        Ok(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let file = Path::new("/proc/stat");
        let e = parse_cpu_ticks(file, "cpu  1 2 3 4\ncpu0 1 x 3 4\n", &[0]).expect_err("x");
        assert_eq!(
            (e.line, e.what),
            (2, "a counter that is not a whole number of ticks")
        );
        let e = parse_cpu_ticks(file, "cpu0 1 2 3\n", &[0]).expect_err("short");
        assert_eq!(e.line, 1);
        // A bad line of a CPU not asked for is not read.
        assert_eq!(
            parse_cpu_ticks(file, "cpu0 1 x\ncpu1 1 1 1 7\n", &[1]),
            Ok(vec![CpuTicks { busy: 3, total: 10 }])
        );
    }

    #[test]
    fn a_reader_gives_the_busy_share_since_its_previous_reading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("stat");
        std::fs::write(&path, "cpu0 10 0 0 90 0 0 0 0 0 0\ncpu1 0 0 0 100 0\n").expect("w");
        let mut reader = CpuBusyReader::at(&path, vec![1]);
        assert_eq!(reader.sample(), Ok(None), "no previous reading");
        std::fs::write(&path, "cpu0 20 0 0 180 0 0 0 0 0 0\ncpu1 75 0 5 120 0\n").expect("w");
        let s = reader.sample().expect("parses").expect("a sample");
        assert_eq!((s.wait_ns, s.wall_ns), (80, 100));
        assert!((s.share() - 0.8).abs() < 1e-9);
        // This machine's own file parses, and CPU 0 exists.
        let mut here = CpuBusyReader::new(vec![0]);
        assert_eq!(here.sample(), Ok(None));
        let s = here
            .sample()
            .expect("the kernel's format")
            .expect("a sample");
        assert!(s.wait_ns <= s.wall_ns);
    }
}
