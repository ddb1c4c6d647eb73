//! The module layering table of `src/lib.rs` is kept: every `crate::MODULE` path in the
//! code of `src/` (doc comments and comments left out) names a module to the right of its
//! own in its layer, or in a layer below.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers of the table, top first, each with its modules in order.
fn layers(lib_rs: &str) -> Vec<Vec<String>> {
    lib_rs
        .lines()
        .filter_map(|line| line.strip_prefix("//! | "))
        .filter(|row| !row.starts_with("layer") && !row.starts_with("---"))
        .map(|row| {
            row.split("[`")
                .skip(1)
                .filter_map(|part| part.split_once("`]").map(|(name, _)| name.to_owned()))
                .collect()
        })
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The modules a source text names as `crate::MODULE` or in `crate::{MODULE, ...}`,
/// outside comments.
fn crate_modules(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let items = match rest.strip_prefix('{') {
                Some(group) => group.split(',').collect::<Vec<_>>(),
                None => vec![rest],
            };
            for item in items {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// `(layer, position)` of every module of the table.
fn places(layers: &[Vec<String>]) -> BTreeMap<String, (usize, usize)> {
    let mut places = BTreeMap::new();
    for (layer, modules) in layers.iter().enumerate() {
        for (position, module) in modules.iter().enumerate() {
            places.insert(module.clone(), (layer, position));
        }
    }
    places
}

/// Whether a module at `from` may use one at `to`: a lower layer (a larger index) or
/// further right in the same layer.
fn allowed(from: (usize, usize), to: (usize, usize)) -> bool {
    to.0 > from.0 || (to.0 == from.0 && to.1 > from.1)
}

#[test]
fn no_module_imports_one_the_layering_table_puts_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib_rs = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let places = places(&layers(&lib_rs));
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut against = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs");
        // The CLI's files (`main.rs`, `cli.rs`, `commands.rs`) are a binary: not `crate::`.
        let Some(&from) = places.get(module) else {
            continue;
        };
        let source = std::fs::read_to_string(&file).unwrap();
        for used in crate_modules(&source) {
            let Some(&to) = places.get(&used) else {
                continue;
            };
            if used != module && !allowed(from, to) {
                against.push(format!("{} uses crate::{used}", relative.display()));
            }
        }
    }
    against.sort();
    against.dedup();
    assert!(
        against.is_empty(),
        "imports against the table of src/lib.rs: {against:#?}"
    );
}

#[test]
fn every_module_of_the_library_is_in_the_table_once() {
    let lib_rs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let layers = layers(&lib_rs);
    let in_table: Vec<&String> = layers.iter().flatten().collect();
    let mut declared: Vec<String> = lib_rs
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_owned())
        .collect();
    declared.sort();
    let mut listed: Vec<String> = in_table.iter().map(|m| (*m).clone()).collect();
    listed.sort();
    assert_eq!(
        listed, declared,
        "the table's modules and lib.rs's `pub mod`s differ"
    );
}

#[test]
fn the_check_sees_an_import_that_runs_up() {
    let table =
        "//! | layer | modules |\n//! |---|---|\n//! | top | [`a`], [`b`] |\n//! | low | [`c`] |\n";
    let places = places(&layers(table));
    assert!(allowed(places["a"], places["b"]));
    assert!(allowed(places["a"], places["c"]));
    assert!(!allowed(places["b"], places["a"]));
    assert!(!allowed(places["c"], places["a"]));
    assert_eq!(
        crate_modules(
            "use crate::{c::X, b};\n/// [`crate::a`]\nlet x = crate::b::y; // crate::a\n"
        ),
        ["c", "b", "b"]
    );
}
