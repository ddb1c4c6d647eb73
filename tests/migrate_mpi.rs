//! Live migration with `rankmig run` and real `mpirun`, on `examples/jacobi.rs`.
//!
//! Logical nodes of this host; the availability file is edited while the job runs,
//! each edit waiting for the job to have reached a point (its first check, the previous
//! reconfiguration) so the tests do not depend on timing.
#![cfg(feature = "mpi")]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{checksum, children_of, jacobi, mpi_lock};
use rankmig::migrate::record::{Reconfiguration, read_reconfigurations};

const RANKS: usize = 8;
const ARGS: &[&str] = &["--size", "256", "--iters", "12000"];

fn rankmig() -> Command {
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

/// `rankmig run` of the Jacobi example on `RANKS` ranks, started in the background.
fn start(dir: &Path, extra_env: &[(&str, &str)]) -> Child {
    let mut cmd = rankmig();
    cmd.current_dir(dir)
        .args(["run", "-n", &RANKS.to_string(), "--availability", "av"])
        .args(["--run-dir", "run", "--check-every", "20", "--"])
        .arg(jacobi())
        .args(ARGS)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("rankmig run starts")
}

fn reference_checksum() -> String {
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .arg(jacobi())
        .args(ARGS)
        .env(
            "RANKMIG_CKPT_DIR",
            std::env::temp_dir().join("rankmig-unused-ckpt"),
        )
        .output()
        .expect("mpirun runs");
    checksum(&out)
}

/// Writes the availability file atomically (as an editor saving would).
fn set_availability(dir: &Path, text: &str) {
    let tmp = dir.join("av.tmp");
    fs::write(&tmp, text).expect("write availability");
    fs::rename(&tmp, dir.join("av")).expect("rename availability");
}

/// Waits until `ready()` holds, at most a minute.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn records(dir: &Path) -> Vec<Reconfiguration> {
    read_reconfigurations(&dir.join("run")).unwrap_or_default()
}

fn first_check_done(dir: &Path) -> bool {
    dir.join("run/iterations/rank-0.csv").exists()
}

/// (rank, pid, node, event) of every line of processes.csv.
fn processes(dir: &Path) -> Vec<(usize, u32, String, String)> {
    let text = fs::read_to_string(dir.join("run/processes.csv")).unwrap_or_default();
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

fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            != Some("Z")
    })
}

/// Waits for `rankmig run` at most three minutes; on a hang, kills it and its `mpirun`
/// with the ranks, and fails.
fn finish(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(180) {
            for mpirun in children_of(child.id()) {
                for rank in children_of(mpirun) {
                    let _ = Command::new("kill")
                        .args(["-KILL", &rank.to_string()])
                        .status();
                }
                let _ = Command::new("kill")
                    .args(["-KILL", &mpirun.to_string()])
                    .status();
            }
            let _ = child.kill();
            let out = child.wait_with_output().expect("killed");
            panic!(
                "rankmig run hung; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().expect("rankmig run ends")
}

#[test]
fn ranks_move_live_and_the_result_is_bit_exact() {
    let _lock = mpi_lock();
    let reference = reference_checksum();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\nn3 2\nn4 2\n");
    let child = start(d, &[]);
    wait_for("the first availability check", || first_check_done(d));
    // n1 reclaimed, n5 lent: n1's two ranks go to n5.
    set_availability(d, "n1 0\nn2 2\nn3 2\nn4 2\nn5 2\n");
    wait_for("the first reconfiguration", || !records(d).is_empty());
    // n2 lost too: its two ranks spread over the nodes left.
    set_availability(d, "n3 2\nn4 2\nn5 2\n");
    wait_for("the second reconfiguration", || records(d).len() >= 2);
    let out = finish(child);
    assert_eq!(
        checksum(&out),
        reference,
        "migrated run differs from a static run"
    );

    let recs = records(d);
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r.outcome, "migrated", "{r:?}");
        assert_eq!(r.moves, r.minimum_moves, "{r:?}");
        assert!(r.state_bytes > 0);
    }
    assert_eq!(recs[0].moves, 2);
    assert_eq!(recs[1].moves, 2);

    // The same 8 ranks finish; the replaced processes are gone; nothing of the job
    // finished on a vacated node.
    let procs = processes(d);
    let mut finished: Vec<usize> = procs
        .iter()
        .filter(|p| p.3 == "finish")
        .map(|p| p.0)
        .collect();
    finished.sort_unstable();
    assert_eq!(finished, (0..RANKS).collect::<Vec<_>>());
    let left: Vec<&(usize, u32, String, String)> = procs.iter().filter(|p| p.3 == "left").collect();
    assert_eq!(left.len(), 4);
    for p in &left {
        assert!(!alive(p.1), "replaced process {} still alive", p.1);
        assert!(p.2 == "n1" || p.2 == "n2", "{p:?}");
    }
    assert!(
        procs
            .iter()
            .filter(|p| p.3 == "finish")
            .all(|p| p.2 != "n1" && p.2 != "n2")
    );
    let last = fs::read_to_string(d.join("run/placement-2.txt")).unwrap();
    assert!(!last.contains(" n1 ") && !last.contains(" n2 "), "{last}");
}

