//! The timeline of one permutation as an SVG Gantt chart: a row per phase, a bar from its
//! start to its end coloured by status, and a time axis. All permutations share one time
//! scale so their charts line up for comparison.

use super::colors;
use super::markup::{el, num, Element};
use super::scale::{horizontal_axis, nice_step, seconds_label, AxisPlace, Scale};
use crate::result::{PhaseResult, PhaseStatus, RunResult};

const LABEL_W: f64 = 150.0;
const PLOT_W: f64 = 700.0;
/// Room right of the plot for the duration label of a bar that ends at the edge.
const RIGHT_W: f64 = 110.0;
const TOP: f64 = 6.0;
const ROW_H: f64 = 20.0;
const BAR_H: f64 = 12.0;
const AXIS_H: f64 = 26.0;
const TARGET_TICKS: usize = 8;

/// The time scale shared by every chart: up to the latest phase end (or run end) of all runs.
pub fn time_scale(runs: &[&RunResult]) -> Scale {
    let latest = runs
        .iter()
        .flat_map(|r| {
            r.phases
                .iter()
                .filter_map(|p| p.end_ms.or(p.start_ms))
                .chain([r.duration_ms])
        })
        .max()
        .unwrap_or(0);
    Scale::covering(latest as f64, PLOT_W, TARGET_TICKS)
}

/// `<svg class="gantt" data-permutation="ID">` for one run.
pub fn gantt(run: &RunResult, scale: Scale) -> Element {
    let axis_y = TOP + run.phases.len() as f64 * ROW_H + 2.0;
    let height = axis_y + AXIS_H;
    let width = LABEL_W + PLOT_W + RIGHT_W;
    let mut svg = el("svg")
        .attr("class", "gantt")
        .attr("data-permutation", &run.id)
        .attr("xmlns", "http://www.w3.org/2000/svg")
        .attr("width", num(width))
        .attr("height", num(height))
        .attr("viewBox", format!("0 0 {} {}", num(width), num(height)))
        .attr("role", "img")
        .attr("aria-label", format!("timeline of {}", run.id))
        .child(time_axis(scale, axis_y));
    for (row, phase) in run.phases.iter().enumerate() {
        svg = svg.child(phase_row(run, phase, row, scale));
    }
    svg
}

fn time_axis(scale: Scale, axis_y: f64) -> Element {
    let step = nice_step(scale.max, TARGET_TICKS);
    let at = AxisPlace {
        left: LABEL_W,
        width: PLOT_W,
        top: TOP,
        axis_y,
    };
    horizontal_axis(scale, at, TARGET_TICKS, |t| seconds_label(t, step))
}

fn phase_row(run: &RunResult, phase: &PhaseResult, row: usize, scale: Scale) -> Element {
    let y = TOP + row as f64 * ROW_H;
    let text_y = y + ROW_H / 2.0 + 4.0;
    let mut g = el("g")
        .attr("class", "phase")
        .attr("data-phase", &phase.name)
        .child(
            el("text")
                .attr("class", "label")
                .attr("x", num(LABEL_W - 8.0))
                .attr("y", num(text_y))
                .attr("text-anchor", "end")
                .text(&phase.name),
        );
    let Some(start) = phase.start_ms else {
        return g.child(
            el("text")
                .attr("class", "unreached")
                .attr("x", num(LABEL_W + 4.0))
                .attr("y", num(text_y))
                .text("not reached"),
        );
    };
    // A phase cut short without an end (the run stopped inside it) ends with the run.
    let end = phase.end_ms.unwrap_or(run.duration_ms).max(start);
    let x = LABEL_W + scale.px(start as f64);
    let w = (scale.px(end as f64) - scale.px(start as f64)).max(2.0);
    let duration = phase.duration_ms.unwrap_or(end - start);
    let label = match phase.status {
        PhaseStatus::Pass => format!("{:.1} s", duration as f64 / 1000.0),
        other => format!("{:.1} s {other}", duration as f64 / 1000.0),
    };
    let mut tip = format!(
        "{}: {}, {:.1} s to {:.1} s ({:.1} s)",
        phase.name,
        phase.status,
        start as f64 / 1000.0,
        end as f64 / 1000.0,
        duration as f64 / 1000.0
    );
    if !phase.detail.is_empty() {
        tip.push_str(&format!("; {}", phase.detail));
    }
    g = g
        .child(
            el("rect")
                .attr("class", format!("bar status-{}", phase.status))
                .attr("x", num(x))
                .attr("y", num(y + (ROW_H - BAR_H) / 2.0))
                .attr("width", num(w))
                .attr("height", num(BAR_H))
                .attr("fill", colors::phase(phase.status))
                .tooltip(tip),
        )
        .child(
            el("text")
                .attr("class", "value")
                .attr("x", num(x + w + 4.0))
                .attr("y", num(text_y))
                .text(label),
        );
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    #[test]
    fn a_bar_per_reached_phase_coloured_by_status() {
        let pass = sample_pass("p&<q>");
        let fail = sample_fail("f", "x");
        let scale = time_scale(&[&pass, &fail]);
        assert_eq!(scale.max, 70_000.0, "covers the pass run's 61.2 s");

        let svg = gantt(&pass, scale).render();
        assert!(svg.starts_with("<svg class=\"gantt\" data-permutation=\"p&amp;&lt;q&gt;\""));
        assert_eq!(svg.matches("<rect class=\"bar status-pass\"").count(), 11);
        assert!(svg.contains(&format!("fill=\"{}\"", colors::PASS)));
        assert!(svg.contains(">bootstrap-cleanup</text>"));
        // Ticks every 10 s up to 70 s.
        assert!(svg.contains(">0 s</text>") && svg.contains(">70 s</text>"));
        // Bootkube ran from 2 s to 3 s: x = 150 + 2/70 * 700 = 170, width 10.
        assert!(svg.contains(
            "<rect class=\"bar status-pass\" x=\"170.0\" y=\"50.0\" width=\"10.0\" height=\"12.0\""
        ));

        let svg = gantt(&fail, scale).render();
        assert_eq!(svg.matches("<rect class=\"bar").count(), 3);
        assert!(svg.contains(&format!(
            "class=\"bar status-timeout\" x=\"170.0\" y=\"50.0\" width=\"10.0\" height=\"12.0\" fill=\"{}\"",
            colors::TIMEOUT
        )));
        assert!(svg.contains(">1.0 s timeout</text>"));
        assert_eq!(svg.matches(">not reached</text>").count(), 8);
        assert!(svg.contains("last seen: bootkube.sh line 40, 600 s ago"));
    }
}
