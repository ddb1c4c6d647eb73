//! rankmig under a real Slurm: the emulated Slurm of `scripts/emulated_slurm.sh`
//! (Debian's slurmctld and slurmd, one slurmd per node n1..n4, each in a UTS namespace
//! of its own), driven through `salloc`, `scontrol` and `sinfo` as an operator would.
//!
//! Where Slurm cannot start here, every test says so and passes without running, unless
//! `RANKMIG_REQUIRE_SLURM=1` (set by `scripts/test.sh`), which makes that a failure on a
//! machine that has UTS namespaces (without them no node can be emulated: skipped).
//! Where the host of a process matters it is read from outside the process, from its
//! UTS namespace. The tests share the four nodes: they run one at a time.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::support;
use crate::support::{has_committed_epoch, jacobi, mpi_lock, stderr, wait_until};
use rankmig::allocation::Allocation;

/// Slurm's client configuration, once the emulated Slurm answers.
fn slurm_conf() -> Option<&'static Path> {
    static CONF: OnceLock<Option<PathBuf>> = OnceLock::new();
    let conf = CONF.get_or_init(|| {
        // A machine without UTS namespaces cannot emulate nodes: skipped (said so),
        // whatever RANKMIG_REQUIRE_SLURM says.
        if !support::namespaces_available() {
            return None;
        }
        let out = emulated_slurm("start");
        let conf = emulated_slurm("env").ok().and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.trim()
                .strip_prefix("export SLURM_CONF=")
                .map(PathBuf::from)
        });
        match (out, conf) {
            (Ok(o), Some(conf)) if o.status.success() => Some(conf),
            (out, _) => {
                let why = out.map_or_else(
                    |e| e.to_string(),
                    |o| String::from_utf8_lossy(&o.stderr).into_owned(),
                );
                assert!(
                    std::env::var("RANKMIG_REQUIRE_SLURM").as_deref() != Ok("1"),
                    "the emulated Slurm did not start: {why}"
                );
                eprintln!("the emulated Slurm cannot start here: {why}");
                None
            }
        }
    });
    if conf.is_none() && support::namespaces_available() {
        // (Without namespaces namespaces_available logged the skip.)
        support::skip::on_this_machine("the emulated Slurm cannot start here");
    }
    conf.as_deref()
}

/// `scripts/emulated_slurm.sh ACTION`.
fn emulated_slurm(action: &str) -> std::io::Result<Output> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/emulated_slurm.sh");
    Command::new("bash").arg(script).arg(action).output()
}

/// One test at a time on the four nodes, and no other MPI job beside it
/// ([`mpi_lock`]); every node back in service first.
fn slurm_lock() -> MutexGuard<'static, ()> {
    let guard = mpi_lock();
    if slurm_conf().is_some() {
        // A node whose slurmd the node-death test killed is started again (also when
        // that test failed before doing it): `start` starts only what is not running.
        let _ = emulated_slurm("start");
        let _ = slurm_command("scontrol", &["delete", &format!("ReservationName={MAINT}")]);
        let _ = slurm_command("scontrol", &["update", "nodename=n[1-4]", "state=resume"]);
        wait_until("the four nodes idle", Duration::from_secs(120), || {
            let idle = slurm_command(
                "sinfo",
                &["--noheader", "--Node", "--states=idle", "--format=%N"],
            );
            String::from_utf8_lossy(&idle.stdout).lines().count() == 4
        });
    }
    guard
}

/// A Slurm client command, its output as text.
fn slurm_command(program: &str, args: &[&str]) -> Output {
    let conf = slurm_conf().expect("Slurm is running");
    Command::new(program)
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn scontrol(args: &[&str]) {
    let out = slurm_command("scontrol", args);
    assert!(
        out.status.success(),
        "scontrol {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The processes of the job of `run_dir` (the Jacobi example, with that run directory
/// in their environment) and their hosts, read from outside.
fn job_hosts(run_dir: &Path) -> BTreeMap<u32, String> {
    job_hosts_of(run_dir, jacobi())
}

/// [`job_hosts`] of the processes running `program`.
fn job_hosts_of(run_dir: &Path, program: &Path) -> BTreeMap<u32, String> {
    let app = std::fs::canonicalize(program).expect("the program");
    let marker = format!("RANKMIG_RUN_DIR={}", run_dir.display());
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == app))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
        })
        .filter(|pid| !support::is_zombie(*pid))
        .filter_map(|pid| rankmig::emulated_cluster::host_of(pid).map(|h| (pid, h)))
        .collect()
}

