//! What each subcommand does: load inputs, call the library, print.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rankmig::matrix::{CommMatrix, MatrixError};
use rankmig::output::{MapReport, OutputError};
use rankmig::topology::{
    CpuSelectionError, IndexListError, TopologyError, Tree, leaves_on_cpus, parse_index_list,
};
use rankmig::treematch::mapping_file::{self, MappingFileError};
use rankmig::treematch::metrics::{LinkCosts, Metrics, evaluate};
use rankmig::treematch::{MapError, MapOptions, baselines, map};

use rankmig::availability::{Availability, AvailabilityError};
use rankmig::config::{ConfigError, Configuration};
use rankmig::output::plan::{SimulationStep, placement_rankfile_on, plan_text, simulation_text};
use rankmig::output::simulation_csv;
use rankmig::planner::{Placement, PlacementError, PlanError, PlanOptions};

use crate::cli::{
    Cli, Command, CostArgs, InspectArgs, MapArgs, MatrixArgs, PlaceArgs, PlaceFormat, PlanArgs,
    PlanFormat, ReportArgs, RunArgs, SimulateArgs, SimulateFormat, StepArgs, TopologyArgs,
    TreeArgs,
};

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
    EmulatedCluster(#[from] EmulatedClusterError),
    #[error(transparent)]
    Launch(#[from] rankmig::supervisor::launch::LaunchError),
    #[error(transparent)]
    Allocation(#[from] rankmig::allocation::AllocationError),
    #[error(transparent)]
    Mpi(#[from] rankmig::launcher::LauncherError),
    #[error(transparent)]
    Report(#[from] rankmig::report::ReportError),
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A run (restarted from a run directory) with no ranks.
    #[error("-n must be at least 1")]
    NoRanks,
    #[error("the job ended with exit code {0}")]
    JobFailed(i32),
}

/// `--hosts` of `rankmig map` that cannot name the nodes.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    #[error("--hosts: {0:?} is not a valid host name (letters, digits, '-' and '.')")]
    NotAHostName(String),
    #[error("--hosts: {0:?} is named twice")]
    NamedTwice(String),
    #[error("--hosts names {hosts} hosts but --nodes is {nodes}")]
    WrongCount { hosts: usize, nodes: u32 },
}

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
}

impl CliError {
    /// Process exit code for this error: 2 for a command line that does not make sense
    /// (clap exits 2 for its own usage errors too), the job's own code when it failed,
    /// 255 for an emulated host that is down (as `ssh`), 1 for any other error (input
    /// files, a corrupt checkpoint, what this machine cannot do).
    pub fn exit_code(&self) -> i32 {
        use rankmig::emulated_cluster::EmulatedHostError;
        match self {
            CliError::Hosts(_)
            | CliError::NoRanks
            | CliError::EmulatedCluster(EmulatedClusterError::NoAllocation)
            | CliError::EmulatedHost(EmulatedHostError::Usage(_)) => 2,
            CliError::JobFailed(code) => *code,
            // as `ssh` exits when it cannot reach a host
            CliError::EmulatedHost(EmulatedHostError::Down { .. }) => 255,
            _ => 1,
        }
    }
}

/// Runs the parsed command line, with the configuration files as read (their error
/// stops `run` and `config`, before anything starts).
pub fn run(cli: Cli, config: Result<Configuration, ConfigError>) -> Result<(), CliError> {
    match cli.command {
        Command::Map(args) => run_map(&args),
        Command::Cost(args) => run_cost(&args),
        Command::Topology(args) => run_topology(&args),
        Command::Place(args) => run_place(&args),
        Command::Plan(args) => run_plan(&args),
        Command::Simulate(args) => run_simulate(&args),
        Command::Inspect(args) => run_inspect(&args),
        Command::Run(args) => run_job(&args, &config?),
        Command::Config(_) => print_configuration(&config?),
        Command::Report(args) => run_report(&args),
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Into memory first: clap_complete panics when its writer fails.
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut command, "rankmig", &mut script);
            (std::io::stdout().write_all(&script)).map_err(|source| CliError::Write {
                path: PathBuf::from("standard output"),
                source,
            })
        }
        Command::Man(args) => write_man_pages(args.dir.as_deref()),
        Command::EmulatedHost(args) => {
            rankmig::emulated_cluster::exec_on_host(&args.host, &args.command)?;
            Ok(())
        }
    }
}

