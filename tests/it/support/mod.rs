//! Helpers shared by the test modules: running the `rankmig` binary and the examples
//! under real `mpirun`, reading what a job left behind, and the lock that keeps MPI
//! jobs from running side by side.

pub mod boost;
pub mod job;
pub mod limited;
pub mod prefix;
pub mod skip;
pub mod small_fs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The path of `rel` under the test data directory `tests/data`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// [`data`] as text, for a command line.
pub fn data_arg(rel: &str) -> String {
    data(rel).display().to_string()
}

/// Writes `text` to the file `name` in `dir` and returns its path, as text for a
/// command line.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write input");
    path.display().to_string()
}

/// The standard error of a finished command, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits until `ready()` holds, looking every 200 ms; fails the test, naming `what`,
/// when it does not hold within `limit`.
pub fn wait_until(what: &str, limit: Duration, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Held by the test that runs an MPI job, the emulated cluster or the emulated Slurm.
static MPI_LOCK: Mutex<()> = Mutex::new(());

/// One MPI job at a time in this test process: every test that starts an MPI job (by
/// `mpirun`, `rankmig run` or `salloc`), the emulated cluster or the emulated Slurm
/// holds this guard while it runs. All test modules share one process (`tests/it`),
/// where such jobs side by side would stall or miss their time limits on a small
/// machine. A test that failed while holding it does not poison it for the others.
pub fn mpi_lock() -> MutexGuard<'static, ()> {
    MPI_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// True once the checkpoint directory `ckpt` holds a committed epoch (of any job).
pub fn has_committed_epoch(ckpt: &Path) -> bool {
    rankmig::checkpoint::inspect(ckpt, false).is_ok_and(|r| r.epochs().any(|e| e.is_complete()))
}

/// Path of the jacobi example next to this test binary, built once.
pub fn jacobi() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| example("jacobi"))
}

/// Builds example `name` (with `--release` when these tests are built without debug
/// assertions) and returns its path next to this test binary.
pub fn example(name: &str) -> PathBuf {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "--example", name, "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    if cfg!(not(debug_assertions)) {
        cmd.arg("--release");
    }
    let built = cmd.status().is_ok_and(|s| s.success());
    let path = prefix::build_dir().join("examples").join(name);
    assert!(
        path.exists(),
        "{} missing and cargo build --example {name} failed",
        path.display()
    );
    if !built {
        // `cargo test` builds the examples too, so this one is from this build.
        eprintln!(
            "cargo build --example {name} failed; using {}",
            path.display()
        );
    }
    path
}

/// The checksum printed by a successful run.
pub fn checksum(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "run failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("checksum: "))
        .unwrap_or_else(|| panic!("no checksum line in {stdout:?}\n{stderr}"));
    assert_eq!(line.len(), 16, "{line}");
    line.to_owned()
}

/// Pids whose parent is `ppid`, from `/proc/*/stat`.
pub fn children_of(ppid: u32) -> Vec<u32> {
    rankmig::supervisor::process_tree::children_of(ppid)
}

/// The `rankmig` command, with no `RANKMIG_*` setting of the caller leaking in, allowed
/// to run `mpirun` as root.
pub fn rankmig() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankmig"));
    for (k, _) in std::env::vars() {
        if k.starts_with("RANKMIG_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

/// The live processes below `root` running `program`, and their hosts (emulated
/// cluster), read from outside: the host of a process is the name of its UTS namespace.
pub fn live_hosts(root: u32, program: &Path) -> std::collections::BTreeMap<u32, String> {
    let app = std::fs::canonicalize(program).expect("program path");
    rankmig::supervisor::process_tree::descendants(root)
        .into_iter()
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == app))
        .filter(|pid| !is_zombie(*pid))
        .filter_map(|pid| rankmig::emulated_cluster::host_of(pid).map(|h| (pid, h)))
        .collect()
}

/// True for a zombie or a process that is gone.
pub fn is_zombie(pid: u32) -> bool {
    matches!(process_state(pid), None | Some('Z'))
}

/// How many of `live` run on each host.
pub fn per_host(
    live: &std::collections::BTreeMap<u32, String>,
) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for h in live.values() {
        *out.entry(h.clone()).or_insert(0) += 1;
    }
    out
}