/// A job under `salloc`, in a directory of its own.
struct SlurmJob {
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// What the job has written on its standard error so far (read as it comes).
    stderr: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl SlurmJob {
    /// `salloc SALLOC rankmig run -n 8 RUN_ARGS -- jacobi` in the background, with the
    /// variables `env`.
    fn start(salloc: &[&str], run_args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_program(salloc, (8, SIZE), run_args, jacobi(), env)
    }

    /// [`SlurmJob::start`] of `ranks` ranks of `program` (a Jacobi twin: the same
    /// arguments) on a grid of `size` (the C twin needs the ranks to divide it).
    fn start_program(
        salloc: &[&str],
        (ranks, size): (usize, &str),
        run_args: &[&str],
        program: &Path,
        env: &[(&str, &str)],
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let name = job_name(&dir);
        let mut cmd = Command::new("salloc");
        cmd.args(["--job-name", &name])
            .args(salloc)
            .arg(env!("CARGO_BIN_EXE_rankmig"))
            .args(["run", "-n", &ranks.to_string(), "--run-dir"])
            .arg(dir.path().join("run"))
            .args(run_args)
            .arg("--")
            .arg(program)
            .args(["--size", size, "--iters", "100000000", "--stop-file"])
            .arg(dir.path().join("stop"))
            .env("SLURM_CONF", slurm_conf().expect("Slurm"))
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .envs(env.iter().copied())
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("salloc");
        let stderr = Arc::new(Mutex::new(String::new()));
        let reader = child.stderr.take().map(|pipe| {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if let Ok(mut s) = stderr.lock() {
                        s.push_str(&line);
                        s.push('\n');
                    }
                }
            })
        });
        Self {
            dir,
            child: Some(child),
            stderr,
            reader,
        }
    }

    /// True once the job's standard error holds `text`.
    fn said(&self, text: &str) -> bool {
        self.stderr.lock().is_ok_and(|s| s.contains(text))
    }

    /// The job's output: its standard output, and its standard error read so far.
    fn output_of(&mut self, child: Child) -> Output {
        let mut out = child.wait_with_output().expect("salloc output");
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        out.stderr = self
            .stderr
            .lock()
            .map(|s| s.clone().into_bytes())
            .unwrap_or_default();
        out
    }

    fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// The host rank 0 started on (the second field of its first `processes.csv` row).
    fn rank0_host(&self) -> String {
        let processes = std::fs::read_to_string(self.run_dir().join("processes.csv")).expect("csv");
        processes
            .lines()
            .find_map(|l| l.strip_prefix("0,").and_then(|r| r.split(',').nth(1)))
            .expect("rank 0's start event")
            .to_owned()
    }

    fn hosts(&self) -> BTreeMap<String, usize> {
        support::per_host(&job_hosts(&self.run_dir()))
    }

    /// Waits until the 8 ranks run and rank 0 has recorded iterations.
    fn wait_started(&self) {
        wait_until("the job to start", Duration::from_secs(120), || {
            self.run_dir().join("iterations/rank-0.csv").exists()
                && self.hosts().values().sum::<usize>() == 8
        });
    }

    /// Ranks per host of the newest relaunch's placement (`placement-restart-K.txt`).
    fn relaunch_placement(&self) -> BTreeMap<String, usize> {
        let newest = std::fs::read_dir(self.run_dir())
            .expect("run directory")
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                let k: u32 = name
                    .strip_prefix("placement-restart-")?
                    .strip_suffix(".txt")?
                    .parse()
                    .ok()?;
                Some((k, name))
            })
            .max()
            .expect("a relaunch placement");
        support::placement_per_host(&self.run_dir().join(newest.1))
    }

    /// The job's node list in `squeue`; `None` while it prints none (seen once, as
    /// rankmig handed a drained node back: the allocation is being changed).
    fn squeue_nodes(&self) -> Option<Vec<String>> {
        let id = self.job_id();
        let out = slurm_command("squeue", &["--noheader", "--jobs", &id, "--format", "%N"]);
        rankmig::allocation::expand_hostlist(String::from_utf8_lossy(&out.stdout).trim()).ok()
    }

    /// The job's node list in `squeue`, once it prints one (within 60 s).
    fn squeue_nodes_listed(&self) -> Vec<String> {
        let listed = std::cell::RefCell::new(None);
        wait_until(
            "squeue to list the job's nodes",
            Duration::from_secs(60),
            || {
                *listed.borrow_mut() = self.squeue_nodes();
                listed.borrow().is_some()
            },
        );
        listed.into_inner().unwrap_or_default()
    }

    fn job_id(&self) -> String {
        let spec = std::fs::read_to_string(self.run_dir().join("run.json")).expect("run.json");
        let spec: serde_json::Value = serde_json::from_str(&spec).expect("json");
        spec["rms"]["job_id"].as_str().expect("job id").to_owned()
    }

    /// Stops the job by its stop file and returns its output.
    fn finish(mut self) -> Output {
        std::fs::write(self.dir.path().join("stop"), "").expect("stop file");
        let child = self.child.take().expect("running");
        self.output_of(child)
    }
}

