//! A migration's steps with their times, for finding where a pause goes.
//!
//! With `RANKMIG_TIMELINE=1` in the job's environment, every process prints one line
//! to its standard error at each step of a migration (the spawn in the background,
//! the join, the state sent and received, the new communicator, an arrival ready):
//! `TIMELINE <seconds since the epoch> <pid> <step>`. Sorted by time, the lines of all
//! processes show which step held the ranks and for how long
//! (`grep -h TIMELINE | sort -k2,2n`). Off by default: each step then costs one
//! branch.

use std::sync::OnceLock;

/// The variable that turns the timeline on.
pub const ENV_TIMELINE: &str = "RANKMIG_TIMELINE";

/// Prints `what` with the time and this process's id when [`ENV_TIMELINE`] is set.
///
/// ```
/// rankmig::migrate::timeline::step("state sent"); // prints only with RANKMIG_TIMELINE=1
/// ```
pub fn step(what: &str) {
    static ON: OnceLock<bool> = OnceLock::new();
    if !*ON.get_or_init(|| std::env::var_os(ENV_TIMELINE).is_some_and(|v| v != "0")) {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    eprintln!("TIMELINE {now:.6} {} {what}", std::process::id());
}
