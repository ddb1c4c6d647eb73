//! What each subcommand does: load inputs, call the library, print.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rankmig::output::OutputError;
use rankmig::treematch::mapping_file;
use rankmig::treematch::metrics::evaluate;

use rankmig::availability::Availability;
use rankmig::config::{ConfigError, Configuration};
use rankmig::output::plan::{SimulationStep, placement_rankfile_on, plan_text, simulation_text};
use rankmig::output::simulation_csv;
use rankmig::planner::{Placement, PlanOptions};
use rankmig::supervisor::run_settings::RunError;

use crate::cli::{
    Cli, Command, CostArgs, InspectArgs, PlaceArgs, PlaceFormat, PlanArgs, PlanFormat, RunArgs,
    SimulateArgs, SimulateFormat, StepArgs, TopologyArgs,
};
use crate::cli_error::{CliError, link_costs, load_matrix, load_tree};

/// Runs the parsed command line, with the configuration files as read for `run` and
/// `config` (their error stops these two, before anything starts).
pub fn run(cli: Cli, config: Option<Result<Configuration, ConfigError>>) -> Result<(), CliError> {
    let config = || config.unwrap_or_else(Configuration::load);
    match cli.command {
        Command::Map(args) => crate::map_command::run_map(&args),
        Command::Cost(args) => run_cost(&args),
        Command::Topology(args) => run_topology(&args),
        Command::Place(args) => run_place(&args),
        Command::Plan(args) => run_plan(&args),
        Command::Simulate(args) => run_simulate(&args),
        Command::Inspect(args) => run_inspect(&args),
        Command::Run(args) => run_job(&args, &config()?),
        Command::Config(_) => print_configuration(&config()?),
        Command::Report(args) => crate::report_command::run_report(&args),
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
        Command::BindExec(args) => Err(CliError::BindExec(crate::bind_exec::bind_then_exec(
            &args.cpus_file,
            &args.program,
        ))),
        Command::EmulatedHost(args) => {
            rankmig::emulated_cluster::exec_on_host(&args.host, &args.command)?;
            Ok(())
        }
    }
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
    let cores_tree = args
        .nodes
        .node_topology
        .load_with(args.nodes.leaves, args.nodes.cache_levels())?;
    let slots = args.nodes.rank_slots();
    let start = Instant::now();
    let placement = slots.place(&availability, &graph, &cores_tree)?;
    let seconds = start.elapsed().as_secs_f64();
    let node_tree = slots.tree(&cores_tree)?;
    match args.format {
        PlaceFormat::Text => {
            print!("{}", placement.to_text());
            let hb = rankmig::planner::placement_hop_bytes(&graph, &node_tree, &placement);
            println!("# hop-bytes: {}", rankmig::matrix::format_volume(hb));
            println!("# placement time: {:.3} ms", seconds * 1e3);
        }
        PlaceFormat::Rankfile => {
            let cores = slots.cores_per_rank();
            print!("{}", placement_rankfile_on(&placement, &cores_tree, cores));
        }
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
    let slots = args.nodes.rank_slots();
    let plan = slots.plan(
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
        let slots = args.nodes.rank_slots();
        let plan = slots.plan(&availability, &placement, &graph, &node_tree, &options)?;
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
    let text = config.listing(user.as_deref(), site.as_deref());
    (std::io::stdout().write_all(text.as_bytes())).map_err(|source| CliError::Write {
        path: PathBuf::from("standard output"),
        source,
    })
}

fn run_job(args: &RunArgs, config: &Configuration) -> Result<(), CliError> {
    use rankmig::supervisor::{launch, run_settings};
    let env = |k: &str| std::env::var(k).ok();
    let restart = args.restart.is_some();
    let mut spec = match &args.restart {
        Some(dir) => run_settings::restart_spec(dir, &env)?,
        None => launch::RunSpec::new(&args.settings(config.job_environment()), &env)?,
    };
    if args.emulated_cluster {
        rankmig::supervisor::emulated::one_local_dir_per_host(&mut spec);
        let vars =
            rankmig::supervisor::emulated::launcher_environment(&spec).map_err(RunError::from)?;
        for (k, v) in vars {
            // SAFETY: no other thread exists yet (none is started before the job). Set
            // here, not passed to each child: the launcher, the probes and the
            // launches of replacements read the agent from this process's environment.
            unsafe { std::env::set_var(k, v) };
        }
    }
    if !restart {
        // Last: --force removes the earlier records only once the new run can start.
        launch::check_program(&spec).map_err(RunError::from)?;
        launch::claim_run_dir(&spec.run_dir, args.force).map_err(RunError::from)?;
    }
    if args.auto_restart > 0 {
        run_settings::early_first_save(&mut spec, &env);
    }
    let code = rankmig::supervisor::supervise::run(&mut spec, restart, args.auto_restart)
        .map_err(RunError::from)?;
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