impl Drop for SlurmJob {
    /// A test that fails leaves no job behind: salloc killed, the allocation cancelled
    /// (a killed salloc does not give it back).
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            support::job::kill_tree(&mut child);
            let out = self.output_of(child);
            eprintln!("the job's output:\n{}", stderr(&out));
            let _ = slurm_command("scancel", &["--name", &job_name(&self.dir)]);
        }
    }
}

/// The Slurm job name of the test job in `dir`.
fn job_name(dir: &tempfile::TempDir) -> String {
    let base = dir
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    format!("rankmig-test-{}", base.unwrap_or_default())
}

const SIZE: &str = "128";

/// The maintenance reservation a test makes (removed before each test).
const MAINT: &str = "rankmig_test_maint";

#[test]
fn the_allocation_is_read_as_slurm_writes_it() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    // salloc arguments, tasks × CPUs per task, nodes.
    let cases: [(&[&str], usize, usize); 3] = [
        (&["-N", "4", "-n", "8"], 8, 4),
        (&["-N", "4", "--ntasks-per-node", "3"], 12, 4),
        (&["-N", "2", "-n", "2", "-c", "2"], 4, 2),
    ];
    for (args, cpus, nodes) in cases {
        let mut all: Vec<&str> = args.to_vec();
        all.push("env");
        let out = slurm_command("salloc", &all);
        assert!(out.status.success(), "salloc {args:?}: {}", stderr(&out));
        let env: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let allocation = Allocation::from_batch_environment(|k| env.get(k).cloned())
            .unwrap_or_else(|e| panic!("salloc {args:?}: {e}"))
            .expect("a Slurm allocation");
        let slots: usize = allocation.hosts().iter().map(|h| h.slots).sum();
        assert_eq!(
            (slots, allocation.hosts().len()),
            (cpus, nodes),
            "salloc {args:?}: SLURM_JOB_NODELIST={:?} SLURM_JOB_CPUS_PER_NODE={:?}",
            env.get("SLURM_JOB_NODELIST"),
            env.get("SLURM_JOB_CPUS_PER_NODE")
        );
        assert!(allocation.hosts().iter().all(|h| h.name.starts_with('n')));
    }
}

#[test]
fn drained_and_reserved_nodes_are_emptied_and_released_and_the_job_ends_as_a_plain_run() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    // With MPICH the replacements are started in the allocation's order of their hosts,
    // the order in which hydra's `srun` starts its proxies (in spawn order two of them
    // took each other's host, 2026-11-26): `rankmig run` would stop the job for a
    // misplaced rank.
    let job = SlurmJob::start(
        &["-N", "4", "--ntasks-per-node", "3", "--no-kill"],
        // A spawn that hangs (Open MPI 4.1, see `run_dir::spawn_watch`) or is held up
        // past 30 s is stopped and the job relaunched without the node: with the
        // default 120 s, the reserved node could not be emptied in the 85 s the
        // scenario gives it (a run with 1 s took that path at every migration and
        // passed).
        &["--rms", "slurm", "--rms-release", "--spawn-timeout", "30"],
        &[],
    );
    job.wait_started();
    let rank0_host = drain_rank0_host_and_see_it_released(&job);
    let (other, released) = reserve_another_node_and_see_it_emptied(&job);
    let _ = slurm_command("scontrol", &["delete", &format!("ReservationName={MAINT}")]);
    let nodes_left = job.squeue_nodes_listed();
    assert_eq!(
        nodes_left.contains(&other),
        !job.said(&released),
        "{other} is in the job's node list {nodes_left:?} exactly when it was not released"
    );

    let out = job.finish();
    let err = stderr(&out);
    assert!(
        err.contains(&format!("slurm: {rank0_host} drain")),
        "the output does not name {rank0_host} as drained: {err}"
    );
    assert!(
        err.contains("maintenance reservation rankmig_test_maint"),
        "{err}"
    );
    assert!(!nodes_left.contains(&rank0_host), "{nodes_left:?}");
    assert!(
        err.contains(&released) || err.contains("Slurm refuses every update of job"),
        "the output says neither that {other} was released nor why not: {err}"
    );
    support::assert_same_as_plain_run(&out, 8, jacobi(), &["--size", SIZE], &[]);
    let launcher = rankmig::launcher::launcher(support::mpi());
    if launcher.capabilities().launch_replacements {
        let launched = format!("replacement process(es) with {}", launcher.program());
        assert!(err.contains(&launched), "no replacement launch: {err}");
    }
}

