//! Disk-write throughput as an SVG bar chart: a bar of MiB/s per permutation.

use super::colors;
use super::markup::{el, num, Element};
use super::scale::{horizontal_axis, AxisPlace, Scale};
use crate::result::RunResult;

const PLOT_W: f64 = 560.0;
const VALUE_W: f64 = 110.0;
const TOP: f64 = 6.0;
const ROW_H: f64 = 22.0;
const BAR_H: f64 = 14.0;
const AXIS_H: f64 = 26.0;
const TARGET_TICKS: usize = 6;
/// Ids longer than this are cut in the label (the tooltip has them whole).
const LABEL_CHARS: usize = 48;
/// Width of a character of the monospace label font, in pixels (12 px DejaVu Sans Mono).
const CHAR_W: f64 = 7.3;

/// `<svg id="throughput">`: one row per run, its MiB/s as a bar, or "no disk write".
pub fn throughput_chart(runs: &[&RunResult]) -> Element {
    let label_w = runs
        .iter()
        .map(|r| r.id.chars().count().min(LABEL_CHARS))
        .max()
        .unwrap_or(0) as f64
        * CHAR_W
        + 16.0;
    let max = runs
        .iter()
        .filter_map(|r| r.disk_write.as_ref().map(|w| w.mib_per_s))
        .fold(0.0, f64::max);
    let scale = Scale::covering(max, PLOT_W, TARGET_TICKS);
    let axis_y = TOP + runs.len() as f64 * ROW_H + 2.0;
    let width = label_w + PLOT_W + VALUE_W;
    let height = axis_y + AXIS_H;

    let mut svg = el("svg")
        .attr("id", "throughput")
        .attr("xmlns", "http://www.w3.org/2000/svg")
        .attr("width", num(width))
        .attr("height", num(height))
        .attr("viewBox", format!("0 0 {} {}", num(width), num(height)))
        .attr("role", "img")
        .attr("aria-label", "disk-write throughput per permutation, MiB/s");
    let at = AxisPlace {
        left: label_w,
        width: PLOT_W,
        top: TOP,
        axis_y,
    };
    let axis = horizontal_axis(scale, at, TARGET_TICKS, |t| format!("{t}"));
    svg = svg.child(axis).child(
        el("text")
            .attr("class", "tick")
            .attr("x", num(label_w + PLOT_W + 20.0))
            .attr("y", num(axis_y + 17.0))
            .text("MiB/s"),
    );

    for (row, run) in runs.iter().enumerate() {
        let y = TOP + row as f64 * ROW_H;
        let text_y = y + ROW_H / 2.0 + 4.0;
        let mut g = el("g")
            .attr("class", "row")
            .attr("data-permutation", &run.id)
            .child(
                el("text")
                    .attr("class", "label mono")
                    .attr("x", num(label_w - 8.0))
                    .attr("y", num(text_y))
                    .attr("text-anchor", "end")
                    .text(cut(&run.id))
                    .tooltip(&run.id),
            );
        g = match &run.disk_write {
            Some(w) => {
                let bar_w = scale.px(w.mib_per_s).max(1.0);
                g.child(
                    el("rect")
                        .attr("class", "bar")
                        .attr("x", num(label_w))
                        .attr("y", num(y + (ROW_H - BAR_H) / 2.0))
                        .attr("width", num(bar_w))
                        .attr("height", num(BAR_H))
                        .attr("fill", colors::THROUGHPUT)
                        .tooltip(format!(
                            "{}: {:.1} MiB/s, {} bytes to {} in {:.1} s ({})",
                            run.id,
                            w.mib_per_s,
                            w.bytes,
                            w.disk,
                            w.duration_ms as f64 / 1000.0,
                            w.source
                        )),
                )
                .child(
                    el("text")
                        .attr("class", "value")
                        .attr("x", num(label_w + bar_w + 4.0))
                        .attr("y", num(text_y))
                        .text(format!("{:.1} MiB/s", w.mib_per_s)),
                )
            }
            None => g.child(
                el("text")
                    .attr("class", "unreached")
                    .attr("x", num(label_w + 4.0))
                    .attr("y", num(text_y))
                    .text("no disk write"),
            ),
        };
        svg = svg.child(g);
    }
    svg
}

fn cut(id: &str) -> String {
    if id.chars().count() <= LABEL_CHARS {
        return id.to_string();
    }
    let mut s: String = id.chars().take(LABEL_CHARS - 1).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    #[test]
    fn bars_for_measured_runs_and_a_note_for_the_others() {
        let a = sample_pass("a");
        let mut b = sample_pass("b");
        b.disk_write.as_mut().unwrap().mib_per_s = 41.3;
        let c = sample_fail(&"c".repeat(60), "x");
        let svg = throughput_chart(&[&a, &b, &c]).render();
        assert!(svg.starts_with("<svg id=\"throughput\""));
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 2);
        assert!(svg.contains(">82.6 MiB/s</text>") && svg.contains(">41.3 MiB/s</text>"));
        assert_eq!(svg.matches(">no disk write</text>").count(), 1);
        // The long id is cut in the label, whole in the tooltip.
        assert!(svg.contains(&format!(
            ">{}…<title>{}</title>",
            "c".repeat(47),
            "c".repeat(60)
        )));
        // Scale 0..100 MiB/s over 560 px: 82.6 MiB/s is 462.6 px wide.
        assert!(svg.contains("width=\"462.6\""));
        // No runs at all still renders an (empty) chart.
        assert!(throughput_chart(&[])
            .render()
            .starts_with("<svg id=\"throughput\""));
    }
}
