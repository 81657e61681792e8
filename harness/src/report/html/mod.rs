//! `report.html`: one self-contained page (inline CSS and SVG, no script, no external
//! resource) for a run directory: the time it ran (first start to last end), failures first
//! (a matrix's grouped by reason, with counts and ids, before a box per failed permutation
//! with its reason and artifacts), then the verdicts, the coverage grid (left out when there
//! is no axis), the slowest phases, disk-write throughput and a Gantt timeline per
//! permutation. A single run's timeline comes right under its failure box instead.
//!
//! Stable hooks for tests and tools: `section#failures` with `table#failure-reasons` (a
//! matrix) and an `article.failure` per failed permutation, `section#timelines`, `table#verdicts`, `table#coverage` (`td.cov.cov-passed|cov-failed|cov-not-run`),
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

    let mut body = el("body")
        .child(header(&results, &title))
        .child(failures_section(runs));
    if results.iter().any(|r| !r.operator_warnings.is_empty()) {
        body = body.child(operator_warnings_section(&results));
    }
    // One run: what happened when comes right under why it failed; a matrix's timelines are
    // many, and come last.
    let single = runs.len() == 1;
    if single {
        body = body.child(timelines_section(runs));
    }
    body = body.child(
        section("verdicts-section", "Verdicts").child(tables::verdict_table(runs, &axis_keys)),
    );
    // No axis, no grid: an empty section only pushes the rest down.
    if !summary.coverage.is_empty() {
        body = body.child(coverage_section(summary));
    }
    body = body
        .child(
            section("slowest-section", "Slowest phases")
                .child(tables::slowest_table(&summary.slowest_phases)),
        )
        .child(
            section("throughput-section", "Disk-write throughput")
                .child(throughput::throughput_chart(&results)),
        );
    if !single {
        body = body.child(timelines_section(runs));
    }
    document(&title, body)
}

/// A legend line: what the colours stand for, each swatch followed by its label.
fn legend(intro: &str, items: &[(&str, &str)]) -> Element {
    items.iter().fold(
        el("p").attr("class", "meta legend").text(intro),
        |p, &(color, label)| p.child(swatch(color)).text(label),
    )
}