/// False where UTS namespaces cannot be created (no emulated cluster): the calling
/// test is then logged as skipped on this machine ([`skip::on_this_machine`]).
pub fn namespaces_available() -> bool {
    let ok = Command::new("unshare")
        .args(["--uts", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip::on_this_machine("`unshare --uts` is not allowed here: no emulated cluster");
    }
    ok
}

/// The MPI implementation under test: the one `rankmig run` detects from the launcher
/// first on `PATH` (the tests of each implementation run with its prefix first on
/// `PATH`, see `scripts/test.sh`).
pub fn mpi() -> rankmig::launcher::MpiImplementation {
    static FOUND: OnceLock<rankmig::launcher::MpiImplementation> = OnceLock::new();
    *FOUND.get_or_init(|| rankmig::launcher::detect().expect("an MPI launcher on PATH"))
}

/// A plain launch (no rankmig) of `ranks` ranks of `program args` on this host, by the
/// launcher of the implementation under test, as `rankmig run` would start them on
/// logical nodes, with the variables `env` every rank sees; no other `RANKMIG_*`
/// variable of the caller reaches them.
pub fn plain_launch_with(
    ranks: usize,
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
) -> Command {
    use rankmig::launcher::{JobLaunch, launcher};
    use rankmig::planner::{Location, Placement};
    let placement = Placement::new(
        (0..ranks)
            .map(|core| Location {
                node: "local".into(),
                core,
            })
            .collect(),
    );
    let program: Vec<String> = std::iter::once(program.display().to_string())
        .chain(args.iter().map(|a| (*a).to_owned()))
        .collect();
    let mut cmd = launcher(mpi()).command(&JobLaunch {
        placement: &placement,
        hostfile: None,
        env,
        user_args: &[],
        program: &program,
    });
    for (k, _) in std::env::vars() {
        if k.starts_with("RANKMIG_") && !env.iter().any(|(e, _)| *e == k) {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// The iteration count of a run's `iterations: N` line (the Jacobi examples and
/// `split_sum` print it on rank 0), if any.
pub fn iterations_of(out: &Output) -> Option<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("iterations: "))
        .map(str::to_owned)
}

/// Asserts that `out` is a successful run whose checksum is that of a plain launch of
/// `ranks` ranks of `program args --iters N`, N from its `iterations:` line, with the
/// variables `env` (a checkpoint directory, say).
pub fn assert_same_as_plain_run(
    out: &Output,
    ranks: usize,
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
) {
    assert_plain_run_gives(out, plain_run_of(out, ranks, program, args, env));
}

/// [`assert_same_as_plain_run`] with the plain launch run [`boost::boosted`], as a
/// boosted job's: the same program, arguments and variables, so the same result, at
/// the pace of a quiet machine (unboosted under other engineers' builds, the 500 000
/// iterations of the contention test's job took 9 minutes).
pub fn assert_same_as_boosted_plain_run(
    out: &Output,
    ranks: usize,
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
) {
    let (iterations, plain) = plain_run_of(out, ranks, program, args, env);
    assert_plain_run_gives(out, (iterations, boost::boost(&plain)));
}

/// Runs the plain launch of `iterations` iterations and asserts that it prints `out`'s
/// checksum.
fn assert_plain_run_gives(out: &Output, (iterations, mut plain): (String, Command)) {
    let plain = timed(&mut plain, &iterations);
    assert_eq!(
        checksum(out),
        checksum(&plain),
        "after {iterations} iterations"
    );
}

/// The iteration count of `out` and the plain launch of `ranks` ranks of
/// `program args --iters N` that should give its result.
fn plain_run_of(
    out: &Output,
    ranks: usize,
    program: &Path,
    args: &[&str],
    env: &[(String, String)],
) -> (String, Command) {
    let iterations = iterations_of(out).unwrap_or_else(|| {
        panic!(
            "no iterations line in {:?}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut plain_args = args.to_vec();
    plain_args.extend(["--iters", &iterations]);
    let plain = plain_launch_with(ranks, program, &plain_args, env);
    (iterations, plain)
}

/// Runs `cmd`, a plain run of `iterations` iterations, to its end and says how long it
/// took.
fn timed(cmd: &mut Command, iterations: &str) -> Output {
    let start = Instant::now();
    let out = cmd.output().expect("plain launch");
    let seconds = start.elapsed().as_secs_f64();
    eprintln!("the plain run of {iterations} iterations took {seconds:.1} s");
    out
}

/// Ranks per node of the placement file `path` (`RANK NODE CORE` lines).
pub fn placement_per_host(path: &Path) -> std::collections::BTreeMap<String, usize> {
    let text = std::fs::read_to_string(path).expect("placement file");
    let mut per_host = std::collections::BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let host = line.split_whitespace().nth(1).expect("RANK NODE CORE");
        *per_host.entry(host.to_owned()).or_insert(0) += 1;
    }
    per_host
}

/// The `Cpus_allowed_list` of every thread of process `pid`, read from outside it
/// (`/proc/PID/task/*/status`); empty when the process is gone.
pub fn threads_allowed(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_owned())
        })
        .collect()
}

/// The CPUs of the first two cores of this machine, as a list (`0-1`): slot 0 of ranks
/// of 2 cores on the first logical node, or on the first host emulated on this machine.
pub fn slot_zero_of_two_cores() -> String {
    let machine = rankmig::topology::TopologySpec::Live
        .load(rankmig::topology::LeafKind::Core)
        .expect("this machine");
    assert!(
        machine.leaf_count() >= 2,
        "this test needs a machine of 2 cores or more"
    );
    let mut cpus: Vec<u32> = machine.leaves()[..2]
        .iter()
        .flat_map(|l| l.cpus.clone())
        .collect();
    cpus.sort_unstable();
    rankmig::topology::format_index_list(&cpus)
}

/// Writes the shell script `text` to `path`, executable.
pub fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("script");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
}

