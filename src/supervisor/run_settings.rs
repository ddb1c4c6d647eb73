//! What `rankmig run` is asked for, as plain values ([`RunSettings`]: the command line
//! and the configuration files, already parsed), and the one way from them to the
//! [`RunSpec`] of a new run ([`RunSpec::new`]) or of a restarted one ([`restart_spec`]).

use std::path::{Path, PathBuf};

use crate::allocation::{Allocation, AllocationError};
use crate::contention::{ContentionMode, ContentionSettings};
use crate::launcher::{LauncherError, MpiImplementation};
use crate::matrix::MatrixFormat;
use crate::rms::{ResourceManager, RmsError, RmsSettings};

use super::emulated::EmulatedClusterError;
use super::launch::{LaunchError, RunSpec, absolute, load_spec};

/// The settings of a new run, as given (paths as typed, durations in seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct RunSettings {
    /// Number of ranks (`-n`).
    pub ranks: usize,
    /// The availability file (`--availability`); with `rms`, the file that caps it.
    pub availability: Option<PathBuf>,
    /// The resource manager to follow (`--rms`), with its settings.
    pub rms: Option<RmsRequest>,
    /// The hosts the job may use (`--hostfile`); `None`: the batch system's
    /// allocation, if any.
    pub hostfile: Option<PathBuf>,
    /// The MPI implementation (`--mpi`); `None`: found from the launcher on `PATH`.
    pub mpi: Option<MpiImplementation>,
    /// `--allow-new-hosts`.
    pub allow_new_hosts: bool,
    /// `--node-topology`.
    pub node_topology: Option<String>,
    /// `--no-shared-caches`.
    pub no_shared_caches: bool,
    /// `--launcher`; `None`: the MPI's own, or srun inside a Slurm allocation where
    /// the MPI has none ([`super::launch_method::choose`]).
    pub launcher: Option<crate::launcher::LaunchMethod>,
    /// `--srun-mpi`: srun's `--mpi=TYPE`.
    pub srun_mpi: Option<String>,
    /// `--cores-per-rank`; `None`: from the environment
    /// ([`super::cores_per_rank::CoresPerRank::resolve`]).
    pub cores_per_rank: Option<usize>,
    /// `--mpirun-arg`, in order.
    pub mpirun_args: Vec<String>,
    /// `--matrix`.
    pub matrix: Option<PathBuf>,
    /// `--matrix-format`.
    pub matrix_format: MatrixFormat,
    /// `--ckpt-dir`; `None`: `RUN_DIR/ckpt`.
    pub ckpt_dir: Option<PathBuf>,
    /// `--ckpt-local`.
    pub ckpt_local: Option<PathBuf>,
    /// `--ckpt-flush-every`.
    pub ckpt_flush_every: u64,
    /// `--run-dir`.
    pub run_dir: PathBuf,
    /// `--check-every`.
    pub check_every: Option<u64>,
    /// `--check-interval`, seconds.
    pub check_interval: f64,
    /// `--settle`, seconds.
    pub settle: f64,
    /// `--spawn-timeout`, seconds (0: not watched).
    pub spawn_timeout: f64,
    /// `--stall-timeout`, seconds; `None`: the supervisor's default.
    pub stall_timeout: Option<f64>,
    /// `--contention-watch`; `None`: off.
    pub contention_watch: Option<ContentionMode>,
    /// `--contention-threshold`, a share of the window.
    pub contention_threshold: f64,
    /// `--contention-window`, seconds.
    pub contention_window: f64,
    /// `--contention-cooldown`, seconds.
    pub contention_cooldown: f64,
    /// The program and its arguments.
    pub program: Vec<String>,
    /// Variables the ranks get besides the environment (from the configuration files).
    pub env: Vec<(String, String)>,
}

/// `--rms` and the flags that go with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmsRequest {
    /// The resource manager.
    pub manager: ResourceManager,
    /// `--rms-lead`, seconds.
    pub lead_seconds: u64,
    /// `--rms-release`.
    pub release: bool,
}

