//! What `rankmig run` says while the job runs: a line at each launch, and a line per
//! reconfiguration as soon as the job has recorded it (what changed, which ranks moved
//! from where to where, the time of each phase).
//!
//! The ranks write their records to the run directory (`reconfigurations.jsonl`,
//! `placement-K.txt`); `rankmig run` reads them as they appear, so the lines come from
//! the process the user started, whatever the ranks' own logging.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::planner::Placement;

use super::launch::RunSpec;
use crate::run_dir::record::{Reconfiguration, read_reconfigurations};

/// "8 ranks on 4 hosts (h1:2 h2:2 h3:2 h4:2)": the ranks per node of a placement.
///
/// ```
/// use rankmig::planner::{Location, Placement};
/// let p = Placement::new(vec![
///     Location { node: "b".into(), core: 0 },
///     Location { node: "a".into(), core: 0 },
///     Location { node: "a".into(), core: 1 },
/// ]);
/// assert_eq!(rankmig::supervisor::progress::placement_summary(&p, "hosts"), "3 ranks on 2 hosts (a:2 b:1)");
/// ```
pub fn placement_summary(placement: &Placement, what: &str) -> String {
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for l in placement.locations() {
        *per_node.entry(l.node.as_str()).or_default() += 1;
    }
    let nodes: Vec<String> = per_node.iter().map(|(n, k)| format!("{n}:{k}")).collect();
    // "hosts" / "logical nodes" name several; one is "host" / "logical node".
    let what = match (per_node.len(), what.strip_suffix('s')) {
        (1, Some(one)) => one,
        _ => what,
    };
    format!(
        "{} ranks on {} {what} ({})",
        placement.len(),
        per_node.len(),
        nodes.join(" ")
    )
}

/// The line printed when a launch starts.
pub fn launch_line(spec: &RunSpec, placement: &Placement, restart: bool) -> String {
    let what = if spec.allocation.is_some() {
        "hosts"
    } else {
        "logical nodes"
    };
    let checks = if spec.check_every > 0 {
        format!("every {} checkpoint! calls", spec.check_every)
    } else {
        format!("about every {} s", spec.check_interval_ms as f64 / 1000.0)
    };
    format!(
        "{} {}; {}; run directory {}; availability {} read {checks}, edits acted on after {} s unchanged",
        if restart {
            "restarting from the newest complete checkpoint:"
        } else {
            "starting"
        },
        placement_summary(placement, what),
        match spec.launch_method {
            crate::launcher::LaunchMethod::Srun =>
                format!("{}; launched by srun", spec.cores_per_rank.describe()),
            crate::launcher::LaunchMethod::Mpirun => spec.cores_per_rank.describe(),
        },
        spec.run_dir.display(),
        spec.availability.display(),
        spec.settle_ms as f64 / 1000.0,
    )
}

/// Reads the records a running job adds to its run directory.
#[derive(Debug, Clone)]
pub struct ProgressReader {
    run_dir: PathBuf,
    seen: usize,
}

impl ProgressReader {
    /// A reader that reports the records added from now on.
    pub fn new(run_dir: &Path) -> Self {
        Self {
            run_dir: run_dir.to_owned(),
            seen: read_reconfigurations(run_dir).map_or(0, |r| r.len()),
        }
    }

    /// One line per record added since the last call.
    pub fn new_lines(&mut self) -> Vec<String> {
        self.new_lines_and_warning(0).0
    }

    /// [`ProgressReader::new_lines`], and the warning of [`nothing_counted`] when one of
    /// these records of a job of `ranks` ranks was planned from an all-zero live matrix
    /// (once per process: `rankmig run` says it once whatever the launches).
    pub fn new_lines_and_warning(&mut self, ranks: usize) -> (Vec<String>, Option<String>) {
        let Ok(records) = read_reconfigurations(&self.run_dir) else {
            return (Vec::new(), None);
        };
        let new = records.get(self.seen..).unwrap_or_default();
        let lines = new.iter().map(record_line).collect();
        let warning = nothing_counted_once(new, ranks);
        self.seen = self.seen.max(records.len());
        (lines, warning)
    }
}

