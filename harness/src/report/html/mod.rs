//! `report.html`: one self-contained page (inline CSS and SVG, no script, no external
//! resource) for a run directory: failures first with their reason and artifacts, then the
//! verdicts, the coverage grid, the slowest phases, disk-write throughput and a Gantt
//! timeline per permutation.
//!
//! Stable hooks for tests and tools: `section#failures` with an `article.failure` per failed
//! permutation, `table#verdicts`, `table#coverage` (`td.cov.cov-passed|cov-failed|cov-not-run`),
//! `table#slowest`, `svg#throughput`, and per permutation `svg.gantt[data-permutation]` with a
//! `rect.bar.status-<status>` per reached phase.
//!
//! A perf directory gets its own page ([`render_perf_html`]): the `section#performance` of
//! `perf.rs`, the distributions of its repeated runs.

mod gantt;
pub mod markup;
mod perf;
mod scale;
mod tables;
mod throughput;

use markup::{el, Element, Node};

use super::load::LocatedRun;
use super::summary_json::Summary;
use crate::perf::model::PerfReport;
use crate::result::{RunResult, Verdict};

/// The file name in the run directory.
pub const REPORT_HTML_FILE: &str = "report.html";

/// The colours of the report, as the SVG charts use them (the style sheet repeats them; a
/// test keeps the two in step).
pub mod colors {
    use crate::result::PhaseStatus;

    pub const PASS: &str = "#2e7d32";
    pub const FAIL: &str = "#c62828";
    pub const TIMEOUT: &str = "#ef6c00";
    /// Verdict `error`: the harness or host failed, not the system under test.
    pub const ERROR: &str = "#6a1b9a";
    pub const NOT_RUN: &str = "#9e9e9e";
    pub const THROUGHPUT: &str = "#1565c0";
    pub const AXIS: &str = "#616161";
    pub const GRID: &str = "#e0e0e0";
    /// A run's sample in a distribution plot, and the markers of its median and p90.
    pub const SAMPLE: &str = THROUGHPUT;
    pub const MEDIAN: &str = "#212121";
    pub const P90: &str = "#00897b";

    pub fn phase(status: PhaseStatus) -> &'static str {
        match status {
            PhaseStatus::Pass => PASS,
            PhaseStatus::Fail => FAIL,
            PhaseStatus::Timeout => TIMEOUT,
            PhaseStatus::NotReached => NOT_RUN,
        }
    }
}

/// No script may run and nothing may load from anywhere: the page is data to look at, and
/// a reason that escaped its escaping would still be inert.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'";

