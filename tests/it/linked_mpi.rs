//! The binaries link the MPI whose `mpicc` is first on `PATH` (build.rs), not another
//! implementation's library of the same name: checked with `ldd` on the `rankmig`
//! binary, the Jacobi example and the `librankmig.so` that `scripts/install.sh`
//! installs with that `mpicc`. `scripts/test.sh` runs this with
//! Debian's Open MPI 4.1, then with MPICH and Open MPI 5 from PyPI first on `PATH`.
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
