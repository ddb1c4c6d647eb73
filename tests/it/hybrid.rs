//! Ranks with threads (MPI + OpenMP): `rankmig run --cores-per-rank C` places ranks on
//! groups of C cores, starts them on those cores before their program runs, and keeps
//! every thread there across a live migration, read from outside the processes
//! (`/proc/PID/task/*/status`).
#![cfg(feature = "mpi")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::job::Job;
use crate::support::{
    assert_same_as_plain_run, build_c_program, jacobi, mpi_lock, placement_per_host, rankmig,
    records, slot_zero_of_two_cores, threads_allowed, wait_until,
};

/// How long a step of a job (its start, a migration, iterations after it) may take.
const JOB_WAIT: Duration = Duration::from_secs(90);

/// `examples/c/jacobi.c` built with `-fopenmp` against the installed prefix: the hybrid
/// example.
fn jacobi_omp() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        build_c_program(
            "examples/c/jacobi.c",
            "jacobi-omp",
            &["-fopenmp", "-lxxhash"],
        )
    })
}

/// Replaces the availability file of `dir` atomically.
fn edit(dir: &Path, text: &str) {
    fs::write(dir.join("av.tmp"), text).expect("write");
    fs::rename(dir.join("av.tmp"), dir.join("av")).expect("rename");
}

/// The pid of the newest process of `rank` whose `processes.csv` event is `event`.
fn pid_of(run: &Path, rank: usize, event: &str) -> Option<u32> {
    let text = fs::read_to_string(run.join("processes.csv")).ok()?;
    text.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        (f.first()?.parse::<usize>().ok()? == rank && f.get(4)? == &event)
            .then(|| f.get(1)?.parse().ok())?
    })
}

/// Every thread of `pid` is allowed exactly `cpus`; at least two threads (the rank's
/// and its second OpenMP thread) are looked at.
fn assert_threads_on(pid: u32, cpus: &str, when: &str) {
    let allowed = threads_allowed(pid);
    assert!(allowed.len() >= 2, "{when}: threads of {pid}: {allowed:?}");
    assert!(
        allowed.iter().all(|a| a == cpus),
        "{when}: every thread of {pid} should be allowed CPUs {cpus}: {allowed:?}"
    );
}

/// `rankmig run -n RANKS --cores-per-rank 2` of `program --size SIZE` on the
/// availability file of `dir`, until its stop file appears, with the variables `env`;
/// returns once rank 0 records iterations.
fn start(dir: &Path, (ranks, program, size): (usize, &Path, &str), env: &[(&str, &str)]) -> Job {
    let child = rankmig()
        .current_dir(dir)
        .args([
            "run",
            "-n",
            &ranks.to_string(),
            "--cores-per-rank",
            "2",
            "-a",
            "av",
        ])
        .args([
            "--run-dir",
            "run",
            "--check-every",
            "200",
            "--settle",
            "0",
            "--",
        ])
        .arg(program)
        .args(["--size", size, "--iters", "100000000", "--stop-file"])
        .arg(dir.join("stop"))
        .envs(env.iter().copied())
        .env("RANKMIG_CKPT_DIR", dir.join("ckpt"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankmig run");
    let job = Job(Some(child));
    wait_until("the job to start", JOB_WAIT, || {
        dir.join("run/iterations/rank-0.csv").exists()
    });
    job
}

/// Done-when of issue 51: `OMP_NUM_THREADS=2 rankmig run -n 1 --cores-per-rank 2` of an
/// OpenMP code on logical nodes `n1 2`, `n2 2`: no thread of the rank is confined to
/// one CPU before or after an edit that removes n1; the edit migrates live; the result
/// is bit-identical to a plain run with 2 threads.
#[test]
fn a_two_thread_rank_keeps_its_two_cpus_across_a_live_migration() {
    let _lock = mpi_lock();
    let program = jacobi_omp();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (run, stop) = (d.join("run"), d.join("stop"));
    edit(d, "n1 2\nn2 2\n");
    let job = start(d, (1, program, "128"), &[("OMP_NUM_THREADS", "2")]);
    let cpus = slot_zero_of_two_cores();
    let first = pid_of(&run, 0, "start").expect("rank 0's process is recorded");
    assert_threads_on(first, &cpus, "at the start");
    edit(d, "n1 0\nn2 2\n");
    wait_until("the migration", JOB_WAIT, || !records(&run).is_empty());
    assert_eq!(
        records(&run)[0]["outcome"],
        "migrated",
        "{:?}",
        records(&run)
    );
    // The replacement appends its own row, which may come after rank 0's record.
    wait_until("the replacement's arrival row", JOB_WAIT, || {
        pid_of(&run, 0, "arrived").is_some()
    });
    let arrived = pid_of(&run, 0, "arrived").expect("the replacement is recorded");
    assert_ne!(arrived, first);
    assert_threads_on(arrived, &cpus, "after the migration to n2");
    // Started through bind-exec: the CPU sets of the launch and of the spawn.
    for file in ["cpus-0.txt", "cpus-spawn-1.txt"] {
        let text = fs::read_to_string(run.join(file)).expect(file);
        assert_eq!(text, format!("0 {cpus}\n"), "{file}");
    }
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2 cores per rank (--cores-per-rank)"),
        "{stderr}"
    );
    // Both processes ran 2 OpenMP threads on 2 CPUs, by their own account.
    let counted = stderr
        .lines()
        .filter(|l| l.contains("2 OpenMP threads, 2 CPUs available"))
        .count();
    assert_eq!(counted, 2, "{stderr}");
    let env = [("OMP_NUM_THREADS".to_owned(), "2".to_owned())];
    assert_same_as_plain_run(&out, 1, program, &["--size", "128"], &env);
}

/// Done-when of issue 51: 2 ranks of 2 cores on `n1 3`, `n2 2` are placed one per node
/// (n1 holds ⌊3/2⌋ = 1); after an edit to `n1 0`, `n2 2`, `n3 4` they are on n2 and n3,
/// moved live.
#[test]
fn ranks_of_two_cores_are_placed_one_per_node_and_move_live() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (run, stop) = (d.join("run"), d.join("stop"));
    edit(d, "n1 3\nn2 2\n");
    let job = start(d, (2, jacobi(), "64"), &[]);
    let first = placement_per_host(&run.join("placement-0.txt"));
    assert_eq!(
        first.into_iter().collect::<Vec<_>>(),
        [("n1".to_owned(), 1), ("n2".to_owned(), 1)]
    );
    edit(d, "n1 0\nn2 2\nn3 4\n");
    wait_until("the migration", JOB_WAIT, || !records(&run).is_empty());
    let record = &records(&run)[0];
    assert_eq!(record["outcome"], "migrated", "{record:?}");
    assert_eq!(record["moves"], 1, "{record:?}");
    let after = placement_per_host(&run.join("placement-1.txt"));
    assert_eq!(
        after.into_iter().collect::<Vec<_>>(),
        [("n2".to_owned(), 1), ("n3".to_owned(), 1)]
    );
    fs::write(&stop, "").expect("stop file");
    let out = job.finish().expect("rankmig run ends");
    let env = [(
        "RANKMIG_CKPT_DIR".to_owned(),
        d.join("ckpt").display().to_string(),
    )];
    assert_same_as_plain_run(&out, 2, jacobi(), &["--size", "64"], &env);
}
