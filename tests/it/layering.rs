//! The module layering table of `src/lib.rs` is kept: every `crate::MODULE` path in the
//! code of `src/` (doc comments and comments left out) names a module to the right of its
//! own in its layer, or in a layer below. And the two programs, `rankmig` (its CLI,
//! `rankmig run`, `rankmig report`) and the runtime in the ranks (`migrate`), meet only
//! in the run directory (`run_dir`).

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
        // The CLI's files (`main.rs`, `cli.rs`, `commands.rs`, ...) are a binary: not `crate::`.
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

/// The parts of `src/` that make the `rankmig` command besides the library's lower
/// layers: its CLI files, `rankmig run` and `rankmig report`.
const COMMAND_PARTS: [&str; 7] = [
    "main.rs",
    "cli.rs",
    "commands.rs",
    "map_command.rs",
    "report_command.rs",
    "supervisor",
    "report",
];

/// The files of `src/` under `part` (a file or a directory), as `(path, text)`.
fn sources_of(src: &Path, part: &str) -> Vec<(PathBuf, String)> {
    let path = src.join(part);
    let mut files = Vec::new();
    if path.is_dir() {
        rust_files(&path, &mut files);
    } else {
        files.push(path);
    }
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            (file, text)
        })
        .collect()
}

/// The files of `parts` whose text (comments and doc links included) names the runtime
/// in the ranks: `crate::migrate` or `rankmig::migrate`.
fn naming_the_runtime(src: &Path, parts: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for part in parts {
        for (file, text) in sources_of(src, part) {
            for (number, line) in text.lines().enumerate() {
                if line.contains("crate::migrate") || line.contains("rankmig::migrate") {
                    let relative = file.strip_prefix(src).unwrap().display();
                    found.push(format!("{relative}:{}: {}", number + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_command_names_nothing_of_the_runtime_in_the_ranks() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = naming_the_runtime(&src, &COMMAND_PARTS);
    assert!(
        found.is_empty(),
        "the rankmig command meets the ranks only in the run directory (crate::run_dir), \
         yet names crate::migrate: {found:#?}"
    );
}

/// The names of the files of `src/run_dir/` (its `mod.rs` aside) found elsewhere under
/// `src/`, as paths relative to `src/`.
fn run_dir_files_elsewhere(src: &Path) -> Vec<String> {
    let mut own = Vec::new();
    rust_files(&src.join("run_dir"), &mut own);
    let names: Vec<_> = own
        .iter()
        .filter_map(|file| file.file_name())
        .filter(|name| *name != "mod.rs")
        .collect();
    assert!(names.len() >= 4, "src/run_dir/ holds {names:?}");
    let mut all = Vec::new();
    rust_files(src, &mut all);
    let mut elsewhere: Vec<String> = all
        .iter()
        .filter(|file| !file.starts_with(src.join("run_dir")))
        .filter(|file| file.file_name().is_some_and(|name| names.contains(&name)))
        .map(|file| file.strip_prefix(src).unwrap().display().to_string())
        .collect();
    elsewhere.sort();
    elsewhere
}

/// The names of the run directory's files that `src/run_dir/` declares as string
/// constants (`pub const NAME: &str = "name";`), the `ENV_` variables and texts with a
/// space aside.
fn run_dir_file_names(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src.join("run_dir"), &mut files);
    let mut names = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let Some(rest) = line.trim().strip_prefix("pub const ") else {
                continue;
            };
            let Some((constant, value)) = rest.split_once(": &str = \"") else {
                continue;
            };
            let Some(value) = value.strip_suffix("\";") else {
                continue;
            };
            if !constant.starts_with("ENV_") && !value.contains(' ') {
                names.push(value.to_owned());
            }
        }
    }
    names.sort();
    names
}

/// Where each of `names` is written as a string literal (`"name"`, as `grep` finds it)
/// in `src/`: `path:line`, relative to `src/`.
fn quoted_names(src: &Path, names: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap().display().to_string();
        for (number, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
            for name in names {
                if line.contains(&format!("\"{name}\"")) {
                    let place = format!("{relative}:{}", number + 1);
                    found.entry(name.clone()).or_default().push(place);
                }
            }
        }
    }
    found
}

/// The names of `names` not written exactly once in `src/`, in `src/run_dir/`, with
/// where they are written.
fn names_not_once_in_run_dir(src: &Path, names: &[String]) -> Vec<(String, Vec<String>)> {
    let found = quoted_names(src, names);
    names
        .iter()
        .map(|name| (name.clone(), found.get(name).cloned().unwrap_or_default()))
        .filter(|(_, places)| !(places.len() == 1 && places[0].starts_with("run_dir/")))
        .collect()
}

/// The files issue 55 found named by literals in several layers.
const NAMED_ONCE: [&str; 3] = ["reconfigurations.jsonl", "processes.csv", "run.json"];

#[test]
fn the_files_of_the_run_directory_have_one_home() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let elsewhere = run_dir_files_elsewhere(&src);
    assert!(
        elsewhere.is_empty(),
        "files named as those of src/run_dir/ outside it (settings, records, spawn watch, \
         launch requests belong to the run directory): {elsewhere:?}"
    );
    // The names of the files: each written once, as a constant of src/run_dir/, which
    // every other layer uses by name.
    let names = run_dir_file_names(&src);
    for name in NAMED_ONCE {
        assert!(
            names.iter().any(|n| n == name),
            "{name} is not a constant of src/run_dir/ (found {names:?})"
        );
    }
    let astray = names_not_once_in_run_dir(&src, &names);
    assert!(
        astray.is_empty(),
        "run directory file names written other than once, in src/run_dir/ (use the \
         constant): {astray:#?}"
    );
}

#[test]
fn the_run_directory_checks_see_a_file_or_a_path_out_of_place() {
    let tree = tempfile::tempdir().unwrap();
    let src = tree.path();
    for dir in ["run_dir", "migrate", "supervisor"] {
        std::fs::create_dir(src.join(dir)).unwrap();
    }
    for file in [
        "record.rs",
        "settings.rs",
        "spawn_watch.rs",
        "launch_request.rs",
        "mod.rs",
    ] {
        std::fs::write(src.join("run_dir").join(file), "").unwrap();
    }
    std::fs::write(src.join("migrate/mod.rs"), "").unwrap();
    std::fs::write(
        src.join("supervisor/launch.rs"),
        "use crate::run_dir::record;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("run_dir/record.rs"),
        "pub const RUN_SPEC: &str = \"run.json\";\npub const ENV_X: &str = \"RANKMIG_X\";\n",
    )
    .unwrap();
    assert!(run_dir_files_elsewhere(src).is_empty());
    assert!(naming_the_runtime(src, &["supervisor"]).is_empty());
    let names = run_dir_file_names(src);
    assert_eq!(names, ["run.json"]);
    assert!(names_not_once_in_run_dir(src, &names).is_empty());
    std::fs::write(
        src.join("supervisor/spec.rs"),
        "let path = dir.join(\"run.json\");\n",
    )
    .unwrap();
    assert_eq!(
        names_not_once_in_run_dir(src, &names),
        [(
            "run.json".to_owned(),
            vec![
                "run_dir/record.rs:1".to_owned(),
                "supervisor/spec.rs:1".to_owned()
            ]
        )]
    );
    std::fs::remove_file(src.join("supervisor/spec.rs")).unwrap();
    std::fs::write(src.join("run_dir/record.rs"), "").unwrap();
    assert_eq!(
        names_not_once_in_run_dir(src, &names),
        [("run.json".to_owned(), Vec::new())]
    );
    std::fs::write(src.join("migrate/record.rs"), "").unwrap();
    std::fs::write(
        src.join("supervisor/watch.rs"),
        "//! See [`crate::migrate::Job`].\n",
    )
    .unwrap();
    assert_eq!(run_dir_files_elsewhere(src), ["migrate/record.rs"]);
    assert_eq!(
        naming_the_runtime(src, &["supervisor"]),
        ["supervisor/watch.rs:1: //! See [`crate::migrate::Job`]."]
    );
}
