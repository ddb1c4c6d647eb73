//! `rankmig run --rms slurm`: the supervisor follows what Slurm says about the job's
//! nodes and writes it as the availability the ranks watch.
//!
//! Every check interval [`RmsWatch::poll`] asks Slurm ([`crate::rms::slurm`]) for the
//! state of the allocation's nodes and the maintenance reservations, computes each
//! node's offer ([`crate::rms::node_offers`]) and, when a node's core count changed,
//! replaces `RUN_DIR/rms-availability` in one rename (written and synced beside it
//! first), so the ranks never read half a file. Each change is logged with the node and
//! Slurm's reason (`n3 drained: fan failure`); the ranks then log what moved. A Slurm
//! command that fails or hangs is logged once, and the file stays as it was: the job
//! keeps its placement.
//!
//! With `--rms-release`, a node Slurm wants back that no rank runs on any more is
//! released from the job's allocation (`scontrol update JobId=… NodeList=…`); it is then
//! never used again by this run ([`RunSpec::released_hosts`]). Slurm ends the job's
//! processes on a released node, the launcher's daemon among them, which ends or breaks
//! the launch (measured: README, "Running under Slurm"). So the supervisor stops the
//! launch, releases the node, and launches the job again from its newest complete
//! checkpoint.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::launch::{LaunchError, RunSpec};
use crate::allocation::Allocation;
use crate::availability::{Availability, AvailabilityFormat};
use crate::own_files::write_atomic;
use crate::rms::slurm::Slurm;
use crate::rms::{
    RMS_AVAILABILITY, RmsError, RmsOffer, RmsSettings, availability_text, node_offers, unix_now,
};
use crate::run_dir::record::nodes_with_ranks;

/// The availability file `rankmig run --rms` writes in `run_dir`.
pub fn rms_availability_path(run_dir: &Path) -> PathBuf {
    run_dir.join(RMS_AVAILABILITY)
}

/// What the supervisor's launches and the watch share.
#[derive(Debug, Default)]
pub struct LaunchShared {
    /// Where the process events of the current launch start in `processes.csv`.
    pub mark: AtomicU64,
    /// Hosts released to the resource manager so far.
    pub released: Mutex<Vec<String>>,
    /// Hosts no rank runs on any more that wait for the next launch to be released
    /// (the launch under way has a daemon there, whose end would end it).
    pub to_release: Mutex<Vec<String>>,
    /// Hosts whose release failed: not asked again.
    pub unreleasable: Mutex<Vec<String>>,
    /// Slurm has said it will refuse every further release of this job: none is
    /// attempted any more (each would cost a relaunch for nothing).
    pub releases_refused: AtomicBool,
}

impl LaunchShared {
    /// The hosts waiting to be released, if any.
    pub fn waiting_release(&self) -> Vec<String> {
        locked_clone(&self.to_release)
    }

    /// Releases the waiting hosts of job `settings.job_id` (between two launches,
    /// when no process of the job runs there) and returns the hosts released so far.
    pub fn release_waiting(
        &self,
        settings: &RmsSettings,
        allocation: &Allocation,
        run_dir: &Path,
    ) -> Vec<String> {
        let waiting =
            std::mem::take(&mut *self.to_release.lock().unwrap_or_else(|e| e.into_inner()));
        let mut released = self.released.lock().unwrap_or_else(|e| e.into_inner());
        if !waiting.is_empty() {
            let keep: Vec<String> = allocation
                .host_names()
                .into_iter()
                .filter(|h| !released.contains(h) && !waiting.contains(h))
                .collect();
            let resized_before = !released.is_empty();
            match release_with_retries(settings, &keep, run_dir, resized_before) {
                Ok(()) => {
                    log::info!(
                        "slurm: released {} from job {}; the job keeps {}",
                        waiting.join(","),
                        settings.job_id,
                        keep.join(",")
                    );
                    released.extend(waiting);
                }
                Err(e) if resized_before && refused_after_a_resize(&e) => {
                    log::warn!(
                        "slurm: cannot release {}: Slurm refuses every update of job {} since it released nodes from it once (Slurm 22.05 without accounting storage, slurmdbd, never clears that state); the job keeps the node(s), unused, and hands none back any more",
                        waiting.join(","),
                        settings.job_id
                    );
                    self.releases_refused.store(true, Ordering::SeqCst);
                    if let Ok(mut u) = self.unreleasable.lock() {
                        u.extend(waiting);
                    }
                }
                Err(e) => {
                    log::warn!("slurm: cannot release {}: {e}", waiting.join(","));
                    if let Ok(mut u) = self.unreleasable.lock() {
                        u.extend(waiting);
                    }
                }
            }
        }
        released.clone()
    }
}