/// The program name of process `pid` (the file name of its argv[0]), `None` when it is
/// gone.
pub fn process_name(pid: u32) -> Option<String> {
    // argv[0], not /proc/PID/comm: PyPI's Open MPI 4.1.8 `mpirun` is a shim that execs
    // `orterun_wrapper` keeping argv[0] (comm says `orterun_wrapper`).
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv0 = cmdline.split(|b| *b == 0).next()?;
    let argv0 = std::path::Path::new(std::str::from_utf8(argv0).ok()?);
    Some(argv0.file_name()?.to_string_lossy().into_owned())
}

/// The state letter of process `pid` from `/proc` (`R`, `S`, `T` stopped, `Z`, ...),
/// `None` when it is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name in parentheses may hold spaces: the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// A spawn program for `RANKMIG_SPAWN_PROGRAM` whose processes stop themselves
/// (SIGSTOP) right after `MPI_Init` (`tests/c/stop_after_mpi_init.c`, built with the
/// `mpicc` of the MPI under test and preloaded): the spawn of a migration completes,
/// and every original rank then waits in the state transfer for as long as a test
/// wants. Each process notes its pid first.
pub struct StoppingSpawns {
    /// The script to give as `RANKMIG_SPAWN_PROGRAM`.
    pub script: PathBuf,
    pids: PathBuf,
}

impl StoppingSpawns {
    /// Builds the preload library and the script in `dir`, the script running `program`.
    pub fn build(dir: &Path, program: &Path) -> Self {
        Self::build_delayed(dir, program, 0)
    }

    /// [`StoppingSpawns::build`] whose processes wait `seconds` (after noting their
    /// pid, before `program` starts): the spawn stays in progress that long.
    pub fn build_delayed(dir: &Path, program: &Path, seconds: u32) -> Self {
        let library = dir.join("stop_after_mpi_init.so");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/stop_after_mpi_init.c");
        let built = Command::new("mpicc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&library)
            .arg(&source)
            .status();
        assert!(
            built.is_ok_and(|s| s.success()),
            "mpicc could not build {}",
            source.display()
        );
        let pids = dir.join("stopping-spawn-pids");
        let script = dir.join("stopping-spawn");
        let text = format!(
            "#!/bin/sh\necho $$ >> '{}'\nsleep {seconds}\nLD_PRELOAD='{}' exec '{}' \"$@\"\n",
            pids.display(),
            library.display(),
            program.display()
        );
        write_script(&script, &text);
        Self { script, pids }
    }

    /// The pids of the processes spawned so far.
    pub fn pids(&self) -> Vec<u32> {
        let text = std::fs::read_to_string(&self.pids).unwrap_or_default();
        text.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }

    /// True once `count` processes were spawned and every one is stopped.
    pub fn all_stopped(&self, count: usize) -> bool {
        let pids = self.pids();
        pids.len() == count && pids.iter().all(|&p| process_state(p) == Some('T'))
    }
}

/// (rank, pid, node, event) of every line of `run_dir/processes.csv` (lines it cannot
/// read are left out; none when the file is not there yet).
pub fn processes_csv(run_dir: &Path) -> Vec<(usize, u32, String, String)> {
    let text = std::fs::read_to_string(run_dir.join("processes.csv")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((
                f.first()?.parse().ok()?,
                f.get(1)?.parse().ok()?,
                f.get(2)?.to_string(),
                f.get(4)?.to_string(),
            ))
        })
        .collect()
}

/// The records of `run/reconfigurations.jsonl`, as JSON values (lines that do not read
/// are left out; none before the first reconfiguration).
pub fn records(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("reconfigurations.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Builds the C program `source` (a path in the repository) with `mpicc` against the
/// installed prefix ([`prefix::library_prefix`]) through pkg-config, as a user does,
/// into `target/release/c-examples/NAME`, linking `extra` after the package's
/// libraries; its path.
pub fn build_c_program(source: &str, name: &str, extra: &[&str]) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = prefix::programs_dir().join(name);
    let out =
        prefix::compile_against_prefix("mpicc", "rankmig", &[&root.join(source)], &exe, extra)
            .arg("-Wall")
            .output()
            .expect("mpicc runs");
    assert!(
        out.status.success(),
        "mpicc could not build {source}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}