/// Drains the node of rank 0 and waits until the ranks have left it, it is handed back to
/// Slurm and the job runs again as the relaunch placed it. Returns its name.
fn drain_rank0_host_and_see_it_released(job: &SlurmJob) -> String {
    let rank0_host = job.rank0_host();

    // A drain on rank 0's node: the ranks leave it, then it is handed back.
    scontrol(&[
        "update",
        &format!("nodename={rank0_host}"),
        "state=drain",
        "reason=fan failure",
    ]);
    wait_until(
        "the drained node to be emptied",
        Duration::from_secs(120),
        || {
            let hosts = job.hosts();
            !hosts.contains_key(&rank0_host) && hosts.values().sum::<usize>() == 8
        },
    );
    wait_until(
        "the drained node to be released",
        Duration::from_secs(120),
        || {
            job.squeue_nodes()
                .is_some_and(|nodes| !nodes.contains(&rank0_host))
        },
    );
    // The release takes a launch from the newest checkpoint: its 8 ranks run again.
    wait_until("the job to run again", Duration::from_secs(120), || {
        let hosts = job.hosts();
        !hosts.contains_key(&rank0_host) && hosts.values().sum::<usize>() == 8
    });
    // Each host runs as many ranks as the relaunch placed there (read from outside).
    let planned = job.relaunch_placement();
    wait_until(
        "each host to run the ranks placed there",
        Duration::from_secs(30),
        || job.hosts() == planned,
    );
    rank0_host
}

/// Puts a maintenance reservation 90 s ahead on a node with ranks and waits until it is
/// emptied before the window, then released (or its release refused) and the job runs
/// again without it. Returns the node's name and the line saying it was released.
fn reserve_another_node_and_see_it_emptied(job: &SlurmJob) -> (String, String) {
    // A maintenance window in 90 s on another node that holds ranks: emptied before
    // it starts.
    let hosts = job.hosts();
    let other = hosts.keys().next().expect("a node with ranks").clone();
    let starts = std::time::SystemTime::now() + Duration::from_secs(90);
    scontrol(&[
        "create",
        "reservation",
        &format!("ReservationName={MAINT}"),
        "StartTime=now+90",
        "Duration=10",
        &format!("Nodes={other}"),
        "Users=root",
        "Flags=maint,ignore_jobs",
    ]);
    wait_until(
        "the reserved node to be emptied",
        Duration::from_secs(85),
        || {
            let hosts = job.hosts();
            !hosts.contains_key(&other) && hosts.values().sum::<usize>() == 8
        },
    );
    let emptied = std::time::SystemTime::now();
    assert!(
        emptied < starts,
        "{other} was emptied after its maintenance began"
    );
    // Handed back too, by a second launch; or, where Slurm refuses a second resize of
    // a job (22.05 without accounting storage, as here), kept unused and said so. The
    // job then runs its 8 ranks on the rest.
    let released = format!("slurm: released {other}");
    let refused = "hands none back any more";
    wait_until(
        "the reserved node to be released or its release refused",
        Duration::from_secs(120),
        || job.said(&released) || job.said(refused),
    );
    wait_until("the job to run again", Duration::from_secs(120), || {
        let hosts = job.hosts();
        !hosts.contains_key(&other) && hosts.values().sum::<usize>() == 8
    });
    (other, released)
}

#[test]
fn a_slurm_that_does_not_answer_is_reported_and_the_job_keeps_its_placement() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    let job = SlurmJob::start(
        &["-N", "4", "--ntasks-per-node", "2"],
        &["--rms", "slurm"],
        &[],
    );
    job.wait_started();
    let before = job.hosts();
    let pid_file = slurm_conf()
        .and_then(Path::parent)
        .expect("Slurm directory")
        .join("slurmctld.pid");
    let ctld: i32 = std::fs::read_to_string(&pid_file)
        .expect("slurmctld.pid")
        .trim()
        .parse()
        .expect("a pid");
    // A controller that hangs: the supervisor's commands fail or time out (15 s).
    let stopped = Stopped::new(ctld);
    wait_until(
        "the report that Slurm does not answer",
        Duration::from_secs(120),
        || job.said("the job keeps its placement"),
    );
    let during = job.hosts();
    drop(stopped);
    wait_until("Slurm to answer again", Duration::from_secs(120), || {
        job.said("slurm answers again")
    });
    let out = job.finish();
    let err = stderr(&out);
    assert_eq!(during, before, "the job moved while Slurm did not answer");
    // Either the command's own timeout or ours ("no answer after 15 s").
    assert!(err.contains("the job keeps its placement"), "{err}");
    assert!(err.contains("slurm answers again"), "{err}");
    support::assert_same_as_plain_run(&out, 8, jacobi(), &["--size", SIZE], &[]);
}

