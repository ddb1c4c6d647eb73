//! The command of one launch of a `rankmig run` job: the records of the launch in the
//! run directory, the ranks' environment and the launcher's options. Apart from
//! [`super::launch`] so that the run specification ([`RunSpec`]) stays below the
//! modules this one uses ([`super::progress`], [`super::rank_environment`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::launch::{
    LaunchError, LaunchKind, PlannedLaunch, RunSpec, check_program, planned_placement, save_spec,
    write,
};
use super::progress::launch_line;
use super::rank_environment::{rank_environment, user_launcher_args};
use crate::launcher::JobLaunch;
use crate::planner::{Location, Placement};
use crate::run_dir::cpu_sets::{self, Hosts};
use crate::run_dir::launch_request::{ENV_JOIN, LaunchRequest};
use crate::run_dir::settings::{ENV_EMULATED_HOSTS, ENV_RANKMIG_EXE};
use crate::topology::{LeafKind, TopologySpec};

/// Prepares the run directory: `run.json`, the placement of this launch, the rankfile
/// and (multi-host mode) the launcher's hostfile. Returns the launch command. A launch
/// other than [`LaunchKind::Fresh`] resumes from the newest checkpoint.
pub fn prepare(spec: &RunSpec, kind: LaunchKind) -> Result<Command, LaunchError> {
    check_program(spec)?;
    std::fs::create_dir_all(&spec.run_dir).map_err(|source| LaunchError::RunDir {
        path: spec.run_dir.clone(),
        source,
    })?;
    let restart = kind.from_checkpoint();
    let planned = planned_placement(spec, kind)?;
    let (placement, cores) = (&planned.placement, planned.cores);
    save_spec(spec)?;
    let launch = if restart {
        format!("restart-{}", restarts_so_far(&spec.run_dir) + 1)
    } else {
        "0".to_owned()
    };
    log::info!("{}", launch_line(spec, placement, restart));
    let placement_path = spec.run_dir.join(format!("placement-{launch}.txt"));
    write(&placement_path, &placement.to_text())?;
    write(
        &spec.run_dir.join("rankfile"),
        &crate::output::plan::placement_rankfile(placement),
    )?;
    let launcher = spec.launcher();
    let hostfile = match &spec.allocation {
        Some(allocation) => {
            let path = spec.run_dir.join(format!("hostfile-{launch}.txt"));
            write(
                &path,
                &launcher.hostfile(placement, &spec.usable_hosts(allocation)),
            )?;
            Some(path)
        }
        None => None,
    };
    // The ranks start following the content this launch was placed for, so an edit
    // made while they start is acted on.
    let planned_path = spec.run_dir.join(format!("availability-{launch}.txt"));
    std::fs::write(&planned_path, &planned.content).map_err(|source| LaunchError::RunDir {
        path: planned_path.clone(),
        source,
    })?;
    let mut env = rank_environment(spec, &placement_path, cores, restart);
    env.push((
        crate::run_dir::settings::ENV_PLANNED_AVAILABILITY.to_owned(),
        planned_path.display().to_string(),
    ));
    let program = match spec.cores_per_rank.count {
        1 => spec.program.clone(),
        _ => bound_program(spec, &planned, cores, &launch, &mut env)?,
    };
    let mut cmd = launcher_command(spec, placement, hostfile.as_deref(), &env, &program);
    // The binary sets it for its own error messages; in the ranks it would make every
    // topology load redirect their standard error for a moment.
    cmd.env_remove("HWLOC_SYNTHETIC_VERBOSE");
    Ok(cmd)
}

/// With ranks of several cores: writes the CPUs of each rank of this launch
/// (`cpus-LAUNCH.txt`, [`cpu_sets`]) and returns the program wrapped in `rankmig
/// bind-exec`, which binds each rank to its cores before the program starts. `env`
/// gets [`ENV_RANKMIG_EXE`], for the replacements of later migrations.
fn bound_program(
    spec: &RunSpec,
    planned: &PlannedLaunch,
    cores_per_node: usize,
    launch: &str,
    env: &mut Vec<(String, String)>,
) -> Result<Vec<String>, LaunchError> {
    let exe = std::env::current_exe().map_err(|source| LaunchError::RunDir {
        path: "/proc/self/exe".into(),
        source,
    })?;
    let machine = TopologySpec::Live.load_with(LeafKind::Core, spec.cache_levels())?;
    let hosts = match (&spec.allocation, emulated_hosts()) {
        (None, _) => Hosts::Logical { cores_per_node },
        (Some(_), true) => Hosts::Emulated,
        (Some(_), false) => Hosts::Real,
    };
    let sets = cpu_sets::for_placement(
        &planned.placement,
        &planned.availability,
        &machine,
        spec.cores_per_rank.count,
        hosts,
    );
    if (0..planned.placement.len()).any(|rank| sets.get(rank).is_none()) {
        log::warn!(
            "ranks of {} cores: some ranks share CPUs with more ranks than this machine has CPUs for, and run unbound ({})",
            spec.cores_per_rank.count,
            cpu_sets::launch_file(&spec.run_dir, launch).display()
        );
    }
    let path = cpu_sets::launch_file(&spec.run_dir, launch);
    sets.write(&path).map_err(|source| LaunchError::RunDir {
        path: path.clone(),
        source,
    })?;
    env.push((ENV_RANKMIG_EXE.to_owned(), exe.display().to_string()));
    Ok(cpu_sets::bound_program(&exe, &path, &spec.program))
}

