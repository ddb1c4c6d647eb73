//! The chart of `rankmig report`, drawn with `plotters` into an SVG string.
//!
//! One bar per iteration (or per group of consecutive iterations when there are more
//! than [`MAX_BARS`]: the bar is then the slowest iteration of its group, so that a
//! reconfiguration is never averaged away and the three parts of a bar always come from
//! one iteration of one rank). Each bar stacks compute, scheduling and migration on a
//! logarithmic time axis spanning whole decades, from below the shortest compute time to
//! above the longest iteration, so nothing is clipped. Reconfigurations are dashed
//! vertical lines labelled `#index`; the number of nodes in use is a step line on the
//! right-hand axis.

use std::ops::Range;

use plotters::prelude::*;

use super::{JobIteration, ReportError, RunReport};

/// At most this many bars; more iterations are grouped.
pub const MAX_BARS: usize = 800;

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 500;
const LEGEND_HEIGHT: u32 = 36;
const FONT: &str = "sans-serif";
/// Minimum width of a bar holding a migration.
const SPIKE_PIXELS: f64 = 3.0;

const COMPUTE: RGBColor = RGBColor(0x4e, 0x79, 0xa7);
const SCHEDULING: RGBColor = RGBColor(0xf2, 0x8e, 0x2b);
const MIGRATION: RGBColor = RGBColor(0xe1, 0x57, 0x59);
const MIGRATED: RGBColor = RGBColor(0x59, 0xa1, 0x4f);
const NOT_MIGRATED: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// One bar: iterations `first..=last`, drawn with the times of the slowest of them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bar {
    first: u64,
    last: u64,
    slowest: JobIteration,
}

/// Groups iterations into at most `max_bars` bars of consecutive iterations, each drawn
/// as its slowest iteration. Returns the bars and the group size.
fn bars(iterations: &[JobIteration], max_bars: usize) -> (Vec<Bar>, usize) {
    if iterations.is_empty() {
        return (Vec::new(), 1);
    }
    let per_bar = iterations.len().div_ceil(max_bars.max(1));
    let bars = iterations
        .chunks(per_bar)
        .filter_map(|group| {
            let slowest = group
                .iter()
                .copied()
                .max_by(|a, b| a.total().total_cmp(&b.total()))?;
            Some(Bar {
                first: group.first()?.iteration,
                last: group.last()?.iteration,
                slowest,
            })
        })
        .collect();
    (bars, per_bar)
}

/// The time axis (seconds): whole decades from below the shortest positive compute time
/// (or iteration) to above the longest iteration.
fn time_axis(iterations: &[JobIteration]) -> Range<f64> {
    let positive = |f: fn(&JobIteration) -> f64| {
        iterations
            .iter()
            .map(f)
            .filter(|v| *v > 0.0 && v.is_finite())
    };
    let shortest = positive(|i| i.compute)
        .chain(positive(|i| i.total()))
        .fold(f64::INFINITY, f64::min);
    let longest = positive(|i| i.total()).fold(0.0, f64::max);
    if longest <= 0.0 {
        return 1e-3..1.0;
    }
    let low = 10f64.powf(shortest.log10().floor());
    let mut high = 10f64.powf(longest.log10().ceil());
    if high <= longest * 1.05 {
        // A total on a decade would touch the frame: one more decade.
        high *= 10.0;
    }
    // A hair wider than the decades, so rounding in the log mapping keeps both end
    // decades as ticks.
    low * (1.0 - 1e-9)..high * (1.0 + 1e-9)
}

/// A duration for an axis tick: `100 µs`, `1 ms`, `10 s`.
fn seconds_label(v: f64) -> String {
    let (value, unit) = if v >= 1.0 {
        (v, "s")
    } else if v >= 1e-3 {
        (v * 1e3, "ms")
    } else {
        (v * 1e6, "µs")
    };
    // Ticks are decades, so whole numbers; round off the powf error.
    let rounded = (value * 1000.0).round() / 1000.0;
    format!("{rounded} {unit}")
}

/// The chart as an SVG document.
pub fn svg(report: &RunReport) -> Result<String, ReportError> {
    let mut out = String::new();
    draw(report, &mut out).map_err(|e| ReportError::Chart(e.to_string()))?;
    Ok(out)
}

/// The right end of the iteration axis: the last iteration or reconfiguration, at least 1.
fn last_iteration(report: &RunReport) -> f64 {
    report
        .iterations
        .iter()
        .map(|i| i.iteration)
        .chain(report.reconfigurations.iter().map(|r| r.iteration))
        .max()
        .unwrap_or(0)
        .max(1) as f64
}