/// A process stopped with SIGSTOP until this is dropped (SIGCONT), also when a test
/// fails.
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> Self {
        // SAFETY: kill(2) on a process of the emulated Slurm, resumed on drop.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        Self(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// The emulated node `node` dies: its slurmd and every process on it (its UTS host
/// name read from outside, `nsenter`) are SIGKILLed.
fn kill_the_node(node: &str) {
    let victims: Vec<u32> = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| rankmig::emulated_cluster::host_of(pid).as_deref() == Some(node))
        .collect();
    assert!(!victims.is_empty(), "nothing runs on {node}");
    for pid in victims {
        // SAFETY: kill(2) on the emulated node's processes.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

#[test]
fn a_node_that_dies_under_no_kill_is_left_behind_by_auto_restart() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    let job = SlurmJob::start(
        &["-N", "4", "--ntasks-per-node", "3", "--no-kill"],
        &["--rms", "slurm", "--auto-restart", "1"],
        &[("RANKMIG_CKPT_SECONDS", "3")],
    );
    job.wait_started();
    let ckpt = job.run_dir().join("ckpt");
    wait_until("a complete checkpoint", Duration::from_secs(120), || {
        has_committed_epoch(&ckpt)
    });
    // Node n3 dies: its slurmd and every process on it.
    kill_the_node("n3");
    wait_until(
        "the job to run again without n3",
        Duration::from_secs(180),
        || {
            let hosts = job.hosts();
            !hosts.contains_key("n3") && hosts.values().sum::<usize>() == 8
        },
    );
    let out = job.finish();
    let err = stderr(&out);
    assert!(err.contains("host(s) n3 lost"), "{err}");
    support::assert_same_as_plain_run(&out, 8, jacobi(), &["--size", SIZE], &[]);
}

/// What the srun tests set for the job: Open MPI's `ob1` messaging layer instead of
/// UCX. Under srun (PMIx), PyPI's Open MPI 4.1.8 with UCX lost rank 0 to a SIGSEGV in 2
/// of about 45 launches here (2026-11-29), none in 15 with `ob1`; the cause is not
/// known. MPICH ignores the variable.
const SRUN_TEST_ENV: [(&str, &str); 1] = [("OMPI_MCA_pml", "ob1")];

/// The programs of an MPI's own process management, none of which may run when the job
/// is started by `srun`.
const MPI_LAUNCHERS: [&str; 7] = [
    "mpiexec",
    "mpirun",
    "hydra_pmi_proxy",
    "hydra_bstrap_proxy",
    "orted",
    "prted",
    "prterun",
];

/// The processes of Slurm job `job_id` running one of [`MPI_LAUNCHERS`], by name: those
/// with `SLURM_JOB_ID=job_id` in their environment (a launcher started inside `salloc`,
/// or by `srun` in the job, has it). Other jobs' launchers are not counted: other tests,
/// of this machine's other users too, run `mpirun` meanwhile.
fn mpi_launcher_processes(job_id: &str) -> Vec<String> {
    let marker = format!("SLURM_JOB_ID={job_id}");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
        })
        .filter_map(|pid| support::process_name(pid).map(|name| format!("{name} ({pid})")))
        .filter(|p| {
            MPI_LAUNCHERS
                .iter()
                .any(|l| p.starts_with(&format!("{l} ")))
        })
        .collect()
}

/// The command name of the parent of process `pid`, read from outside (`/proc`).
fn parent_name(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .to_owned();
    std::fs::read_to_string(format!("/proc/{ppid}/comm"))
        .ok()
        .map(|c| c.trim().to_owned())
}

/// Issue 52's scenario with the Jacobi example (Rust): see [`drain_under_srun`].
#[test]
fn srun_starts_the_job_as_a_step_and_a_drain_moves_ranks_by_a_new_step() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    drain_under_srun(jacobi());
}

