//! The replacement processes `rankmig run` starts when rank 0 asks
//! ([`crate::run_dir::launch_request`]): one more launcher process per migration,
//! beside the job's own.
//!
//! A request found in the run directory is started at once with the launcher of the
//! job's implementation ([`super::launch_command::replacement_command`]). A launch
//! that ends, or cannot be started, before its processes said they are ready is
//! reported to rank 0 ([`crate::run_dir::launch_request::mark_failed`]): the
//! migration fails and nobody moves. A launch that ends with an error after its
//! processes joined the job means ranks of the job died: [`ReplacementLaunches::check`]
//! says so and the job is stopped as after any rank's death. The job runs until its
//! own launcher and every replacement launch have ended (its ranks may all have moved
//! into replacement launches); when the job is stopped, or its own launcher fails,
//! the replacement launches are killed with every process below them.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ExitStatus, Stdio};

use super::launch::RunSpec;
use super::launch_command::replacement_command;
use super::process_tree::{end_group, kill_tree};
use crate::launcher::Launcher;
use crate::run_dir::launch_request::{self, LaunchRequest};

/// One replacement launch under way.
struct Running {
    request: LaunchRequest,
    child: Child,
}

/// The replacement launches of one launch of the job.
pub struct ReplacementLaunches {
    spec: RunSpec,
    job_env: Vec<(OsString, OsString)>,
    running: Vec<Running>,
    /// The exit code of the first launch that failed after its processes joined.
    failure: Option<i32>,
}

impl ReplacementLaunches {
    /// For the job launched with `spec`, whose launcher's variables are `job_env`
    /// (given again to the replacements).
    pub fn new(spec: &RunSpec, job_env: Vec<(OsString, OsString)>) -> Self {
        Self {
            spec: spec.clone(),
            job_env,
            running: Vec::new(),
            failure: None,
        }
    }

    /// Starts the request waiting in the run directory, if any, and looks at the
    /// launches under way. Returns why the job must stop, when a launch whose
    /// processes had joined the job ended with an error.
    pub fn check(&mut self) -> Option<String> {
        self.start_requested();
        let mut stop = None;
        let mut failed = Vec::new();
        let run_dir = self.spec.run_dir.clone();
        let program = self.spec.launcher().program();
        self.running.retain_mut(|r| {
            let Ok(Some(status)) = r.child.try_wait() else {
                return true;
            };
            let joined = launch_request::is_ready(&run_dir, &r.request.id);
            let migration = r.request.migration;
            match (status.success(), joined) {
                (_, false) => {
                    let why = format!(
                        "{program} exited ({status}) before the replacements were ready"
                    );
                    log::warn!("migration {migration}: {why}");
                    launch_request::mark_failed(&run_dir, &r.request.id, &why);
                }
                (false, true) => {
                    failed.push(status);
                    stop = Some(format!(
                        "the launch of migration {migration}'s replacement processes ended ({status}): ranks of the job died"
                    ));
                }
                (true, true) => {}
            }
            false
        });
        for status in failed {
            self.note_failure(status);
        }
        stop
    }

    /// Starts the request waiting in the run directory, or says why it cannot.
    fn start_requested(&mut self) {
        let run_dir = &self.spec.run_dir;
        let request = match launch_request::take(run_dir) {
            None => return,
            Some(Err(e)) => {
                log::error!("cannot start replacement processes: {e}");
                return;
            }
            Some(Ok(r)) => r,
        };
        let path = launch_request::taken_path(run_dir, &request.id);
        let started = replacement_command(&self.spec, &request, &path, &self.job_env)
            .map_err(|e| e.to_string())
            .and_then(|mut cmd| {
                use std::os::unix::process::CommandExt;
                cmd.process_group(0)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("{}: {e}", self.spec.launcher().program()))
            });
        match started {
            Ok(mut child) => {
                log::info!(
                    "migration {}: starting {} replacement process(es) with {}",
                    request.migration,
                    request.count,
                    self.spec.launcher().program()
                );
                copy_output(&mut child, self.spec.launcher());
                self.running.push(Running { request, child });
            }
            Err(why) => {
                log::warn!("migration {}: {why}", request.migration);
                launch_request::mark_failed(run_dir, &request.id, &why);
            }
        }
    }

    /// True when no replacement launch runs.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Kills every replacement launch that still runs, with every process below it
    /// (the job is being stopped, or its launcher failed).
    pub fn kill_all(&mut self) {
        for r in &mut self.running {
            kill_tree(r.child.id());
            let _ = r.child.wait();
            end_group(r.child.id(), std::time::Duration::from_secs(10));
        }
        self.running.clear();
    }

    /// The exit code of the first replacement launch that ended with an error after
    /// its processes had joined the job.
    pub fn first_failure(&self) -> Option<i32> {
        self.failure
    }

    fn note_failure(&mut self, status: ExitStatus) {
        use std::os::unix::process::ExitStatusExt;
        if self.failure.is_none() && !status.success() {
            self.failure = Some(
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            );
        }
    }
}

/// Copies a launch's output to ours, line by line, leaving out the launcher's summary
/// lines ([`Launcher::is_summary_line`]).
fn copy_output(child: &mut Child, launcher: &'static dyn Launcher) {
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if !launcher.is_summary_line(&line) {
                    let _ = writeln!(std::io::stdout().lock(), "{line}");
                }
            }
        });
    }
    if let Some(err) = child.stderr.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        });
    }
}
