//! The `rankmig` command: parses the command line, calls the library, prints.

mod cli;
mod commands;

use clap::Parser;

fn main() {
    ask_hwloc_for_reasons();
    init_logger();
    let args = cli::Cli::parse();
    if let Err(err) = commands::run(args) {
        eprintln!("rankmig: error: {err}");
        std::process::exit(err.exit_code());
    }
}

/// hwloc says why it refuses a synthetic topology only when `HWLOC_SYNTHETIC_VERBOSE` is
/// set; the library repeats a refused parse to put that reason in its error. Set here,
/// before any thread exists, unless the user chose a value.
fn ask_hwloc_for_reasons() {
    if std::env::var_os("HWLOC_SYNTHETIC_VERBOSE").is_none() {
        // SAFETY: first statement of main, no other thread reads the environment yet.
        unsafe { std::env::set_var("HWLOC_SYNTHETIC_VERBOSE", "1") };
    }
}

/// Messages of the library go through the `log` facade; this prints them on stderr as
/// `rankmig: LEVEL: message` (warnings and above unless `RUST_LOG` says otherwise).
fn init_logger() {
    use std::io::Write;
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format(|buf, record| {
            writeln!(
                buf,
                "rankmig: {}: {}",
                record.level().as_str().to_lowercase(),
                record.args()
            )
        })
        .init();
}
