//! The "Performance" section of a perf directory's report.html: the host context, and per
//! permutation a table per metric (its phases, the whole run, the disk write in seconds and in
//! MiB/s) with n, median, p90, min, max and standard deviation, each row with its
//! distribution as an inline SVG.
//!
//! A distribution plot shows every sample of the row as a dot (a link to the run's
//! result.json), a whisker from min to max, and markers for the median and p90. Each metric
//! has one axis, shared by every permutation (and every phase), so the plots read against each
//! other like the Gantt charts do. Only passed measured runs are plotted, as only they are in
//! the statistics: failed runs and warmups are listed under each permutation's runs, not drawn
//! (perf.json has no phase samples for them to draw).
//!
//! Stable hooks for tests and tools: `section#performance`, per permutation
//! `div.perf-permutation[data-permutation]`, `table.perf-stats[data-metric]` with a
//! `tr[data-row]` per row, `svg.dist` with a `circle.sample[data-run]` per sample,
//! `line.median`, `line.p90`, `line.whisker`, and `p.no-samples` where nothing passed.

use super::colors;
use super::markup::{el, href, num, Element};
use super::scale::{horizontal_axis, nice_step, seconds_label, AxisPlace, Scale};
use super::tables::{shorten, verdict_badge};
use crate::perf::model::{PerfReport, PermutationPerf, RunEntry, RunKind, Stat};
use crate::report::perf_md::{host_line, state_reuse_line};
use crate::result::RESULT_FILE;

/// The plot's width, and the room left and right of it: a dot at either end stays whole, and
/// so does the last tick's label, centred on the end.
const PLOT_W: f64 = 360.0;
const PAD: f64 = 8.0;
const RIGHT_PAD: f64 = 22.0;
const ROW_H: f64 = 22.0;
const AXIS_H: f64 = 24.0;
const DOT_R: f64 = 3.5;
const TARGET_TICKS: usize = 5;
/// Vertical offsets of the dots, taken in turn: equal samples then stand side by side
/// instead of hiding each other.
const LANES: [f64; 3] = [0.0, -5.0, 5.0];
/// The longest reason shown in a run list (the cell's tooltip has it whole).
const REASON_MAX: usize = 120;

/// The four metrics, each with its table and its axis.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Metric {
    Phase,
    Total,
    DiskSeconds,
    DiskMibS,
}

const METRICS: [Metric; 4] = [
    Metric::Phase,
    Metric::Total,
    Metric::DiskSeconds,
    Metric::DiskMibS,
];

impl Metric {
    fn title(self) -> &'static str {
        match self {
            Metric::Phase => "Phases",
            Metric::Total => "Whole run",
            Metric::DiskSeconds => "Disk write, seconds",
            Metric::DiskMibS => "Disk write, MiB/s (higher is faster)",
        }
    }

    /// The `data-metric` hook.
    fn hook(self) -> &'static str {
        match self {
            Metric::Phase => "phase",
            Metric::Total => "total",
            Metric::DiskSeconds => "disk-write-s",
            Metric::DiskMibS => "disk-write-mib-s",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Metric::DiskMibS => "MiB/s",
            _ => "s",
        }
    }

    fn first_column(self) -> &'static str {
        match self {
            Metric::Phase => "phase",
            Metric::Total => "run",
            Metric::DiskSeconds | Metric::DiskMibS => "disk",
        }
    }

    /// A permutation's rows of this metric: a name and its statistic.
    fn rows(self, p: &PermutationPerf) -> Vec<(String, &Stat)> {
        match self {
            Metric::Phase => p
                .phases
                .iter()
                .map(|s| (s.phase.clone(), &s.seconds))
                .collect(),
            Metric::Total => p
                .total_seconds
                .iter()
                .map(|t| ("whole run".to_string(), t))
                .collect(),
            Metric::DiskSeconds => p
                .disk_write
                .iter()
                .map(|d| (d.disk.clone(), &d.seconds))
                .collect(),
            Metric::DiskMibS => p
                .disk_write
                .iter()
                .map(|d| (d.disk.clone(), &d.mib_s))
                .collect(),
        }
    }

    /// The axis every permutation's rows of this metric share: up to the largest sample.
    fn scale(self, r: &PerfReport) -> Scale {
        let max = r
            .permutations
            .iter()
            .flat_map(|p| self.rows(p))
            .flat_map(|(_, s)| s.samples.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        Scale::covering(max, PLOT_W, TARGET_TICKS)
    }

    fn format(self, v: f64) -> String {
        match self {
            Metric::DiskMibS => format!("{v:.1}"),
            _ => format!("{v:.2}"),
        }
    }

    fn tick_label(self, t: f64, step: f64) -> String {
        match self {
            Metric::DiskMibS => format!("{t}"),
            _ => seconds_label(t * 1000.0, step * 1000.0),
        }
    }
}