fn load_matrix(args: &MatrixArgs) -> Result<CommMatrix, CliError> {
    Ok(CommMatrix::load(&args.matrix, args.matrix_format)?)
}

fn load_tree(args: &TreeArgs) -> Result<Tree, CliError> {
    let node = args.topology.load_with(args.leaves, args.cache_levels())?;
    Ok(Tree::cluster(&node, args.nodes as usize)?)
}

fn link_costs(costs: Option<&str>, tree: &Tree) -> Result<LinkCosts, CliError> {
    Ok(match costs {
        Some(list) => LinkCosts::parse_for(list, tree)?,
        None => LinkCosts::default_for(tree.depth()),
    })
}

/// The host name of each node: `--hosts` (checked: one per node, each a host name and
/// named once, so it cannot add lines or fields to a rankfile or hostfile), else
/// `localhost` or `node0`..`nodeK-1`.
fn node_names(hosts: &[String], nodes: u32) -> Result<Vec<String>, CliError> {
    if !hosts.is_empty() {
        let mut seen = std::collections::HashSet::new();
        for host in hosts {
            if !rankmig::availability::is_hostname(host) {
                return Err(HostsError::NotAHostName(host.clone()).into());
            }
            if !seen.insert(host.as_str()) {
                return Err(HostsError::NamedTwice(host.clone()).into());
            }
        }
        if hosts.len() != nodes as usize {
            return Err(HostsError::WrongCount {
                hosts: hosts.len(),
                nodes,
            }
            .into());
        }
        return Ok(hosts.to_vec());
    }
    Ok(if nodes == 1 {
        vec!["localhost".to_owned()]
    } else {
        (0..nodes).map(|i| format!("node{i}")).collect()
    })
}