/// Times a release is tried, [`RELEASE_RETRY_PAUSE`] apart: Slurm refuses a job update
/// for a moment after some changes ("Job update not available right now, the DB index
/// is being set, try again in a bit", seen on the emulated Slurm).
const RELEASE_ATTEMPTS: u32 = 6;

/// See [`RELEASE_ATTEMPTS`].
const RELEASE_RETRY_PAUSE: Duration = Duration::from_secs(2);

/// Slurm's answer to an update of a job whose accounting record is being written.
/// Slurm 22.05 marks a job so when it resizes it and, without accounting storage,
/// never unmarks it: after one release, every update of the job gets this answer.
const DB_INDEX_BEING_SET: &str = "the DB index is being set";

/// True when `e` is Slurm's [`DB_INDEX_BEING_SET`] answer.
fn refused_after_a_resize(e: &RmsError) -> bool {
    e.to_string().contains(DB_INDEX_BEING_SET)
}

/// Shrinks the job to `keep`, trying again while Slurm refuses; not again when the job
/// was `resized_before` and Slurm gives the answer that then never changes.
fn release_with_retries(
    settings: &RmsSettings,
    keep: &[String],
    run_dir: &Path,
    resized_before: bool,
) -> Result<(), RmsError> {
    let mut attempt = 1;
    loop {
        match Slurm.release(&settings.job_id, keep, run_dir) {
            Err(e) if resized_before && refused_after_a_resize(&e) => return Err(e),
            Err(e) if attempt < RELEASE_ATTEMPTS => {
                log::debug!("slurm: release attempt {attempt} failed: {e}");
                attempt += 1;
                std::thread::sleep(RELEASE_RETRY_PAUSE);
            }
            result => return result,
        }
    }
}

fn locked_clone(list: &Mutex<Vec<String>>) -> Vec<String> {
    list.lock().map(|l| l.clone()).unwrap_or_default()
}

/// Follows the resource manager for one run.
#[derive(Debug)]
pub struct RmsWatch {
    settings: RmsSettings,
    allocation: Allocation,
    run_dir: PathBuf,
    ranks: usize,
    shared: Arc<LaunchShared>,
    /// The offers last written (with the reasons of that time).
    written: Option<Vec<RmsOffer>>,
    /// The last failure reported (reported again only when it changes).
    failing: Option<String>,
}

impl RmsWatch {
    /// The watch of `spec`, which has `--rms` settings and an allocation.
    pub fn new(spec: &RunSpec, shared: Arc<LaunchShared>) -> Result<Self, LaunchError> {
        let (Some(settings), Some(allocation)) = (&spec.rms, &spec.allocation) else {
            return Err(LaunchError::Rms(RmsError::NotInJob("SLURM_JOB_NODELIST")));
        };
        if let Ok(mut released) = shared.released.lock() {
            released.clone_from(&spec.released_hosts);
        }
        Ok(Self {
            settings: settings.clone(),
            allocation: allocation.clone(),
            run_dir: spec.run_dir.clone(),
            ranks: spec.ranks,
            shared,
            written: None,
            failing: None,
        })
    }

    /// Asks Slurm and writes the availability when it changed. An error leaves the
    /// file as it was.
    pub fn poll(&mut self) -> Result<(), RmsError> {
        let offers = self.offers()?;
        // Written again also when it is gone (the run directory removed and put back).
        let file_gone = !rms_availability_path(&self.run_dir).exists();
        if file_gone
            || self
                .written
                .as_ref()
                .is_none_or(|w| cores_differ(w, &offers))
        {
            self.log_changes(&offers);
            let text = availability_text(&offers);
            write_atomic(&self.run_dir, RMS_AVAILABILITY, text.as_bytes()).map_err(|e| {
                RmsError::Write {
                    path: rms_availability_path(&self.run_dir),
                    reason: e.to_string(),
                }
            })?;
            self.written = Some(offers);
        }
        if self.settings.release {
            self.release_emptied_nodes()?;
        }
        Ok(())
    }

    /// Polls every `interval` until `stop` is set, reporting failures once.
    pub fn follow(mut self, interval: Duration, stop: &AtomicBool) {
        while !stop.load(Ordering::SeqCst) {
            match self.poll() {
                Ok(()) => {
                    if self.failing.take().is_some() {
                        log::info!("slurm answers again");
                    }
                }
                Err(e) => {
                    let message = e.to_string();
                    if self.failing.as_deref() != Some(&message) {
                        log::warn!("{message}: the job keeps its placement");
                        self.failing = Some(message);
                    }
                }
            }
            let mut slept = Duration::ZERO;
            while slept < interval && !stop.load(Ordering::SeqCst) {
                let step = Duration::from_millis(100).min(interval - slept);
                std::thread::sleep(step);
                slept += step;
            }
        }
    }

