//! What README.md and docs/*.md name exists: every option of a `rankmig COMMAND ...`
//! they show is in `rankmig COMMAND --help`, every option written alone in code
//! (`--spawn-timeout`) is an option of some `rankmig` command, every `RANKMIG_*`
//! variable is in the source code, and every repository path and relative link they
//! give is a file or directory of the repository.
//!
//! The convention the test keeps: another tool's option is written with the tool's
//! name in the same code span (`srun --overlap`, `salloc --no-kill`); an option
//! written alone is rankmig's.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Top-level directories whose paths the documents may name and must exist.
const REPO_DIRS: &[&str] = &[
    "scripts/",
    "src/",
    "tests/",
    "examples/",
    "include/",
    "benches/",
    "availability/",
    "docs/",
];

/// Where a `RANKMIG_*` variable named by the documents must appear.
const SOURCE_DIRS: &[&str] = &["src", "include", "scripts", "tests", "examples", "benches"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a readable document");
            (p, text)
        })
        .collect()
}

/// The code of a markdown text: each line of a fenced block (a line ending in `\`
/// joined with the next), and each inline code span (line breaks inside it read as
/// spaces).
fn code_pieces(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut prose = String::new();
    let mut in_block = false;
    let mut continued = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            prose.push_str(line);
            prose.push('\n');
            continue;
        }
        continued.push_str(line.trim_end_matches('\\'));
        if !line.ends_with('\\') {
            pieces.push(std::mem::take(&mut continued));
        }
    }
    pieces.extend(
        prose
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|span| span.replace('\n', " ")),
    );
    pieces
}

/// The `--name` of an option token (`--check-every=5` gives `--check-every`), if it is
/// one.
fn option_name(token: &str) -> Option<&str> {
    let name = token.split('=').next().unwrap_or(token);
    let is_option = name.len() > 2
        && name.starts_with("--")
        && name[2..]
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    is_option.then_some(name)
}

/// Where a shell line stops being rankmig's arguments.
fn ends_arguments(token: &str) -> bool {
    matches!(token, "--" | "|" | ";" | "&&" | "||" | ">" | "2>&1") || token.starts_with('#')
}

/// The `rankmig` invocations of a piece of code: (command or "" for none, options).
fn invocations(piece: &str) -> Vec<(String, Vec<String>)> {
    let tokens: Vec<&str> = piece
        .split_whitespace()
        .take_while(|t| !t.starts_with('#'))
        .collect();
    let mut found = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if token.rsplit('/').next() != Some("rankmig") {
            continue;
        }
        let rest = &tokens[i + 1..];
        let command = match rest.first() {
            Some(c) if c.chars().all(|c| c.is_ascii_lowercase() || c == '-') => (*c).to_owned(),
            Some(c) if c.starts_with("--") => String::new(),
            _ => continue,
        };
        let skip = usize::from(!command.is_empty());
        let options = rest[skip..]
            .iter()
            .take_while(|t| !ends_arguments(t))
            .filter_map(|t| option_name(t))
            .map(str::to_owned)
            .collect();
        found.push((command, options));
    }
    found
}

/// The options written alone: every option of a piece whose first word is an option.
fn lone_options(piece: &str) -> Vec<String> {
    let starts_with_option = piece
        .split_whitespace()
        .next()
        .and_then(option_name)
        .is_some();
    if !starts_with_option {
        return Vec::new();
    }
    piece
        .split_whitespace()
        .filter_map(option_name)
        .map(str::to_owned)
        .collect()
}

/// `rankmig [COMMAND] --help`, or None when the command does not exist.
fn help(command: &str) -> Option<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rankmig"));
    if !command.is_empty() {
        cmd.arg(command);
    }
    let out = cmd.arg("--help").output().expect("rankmig runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The commands `rankmig --help` lists (without `help`).
fn commands() -> Vec<String> {
    let top = help("").expect("rankmig --help");
    top.split("Commands:")
        .nth(1)
        .expect("rankmig --help lists its commands")
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// Whether `help` lists the option `name` (followed by a space, `=`, `,`, `<`, `]` or
/// the line's end).
fn lists_option(help: &str, name: &str) -> bool {
    help.match_indices(name).any(|(at, _)| {
        help[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-'))
    })
}

/// Every `RANKMIG_*` name of a text; a name followed by `_*` is a prefix and keeps its
/// trailing `_`.
fn variables(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("RANKMIG_") {
        let rest = &text[at..];
        let len = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..len];
        if rest[len..].starts_with('*') && name.ends_with('_') {
            names.insert(name.to_owned());
        } else if name.len() > "RANKMIG_".len() {
            names.insert(name.trim_end_matches('_').to_owned());
        }
    }
    names
}

/// The text of every source file (this test excluded).
fn sources() -> String {
    let mut all = std::fs::read_to_string(root().join("build.rs")).unwrap_or_default();
    let me = root().join(file!());
    let mut stack: Vec<PathBuf> = SOURCE_DIRS.iter().map(|d| root().join(d)).collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path).expect("a readable source directory");
            stack.extend(entries.map(|e| e.expect("an entry").path()));
        } else if path != me
            && path.extension().is_some_and(|e| {
                ["rs", "h", "c", "f90", "sh"].contains(&e.to_string_lossy().as_ref())
            })
        {
            all.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            all.push('\n');
        }
    }
    all
}

