//! Commands run in a session of their own whose autogroup has the highest priority, so
//! that a test's job meets the machine as on a quiet one while other sessions build.

use std::process::Command;

/// A command run in a session of its own whose autogroup has nice −19 (as root; else
/// nice 0): with the kernel's autogroups every session shares the CPUs fairly with the
/// others whatever its tasks' count, so on a machine where other sessions build, the
/// job and the hogs of a test (each so boosted) meet as on a quiet machine. Without the
/// boost, the scheduler moves the other sessions' work off the hogs' CPU and the job's
/// ranks all wait alike (measured in `src/contention.rs`): nothing to move to.
pub fn boosted() -> Command {
    let mut cmd = Command::new("setsid");
    cmd.args([
        "sh",
        "-c",
        "echo -19 > /proc/self/autogroup 2>/dev/null; exec \"$@\"",
        "sh",
    ]);
    cmd
}

/// `cmd` (its program, arguments, variables and directory) run [`boosted`].
pub fn boost(cmd: &Command) -> Command {
    let mut boosted = boosted();
    boosted.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => boosted.env(k, v),
            None => boosted.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        boosted.current_dir(dir);
    }
    boosted
}
