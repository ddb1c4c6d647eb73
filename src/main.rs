//! The `rankmig` command: parses the command line, calls the library, prints.

// As in the library (src/lib.rs): errors are returned, not unwrapped.
#![warn(clippy::unwrap_used, clippy::expect_used)]

mod bind_exec;
mod cli;
mod cli_error;
mod commands;
mod map_command;
mod report_command;

use clap::FromArgMatches;

fn main() {
    ask_hwloc_for_reasons();
    // Read before the command line, for the two commands that use them: the files give
    // `rankmig run` its defaults. An error stops those two only (commands::run).
    let config =
        uses_configuration(std::env::args_os().skip(1)).then(rankmig::config::Configuration::load);
    let matches = cli::command_with(config.as_ref().and_then(|c| c.as_ref().ok())).get_matches();
    let args = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if !matches!(
        args.command,
        cli::Command::Run(_) | cli::Command::EmulatedHost(_) | cli::Command::BindExec(_)
    ) {
        end_quietly_on_closed_output();
    }
    init_logger(args.quiet, args.verbose);
    if let Err(err) = commands::run(args, config) {
        eprintln!("rankmig: error: {err}");
        std::process::exit(err.exit_code());
    }
}

/// True when the command line (without the program's name) is `rankmig run`, `rankmig
/// config` or the help of either (`rankmig help run`): the subcommand is the first
/// argument that is not an option, as the options before it (`-q`, `-v`) take no value.
fn uses_configuration(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    let mut words = args.filter(|a| !a.to_string_lossy().starts_with('-'));
    let mut first = words.next();
    if first.as_deref() == Some(std::ffi::OsStr::new("help")) {
        first = words.next();
    }
    first.is_some_and(|word| word == "run" || word == "config")
}

/// A command whose output is piped into `head` ends when the reader goes away, as Unix
/// tools do, instead of panicking on the failed write: SIGPIPE gets its default action
/// back (Rust ignores it). Not for `run`, which must stop its job before it ends, nor
/// for `emulated-host`, which execs the command given.
fn end_quietly_on_closed_output() {
    // SAFETY: restoring a signal's default disposition; no handler runs Rust code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// hwloc says why it refuses a synthetic topology only when `HWLOC_SYNTHETIC_VERBOSE` is
/// set; the library then captures that reason for its error. Set here, before any thread
/// exists, unless the user chose a value.
fn ask_hwloc_for_reasons() {
    // Not for `bind-exec`, whose environment becomes a rank's program's.
    let binds = std::env::args_os().nth(1).is_some_and(|a| a == "bind-exec");
    if !binds && std::env::var_os("HWLOC_SYNTHETIC_VERBOSE").is_none() {
        // SAFETY: first statement of main, no other thread reads the environment yet.
        unsafe { std::env::set_var("HWLOC_SYNTHETIC_VERBOSE", "1") };
    }
}

/// Messages of the library go through the `log` facade; this prints them on stderr as
/// `rankmig +SECONDS: LEVEL: message` (seconds since start). Info and above by default,
/// warnings with `-q`, debug with `-v`, everything with `-vv`; `RUST_LOG` overrides.
fn init_logger(quiet: bool, verbose: u8) {
    use std::io::Write;
    let level = match (quiet, verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    };
    let start = std::time::Instant::now();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format(move |buf, record| {
            writeln!(
                buf,
                "rankmig +{:.1}s: {}: {}",
                start.elapsed().as_secs_f64(),
                record.level().as_str().to_lowercase(),
                record.args()
            )
        })
        .init();
}