fn run_map(args: &MapArgs) -> Result<(), CliError> {
    let matrix = load_matrix(&args.matrix)?;
    let tree = load_tree(&args.tree)?;
    let costs = link_costs(args.costs.as_deref(), &tree)?;
    let allowed = allowed_leaves(args, &tree)?;
    let names = node_names(&args.hosts, args.tree.nodes)?;
    let graph = matrix.symmetric();
    let options = MapOptions {
        oversubscribe: args.oversubscribe as usize,
        allowed: allowed.clone(),
        ..MapOptions::default()
    };
    let start = Instant::now();
    let mapping = map(&graph, &tree, &options)?;
    let seconds = start.elapsed().as_secs_f64();
    let n = matrix.order();
    let usable = match &allowed {
        Some(list) => list.iter().collect::<std::collections::BTreeSet<_>>().len(),
        None => tree.leaf_count(),
    };
    // The baselines share cores only as the mapping does: when there are too few.
    let factor =
        rankmig::treematch::effective_oversubscription(n, usable, args.oversubscribe as usize);
    let allowed = allowed.as_deref();
    let mut reported_baselines = BTreeMap::new();
    let candidates = [
        ("packed", baselines::packed(&tree, n, allowed, factor)),
        (
            "round-robin",
            baselines::round_robin(&tree, n, allowed, factor),
        ),
        (
            "random",
            baselines::random(&tree, n, allowed, factor, args.seed),
        ),
    ];
    for (name, placement) in candidates {
        let m: Metrics = evaluate(&graph, &tree, &placement, &costs)?;
        reported_baselines.insert(name.to_owned(), m);
    }
    let report = MapReport {
        metrics: evaluate(&graph, &tree, mapping.leaves(), &costs)?,
        mapping: mapping.leaves().to_vec(),
        leaves: tree.leaves().to_vec(),
        node_names: names,
        baselines: reported_baselines,
        seconds,
        tree: tree.describe_levels(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    args.format.formatter().write(&report, &mut out)?;
    out.flush().map_err(OutputError::from)?;
    Ok(())
}

/// The leaves `--allowed` (OS CPU numbers, on every node) or `--allowed-leaves` (leaf
/// indexes) leave usable; `None` when neither is given.
fn allowed_leaves(args: &MapArgs, tree: &Tree) -> Result<Option<Vec<usize>>, CliError> {
    let list = |option: &'static str, value: &str| {
        parse_index_list(value).map_err(|source| CliError::IndexList { option, source })
    };
    if let Some(value) = &args.allowed {
        let cpus = list("--allowed", value)?;
        let leaves = leaves_on_cpus(tree, &cpus).map_err(|source| CliError::AllowedCpus {
            value: value.clone(),
            hint: match source {
                CpuSelectionError::NoCpuNumbers => " (use --allowed-leaves)",
                CpuSelectionError::PartOfLeaf { .. } => " (--leaves pu)",
                CpuSelectionError::UnknownCpu { .. } => "",
            },
            source,
        })?;
        return Ok(Some(leaves));
    }
    args.allowed_leaves
        .as_deref()
        .map(|value| list("--allowed-leaves", value))
        .transpose()
}

fn run_cost(args: &CostArgs) -> Result<(), CliError> {
    let matrix = load_matrix(&args.matrix)?;
    let tree = load_tree(&args.tree)?;
    let costs = link_costs(args.costs.as_deref(), &tree)?;
    let mapping = mapping_file::read_mapping(&args.mapping, matrix.order(), tree.leaf_count())?;
    let m = evaluate(&matrix.symmetric(), &tree, &mapping, &costs)?;
    println!("hop-bytes {}", rankmig::matrix::format_volume(m.hop_bytes));
    println!("sum-com {}", rankmig::matrix::format_volume(m.sum_com));
    println!(
        "inter-node {}",
        rankmig::matrix::format_volume(m.inter_node)
    );
    Ok(())
}

fn run_topology(args: &TopologyArgs) -> Result<(), CliError> {
    let tree = load_tree(&args.tree)?;
    println!("levels: {}", tree.describe_levels());
    println!("depth: {}", tree.depth());
    println!("leaves: {}", tree.leaf_count());
    let nodes = tree
        .leaves()
        .iter()
        .map(|l| l.node)
        .max()
        .map_or(0, |m| m + 1);
    println!("nodes: {nodes}");
    Ok(())
}

/// `rankmig man`: rankmig.1 on standard output, or every page into `dir`.
fn write_man_pages(dir: Option<&Path>) -> Result<(), CliError> {
    let command = <Cli as clap::CommandFactory>::command();
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CliError::Write { path, source }
    };
    let Some(dir) = dir else {
        let mut out = std::io::stdout().lock();
        return (clap_mangen::Man::new(command).render(&mut out))
            .map_err(write_error(Path::new("standard output")));
    };
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let mut pages = vec![("rankmig.1".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        let name = format!("rankmig-{}", sub.get_name());
        let page = sub
            .clone()
            .name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
        pages.push((format!("{name}.1"), page));
    }
    for (file, page) in pages {
        let path = dir.join(&file);
        let mut bytes = Vec::new();
        (clap_mangen::Man::new(page).render(&mut bytes)).map_err(write_error(&path))?;
        std::fs::write(&path, bytes).map_err(write_error(&path))?;
    }
    Ok(())
}

fn plan_options(args: &StepArgs) -> PlanOptions {
    PlanOptions { step2: args.step2 }
}

fn run_place(args: &PlaceArgs) -> Result<(), CliError> {
    let availability = Availability::load(&args.availability, args.nodes.availability_format)?;
    let graph = load_matrix(&args.matrix)?.symmetric();
    let node_tree = args
        .nodes
        .node_topology
        .load_with(args.nodes.leaves, args.nodes.cache_levels())?;
    let start = Instant::now();
    let placement = rankmig::planner::place(&availability, &graph, &node_tree)?;
    let seconds = start.elapsed().as_secs_f64();
    match args.format {
        PlaceFormat::Text => {
            print!("{}", placement.to_text());
            let hb = rankmig::planner::placement_hop_bytes(&graph, &node_tree, &placement);
            println!("# hop-bytes: {}", rankmig::matrix::format_volume(hb));
            println!("# placement time: {:.3} ms", seconds * 1e3);
        }
        PlaceFormat::Rankfile => print!("{}", placement_rankfile_on(&placement, &node_tree)),
        PlaceFormat::Json => println!("{}", serde_json::to_string_pretty(&placement)?),
    }
    Ok(())
}

fn run_plan(args: &PlanArgs) -> Result<(), CliError> {
    let availability = Availability::load(&args.availability, args.nodes.availability_format)?;
    let placement = Placement::load(&args.placement)?;
    let graph = load_matrix(&args.matrix)?.symmetric();
    let node_tree = args
        .nodes
        .node_topology
        .load_with(args.nodes.leaves, args.nodes.cache_levels())?;
    let start = Instant::now();
    let plan = rankmig::planner::plan(
        &availability,
        &placement,
        &graph,
        &node_tree,
        &plan_options(&args.steps),
    )?;
    let seconds = start.elapsed().as_secs_f64();
    match args.format {
        PlanFormat::Text => print!("{}", plan_text(&plan, seconds)),
        PlanFormat::Json => println!("{}", serde_json::to_string_pretty(&plan)?),
    }
    Ok(())
}

fn run_simulate(args: &SimulateArgs) -> Result<(), CliError> {
    let mut placement = Placement::load(&args.placement)?;
    let graph = load_matrix(&args.matrix)?.symmetric();
    let node_tree = args
        .nodes
        .node_topology
        .load_with(args.nodes.leaves, args.nodes.cache_levels())?;
    let options = plan_options(&args.step);
    let mut steps = Vec::with_capacity(args.steps.len());
    for path in &args.steps {
        let availability = Availability::load(path, args.nodes.availability_format)?;
        let start = Instant::now();
        let plan = rankmig::planner::plan(&availability, &placement, &graph, &node_tree, &options)?;
        let seconds = start.elapsed().as_secs_f64();
        placement = plan.placement.clone();
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        steps.push(SimulationStep {
            availability: name,
            plan,
            seconds,
        });
    }
    match args.format {
        SimulateFormat::Text => print!("{}", simulation_text(&steps)),
        SimulateFormat::Csv => print!("{}", simulation_csv(&steps).map_err(OutputError::from)?),
        SimulateFormat::Json => println!("{}", serde_json::to_string_pretty(&steps)?),
    }
    Ok(())
}

fn run_inspect(args: &InspectArgs) -> Result<(), CliError> {
    let report = rankmig::checkpoint::inspect(&args.dir, args.verify)?;
    print!("{report}");
    if args.verify && report.has_corruption() {
        return Err(CliError::CorruptCheckpoint {
            dir: args.dir.clone(),
        });
    }
    Ok(())
}

/// `rankmig config`: each setting, its effective value and where it comes from.
fn print_configuration(config: &Configuration) -> Result<(), CliError> {
    let (user, site) = Configuration::paths();
    let shown = |p: Option<PathBuf>| p.map_or("(none)".into(), |p| p.display().to_string());
    let mut text = format!(
        "# user file: {}\n# site file: {}\n",
        shown(user),
        shown(site)
    );
    for setting in rankmig::config::SETTINGS {
        let (value, source) = config.effective(setting);
        let value = value.unwrap_or_else(|| setting.default.to_owned());
        text.push_str(&format!(
            "{:<20} {:<28} {}  # {}\n",
            setting.key, value, source, setting.doc
        ));
    }
    (std::io::stdout().write_all(text.as_bytes())).map_err(|source| CliError::Write {
        path: PathBuf::from("standard output"),
        source,
    })
}

/// The variables of the job's environment that the configuration files set (and the
/// environment does not).
fn job_environment(config: &Configuration) -> Vec<(String, String)> {
    config
        .from_files()
        .into_iter()
        .filter(|(setting, _)| setting.carrier == rankmig::config::Carrier::JobEnvironment)
        .map(|(setting, value)| (setting.env.to_owned(), value))
        .collect()
}

fn run_job(args: &RunArgs, config: &Configuration) -> Result<(), CliError> {
    use rankmig::allocation::Allocation;
    use rankmig::supervisor::launch::{absolute, load_spec};
    let (mut spec, restart) = match &args.restart {
        Some(dir) => (follow_current_slurm_job(load_spec(dir)?)?, true),
        None => {
            let run_dir = absolute(&args.run_dir);
            let allocation = match &args.hostfile {
                Some(path) => Some(Allocation::from_hostfile(&absolute(path))?),
                None => Allocation::from_batch_environment(|k| std::env::var(k).ok())?,
            };
            let rms = rms_settings(args, allocation.as_ref())?;
            let availability = match &rms {
                Some(_) => rankmig::supervisor::rms_watch::rms_availability_path(&run_dir),
                None => absolute(args.availability.as_deref().unwrap_or(Path::new(""))),
            };
            let mpi = match args.mpi {
                Some(mpi) => mpi,
                None => rankmig::launcher::detect()?,
            };
            let mut spec = args.run_spec(run_dir, availability, allocation, rms, mpi);
            spec.env.extend(job_environment(config));
            spec.check_new_hosts()?;
            (spec, false)
        }
    };
    if spec.ranks == 0 {
        return Err(CliError::NoRanks);
    }
    if args.emulated_cluster {
        emulate_cluster(&spec)?;
    }
    if !restart {
        // Last: --force removes the earlier records only once the new run can start.
        rankmig::supervisor::launch::check_program(&spec)?;
        rankmig::supervisor::launch::claim_run_dir(&spec.run_dir, args.force)?;
    }
    if args.auto_restart > 0 {
        early_first_save(&mut spec);
    }
    let code = rankmig::supervisor::supervise::run(&mut spec, restart, args.auto_restart)?;
    eprintln!(
        "rankmig: run recorded in {} (rankmig report {})",
        spec.run_dir.display(),
        spec.run_dir.display()
    );
    if code != 0 {
        eprintln!(
            "rankmig: {}",
            rankmig::supervisor::progress::next_step(&spec)
        );
        return Err(CliError::JobFailed(code));
    }
    Ok(())
}

/// A run restarted with `--rms slurm` inside another Slurm job than the one it ran in
/// (a new `salloc` after the old allocation ended) follows the new job: its id, its
/// allocation, nothing released yet.
fn follow_current_slurm_job(
    mut spec: rankmig::supervisor::launch::RunSpec,
) -> Result<rankmig::supervisor::launch::RunSpec, CliError> {
    let Some(rms) = spec.rms.as_mut() else {
        return Ok(spec);
    };
    let Some(job_id) = rankmig::rms::slurm::current_job() else {
        return Ok(spec);
    };
    if job_id != rms.job_id {
        let allocation =
            rankmig::allocation::Allocation::from_batch_environment(|k| std::env::var(k).ok())?;
        log::info!(
            "restarting in Slurm job {job_id} (the run was in job {})",
            rms.job_id
        );
        rms.job_id = job_id;
        spec.allocation = allocation.or(spec.allocation);
        spec.released_hosts.clear();
        spec.lost_hosts.clear();
    }
    Ok(spec)
}

/// The `--rms` settings of `rankmig run`: the Slurm job this runs in, whose allocation
/// must have been found.
fn rms_settings(
    args: &RunArgs,
    allocation: Option<&rankmig::allocation::Allocation>,
) -> Result<Option<rankmig::rms::RmsSettings>, CliError> {
    use rankmig::rms::{RmsError, RmsSettings};
    use rankmig::supervisor::launch::{LaunchError, absolute};
    let Some(manager) = args.rms else {
        return Ok(None);
    };
    let not_in_job = |variable| CliError::Launch(LaunchError::Rms(RmsError::NotInJob(variable)));
    let job_id = rankmig::rms::slurm::current_job()
        .ok_or_else(|| not_in_job(rankmig::rms::slurm::ENV_JOB_ID))?;
    if allocation.is_none() {
        return Err(not_in_job("SLURM_JOB_NODELIST"));
    }
    Ok(Some(RmsSettings {
        manager,
        job_id,
        lead_seconds: args.rms_lead,
        release: args.rms_release,
        cap: args.availability.as_deref().map(absolute),
    }))
}

/// Under `--auto-restart`: the job's first checkpoint after
/// [`rankmig::checkpoint::config::AUTO_RESTART_FIRST_SAVE`] (unless
/// `RANKMIG_CKPT_FIRST_SECONDS` is set), so that a job failing in its first interval
/// can restart.
fn early_first_save(spec: &mut rankmig::supervisor::launch::RunSpec) {
    use rankmig::checkpoint::config::{AUTO_RESTART_FIRST_SAVE, ENV_FIRST_SECONDS};
    let set = std::env::var_os(ENV_FIRST_SECONDS).is_some()
        || spec.env.iter().any(|(k, _)| k == ENV_FIRST_SECONDS);
    if !set {
        let secs = AUTO_RESTART_FIRST_SAVE.as_secs_f64().to_string();
        spec.env.push((ENV_FIRST_SECONDS.to_owned(), secs));
    }
}

/// Sets the launcher's variables of an emulated cluster in this process's environment
/// (the launcher inherits them).
fn emulate_cluster(spec: &rankmig::supervisor::launch::RunSpec) -> Result<(), CliError> {
    if spec.allocation.is_none() {
        return Err(EmulatedClusterError::NoAllocation.into());
    }
    if !rankmig::emulated_cluster::available() {
        return Err(EmulatedClusterError::NoUtsNamespaces.into());
    }
    let exe = std::env::current_exe().map_err(EmulatedClusterError::OwnExecutable)?;
    let agent = rankmig::emulated_cluster::write_agent(&spec.run_dir, &exe).map_err(|source| {
        CliError::Write {
            path: spec.run_dir.join("emulated-host"),
            source,
        }
    })?;
    for (k, v) in rankmig::emulated_cluster::settings(spec.launcher(), &agent) {
        // SAFETY: single-threaded here, before mpirun is started.
        unsafe { std::env::set_var(k, v) };
    }
    Ok(())
}

fn run_report(args: &ReportArgs) -> Result<(), CliError> {
    use rankmig::report::{read_run, svg, table};
    let report = read_run(&args.run_dir)?;
    let chart = svg(&report)?;
    print!("{}", table(&report));
    let matrix = args.run_dir.join(rankmig::run_dir::record::MATRIX);
    if matrix.is_file() {
        println!(
            "communication matrix: {} (bytes between ranks, TreeMatch's format: rankmig run --matrix {})",
            matrix.display(),
            matrix.display()
        );
    }
    let path = args
        .svg
        .clone()
        .unwrap_or_else(|| args.run_dir.join("report.svg"));
    std::fs::write(&path, chart).map_err(|source| CliError::Write {
        path: path.clone(),
        source,
    })?;
    println!("chart: {}", path.display());
    Ok(())
}
