//! `rankmig run`: computes the initial placement, records the run, and starts the job
//! under `mpirun` with what live migration needs.
//!
//! Node names of the availability file that are not hosts of the MPI allocation are
//! logical nodes of this host: every rank is started here and told its logical node
//! and core (`RANKMIG_PLACEMENT`); it binds itself accordingly.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::availability::{Availability, AvailabilityFormat};
use crate::matrix::{CommMatrix, MatrixFormat, SymGraph};
use crate::planner::{Placement, place};
use crate::topology::Tree;

use super::settings::{
    ENV_AVAILABILITY, ENV_CHECK_EVERY, ENV_CORES_PER_NODE, ENV_MATRIX, ENV_PLACEMENT, ENV_RUN_DIR,
};

/// How a job is launched; saved as `run.json` so `--restart` can launch it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Ranks.
    pub ranks: usize,
    /// The availability file (absolute).
    pub availability: PathBuf,
    /// Matrix used for placement and planning, if any (absolute).
    pub matrix: Option<PathBuf>,
    /// Checkpoint directory (absolute).
    pub ckpt_dir: PathBuf,
    /// Run directory (absolute).
    pub run_dir: PathBuf,
    /// Calls between availability checks.
    pub check_every: u64,
    /// Program and its arguments.
    pub program: Vec<String>,
    /// Extra environment for the ranks (`NAME=VALUE`).
    pub env: Vec<(String, String)>,
}

