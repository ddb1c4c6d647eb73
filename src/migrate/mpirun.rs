//! The `mpirun` command line of a run: where each rank starts, the options live
//! migration needs, the settings the ranks read, and the user's own options.
//!
//! In multi-host mode the initial placement is carried out by Open MPI's sequential
//! mapper (`--map-by seq`): line *i* of the hostfile written for the launch names the
//! host of rank *i*; every other host of the allocation follows, so that Open MPI
//! starts a daemon there and processes can later be spawned on it. Open MPI 4.1.4
//! facts this relies on (checked on an emulated cluster): with a rankfile, or with
//! `--mca rmaps seq`, the spawns of later migrations are mapped by the same mapper and
//! fail; `--map-by seq` maps only the initial job. A spawn onto a host whose slots are
//! in use fails ("All nodes which are allocated for this job are already filled")
//! unless `rmaps_base_oversubscribe` is set, which is why it is.
//!
//! No transport is forced: Open MPI picks shared memory inside a host and the network
//! between hosts, for the initial ranks and for spawned ones alike.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::planner::Placement;

use super::launch::RunSpec;
use super::settings::{
    ENV_AVAILABILITY, ENV_CHECK_EVERY, ENV_CHECK_INTERVAL_MS, ENV_CORES_PER_NODE, ENV_HOSTS,
    ENV_LOST_HOSTS, ENV_MATRIX, ENV_MATRIX_FORMAT, ENV_NO_SHARED_CACHES, ENV_NODE_TOPOLOGY,
    ENV_PLACEMENT, ENV_RUN_DIR, ENV_SETTLE_MS,
};

/// Extra `mpirun` options, whitespace separated, added before the user's
/// `--mpirun-arg` options.
pub const ENV_MPIRUN_ARGS: &str = "RANKMIG_MPIRUN_ARGS";

/// The sequential-mapper hostfile: the host of each rank in rank order, then the other
/// hosts of the allocation once each.
///
/// ```
/// use rankmig::planner::{Location, Placement};
/// let p = Placement::new(vec![
///     Location { node: "b".into(), core: 0 },
///     Location { node: "a".into(), core: 0 },
/// ]);
/// let hosts = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
/// assert_eq!(rankmig::migrate::mpirun::sequential_hostfile(&p, &hosts), "b\na\nc\n");
/// ```
pub fn sequential_hostfile(placement: &Placement, hosts: &[String]) -> String {
    let mut out = String::new();
    for l in placement.locations() {
        let _ = writeln!(out, "{}", l.node);
    }
    for h in hosts {
        if !placement.locations().iter().any(|l| &l.node == h) {
            let _ = writeln!(out, "{h}");
        }
    }
    out
}

/// Where a launch puts its ranks, as `mpirun` must be told.
pub struct LaunchFiles<'a> {
    /// The placement file the ranks read (`RANK NODE CORE`).
    pub placement: &'a Path,
    /// The sequential hostfile (multi-host mode only).
    pub hostfile: Option<&'a Path>,
    /// Cores of the planning tree's node (logical mode).
    pub cores: usize,
}

/// The `mpirun` command line: as root if need be, early exit of replaced processes
/// allowed, no binding by Open MPI (ranks bind themselves to their planned core),
/// the hosts (multi-host mode) or `--oversubscribe` on this host (logical nodes), the
/// settings passed with `-x`, then `RANKMIG_MPIRUN_ARGS` and `--mpirun-arg` options,
/// then the program. `OMPI_MCA_*` variables of the caller reach `mpirun` as they are.
///
/// `async_mpi_finalize` drops the PMIx fence at the start of `MPI_Finalize`: with
/// processes of the job gone without finalizing (the replaced ranks), Open MPI 4.1.4's
/// fence sometimes never completes and the ranks that stayed hang in `MPI_Finalize`
/// (seen in 1 of 5 runs here; 0 of 8 with this setting).
pub fn command(spec: &RunSpec, files: &LaunchFiles<'_>, restart: bool) -> Command {
    let mut cmd = Command::new("mpirun");
    if running_as_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--bind-to", "none"])
        .args(["--mca", "orte_allowed_exit_without_sync", "1"])
        .args(["--mca", "async_mpi_finalize", "1"])
        .args(["--mca", "rmaps_base_oversubscribe", "1"]);
    match files.hostfile {
        Some(hostfile) => {
            cmd.arg("--hostfile")
                .arg(hostfile)
                .args(["--map-by", "seq"]);
        }
        None => {
            cmd.arg("--oversubscribe");
        }
    }
    cmd.args(["-np", &spec.ranks.to_string()]);
    // The binary sets it for its own error messages; in the ranks it would make every
    // topology load redirect their standard error for a moment.
    cmd.env_remove("HWLOC_SYNTHETIC_VERBOSE");
    for (k, v) in rank_environment(spec, files, restart) {
        cmd.env(&k, v);
        cmd.args(["-x", &k]);
    }
    // Other RANKMIG_* settings of the caller (checkpoint interval, test knobs such as
    // RANKMIG_SPAWN_PROGRAM) reach the ranks too.
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        if k.starts_with("RANKMIG_") && k != ENV_MPIRUN_ARGS && !cmd_has_x(&cmd, k) {
            cmd.args(["-x", k]);
        }
    }
    if let Ok(extra) = std::env::var(ENV_MPIRUN_ARGS) {
        cmd.args(extra.split_whitespace());
    }
    cmd.args(&spec.mpirun_args);
    cmd.args(&spec.program);
    cmd
}

fn cmd_has_x(cmd: &Command, name: &str) -> bool {
    cmd.get_args().any(|a| a == name)
}

/// The `RANKMIG_*` settings of a launch, as the ranks read them.
fn rank_environment(
    spec: &RunSpec,
    files: &LaunchFiles<'_>,
    restart: bool,
) -> Vec<(String, String)> {
    let path = |p: &Path| p.display().to_string();
    let mut env: Vec<(String, String)> = vec![
        (ENV_RUN_DIR.into(), path(&spec.run_dir)),
        (ENV_AVAILABILITY.into(), path(&spec.availability)),
        (ENV_PLACEMENT.into(), path(files.placement)),
        (ENV_CORES_PER_NODE.into(), files.cores.to_string()),
        (ENV_CHECK_EVERY.into(), spec.check_every.to_string()),
        (ENV_MATRIX_FORMAT.into(), spec.matrix_format.name().into()),
        (
            ENV_CHECK_INTERVAL_MS.into(),
            spec.check_interval_ms.to_string(),
        ),
        (ENV_SETTLE_MS.into(), spec.settle_ms.to_string()),
        (
            super::spawn_watch::ENV_SPAWN_TIMEOUT_MS.into(),
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
    env.extend(spec.env.iter().cloned());
    env
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