/// Issue 52's scenario with a C code built from an installed prefix: `examples/c/jacobi.c`
/// built with `mpicc` against the prefix `scripts/install.sh` made (pkg-config), with
/// `-DJACOBI_THREAD_MULTIPLE` (see [`drain_under_srun`]).
///
/// Not with PyPI's MPICH 5.0.2 (skipped, said why): its replacements' step cannot start
/// under Slurm's `pmi2` plugin. That MPICH speaks PMI-1 to srun (its PMI-2 client
/// fails in `MPIR_pmi_init` without a word to the server; it has no PMIx), and at
/// `MPI_Init` each process puts a 4096-byte UCX business card into Slurm's key-value
/// store, hex-encoded in 9 segments of 511 bytes: `cmd=put kvsname=J.S
/// key=-allgather-1-R-seg-K/9 value=...` lines of up to 1077 bytes (1076 and 1060 seen).
/// Slurm 22.05's `slurmstepd` reads a PMI-1 command with one `read` of at most 1024 bytes
/// (`handle_pmi1_cmd`, "TODO: read until newline") though it announces `vallen_max=1024`:
/// a longer line is cut, the cut part is parsed as the next command, and the process
/// waits for an answer forever (`slurmstepd: mpi/pmi2: value not properly terminated in
/// client request`, then `request not begin with 'cmd='`; `strace` of n4's `slurmd`,
/// 2026-11-29). Whether a segment is that long depends on what follows UCX's address
/// in the process's memory (MPICH sends 4096 bytes whatever the address's length; runs
/// of zero bytes are encoded short): the Rust Jacobi's came out short, the C twin's
/// replacements' did not (4 runs of 4 by hand, 3 of 3 under this test earlier), while
/// its first step of 6 ranks started every time. With `MPIR_CVAR_CH4_NETMOD=ofi`
/// (short, fixed length addresses) the replacements joined live, but the job then hung
/// in its first `MPI_Sendrecv` (2 runs of 2, with and without `FI_PROVIDER=tcp`).
#[test]
fn srun_runs_a_c_code_built_from_an_installed_prefix_and_a_drain_moves_its_ranks() {
    if slurm_conf().is_none() {
        return;
    }
    if support::mpi() == rankmig::launcher::MpiImplementation::Mpich {
        support::skip::not_for_this_mpi(
            "PyPI's MPICH 5.0.2 speaks PMI-1 to srun --mpi=pmi2 and its UCX business card \
             makes command lines longer than the 1024 bytes slurmstepd reads: the C \
             twin's replacements hang in MPI_Init (docs/slurm.md)",
        );
        return;
    }
    let program = support::build_c_program(
        "examples/c/jacobi.c",
        "jacobi-c-thread-multiple",
        &["-lxxhash", "-DJACOBI_THREAD_MULTIPLE"],
    );
    let _lock = slurm_lock();
    drain_under_srun(&program);
}

