//! The variables every rank of a launch sees: the `RANKMIG_*` settings of the run, the
//! MPI implementation, and the caller's own `RANKMIG_*` variables.

use std::path::Path;

use crate::launcher::ENV_MPI;
use crate::run_dir::launch_request::ENV_LAUNCHES_REPLACEMENTS;
use crate::run_dir::settings::{
    ENV_ALLOW_NEW_HOSTS, ENV_AVAILABILITY, ENV_CHECK_EVERY, ENV_CHECK_INTERVAL_MS,
    ENV_CORES_PER_NODE, ENV_CORES_PER_RANK, ENV_HOSTS, ENV_LOST_HOSTS, ENV_MATRIX,
    ENV_MATRIX_FORMAT, ENV_NO_SHARED_CACHES, ENV_NODE_TOPOLOGY, ENV_PLACEMENT, ENV_RUN_DIR,
    ENV_SETTLE_MS,
};
use crate::run_dir::spawn_watch::ENV_SPAWN_TIMEOUT_MS;

use super::launch::RunSpec;

/// Extra launcher options, whitespace separated, added before the user's
/// `--mpirun-arg` options.
pub const ENV_MPIRUN_ARGS: &str = "RANKMIG_MPIRUN_ARGS";

/// The `RANKMIG_*` settings of a launch whose placement file is `placement` and whose
/// logical nodes have `cores` cores, then the caller's other `RANKMIG_*` variables
/// (checkpoint interval, test knobs such as `RANKMIG_SPAWN_PROGRAM`).
pub fn rank_environment(
    spec: &RunSpec,
    placement: &Path,
    cores: usize,
    restart: bool,
) -> Vec<(String, String)> {
    let path = |p: &Path| p.display().to_string();
    let mut env: Vec<(String, String)> = vec![
        (ENV_MPI.into(), spec.mpi.name().into()),
        (
            crate::launcher::ENV_LAUNCH_METHOD.into(),
            spec.launch_method.name().into(),
        ),
        (ENV_RUN_DIR.into(), path(&spec.run_dir)),
        (ENV_AVAILABILITY.into(), path(&spec.availability)),
        (ENV_PLACEMENT.into(), path(placement)),
        (ENV_CORES_PER_NODE.into(), cores.to_string()),
        (
            ENV_CORES_PER_RANK.into(),
            spec.cores_per_rank.count.to_string(),
        ),
        (ENV_CHECK_EVERY.into(), spec.check_every.to_string()),
        (ENV_MATRIX_FORMAT.into(), spec.matrix_format.name().into()),
        (
            ENV_CHECK_INTERVAL_MS.into(),
            spec.check_interval_ms.to_string(),
        ),
        (ENV_SETTLE_MS.into(), spec.settle_ms.to_string()),
        (
            ENV_SPAWN_TIMEOUT_MS.into(),
            spec.spawn_timeout_ms.to_string(),
        ),
        ("RANKMIG_CKPT_DIR".into(), path(&spec.ckpt_dir)),
        (
            "RANKMIG_RESTART".into(),
            if restart { "1" } else { "0" }.into(),
        ),
    ];
    if let Some(m) = &spec.matrix {
        env.push((ENV_MATRIX.into(), path(m)));
    }
    if let Some(local) = &spec.ckpt_local {
        env.push(("RANKMIG_CKPT_LOCAL".into(), path(local)));
        env.push((
            "RANKMIG_CKPT_FLUSH_EVERY".into(),
            spec.ckpt_flush_every.to_string(),
        ));
    }
    if let Some(allocation) = &spec.allocation {
        env.push((ENV_HOSTS.into(), allocation.host_names().join(",")));
    }
    if !spec.lost_hosts.is_empty() {
        env.push((ENV_LOST_HOSTS.into(), spec.lost_hosts.join(",")));
    }
    if let Some(t) = &spec.node_topology {
        env.push((ENV_NODE_TOPOLOGY.into(), t.clone()));
    }
    if spec.no_shared_caches {
        env.push((ENV_NO_SHARED_CACHES.into(), "1".into()));
    }
    if spec.allow_new_hosts {
        env.push((ENV_ALLOW_NEW_HOSTS.into(), "1".into()));
    }
    env.extend(spec.contention.to_env());
    let offer = spec.launcher().capabilities().launch_replacements;
    if offer && std::env::var_os(ENV_LAUNCHES_REPLACEMENTS).is_none() {
        env.push((ENV_LAUNCHES_REPLACEMENTS.into(), "1".into()));
    }
    env.extend(spec.env.iter().cloned());
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        if k.starts_with("RANKMIG_") && k != ENV_MPIRUN_ARGS && !env.iter().any(|(e, _)| e == k) {
            env.push((k.to_owned(), v.to_owned()));
        }
    }
    env
}

/// The user's launcher options: `RANKMIG_MPIRUN_ARGS`, then `--mpirun-arg` options.
pub fn user_launcher_args(spec: &RunSpec) -> Vec<String> {
    let from_env = std::env::var(ENV_MPIRUN_ARGS).unwrap_or_default();
    from_env
        .split_whitespace()
        .map(str::to_owned)
        .chain(spec.mpirun_args.iter().cloned())
        .collect()
}