/// `<section id="performance">` for `r`; `base` is the perf directory relative to the page
/// (`.` when the page is in it), the start of every link to a run.
pub fn performance_section(r: &PerfReport, base: &str) -> Element {
    let mut s = el("section")
        .attr("id", "performance")
        .child(el("h2").text("Performance"))
        .child(el("p").attr("class", "meta").text(how_it_ran(r)))
        .child(
            el("p")
                .attr("class", "meta host")
                .text(format!("Host: {}.", host_line(&r.host))),
        )
        .child(legend());
    if !r.warnings.is_empty() {
        s = s.child(warnings(&r.warnings));
    }
    if r.permutations.is_empty() {
        return s.child(
            el("p")
                .attr("class", "meta no-samples")
                .text("No permutation ran."),
        );
    }
    let scales: Vec<(Metric, Scale)> = METRICS.iter().map(|&m| (m, m.scale(r))).collect();
    for p in &r.permutations {
        s = s.child(permutation(p, &scales, base));
    }
    s
}

/// What the measurements are: runs, warmups, when, which permutations.
fn how_it_ran(r: &PerfReport) -> String {
    let mut how = format!(
        "{}: {} measured run(s) per permutation, after {} warmup run(s), one run at a time; {} to {}",
        r.source,
        r.repeat,
        r.warmup,
        r.started_at,
        if r.finished_at.is_empty() {
            "(still running)"
        } else {
            &r.finished_at
        }
    );
    if let Some(st) = &r.strategy {
        how.push_str(&format!("; strategy {st}"));
    }
    if let Some(f) = &r.filter {
        how.push_str(&format!("; filter {f}"));
    }
    if r.interrupted {
        how.push_str("; interrupted");
    }
    how + "."
}

fn legend() -> Element {
    let mark = |color: &str| el("span").attr("style", format!("background: {color}"));
    el("p")
        .attr("class", "meta legend")
        .text(
            "Each dot is a passed measured run (a link to its result.json), on one axis per \
             metric shared by every permutation. Failed runs and warmups are not plotted: \
             they are in no statistic, and are listed under Runs.",
        )
        .child(mark(colors::SAMPLE))
        .text("run")
        .child(mark(colors::MEDIAN))
        .text("median")
        .child(mark(colors::P90))
        .text("p90")
        .child(mark(colors::AXIS))
        .text("min to max")
}

fn warnings(ws: &[String]) -> Element {
    el("ul")
        .attr("class", "warnings")
        .children(ws.iter().map(|w| el("li").text(format!("warning: {w}"))))
}

fn permutation(p: &PermutationPerf, scales: &[(Metric, Scale)], base: &str) -> Element {
    let c = &p.counts;
    let mut counts = format!("  {} of {} measured runs passed", c.passed, c.measured);
    if c.measured < c.planned {
        counts.push_str(&format!(" ({} planned)", c.planned));
    }
    if c.warmups > 0 {
        counts.push_str(&format!("; {} warmup run(s), not plotted", c.warmups));
    }
    let mut div = el("div")
        .attr("class", "perf-permutation")
        .attr("data-permutation", &p.id)
        .child(
            el("h3")
                .child(el("span").attr("class", "mono").text(&p.id))
                .child(el("span").attr("class", "meta").text(counts)),
        );
    if !p.params.is_empty() {
        let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        div = div.child(
            el("p")
                .attr("class", "meta params mono")
                .text(params.join(", ")),
        );
    }
    if let Some(h) = &p.host {
        div = div.child(
            el("p")
                .attr("class", "meta host")
                .text(format!("Host differs: {}.", host_line(h))),
        );
    }
    if let Some(sr) = &p.state_reuse {
        div = div.child(
            el("p")
                .attr("class", "meta state-reuse")
                .text(format!("{}.", state_reuse_line(sr))),
        );
    }
    if !p.warnings.is_empty() {
        div = div.child(warnings(&p.warnings));
    }
    let tables: Vec<Element> = scales
        .iter()
        .filter_map(|&(m, scale)| metric_table(p, m, scale, base))
        .collect();
    if tables.is_empty() {
        div = div.child(
            el("p")
                .attr("class", "meta no-samples")
                .text("No passed measured run: no statistics, nothing to plot."),
        );
    }
    div.children(tables).child(run_list(p, base))
}