/// True when this `rankmig run` runs hosts emulated on one machine
/// ([`ENV_EMULATED_HOSTS`] is `1`).
fn emulated_hosts() -> bool {
    std::env::var(ENV_EMULATED_HOSTS).is_ok_and(|v| v.trim() == "1")
}

/// The command that starts the replacement processes `request` asks for
/// ([`crate::run_dir::launch_request`]): the launcher with a hostfile of the
/// request's hosts (none on logical nodes), the variables of the job's launch
/// (`job_env`), and [`ENV_JOIN`] naming the request (`request_path`).
pub fn replacement_command(
    spec: &RunSpec,
    request: &LaunchRequest,
    request_path: &Path,
    job_env: &[(OsString, OsString)],
) -> Result<Command, LaunchError> {
    let launcher = spec.launcher();
    let placement = Placement::new(
        (0..request.count)
            .map(|i| Location {
                node: request.hosts.get(i).cloned().unwrap_or_default(),
                core: 0,
            })
            .collect(),
    );
    let hostfile = match (&spec.allocation, request.hosts.is_empty()) {
        (Some(allocation), false) => {
            let path = spec
                .run_dir
                .join(format!("hostfile-replacements-{}.txt", request.id));
            write(
                &path,
                &launcher.hostfile(&placement, &spec.usable_hosts(allocation)),
            )?;
            Some(path)
        }
        _ => None,
    };
    let env = [(ENV_JOIN.to_owned(), request_path.display().to_string())];
    let mut cmd = launcher_command(
        spec,
        &placement,
        hostfile.as_deref(),
        &env,
        &request.program,
    );
    // The job's variables, but not those this launch sets itself (srun's
    // SLURM_HOSTFILE names the replacements' hosts, not the job's first ones).
    let own: Vec<OsString> = cmd.get_envs().map(|(k, _)| k.to_owned()).collect();
    for (k, v) in job_env {
        if k != ENV_JOIN && !own.contains(k) {
            cmd.env(k, v);
        }
    }
    cmd.env(ENV_JOIN, request_path);
    Ok(cmd)
}

/// The launcher's command for `program` placed by `placement`: inside a Slurm job its
/// Slurm variables and options, then the user's launcher options; `env` for the ranks.
fn launcher_command(
    spec: &RunSpec,
    placement: &Placement,
    hostfile: Option<&Path>,
    env: &[(String, String)],
    program: &[String],
) -> Command {
    let launcher = spec.launcher();
    let slurm_vars = slurm_environment(spec);
    let mut launcher_args = launcher.slurm_options(&slurm_vars);
    launcher_args.extend(user_launcher_args(spec));
    let mut cmd = launcher.command(&JobLaunch {
        placement,
        hostfile,
        env,
        user_args: &launcher_args,
        program,
    });
    cmd.envs(slurm_vars);
    cmd
}

/// The variables a launch inside a Slurm job adds: the launcher's own Slurm setting,
/// and, once hosts were released (`--rms-release`), the Slurm variables of the smaller
/// job. None outside a Slurm job.
fn slurm_environment(spec: &RunSpec) -> Vec<(String, String)> {
    use crate::rms::slurm;
    let get = |k: &str| std::env::var(k).ok();
    if slurm::current_job().is_none() {
        return Vec::new();
    }
    let mut vars = spec.launcher().slurm_settings(&get);
    if let (Some(_), Some(allocation)) = (&spec.rms, &spec.allocation) {
        if !spec.released_hosts.is_empty() {
            let tasks = get(slurm::ENV_TASKS_PER_NODE);
            vars.extend(slurm::shrunk_job_environment(
                allocation,
                &spec.released_hosts,
                tasks.as_deref(),
            ));
        }
    }
    vars
}

/// Launches from a checkpoint already made in `run_dir` (its `placement-restart-*`
/// files).
fn restarts_so_far(run_dir: &Path) -> usize {
    std::fs::read_dir(run_dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("placement-restart-"))
            })
            .count()
    })
}