/// The warning of [`nothing_counted`] for the first of `records` planned from an
/// all-zero live matrix of a job of `ranks` ranks; once per process (`rankmig run`),
/// whatever the launches.
fn nothing_counted_once(records: &[Reconfiguration], ranks: usize) -> Option<String> {
    static SAID: AtomicBool = AtomicBool::new(false);
    if SAID.load(Ordering::Relaxed) {
        return None;
    }
    let warning = records.iter().find_map(|r| nothing_counted(r, ranks))?;
    (!SAID.swap(true, Ordering::Relaxed)).then_some(warning)
}

/// When `r` was planned from a live matrix in which nothing was counted while the job
/// has more than one rank: the placement was made blind to the job's communication.
/// Says so and names `--matrix`.
///
/// ```
/// # use rankmig::run_dir::record::Reconfiguration;
/// let mut r: Reconfiguration = serde_json::from_str(r#"{"index":1,"iteration":9,"at_seconds":1.0,"change":"removed n2","nodes":2,"outcome":"migrated","detail":null,"moves":2,"minimum_moves":2,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.0,"phases":{"spawn":0.0,"transfer":0.0,"rebuild":0.0},"state_bytes":0,"live_bytes":0.0}"#).unwrap();
/// let said = rankmig::supervisor::progress::nothing_counted(&r, 4).expect("all zero");
/// assert!(said.contains("--matrix"), "{said}");
/// assert!(rankmig::supervisor::progress::nothing_counted(&r, 1).is_none());
/// r.live_bytes = Some(800.0);
/// assert!(rankmig::supervisor::progress::nothing_counted(&r, 4).is_none());
/// ```
pub fn nothing_counted(r: &Reconfiguration, ranks: usize) -> Option<String> {
    (ranks > 1 && r.live_bytes == Some(0.0)).then(|| {
        format!(
            "no communication between the {ranks} ranks was counted (the live matrix is all zero at availability change {}): rankmig places them blind to their traffic. Its MPI calls may not be counted ones (one-sided, non-blocking or neighbourhood collectives, I/O) or may bypass rankmig's interposition (an MPI linked statically, or before librankmig); give the job's matrix with `rankmig run --matrix FILE` (TreeMatch's format, as the run directory's matrix.mat is written)",
            r.index
        )
    })
}

/// One reconfiguration as a line.
pub fn record_line(r: &Reconfiguration) -> String {
    // A contention decision names its cause: "contention: n2's ranks waited …".
    let what = if r.by_contention() {
        "reconfiguration"
    } else {
        "availability change"
    };
    let mut line = format!(
        "{what} {} at iteration {}: {} -> {}",
        r.index, r.iteration, r.change, r.outcome
    );
    if r.outcome == "migrated" {
        let _ = write!(
            line,
            ", {} ranks moved (minimum {}){}; ",
            r.moves,
            r.minimum_moves,
            moves_text(r),
        );
        line.push_str(&phases_text(r));
    } else if let Some(detail) = r.detail.as_ref().filter(|d| **d != r.change) {
        // A refused edit's change is its reason already: said once.
        let _ = write!(line, ": {detail}");
    }
    line
}

/// What a migration cost: the pause (and, for a spawn run in the background, how long
/// the replacements took to start meanwhile), then its phases. Records written before
/// the pause was recorded give the phases only.
fn phases_text(r: &Reconfiguration) -> String {
    let p = &r.phases;
    let mut text = String::new();
    if p.pause > 0.0 {
        let _ = write!(text, "paused {:.1} ms", p.pause * 1e3);
        if p.background > 0.0 {
            let _ = write!(
                text,
                "; replacements started in {:.0} ms in the background",
                p.background * 1e3
            );
        }
        text.push_str(" (");
    }
    let spawn = if p.background > 0.0 { "join" } else { "spawn" };
    let _ = write!(
        text,
        "scheduling {:.1} ms, {spawn} {:.0} ms, transfer {:.1} ms, rebuild {:.1} ms",
        r.scheduling * 1e3,
        p.spawn * 1e3,
        p.transfer * 1e3,
        p.rebuild * 1e3
    );
    if p.pause > 0.0 {
        text.push(')');
    }
    text
}