/// Issue 52's scenario: inside `salloc -N 4 --ntasks-per-node 2`, `rankmig run -n 6
/// --launcher srun --rms slurm` of `program` (the Jacobi example or a twin of it that
/// asks for `MPI_THREAD_MULTIPLE`) runs with no MPI launcher process, every rank's
/// parent being `slurmstepd`; draining the node of rank 0 moves its ranks by a new job
/// step (none left there, 6 kept), and the job ends with exit 0 and a plain run's
/// checksum. With MPICH (`--mpi=pmi2`) the new step holds the replacements, which join
/// live (`migrated`); with Open MPI 4.1 or 5 (`--mpi=pmix`, one PMIx directory per
/// emulated node) the job is relaunched from a checkpoint as a new step (`relaunch`).
fn drain_under_srun(program: &Path) {
    use rankmig::launcher::MpiImplementation;
    // srun's TYPE, the first record's outcome, and what the job says of the move.
    let (pmi, outcome, move_said) = match support::mpi() {
        MpiImplementation::Mpich => ("pmi2", "migrated", "replacement process(es) with srun"),
        MpiImplementation::OpenMpi4 | MpiImplementation::OpenMpi5 => (
            "pmix",
            "relaunch",
            "relaunching the job from its newest complete checkpoint",
        ),
    };
    // MPI_THREAD_MULTIPLE: the replacements of a migration start while the ranks
    // compute, as a new step; with MPI_Init alone the job is relaunched instead.
    let job = SlurmJob::start_program(
        &["-N", "4", "--ntasks-per-node", "2", "--no-kill"],
        (6, "96"),
        &["--launcher", "srun", "--rms", "slurm"],
        program,
        &SRUN_TEST_ENV,
    );
    let hosts = || support::per_host(&job_hosts_of(&job.run_dir(), program));
    let no_launcher_and_stepd_parents = |when: &str| {
        let launchers = mpi_launcher_processes(&job.job_id());
        assert!(launchers.is_empty(), "{when}: {launchers:?}");
        for pid in job_hosts_of(&job.run_dir(), program).keys() {
            let parent = parent_name(*pid);
            assert_eq!(
                parent.as_deref(),
                Some("slurmstepd"),
                "{when}: rank process {pid}"
            );
        }
    };
    wait_until("the 6 ranks", Duration::from_secs(120), || {
        job.run_dir().join("iterations/rank-0.csv").exists() && hosts().values().sum::<usize>() == 6
    });
    assert!(
        job.said(&format!("launched by srun --mpi={pmi}")),
        "the start line names srun"
    );
    no_launcher_and_stepd_parents("at the start");
    let rank0_host = job.rank0_host();
    scontrol(&[
        "update",
        &format!("nodename={rank0_host}"),
        "state=drain",
        "reason=srun test",
    ]);
    wait_until("the drained node emptied", Duration::from_secs(120), || {
        let now = hosts();
        !now.contains_key(&rank0_host) && now.values().sum::<usize>() == 6
    });
    no_launcher_and_stepd_parents("after the drain");
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(job.run_dir().join("reconfigurations.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
    let out = job.finish();
    assert_eq!(
        records.first().map(|r| r["outcome"].clone()),
        Some(outcome.into()),
        "{records:?}"
    );
    assert!(stderr(&out).contains(move_said), "{}", stderr(&out));
    support::assert_same_as_plain_run(&out, 6, program, &["--size", "96"], &[]);
}

/// 4 ranks of the Jacobi example started by `salloc SALLOC rankmig run --launcher srun
/// --rms slurm --auto-restart 1 RUN_ARGS`, checkpointing every 2 s, with
/// [`SRUN_TEST_ENV`]; returns once the 4 run and an epoch is committed.
fn start_srun_job_until_a_checkpoint(salloc: &[&str], run_args: &[&str]) -> SlurmJob {
    start_srun_job_restarting(salloc, "1", run_args)
}

/// [`start_srun_job_until_a_checkpoint`] with `--auto-restart AUTO_RESTART`.
fn start_srun_job_restarting(salloc: &[&str], auto_restart: &str, run_args: &[&str]) -> SlurmJob {
    let program = jacobi();
    let mut args = vec![
        "--launcher",
        "srun",
        "--rms",
        "slurm",
        "--auto-restart",
        auto_restart,
    ];
    args.extend(run_args);
    let mut env = vec![("RANKMIG_CKPT_SECONDS", "2")];
    env.extend(SRUN_TEST_ENV);
    let job = SlurmJob::start_program(salloc, (4, "96"), &args, program, &env);
    wait_until("the 4 ranks", Duration::from_secs(120), || {
        job.run_dir().join("iterations/rank-0.csv").exists()
            && job_hosts_of(&job.run_dir(), program).len() == 4
    });
    let ckpt = job.run_dir().join("ckpt");
    wait_until("a complete checkpoint", Duration::from_secs(120), || {
        support::has_committed_epoch(&ckpt)
    });
    job
}

/// Under `rankmig run --launcher srun` (MPICH with PMI-2, Open MPI with PMIx), a rank
/// SIGKILLed ends the job step; `--auto-restart 1` starts the job again as a new step
/// from the last committed checkpoint: every rank's process is new, no MPI launcher runs at any time (the
/// ranks' parents are `slurmstepd`), the restart is said, and the result is a plain
/// run's.
#[test]
fn srun_restarts_the_job_as_a_new_step_after_a_killed_rank() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    let job = start_srun_job_until_a_checkpoint(&["-N", "2", "--ntasks-per-node", "2"], &[]);
    restarted_as_a_new_step(job, |ranks| {
        // SAFETY: kill(2) on a rank process of the job.
        unsafe { libc::kill(ranks[1] as i32, libc::SIGKILL) };
    });
}

/// Under `rankmig run --launcher srun --auto-restart 1`, the job step cancelled by
/// Slurm (`scancel JOB.STEP`, the step read from a rank's environment, from outside):
/// the job says Slurm cancelled that step, records a `cancelled` row for each of its 4
/// ranks in `processes.csv`, and starts again as a new step from the last committed
/// checkpoint, as after a killed rank ([`restarted_as_a_new_step`]).
#[test]
fn srun_a_step_cancelled_by_slurm_is_recorded_and_the_job_restarts_as_a_new_step() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    let job = start_srun_job_until_a_checkpoint(&["-N", "2", "--ntasks-per-node", "2"], &[]);
    let step = std::cell::RefCell::new(String::new());
    let (err, processes) = restarted_as_a_new_step(job, |ranks| {
        *step.borrow_mut() = step_of(ranks[0]);
        scancel_step(&step.borrow());
    });
    let step = step.into_inner();
    assert!(
        err.contains(&format!(
            "Slurm cancelled job step {step} (said by slurmstepd on"
        )),
        "{err}"
    );
    let cancelled: Vec<usize> = processes
        .into_iter()
        .filter(|(_, _, _, event)| event == "cancelled")
        .map(|(rank, _, _, _)| rank)
        .collect();
    assert_eq!(cancelled.len(), 4, "cancelled rows: {cancelled:?}");
}