const STYLE: &str = r#"
body { font: 14px/1.45 "DejaVu Sans", system-ui, sans-serif; color: #212121; margin: 24px; max-width: 1240px; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 18px; margin: 30px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #e0e0e0; }
h3 { font-size: 15px; margin: 14px 0 6px; }
h4 { font-size: 13px; margin: 8px 0 2px; color: #616161; }
.mono, code, pre { font-family: "DejaVu Sans Mono", monospace; }
.meta { color: #616161; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 3px; color: #ffffff; font-weight: bold; font-size: 12px; margin-right: 6px; }
.badge.verdict-pass { background: #2e7d32; }
.badge.verdict-fail { background: #c62828; }
.badge.verdict-error { background: #6a1b9a; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #e0e0e0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { max-width: 420px; }
td.id { white-space: nowrap; }
td.cov { color: #ffffff; min-width: 96px; }
td.cov-passed { background: #2e7d32; }
td.cov-failed { background: #c62828; }
td.cov-not-run { background: #9e9e9e; }
td.cov .counts { font-size: 12px; }
td.pad, td.empty { border: none; }
.status-fail, .status-timeout { font-weight: bold; }
span.status-fail { color: #c62828; }
span.status-timeout { color: #ef6c00; }
article.failure { border-left: 6px solid #c62828; background: #fff5f5; padding: 4px 14px 8px; margin: 12px 0; }
article.failure.verdict-error { border-left-color: #6a1b9a; background: #faf5fc; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f5f5f5; padding: 6px 8px; margin: 4px 0; }
ul.artifacts { margin: 4px 0; padding-left: 20px; columns: 2; }
ul.artifacts.inline { columns: auto; padding: 0; font-size: 12px; }
ul.artifacts.inline li { display: inline; margin-right: 12px; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: -1px; }
.timeline { margin: 8px 0 18px; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font: 11px "DejaVu Sans", sans-serif; fill: #212121; }
svg text.label.mono { font: 12px "DejaVu Sans Mono", monospace; }
svg text.tick { font-size: 10px; fill: #616161; }
svg text.unreached { fill: #9e9e9e; font-style: italic; }
.perf-permutation { margin: 10px 0 24px; }
td.plot { padding: 0 4px; vertical-align: middle; }
ul.warnings { color: #ef6c00; margin: 4px 0; }
details.runs summary { color: #616161; margin: 6px 0; }
"#;

/// Renders the page for `runs` (in the order the verdict table and timelines show them) and
/// their `summary`.
pub fn render_html(runs: &[LocatedRun], summary: &Summary) -> String {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let axis_keys: Vec<&str> = summary.coverage.iter().map(|a| a.axis.as_str()).collect();
    let c = summary.counts;
    let title = format!(
        "sno-harness report: {} passed, {} failed, {} error(s) of {}",
        c.pass, c.fail, c.error, c.total
    );

    let body = el("body")
        .child(header(&results, &title))
        .child(failures_section(runs))
        .child(
            section("verdicts-section", "Verdicts").child(tables::verdict_table(runs, &axis_keys)),
        )
        .child(
            section("coverage-section", "Coverage")
                .child(
                    el("p")
                        .attr("class", "meta legend")
                        .text("Each axis value: ✓ passed, ✗ failed (fail or error), – did not run.")
                        .child(swatch(colors::PASS))
                        .text("passed")
                        .child(swatch(colors::FAIL))
                        .text("failed")
                        .child(swatch(colors::NOT_RUN))
                        .text("not run"),
                )
                .child(tables::coverage_grid(&summary.coverage)),
        )
        .child(
            section("slowest-section", "Slowest phases")
                .child(tables::slowest_table(&summary.slowest_phases)),
        )
        .child(
            section("throughput-section", "Disk-write throughput")
                .child(throughput::throughput_chart(&results)),
        )
        .child(timelines_section(runs));
    document(&title, body)
}

/// The page of a perf directory: its "Performance" section. `base` is the perf directory as
/// seen from the page's directory (`.` when the page is in it): the runs are linked from it.
pub fn render_perf_html(report: &PerfReport, base: &str) -> String {
    let title = format!("sno-harness perf: {}", report.source);
    let body = el("body")
        .child(el("header").child(el("h1").text(&title)))
        .child(perf::performance_section(report, base));
    document(&title, body)
}

/// The whole page around `body`: the same head, style sheet and security policy for every
/// report.
fn document(title: &str, body: Element) -> String {
    let head = el("head")
        .child(el("meta").attr("charset", "utf-8"))
        .child(
            el("meta")
                .attr("http-equiv", "Content-Security-Policy")
                .attr("content", CONTENT_SECURITY_POLICY),
        )
        .child(
            el("meta")
                .attr("name", "viewport")
                .attr("content", "width=device-width, initial-scale=1"),
        )
        .child(el("title").text(title))
        .child(el("style").child(Node::Static(STYLE)));
    let html = el("html").attr("lang", "en").child(head).child(body);
    format!("<!DOCTYPE html>\n{}\n", html.render())
}

fn section(id: &'static str, title: &str) -> Element {
    el("section").attr("id", id).child(el("h2").text(title))
}

fn swatch(color: &str) -> Element {
    el("span").attr("style", format!("background: {color}"))
}

fn header(results: &[&RunResult], title: &str) -> Element {
    // A permutation that never started may lack these: leave it out rather than print "".
    let known = |f: fn(&RunResult) -> &str| {
        let mut v: Vec<&str> = results
            .iter()
            .map(|r| f(r))
            .filter(|s| !s.is_empty())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let scenarios = known(|r| r.scenario.as_str());
    let started = known(|r| r.started_at.as_str());
    let mut meta = format!("Scenario {}.", scenarios.join(", "));
    if let (Some(first), Some(last)) = (started.first(), started.last()) {
        meta.push_str(&format!(" Started {first} to {last}."));
    }
    let n = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
    el("header")
        .child(el("h1").text(title))
        .child(
            el("p")
                .attr("class", "counts")
                .child(tables::verdict_badge(Verdict::Pass))
                .text(format!("{}   ", n(Verdict::Pass)))
                .child(tables::verdict_badge(Verdict::Fail))
                .text(format!("{}   ", n(Verdict::Fail)))
                .child(tables::verdict_badge(Verdict::Error))
                .text(n(Verdict::Error).to_string()),
        )
        .child(el("p").attr("class", "meta").text(meta))
}

fn failures_section(runs: &[LocatedRun]) -> Element {
    let failed: Vec<&LocatedRun> = runs
        .iter()
        .filter(|r| r.result.verdict != Verdict::Pass)
        .collect();
    let mut s = section("failures", "Failures");
    if failed.is_empty() {
        return s.child(
            el("p")
                .attr("class", "meta")
                .text("None: every permutation passed."),
        );
    }
    for run in failed {
        s = s.child(failure(run));
    }
    s
}

fn failure(run: &LocatedRun) -> Element {
    let r = &run.result;
    let mut facts = match &r.failed_phase {
        Some(p) => format!("Failed phase: {p}."),
        None => "No phase failed: the run ended outside the phases.".to_string(),
    };
    if !r.params.is_empty() {
        let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        facts.push_str(&format!(" Params: {}.", params.join(", ")));
    }
    let reason = if r.reason.is_empty() {
        "(no reason recorded)"
    } else {
        r.reason.as_str()
    };
    let mut a = el("article")
        .attr("class", format!("failure verdict-{}", r.verdict))
        .attr("data-permutation", &r.id)
        .child(
            el("h3")
                .child(tables::verdict_badge(r.verdict))
                .child(el("span").attr("class", "mono").text(&r.id)),
        )
        .child(el("p").text(facts))
        .child(el("h4").text("Reason"))
        .child(el("pre").attr("class", "reason").text(reason));
    if !r.last_signals.is_empty() {
        let lines: Vec<String> = r
            .last_signals
            .iter()
            .map(|s| {
                format!(
                    "[{:>9.3}s] {}: {}",
                    s.t_ms as f64 / 1000.0,
                    s.source,
                    s.summary
                )
            })
            .collect();
        a = a
            .child(el("h4").text("Last signals"))
            .child(el("pre").attr("class", "signals").text(lines.join("\n")));
    }
    if !r.replay.is_empty() {
        a = a
            .child(el("h4").text("Replay"))
            .child(el("pre").attr("class", "replay").text(&r.replay));
    }
    a.child(el("h4").text("Artifacts"))
        .child(tables::artifact_links(run))
}

fn timelines_section(runs: &[LocatedRun]) -> Element {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let scale = gantt::time_scale(&results);
    let mut s = section("timelines", "Timelines").child(
        el("p")
            .attr("class", "meta legend")
            .text("Phases on one time scale, seconds since the run started.")
            .child(swatch(colors::PASS))
            .text("pass")
            .child(swatch(colors::FAIL))
            .text("fail")
            .child(swatch(colors::TIMEOUT))
            .text("timeout"),
    );
    for (i, run) in runs.iter().enumerate() {
        let r = &run.result;
        let meta = format!(
            "{:.1} s, {} reset(s), {} on {}",
            r.duration_ms as f64 / 1000.0,
            r.resets,
            r.accel,
            r.backend
        );
        s = s.child(
            el("div")
                .attr("class", "timeline")
                .attr("id", tables::timeline_anchor(i))
                .child(
                    el("h3")
                        .child(tables::verdict_badge(r.verdict))
                        .child(el("span").attr("class", "mono").text(&r.id))
                        .child(el("span").attr("class", "meta").text(format!("  {meta}"))),
                )
                .child(tables::artifact_links(run).attr("class", "artifacts inline"))
                .children(
                    r.assets
                        .as_ref()
                        .map(|a| el("p").attr("class", "meta assets").text(a.sentence())),
                )
                .children(
                    r.boot
                        .as_ref()
                        .map(|b| el("p").attr("class", "meta boot").text(b.sentence())),
                )
                .child(gantt::gantt(r, scale)),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::coverage::{merge_axes, tests::sample_not_run};
    use crate::result::tests::{sample_fail, sample_pass};

    fn page(runs: Vec<RunResult>) -> String {
        let runs: Vec<LocatedRun> = runs.into_iter().map(LocatedRun::in_own_dir).collect();
        let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
        let axes = merge_axes(&[], &results);
        render_html(&runs, &Summary::build(&runs, &axes))
    }

    #[test]
    fn failures_first_then_tables_and_charts() {
        let html = page(vec![
            sample_pass("virtio"),
            sample_fail("nvme", "bootkube: <script>alert(1)</script> & \"more\""),
            sample_not_run("sata"),
        ]);
        assert!(
            html.starts_with("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        );
        let pos = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
        assert!(pos("<section id=\"failures\">") < pos("<table id=\"verdicts\">"));
        assert!(pos("<table id=\"verdicts\">") < pos("<table id=\"coverage\">"));
        assert!(pos("<table id=\"coverage\">") < pos("<svg id=\"throughput\""));
        assert!(pos("<svg id=\"throughput\"") < pos("<svg class=\"gantt\""));
        assert_eq!(html.matches("<article class=\"failure").count(), 2);
        assert_eq!(html.matches("<svg class=\"gantt\"").count(), 3);
        // The hostile reason is text wherever it appears; the only <script is none at all.
        assert!(!html.contains("<script"));
        assert!(
            html.contains("bootkube: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;more&quot;")
        );
        // Self-contained: nothing is fetched.
        for external in ["src=", "http://", "https://", "@import", "url("] {
            let allowed = "xmlns=\"http://www.w3.org/2000/svg\"";
            assert!(
                !html.replace(allowed, "").contains(external),
                "external reference {external}"
            );
        }
        assert!(html.contains("href=\"./nvme/serial.log\""));
        assert!(html.contains("href=\"#perm-1\""));
        assert!(html.contains("id=\"perm-1\""));
    }

    #[test]
    fn a_timeline_names_the_installer_and_the_iso_as_text() {
        let mut r = sample_pass("a");
        r.assets = Some(crate::result::AssetsUsed {
            installer: "openshift-install".into(),
            installer_version: "openshift-install 4.17.0 <b>".into(),
            iso: "file:///isos/rhcos.iso".into(),
            ..Default::default()
        });
        let html = page(vec![r]);
        assert!(
            html.contains("<p class=\"meta assets\">Installer openshift-install 4.17.0 &lt;b&gt;; ISO file:///isos/rhcos.iso.</p>"),
            "{html}"
        );
    }

    #[test]
    fn all_passed_says_so() {
        let html = page(vec![sample_pass("a")]);
        assert!(html.contains("None: every permutation passed."));
    }

    #[test]
    fn the_perf_page_is_self_contained_too() {
        use crate::perf::testdata::{perm, report};
        let mut r = report(vec![perm("a", &[("assets", &[1.0, 2.0])])]);
        r.source = "<m>.toml".into();
        let html = render_perf_html(&r, ".");
        assert!(
            html.starts_with("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        );
        assert!(html.contains(&markup::escape(CONTENT_SECURITY_POLICY)));
        assert!(html.contains("<title>sno-harness perf: &lt;m&gt;.toml</title>"));
        assert!(html.contains("<section id=\"performance\"><h2>Performance</h2>"));
        assert!(!html.contains("<script"));
        let allowed = "xmlns=\"http://www.w3.org/2000/svg\"";
        for external in ["src=", "http://", "https://", "@import", "url("] {
            assert!(!html.replace(allowed, "").contains(external), "{external}");
        }
    }

    #[test]
    fn style_sheet_uses_the_chart_colours() {
        for c in [
            colors::PASS,
            colors::FAIL,
            colors::TIMEOUT,
            colors::ERROR,
            colors::NOT_RUN,
        ] {
            assert!(STYLE.contains(c), "{c} missing from the style sheet");
        }
        // The style sheet goes in unescaped: it must not need escaping.
        assert!(!STYLE.contains(['<', '&']));
    }
}