/// Whether `name` occurs in `sources` as a whole word (as a prefix when it ends in `_`).
fn defined(sources: &str, name: &str) -> bool {
    sources.match_indices(name).any(|(at, _)| {
        let before_ok = sources[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let after = sources[at + name.len()..].chars().next();
        let after_ok =
            name.ends_with('_') || after.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        before_ok && after_ok
    })
}

/// The repository paths a piece names: words starting with one of [`REPO_DIRS`], made
/// of path characters only, without `..` ranges such as `step1..5`.
fn repo_paths(piece: &str) -> Vec<String> {
    piece
        .split_whitespace()
        .map(|w| w.trim_end_matches([',', ')', ':', ';']))
        .filter(|w| REPO_DIRS.iter().any(|d| w.starts_with(d)))
        .filter(|w| {
            !w.contains("..")
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
        })
        .map(str::to_owned)
        .collect()
}

/// The relative link targets of a markdown text (`[text](target)`, anchors removed).
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or(t).to_owned())
        .filter(|t| !t.is_empty() && !t.contains("://"))
        .collect()
}

#[test]
fn every_option_the_documents_show_with_a_command_is_in_its_help() {
    let mut helps: HashMap<String, Option<String>> = HashMap::new();
    let mut missing = Vec::new();
    for (path, text) in documents() {
        for piece in code_pieces(&text) {
            for (command, options) in invocations(&piece) {
                let help = helps
                    .entry(command.clone())
                    .or_insert_with(|| help(&command));
                let Some(help) = help else {
                    missing.push(format!(
                        "{}: `rankmig {command}`: no such command",
                        path.display()
                    ));
                    continue;
                };
                for option in options.iter().filter(|o| !lists_option(help, o)) {
                    missing.push(format!(
                        "{}: `rankmig {command} {option}`: not in `rankmig {command} --help`",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_option_written_alone_is_an_option_of_a_rankmig_command() {
    let all_help: String = std::iter::once(String::new())
        .chain(commands())
        .map(|c| help(&c).expect("a listed command has help"))
        .collect();
    let mut missing = Vec::new();
    for (path, text) in documents() {
        for piece in code_pieces(&text) {
            for option in lone_options(&piece)
                .into_iter()
                .filter(|o| !lists_option(&all_help, o))
            {
                missing.push(format!(
                    "{}: `{piece}`: {option} is no option of a rankmig command (write another \
                     tool's option with its name: `srun --overlap`)",
                    path.display()
                ));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_variable_the_documents_name_is_in_the_source() {
    let sources = sources();
    let mut missing = Vec::new();
    for (path, text) in documents() {
        for name in variables(&text).iter().filter(|n| !defined(&sources, n)) {
            missing.push(format!("{}: {name} is in no source file", path.display()));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_path_and_link_the_documents_give_exists() {
    let mut missing = Vec::new();
    for (path, text) in documents() {
        let dir = path.parent().expect("a document's directory");
        let named = code_pieces(&text)
            .iter()
            .flat_map(|p| repo_paths(p))
            .collect::<Vec<_>>();
        for p in named.iter().filter(|p| !root().join(p).exists()) {
            missing.push(format!("{}: {p} does not exist", path.display()));
        }
        for l in links(&text).iter().filter(|l| !dir.join(l).exists()) {
            missing.push(format!("{}: link {l} leads nowhere", path.display()));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_readme_fits_in_200_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; move text into docs/"
    );
}

/// The parsers above find what they must: a wrong option, a missing variable.
#[test]
fn the_checks_see_a_wrong_name() {
    let pieces = code_pieces("run `rankmig run -n 2 --nope -- app --size 2` and\n`--also\nthis`");
    assert_eq!(
        invocations(&pieces[0]),
        vec![("run".to_owned(), vec!["--nope".to_owned()])]
    );
    assert_eq!(lone_options(&pieces[1]), vec!["--also".to_owned()]);
    let help = help("run").expect("rankmig run --help");
    assert!(lists_option(&help, "--spawn-timeout"));
    assert!(!lists_option(&help, "--spawn"));
    let names = variables("`RANKMIG_CKPT_*`, RANKMIG_NO_SUCH_THING.");
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["RANKMIG_CKPT_", "RANKMIG_NO_SUCH_THING"]
    );
    let sources = sources();
    assert!(defined(&sources, "RANKMIG_CKPT_"));
    assert!(defined(&sources, "RANKMIG_CKPT_DIR"));
    assert!(!defined(&sources, "RANKMIG_CKPT"));
    assert!(!defined(&sources, "RANKMIG_NO_SUCH_THING"));
}
