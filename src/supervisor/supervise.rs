//! Running the launcher (`mpirun`, `mpiexec`) for `rankmig run`: signals reach the whole
//! job, a rank or host that dies is noticed, and with `--auto-restart N` the job
//! restarts from its newest complete checkpoint.
//!
//! The launcher runs in its own process group. SIGINT, SIGTERM and SIGHUP sent to
//! `rankmig run` are forwarded to it, and it stops every rank on every host; if it has
//! not ended [`STOP_GRACE`] later, it and every process below it are killed.
//!
//! Every launcher ends the whole job when a host's daemon or a rank dies. The rank
//! that died, its host, how it ended and its iteration are read from the launcher's
//! stdout and stderr and the run directory ([`super::rank_failure`]). A host is lost
//! only when it does not answer a probe ([`super::probe`]); with probing off, when the
//! launcher's messages name it. An automatic restart runs on the same hosts when none
//! is lost, without the lost ones otherwise; it stops when the same rank ends the same
//! way at the same iteration as before the last restart. A rank that runs on another
//! host than its placement's stops the job with an error
//! ([`crate::run_dir::record::MISPLACED`]).
//!
//! A migration whose spawn has not completed after `--spawn-timeout` is stopped, and
//! the job launched again from the checkpoint the ranks committed before that spawn
//! ([`spawn_watch`]).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGKILL, SIGTERM};

use super::availability_lock::AvailabilityLock;
use super::launch::{LaunchError, LaunchKind, RunSpec, save_spec};
use super::launch_command::prepare;
use super::probe::HostProbe;
use super::process_tree::{end_group, kill_tree};
use super::progress::ProgressReader;
use super::rank_failure::{FailureClues, RankFailure};
use super::replacement_launch::ReplacementLaunches;
use super::rms_watch::{self, LaunchShared};
use super::run_dir_watch::RunDirWatch;
use super::stall_watch::{self, Stall, StallWatch};
use crate::launcher::{Launcher, SlurmCancel};
use crate::run_dir::record::{
    Misplaced, RELAUNCH_REQUEST, misplaced_after, misplaced_mark, processes_mark, request_relaunch,
    restarted_from, unended_ranks,
};
use crate::run_dir::spawn_watch;

/// How long `mpirun` has to stop the job after a forwarded signal before everything
/// below it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// How often the run directory is read for new reconfiguration records.
const PROGRESS_POLL: Duration = Duration::from_millis(300);

/// The exit code given to a launch whose launcher exited 0 although ranks of the job
/// did not end (none recorded its end) or a host was reported lost.
pub const INCOMPLETE_EXIT: i32 = 70;

/// How one launch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchOutcome {
    /// The launcher's exit code (128 + signal when it was killed).
    pub code: i32,
    /// Hosts of the allocation that the launcher reported lost or whose ranks died.
    pub lost_hosts: Vec<String>,
    /// The signal `rankmig run` received and forwarded, if any.
    pub stopped_by: Option<i32>,
    /// The rank whose death ended the job, when the launcher named one.
    pub failure: Option<RankFailure>,
    /// A rank that did not run on its planned host: the job was stopped for it.
    pub misplaced: Option<Misplaced>,
    /// The job step Slurm cancelled (`scancel` of the step, a time limit), when the
    /// launcher said so: its ranks were killed by Slurm, and [`LaunchOutcome::failure`]
    /// is then `None` (no rank failed by itself).
    pub cancelled: Option<SlurmCancel>,
}

/// Runs the job, restarting it after a lost host at most `auto_restart` times.
/// Returns the last launch's exit code.
///
/// In multi-host mode a restart (`restart`, or an automatic one) first probes the hosts
/// of the allocation ([`HostProbe`]): those that do not answer are marked lost, get no
/// daemon and no rank. After a failed launch the lost hosts are those the launcher's
/// messages name and those that no longer answer.
///
/// With `--rms`, the resource manager is followed for the whole run, across launches
/// ([`rms_watch`]).
pub fn run(spec: &mut RunSpec, restart: bool, auto_restart: u32) -> Result<i32, LaunchError> {
    // One job per availability file (with --rms the file is this run's own).
    let _lock = match spec.rms {
        None => AvailabilityLock::take(&spec.availability, &spec.run_dir)?,
        Some(_) => None,
    };
    let shared = Arc::new(LaunchShared::default());
    let watch = match spec.rms {
        Some(_) => Some(rms_watch::start(spec, Arc::clone(&shared))?),
        None => None,
    };
    let code = run_launches(spec, restart, auto_restart, &shared);
    if let Some((stop, thread)) = watch {
        stop.store(true, Ordering::SeqCst);
        let _ = thread.join();
    }
    code
}

