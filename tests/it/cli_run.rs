//! `rankmig run` as a user meets it: what it says at start and at each reconfiguration,
//! the exit codes, a missing program, and a run directory that already holds a run.

use std::fs;
use std::process::Output;

use crate::support;
use crate::support::{mpi_lock, rankmig, stderr};

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

/// `--contention-cooldown` out of its range says what the cooldown is, with its own
/// range (not another flag's words).
#[test]
fn a_cooldown_out_of_range_is_named_as_a_cooldown() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--contention-cooldown", "4000"], &["true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let expected = "'--contention-cooldown <SECONDS>': 4000 s is outside 0 to 3600 s (a node left for contention";
    assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    assert!(!dir.path().join("run").exists());
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
    // The communication matrix an earlier job's ranks wrote is one (`true` writes none).
    let matrix = dir.path().join("run/matrix.mat");
    fs::write(&matrix, "0 7\n7 0\n").unwrap();

    let second = run(dir.path(), &[], &["true"]);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("holds the records of an earlier run"),
        "{}",
        stderr(&second)
    );
    assert_eq!(fs::read_to_string(&matrix).unwrap(), "0 7\n7 0\n");

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
    assert!(
        !matrix.exists(),
        "--force left the earlier run's matrix.mat, which rankmig report would name"
    );
    // A run directory holding only an earlier run's matrix holds a record too.
    fs::remove_dir_all(dir.path().join("run")).unwrap();
    fs::create_dir(dir.path().join("run")).unwrap();
    fs::write(&matrix, "0 7\n7 0\n").unwrap();
    let again = run(dir.path(), &[], &["true"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
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

#[test]
fn an_unusable_rankmig_variable_stops_the_job_with_its_name() {
    let _lock = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("av"), "n1 2\n").unwrap();
    let out = std::process::Command::new("mpirun")
        .current_dir(dir.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(support::jacobi())
        .args(["--size", "8", "--iters", "4"])
        .env("RANKMIG_RUN_DIR", dir.path().join("run"))
        .env("RANKMIG_AVAILABILITY", dir.path().join("av"))
        .env("RANKMIG_CHECK_EVERY", "ten")
        .env("RANKMIG_CKPT_DIR", dir.path().join("ckpt"))
        .output()
        .expect("mpirun runs");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("RANKMIG_CHECK_EVERY=\"ten\": a whole number"),
        "{}",
        stderr(&out)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("checksum"));
}

#[test]
fn completions_and_man_pages_come_from_the_command_line_definitions() {
    let out = rankmig().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.contains("_rankmig()") && script.contains("--check-interval"));
    let dir = tempfile::tempdir().unwrap();
    let out = rankmig()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run_page = fs::read_to_string(dir.path().join("rankmig-run.1")).unwrap();
    assert!(run_page.contains(".TH rankmig-run 1"), "{run_page}");
    assert!(run_page.contains("\\-\\-settle"), "{run_page}");
    let main_page = fs::read_to_string(dir.path().join("rankmig.1")).unwrap();
    assert!(main_page.contains("rankmig\\-run(1)"), "{main_page}");
    // A command line that mistakes a `plan` option for a `place` one is refused.
    let out = rankmig()
        .args(["place", "--step2", "paper"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn output_piped_into_head_ends_without_a_panic() {
    let script = format!(
        "'{}' completions bash | head -1 >/dev/null",
        env!("CARGO_BIN_EXE_rankmig")
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("panicked") && !stderr(&out).contains("Broken pipe"),
        "{}",
        stderr(&out)
    );
}

/// A configuration file with an unknown key, named by `RANKMIG_CONFIG`, stops `rankmig
/// run` before anything starts: the file, line and key are named, no run directory is
/// made and the program never runs. `rankmig config` says where each value comes from.
#[test]
fn a_broken_configuration_file_stops_rankmig_run_before_the_launch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("av"), "n1 2\n").unwrap();
    let config = d.join("rankmig.toml");
    fs::write(&config, "[run]\nsettle = 1\n\n[checkpoint]\nsecond = 10\n").unwrap();
    let out = rankmig()
        .current_dir(d)
        .env("RANKMIG_CONFIG", &config)
        .args(["run", "-n", "2", "-a", "av", "--run-dir", "run", "--"])
        .args(["touch", "launched"])
        .output()
        .expect("rankmig run");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let expected = format!("{}:5: unknown key `checkpoint.second`", config.display());
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    assert!(!d.join("run").exists() && !d.join("launched").exists());

    fs::write(
        &config,
        "[run]\nsettle = 1.5\n\n[checkpoint]\nseconds = 10\n",
    )
    .unwrap();
    let shown = rankmig()
        .env("RANKMIG_CONFIG", &config)
        .env("RANKMIG_SPAWN_TIMEOUT", "45")
        .arg("config")
        .output()
        .expect("rankmig config");
    assert!(shown.status.success(), "{}", stderr(&shown));
    let text = String::from_utf8_lossy(&shown.stdout);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .to_owned()
    };
    assert!(line("run.settle ").contains("1.5 "), "{text}");
    assert!(
        line("run.settle ").contains(&format!("{}:2", config.display())),
        "{text}"
    );
    assert!(
        line("checkpoint.seconds ").contains(&format!("{}:5", config.display())),
        "{text}"
    );
    assert!(
        line("run.spawn_timeout ").contains("environment RANKMIG_SPAWN_TIMEOUT"),
        "{text}"
    );
    assert!(line("checkpoint.keep ").contains("default"), "{text}");

    // The help of `rankmig run` shows the file's value as the default, both ways.
    for args in [&["run", "--help"][..], &["help", "run"]] {
        let help = rankmig()
            .env("RANKMIG_CONFIG", &config)
            .args(args)
            .output()
            .expect("rankmig run --help");
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(text.contains("[default: 1.5]"), "{args:?}: {text}");
    }
}
