//! `rankmig report RUN_DIR`: a table per reconfiguration and an SVG chart like Fig. 4 of
//! the paper (stacked scheduling / migration / compute time per iteration,
//! reconfigurations marked, the node count over time).

use std::fmt::Write as _;
use std::path::Path;

use super::record::{IterationRecord, Reconfiguration, read_iterations, read_reconfigurations};

/// Per-iteration times of the job: for each iteration, the slowest rank's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JobIteration {
    /// Iteration (`checkpoint!` call).
    pub iteration: u64,
    /// Compute seconds.
    pub compute: f64,
    /// Scheduling seconds.
    pub scheduling: f64,
    /// Migration seconds.
    pub migration: f64,
}

/// A run directory read back.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Every availability change and what was done.
    pub reconfigurations: Vec<Reconfiguration>,
    /// The job's iterations.
    pub iterations: Vec<JobIteration>,
}

/// Reads a run directory.
pub fn read_run(run_dir: &Path) -> Result<RunReport, String> {
    let reconfigurations = read_reconfigurations(run_dir)?;
    let dir = run_dir.join("iterations");
    let mut per_rank: Vec<Vec<IterationRecord>> = Vec::new();
    if dir.is_dir() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            per_rank.push(read_iterations(&entry.path())?);
        }
    }
    Ok(RunReport {
        reconfigurations,
        iterations: slowest_per_iteration(&per_rank),
    })
}

fn slowest_per_iteration(per_rank: &[Vec<IterationRecord>]) -> Vec<JobIteration> {
    let last = per_rank
        .iter()
        .flatten()
        .map(|r| r.iteration)
        .max()
        .unwrap_or(0) as usize;
    let mut out: Vec<JobIteration> = (1..=last as u64)
        .map(|iteration| JobIteration {
            iteration,
            ..JobIteration::default()
        })
        .collect();
    for r in per_rank.iter().flatten() {
        if r.iteration == 0 {
            continue;
        }
        let slot = &mut out[r.iteration as usize - 1];
        slot.compute = slot.compute.max(r.compute);
        slot.scheduling = slot.scheduling.max(r.scheduling);
        slot.migration = slot.migration.max(r.migration);
    }
    out
}

/// The table of reconfigurations, one row each, then totals.
pub fn table(report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>3} {:>9} {:>8} {:<13} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  change",
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
        "total(ms)",
        "state(B)"
    );
    for r in &report.reconfigurations {
        let total = r.scheduling + r.phases.spawn + r.phases.transfer + r.phases.rebuild;
        let _ = writeln!(
            out,
            "{:>3} {:>9} {:>8.2} {:<13} {:>5} {:>5} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10}  {}",
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
            total * 1e3,
            r.state_bytes,
            r.change
        );
    }
    let sum = |f: fn(&JobIteration) -> f64| report.iterations.iter().map(f).sum::<f64>();
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

/// The chart: stacked per-iteration times (binned to at most 400 bars), reconfigurations
/// as vertical lines, the number of available nodes as a step line.
pub fn svg(report: &RunReport) -> String {
    const W: f64 = 960.0;
    const H: f64 = 420.0;
    const LEFT: f64 = 90.0;
    const RIGHT: f64 = 60.0;
    const TOP: f64 = 30.0;
    const BOTTOM: f64 = 50.0;
    let bins = bin(&report.iterations, 400);
    let max_total = y_range(&bins);
    let last_iter = report.iterations.last().map_or(1, |i| i.iteration).max(1) as f64;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x_of = |iteration: f64| LEFT + plot_w * iteration / last_iter;
    let y_of = |seconds: f64| TOP + plot_h * (1.0 - seconds / max_total);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="18">Time per iteration (slowest rank): compute, scheduling, migration</text>"#
    );
    for b in &bins {
        let x0 = x_of(b.first as f64 - 1.0);
        let width = (x_of(b.last as f64) - x0).max(0.5);
        let mut base = 0.0;
        for (value, color) in [
            (b.compute, "#4e79a7"),
            (b.scheduling, "#f28e2b"),
            (b.migration, "#e15759"),
        ] {
            if value > 0.0 && base < max_total {
                let top = (base + value).min(max_total);
                let (y1, y0) = (y_of(top), y_of(base));
                let _ = writeln!(
                    s,
                    r#"<rect x="{x0:.2}" y="{y1:.2}" width="{width:.2}" height="{:.2}" fill="{color}"/>"#,
                    (y0 - y1).max(0.0)
                );
            }
            base += value;
        }
        if base > max_total {
            // A clipped bar (a migration): its height is written next to it.
            let _ = writeln!(
                s,
                r##"<text x="{:.2}" y="{:.2}" font-size="10" fill="#e15759">{:.0} ms</text>"##,
                x0 + width + 2.0,
                TOP + 24.0,
                base * 1e3
            );
        }
    }
    axes(&mut s, LEFT, TOP, plot_w, plot_h, max_total, last_iter);
    node_line(&mut s, report, &x_of, LEFT, TOP, plot_w, plot_h);
    for r in &report.reconfigurations {
        let x = x_of(r.iteration as f64);
        let color = if r.outcome == "migrated" {
            "#59a14f"
        } else {
            "#999999"
        };
        let _ = writeln!(
            s,
            r#"<line x1="{x:.2}" y1="{TOP}" x2="{x:.2}" y2="{:.2}" stroke="{color}" stroke-dasharray="4,3"/>"#,
            TOP + plot_h
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.2}" y="{:.2}" fill="{color}">#{} {}</text>"#,
            x + 3.0,
            TOP + 12.0,
            r.index,
            r.moves
        );
    }
    legend(&mut s, LEFT, H - 12.0);
    s.push_str("</svg>\n");
    s
}