fn run_launches(
    spec: &mut RunSpec,
    restart: bool,
    auto_restart: u32,
    shared: &Arc<LaunchShared>,
) -> Result<i32, LaunchError> {
    let probe = HostProbe::from_env(spec.launcher());
    if restart {
        let gone = newly_lost(spec, &[], &probe);
        if !gone.is_empty() {
            log::warn!(
                "host(s) {} do not answer: restarting without them",
                gone.join(", ")
            );
            spec.lost_hosts.extend(gone);
        }
    }
    let first = if restart {
        LaunchKind::Restart
    } else {
        LaunchKind::Fresh
    };
    let mut outcome = launch_until_done(spec, first, shared)?;
    let mut restarts = 0;
    let mut previous: Option<RankFailure> = None;
    while outcome.code != 0 && outcome.stopped_by.is_none() && restarts < auto_restart {
        report_failure(spec, &outcome);
        note_failure(spec, &outcome, shared.mark.load(Ordering::SeqCst));
        if let Some(why) = not_restartable(spec, &outcome, previous.as_ref()) {
            log::error!("{why}: not restarting");
            break;
        }
        restarts += 1;
        let lost = newly_lost(spec, &outcome.lost_hosts, &probe);
        let counted = format!("auto-restart {restarts} of {auto_restart}");
        if lost.is_empty() {
            log::warn!(
                "every host answers: restarting from the newest complete checkpoint on the same hosts ({counted})"
            );
        } else {
            spec.lost_hosts.extend(lost.iter().cloned());
            save_spec(spec)?;
            log::warn!(
                "host(s) {} lost (no answer to a probe): restarting from the newest complete checkpoint without them ({counted})",
                lost.join(", ")
            );
        }
        previous = outcome.failure.clone();
        outcome = launch_until_done(spec, LaunchKind::Relaunch, shared)?;
    }
    if outcome.code != 0 && outcome.stopped_by.is_none() && restarts == auto_restart {
        note_failure(spec, &outcome, shared.mark.load(Ordering::SeqCst));
        if let Some(cancel) = &outcome.cancelled {
            let why = if auto_restart == 0 {
                "no --auto-restart".to_owned()
            } else {
                format!("--auto-restart {auto_restart} used up")
            };
            log::error!(
                "{cancel}: the job ended ({} exit {}) and is not restarted ({why})",
                spec.launcher().program(),
                outcome.code
            );
        }
    }
    Ok(outcome.code)
}

/// Says how the job ended: Slurm cancelled its step, or the rank that died first, its
/// host and how, as far as the launcher's messages and the run directory tell.
fn report_failure(spec: &RunSpec, outcome: &LaunchOutcome) {
    let program = spec.launcher().program();
    if let Some(cancel) = &outcome.cancelled {
        log::warn!("{cancel}: the job ended ({program} exit {})", outcome.code);
        return;
    }
    match &outcome.failure {
        Some(failure) => log::warn!("{failure}: the job ended ({program} exit {})", outcome.code),
        None => log::warn!(
            "the job ended ({program} exit {}); {program} named no rank that died",
            outcome.code
        ),
    }
}

/// Records the rank whose death ended the launch whose process events start at `mark`
/// in `processes.csv`: a `killed` row (by a signal) or a `died` row (an exit code),
/// with its process, host and iteration as far as they are known; when Slurm
/// cancelled the launch's step, a `cancelled` row for each rank that had not ended.
fn note_failure(spec: &RunSpec, outcome: &LaunchOutcome, mark: u64) {
    if outcome.cancelled.is_some() {
        note_cancelled(spec, mark);
        return;
    }
    let Some(failure) = &outcome.failure else {
        return;
    };
    let event = match failure.ending {
        super::rank_failure::Ending::Signal(_) => "killed",
        super::rank_failure::Ending::ExitCode(_) => "died",
    };
    crate::run_dir::record::ProcessRow {
        rank: failure.rank,
        pid: crate::run_dir::record::pid_of_rank(&spec.run_dir, mark, failure.rank).unwrap_or(0),
        node: failure.host.as_deref().unwrap_or(""),
        core: None,
        event,
        cpus: "",
        epoch: None,
        iteration: failure.iteration,
        level: None,
    }
    .append(&spec.run_dir);
}

