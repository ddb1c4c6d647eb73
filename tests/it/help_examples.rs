//! Every `Example` of `rankmig COMMAND --help` runs as printed, from a directory laid
//! out like the repository root (`tests`, `availability` and this build's target
//! directory linked there), so the run it makes does not land in the source tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::mpi_lock;

/// The commands, in an order where `report` and `inspect` find the run of `run`.
const COMMANDS: &[&str] = &[
    "map",
    "cost",
    "place",
    "plan",
    "simulate",
    "topology",
    "run",
    "report",
    "inspect",
    "emulated-host",
    "completions",
    "man",
];

/// The examples of `rankmig COMMAND --help` (at least one): each paragraph starting
/// with `Example`, from `rankmig ` on, its wrapped lines joined.
fn examples(command: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_rankmig"))
        .args([command, "--help"])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let examples: Vec<String> = help
        .split("\n\n")
        .filter(|p| p.starts_with("Example"))
        .map(|paragraph| {
            let joined = paragraph
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            let start = joined.find("rankmig ").expect("the example runs rankmig");
            joined[start..].to_owned()
        })
        .collect();
    assert!(
        !examples.is_empty(),
        "no example in rankmig {command} --help:\n{help}"
    );
    examples
}

fn can_create_uts_namespaces() -> bool {
    Command::new("unshare")
        .args(["--uts", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn every_command_example_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The run example starts the release build of the Jacobi example.
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--release", "--example", "jacobi"])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .status()
        .unwrap();
    assert!(built.success());
    let bin: PathBuf = Path::new(env!("CARGO_BIN_EXE_rankmig"))
        .parent()
        .unwrap()
        .to_owned();
    let dir = tempfile::tempdir().unwrap();
    for link in ["tests", "availability"] {
        std::os::unix::fs::symlink(root.join(link), dir.path().join(link)).unwrap();
    }
    // `target` is this build's target directory (CARGO_TARGET_DIR, built for one MPI at a
    // time), so that `target/release/examples/jacobi` is built against the MPI this test
    // runs with.
    let target_dir = bin.parent().expect("the target directory of the build");
    std::os::unix::fs::symlink(target_dir, dir.path().join("target")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // `run` starts an MPI job and `emulated-host` a host of the emulated cluster.
    let _lock = mpi_lock();
    for command in COMMANDS {
        if *command == "emulated-host" && !can_create_uts_namespaces() {
            crate::support::skip::on_this_machine(&format!(
                "{command}'s example (this machine refuses UTS namespaces)"
            ));
            continue;
        }
        for line in examples(command) {
            let out = Command::new("sh")
                .args(["-c", &line])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{line}\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.stdout.is_empty(), "{line} printed nothing");
        }
    }
}
