//! The `rankmig` command: parses the command line, calls the library, prints.

mod cli;
mod commands;

use clap::Parser;

fn main() {
    init_logger();
    let args = cli::Cli::parse();
    if let Err(err) = commands::run(args) {
        eprintln!("rankmig: error: {err}");
        std::process::exit(err.exit_code());
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
