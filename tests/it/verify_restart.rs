//! `scripts/verify_restart.sh`, the check for a state region a program forgot to
//! register (issue 44, item 5), on `tests/c/state_regions.c` built against the
//! installed prefix, 4 ranks under the real `mpirun`: with every region registered
//! each epoch's restart prints the plain run's checksum (exit 0); with one region left
//! out (`--leave-out acc`) the script names each epoch whose restart differs (exit 1).
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support;
use crate::support::mpi_lock;

/// The program, built once with `mpicc` against `librankmig.so`, as a user does.
fn program() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| support::build_c_program("tests/c/state_regions.c", "state-regions", &[]))
}

/// The script on the program: 4 ranks, a save every 100 calls of 250 (epochs at calls
/// 100 and 200), with `args` after the program's `--iters`, launched as
/// [`launch_like_rankmig`] says.
fn verify(args: &[&str]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/verify_restart.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(script)
        .args(["-n", "4", "-e", "100"])
        .arg(program())
        .args(["--iters", "250"])
        .args(args);
    launch_like_rankmig(&mut cmd, program());
    cmd.output().expect("bash runs the script")
}

/// Gives the script (`MPIRUN`, `MPIRUN_ARGS` and the variables) the launch rankmig's
/// launcher of the MPI under test makes for a plain job of 4 ranks on this host, less
/// its rank count, which the script gives: no MPI's own option is written here, and no
/// `RANKMIG_*` variable of the caller reaches the runs.
fn launch_like_rankmig(cmd: &mut Command, program: &Path) {
    let plain = support::plain_launch_with(4, program, &[], &[]);
    let mut options = Vec::new();
    let mut args = plain.get_args().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        if Path::new(&arg) == program {
            break;
        }
        if arg == "-n" || arg == "-np" {
            args.next();
            continue;
        }
        options.push(arg);
    }
    cmd.env("MPIRUN", plain.get_program())
        .env("MPIRUN_ARGS", options.join(" "));
    for (name, value) in plain.get_envs() {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
}

#[test]
fn every_epoch_agrees_when_all_the_state_is_registered() {
    let _lock = mpi_lock();
    let out = verify(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = support::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{err}");
    let same: Vec<&str> = text.lines().filter(|l| l.ends_with(": same")).collect();
    assert_eq!(same.len(), 2, "{text}");
    assert!(
        text.contains("all 2 epochs agree with the plain run"),
        "{text}"
    );
}

#[test]
fn a_region_left_out_is_found_at_the_epochs_it_changes() {
    let _lock = mpi_lock();
    let out = verify(&["--leave-out", "acc"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = support::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    let differ: Vec<&str> = text.lines().filter(|l| l.ends_with(": differs")).collect();
    assert_eq!(differ, ["epoch 1: differs", "epoch 2: differs"], "{text}");
    assert!(
        text.contains("restarts from epoch(s) 1 2 of 2 differ from the plain run"),
        "{text}"
    );
}