/// The top of the nodes-in-use axis: the most nodes in use at once, at least 1.
fn max_nodes(report: &RunReport) -> i32 {
    report
        .nodes_in_use
        .iter()
        .map(|n| n.1)
        .max()
        .unwrap_or(0)
        .max(1) as i32
}

/// Where each reconfiguration is marked: its iteration, its colour (migrated or not)
/// and its label, `#INDEX` (then `contention` when the contention watch made it) and the time of that iteration when it was recorded, and for
/// a migration the time the ranks were held (`paused 31 ms`; its spawn may have run in
/// the background, while the ranks computed).
fn reconfiguration_marks(report: &RunReport) -> Vec<(f64, RGBColor, String)> {
    report
        .reconfigurations
        .iter()
        .map(|r| {
            let color = if r.outcome == "migrated" {
                MIGRATED
            } else {
                NOT_MIGRATED
            };
            let time = report
                .iterations
                .iter()
                .find(|i| i.iteration == r.iteration)
                .map(|i| format!(" {:.2} s", i.total()))
                .unwrap_or_default();
            let pause = if r.phases.pause > 0.0 {
                format!(", paused {:.0} ms", r.phases.pause * 1e3)
            } else {
                String::new()
            };
            // Marked "contention" when the contention watch made it, not an edit.
            let cause = if r.by_contention() { " contention" } else { "" };
            (
                r.iteration as f64,
                color,
                format!("#{}{cause}{time}{pause}", r.index),
            )
        })
        .collect()
}

fn draw(report: &RunReport, out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let (bars, per_bar) = bars(&report.iterations, MAX_BARS);
    let y = time_axis(&report.iterations);
    let last_iteration = last_iteration(report);
    let max_nodes = max_nodes(report);

    let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_vertically(HEIGHT - LEGEND_HEIGHT);
    let x_desc = if per_bar > 1 {
        format!("iteration (each bar: the slowest of {per_bar} iterations)")
    } else {
        "iteration".to_owned()
    };
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(
            "Time per iteration of the slowest rank",
            (FONT, 18).into_font(),
        )
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0.0..last_iteration, y.clone().log_scale())?
        .set_secondary_coord(0.0..last_iteration, 0..max_nodes + 1);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc(x_desc)
        .y_desc("seconds (log scale)")
        .x_labels(10)
        .y_labels(12)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| seconds_label(*v))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("nodes in use")
        .y_labels(max_nodes as usize + 2)
        .y_label_formatter(&|v| format!("{v}"))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;

    // A bar holding a migration is drawn at least SPIKE_PIXELS wide, centred on itself,
    // so that a one-iteration spike stays visible among hundreds of bars.
    let (plot_pixels, _) = chart.plotting_area().dim_in_pixel();
    let spike_width = last_iteration * SPIKE_PIXELS / f64::from(plot_pixels.max(1));
    let extent = |bar: &Bar| {
        let (from, to) = (bar.first as f64 - 1.0, bar.last as f64);
        if bar.slowest.migration > 0.0 && to - from < spike_width {
            let middle = (from + to) / 2.0;
            (middle - spike_width / 2.0, middle + spike_width / 2.0)
        } else {
            (from, to)
        }
    };
    // Stacked bars: compute from the bottom of the axis, then scheduling, then migration.
    // The node line is drawn over compute and scheduling, and under the migrations.
    for (part, color) in [(0, COMPUTE), (1, SCHEDULING), (2, MIGRATION)] {
        if part == 2 {
            let steps = node_steps(&report.nodes_in_use, last_iteration);
            chart.draw_secondary_series(LineSeries::new(steps, BLACK.stroke_width(2)))?;
        }
        chart.draw_series(bars.iter().filter_map(|bar| {
            let (left, right) = extent(bar);
            let i = &bar.slowest;
            let (from, to) = match part {
                0 => (y.start, i.compute),
                1 => (i.compute, i.compute + i.scheduling),
                _ => (i.compute + i.scheduling, i.total()),
            };
            let from = from.max(y.start);
            (to > from).then(|| Rectangle::new([(left, from), (right, to)], color.filled()))
        }))?;
    }

    for (x, color, label) in reconfiguration_marks(report) {
        chart.draw_series(DashedLineSeries::new(
            [(x, y.start), (x, y.end)],
            5,
            4,
            color.stroke_width(1),
        ))?;
        chart.draw_series(std::iter::once(
            EmptyElement::at((x, y.end))
                + Text::new(label, (3, 2), (FONT, 12).into_font().color(&color)),
        ))?;
    }

    legend(&legend_area)?;
    root.present()?;
    Ok(())
}