/// " (n1 -> n5: ranks 0-7)": the moves of a record, grouped by route.
fn moves_text(r: &Reconfiguration) -> String {
    let mut groups: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for m in &r.moved {
        groups
            .entry((m.from.as_str(), m.to.as_str()))
            .or_default()
            .push(m.rank);
    }
    if groups.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((from, to), ranks)| format!("{from} -> {to}: ranks {}", ranges(ranks)))
        .collect();
    format!(" ({})", parts.join("; "))
}

/// "0-3,7" for ascending ranks.
fn ranges(ranks: &[usize]) -> String {
    let as_u32: Vec<u32> = ranks.iter().map(|&r| r as u32).collect();
    crate::topology::format_index_list(&as_u32)
}

/// What to run after a job that did not finish: resume it from its newest complete
/// checkpoint with `rankmig run --restart`, or, without one, run it again.
pub fn next_step(spec: &RunSpec) -> String {
    match newest_complete_checkpoint(&spec.ckpt_dir) {
        Some((job, epoch)) => format!(
            "the job did not finish; its newest complete checkpoint is epoch {epoch} of job {job:?} in {}: resume it with `rankmig run --restart {}` (a host that is gone for good must first leave the availability file)",
            spec.ckpt_dir.display(),
            spec.run_dir.display()
        ),
        None => match &spec.ckpt_local {
            // The node-local directories lie on the hosts, out of this process's sight.
            Some(local) => format!(
                "the job did not finish; {} holds no complete checkpoint, but the node-local directories ({}) may: resume it with `rankmig run --restart {}` (a host that is gone for good must first leave the availability file; if no epoch is whole there either, the ranks say so, and the job must run again from its start)",
                spec.ckpt_dir.display(),
                local.display(),
                spec.run_dir.display()
            ),
            None => format!(
                "the job did not finish and {} holds no complete checkpoint: run it again from its start",
                spec.ckpt_dir.display()
            ),
        },
    }
}

