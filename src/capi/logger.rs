//! The library's messages in a C, C++ or Fortran program.
//!
//! The runtime speaks through the `log` crate. A Rust program installs a logger of its
//! own (the examples use `env_logger`); a C, C++ or Fortran program has none, so
//! [`install`] (called by `rankmig_init`) puts this one in place: each message is one
//! line on standard error, `rankmig[RANK] LEVEL: message`, by default at `warn` level.
//! `RANKMIG_LOG` (`debug`, `info`, `warn`, `error`, `off`, or `trace`) sets the level;
//! without it, a plain level in `RUST_LOG` (or its `rankmig=LEVEL` part) does. When
//! a logger is already installed (a Rust program that also calls the C interface),
//! that logger stays and this one is not used.
//!
//! ```
//! use log::LevelFilter;
//! use rankmig::capi::logger::level_from;
//!
//! assert_eq!(level_from(Some("debug"), None), Ok(LevelFilter::Debug));
//! assert_eq!(level_from(None, Some("info,hyper=off")), Ok(LevelFilter::Info));
//! assert_eq!(level_from(None, None), Ok(LevelFilter::Warn));
//! assert!(level_from(Some("loud"), None).is_err());
//! ```

use std::io::Write;
use std::sync::atomic::{AtomicI64, Ordering};

use log::{LevelFilter, Log, Metadata, Record};

/// The level when neither variable sets one.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Warn;

/// The rank printed in each line; negative until [`set_rank`].
static RANK: AtomicI64 = AtomicI64::new(-1);

/// The logger of a C, C++ or Fortran program: one line per message on standard error.
struct StderrLogger;

static LOGGER: StderrLogger = StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = format_line(RANK.load(Ordering::Relaxed), record);
        // One write per line, so that lines of the runtime's threads do not mix.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// `rankmig[3] WARN: message\n`, with the message's own line breaks kept on one line.
fn format_line(rank: i64, record: &Record) -> String {
    let who = if rank >= 0 {
        format!("rankmig[{rank}]")
    } else {
        "rankmig".to_owned()
    };
    let message = record.args().to_string().replace('\n', " | ");
    format!("{who} {}: {message}\n", record.level())
}

/// A value of `RANKMIG_LOG` that is not a level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("RANKMIG_LOG={0:?} is not one of trace, debug, info, warn, error, off")]
pub struct BadLevel(pub String);

/// The level from the values of `RANKMIG_LOG` and `RUST_LOG`: `RANKMIG_LOG` when set
/// (an error when it is not a level), else a plain level in `RUST_LOG` or its
/// `rankmig=LEVEL` directive, else [`DEFAULT_LEVEL`].
pub fn level_from(
    rankmig_log: Option<&str>,
    rust_log: Option<&str>,
) -> Result<LevelFilter, BadLevel> {
    if let Some(value) = rankmig_log.map(str::trim).filter(|v| !v.is_empty()) {
        return value.parse().map_err(|_| BadLevel(value.to_owned()));
    }
    Ok(rust_log
        .and_then(level_in_rust_log)
        .unwrap_or(DEFAULT_LEVEL))
}

/// The level `RUST_LOG` gives rankmig: its `rankmig=LEVEL` directive, else its bare
/// level (`info` in `info,hyper=off`); `None` when it gives neither.
fn level_in_rust_log(value: &str) -> Option<LevelFilter> {
    let directives = value.split(',').map(str::trim);
    let ours = directives
        .clone()
        .filter_map(|d| d.strip_prefix("rankmig="))
        .find_map(|level| level.parse().ok());
    ours.or_else(|| {
        directives
            .filter(|d| !d.contains('='))
            .find_map(|d| d.parse().ok())
    })
}

/// Installs the standard-error logger at the level of the environment, unless the
/// program has a logger already. Returns whether it was installed. A bad `RANKMIG_LOG`
/// is said on standard error and the default level is used.
pub fn install() -> bool {
    let level = level_from(
        std::env::var("RANKMIG_LOG").ok().as_deref(),
        std::env::var("RUST_LOG").ok().as_deref(),
    )
    .unwrap_or_else(|bad| {
        let _ = writeln!(std::io::stderr(), "rankmig: {bad}; using {DEFAULT_LEVEL}");
        DEFAULT_LEVEL
    });
    if log::set_logger(&LOGGER).is_err() {
        return false;
    }
    log::set_max_level(level);
    true
}

/// Sets the rank printed in each line (the process's rank in the job).
pub fn set_rank(rank: u32) {
    RANK.store(i64::from(rank), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rankmig_log_wins_over_rust_log() {
        assert_eq!(
            level_from(Some("error"), Some("debug")),
            Ok(LevelFilter::Error)
        );
        assert_eq!(level_from(Some("OFF"), None), Ok(LevelFilter::Off));
    }

    #[test]
    fn a_bad_rankmig_log_is_an_error_naming_the_value() {
        let err = level_from(Some("verbose"), None).unwrap_err();
        assert!(err.to_string().contains("\"verbose\""), "{err}");
    }

    #[test]
    fn rust_log_gives_rankmigs_directive_first() {
        assert_eq!(
            level_from(None, Some("warn,rankmig=debug")),
            Ok(LevelFilter::Debug)
        );
        assert_eq!(level_from(None, Some("mpi=trace")), Ok(DEFAULT_LEVEL));
        assert_eq!(
            level_from(Some("  "), Some("error")),
            Ok(LevelFilter::Error)
        );
    }

    #[test]
    fn a_line_names_the_rank_and_keeps_to_one_line() {
        let args = format_args!("two\nlines");
        let record = Record::builder().args(args).level(log::Level::Warn).build();
        assert_eq!(format_line(3, &record), "rankmig[3] WARN: two | lines\n");
        assert_eq!(format_line(-1, &record), "rankmig WARN: two | lines\n");
    }
}