/// A `cancelled` row in `processes.csv` for each rank of the launch whose process events
/// start at `mark` that had not ended when Slurm cancelled its step: its process, node
/// and iteration as far as they are known.
fn note_cancelled(spec: &RunSpec, mark: u64) {
    use crate::run_dir::record;
    let run_dir = &spec.run_dir;
    let ranks = unended_ranks(run_dir, mark, spec.ranks).unwrap_or_default();
    for rank in ranks {
        let node = record::node_of_rank(run_dir, mark, rank).unwrap_or_default();
        record::ProcessRow {
            rank,
            pid: record::pid_of_rank(run_dir, mark, rank).unwrap_or(0),
            node: &node,
            core: None,
            event: "cancelled",
            cpus: "",
            epoch: None,
            iteration: record::iteration_mark(run_dir, rank),
            level: None,
        }
        .append(run_dir);
    }
}

/// Why a failed job is not restarted automatically, if it is not: no complete
/// checkpoint to restart from, or the same rank ending the same way at the same
/// iteration as before the last restart (`previous`).
fn not_restartable(
    spec: &RunSpec,
    outcome: &LaunchOutcome,
    previous: Option<&RankFailure>,
) -> Option<String> {
    if let (Some(now), Some(before)) = (&outcome.failure, previous) {
        if now.repeats(before) {
            return Some(format!(
                "{now} again after a restart: probably a failure of the application itself, not of a host"
            ));
        }
    }
    if spec.ckpt_local.is_some() {
        // The node-local directories lie on the hosts, out of this process's sight:
        // the ranks find out whether an epoch is whole.
        return None;
    }
    let complete = crate::checkpoint::inspect(&spec.ckpt_dir, false)
        .is_ok_and(|r| r.epochs().any(|e| e.is_complete()));
    (!complete).then(|| format!("{} holds no complete checkpoint", spec.ckpt_dir.display()))
}

/// Launches, and launches again from the newest checkpoint each time the ranks ask for
/// it ([`RELAUNCH_REQUEST`]: a migration the MPI implementation could not carry out by
/// spawning, or a spawn that hung) or the stall watch stopped the job. After a stall
/// the hosts of the allocation are probed first: a host that died without its
/// launcher saying so (under srun, a node whose step daemon was killed with its ranks)
/// stalls the job, and must not be launched on again.
fn launch_until_done(
    spec: &mut RunSpec,
    kind: LaunchKind,
    shared: &Arc<LaunchShared>,
) -> Result<LaunchOutcome, LaunchError> {
    let request = spec.run_dir.join(RELAUNCH_REQUEST);
    let _ = std::fs::remove_file(&request);
    let mut outcome = launch_shared(spec, kind, shared)?;
    while outcome.stopped_by.is_none() && outcome.misplaced.is_none() {
        let Ok(why) = std::fs::read_to_string(&request) else {
            break;
        };
        let _ = std::fs::remove_file(&request);
        log::warn!(
            "relaunching the job from its newest complete checkpoint, placed for the current availability ({})",
            why.trim()
        );
        if why.starts_with(STALL_REASON) {
            leave_lost_hosts_out(spec, &outcome.lost_hosts)?;
        }
        outcome = launch_shared(spec, LaunchKind::Relaunch, shared)?;
    }
    if let Some(misplaced) = outcome.misplaced {
        return Err(LaunchError::Misplaced {
            what: misplaced.to_string(),
            program: spec.launcher().program(),
            run_dir: spec.run_dir.clone(),
        });
    }
    Ok(outcome)
}

/// One launch, after releasing the hosts that wait for it and taking the hosts released
/// so far into `spec`.
fn launch_shared(
    spec: &mut RunSpec,
    kind: LaunchKind,
    shared: &Arc<LaunchShared>,
) -> Result<LaunchOutcome, LaunchError> {
    if let (Some(settings), Some(allocation)) = (&spec.rms, &spec.allocation) {
        spec.released_hosts = shared.release_waiting(settings, allocation, &spec.run_dir);
    }
    launch_once(spec, kind, shared)
}