/// The job and epoch of the most recently committed complete, undamaged epoch of
/// any job directory of `ckpt_dir` (the run's ranks name their job; a run directory's
/// own checkpoint directory holds one job).
fn newest_complete_checkpoint(ckpt_dir: &std::path::Path) -> Option<(String, u64)> {
    let report = crate::checkpoint::inspect(ckpt_dir, false).ok()?;
    report
        .jobs
        .iter()
        .filter_map(|j| {
            let job = j.job.as_ref()?;
            let newest = j
                .epochs
                .iter()
                .find(|e| e.is_complete() && !e.is_damaged())?;
            let committed_at =
                std::fs::metadata(newest.path.join(crate::checkpoint::epoch::COMMIT_MARKER))
                    .and_then(|m| m.modified())
                    .ok()?;
            Some((committed_at, job.clone(), newest.epoch))
        })
        .max_by_key(|(at, _, _)| *at)
        .map(|(_, job, epoch)| (job, epoch))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that did not finish with an empty checkpoint directory: run from the start,
    /// unless node-local checkpoints (out of `rankmig run`'s sight) may hold an epoch.
    #[test]
    fn the_next_step_after_a_failure_counts_the_node_local_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = format!(
            r#"{{"ranks": 2, "availability": "/a", "matrix": null, "ckpt_dir": {:?},
                "run_dir": "/r", "check_every": 0, "program": ["app"], "env": []}}"#,
            dir.path().display().to_string()
        );
        let mut spec: RunSpec = serde_json::from_str(&text).expect("spec");
        assert!(
            next_step(&spec).contains("run it again from its start"),
            "{}",
            next_step(&spec)
        );
        spec.ckpt_local = Some("/dev/shm/me/%h".into());
        let step = next_step(&spec);
        assert!(
            step.contains("resume it with `rankmig run --restart /r`"),
            "{step}"
        );
        assert!(step.contains("/dev/shm/me/%h"), "{step}");
    }

    #[test]
    fn a_recorded_migration_becomes_one_line_with_its_moves() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let mut reader = ProgressReader::new(d);
        assert!(reader.new_lines().is_empty());
        let record = r#"{"index":1,"iteration":120,"at_seconds":3.0,"change":"removed n1 (had 2 cores)","nodes":2,"outcome":"migrated","detail":null,"moves":2,"minimum_moves":2,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.004,"phases":{"spawn":0.5,"transfer":0.01,"rebuild":0.002},"state_bytes":10,"moved":[{"rank":0,"from":"n1","to":"n3"},{"rank":1,"from":"n1","to":"n3"}]}"#;
        std::fs::write(
            d.join(crate::run_dir::record::RECONFIGURATIONS),
            format!("{record}\n"),
        )
        .expect("r");
        let lines = reader.new_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("iteration 120"), "{}", lines[0]);
        assert!(lines[0].contains("n1 -> n3: ranks 0-1"), "{}", lines[0]);
        assert!(lines[0].contains("spawn 500 ms"), "{}", lines[0]);
        assert!(reader.new_lines().is_empty(), "a record is reported once");
    }

    #[test]
    fn a_background_migration_says_its_pause_and_its_background_start() {
        let record = r#"{"index":1,"iteration":120,"at_seconds":3.0,"change":"c","nodes":2,"outcome":"migrated","detail":null,"moves":1,"minimum_moves":1,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.004,"phases":{"spawn":0.002,"transfer":0.01,"rebuild":0.003,"background":0.498,"pause":0.031},"state_bytes":10,"moved":[{"rank":0,"from":"n1","to":"n3"}]}"#;
        let r: Reconfiguration = serde_json::from_str(record).expect("record");
        let line = record_line(&r);
        assert!(
            line.contains("paused 31.0 ms; replacements started in 498 ms in the background (scheduling 4.0 ms, join 2 ms,"),
            "{line}"
        );
    }

    #[test]
    fn a_refusal_whose_change_is_its_reason_says_it_once() {
        let why = "av: no cores available at all; the job keeps its current placement";
        let record = format!(
            r#"{{"index":1,"iteration":5,"at_seconds":1.0,"change":"{why}","nodes":0,"outcome":"refused","detail":"{why}","moves":0,"minimum_moves":0,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.0,"phases":{{"spawn":0.0,"transfer":0.0,"rebuild":0.0}},"state_bytes":0,"moved":[]}}"#
        );
        let r: Reconfiguration = serde_json::from_str(&record).expect("record");
        let line = record_line(&r);
        assert_eq!(line.matches(why).count(), 1, "{line}");
        assert!(line.ends_with("-> refused"), "{line}");
    }

    #[test]
    fn a_contention_move_says_why_on_its_line() {
        let why = "contention: n2's ranks waited 67% of 10 s for a CPU; 0 of 1 core usable";
        let record = format!(
            r#"{{"index":1,"iteration":5,"at_seconds":1.0,"change":"{why}","nodes":3,"outcome":"migrated","detail":null,"moves":1,"minimum_moves":1,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.0,"phases":{{"spawn":0.0,"transfer":0.0,"rebuild":0.0}},"state_bytes":0,"moved":[{{"rank":1,"from":"n2","to":"n3"}}]}}"#
        );
        let r: Reconfiguration = serde_json::from_str(&record).expect("record");
        let line = record_line(&r);
        assert!(
            line.starts_with(&format!(
                "reconfiguration 1 at iteration 5: {why} -> migrated"
            )),
            "{line}"
        );
        assert!(line.contains("n2 -> n3: ranks 1"), "{line}");
    }
}