/// The table of one metric, `None` when the permutation has no sample of it.
fn metric_table(p: &PermutationPerf, m: Metric, scale: Scale, base: &str) -> Option<Element> {
    let rows = m.rows(p);
    if rows.is_empty() {
        return None;
    }
    let unit = m.unit();
    let head = el("tr")
        .child(el("th").text(m.first_column()))
        .children(["n", "median", "p90", "min", "max", "stddev"].map(|h| el("th").text(h)))
        .child(el("th").text(format!("distribution, {unit}")));
    let link = |run: u32| href(&[base, &run_dir(p, run), RESULT_FILE]);
    let body = rows.iter().map(|(name, stat)| {
        let s = &stat.summary;
        let cell = |v: f64| el("td").attr("class", "num").text(m.format(v));
        el("tr")
            .attr("data-row", name)
            .child(el("td").attr("class", "mono id").text(name))
            .child(el("td").attr("class", "num").text(s.n.to_string()))
            .children([s.median, s.p90, s.min, s.max, s.stddev].map(cell))
            .child(
                el("td")
                    .attr("class", "plot")
                    .child(distribution(stat, scale, name, unit, &link)),
            )
    });
    let foot = el("tr")
        .child(el("td").attr("class", "empty").attr("colspan", 7))
        .child(el("td").attr("class", "plot").child(axis(m, scale)));
    Some(
        el("div")
            .attr("class", "perf-metric")
            .child(el("h4").text(m.title()))
            .child(
                el("table")
                    .attr("class", "perf-stats")
                    .attr("data-metric", m.hook())
                    .child(el("thead").child(head))
                    .child(el("tbody").children(body))
                    .child(el("tfoot").child(foot)),
            ),
    )
}

/// The directory of measured run `index`, as perf.json lists it (its own layout when, in a
/// hand-edited file, the list lacks it).
fn run_dir(p: &PermutationPerf, index: u32) -> String {
    p.runs
        .iter()
        .find(|e| e.kind == RunKind::Measured && e.index == index)
        .map(|e| e.dir.clone())
        .unwrap_or_else(|| format!("{}/{}", p.id, RunKind::Measured.dir_name(index)))
}

fn svg(class: &'static str, height: f64, label: String) -> Element {
    let width = PAD + PLOT_W + RIGHT_PAD;
    el("svg")
        .attr("class", class)
        .attr("xmlns", "http://www.w3.org/2000/svg")
        .attr("width", num(width))
        .attr("height", num(height))
        .attr("viewBox", format!("0 0 {} {}", num(width), num(height)))
        .attr("role", "img")
        .attr("aria-label", label)
}

/// A vertical line across the row at `x`.
fn marker(class: &'static str, x: f64, color: &str, tip: String) -> Element {
    el("line")
        .attr("class", class)
        .attr("x1", num(x))
        .attr("x2", num(x))
        .attr("y1", num(3.0))
        .attr("y2", num(ROW_H - 3.0))
        .attr("stroke", color)
        .attr("stroke-width", 2)
        .tooltip(tip)
}

/// `<svg class="dist">`: the whisker, the p90 and median markers, then the dots on top (so
/// that they stay clickable).
fn distribution(
    stat: &Stat,
    scale: Scale,
    name: &str,
    unit: &str,
    link: &dyn Fn(u32) -> String,
) -> Element {
    let x = |v: f64| PAD + scale.px(v);
    let mid = ROW_H / 2.0;
    let s = &stat.summary;
    let mut g = svg("dist", ROW_H, format!("distribution of {name}, {unit}"))
        .child(
            el("line")
                .attr("class", "whisker")
                .attr("x1", num(x(s.min)))
                .attr("x2", num(x(s.max)))
                .attr("y1", num(mid))
                .attr("y2", num(mid))
                .attr("stroke", colors::AXIS)
                .tooltip(format!("min {} {unit}, max {} {unit}", s.min, s.max)),
        )
        .child(
            marker(
                "p90",
                x(s.p90),
                colors::P90,
                format!("p90 {:.3} {unit}", s.p90),
            )
            .attr("stroke-dasharray", "3 2"),
        )
        .child(marker(
            "median",
            x(s.median),
            colors::MEDIAN,
            format!("median {:.3} {unit}", s.median),
        ));
    for (k, (&v, &run)) in stat.samples.iter().zip(&stat.runs).enumerate() {
        let dot = el("circle")
            .attr("class", "sample")
            .attr("data-run", run)
            .attr("cx", num(x(v)))
            .attr("cy", num(mid + LANES[k % LANES.len()]))
            .attr("r", num(DOT_R))
            .attr("fill", colors::SAMPLE)
            .attr("fill-opacity", "0.7")
            .tooltip(format!(
                "{}: {v:.3} {unit}",
                RunKind::Measured.dir_name(run)
            ));
        g = g.child(el("a").attr("href", link(run)).child(dot));
    }
    g
}