/// Why a run could not be launched.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The availability file is unusable.
    #[error(transparent)]
    Availability(#[from] crate::availability::AvailabilityError),
    /// The matrix is unusable.
    #[error(transparent)]
    Matrix(#[from] crate::matrix::MatrixError),
    /// No initial placement.
    #[error(transparent)]
    Plan(#[from] crate::planner::PlanError),
    /// The matrix does not match the rank count.
    #[error("{}: the matrix has {found} ranks but -n is {ranks}", path.display())]
    MatrixOrder {
        /// The matrix file.
        path: PathBuf,
        /// Its order.
        found: usize,
        /// The rank count asked for.
        ranks: usize,
    },
    /// The run directory could not be written or read.
    #[error("{}: {source}", path.display())]
    RunDir {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `run.json` does not parse.
    #[error("{}: {source}", path.display())]
    RunSpec {
        /// The path.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// `mpirun` could not be started.
    #[error("cannot start mpirun: {0} (is openmpi-bin installed?)")]
    Mpirun(std::io::Error),
    /// The logical node tree could not be built.
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
    /// No program given.
    #[error("no program to run: give it after --, e.g. rankmig run -n 8 -a av -- ./app")]
    NoProgram,
}

/// Absolute form of a path (relative to the current directory).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The flat tree of a logical node: as many leaves as the largest node offers, and at
/// least `at_least` (so cores already used by a running job stay valid).
pub fn logical_node_tree(
    availability: &Availability,
    at_least: usize,
) -> Result<Tree, crate::topology::TopologyError> {
    let cores = availability
        .nodes()
        .iter()
        .map(|n| n.cores)
        .chain([at_least])
        .max()
        .unwrap_or(1);
    Tree::from_arities(&[cores.max(1)])
}

fn graph_for(spec: &RunSpec) -> Result<SymGraph, LaunchError> {
    match &spec.matrix {
        None => Ok(SymGraph::empty(spec.ranks)),
        Some(path) => {
            let m = CommMatrix::load(path, MatrixFormat::Auto)?;
            if m.order() != spec.ranks {
                return Err(LaunchError::MatrixOrder {
                    path: path.clone(),
                    found: m.order(),
                    ranks: spec.ranks,
                });
            }
            Ok(m.symmetric())
        }
    }
}

/// Initial placement of the job for the current availability.
pub fn initial_placement(spec: &RunSpec) -> Result<(Placement, usize), LaunchError> {
    let availability = Availability::load(&spec.availability, AvailabilityFormat::Auto)?;
    let tree = logical_node_tree(&availability, 1)?;
    let placement = place(&availability, &graph_for(spec)?, &tree)?;
    Ok((placement, tree.leaf_count()))
}

fn write(path: &Path, text: &str) -> Result<(), LaunchError> {
    std::fs::write(path, text).map_err(|source| LaunchError::RunDir {
        path: path.to_owned(),
        source,
    })
}

/// Prepares the run directory: `run.json`, the placement of this launch, the rankfile.
/// Returns the `mpirun` command. `restart` launches from the newest checkpoint.
pub fn prepare(spec: &RunSpec, restart: bool) -> Result<Command, LaunchError> {
    if spec.program.is_empty() {
        return Err(LaunchError::NoProgram);
    }
    std::fs::create_dir_all(&spec.run_dir).map_err(|source| LaunchError::RunDir {
        path: spec.run_dir.clone(),
        source,
    })?;
    let (placement, cores) = initial_placement(spec)?;
    let json = serde_json::to_string_pretty(spec).map_err(|source| LaunchError::RunSpec {
        path: spec.run_dir.join("run.json"),
        source,
    })?;
    write(&spec.run_dir.join("run.json"), &json)?;
    let name = if restart {
        format!("placement-restart-{}.txt", std::process::id())
    } else {
        "placement-0.txt".to_owned()
    };
    let placement_path = spec.run_dir.join(name);
    write(&placement_path, &placement.to_text())?;
    write(
        &spec.run_dir.join("rankfile"),
        &crate::output::plan::placement_rankfile(&placement),
    )?;
    Ok(mpirun_command(spec, &placement_path, cores, restart))
}

/// The `mpirun` command line: as root, oversubscribed, TCP (spawn needs it), early exit
/// of replaced processes allowed, no binding by Open MPI (ranks bind themselves to
/// their logical core), the settings passed with `-x`.
///
/// `async_mpi_finalize` drops the PMIx fence at the start of `MPI_Finalize`: with
/// processes of the job gone without finalizing (the replaced ranks), Open MPI 4.1.4's
/// fence sometimes never completes and the ranks that stayed hang in `MPI_Finalize`
/// (seen in 1 of 5 runs here; 0 of 8 with this setting).
fn mpirun_command(spec: &RunSpec, placement: &Path, cores: usize, restart: bool) -> Command {
    let mut cmd = Command::new("mpirun");
    if running_as_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "--bind-to", "none"])
        .args(["--mca", "orte_allowed_exit_without_sync", "1"])
        .args(["--mca", "async_mpi_finalize", "1"])
        .args(["--mca", "btl", "tcp,self"])
        .args(["-np", &spec.ranks.to_string()]);
    let mut env: Vec<(String, String)> = vec![
        (ENV_RUN_DIR.into(), spec.run_dir.display().to_string()),
        (
            ENV_AVAILABILITY.into(),
            spec.availability.display().to_string(),
        ),
        (ENV_PLACEMENT.into(), placement.display().to_string()),
        (ENV_CORES_PER_NODE.into(), cores.to_string()),
        (ENV_CHECK_EVERY.into(), spec.check_every.to_string()),
        (
            "RANKMIG_CKPT_DIR".into(),
            spec.ckpt_dir.display().to_string(),
        ),
        (
            "RANKMIG_RESTART".into(),
            if restart { "1" } else { "0" }.into(),
        ),
    ];
    if let Some(m) = &spec.matrix {
        env.push((ENV_MATRIX.into(), m.display().to_string()));
    }
    env.extend(spec.env.iter().cloned());
    for (k, v) in &env {
        cmd.env(k, v);
        cmd.args(["-x", k]);
    }
    // Other RANKMIG_* settings of the caller (checkpoint interval, test knobs such as
    // RANKMIG_SPAWN_PROGRAM) reach the ranks too.
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        if k.starts_with("RANKMIG_") && !env.iter().any(|(e, _)| e == k) {
            cmd.args(["-x", k]);
        }
    }
    cmd.args(&spec.program);
    cmd
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

/// Reads `run.json` of a run directory.
pub fn load_spec(run_dir: &Path) -> Result<RunSpec, LaunchError> {
    let path = run_dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|source| LaunchError::RunDir {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| LaunchError::RunSpec { path, source })
}

/// Runs the job; returns `mpirun`'s exit code.
pub fn run(spec: &RunSpec, restart: bool) -> Result<i32, LaunchError> {
    let mut cmd = prepare(spec, restart)?;
    let status = cmd.status().map_err(LaunchError::Mpirun)?;
    Ok(status.code().unwrap_or(1))
}
