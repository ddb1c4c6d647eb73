//! Fuzzing the parsers (issue 11, section 6): dense and edge-list matrices, `.prof`
//! dumps, availability files, placements, mapping files (`rankmig cost --mapping`),
//! checkpoint headers and commit markers, synthetic topology strings. See `tests/fuzz/mod.rs` for what counts as a finding.
//!
//! - `fuzz_every_parser_briefly`: 2 000 inputs per parser, part of the normal tests.
//! - `replay_the_corpus`: every file of `tests/fuzz_corpus/TARGET/` (inputs that found
//!   something once) must now pass.
//! - `fuzz_every_parser_long` (ignored): `RANKMIG_FUZZ_INPUTS` inputs per parser
//!   (default 1 000 000) from `RANKMIG_FUZZ_SEED` (default 11), for the parsers named
//!   in `RANKMIG_FUZZ_TARGETS` (default all), starting at input `RANKMIG_FUZZ_FIRST`
//!   (default 0; to resume or split a run), with a progress line every 100 000 inputs.
//!   Run it with `cargo test --release --test it -- fuzz_parsers:: --ignored --nocapture`.

// The fuzz driver stays in tests/fuzz/, beside its corpus in tests/fuzz_corpus/.
#[path = "../fuzz/mod.rs"]
mod fuzz;

use std::path::Path;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fuzz_all(count: u64, seed: u64) {
    let first = env_u64("RANKMIG_FUZZ_FIRST", 0);
    let only = std::env::var("RANKMIG_FUZZ_TARGETS").ok();
    let mut failures = Vec::new();
    for target in fuzz::targets::all() {
        if only
            .as_deref()
            .is_some_and(|list| !list.split(',').any(|t| t == target.name))
        {
            continue;
        }
        let start = std::time::Instant::now();
        let report = fuzz::fuzz(&target, seed, first, count);
        println!(
            "fuzz {:<13} seed {seed}: {} inputs from #{first}, {} passed, {} findings, {:.1} s",
            target.name,
            report.inputs,
            report.passed,
            report.findings.len(),
            start.elapsed().as_secs_f64()
        );
        for (index, problem) in report.findings.iter().take(20) {
            println!("  input {index}: {problem}");
        }
        if !report.findings.is_empty() {
            failures.push(format!(
                "{}: {} findings saved in {}",
                target.name,
                report.findings.len(),
                report.saved.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn fuzz_every_parser_briefly() {
    fuzz_all(2_000, env_u64("RANKMIG_FUZZ_SEED", 11));
}

#[test]
#[ignore = "long: one million inputs per parser"]
fn fuzz_every_parser_long() {
    fuzz_all(
        env_u64("RANKMIG_FUZZ_INPUTS", 1_000_000),
        env_u64("RANKMIG_FUZZ_SEED", 11),
    );
}

#[test]
fn replay_the_corpus() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus");
    let mut replayed = 0;
    let mut failures = Vec::new();
    for target in fuzz::targets::all() {
        let dir = corpus.join(target.name);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let scratch = fuzz::targets::Scratch::new();
        for entry in entries.flatten() {
            let data = std::fs::read(entry.path()).expect("corpus file");
            // Both parities: the targets alternate formats on the index.
            for index in 0..2 {
                replayed += 1;
                if let Err(problem) = fuzz::run_one(&target, &scratch, index, &data) {
                    failures.push(format!("{}: {problem}", entry.path().display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(replayed > 0, "no corpus under {}", corpus.display());
}