/// Why `rankmig run` cannot start its job (before or while it runs).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The launch, the run directory or the supervision failed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The hostfile or the batch system's allocation is unusable.
    #[error(transparent)]
    Allocation(#[from] AllocationError),
    /// The MPI implementation could not be found or named.
    #[error(transparent)]
    Mpi(#[from] LauncherError),
    /// `--emulated-cluster` cannot be set up.
    #[error(transparent)]
    EmulatedCluster(#[from] EmulatedClusterError),
    /// A run (restarted from a run directory) with no ranks.
    #[error("-n must be at least 1")]
    NoRanks,
    /// The cores per rank the environment gives are not a number.
    #[error(transparent)]
    CoresPerRank(#[from] super::cores_per_rank::CoresPerRankError),
    /// No launcher could be chosen (`--launcher srun` outside Slurm, a PMI type srun
    /// does not offer, no MPI named).
    #[error(transparent)]
    LaunchMethod(#[from] super::launch_method::LaunchMethodError),
}

impl RunError {
    /// True for a command line that does not make sense (exit code 2), as opposed to
    /// a file, the machine or the job that failed.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::NoRanks | RunError::EmulatedCluster(EmulatedClusterError::NoAllocation)
        )
    }
}

impl RunSpec {
    /// The run `settings` ask for, in the environment `env` reads (the batch system's
    /// allocation and Slurm job): every path made absolute, every duration in
    /// milliseconds, nothing lost or released yet. Refuses no ranks, `--rms` outside a
    /// Slurm job, and `--allow-new-hosts` with an MPI that cannot add hosts.
    pub fn new(
        settings: &RunSettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<RunSpec, RunError> {
        if settings.ranks == 0 {
            return Err(RunError::NoRanks);
        }
        let run_dir = absolute(&settings.run_dir);
        let allocation = match &settings.hostfile {
            Some(path) => Some(Allocation::from_hostfile(&absolute(path))?),
            None => Allocation::from_batch_environment(env)?,
        };
        let rms = rms_settings(settings, allocation.as_ref(), env)?;
        let availability = match &rms {
            Some(_) => super::rms_watch::rms_availability_path(&run_dir),
            None => absolute(settings.availability.as_deref().unwrap_or(Path::new(""))),
        };
        let chosen = super::launch_method::choose(
            settings.launcher,
            settings.mpi,
            settings.srun_mpi.as_deref(),
            env,
        )?;
        let mpi = chosen.mpi;
        if chosen.method == crate::launcher::LaunchMethod::Mpirun {
            crate::mpi_build::warn_if_launcher_differs(crate::launcher::launcher(mpi).program());
        }
        let mut mpirun_args = settings.mpirun_args.clone();
        if let Some(pmi) = &chosen.pmi {
            log::info!("{}", chosen.describe());
            mpirun_args.insert(0, format!("--mpi={pmi}"));
        }
        let cores_per_rank =
            super::cores_per_rank::CoresPerRank::resolve(settings.cores_per_rank, env)?;
        let spec = RunSpec {
            ranks: settings.ranks,
            cores_per_rank,
            availability,
            matrix: settings.matrix.as_deref().map(absolute),
            matrix_format: settings.matrix_format,
            ckpt_dir: (settings.ckpt_dir.as_deref()).map_or_else(|| run_dir.join("ckpt"), absolute),
            ckpt_local: settings.ckpt_local.as_deref().map(absolute),
            ckpt_flush_every: settings.ckpt_flush_every,
            run_dir,
            check_every: settings.check_every.unwrap_or(0),
            check_interval_ms: millis(settings.check_interval),
            settle_ms: millis(settings.settle),
            program: settings.program.clone(),
            env: settings.env.clone(),
            allocation,
            mpirun_args,
            launch_method: chosen.method,
            node_topology: settings.node_topology.clone(),
            no_shared_caches: settings.no_shared_caches,
            lost_hosts: Vec::new(),
            spawn_timeout_ms: millis(settings.spawn_timeout),
            mpi,
            allow_new_hosts: settings.allow_new_hosts,
            stall_timeout_ms: settings.stall_timeout.map(millis),
            rms,
            released_hosts: Vec::new(),
            contention: ContentionSettings {
                mode: settings.contention_watch.unwrap_or_default(),
                threshold: settings.contention_threshold,
                window_ms: millis(settings.contention_window),
                cooldown_ms: millis(settings.contention_cooldown),
            },
        };
        spec.check_new_hosts()?;
        Ok(spec)
    }
}

/// The run of `run_dir` (its `run.json`), to be launched again: with `--rms slurm`, in
/// the Slurm job `env` names ([`super::slurm_job::follow_current_job`]).
pub fn restart_spec(
    run_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunSpec, RunError> {
    let spec = super::slurm_job::follow_current_job(load_spec(run_dir)?, env)?;
    if spec.ranks == 0 {
        return Err(RunError::NoRanks);
    }
    Ok(spec)
}

/// The `--rms` settings: the Slurm job this runs in, whose allocation must have been
/// found.
fn rms_settings(
    settings: &RunSettings,
    allocation: Option<&Allocation>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<RmsSettings>, RunError> {
    let Some(request) = &settings.rms else {
        return Ok(None);
    };
    let not_in_job = |variable| RunError::Launch(LaunchError::Rms(RmsError::NotInJob(variable)));
    let job_id =
        crate::rms::slurm::job_in(env).ok_or_else(|| not_in_job(crate::rms::slurm::ENV_JOB_ID))?;
    if allocation.is_none() {
        return Err(not_in_job("SLURM_JOB_NODELIST"));
    }
    Ok(Some(RmsSettings {
        manager: request.manager,
        job_id,
        lead_seconds: request.lead_seconds,
        release: request.release,
        cap: settings.availability.as_deref().map(absolute),
    }))
}

/// Under `--auto-restart`: the job's first checkpoint after
/// [`crate::checkpoint::config::AUTO_RESTART_FIRST_SAVE`] (unless
/// `RANKMIG_CKPT_FIRST_SECONDS` is set in `env` or in the job's variables), so that a
/// job failing in its first interval can restart.
pub fn early_first_save(spec: &mut RunSpec, env: &dyn Fn(&str) -> Option<String>) {
    use crate::checkpoint::config::{AUTO_RESTART_FIRST_SAVE, ENV_FIRST_SECONDS};
    let set =
        env(ENV_FIRST_SECONDS).is_some() || spec.env.iter().any(|(k, _)| k == ENV_FIRST_SECONDS);
    if !set {
        let secs = AUTO_RESTART_FIRST_SAVE.as_secs_f64().to_string();
        spec.env.push((ENV_FIRST_SECONDS.to_owned(), secs));
    }
}

/// Seconds (checked non-negative and at most a day by the command line) as whole
/// milliseconds.
fn millis(seconds: f64) -> u64 {
    (seconds * 1000.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings of `rankmig run -n 4 -a avail --mpi openmpi4 -- ./app` with the
    /// command line's defaults, in `dir`.
    fn settings(dir: &Path) -> RunSettings {
        RunSettings {
            ranks: 4,
            availability: Some(dir.join("avail")),
            rms: None,
            hostfile: None,
            mpi: Some(MpiImplementation::OpenMpi4),
            allow_new_hosts: false,
            node_topology: None,
            cores_per_rank: None,
            launcher: None,
            srun_mpi: None,
            no_shared_caches: false,
            mpirun_args: Vec::new(),
            matrix: None,
            matrix_format: MatrixFormat::Auto,
            ckpt_dir: None,
            ckpt_local: None,
            ckpt_flush_every: crate::checkpoint::config::DEFAULT_FLUSH_EVERY,
            run_dir: dir.join("rankmig-run"),
            check_every: None,
            check_interval: 1.0,
            settle: 3.0,
            spawn_timeout: 120.0,
            stall_timeout: None,
            contention_watch: None,
            contention_threshold: crate::contention::DEFAULT_THRESHOLD,
            contention_window: 10.0,
            contention_cooldown: 60.0,
            program: vec!["./app".into()],
            env: Vec::new(),
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_give_a_single_host_run_with_its_checkpoints_in_the_run_directory() {
        let dir = tempfile::tempdir().unwrap();
        let spec = RunSpec::new(&settings(dir.path()), &no_env).unwrap();
        assert_eq!(spec.ranks, 4);
        assert_eq!(spec.run_dir, dir.path().join("rankmig-run"));
        assert_eq!(spec.ckpt_dir, dir.path().join("rankmig-run/ckpt"));
        assert_eq!(spec.availability, dir.path().join("avail"));
        assert_eq!(spec.check_every, 0);
        assert_eq!(spec.check_interval_ms, 1000);
        assert_eq!(spec.settle_ms, 3000);
        assert_eq!(spec.spawn_timeout_ms, 120_000);
        assert_eq!(spec.stall_timeout_ms, None);
        assert_eq!(spec.allocation, None);
        assert_eq!(spec.rms, None);
        assert!(!spec.contention.on());
        assert_eq!(spec.contention.cooldown_ms, 60_000);
        assert!(spec.lost_hosts.is_empty() && spec.released_hosts.is_empty());
    }

    #[test]
    fn settings_are_carried_into_the_spec_with_relative_paths_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hosts");
        std::fs::write(&hostfile, "alpha slots=2\nbeta slots=3\n").unwrap();
        let mut settings = settings(dir.path());
        settings.hostfile = Some(hostfile);
        settings.ckpt_dir = Some(PathBuf::from("relative-ckpt"));
        settings.settle = 0.25;
        settings.stall_timeout = Some(0.0);
        settings.contention_watch = Some(ContentionMode::Report);
        settings.contention_cooldown = 7.5;
        settings.env = vec![("A".into(), "1".into())];
        let spec = RunSpec::new(&settings, &no_env).unwrap();
        let hosts = spec.allocation.as_ref().unwrap().host_names();
        assert_eq!(hosts, ["alpha", "beta"]);
        assert!(spec.ckpt_dir.is_absolute() && spec.ckpt_dir.ends_with("relative-ckpt"));
        assert_eq!(spec.settle_ms, 250);
        assert_eq!(spec.stall_timeout_ms, Some(0));
        assert_eq!(spec.contention.mode, ContentionMode::Report);
        assert_eq!(spec.contention.cooldown_ms, 7_500);
        assert_eq!(spec.env, [("A".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn no_ranks_and_new_hosts_with_open_mpi_4_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut none = settings(dir.path());
        none.ranks = 0;
        let err = RunSpec::new(&none, &no_env).unwrap_err();
        assert!(matches!(err, RunError::NoRanks) && err.is_usage(), "{err}");
        let mut new_hosts = settings(dir.path());
        new_hosts.allow_new_hosts = true;
        let err = RunSpec::new(&new_hosts, &no_env).unwrap_err();
        assert!(
            matches!(
                err,
                RunError::Launch(LaunchError::NewHostsUnsupported(
                    MpiImplementation::OpenMpi4
                ))
            ),
            "{err}"
        );
        new_hosts.mpi = Some(MpiImplementation::Mpich);
        assert!(RunSpec::new(&new_hosts, &no_env).unwrap().allow_new_hosts);
    }

    #[test]
    fn rms_needs_a_slurm_job_and_then_watches_the_file_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(dir.path());
        settings.rms = Some(RmsRequest {
            manager: ResourceManager::Slurm,
            lead_seconds: 30,
            release: true,
        });
        let err = RunSpec::new(&settings, &no_env).unwrap_err();
        assert!(err.to_string().contains("SLURM_JOB_ID is not set"), "{err}");
        let slurm = |k: &str| match k {
            "SLURM_JOB_ID" => Some("77".to_owned()),
            "SLURM_JOB_NODELIST" => Some("n[1-2]".to_owned()),
            "SLURM_JOB_CPUS_PER_NODE" => Some("4(x2)".to_owned()),
            _ => None,
        };
        let spec = RunSpec::new(&settings, &slurm).unwrap();
        let rms = spec.rms.as_ref().unwrap();
        assert_eq!((rms.job_id.as_str(), rms.lead_seconds), ("77", 30));
        assert!(rms.release);
        assert_eq!(rms.cap.as_deref(), Some(dir.path().join("avail").as_path()));
        assert_eq!(
            spec.availability,
            super::super::rms_watch::rms_availability_path(&spec.run_dir)
        );
        assert_eq!(spec.allocation.unwrap().host_names(), ["n1", "n2"]);
    }

    #[test]
    fn a_restart_reads_run_json_and_refuses_one_without_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = RunSpec::new(&settings(dir.path()), &no_env).unwrap();
        std::fs::create_dir_all(&spec.run_dir).unwrap();
        super::super::launch::save_spec(&spec).unwrap();
        assert_eq!(restart_spec(&spec.run_dir, &no_env).unwrap(), spec);
        spec.ranks = 0;
        super::super::launch::save_spec(&spec).unwrap();
        let err = restart_spec(&spec.run_dir, &no_env).unwrap_err();
        assert!(matches!(err, RunError::NoRanks), "{err}");
    }

    #[test]
    fn the_first_save_comes_early_unless_its_variable_is_set() {
        use crate::checkpoint::config::ENV_FIRST_SECONDS;
        let dir = tempfile::tempdir().unwrap();
        let mut spec = RunSpec::new(&settings(dir.path()), &no_env).unwrap();
        early_first_save(&mut spec, &no_env);
        assert!(
            spec.env
                .iter()
                .any(|(k, v)| k == ENV_FIRST_SECONDS && v == "2")
        );
        let mut spec = RunSpec::new(&settings(dir.path()), &no_env).unwrap();
        early_first_save(&mut spec, &|k: &str| {
            (k == ENV_FIRST_SECONDS).then(|| "9".to_owned())
        });
        assert!(spec.env.is_empty());
    }
}
