//! A checkpoint call where it does not belong, in an MPI+OpenMP rank (issue 51):
//! `tests/c/omp_checkpoint.c`, built with `-fopenmp` against the installed prefix, 2
//! ranks under the real `mpirun`, calls `rankmig_checkpoint` inside a
//! `#pragma omp parallel` region of 2 threads. The master thread's call (it called
//! `rankmig_init`) and the worker's both return `RANKMIG_ERR_THREAD` with a message
//! naming the threads, nothing hangs, and the loop's calls after the region save as if
//! the refused calls had not been made: a restart resumes from the last iteration.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;

use crate::support;
use crate::support::job::{Hung, Job};
use crate::support::mpi_lock;

/// The program, built once with `mpicc -fopenmp` against `librankmig.so`.
fn program() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        support::build_c_program("tests/c/omp_checkpoint.c", "omp-checkpoint", &["-fopenmp"])
    })
}

/// 2 ranks of the program, 20 iterations (the region at the 10th), a save every 5
/// calls into `ckpt`, restarting from it when `restart`; fails the test if the job
/// does not end within the bound of [`Job::finish`].
fn run(ckpt: &Path, restart: bool) -> Output {
    let mut env = vec![
        ("RANKMIG_CKPT_DIR".to_owned(), ckpt.display().to_string()),
        ("RANKMIG_CKPT_EVERY".to_owned(), "5".to_owned()),
        ("RANKMIG_CKPT_KEEP".to_owned(), "10".to_owned()),
    ];
    if restart {
        env.push(("RANKMIG_RESTART".to_owned(), "1".to_owned()));
    }
    let child = support::plain_launch_with(2, program(), &["--iters", "20"], &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts");
    Job(Some(child))
        .finish()
        .unwrap_or_else(|Hung(why)| panic!("the job with a misplaced checkpoint hung: {why}"))
}

/// The thread ids a message names, in order (`thread 1234`).
fn thread_ids(message: &str) -> Vec<u32> {
    message
        .split("thread ")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

#[test]
fn a_checkpoint_inside_an_openmp_parallel_region_is_refused_on_every_thread() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let out = run(&ckpt, false);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = support::stderr(&out);
    assert!(out.status.success(), "{text}\n{err}");
    let line = |prefix: &str| {
        (text.lines())
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?}:\n{text}\n{err}"))
            .to_owned()
    };
    assert_eq!(line("start: "), "0");
    assert_eq!(line("team: "), "2 threads");
    let belongs = ": the call belongs outside parallel regions, on the thread that called \
                   rankmig_init";
    // The master thread, which called rankmig_init.
    let master = line("thread 0: ");
    let master = master
        .strip_prefix("-5: checkpoint called on thread ")
        .unwrap_or_else(|| panic!("RANKMIG_ERR_THREAD (-5) and where: {master}"));
    assert!(
        master.contains(", the thread that initialised rankmig, inside an OpenMP parallel region")
            && master.contains(belongs),
        "{master}"
    );
    // A worker of the region.
    let worker = line("thread 1: ");
    let worker = worker
        .strip_prefix("-5: checkpoint called from thread ")
        .unwrap_or_else(|| panic!("RANKMIG_ERR_THREAD (-5) and where: {worker}"));
    assert!(
        worker.contains(" inside an OpenMP parallel region, not from thread ")
            && worker.contains(" that initialised rankmig")
            && worker.contains(belongs),
        "{worker}"
    );
    let (master_ids, worker_ids) = (
        thread_ids(&format!("thread {master}")),
        thread_ids(&format!("thread {worker}")),
    );
    assert_eq!(
        worker_ids.get(1),
        master_ids.first(),
        "the worker is told the master's thread: {worker}"
    );
    assert_ne!(worker_ids.first(), master_ids.first(), "{worker}");
    assert_eq!(line("refused on every rank: "), "yes");
    assert_eq!(line("iterations: "), "20");
    // The loop's saves came at calls 5, 10, 15 and 20 on both ranks.
    let report = rankmig::checkpoint::inspect(&ckpt, false).unwrap();
    let saved: Vec<Vec<u64>> = (report.epochs())
        .filter(|e| e.is_complete())
        .map(|e| {
            let mut calls: Vec<u64> = e
                .files
                .iter()
                .filter_map(|f| f.header.as_ref().map(|h| h.calls))
                .collect();
            calls.sort_unstable();
            calls
        })
        .collect();
    let mut every: Vec<u64> = saved.iter().flatten().copied().collect();
    every.sort_unstable();
    assert_eq!(every, [5, 5, 10, 10, 15, 15, 20, 20], "{report}");
    // The last save holds iteration 20: had a refused call been counted, the save at
    // call 20 would have been made at iteration 19.
    let again = run(&ckpt, true);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{text}\n{}",
        support::stderr(&again)
    );
    assert!(text.contains("start: 20\n"), "{text}");
    assert!(!text.contains("team: "), "{text}");
}
