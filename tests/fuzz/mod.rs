//! A stable-toolchain fuzz driver for rankmig's parsers (no `cargo fuzz`, which needs
//! nightly): seeded, reproducible inputs ([`mutate`]), one target per parser
//! ([`targets`]), and the allocator guard ([`guard`]).
//!
//! An input is a finding when the parser panics, breaks a property of its result,
//! makes a single allocation above [`ALLOC_LIMIT`] (inputs are at most 4 KB), or takes
//! longer than [`TIME_LIMIT`]. Findings are written to `target/fuzz-findings/TARGET/`
//! and belong, once fixed, in `tests/fuzz_corpus/TARGET/`, which the normal tests
//! replay.
#![allow(dead_code)]

pub mod guard;
pub mod mutate;
pub mod targets;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use targets::{Scratch, Target};

/// Largest single allocation an input of at most 4 KB may cause.
pub const ALLOC_LIMIT: usize = 64 << 20;
/// Longest time one input may take.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);

/// What a run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Inputs run.
    pub inputs: u64,
    /// Inputs without a finding (parsed, or refused with a clean error).
    pub passed: u64,
    /// `(input index, problem)` of each finding, the input saved under `saved`.
    pub findings: Vec<(u64, String)>,
    /// Where the findings were written.
    pub saved: PathBuf,
}

/// Runs one input; `Err` describes a finding.
pub fn run_one(target: &Target, scratch: &Scratch, index: u64, data: &[u8]) -> Result<(), String> {
    guard::start_input(index);
    let start = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (target.run)(scratch, index, data)
    }));
    let elapsed = start.elapsed();
    let largest = guard::largest_request();
    match outcome {
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            return Err(format!("panic: {msg}"));
        }
        Ok(Err(broken)) => return Err(broken),
        Ok(Ok(())) => {}
    }
    if largest > ALLOC_LIMIT {
        return Err(format!("allocation of {largest} bytes"));
    }
    if elapsed > TIME_LIMIT {
        return Err(format!("took {elapsed:?}"));
    }
    Ok(())
}

/// A progress line every this many inputs, so that a run cut short still says how far
/// it went.
const PROGRESS_EVERY: u64 = 100_000;

/// Runs `count` generated inputs of `target` from `seed`, starting at input `first`
/// (inputs are numbered and generated independently, so a long run can be resumed or
/// split).
pub fn fuzz(target: &Target, seed: u64, first: u64, count: u64) -> Report {
    let scratch = Scratch::new();
    let saved = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/fuzz-findings")
        .join(target.name);
    let mut report = Report {
        saved: saved.clone(),
        ..Report::default()
    };
    // Silence the panic messages of caught panics; findings are reported below.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    for index in first..first.saturating_add(count) {
        if index > first && (index - first) % PROGRESS_EVERY == 0 {
            println!(
                "  {}: {} inputs from #{first}, {} findings, {:.0} s",
                target.name,
                index - first,
                report.findings.len(),
                start.elapsed().as_secs_f64()
            );
        }
        let data = mutate::input(seed, target.name, index, &target.seeds, target.tokens);
        report.inputs += 1;
        match run_one(target, &scratch, index, &data) {
            Ok(_) => report.passed += 1,
            Err(problem) => {
                let _ = std::fs::create_dir_all(&saved);
                let _ = std::fs::write(saved.join(format!("{seed}-{index}")), &data);
                report.findings.push((index, problem));
            }
        }
    }
    std::panic::set_hook(hook);
    report
}