/// Hosts of the allocation lost since the last launch: those that do not answer the
/// probe; with probing off ([`super::probe::ENV_PROBE_AGENT`] `none`), those named
/// in `reported` (the launcher's messages). Single-host mode: none.
fn newly_lost(spec: &RunSpec, reported: &[String], probe: &HostProbe) -> Vec<String> {
    let Some(allocation) = &spec.allocation else {
        return Vec::new();
    };
    let candidates = spec.usable_hosts(allocation);
    if probe.agent().is_empty() {
        return candidates
            .into_iter()
            .filter(|h| reported.contains(h))
            .collect();
    }
    probe.unreachable(&candidates)
}

/// One launch of `kind`, watched.
pub fn launch_once(
    spec: &RunSpec,
    kind: LaunchKind,
    shared: &Arc<LaunchShared>,
) -> Result<LaunchOutcome, LaunchError> {
    let mut cmd = prepare(spec, kind)?;
    supervise(&mut cmd, spec, Arc::clone(shared))
}

fn supervise(
    cmd: &mut Command,
    spec: &RunSpec,
    shared: Arc<LaunchShared>,
) -> Result<LaunchOutcome, LaunchError> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped());
    let launcher = spec.launcher();
    let mark = processes_mark(&spec.run_dir);
    shared.mark.store(mark, Ordering::SeqCst);
    let launch_error = |source| LaunchError::Launcher {
        program: launcher.program(),
        source,
    };
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(LaunchError::Signals)?;
    let handle = signals.handle();
    let job_env: Vec<(OsString, OsString)> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let mut child = cmd.spawn().map_err(launch_error)?;
    let pid = child.id() as i32;
    let received = Arc::new(AtomicI32::new(0));
    let running = Arc::new(AtomicBool::new(true));
    // The launcher gets the signal while it runs; the replacement launches are
    // stopped by the watch thread.
    let forwarder = {
        let (received, running) = (Arc::clone(&received), Arc::clone(&running));
        std::thread::spawn(move || {
            for signal in signals.forever() {
                received.store(signal, Ordering::SeqCst);
                log::warn!("signal {signal} received: stopping the job");
                if running.load(Ordering::SeqCst) {
                    stop_launcher(launcher, pid, signal);
                }
            }
        })
    };
    let lost = Arc::new(Mutex::new(Vec::<String>::new()));
    let clues = Arc::new(Mutex::new(FailureClues::default()));
    let reader = child.stderr.take().map(|stderr| {
        let lost = Arc::clone(&lost);
        let clues = Arc::clone(&clues);
        let hosts = spec
            .allocation
            .as_ref()
            .map(|a| spec.usable_hosts(a))
            .unwrap_or_default();
        std::thread::spawn(move || scan_stderr(stderr, launcher, &hosts, &lost, &clues))
    });
    let stdout_reader = child.stdout.take().map(|stdout| {
        let clues = Arc::clone(&clues);
        std::thread::spawn(move || scan_stdout(stdout, launcher, &clues))
    });
    let succeeded = Arc::new(AtomicBool::new(false));
    let misplaced = Arc::new(Mutex::new(None::<Misplaced>));
    let progress = watch_progress(
        spec,
        pid,
        ReplacementLaunches::new(spec, job_env),
        shared,
        LauncherState {
            running: Arc::clone(&running),
            succeeded: Arc::clone(&succeeded),
            received: Arc::clone(&received),
        },
        Arc::clone(&misplaced),
    );
    let status = child.wait().map_err(launch_error)?;
    end_what_the_launcher_left(pid as u32, launcher);
    succeeded.store(status.success(), Ordering::SeqCst);
    running.store(false, Ordering::SeqCst);
    let replacement_failure = progress.join().ok().flatten();
    handle.close();
    let _ = forwarder.join();
    if let Some(r) = reader {
        let _ = r.join();
    }
    if let Some(r) = stdout_reader {
        let _ = r.join();
    }
    let signal = received.load(Ordering::SeqCst);
    let lost_hosts = lost.lock().map(|l| l.clone()).unwrap_or_default();
    let code = match (
        job_exit_code(status, spec, mark, &lost_hosts),
        replacement_failure,
    ) {
        (0, Some(failed)) => failed,
        (code, _) => code,
    };
    let clues = clues.lock().map(|c| c.clone()).unwrap_or_default();
    let failed = code != 0 && signal == 0;
    let cancelled = clues.cancelled().filter(|_| failed).cloned();
    let failure = (failed && cancelled.is_none())
        .then(|| RankFailure::from_clues(&clues, &spec.run_dir, mark))
        .flatten();
    Ok(LaunchOutcome {
        code,
        lost_hosts,
        stopped_by: (signal != 0).then_some(signal),
        failure,
        misplaced: misplaced.lock().ok().and_then(|m| m.clone()),
        cancelled,
    })
}

