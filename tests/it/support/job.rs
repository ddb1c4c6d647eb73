//! A `rankmig run` job of a test: waiting on it with a bound, killing what is left of
//! it, and running a scenario once more when Open MPI hung.

use std::fs;
use std::path::Path;
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// Writes the availability file atomically (as an editor saving would).
pub fn set_availability(dir: &Path, text: &str) {
    let tmp = dir.join("av.tmp");
    fs::write(&tmp, text).expect("write availability");
    fs::rename(&tmp, dir.join("av")).expect("rename availability");
}

/// The job stopped making progress: Open MPI 4.1.4's `MPI_Comm_spawn` now and then
/// never returns (a new process stays in PMIx client init), a known upstream bug of
/// Open MPI 4.1 with an external PMIx 4 such as Debian's (openpmix/openpmix#2735:
/// "Intermittent spawn hang in 4.x series", not fixed for 4.1), more often on a loaded
/// machine.
#[derive(Debug)]
pub struct Hung(pub String);

/// Waits until `ready()` holds, at most 90 seconds.
pub fn wait_for(what: &str, ready: impl Fn() -> bool) -> Result<(), Hung> {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > Duration::from_secs(90) {
            return Err(Hung(format!("timed out waiting for {what}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Attempts of a scenario whose MPI job hangs ([`Hung`]): a loaded CI machine once
/// hung the same scenario twice in a row.
const ATTEMPTS: usize = 3;

/// Runs `scenario` again when the MPI job hung (at most [`ATTEMPTS`] in all), and says
/// so; a failed assertion is never retried.
pub fn retry_on_hang<T>(scenario: impl Fn() -> Result<T, Hung>) -> T {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match scenario() {
            Ok(value) => return value,
            Err(Hung(why)) if attempt < ATTEMPTS => {
                eprintln!("the MPI job hung ({why}); killed it, running the scenario again");
            }
            Err(Hung(why)) => panic!("the MPI job hung {ATTEMPTS} times: {why}"),
        }
    }
}

/// A running `rankmig run`; dropping it kills what is left of the job.
pub struct Job(pub Option<Child>);

impl Job {
    /// Waits for the run to end, at most three minutes.
    pub fn finish(mut self) -> Result<Output, Hung> {
        let mut child = self.0.take().expect("running");
        let start = Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if start.elapsed() > Duration::from_secs(180) {
                kill_tree(&mut child);
                return Err(Hung("the run did not end".into()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(child.wait_with_output().expect("rankmig run ends"))
    }
}

impl Drop for Job {
    /// Kills what is left of the job and prints the end of what it wrote on its
    /// standard error, so a job that hung says where it stood.
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            kill_tree(child);
            if let Some(text) = child.stderr.take().and_then(read_within_seconds) {
                let lines: Vec<&str> = text.lines().collect();
                let tail = &lines[lines.len().saturating_sub(40)..];
                eprintln!("the end of the job's standard error:\n{}", tail.join("\n"));
            }
        }
    }
}

/// What `pipe` holds until its writers end, or `None` after 5 s (a process left
/// holding it open).
fn read_within_seconds(mut pipe: impl std::io::Read + Send + 'static) -> Option<String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        let _ = send.send(text);
    });
    receive.recv_timeout(Duration::from_secs(5)).ok()
}

/// Kills `rankmig run` and every process below it (its launchers and the ranks, each
/// in its own process group), and reaps it.
pub fn kill_tree(child: &mut Child) {
    rankmig::supervisor::process_tree::kill_tree(child.id());
    let _ = child.wait();
}