/// The metric's axis, under its plots.
fn axis(m: Metric, scale: Scale) -> Element {
    let step = nice_step(scale.max, TARGET_TICKS);
    let at = AxisPlace {
        left: PAD,
        width: PLOT_W,
        top: 0.0,
        axis_y: 2.0,
    };
    svg("dist-axis", AXIS_H, format!("axis, {}", m.unit())).child(horizontal_axis(
        scale,
        at,
        TARGET_TICKS,
        |t| m.tick_label(t, step),
    ))
}

/// Every run of the permutation, warmups and failures included, folded away.
fn run_list(p: &PermutationPerf, base: &str) -> Element {
    let head = el("tr").children(
        ["run", "verdict", "in statistics", "duration s", "reason"].map(|h| el("th").text(h)),
    );
    let rows = p.runs.iter().map(|e| run_row(e, base));
    el("details")
        .attr("class", "runs")
        .child(el("summary").text(format!("Runs ({})", p.runs.len())))
        .child(
            el("table")
                .attr("class", "perf-runs")
                .child(el("thead").child(head))
                .child(el("tbody").children(rows)),
        )
}

fn run_row(e: &RunEntry, base: &str) -> Element {
    el("tr")
        .attr("class", format!("verdict-row verdict-{}", e.verdict))
        .child(
            el("td").attr("class", "mono id").child(
                el("a")
                    .attr("href", href(&[base, &e.dir, RESULT_FILE]))
                    .text(&e.dir),
            ),
        )
        .child(el("td").child(verdict_badge(e.verdict)))
        .child(el("td").text(if e.in_statistics { "yes" } else { "no" }))
        .child(
            el("td")
                .attr("class", "num")
                .text(format!("{:.1}", e.duration_s)),
        )
        .child(
            el("td")
                .attr("class", "reason")
                .attr("title", &e.reason)
                .text(shorten(&e.reason, REASON_MAX)),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::testdata::{perm, report, with_disk_write};
    use crate::result::Verdict;

    /// The `(cx, data-run)` of every dot in `svg`.
    fn dots(svg: &str) -> Vec<(String, String)> {
        svg.split("<circle class=\"sample\"")
            .skip(1)
            .map(|c| {
                let attr = |name: &str| {
                    let start = c.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                    c[start..].split('"').next().unwrap().to_string()
                };
                (attr("cx"), attr("data-run"))
            })
            .collect()
    }

    #[test]
    fn one_dot_per_sample_at_its_place_on_the_shared_axis() {
        // Whole runs of 10, 20 and 40 s here, up to 80 s in the other permutation: the axis
        // is 0..80 s over 360 px for both.
        let a = perm("a", &[("assets", &[10.0, 20.0, 40.0])]);
        let b = perm("b", &[("assets", &[80.0, 60.0])]);
        let html = performance_section(&report(vec![a, b]), ".").render();
        let a_total = html
            .split("data-permutation=\"a\"")
            .nth(1)
            .unwrap()
            .split("data-metric=\"total\"")
            .nth(1)
            .unwrap()
            .split("</tbody>")
            .next()
            .unwrap();
        // x = 8 (padding) + v / 80 * 360.
        assert_eq!(
            dots(a_total),
            [
                ("53.0".to_string(), "0".to_string()),
                ("98.0".into(), "1".into()),
                ("188.0".into(), "2".into())
            ]
        );
        // Median 20 s, p90 36 s.
        assert!(a_total.contains("<line class=\"median\" x1=\"98.0\" x2=\"98.0\""));
        assert!(a_total.contains("<line class=\"p90\" x1=\"170.0\" x2=\"170.0\""));
        assert!(a_total.contains("<line class=\"whisker\" x1=\"53.0\" x2=\"188.0\""));
        // Each dot links to its run's result.json.
        assert!(a_total.contains("<a href=\"./a/run-2/result.json\"><circle"));
        // 3 + 2 dots in each of the two tables (phases, whole run).
        assert_eq!(html.matches("<circle class=\"sample\"").count(), 10);
        assert_eq!(html.matches("<svg class=\"dist\"").count(), 4);
        // One axis per table, ending at 80 s.
        assert_eq!(html.matches("<svg class=\"dist-axis\"").count(), 4);
        assert!(html.contains(">80 s</text>"));
    }

    #[test]
    fn the_disk_write_has_a_table_in_seconds_and_one_in_mib_s() {
        let p = with_disk_write(perm("a", &[]), &[2.0, 4.0]);
        let html = performance_section(&report(vec![p]), ".").render();
        for m in ["disk-write-s", "disk-write-mib-s"] {
            assert!(html.contains(&format!("data-metric=\"{m}\"")), "{m}");
        }
        // 256 MiB in 2 and 4 s: 128 and 64 MiB/s, median 96.
        assert!(html.contains("<td class=\"num\">96.0</td>"), "{html}");
        assert!(html.contains(">distribution, MiB/s</th>"));
        assert!(
            !html.contains("data-metric=\"phase\""),
            "no phase, no table"
        );
    }

    #[test]
    fn a_permutation_without_passed_runs_says_so_and_plots_nothing() {
        let mut none = perm("failed", &[]);
        none.counts.measured = 2;
        none.runs = vec![RunEntry {
            kind: RunKind::Measured,
            index: 0,
            dir: "failed/run-0".into(),
            verdict: Verdict::Fail,
            as_expected: false,
            in_statistics: false,
            failed_phase: Some("bootkube".into()),
            reason: "bootkube timed out".into(),
            started_at: String::new(),
            duration_s: 600.0,
            load_1m: None,
            other_vms: vec![],
        }];
        let html = performance_section(&report(vec![none]), ".").render();
        assert!(html.contains(
            "<p class=\"meta no-samples\">No passed measured run: no statistics, nothing to plot.</p>"
        ));
        assert!(!html.contains("<svg"), "{html}");
        // The failed run is listed, with its reason and a link.
        assert!(html.contains("href=\"./failed/run-0/result.json\""));
        assert!(html.contains(">bootkube timed out</td>"));
        assert!(html.contains("0 of 2 measured runs passed"));

        let empty = performance_section(&report(vec![]), ".").render();
        assert!(empty.contains("No permutation ran."));
    }

    #[test]
    fn ids_and_names_are_escaped_and_links_encoded() {
        let id = "<b>a&\"b\" #1";
        let mut p = perm(id, &[("<i>phase</i>", &[1.0, 2.0])]);
        p.warnings = vec!["<script>x</script>".into()];
        let mut r = report(vec![p]);
        r.source = "<img src=x>".into();
        let html = performance_section(&r, "../perf out").render();
        assert!(!html.contains("<b>") && !html.contains("<i>") && !html.contains("<script"));
        assert!(!html.contains("<img"));
        assert!(html.contains("data-permutation=\"&lt;b&gt;a&amp;&quot;b&quot; #1\""));
        assert!(html.contains("data-row=\"&lt;i&gt;phase&lt;/i&gt;\""));
        assert!(html.contains("warning: &lt;script&gt;x&lt;/script&gt;"));
        assert!(
            html.contains("href=\"../perf%20out/%3Cb%3Ea%26%22b%22%20%231/run-1/result.json\""),
            "{html}"
        );
    }

    #[test]
    fn host_context_and_counts() {
        let mut p = perm("a", &[("assets", &[1.0])]);
        p.counts.warmups = 1;
        p.counts.planned = 3;
        let mut own = crate::perf::testdata::host();
        own.accel = "tcg".into();
        p.host = Some(own);
        let html = performance_section(&report(vec![p]), ".").render();
        assert!(html.contains("<p class=\"meta host\">Host: accelerator kvm; CPU AMD EPYC 7B13;"));
        assert!(html.contains("Host differs: accelerator tcg;"));
        assert!(
            html.contains("1 of 1 measured runs passed (3 planned); 1 warmup run(s), not plotted")
        );
        assert!(!html.contains("state-reuse"));
    }

    #[test]
    fn what_a_saved_state_saved_is_said() {
        let mut p = perm("a", &[("install-to-disk", &[20.0, 21.0])]);
        p.state_reuse = Some(crate::perf::model::StateReuse {
            save_run: "a/save-state".into(),
            saved: true,
            bootstrap_s: 60.0,
            save_run_s: 70.0,
            resumed_runs: 2,
            resumed_s: 60.0,
            actual_s: 130.0,
            without_state_s: 180.0,
            saved_s: 50.0,
            saved_pct: 27.8,
        });
        let html = performance_section(&report(vec![p]), ".").render();
        assert!(
            html.contains(
                "<p class=\"meta state-reuse\">disk write only: bootstrapped once (60.0 s"
            ),
            "{html}"
        );
        assert!(html.contains("saved 50.0 s (28 %)."), "{html}");
    }
}