/// How long `rankmig run` waits for the processes a launcher left in its process group
/// to end once killed.
const LEFTOVER_PATIENCE: Duration = Duration::from_secs(10);

/// Kills what the launcher `pgid` left running in its process group (a replacement
/// stopped by a signal when a rank failed, say), so that the job leaves no process of
/// its own once `rankmig run` is done with the launch; logs what was found.
fn end_what_the_launcher_left(pgid: u32, launcher: &dyn Launcher) {
    let left = super::process_tree::running_in_group(pgid);
    if left.is_empty() {
        return;
    }
    log::warn!(
        "{} exited and left {} process(es) of the job running ({}): killed",
        launcher.program(),
        left.len(),
        left.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let still = end_group(pgid, LEFTOVER_PATIENCE);
    if !still.is_empty() {
        log::error!("process(es) {still:?} of the job did not end after SIGKILL");
    }
}

/// What the watch thread is told of the job's own launcher: whether it still runs,
/// whether it exited 0, and the signal `rankmig run` received and forwarded (0: none).
struct LauncherState {
    running: Arc<AtomicBool>,
    succeeded: Arc<AtomicBool>,
    received: Arc<AtomicI32>,
}

/// The thread that, every [`PROGRESS_POLL`], logs the ranks' progress and watches the
/// launch: the run directory, the replacement launches rank 0 asks for, spawns,
/// misplaced ranks (noted in `misplaced`, the job stopped), stalls (the job
/// relaunched) and hosts to hand back to Slurm (the job stopped to release them).
///
/// It goes on while the job's launcher runs, and after it exited 0 while replacement
/// launches still run (the job's ranks may all have moved into them); after it failed,
/// the replacement launches are killed. One last round of logs then. Returns the exit
/// code of the first replacement launch that failed, if one did.
fn watch_progress(
    spec: &RunSpec,
    pid: i32,
    mut replacements: ReplacementLaunches,
    shared: Arc<LaunchShared>,
    state: LauncherState,
    misplaced: Arc<Mutex<Option<Misplaced>>>,
) -> std::thread::JoinHandle<Option<i32>> {
    let launcher = spec.launcher();
    let misplaced_from = misplaced_mark(&spec.run_dir);
    let mut reader = ProgressReader::new(&spec.run_dir);
    let ranks = spec.ranks;
    let mut spawn_watch = SpawnWatch::new(spec);
    let mut stall_watch = (spec.stall_timeout_ms != Some(0)).then(|| {
        let fixed = spec.stall_timeout_ms.map(Duration::from_millis);
        StallWatch::new(&spec.run_dir, spec.ranks, fixed)
    });
    let run_dir = spec.run_dir.clone();
    let mut run_dir_watch = RunDirWatch::new(spec);
    let mut releasing = false;
    let launch_mark = shared.mark.load(Ordering::SeqCst);
    let mut restart_told = false;
    std::thread::spawn(move || {
        // Stops the whole job: its launcher while it runs (with `signal`, or killed with
        // every process below it when `signal` is SIGKILL, unless its ranks would outlive
        // it: then SIGTERM first), and the replacement launches.
        let stop_job = |replacements: &mut ReplacementLaunches, signal: i32| {
            if state.running.load(Ordering::SeqCst) {
                if signal == SIGKILL && !launcher.ranks_outlive_a_killed_launcher() {
                    kill_tree(pid as u32);
                } else if signal == SIGKILL {
                    stop_launcher(launcher, pid, SIGTERM);
                } else {
                    stop_launcher(launcher, pid, signal);
                }
            }
            replacements.kill_all();
        };
        let mut forwarded = false;
        loop {
            let launcher_ended = !state.running.load(Ordering::SeqCst);
            if launcher_ended && !state.succeeded.load(Ordering::SeqCst) {
                replacements.kill_all();
            }
            if state.received.load(Ordering::SeqCst) != 0 && !forwarded {
                forwarded = true;
                replacements.kill_all();
            }
            let failed_replacements = replacements.check();
            let last_round = launcher_ended && replacements.is_empty();
            let (lines, nothing_counted) = reader.new_lines_and_warning(ranks);
            for line in lines {
                log::info!("{line}");
            }
            if let Some(warning) = nothing_counted {
                log::warn!("{warning}");
            }
            if let Some(what) = run_dir_watch.check() {
                log::error!("{what}");
            }
            if !restart_told {
                if let Some(from) = restarted_from(&run_dir, launch_mark, ranks) {
                    restart_told = true;
                    let level = from
                        .level
                        .map(|l| format!(", read from the {l}"))
                        .unwrap_or_default();
                    log::info!(
                        "restarted from checkpoint epoch {}, iteration {} (every rank{level})",
                        from.epoch,
                        from.iteration
                    );
                }
            }
            if last_round {
                break;
            }
            if let Some(why) = failed_replacements {
                log::error!("{why}: stopping the job");
                stop_job(&mut replacements, SIGTERM);
            }
            if spawn_watch.check() {
                stop_job(&mut replacements, SIGKILL);
            }
            if let Some(found) = stop_if_misplaced(&run_dir, misplaced_from, &misplaced) {
                log::error!("{found}: stopping the job");
                stop_job(&mut replacements, SIGTERM);
            }
            if let Some(stall) = stall_watch.as_mut().and_then(StallWatch::check) {
                stall_watch = None;
                relaunch_after_stall(&run_dir, &stall);
                stop_job(&mut replacements, SIGKILL);
            }
            let release = shared.waiting_release();
            if !release.is_empty() && !releasing {
                releasing = true;
                let why = format!("handing {} back to Slurm", release.join(","));
                request_relaunch(&run_dir, &why);
                stop_job(&mut replacements, SIGTERM);
            }
            std::thread::sleep(PROGRESS_POLL);
        }
        replacements.first_failure()
    })
}

/// The exit code of a launch that ended with `status`: the launcher's own, 128 + the
/// signal that ended it, or [`INCOMPLETE_EXIT`] when it exited 0 though a rank of this
/// launch (records after `mark`) did not end or a host was reported lost.
fn job_exit_code(
    status: std::process::ExitStatus,
    spec: &RunSpec,
    mark: u64,
    lost_hosts: &[String],
) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    if code != 0 {
        return code;
    }
    // Open MPI 5.0.11's prterun exits 0 when a host's daemon is lost mid-run.
    let unended = unended_ranks(&spec.run_dir, mark, spec.ranks).unwrap_or_default();
    if unended.is_empty() && lost_hosts.is_empty() {
        return 0;
    }
    log::warn!(
        "{} exited 0 but the job did not complete: {} rank(s) did not end{}",
        spec.launcher().program(),
        unended.len(),
        if lost_hosts.is_empty() {
            String::new()
        } else {
            format!(", host(s) {} reported lost", lost_hosts.join(", "))
        }
    );
    INCOMPLETE_EXIT
}

