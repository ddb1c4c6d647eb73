//! The binaries link the MPI whose `mpicc` is first on `PATH` (build.rs), not another
//! implementation's library of the same name: checked with `ldd` on the `rankmig`
//! binary, the Jacobi example and the `librankmig.so` that `scripts/install.sh`
//! installs with that `mpicc`. `scripts/test.sh` runs this with
//! Debian's Open MPI 4.1, then with MPICH and Open MPI 5 from PyPI first on `PATH`.
//! And `rankmig run` says when the launcher on `PATH` is of another MPI than the one
//! it was built against.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

/// The `-L` directories of `mpicc -show` (Intel MPI's wrappers quote them: `-L"DIR"`).
fn mpicc_library_dirs() -> Vec<PathBuf> {
    let out = Command::new("mpicc")
        .arg("-show")
        .output()
        .expect("mpicc on PATH");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("-L"))
        .map(|d| PathBuf::from(d.trim_matches('"')))
        .collect()
}

/// Each `libmpi*` line of `ldd binary`: (soname, resolved path).
fn linked_libmpi(binary: &Path) -> Vec<(String, PathBuf)> {
    let out = Command::new("ldd").arg(binary).output().expect("ldd");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?;
            let path = words.nth(1)?;
            name.starts_with("libmpi")
                .then(|| (name.to_owned(), PathBuf::from(path)))
        })
        .collect()
}

/// True when `lib` is the MPI library of one of `dirs`: in that directory, or the same
/// file as its `libmpi.so` (Debian's `openmpi/lib/libmpi.so` points into the
/// multiarch directory).
fn from_dirs(lib: &Path, dirs: &[PathBuf]) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    dirs.iter().any(|d| {
        real(d).is_some_and(|d| lib.parent().and_then(real) == Some(d))
            || (real(&d.join("libmpi.so")).is_some() && real(&d.join("libmpi.so")) == real(lib))
    })
}

#[test]
fn every_binary_links_the_mpi_of_the_mpicc_first_on_path() {
    let dirs = mpicc_library_dirs();
    assert!(!dirs.is_empty(), "mpicc -show names no library directory");
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rankmig"));
    let shared = support::prefix::library_prefix().join("lib/librankmig.so");
    for binary in [bin, support::jacobi().to_path_buf(), shared] {
        let libs = linked_libmpi(&binary);
        assert!(!libs.is_empty(), "{} links no libmpi", binary.display());
        for (name, path) in libs {
            assert!(
                from_dirs(&path, &dirs),
                "{} links {name} from {}, not from the MPI of mpicc ({dirs:?})",
                binary.display(),
                path.display()
            );
        }
    }
}

/// What `rankmig run` writes when the launcher on `PATH` is of another MPI than its
/// build's (src/mpi_build.rs).
const LAUNCHER_WARNING: &str = "the launcher on PATH,";

/// `rankmig run` of a program that does not exist (it stops once the launcher is
/// chosen) with `path` as `PATH`: its standard error.
fn run_stderr(path: &str) -> String {
    let dir = tempfile::tempdir().expect("work dir");
    std::fs::write(dir.path().join("av"), "n1 2\n").expect("availability");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankmig"));
    for (k, _) in std::env::vars() {
        if k.starts_with("RANKMIG_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .current_dir(dir.path())
        .args(["run", "-n", "1", "-a", "av", "--run-dir", "run", "--"])
        .arg(dir.path().join("no-such-program"))
        .env("PATH", path)
        .output()
        .expect("rankmig run");
    assert!(!out.status.success(), "rankmig run of no program succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// With the launcher of another MPI first on `PATH`, `rankmig run` warns, naming that
/// launcher (path, MPI and version) and the `mpicc` and MPI it was built with; with its
/// own MPI's launcher it says nothing of it.
#[test]
fn rankmig_run_names_a_launcher_of_another_mpi_and_the_one_it_was_built_with() {
    use rankmig::mpi_build::{LIBRARY_VERSION, MPICC, MpiIdentity};
    let Some(built) = MpiIdentity::from_library_version(LIBRARY_VERSION) else {
        support::skip::not_for_this_mpi(&format!(
            "the build does not know its MPI: {LIBRARY_VERSION:?}"
        ));
        return;
    };
    let path = std::env::var("PATH").unwrap_or_default();
    let ours = run_stderr(&path);
    assert!(!ours.contains(LAUNCHER_WARNING), "{ours}");
    // The first other MPI whose mpirun names an MPI other than the build's.
    let other = support::prefix::other_mpis()
        .into_iter()
        .find_map(|(bin, _)| {
            let out = Command::new(bin.join("mpirun"))
                .arg("--version")
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let id = MpiIdentity::from_launcher_version(&text)?;
            (built.launched_by(&id) == Some(false)).then_some((bin, id))
        });
    let Some((bin, id)) = other else {
        support::skip::on_this_machine("no launcher of another MPI on this machine");
        return;
    };
    let theirs = run_stderr(&format!("{}:{path}", bin.display()));
    let warning = theirs
        .lines()
        .find(|l| l.contains(LAUNCHER_WARNING))
        .unwrap_or_else(|| panic!("no warning with {} first on PATH: {theirs}", bin.display()));
    let launcher = format!("{} ({id})", bin.join("mpirun").display());
    let ours = format!("{MPICC} ({built})");
    assert!(warning.contains(&launcher), "{launcher} not in {warning}");
    assert!(warning.contains(&ours), "{ours} not in {warning}");
}