#[test]
fn a_failed_spawn_leaves_every_rank_running() {
    let _lock = mpi_lock();
    let reference = reference_checksum();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    let child = start(
        d,
        &[("RANKMIG_SPAWN_PROGRAM", "/nonexistent/rankmig-test-program")],
    );
    wait_for("the first availability check", || first_check_done(d));
    set_availability(d, "n1 0\nn2 4\nn3 4\n");
    wait_for("the refused migration", || !records(d).is_empty());
    let out = finish(child);
    assert_eq!(checksum(&out), reference);
    let recs = records(d);
    assert_eq!(recs[0].outcome, "spawn failed", "{recs:?}");
    assert!(
        recs[0]
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("/nonexistent/rankmig-test-program")
    );
    let procs = processes(d);
    assert!(
        procs.iter().all(|p| p.3 != "left"),
        "a rank left: {procs:?}"
    );
    assert_eq!(procs.iter().filter(|p| p.3 == "finish").count(), RANKS);
}

#[test]
fn a_bad_edit_keeps_the_placement() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 4\nn2 4\n");
    let child = start(d, &[]);
    wait_for("the first availability check", || first_check_done(d));
    set_availability(d, "n1 four\nn2 4\n");
    wait_for("the refusal", || !records(d).is_empty());
    let out = finish(child);
    assert!(out.status.success());
    let recs = records(d);
    assert_eq!(recs[0].outcome, "refused");
    let detail = recs[0].detail.clone().unwrap_or_default();
    assert!(
        detail.contains(":1:") && detail.contains("'four'"),
        "{detail}"
    );
    assert!(processes(d).iter().all(|p| p.3 != "left"));
}

#[test]
fn a_node_killed_without_notice_restarts_from_the_checkpoint() {
    let _lock = mpi_lock();
    let reference = reference_checksum();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    set_availability(d, "n1 2\nn2 2\nn3 2\nn4 2\n");
    let child = start(d, &[("RANKMIG_CKPT_EVERY", "200")]);
    let ckpt: PathBuf = d.join("run/ckpt");
    wait_for("a committed checkpoint", || committed(&ckpt));
    // Kill every process of logical node n2 (its ranks), without notice.
    let victims: Vec<u32> = processes(d)
        .iter()
        .filter(|p| p.2 == "n2" && p.3 == "start")
        .map(|p| p.1)
        .collect();
    assert_eq!(victims.len(), 2);
    for pid in &victims {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let out = finish(child);
    assert!(
        !out.status.success(),
        "the job should abort when a node vanishes"
    );
    // n2 is gone for good; restart with a placement for the new availability.
    set_availability(d, "n1 2\nn3 2\nn4 2\nn5 2\n");
    let out = rankmig()
        .current_dir(d)
        .args(["run", "--restart", "run"])
        .output()
        .expect("restart runs");
    assert_eq!(
        checksum(&out),
        reference,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let restart_placement = fs::read_dir(d.join("run"))
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("placement-restart")
        })
        .map(|e| fs::read_to_string(e.path()).unwrap())
        .expect("restart placement recorded");
    assert!(!restart_placement.contains(" n2 "), "{restart_placement}");
}

fn committed(ckpt: &Path) -> bool {
    fs::read_dir(ckpt).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            e.path()
                .join(rankmig::checkpoint::epoch::COMMIT_MARKER)
                .exists()
        })
    })
}
