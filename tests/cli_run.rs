//! `rankmig run` as a user meets it: what it says at start and at each reconfiguration,
//! the exit codes, a missing program, and a run directory that already holds a run.

mod common;

use std::fs;
use std::process::Output;

use common::{mpi_lock, rankmig};

fn run(dir: &std::path::Path, extra: &[&str], program: &[&str]) -> Output {
    rankmig()
        .current_dir(dir)
        .args(["run", "-n", "2", "-a", "av", "--run-dir", "run"])
        .args(extra)
        .arg("--")
        .args(program)
        .output()
        .expect("rankmig run")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_program_is_named_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("av"), "n1 2\n").unwrap();
    let out = run(dir.path(), &[], &["./no-such-app", "--size", "8"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'./no-such-app' not found"),
        "{}",
        stderr(&out)
    );
    // A usage error is 2 (clap's own).
    let out = run(dir.path(), &["--no-such-option"], &["true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_second_run_into_a_run_directory_is_refused_unless_forced() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("av"), "n1 2\n").unwrap();
    let first = run(dir.path(), &[], &["true"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let said = stderr(&first);
    assert!(
        said.contains("starting 2 ranks on 1 logical node (n1:2)")
            && said.contains("read about every 1 s"),
        "{said}"
    );
    assert!(dir.path().join("run/run.json").exists());
    // A file of the user's in the run directory is not a record.
    fs::write(dir.path().join("run/notes.txt"), "mine").unwrap();

    let second = run(dir.path(), &[], &["true"]);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("holds the records of an earlier run"),
        "{}",
        stderr(&second)
    );

    let forced = run(dir.path(), &["--force", "-q"], &["true"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert!(
        !stderr(&forced).contains("starting"),
        "-q hides info lines: {}",
        stderr(&forced)
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("run/notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn run_takes_the_matrix_format_explicitly() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("av"), "n1 3\n").unwrap();
    // Three lines of three numbers: a 3x3 matrix or a 3-rank edge list.
    fs::write(dir.path().join("m.txt"), "0 1 5\n1 2 5\n0 2 5\n").unwrap();
    let with = |extra: &[&str]| {
        rankmig()
            .current_dir(dir.path())
            .args(["run", "-n", "3", "-a", "av", "--run-dir", "run", "--force"])
            .args(["--matrix", "m.txt"])
            .args(extra)
            .args(["--", "true"])
            .output()
            .expect("rankmig run")
    };
    let auto = with(&[]);
    assert_eq!(auto.status.code(), Some(1), "{}", stderr(&auto));
    assert!(
        stderr(&auto).contains("--matrix-format"),
        "{}",
        stderr(&auto)
    );
    let edges = with(&["--matrix-format", "edges"]);
    assert!(edges.status.success(), "{}", stderr(&edges));
    let spec = fs::read_to_string(dir.path().join("run/run.json")).unwrap();
    assert!(spec.contains("\"matrix_format\": \"edges\""), "{spec}");
}
