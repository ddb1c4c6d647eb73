//! Tests that cannot test their feature say so, with the reason, instead of passing in
//! silence: each skip is printed and, when `RANKMIG_SKIPPED_LOG` names a file, appended
//! to it (`KIND<TAB>TEST<TAB>REASON` lines), where `scripts/test.sh` lists them in its
//! summary. Two kinds:
//! - [`on_this_machine`]: the machine lacks what the test needs (UTS namespaces, a
//!   second CPU, a compiler). The README says every test runs on the project's
//!   machines, so `scripts/test.sh` fails when one of these is logged;
//! - [`not_for_this_mpi`]: the MPI under test cannot do what the test exercises, as
//!   the docs say (Open MPI 5 moves ranks across hosts by a relaunch, PyPI's MPIs have
//!   no Fortran wrapper): listed, not a failure.

use std::io::Write;

/// The variable naming the file skips are appended to.
pub const ENV_SKIPPED_LOG: &str = "RANKMIG_SKIPPED_LOG";

/// This test cannot run on this machine, because `reason`.
pub fn on_this_machine(reason: &str) {
    record("machine", reason);
}

/// This test does not apply to the MPI under test, because `reason`.
pub fn not_for_this_mpi(reason: &str) {
    record("mpi", reason);
}

fn record(kind: &str, reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("(unnamed test)");
    let mpi = std::env::var("PATH")
        .ok()
        .and_then(|p| {
            p.split(':')
                .find(|d| d.contains("target/mpi/"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "the system's MPI".to_owned());
    eprintln!("SKIPPED ({kind}): {test}: {reason}");
    let Some(path) = std::env::var_os(ENV_SKIPPED_LOG) else {
        return;
    };
    let line = format!("{kind}\t{test}\t{reason} ({mpi})\n");
    // One write of one line in append mode: lines of concurrent tests do not mix.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot log the skip in {}: {e}", path.to_string_lossy());
    }
}
