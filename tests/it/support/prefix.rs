//! The installed prefix the tests' C, C++ and Fortran programs build against, as a
//! user's do: `scripts/install.sh --prefix DIR` from this checkout (with `apt-get` and
//! `sudo` on `PATH` as traps that fail the test if called), once per test binary, and
//! `pkg-config` on `DIR/lib/pkgconfig` for the flags.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The build directory of this test binary (`target/release` of the MPI under test).
pub fn build_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_rankmig"))
        .parent()
        .expect("target/release")
        .to_path_buf()
}

/// Where the tests' C, C++ and Fortran programs are built: `target/release/c-examples`
/// (created).
pub fn programs_dir() -> PathBuf {
    let dir = build_dir().join("c-examples");
    fs::create_dir_all(&dir).expect("c-examples dir");
    dir
}

/// A directory of `apt-get` and `sudo` stand-ins that record their call and fail, and
/// the `PATH` that puts it ahead of the real ones: scripts/test.sh's
/// (`RANKMIG_TEST_TRAPS`, on its `PATH` for every step, so that the builds and this
/// install see one `PATH` and nothing is rebuilt), or one made here.
fn traps(dir: &Path) -> (PathBuf, String) {
    let path = std::env::var("PATH").unwrap_or_default();
    if let Some(traps) = std::env::var_os("RANKMIG_TEST_TRAPS").map(PathBuf::from) {
        // Ahead of the directories of the real apt-get and sudo.
        let at = |dir: &str| path.split(':').position(|d| d == dir);
        let first = at(traps.to_str().unwrap_or("-"));
        if first.is_some()
            && [at("/usr/bin"), at("/bin")]
                .iter()
                .all(|real| first < *real || real.is_none())
        {
            return (traps, path);
        }
    }
    let bin = dir.join("traps");
    fs::create_dir_all(&bin).expect("traps dir");
    for name in ["apt-get", "sudo"] {
        let trap = bin.join(name);
        fs::write(
            &trap,
            format!("#!/bin/sh\necho {name} >> \"$0.called\"\nexit 1\n"),
        )
        .expect("trap");
        Command::new("chmod")
            .arg("+x")
            .arg(&trap)
            .status()
            .expect("chmod");
    }
    let path = format!("{}:{path}", bin.display());
    (bin, path)
}

/// Runs `bash scripts/install.sh` with `args`, the traps first on `PATH`, in this
/// binary's target directory; asserts that it succeeded and called neither trap.
pub fn install(args: &[&str], destdir: Option<&Path>) {
    run_install(false, args, destdir)
}

/// [`install`], with `scripts/install.sh` executed itself as the README writes it
/// (`scripts/install.sh --prefix DIR`), not through `bash`: it fails if the script
/// lost its executable bit.
pub fn install_as_documented(args: &[&str], destdir: Option<&Path>) {
    run_install(true, args, destdir)
}

/// `scripts/install.sh ARGS`, executed itself if `direct`, else through `bash`.
fn run_install(direct: bool, args: &[&str], destdir: Option<&Path>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = build_dir().join("installed");
    let (traps, path) = traps(&work);
    let script = root.join("scripts/install.sh");
    let mut cmd = if direct {
        Command::new(&script)
    } else {
        let mut bash = Command::new("bash");
        bash.arg(&script);
        bash
    };
    cmd.args(args)
        .env("PATH", path)
        .env(
            "CARGO_TARGET_DIR",
            build_dir().parent().expect("target dir"),
        )
        .env_remove("DESTDIR");
    if let Some(destdir) = destdir {
        cmd.env("DESTDIR", destdir);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{} {args:?}: {e}", script.display()));
    assert!(
        out.status.success(),
        "install.sh {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["apt-get", "sudo"] {
        assert!(
            !traps.join(format!("{name}.called")).exists(),
            "install.sh called {name}"
        );
    }
}

static FULL_PREFIX: OnceLock<PathBuf> = OnceLock::new();
static LIBRARY_PREFIX: OnceLock<PathBuf> = OnceLock::new();

/// The prefix with the command, installed once per test binary into
/// `target/release/installed/prefix` with the MPI first on `PATH`.
pub fn installed_prefix() -> &'static Path {
    FULL_PREFIX.get_or_init(|| fresh_install("prefix", &[]))
}

