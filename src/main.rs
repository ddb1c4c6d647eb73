//! The `rankmig` command: parses the command line, calls the library, prints.

mod cli;
mod commands;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(err) = commands::run(args) {
        eprintln!("rankmig: error: {err}");
        std::process::exit(err.exit_code());
    }
}