/// The node count as a step line: `(iteration, nodes)` corners from 0 to `last`.
fn node_steps(nodes_in_use: &[(u64, usize)], last: f64) -> Vec<(f64, i32)> {
    let Some(&(_, first)) = nodes_in_use.first() else {
        return Vec::new();
    };
    let mut current = first as i32;
    let mut steps = vec![(0.0, current)];
    for &(iteration, nodes) in nodes_in_use {
        steps.push((iteration as f64, current));
        current = nodes as i32;
        steps.push((iteration as f64, current));
    }
    steps.push((last, current));
    steps
}

/// The legend, in its own strip under the plot so it covers neither data nor labels.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let items: [(&str, RGBColor, bool); 6] = [
        ("compute", COMPUTE, true),
        ("scheduling", SCHEDULING, true),
        ("migration", MIGRATION, true),
        ("reconfiguration (migrated)", MIGRATED, false),
        ("reconfiguration (no migration)", NOT_MIGRATED, false),
        ("nodes in use (right axis)", BLACK, false),
    ];
    let font: TextStyle = (FONT, 13).into_font().into();
    let mut x = 20;
    let y = 10;
    for (label, color, filled) in items {
        if filled {
            area.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], color.filled()))?;
        } else {
            area.draw(&PathElement::new(
                [(x, y + 7), (x + 14, y + 7)],
                color.stroke_width(2),
            ))?;
        }
        area.draw(&Text::new(label, (x + 19, y), font.clone()))?;
        let (w, _) = area.estimate_text_size(label, &font)?;
        x += 19 + w as i32 + 18;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iteration(iteration: u64, compute: f64, migration: f64) -> JobIteration {
        JobIteration {
            iteration,
            compute,
            migration,
            ..JobIteration::default()
        }
    }

    #[test]
    fn a_three_second_migration_is_inside_the_time_axis() {
        let mut its: Vec<JobIteration> = (1..=1000).map(|i| iteration(i, 4e-4, 0.0)).collect();
        its[499].migration = 3.0;
        let axis = time_axis(&its);
        assert!(axis.start <= 4e-4, "{axis:?}");
        assert!(axis.end > 3.0 + 4e-4, "{axis:?}");
        // Whole decades.
        assert!((axis.end - 10.0).abs() < 1e-6, "{axis:?}");
        assert!((axis.start - 1e-4).abs() < 1e-12, "{axis:?}");
    }

    #[test]
    fn grouped_bars_keep_the_slowest_iteration_whole() {
        let mut its: Vec<JobIteration> = (1..=10).map(|i| iteration(i, 1e-3, 0.0)).collect();
        its[3].compute = 2e-3;
        its[6].migration = 1.5;
        let (bars, per_bar) = bars(&its, 1);
        assert_eq!(per_bar, 10);
        assert_eq!(bars.len(), 1);
        assert_eq!((bars[0].first, bars[0].last), (1, 10));
        assert_eq!(bars[0].slowest.iteration, 7);
        assert_eq!(bars[0].slowest.compute, 1e-3);
        assert_eq!(bars[0].slowest.migration, 1.5);
    }

    #[test]
    fn tick_labels_are_round() {
        assert_eq!(seconds_label(10f64.powf(-4.0)), "100 µs");
        assert_eq!(seconds_label(10f64.powf(-3.0)), "1 ms");
        assert_eq!(seconds_label(1.0), "1 s");
        assert_eq!(seconds_label(10.0), "10 s");
    }

    #[test]
    fn a_contention_move_is_marked_as_such() {
        let record = |index: u64, change: &str| -> crate::run_dir::record::Reconfiguration {
            let text = format!(
                r#"{{"index":{index},"iteration":{index},"at_seconds":1.0,"change":"{change}","nodes":3,"outcome":"migrated","detail":null,"moves":1,"minimum_moves":1,"hop_bytes_before":0.0,"hop_bytes_after":0.0,"scheduling":0.0,"phases":{{"spawn":0.0,"transfer":0.0,"rebuild":0.0}},"state_bytes":0}}"#
            );
            serde_json::from_str(&text).expect("record")
        };
        let report = RunReport {
            reconfigurations: vec![
                record(1, "removed n1 (had 1 core)"),
                record(
                    2,
                    "contention: n2's ranks waited 67% of 10 s for a CPU; 0 of 1 core usable",
                ),
            ],
            ..RunReport::default()
        };
        let labels: Vec<String> = reconfiguration_marks(&report)
            .into_iter()
            .map(|m| m.2)
            .collect();
        assert_eq!(labels, ["#1", "#2 contention"]);
    }
}