/// Without `--auto-restart`, the job whose step Slurm cancelled ends with an error that
/// says so and how to resume it, and a `cancelled` row for each rank.
#[test]
fn srun_a_step_cancelled_by_slurm_without_auto_restart_ends_the_job_with_that_error() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    let mut job = start_srun_job_restarting(&["-N", "2", "--ntasks-per-node", "2"], "0", &[]);
    let pid = *job_hosts_of(&job.run_dir(), jacobi())
        .keys()
        .next()
        .expect("a rank");
    let step = step_of(pid);
    scancel_step(&step);
    let child = job.child.take().expect("running");
    let out = job.output_of(child);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "Slurm cancelled job step {step} (said by slurmstepd on"
        )) && err.contains("is not restarted (no --auto-restart)")
            && err.contains("rankmig run --restart"),
        "{err}"
    );
    let cancelled = support::processes_csv(&job.run_dir())
        .into_iter()
        .filter(|(_, _, _, event)| event == "cancelled")
        .count();
    assert_eq!(cancelled, 4);
}

/// The job step (`JOB.STEP`) of process `pid`, from its environment (read from outside).
fn step_of(pid: u32) -> String {
    let env = std::fs::read(format!("/proc/{pid}/environ")).expect("the rank's environment");
    let var = |name: &str| {
        env.split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(format!("{name}=").as_bytes()))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_else(|| panic!("{name} in the environment of {pid}"))
    };
    format!("{}.{}", var("SLURM_JOB_ID"), var("SLURM_STEP_ID"))
}

/// `scancel STEP`.
fn scancel_step(step: &str) {
    let out = slurm_command("scancel", &[step]);
    assert!(out.status.success(), "scancel {step}: {}", stderr(&out));
}

/// Ends the step of `job` (4 ranks of the Jacobi example, `--auto-restart 1`) with
/// `end_step`, given the ranks' processes; then every rank's process must be new, no
/// MPI launcher may run at any time (the ranks' parents are `slurmstepd`), the restart
/// must be said and the result be a plain run's. Returns the job's standard error and
/// the rows of its `processes.csv` ([`support::processes_csv`]).
fn restarted_as_a_new_step(
    job: SlurmJob,
    end_step: impl FnOnce(&[u32]),
) -> (String, Vec<(usize, u32, String, String)>) {
    let program = jacobi();
    let ranks = || job_hosts_of(&job.run_dir(), program);
    let before: Vec<u32> = ranks().into_keys().collect();
    let launchers = mpi_launcher_processes(&job.job_id());
    assert!(launchers.is_empty(), "at the start: {launchers:?}");
    end_step(&before);
    wait_until("4 new rank processes", Duration::from_secs(180), || {
        let now = ranks();
        now.len() == 4 && now.keys().all(|pid| !before.contains(pid))
    });
    let launchers = mpi_launcher_processes(&job.job_id());
    assert!(launchers.is_empty(), "after the restart: {launchers:?}");
    for pid in ranks().keys() {
        assert_eq!(
            parent_name(*pid).as_deref(),
            Some("slurmstepd"),
            "rank process {pid}"
        );
    }
    let processes = support::processes_csv(&job.run_dir());
    let out = job.finish();
    let err = stderr(&out);
    assert!(err.contains("restarted from checkpoint epoch"), "{err}");
    support::assert_same_as_plain_run(&out, 4, program, &["--size", "96"], &[]);
    (err, processes)
}

/// Under `rankmig run --launcher srun`, a node that dies (its slurmd, its step daemon
/// and its ranks killed) under `--no-kill`: srun is not told; the stall watch (15 s
/// here) stops the job, or (Open MPI 5) the ranks left end the step themselves and
/// `--auto-restart 1` restarts it; either way the probe before the relaunch finds the
/// host lost, and the job runs again as a new step on the nodes left, with a plain
/// run's result.
#[test]
fn srun_a_node_that_dies_is_left_behind_after_the_stall_watch_stops_the_job() {
    if slurm_conf().is_none() {
        return;
    }
    let _lock = slurm_lock();
    let program = jacobi().to_path_buf();
    let job = start_srun_job_until_a_checkpoint(
        &["-N", "3", "--ntasks-per-node", "2", "--no-kill"],
        &["--stall-timeout", "15"],
    );
    let hosts = || support::per_host(&job_hosts_of(&job.run_dir(), &program));
    let victim = hosts()
        .keys()
        .find(|h| **h != job.rank0_host())
        .cloned()
        .expect("a host besides rank 0's");
    kill_the_node(&victim);
    wait_until(
        "the job to run again without the dead node",
        Duration::from_secs(180),
        || {
            let now = hosts();
            !now.contains_key(&victim) && now.values().sum::<usize>() == 4
        },
    );
    let out = job.finish();
    let err = stderr(&out);
    // MPICH and Open MPI 4.1 leave srun waiting (the stall watch stops the job); Open
    // MPI 5's ranks on the live nodes exit by themselves (code 14), ending the step.
    let lost = format!("host(s) {victim} lost (no answer to a probe): re");
    assert!(err.contains(&lost), "{err}");
    support::assert_same_as_plain_run(&out, 4, &program, &["--size", "96"], &[]);
}
