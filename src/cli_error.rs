//! What makes a command of the `rankmig` binary fail ([`CliError`], with its exit code),
//! and the inputs several commands load the same way: a matrix, a tree of nodes, link
//! costs.

use std::path::PathBuf;

use rankmig::availability::AvailabilityError;
use rankmig::config::ConfigError;
use rankmig::matrix::{CommMatrix, MatrixError};
use rankmig::output::{HostsError, OutputError};
use rankmig::planner::{PlacementError, PlanError};
use rankmig::supervisor::run_settings::RunError;
use rankmig::topology::{CpuSelectionError, IndexListError, TopologyError, Tree};
use rankmig::treematch::MapError;
use rankmig::treematch::mapping_file::MappingFileError;
use rankmig::treematch::metrics::LinkCosts;

use crate::cli::{MatrixArgs, TreeArgs};

/// Everything that can make a command fail; [`CliError::exit_code`] gives the process
/// exit code of each.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Map(#[from] MapError),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("{option}: {source}")]
    IndexList {
        option: &'static str,
        source: IndexListError,
    },
    #[error(
        "{option}: no rank slot (a group of {cores_per_rank} leaves of a node) has all of its leaves selected"
    )]
    NoWholeGroup {
        option: &'static str,
        cores_per_rank: usize,
    },
    #[error("--allowed {value}: {source}{hint}")]
    AllowedCpus {
        value: String,
        source: CpuSelectionError,
        hint: &'static str,
    },
    #[error(transparent)]
    MappingFile(#[from] MappingFileError),
    #[error(transparent)]
    Hosts(#[from] HostsError),
    #[error(transparent)]
    Availability(#[from] AvailabilityError),
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Checkpoint(#[from] rankmig::checkpoint::CheckpointError),
    /// `inspect --verify` found a complete epoch with a corrupt or missing file.
    #[error("{}: a complete epoch has a corrupt or missing file", dir.display())]
    CorruptCheckpoint { dir: PathBuf },
    #[error(transparent)]
    EmulatedHost(#[from] rankmig::emulated_cluster::EmulatedHostError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    BindExec(crate::bind_exec::BindExecError),
    #[error(transparent)]
    Report(#[from] rankmig::report::ReportError),
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the job ended with exit code {0}")]
    JobFailed(i32),
}

impl CliError {
    /// Process exit code for this error: 2 for a command line that does not make sense
    /// (clap exits 2 for its own usage errors too), the job's own code when it failed,
    /// 255 for an emulated host that is down (as `ssh`), 1 for any other error (input
    /// files, a corrupt checkpoint, what this machine cannot do).
    pub fn exit_code(&self) -> i32 {
        use rankmig::emulated_cluster::EmulatedHostError;
        match self {
            CliError::Hosts(_) | CliError::EmulatedHost(EmulatedHostError::Usage(_)) => 2,
            CliError::Run(err) if err.is_usage() => 2,
            CliError::JobFailed(code) => *code,
            // as a shell exits when it cannot execute a command
            CliError::BindExec(_) => 127,
            // as `ssh` exits when it cannot reach a host
            CliError::EmulatedHost(EmulatedHostError::Down { .. }) => 255,
            _ => 1,
        }
    }
}

pub(crate) fn load_matrix(args: &MatrixArgs) -> Result<CommMatrix, CliError> {
    Ok(CommMatrix::load(&args.matrix, args.matrix_format)?)
}

pub(crate) fn load_tree(args: &TreeArgs) -> Result<Tree, CliError> {
    let node = args.topology.load_with(args.leaves, args.cache_levels())?;
    Ok(Tree::cluster(&node, args.nodes as usize)?)
}

pub(crate) fn link_costs(costs: Option<&str>, tree: &Tree) -> Result<LinkCosts, CliError> {
    Ok(match costs {
        Some(list) => LinkCosts::parse_for(list, tree)?,
        None => LinkCosts::default_for(tree.depth()),
    })
}