fn coverage_section(summary: &Summary) -> Element {
    section("coverage-section", "Coverage")
        .child(legend(
            "Each axis value: ✓ passed, ✗ failed (fail or error), – did not run.",
            &[
                (colors::PASS, "passed"),
                (colors::FAIL, "failed"),
                (colors::NOT_RUN, "not run"),
            ],
        ))
        .child(tables::coverage_grid(&summary.coverage))
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
    let mut meta = format!("Scenario {}.", scenarios.join(", "));
    if let Some((start, end)) = time_range(results) {
        meta.push_str(&format!(
            " Ran from {} to {}.",
            humantime::format_rfc3339_seconds(start),
            humantime::format_rfc3339_seconds(end)
        ));
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

/// When the runs ran: the first start to the last end (a start plus its duration), from
/// their result.json; none when no start is a time.
fn time_range(results: &[&RunResult]) -> Option<(std::time::SystemTime, std::time::SystemTime)> {
    let spans: Vec<_> = results
        .iter()
        .filter_map(|r| {
            let start = humantime::parse_rfc3339(&r.started_at).ok()?;
            let end = start.checked_add(std::time::Duration::from_millis(r.duration_ms))?;
            Some((start, end))
        })
        .collect();
    let start = spans.iter().map(|s| s.0).min()?;
    let end = spans.iter().map(|s| s.1).max()?;
    Some((start, end))
}

/// The failures of a matrix by reason: how many permutations ended with each, and which,
/// most frequent first (the first met first among equals).
fn reasons_table(failed: &[&LocatedRun]) -> Element {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for run in failed {
        let reason = match run.result.reason.as_str() {
            "" => "(no reason recorded)",
            r => r,
        };
        match groups.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, ids)) => ids.push(&run.result.id),
            None => groups.push((reason, vec![&run.result.id])),
        }
    }
    groups.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
    let head = el("tr")
        .child(el("th").text("Reason"))
        .child(el("th").text("Permutations"))
        .child(el("th").text("Ids"));
    el("table")
        .attr("id", "failure-reasons")
        .child(head)
        .children(groups.into_iter().map(|(reason, ids)| {
            el("tr")
                .child(el("td").attr("class", "reason").text(reason))
                .child(
                    el("td")
                        .attr("class", "num count")
                        .text(ids.len().to_string()),
                )
                .child(el("td").attr("class", "mono ids").text(ids.join(", ")))
        }))
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
    if runs.len() > 1 {
        s = s
            .child(el("h3").text("By reason"))
            .child(reasons_table(&failed));
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

/// The operators each run's `installer` rule reported unavailable or degraded: the runs passed
/// or failed without them, and they are shown so that they are not missed.
fn operator_warnings_section(results: &[&RunResult]) -> Element {
    let mut s = section("operator-warnings", "Operator warnings").child(
        el("p").attr("class", "meta").text(
            "Unavailable or degraded operators that wait-for install-complete does not judge (rule installer): the install completes with them.",
        ),
    );
    for r in results.iter().filter(|r| !r.operator_warnings.is_empty()) {
        let rule = r.operators_rule.as_deref().unwrap_or("installer");
        s = s
            .child(
                el("h3")
                    .child(tables::verdict_badge(r.verdict))
                    .child(el("span").attr("class", "mono").text(&r.id))
                    .child(
                        el("span")
                            .attr("class", "meta")
                            .text(format!("  rule {rule}")),
                    ),
            )
            .child(
                el("ul").attr("class", "warnings").children(
                    r.operator_warnings
                        .iter()
                        .map(|w| el("li").text(format!("warning: {w}"))),
                ),
            );
    }
    s
}

fn timelines_section(runs: &[LocatedRun]) -> Element {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let scale = gantt::time_scale(&results);
    let mut s = section("timelines", "Timelines").child(legend(
        "Phases on one time scale, seconds since the run started.",
        &[
            (colors::PASS, "pass"),
            (colors::FAIL, "fail"),
            (colors::TIMEOUT, "timeout"),
        ],
    ));
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

    /// The page's elements in document order, as (tag, id, class): enough to check where
    /// each part of the page is.
    fn tags(html: &str) -> Vec<(String, String, String)> {
        let attr = |t: &str, k: &str| {
            t.split(&format!(" {k}=\""))
                .nth(1)
                .map(|v| v.split('"').next().unwrap().to_string())
                .unwrap_or_default()
        };
        html.split('<')
            .skip(1)
            .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic()))
            .map(|t| {
                let t = t.split('>').next().unwrap();
                let tag = t.split([' ', '/']).next().unwrap().to_string();
                (tag, attr(t, "id"), attr(t, "class"))
            })
            .collect()
    }

    fn index(
        tags: &[(String, String, String)],
        f: impl Fn(&(String, String, String)) -> bool,
    ) -> Option<usize> {
        tags.iter().position(f)
    }

    #[test]
    fn a_single_runs_timeline_is_right_under_its_failure_and_no_coverage_is_empty() {
        let mut run = sample_fail("f", "bootkube timed out");
        run.params.clear();
        let html = page(vec![run]);
        let t = tags(&html);
        let id = |name: &str| index(&t, |e| e.1 == name).unwrap_or_else(|| panic!("no #{name}"));
        let failure = index(&t, |e| e.0 == "article" && e.2.starts_with("failure")).unwrap();
        let timelines = id("timelines");
        assert!(id("failures") < failure && failure < timelines);
        // Nothing between the failure box and the timeline but the box's own content.
        let between: Vec<_> = t[failure..timelines]
            .iter()
            .filter(|e| e.0 == "section")
            .collect();
        assert!(between.is_empty(), "{between:?}");
        let gantt = index(&t, |e| e.0 == "svg" && e.2 == "gantt").unwrap();
        assert!(timelines < gantt && gantt < id("verdicts-section"));
        assert!(id("verdicts-section") < id("slowest-section"));
        assert!(index(&t, |e| e.1 == "coverage-section").is_none(), "{html}");
        assert!(!html.contains("<h2>Coverage</h2>"));
        // The time range is the run's: its start to its end (61.234 s later).
        assert!(
            html.contains("Ran from 2026-11-29T23:00:00Z to 2026-11-29T23:01:01Z."),
            "{html}"
        );
    }

    #[test]
    fn a_matrix_groups_its_failures_by_reason_before_the_boxes() {
        let mut err = sample_pass("e");
        err.verdict = Verdict::Error;
        err.reason = "qemu died".into();
        let html = page(vec![
            sample_fail("a", "bootkube timed out"),
            sample_pass("ok"),
            sample_fail("b", "API never answered"),
            err,
            sample_fail("c", "bootkube timed out"),
        ]);
        let t = tags(&html);
        let table = index(&t, |e| e.1 == "failure-reasons").expect("a reasons table");
        let first_box = index(&t, |e| e.0 == "article").unwrap();
        assert!(index(&t, |e| e.1 == "failures").unwrap() < table && table < first_box);
        let rows: Vec<&str> = html
            .split("<table id=\"failure-reasons\">")
            .nth(1)
            .unwrap()
            .split("</table>")
            .next()
            .unwrap()
            .split("<tr>")
            .skip(2)
            .collect();
        let cells = |row: &str| -> Vec<String> {
            row.split("<td")
                .skip(1)
                .map(|c| {
                    c.split('>')
                        .nth(1)
                        .unwrap()
                        .split('<')
                        .next()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(cells(rows[0]), ["bootkube timed out", "2", "a, c"]);
        assert_eq!(cells(rows[1]), ["API never answered", "1", "b"]);
        assert_eq!(cells(rows[2]), ["qemu died", "1", "e"]);
        assert_eq!(rows.len(), 3);
        // Five runs from one start: the range ends with the last to end.
        assert!(html.contains("Ran from 2026-11-29T23:00:00Z to 2026-11-29T23:01:01Z."));
        // A matrix's timelines stay last.
        let timelines = index(&t, |e| e.1 == "timelines").unwrap();
        assert!(index(&t, |e| e.1 == "throughput-section").unwrap() < timelines);
    }

    #[test]
    fn a_runs_page_links_its_harness_log_and_each_boots_raw_journal() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "harness.log",
            "journal-1-ab12.json.gz",
            "journal-2-cd34.json.gz",
        ] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        let run = sample_fail("f", "bootkube timed out");
        let junit = crate::report::junit::JunitOut::default();
        assert!(crate::run::artifacts::rewrite(dir.path(), junit, &run).is_empty());
        let html = std::fs::read_to_string(dir.path().join(REPORT_HTML_FILE)).unwrap();
        for f in [
            "harness.log",
            "journal-1-ab12.json.gz",
            "journal-2-cd34.json.gz",
        ] {
            // In the failure box and in the timeline's links.
            assert_eq!(html.matches(&format!("href=\"./{f}\"")).count(), 2, "{f}");
        }
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
    fn reported_operators_have_a_section_of_their_own_only_when_there_are_some() {
        assert!(!page(vec![sample_pass("p")]).contains("operator-warnings"));
        let mut r = sample_pass("p");
        r.operators_rule = Some("installer".into());
        r.operator_warnings = vec!["ingress: Degraded=True (<b>canary</b>)".into()];
        let html = page(vec![r]);
        assert!(html.contains("id=\"operator-warnings\""), "{html}");
        assert!(html.contains("rule installer"), "{html}");
        assert!(
            html.contains("warning: ingress: Degraded=True (&lt;b&gt;canary&lt;/b&gt;)"),
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