/// What the C, C++ and Fortran programs of the tests build against: the prefix with the
/// command if this test binary installed it already, else one installed with
/// `--library-only` (the command's build is left out: it differs from this test
/// build's by the dev-dependencies' features, so it would compile rankmig again).
pub fn library_prefix() -> &'static Path {
    if let Some(full) = FULL_PREFIX.get() {
        return full;
    }
    LIBRARY_PREFIX.get_or_init(|| fresh_install("library-prefix", &["--library-only"]))
}

/// `install.sh --prefix target/release/installed/NAME EXTRA`, into an emptied directory.
fn fresh_install(name: &str, extra: &[&str]) -> PathBuf {
    let prefix = build_dir().join("installed").join(name);
    let _ = fs::remove_dir_all(&prefix);
    let mut args = vec!["--prefix", prefix.to_str().expect("UTF-8 path")];
    args.extend_from_slice(extra);
    install(&args, None);
    prefix
}

/// `pkg-config ARGS` on the `.pc` files of [`library_prefix`], split into arguments.
pub fn pkg_config(args: &[&str]) -> Vec<String> {
    pkg_config_of(library_prefix(), args)
}

/// The compiler wrapper `wrapper` (`mpicc`, `mpif90`) building `sources` into `exe`
/// against the installed package `package` (`rankmig`, `rankmig-fortran`): its
/// `pkg-config --cflags` before the sources, `--libs` and then `extra` after them.
pub fn compile_against_prefix(
    wrapper: &str,
    package: &str,
    sources: &[&Path],
    exe: &Path,
    extra: &[&str],
) -> Command {
    let mut cmd = Command::new(wrapper);
    cmd.arg("-O2")
        .args(pkg_config(&["--cflags", package]))
        .args(sources)
        .arg("-o")
        .arg(exe)
        .args(pkg_config(&["--libs", package]))
        .args(extra);
    cmd
}

static MOVED_PREFIX: OnceLock<PathBuf> = OnceLock::new();

/// A prefix installed with `--library-only` into `target/release/installed/before-move`
/// and then moved (`mv`) to `target/release/installed/moved`, once per test binary: the
/// directory it was installed into no longer exists.
pub fn moved_prefix() -> &'static Path {
    MOVED_PREFIX.get_or_init(|| {
        let before = build_dir().join("installed/before-move");
        let moved = build_dir().join("installed/moved");
        let _ = fs::remove_dir_all(&before);
        let _ = fs::remove_dir_all(&moved);
        install(
            &[
                "--prefix",
                before.to_str().expect("UTF-8 path"),
                "--library-only",
            ],
            None,
        );
        let status = Command::new("mv")
            .arg(&before)
            .arg(&moved)
            .status()
            .expect("mv");
        assert!(
            status.success(),
            "mv {} {}",
            before.display(),
            moved.display()
        );
        assert!(!before.exists(), "{} is still there", before.display());
        moved
    })
}

/// `pkg-config ARGS` on the `.pc` files of the prefix `prefix`, split into arguments.
pub fn pkg_config_of(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("pkg-config runs");
    assert!(
        out.status.success(),
        "pkg-config {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The `mpicc` first on `PATH`, its links followed: the MPI the tests are built with.
pub fn mpicc_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("mpicc"))
        .find(|p| p.is_file())
        .and_then(|p| fs::canonicalize(p).ok())
}

/// The MPIs of this machine other than the one first on `PATH`, as directories
/// `(bin, lib)`: Debian's Open MPI 4.1 (`/usr/bin`, its `libmpi.so.40` in the multiarch
/// directory), PyPI's Open MPI 4.1.8, MPICH and Open MPI 5 of `target/mpi`
/// (scripts/test.sh installs them there), those that are installed.
pub fn other_mpis() -> Vec<(PathBuf, PathBuf)> {
    let ours = mpicc_on_path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut candidates = vec![(
        PathBuf::from("/usr/bin"),
        PathBuf::from("/usr/lib/x86_64-linux-gnu"),
    )];
    for name in ["openmpi418", "mpich", "openmpi5"] {
        let dir = root.join("target/mpi").join(name);
        candidates.push((dir.join("bin"), dir.join("lib")));
    }
    candidates
        .into_iter()
        .filter(|(bin, _)| {
            let mpicc = fs::canonicalize(bin.join("mpicc")).ok();
            mpicc.is_some() && mpicc != ours
        })
        .collect()
}
