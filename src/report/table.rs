//! The text table of `rankmig report`.

use std::fmt::Write as _;

use super::{JobIteration, RunReport};

/// The table of reconfigurations, one row each, then the job's total compute,
/// scheduling and migration time (slowest rank per iteration).
pub fn table(report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>3} {:>9} {:>8} {:<13} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  change",
        "#",
        "iteration",
        "time(s)",
        "outcome",
        "moves",
        "min",
        "sched(ms)",
        "spawn(ms)",
        "xfer(ms)",
        "rebuild(ms)",
        "pause(ms)",
        "bg(ms)",
        "total(ms)",
        "state(B)"
    );
    for r in &report.reconfigurations {
        // The held time: the recorded pause, or (records without one) the phases.
        let held = if r.phases.pause > 0.0 {
            r.phases.pause
        } else {
            r.phases.spawn + r.phases.transfer + r.phases.rebuild
        };
        let total = r.scheduling + held;
        let _ = writeln!(
            out,
            "{:>3} {:>9} {:>8.2} {:<13} {:>5} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10}  {}",
            r.index,
            r.iteration,
            r.at_seconds,
            r.outcome,
            r.moves,
            r.minimum_moves,
            r.scheduling * 1e3,
            r.phases.spawn * 1e3,
            r.phases.transfer * 1e3,
            r.phases.rebuild * 1e3,
            r.phases.pause * 1e3,
            r.phases.background * 1e3,
            total * 1e3,
            r.state_bytes,
            r.change
        );
    }
    // Folded from +0.0: an empty f64 sum is −0.0 and would print as "-0.000".
    let sum = |f: fn(&JobIteration) -> f64| report.iterations.iter().map(f).fold(0.0, |a, b| a + b);
    let _ = writeln!(
        out,
        "iterations: {}; compute {:.3} s, scheduling {:.3} s, migration {:.3} s (slowest rank per iteration)",
        report.iterations.len(),
        sum(|i| i.compute),
        sum(|i| i.scheduling),
        sum(|i| i.migration)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_run_totals_zero_not_minus_zero() {
        let text = table(&RunReport::default());
        assert!(text.contains("compute 0.000 s"), "{text}");
        assert!(!text.contains("-0.000"), "{text}");
    }
}
