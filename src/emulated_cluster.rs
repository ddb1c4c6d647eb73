//! An emulated cluster on one machine: each host of the allocation is a UTS namespace
//! with its own host name, reached by the MPI launcher through an rsh agent.
//!
//! `rankmig run --emulated-cluster` writes the agent script `RUN_DIR/emulated-host`
//! ([`write_agent`]), which runs `rankmig emulated-host`, and sets it as the launcher's
//! agent ([`settings`]). The launcher calls it as it would call `ssh HOST COMMAND...`
//! (hydra adds `-x` first): the command runs in a new UTS namespace whose host name is
//! `HOST`, so the launcher's daemon, and every rank it starts, sees itself on `HOST`.
//! No `/etc/hosts` entry is needed. It needs the right to create namespaces (root, or
//! unprivileged user namespaces).
//!
//! A process's host can be read from outside with `nsenter -t PID -u hostname`, or by
//! [`host_of`].
//!
//! A host is switched off by listing its name in the file named by
//! [`ENV_DOWN_HOSTS`] (one per line) and killing its processes: `rankmig emulated-host`
//! then refuses it as `ssh` refuses a host that does not answer (exit 255), so the
//! launcher cannot start a daemon there and a probe finds it lost.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::launcher::Launcher;

/// The variables that make `launcher` reach the hosts of an emulated cluster through
/// `agent` (the path of the script [`write_agent`] wrote), with the network settings
/// the launcher needs when hosts share this machine's cores and network.
pub fn settings(launcher: &dyn Launcher, agent: &Path) -> Vec<(String, String)> {
    let mut vars = launcher.agent_settings(&agent.display().to_string());
    vars.extend(launcher.emulated_cluster_settings());
    vars
}

/// Writes `dir/emulated-host`, an executable script that runs `rankmig emulated-host`
/// of the executable `rankmig` with its arguments (one path, as hydra wants its agent).
pub fn write_agent(dir: &Path, rankmig: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let path = dir.join("emulated-host");
    let quoted = rankmig.display().to_string().replace('\'', "'\\''");
    let script = format!("#!/bin/sh\nexec '{quoted}' emulated-host \"$@\"\n");
    std::fs::write(&path, script)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// True when this machine lets this process create a UTS namespace (checked by
/// running `unshare --uts true`).
pub fn available() -> bool {
    Command::new("unshare")
        .args(["--uts", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// A file listing the emulated hosts that are down, one name per line.
pub const ENV_DOWN_HOSTS: &str = "RANKMIG_EMULATED_DOWN_HOSTS";

/// Why `rankmig emulated-host` could not start the command.
#[derive(Debug, thiserror::Error)]
pub enum EmulatedHostError {
    /// The host is listed as down.
    #[error("emulated-host: connect to host {host}: host is down (listed in {})", list.display())]
    Down {
        /// The host.
        host: String,
        /// The file that lists it.
        list: std::path::PathBuf,
    },
    /// A host name or command with a NUL byte, or an empty command.
    #[error("emulated-host: {0}")]
    Usage(String),
    /// A system call failed.
    #[error("emulated-host {host}: {call}: {source}")]
    System {
        /// The host.
        host: String,
        /// The call.
        call: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// Runs `command` (joined with spaces and given to `/bin/sh -c`, as `ssh` does) in a
/// new UTS namespace named `host`. Does not return on success (the process becomes the
/// shell).
pub fn exec_on_host(
    host: &str,
    command: &[String],
) -> Result<std::convert::Infallible, EmulatedHostError> {
    if command.is_empty() {
        return Err(EmulatedHostError::Usage(format!(
            "no command for host '{host}'"
        )));
    }
    if let Some(list) = std::env::var_os(ENV_DOWN_HOSTS).map(std::path::PathBuf::from) {
        let down = std::fs::read_to_string(&list).unwrap_or_default();
        if down.lines().any(|l| l.trim() == host) {
            return Err(EmulatedHostError::Down {
                host: host.to_owned(),
                list,
            });
        }
    }
    let system = |call| {
        let source = std::io::Error::last_os_error();
        EmulatedHostError::System {
            host: host.to_owned(),
            call,
            source,
        }
    };
    let script = CString::new(command.join(" "))
        .map_err(|_| EmulatedHostError::Usage("a NUL byte in the command".into()))?;
    // SAFETY: unshare(2) and sethostname(2) with a valid buffer; this process is
    // single-threaded at this point (called before anything else by the binary).
    unsafe {
        if libc::unshare(libc::CLONE_NEWUTS) != 0 {
            return Err(system("unshare(CLONE_NEWUTS)"));
        }
        if libc::sethostname(host.as_ptr().cast(), host.len()) != 0 {
            return Err(system("sethostname"));
        }
    }
    let shell = CString::new("/bin/sh").map_err(|_| EmulatedHostError::Usage("shell".into()))?;
    let dash_c = CString::new("-c").map_err(|_| EmulatedHostError::Usage("-c".into()))?;
    let argv = [
        shell.as_ptr(),
        dash_c.as_ptr(),
        script.as_ptr(),
        std::ptr::null(),
    ];
    // SAFETY: a NULL-terminated argv of valid C strings that outlive the call.
    unsafe { libc::execv(shell.as_ptr(), argv.as_ptr()) };
    Err(system("execv /bin/sh"))
}

/// The host name of the UTS namespace process `pid` runs in, read from outside the
/// process (`nsenter -t PID -u hostname`).
pub fn host_of(pid: u32) -> Option<String> {
    let out = Command::new("nsenter")
        .args(["-t", &pid.to_string(), "-u", "hostname"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