    fn offers(&self) -> Result<Vec<RmsOffer>, RmsError> {
        let cap = match &self.settings.cap {
            Some(path) => Some(Availability::load(path, AvailabilityFormat::Auto)?),
            None => None,
        };
        let statuses = Slurm.node_states(&self.allocation.host_names())?;
        let reservations = Slurm.reservations()?;
        let mut offers = node_offers(
            &self.allocation,
            &statuses,
            &reservations,
            cap.as_ref(),
            unix_now(),
            self.settings.lead_seconds,
        )?;
        let released = self.released();
        for offer in offers.iter_mut().filter(|o| released.contains(&o.name)) {
            offer.cores = 0;
        }
        Ok(offers)
    }

    fn released(&self) -> Vec<String> {
        locked_clone(&self.shared.released)
    }

    fn log_changes(&self, offers: &[RmsOffer]) {
        for offer in offers {
            let before = self
                .written
                .as_ref()
                .and_then(|w| w.iter().find(|o| o.name == offer.name));
            if before.is_some_and(|b| b.cores == offer.cores) {
                continue;
            }
            let had = before
                .map(|b| format!(" (had {})", b.cores))
                .unwrap_or_default();
            match (&offer.withdrawal, before) {
                (Some(why), _) => log::info!("slurm: {} {why}: offers 0 cores{had}", offer.name),
                (None, Some(_)) => log::info!(
                    "slurm: {} is usable again: offers {} cores{had}",
                    offer.name,
                    offer.cores
                ),
                (None, None) => {}
            }
        }
    }

    /// Asks for the release of the nodes Slurm wants back that no rank runs on, once
    /// every rank of the current launch has been seen: the supervisor then launches
    /// the job again without them and releases them in between
    /// ([`LaunchShared::release_waiting`]).
    fn release_emptied_nodes(&mut self) -> Result<(), RmsError> {
        let Some(written) = &self.written else {
            return Ok(());
        };
        if !self.shared.waiting_release().is_empty()
            || self.shared.releases_refused.load(Ordering::SeqCst)
        {
            return Ok(());
        }
        let mark = self.shared.mark.load(Ordering::SeqCst);
        let Some(busy) = nodes_with_ranks(&self.run_dir, mark, self.ranks) else {
            return Ok(());
        };
        let mut skip = self.released();
        skip.extend(locked_clone(&self.shared.unreleasable));
        let wanted: Vec<&RmsOffer> = written
            .iter()
            .filter(|o| o.withdrawal.is_some())
            .filter(|o| !busy.contains(&o.name) && !skip.contains(&o.name))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        for offer in &wanted {
            log::info!(
                "slurm: no rank runs on {} any more ({}): launching the job again without it from its newest complete checkpoint, to hand it back to Slurm",
                offer.name,
                offer
                    .withdrawal
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            );
        }
        if let Ok(mut waiting) = self.shared.to_release.lock() {
            waiting.extend(wanted.iter().map(|o| o.name.clone()));
        }
        Ok(())
    }
}

/// True when a node offers another number of cores in `new` than in `old` (a new
/// reason for an offer that stays 0, or a reservation coming nearer, is not a change:
/// rewriting the file for it would only delay the ranks' settle time).
fn cores_differ(old: &[RmsOffer], new: &[RmsOffer]) -> bool {
    old.len() != new.len()
        || old
            .iter()
            .zip(new)
            .any(|(a, b)| a.name != b.name || a.cores != b.cores)
}

/// Starts following the resource manager of `spec` on a thread of its own, after a
/// first poll that must succeed (the job cannot start without knowing its nodes).
/// Returns the flag that stops it and the thread.
pub fn start(
    spec: &RunSpec,
    shared: Arc<LaunchShared>,
) -> Result<(Arc<AtomicBool>, std::thread::JoinHandle<()>), LaunchError> {
    let mut watch = RmsWatch::new(spec, shared)?;
    std::fs::create_dir_all(&spec.run_dir).map_err(|source| LaunchError::RunDir {
        path: spec.run_dir.clone(),
        source,
    })?;
    watch.poll().map_err(LaunchError::Rms)?;
    let stop = Arc::new(AtomicBool::new(false));
    let interval = Duration::from_millis(spec.check_interval_ms.max(100));
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || watch.follow(interval, &flag));
    Ok((stop, thread))
}