/// Set to `warn`, a rank not on its planned host is only reported (its own warning), and
/// the job runs on: for clusters whose node names are not their host names (a Slurm
/// `NodeName` other than its `NodeHostname`), where every rank looks misplaced.
pub const ENV_MISPLACED: &str = "RANKMIG_MISPLACED";

/// The first rank of this launch noted in `run_dir` as not on its planned host (notes
/// after `mark`), once: kept in `found`, and returned only the first time. None when
/// [`ENV_MISPLACED`] is `warn`.
fn stop_if_misplaced(
    run_dir: &Path,
    mark: u64,
    found: &Mutex<Option<Misplaced>>,
) -> Option<Misplaced> {
    if std::env::var(ENV_MISPLACED).is_ok_and(|v| v == "warn") {
        return None;
    }
    let mut found = found.lock().ok()?;
    if found.is_some() {
        return None;
    }
    let first = misplaced_after(run_dir, mark).into_iter().next()?;
    *found = Some(first.clone());
    Some(first)
}

/// Stops a job whose spawn has not completed within the spawn timeout, and asks for
/// its launch again from the checkpoint the ranks committed before the spawn (see
/// [`spawn_watch`]).
struct SpawnWatch {
    run_dir: PathBuf,
    /// `None`: not watched (`--spawn-timeout 0`, or already acted on).
    timeout: Option<Duration>,
}

