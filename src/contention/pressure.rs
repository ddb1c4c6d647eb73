//! The kernel's pressure stall information for CPUs (`/proc/pressure/cpu`, PSI): the
//! node's view of CPU contention, beside the ranks' own run-queue delays.
//!
//! The file holds a `some` line (the share of time at least one task of the kernel was
//! runnable but waiting for a CPU) and, since Linux 5.13, a `full` line (always zero
//! for CPUs at the system level):
//!
//! ```text
//! some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! `avg*` are percentages over the last 10, 60 and 300 s; `total` is the stall time in
//! microseconds since boot. The watch uses the growth of `some total` between two
//! checks, as it uses a rank's run-queue delay: the stall share over the wall time.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::WaitSample;

/// Where the kernel gives the CPU pressure of the whole node.
pub const PRESSURE_FILE: &str = "/proc/pressure/cpu";

/// One line of a pressure file (`some …` or `full …`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PressureLine {
    /// Percent of the last 10 s stalled.
    pub avg10: f64,
    /// Percent of the last 60 s stalled.
    pub avg60: f64,
    /// Percent of the last 300 s stalled.
    pub avg300: f64,
    /// Microseconds stalled since boot.
    pub total_us: u64,
}

/// The content of a pressure file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pressure {
    /// Time some task waited.
    pub some: PressureLine,
    /// Time every non-idle task waited (absent before Linux 5.13).
    pub full: Option<PressureLine>,
}

/// A pressure file whose text is not the kernel's format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {what}: {text:?}", file.display())]
pub struct PressureError {
    /// The file.
    pub file: PathBuf,
    /// The line, from 1 (one past the last line when a line is missing).
    pub line: usize,
    /// The line's text (empty when a line is missing).
    pub text: String,
    /// What is wrong.
    pub what: &'static str,
}

/// Parses the text of the pressure file `file` (named in errors).
pub fn parse_pressure(file: &Path, text: &str) -> Result<Pressure, PressureError> {
    let mut some = None;
    let mut full = None;
    let mut lines = 0;
    for (i, line) in text.lines().enumerate() {
        lines = i + 1;
        let error = |what| PressureError {
            file: file.to_owned(),
            line: i + 1,
            text: line.to_owned(),
            what,
        };
        if line.trim().is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let slot = match words.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            _ => return Err(error("expected a line starting with 'some' or 'full'")),
        };
        if slot.is_some() {
            return Err(error("a second line of the same kind"));
        }
        *slot = Some(parse_line(words).map_err(error)?);
    }
    let some = some.ok_or_else(|| PressureError {
        file: file.to_owned(),
        line: lines + 1,
        text: String::new(),
        what: "no 'some' line",
    })?;
    Ok(Pressure { some, full })
}

/// The `key=value` fields of a line after its kind: `avg10`, `avg60`, `avg300` (percent,
/// 0 to 100) and `total` (whole microseconds) are required; other keys are skipped.
fn parse_line<'a>(fields: impl Iterator<Item = &'a str>) -> Result<PressureLine, &'static str> {
    let (mut avg10, mut avg60, mut avg300, mut total_us) = (None, None, None, None);
    for field in fields {
        let (key, value) = field
            .split_once('=')
            .ok_or("expected key=value fields after the kind")?;
        let percent = || {
            value
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or("an average that is not a percentage from 0 to 100")
        };
        match key {
            "avg10" => avg10 = Some(percent()?),
            "avg60" => avg60 = Some(percent()?),
            "avg300" => avg300 = Some(percent()?),
            "total" => {
                total_us = Some(
                    value
                        .parse::<u64>()
                        .map_err(|_| "a total that is not whole microseconds")?,
                )
            }
            _ => {}
        }
    }
    match (avg10, avg60, avg300, total_us) {
        (Some(avg10), Some(avg60), Some(avg300), Some(total_us)) => Ok(PressureLine {
            avg10,
            avg60,
            avg300,
            total_us,
        }),
        _ => Err("expected avg10=, avg60=, avg300= and total= fields"),
    }
}

/// A node's reading of its CPU pressure, between checks: the growth of `some total`
/// since the previous reading, over the wall time between them. It keeps the file open
/// and reads it again from its start, as [`super::WaitReader`] does.
#[derive(Debug)]
pub struct PressureReader {
    file: std::fs::File,
    path: PathBuf,
    /// `some total` (µs) and when it was read, at the previous reading.
    last: Option<(u64, Instant)>,
}

impl PressureReader {
    /// Opens [`PRESSURE_FILE`]; `None` where it is absent or cannot be read (a kernel
    /// without PSI, some containers): the pressure is then not available.
    pub fn open() -> Option<Self> {
        Self::open_at(Path::new(PRESSURE_FILE))
    }

    /// Opens the pressure file `path`; `None` where it is absent or cannot be read.
    pub fn open_at(path: &Path) -> Option<Self> {
        let file = std::fs::File::open(path).ok()?;
        Some(Self {
            file,
            path: path.to_owned(),
            last: None,
        })
    }

