//! Links the MPI whose `mpicc` is first on `PATH` (or named by `MPICC`).
//!
//! The `mpi` crate finds that MPI's headers and library directory, but other crates'
//! build scripts (`hwlocality-sys` among them) add the system library directory to the
//! search path ahead of it; when another MPI with the same `libmpi.so` name lives
//! there (Debian's Open MPI 4.1), the linker takes that one and the binary crashes under
//! the other MPI's launcher. This script puts the library directories of `mpicc -show`
//! first (a package's own build script outputs come before its dependencies' on the
//! link line) and records them as the run path of every binary, test, example and of
//! `librankmig.so` (built by scripts/install.sh).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-env-changed=PATH");
    if std::env::var_os("CARGO_FEATURE_MPI").is_none() {
        return;
    }
    let compiler = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".to_owned());
    let shown = match Command::new(&compiler).arg("-show").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => {
            println!(
                "cargo:warning={compiler} -show failed ({}); the linker's default MPI is used",
                out.status
            );
            return;
        }
        Err(e) => {
            println!(
                "cargo:warning=cannot run {compiler} -show ({e}); the linker's default MPI is used"
            );
            return;
        }
    };
    for dir in library_dirs(&shown) {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}

/// The `-L` directories of a compiler wrapper's command line, in order, once each.
fn library_dirs(command_line: &str) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    let mut words = command_line.split_whitespace();
    while let Some(word) = words.next() {
        let dir = match word.strip_prefix("-L") {
            Some("") => words.next().map(str::to_owned),
            Some(dir) => Some(dir.to_owned()),
            None => None,
        };
        if let Some(dir) = dir.map(|d| d.trim_matches('"').to_owned()) {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}
