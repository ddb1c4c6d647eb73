//! `rankmig run --emulated-cluster`: the launcher's variables that make it reach every
//! host of the allocation as a UTS namespace of this machine ([`crate::emulated_cluster`]).
//!
//! The binary sets them in its own environment before anything is launched, since the
//! launcher, the probes ([`super::probe`]) and the launches of replacements read them
//! from there; among them `RANKMIG_EMULATED_HOSTS=1`, which the launcher's daemons and
//! so the ranks inherit, and by which each rank binds to a CPU of its own host's share
//! of the machine.

use std::path::{Path, PathBuf};

use super::launch::RunSpec;
use crate::run_dir::settings::ENV_EMULATED_HOSTS;

/// Why `rankmig run --emulated-cluster` cannot emulate the cluster.
#[derive(Debug, thiserror::Error)]
pub enum EmulatedClusterError {
    /// A command-line mistake: nothing to emulate.
    #[error("--emulated-cluster needs an allocation: give --hostfile")]
    NoAllocation,
    /// This machine cannot (not a mistake in the command line).
    #[error(
        "--emulated-cluster: this machine does not let rankmig create UTS namespaces (`unshare --uts true` failed)"
    )]
    NoUtsNamespaces,
    /// The agent the launcher calls is this executable.
    #[error("cannot find rankmig's own executable: {0}")]
    OwnExecutable(std::io::Error),
    /// The agent script could not be written.
    #[error("{}: {source}", path.display())]
    Agent {
        /// The script's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The variables of the launcher of `spec` for an emulated cluster of its allocation,
/// whose agent runs this executable: refused without an allocation or where this
/// machine cannot create UTS namespaces.
pub fn launcher_environment(spec: &RunSpec) -> Result<Vec<(String, String)>, EmulatedClusterError> {
    if spec.allocation.is_none() {
        return Err(EmulatedClusterError::NoAllocation);
    }
    if !crate::emulated_cluster::available() {
        return Err(EmulatedClusterError::NoUtsNamespaces);
    }
    let exe = std::env::current_exe().map_err(EmulatedClusterError::OwnExecutable)?;
    agent_environment(spec, &exe)
}

/// An emulated cluster's hosts share one file system: the node-local checkpoint
/// directory `DIR` (`--ckpt-local`) becomes `DIR/%h`, one per host, unless it names the
/// host already.
///
/// ```
/// # let text = r#"{"ranks": 2, "availability": "/a", "matrix": null, "ckpt_dir": "/c",
/// #   "run_dir": "/r", "check_every": 0, "program": ["app"], "env": [], "ckpt_local": "/dev/shm/me"}"#;
/// let mut spec: rankmig::supervisor::launch::RunSpec = serde_json::from_str(text).unwrap();
/// rankmig::supervisor::emulated::one_local_dir_per_host(&mut spec);
/// assert_eq!(spec.ckpt_local.as_deref(), Some(std::path::Path::new("/dev/shm/me/%h")));
/// rankmig::supervisor::emulated::one_local_dir_per_host(&mut spec);
/// assert_eq!(spec.ckpt_local.as_deref(), Some(std::path::Path::new("/dev/shm/me/%h")));
/// ```
pub fn one_local_dir_per_host(spec: &mut RunSpec) {
    use crate::checkpoint::config::HOST_PLACEHOLDER;
    if let Some(dir) = &spec.ckpt_local {
        if !dir.to_string_lossy().contains(HOST_PLACEHOLDER) {
            spec.ckpt_local = Some(dir.join(HOST_PLACEHOLDER));
        }
    }
}

/// Writes the agent script `RUN_DIR/emulated-host`, which runs `rankmig emulated-host`
/// of the executable `rankmig`, and gives the launcher's variables that name it, with
/// [`ENV_EMULATED_HOSTS`]: the ranks' hosts share this machine's CPUs, and each binds
/// to a real CPU offset by its host's place in the availability.
pub fn agent_environment(
    spec: &RunSpec,
    rankmig: &Path,
) -> Result<Vec<(String, String)>, EmulatedClusterError> {
    let agent = crate::emulated_cluster::write_agent(&spec.run_dir, rankmig).map_err(|source| {
        EmulatedClusterError::Agent {
            path: spec.run_dir.join("emulated-host"),
            source,
        }
    })?;
    let mut vars = crate::emulated_cluster::settings(spec.launcher(), &agent);
    vars.push((ENV_EMULATED_HOSTS.to_owned(), "1".to_owned()));
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_in(run_dir: &Path) -> RunSpec {
        let text = format!(
            r#"{{"ranks": 2, "availability": "/a", "matrix": null, "ckpt_dir": "/c",
                "run_dir": {:?}, "check_every": 0, "program": ["app"], "env": []}}"#,
            run_dir.display().to_string()
        );
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn without_an_allocation_there_is_nothing_to_emulate() {
        let dir = tempfile::tempdir().unwrap();
        let err = launcher_environment(&spec_in(dir.path())).unwrap_err();
        assert!(matches!(err, EmulatedClusterError::NoAllocation), "{err}");
    }

    #[test]
    fn the_agent_is_written_in_the_run_directory_and_named_to_the_launcher() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = dir.path().join("run");
        let vars = agent_environment(&spec_in(&run_dir), Path::new("/opt/it's/rankmig")).unwrap();
        let agent = run_dir.join("emulated-host");
        let script = std::fs::read_to_string(&agent).unwrap();
        assert!(
            script.contains(r"'/opt/it'\''s/rankmig' emulated-host"),
            "{script}"
        );
        let named = agent.display().to_string();
        assert!(vars.iter().any(|(_, v)| *v == named), "{vars:?}");
        // The ranks are told that their hosts share this machine's CPUs.
        assert!(
            vars.iter()
                .any(|(k, v)| k == ENV_EMULATED_HOSTS && v == "1"),
            "{vars:?}"
        );
    }

    #[test]
    fn an_agent_that_cannot_be_written_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let err =
            agent_environment(&spec_in(&file.join("run")), Path::new("/bin/rankmig")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&file.join("run/emulated-host").display().to_string()),
            "{err}"
        );
    }
}