impl SpawnWatch {
    fn new(spec: &RunSpec) -> Self {
        // A marker left by an earlier launch that was stopped is not this one's.
        spawn_watch::end(&spec.run_dir);
        Self {
            run_dir: spec.run_dir.clone(),
            timeout: (spec.spawn_timeout_ms > 0)
                .then(|| Duration::from_millis(spec.spawn_timeout_ms)),
        }
    }

    /// Acts once, when the spawn under way is overdue: asks for the job's launch
    /// again; true then, and the caller stops the job.
    fn check(&mut self) -> bool {
        let Some(timeout) = self.timeout else {
            return false;
        };
        let Some(what) = spawn_watch::overdue(&self.run_dir, timeout) else {
            return false;
        };
        self.timeout = None;
        let why = format!(
            "the spawn of {what} has not completed after {} s",
            timeout.as_secs_f64()
        );
        log::warn!("{why}: stopping the job");
        request_relaunch(&self.run_dir, &why);
        spawn_watch::end(&self.run_dir);
        true
    }
}

/// Reports a stall, records it, and asks for the job's launch again from its newest
/// complete checkpoint (the caller then stops the job).
fn relaunch_after_stall(run_dir: &Path, stall: &Stall) {
    log::warn!("{stall}: stopping the job");
    stall_watch::record(run_dir, stall);
    request_relaunch(run_dir, &format!("{STALL_REASON}{stall}"));
}

/// How the reason of a relaunch after a stall starts.
const STALL_REASON: &str = "stall: ";

/// Before a relaunch after a stall: the hosts of the allocation that do not answer a
/// probe (or, with probing off, that the launcher `reported` lost) leave the job, said.
fn leave_lost_hosts_out(spec: &mut RunSpec, reported: &[String]) -> Result<(), LaunchError> {
    let probe = HostProbe::from_env(spec.launcher());
    let lost = newly_lost(spec, reported, &probe);
    if lost.is_empty() {
        return Ok(());
    }
    log::warn!(
        "host(s) {} lost (no answer to a probe): relaunching without them",
        lost.join(", ")
    );
    spec.lost_hosts.extend(lost);
    save_spec(spec)
}

/// Stops the launcher `pid` with `signal`, so it ends its daemons and ranks itself
/// (under Slurm, its job step); after [`STOP_GRACE`], it and every process below it
/// are killed.
fn stop_launcher(launcher: &dyn Launcher, pid: i32, signal: i32) {
    // SAFETY: kill(2) on the pid of our own child.
    unsafe { libc::kill(pid, signal) };
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline && alive(pid) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive(pid) {
        log::warn!(
            "{} did not stop the job: killing every process of it",
            launcher.program()
        );
        kill_tree(pid as u32);
    }
}

/// Copies the launcher's stderr to ours and collects the hosts its failure messages
/// name and what they say of the rank that died first.
fn scan_stderr(
    stderr: impl std::io::Read,
    launcher: &dyn Launcher,
    hosts: &[String],
    lost: &Mutex<Vec<String>>,
    clues: &Mutex<FailureClues>,
) {
    let mut out = std::io::stderr();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        let _ = writeln!(out, "{line}");
        if let Ok(mut c) = clues.lock() {
            c.read(launcher, &line);
        }
        if let Some(host) = launcher.lost_host(&line, hosts) {
            if let Ok(mut l) = lost.lock() {
                if !l.contains(&host) {
                    l.push(host);
                }
            }
        }
    }
}

/// Copies the launcher's stdout to ours as it comes, line by line, and reads what it
/// says of a rank that died (a launcher may write its failure block there);
/// the launcher's summary lines are read, not passed on.
fn scan_stdout(stdout: impl std::io::Read, launcher: &dyn Launcher, clues: &Mutex<FailureClues>) {
    let mut input = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        if let Ok(mut c) = clues.lock() {
            c.read(launcher, text.trim_end());
        }
        if !launcher.is_summary_line(&text) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&line);
            let _ = out.flush();
        }
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
}
