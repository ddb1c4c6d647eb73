//! The C interface: `include/rankmig.h` is what cbindgen generates from `src/capi`.
//! Programs built with real `mpicc`/`mpif90` live in `tests/it/c_programs.rs`.

use std::path::Path;

#[test]
fn the_checked_in_header_is_generated_from_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/capi/mod.rs"))
        .generate()
        .expect("cbindgen reads src/capi/mod.rs");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = root.join("include/rankmig.h");
    if std::env::var_os("RANKMIG_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/rankmig.h");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/rankmig.h is not what src/capi/mod.rs declares; regenerate it with \
         RANKMIG_BLESS=1 cargo test --release --test it -- c_interface::\n--- generated:\n{generated}"
    );
    for prototype in [
        "int rankmig_init(MPI_Comm *comm);",
        "MPI_Comm rankmig_comm(void);",
        "int rankmig_register(const char *name, void *data, size_t bytes);",
        "int rankmig_checkpoint(void);",
        "int rankmig_on_comm(RankmigCommCallback callback, void *arg);",
        "unsigned long rankmig_generation(void);",
        "#define RANKMIG_COMM_CHANGED 1",
        "int rankmig_resumed(void);",
        "int rankmig_finalize(void);",
        "const char *rankmig_last_error(void);",
    ] {
        assert!(
            generated.contains(prototype),
            "missing: {prototype}\n{generated}"
        );
    }
}

/// The interface of `include/rankmig.h` and `include/rankmig.f90` (declarations only:
/// comments, blank space and the version lines left out).
fn interface_text(root: &Path) -> String {
    let mut text = String::new();
    for (file, comment) in [("include/rankmig.h", "//"), ("include/rankmig.f90", "!")] {
        let source = std::fs::read_to_string(root.join(file)).expect(file);
        let source = strip_block_comments(&source);
        for line in source.lines() {
            let code = line.split(comment).next().unwrap_or("").trim();
            if !code.is_empty() && !code.contains("RANKMIG_VERSION_") {
                text.push_str(code);
                text.push('\n');
            }
        }
    }
    text
}

/// `source` without its `/* ... */` comments.
fn strip_block_comments(source: &str) -> String {
    let mut out = String::new();
    let mut rest = source;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out
}

/// The version contract: `tests/c_interface.lock` holds the package version and a hash of
/// the C and Fortran interface at that version. The test fails when the interface
/// changes and the version does not (raise it: major for an incompatible change, minor
/// for an addition; then RANKMIG_BLESS=1 rewrites the lock), and the header's and the
/// Fortran module's version must be the package's.
#[test]
fn the_version_changes_when_the_interface_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let version = env!("CARGO_PKG_VERSION");
    let hash = format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(interface_text(root).as_bytes())
    );
    let lock_path = root.join("tests/c_interface.lock");
    let lock = format!(
        "# The C and Fortran interface (include/rankmig.h, include/rankmig.f90) at a version:\n\
         # tests/it/c_interface.rs fails when the interface changes and the version does not.\n\
         version {version}\ninterface {hash}\n"
    );
    if std::env::var_os("RANKMIG_BLESS").is_some() {
        std::fs::write(&lock_path, &lock).expect("write tests/c_interface.lock");
    }
    let recorded = std::fs::read_to_string(&lock_path).unwrap_or_default();
    let field = |name: &str| {
        recorded
            .lines()
            .find_map(|l| l.strip_prefix(name).map(str::trim).map(str::to_owned))
            .unwrap_or_default()
    };
    let (locked_version, locked_hash) = (field("version "), field("interface "));
    assert!(
        locked_hash == hash || locked_version != version,
        "the C or Fortran interface changed but the version is still {version}: raise it in \
         Cargo.toml, src/capi/mod.rs and include/rankmig.f90 (major for an incompatible change, \
         minor for an addition), then RANKMIG_BLESS=1 cargo test --release --test it -- c_interface::"
    );
    assert_eq!(
        (locked_version.as_str(), locked_hash.as_str()),
        (version, hash.as_str()),
        "tests/c_interface.lock is not up to date: RANKMIG_BLESS=1 cargo test --release --test it -- c_interface::"
    );
    let header = std::fs::read_to_string(root.join("include/rankmig.h")).expect("header");
    let fortran = std::fs::read_to_string(root.join("include/rankmig.f90")).expect("module");
    let parts = [
        ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ];
    for (part, value) in parts {
        let c = format!("#define RANKMIG_VERSION_{part} {value}\n");
        assert!(header.contains(&c), "include/rankmig.h lacks {c:?}");
        let f = format!(":: RANKMIG_VERSION_{part} = {value}\n");
        assert!(fortran.contains(&f), "include/rankmig.f90 lacks {f:?}");
    }
    assert!(header.contains("const char *rankmig_version(void);"));
    assert!(fortran.contains("function rankmig_version()"));
}