/// Top of the y axis: 4 × the 95th percentile of the bars, so ordinary iterations stay
/// readable; taller bars (migrations) are clipped and labelled.
fn y_range(bins: &[Bin]) -> f64 {
    let mut totals: Vec<f64> = bins
        .iter()
        .map(|b| b.compute + b.scheduling + b.migration)
        .collect();
    totals.sort_by(f64::total_cmp);
    let max = totals.last().copied().unwrap_or(0.0);
    let p95 = totals
        .get(totals.len().saturating_sub(1) * 95 / 100)
        .copied()
        .unwrap_or(0.0);
    max.min(4.0 * p95).max(1e-9)
}

/// Iterations averaged into at most `max_bins` bins.
#[derive(Debug, Clone, Copy)]
struct Bin {
    first: u64,
    last: u64,
    compute: f64,
    scheduling: f64,
    migration: f64,
}

fn bin(iterations: &[JobIteration], max_bins: usize) -> Vec<Bin> {
    if iterations.is_empty() {
        return Vec::new();
    }
    let per_bin = iterations.len().div_ceil(max_bins.max(1));
    iterations
        .chunks(per_bin)
        .map(|c| {
            let n = c.len() as f64;
            Bin {
                first: c[0].iteration,
                last: c[c.len() - 1].iteration,
                compute: c.iter().map(|i| i.compute).sum::<f64>() / n,
                // Scheduling and migration happen at single iterations: keep their
                // peak so a reconfiguration stays visible after binning.
                scheduling: c.iter().map(|i| i.scheduling).fold(0.0, f64::max),
                migration: c.iter().map(|i| i.migration).fold(0.0, f64::max),
            }
        })
        .collect()
}

fn axes(s: &mut String, left: f64, top: f64, w: f64, h: f64, max_total: f64, last_iter: f64) {
    let bottom = top + h;
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="black"/>"#,
        left + w
    );
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="black"/>"#
    );
    for k in 0..=4 {
        let f = k as f64 / 4.0;
        let y = bottom - h * f;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{:.2} ms</text>"#,
            left - 4.0,
            y + 4.0,
            max_total * f * 1e3
        );
        let x = left + w * f;
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{:.0}</text>"#,
            bottom + 16.0,
            last_iter * f
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">iteration</text>"#,
        left + w / 2.0,
        bottom + 32.0
    );
}

fn node_line(
    s: &mut String,
    report: &RunReport,
    x_of: &dyn Fn(f64) -> f64,
    left: f64,
    top: f64,
    w: f64,
    h: f64,
) {
    let changes: Vec<(f64, usize)> = report
        .reconfigurations
        .iter()
        .filter(|r| r.nodes > 0 && r.outcome != "refused")
        .map(|r| (r.iteration as f64, r.nodes))
        .collect();
    let max_nodes = changes.iter().map(|c| c.1).max().unwrap_or(1).max(1) as f64;
    let y_of = |n: usize| top + h * (1.0 - n as f64 / (max_nodes * 1.1));
    let mut points = Vec::new();
    let mut current = changes.first().map_or(0, |c| c.1);
    points.push((left, y_of(current)));
    for &(it, n) in &changes {
        let x = x_of(it);
        points.push((x, y_of(current)));
        points.push((x, y_of(n)));
        current = n;
    }
    points.push((left + w, y_of(current)));
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.2},{y:.2}"))
        .collect();
    let _ = writeln!(
        s,
        r#"<polyline points="{}" fill="none" stroke="black" stroke-width="2"/>"#,
        path.join(" ")
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}">nodes: {current}</text>"#,
        left + w + 4.0,
        y_of(current) + 4.0
    );
}

fn legend(s: &mut String, left: f64, y: f64) {
    let items = [
        ("#4e79a7", "compute"),
        ("#f28e2b", "scheduling"),
        ("#e15759", "migration"),
        ("#59a14f", "reconfiguration"),
        ("black", "available nodes"),
    ];
    let mut x = left;
    for (color, label) in items {
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{:.1}" width="10" height="10" fill="{color}"/>"#,
            y - 9.0
        );
        let _ = writeln!(s, r#"<text x="{:.1}" y="{y}">{label}</text>"#, x + 14.0);
        x += 130.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(iteration: u64, compute: f64, migration: f64) -> IterationRecord {
        IterationRecord {
            iteration,
            compute,
            scheduling: 0.0,
            migration,
        }
    }

    #[test]
    fn slowest_rank_per_iteration_and_binning() {
        let per_rank = vec![
            vec![it(1, 1.0, 0.0), it(2, 1.0, 0.5)],
            vec![it(1, 2.0, 0.0), it(2, 0.5, 0.1)],
        ];
        let job = slowest_per_iteration(&per_rank);
        assert_eq!(job.len(), 2);
        assert_eq!(job[0].compute, 2.0);
        assert_eq!(job[1].migration, 0.5);
        let bins = bin(&job, 1);
        assert_eq!(bins.len(), 1);
        assert_eq!(bins[0].compute, 1.5);
        assert_eq!(bins[0].migration, 0.5);
        let report = RunReport {
            reconfigurations: Vec::new(),
            iterations: job,
        };
        let chart = svg(&report);
        assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
        assert!(table(&report).contains("iterations: 2"));
    }
}
