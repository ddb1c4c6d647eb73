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
