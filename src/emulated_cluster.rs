//! An emulated cluster on one machine: each host of the allocation is a UTS namespace
//! with its own host name, reached by Open MPI through an rsh agent.
//!
//! `rankmig run --emulated-cluster` sets Open MPI's `plm_rsh_agent` to `rankmig
//! emulated-host`, which Open MPI calls as `rankmig emulated-host HOST COMMAND...` (as it
//! would call `ssh HOST COMMAND...`): the command runs in a new UTS namespace whose host
//! name is `HOST`, so Open MPI's daemon, and every rank it starts, sees itself on
//! `HOST`. The runtime and TCP use loopback. No `/etc/hosts` entry is needed. It needs
//! the right to create namespaces (root, or unprivileged user namespaces).
//!
//! A process's host can be read from outside with `nsenter -t PID -u hostname`, or by
//! [`host_of`].
//!
//! A host is switched off by listing its name in the file named by
//! [`ENV_DOWN_HOSTS`] (one per line) and killing its processes: `rankmig emulated-host`
//! then refuses it as `ssh` refuses a host that does not answer (exit 255), so Open
//! MPI cannot start a daemon there and a probe finds it lost.

use std::ffi::CString;
use std::process::Command;

/// The Open MPI settings that make `mpirun` reach the hosts of an emulated cluster
/// through `agent` (the command line of `rankmig emulated-host`).
///
/// `mpi_yield_when_idle` matters: the emulated hosts share this machine's cores, and
/// without it 8 ranks on 4 hosts of 2 cores took 38 ms per Jacobi iteration instead of
/// under 1 ms.
pub fn mpirun_settings(agent: &str) -> Vec<(String, String)> {
    [
        ("OMPI_MCA_plm_rsh_agent", agent),
        ("OMPI_MCA_oob_tcp_if_include", "lo"),
        ("OMPI_MCA_btl_tcp_if_include", "lo"),
        ("OMPI_MCA_mpi_yield_when_idle", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
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