    /// The file's content now; `Ok(None)` when it cannot be read now (not available).
    pub fn read(&mut self) -> Result<Option<Pressure>, PressureError> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 512];
        let Ok(n) = self.file.read_at(&mut buf, 0) else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(buf.get(..n).unwrap_or_default());
        parse_pressure(&self.path, &text).map(Some)
    }

    /// The stall (`some`) since the previous reading, over the wall time since then;
    /// `Ok(None)` at the first reading (or the first after [`PressureReader::forget`])
    /// and when the file cannot be read now.
    pub fn sample(&mut self) -> Result<Option<WaitSample>, PressureError> {
        let Some(pressure) = self.read()? else {
            self.last = None;
            return Ok(None);
        };
        let now = Instant::now();
        let total = pressure.some.total_us;
        let sample = self.last.map(|(before, then)| WaitSample {
            wait_ns: total.saturating_sub(before).saturating_mul(1000),
            wall_ns: u64::try_from((now - then).as_nanos()).unwrap_or(u64::MAX),
        });
        self.last = Some((total, now));
        Ok(sample)
    }

    /// Drops the previous reading (this rank stopped reading for its node): the next
    /// [`PressureReader::sample`] starts anew.
    pub fn forget(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read from this machine's `/proc/pressure/cpu` (Linux 6.18, a busy 2-core host).
    const REAL: &str = "some avg10=65.77 avg60=44.89 avg300=38.29 total=12347327787\n\
                        full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

    fn file() -> &'static Path {
        Path::new("/proc/pressure/cpu")
    }

    #[test]
    fn the_kernels_text_parses() {
        let p = parse_pressure(file(), REAL).expect("the kernel's format");
        assert_eq!(
            p.some,
            PressureLine {
                avg10: 65.77,
                avg60: 44.89,
                avg300: 38.29,
                total_us: 12_347_327_787
            }
        );
        assert_eq!(p.full.map(|f| f.total_us), Some(0));
        // Before Linux 5.13 the CPU file had no `full` line.
        let old = parse_pressure(file(), "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
            .expect("a some line alone");
        assert_eq!(old.full, None);
        assert_eq!(old.some.total_us, 0);
    }

    #[test]
    fn bad_text_names_the_file_and_line() {
        let e = parse_pressure(
            file(),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=12\nfull avg10=0.00 avg60=x avg300=0.00 total=0\n",
        )
        .expect_err("a bad average");
        assert_eq!(e.line, 2);
        assert_eq!(
            e.to_string(),
            "/proc/pressure/cpu:2: an average that is not a percentage from 0 to 100: \"full avg10=0.00 avg60=x avg300=0.00 total=0\""
        );
        let e = parse_pressure(file(), "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n")
            .expect_err("a negative total");
        assert_eq!(e.what, "a total that is not whole microseconds");
        let e = parse_pressure(file(), "some avg10=0.00 avg60=0.00 total=1\n")
            .expect_err("a missing field");
        assert_eq!(
            (e.line, e.what),
            (1, "expected avg10=, avg60=, avg300= and total= fields")
        );
        let e = parse_pressure(file(), "cpu 12 34\n").expect_err("not PSI");
        assert_eq!(e.line, 1);
        let e = parse_pressure(file(), "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
            .expect_err("no some line");
        assert_eq!((e.line, e.what), (2, "no 'some' line"));
        let e = parse_pressure(file(), &format!("{REAL}{REAL}")).expect_err("twice");
        assert_eq!((e.line, e.what), (3, "a second line of the same kind"));
    }

    #[test]
    fn an_absent_file_is_not_available() {
        assert!(PressureReader::open_at(Path::new("/proc/pressure/no-such-resource")).is_none());
    }

    #[test]
    fn a_reader_gives_the_stall_since_its_previous_reading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cpu");
        std::fs::write(&path, "some avg10=1.00 avg60=0.50 avg300=0.10 total=1000\n").expect("w");
        let mut reader = PressureReader::open_at(&path).expect("opens");
        assert_eq!(reader.sample(), Ok(None), "no previous reading");
        std::fs::write(
            &path,
            "some avg10=1.00 avg60=0.50 avg300=0.10 total=251000\n",
        )
        .expect("w");
        let s = reader.sample().expect("parses").expect("a sample");
        assert_eq!(s.wait_ns, 250_000_000);
        assert!(s.wall_ns > 0);
        reader.forget();
        assert_eq!(reader.sample(), Ok(None), "forgotten");
        std::fs::write(&path, "some avg10=1.00 total=2\n").expect("w");
        let e = reader.sample().expect_err("bad text");
        assert_eq!(e.file, path);
        assert_eq!(e.line, 1);
        // This machine's kernel gives PSI; where it does not, there is nothing to read.
        if let Some(mut node) = PressureReader::open() {
            let p = node.read().expect("the kernel's format").expect("readable");
            assert!(p.some.avg10 <= 100.0);
        }
    }
}
