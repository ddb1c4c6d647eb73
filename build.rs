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
//!
//! It also records which MPI that is, for `src/mpi_build.rs`: the `mpicc`'s path and
//! the string `MPI_Get_library_version` returns in a small program built by that
//! `mpicc` and run with its library directories first. `rankmig_init` and `rankmig run`
//! compare them with the MPI library loaded and the launcher on `PATH`. Files in
//! `OUT_DIR`: `mpi-build-mpicc.txt`, `mpi-build-library-version.txt` (empty when
//! unknown).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-env-changed=PATH");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    // Unknown until found below.
    record(&out_dir, "", "");
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
    let dirs = library_dirs(&shown);
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    let path = on_path(&compiler).unwrap_or_else(|| PathBuf::from(&compiler));
    let version = library_version(&compiler, &dirs, &out_dir).unwrap_or_else(|why| {
        println!(
            "cargo:warning=cannot tell which MPI {compiler} is ({why}): rankmig_init and rankmig run will not compare the MPI they find with it"
        );
        String::new()
    });
    record(&out_dir, &path.to_string_lossy(), &version);
}

/// Writes what is known of the MPI built against into `out_dir`.
fn record(out_dir: &Path, mpicc: &str, library_version: &str) {
    for (name, text) in [
        ("mpi-build-mpicc.txt", mpicc),
        ("mpi-build-library-version.txt", library_version),
    ] {
        if let Err(e) = std::fs::write(out_dir.join(name), text) {
            panic!("cannot write {name} in {}: {e}", out_dir.display());
        }
    }
}

/// `program`'s path when it is found in a directory of `PATH` (as it is run).
fn on_path(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return std::fs::canonicalize(program).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// What `MPI_Get_library_version` returns with the MPI of `compiler`: a program built
/// by it and run (`MPI_Get_library_version` may be called before `MPI_Init`) with the
/// wrapper's library directories `dirs` first on `LD_LIBRARY_PATH`.
fn library_version(compiler: &str, dirs: &[String], out_dir: &Path) -> Result<String, String> {
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return Err("cross-compiling: the probe cannot run here".to_owned());
    }
    let source = out_dir.join("mpi-version-probe.c");
    let program = out_dir.join("mpi-version-probe");
    std::fs::write(
        &source,
        "#include <mpi.h>\n#include <stdio.h>\nint main(void) {\n  char v[MPI_MAX_LIBRARY_VERSION_STRING];\n  int n = 0;\n  if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) return 1;\n  fwrite(v, 1, (size_t)n, stdout);\n  return 0;\n}\n",
    )
    .map_err(|e| format!("{}: {e}", source.display()))?;
    let built = Command::new(compiler)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .output()
        .map_err(|e| format!("{compiler}: {e}"))?;
    if !built.status.success() {
        return Err(format!(
            "{compiler} cannot build a program calling MPI_Get_library_version: {}",
            String::from_utf8_lossy(&built.stderr).trim()
        ));
    }
    let mut library_path = dirs.join(":");
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        library_path = format!("{library_path}:{}", old.to_string_lossy());
    }
    let ran = Command::new(&program)
        .env("LD_LIBRARY_PATH", library_path)
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if !ran.status.success() {
        return Err(format!("the probe program failed ({})", ran.status));
    }
    let text = String::from_utf8_lossy(&ran.stdout);
    let text = text.trim_end_matches('\0').trim();
    if text.is_empty() {
        return Err("MPI_Get_library_version returned nothing".to_owned());
    }
    Ok(text.to_owned())
}

/// The `-L` directories of a compiler wrapper's command line, in order, once each. Its
/// words are split at blanks outside double quotes (scripts/mpi-flags.sh reads them
/// alike for the installed `.pc` and CMake files).
fn library_dirs(command_line: &str) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    let mut words = words(command_line).into_iter();
    while let Some(word) = words.next() {
        let dir = match word.strip_prefix("-L") {
            Some("") => words.next(),
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

/// The words of `command_line`: split at blanks, a word with an odd number of double
/// quotes joined with those after it up to the closing one.
fn words(command_line: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for word in command_line.split_whitespace() {
        match out.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => out.push(word.to_owned()),
        }
        if word.matches('"').count() % 2 == 1 {
            open = !open;
        }
    }
    out
}
