//! The HTML tables of the report: verdicts, the coverage grid and the slowest phases.

use super::markup::{el, href, Element};
use crate::report::coverage::AxisCoverage;
use crate::report::load::LocatedRun;
use crate::report::slowest::SlowPhase;
use crate::result::Verdict;

/// The longest reason shown in the verdict table, in characters (the failure section and the
/// cell's tooltip have it whole).
const REASON_MAX: usize = 160;

/// A verdict as a coloured badge.
pub fn verdict_badge(v: Verdict) -> Element {
    el("span")
        .attr("class", format!("badge verdict-{v}"))
        .text(v.as_str())
}

/// `<table id="verdicts">`: a row per permutation, its params in a column per axis.
pub fn verdict_table(runs: &[LocatedRun], axis_keys: &[&str]) -> Element {
    let mut head = el("tr").children(
        [
            "permutation",
            "verdict",
            "failed phase",
            "reason",
            "duration s",
            "disk write MiB/s",
        ]
        .map(|h| el("th").text(h)),
    );
    head = head.children(
        axis_keys
            .iter()
            .map(|k| el("th").attr("class", "param").text(*k)),
    );
    let rows = runs.iter().enumerate().map(|(i, run)| {
        let r = &run.result;
        el("tr")
            .attr("class", format!("verdict-row verdict-{}", r.verdict))
            .attr("data-permutation", &r.id)
            .child(
                el("td").attr("class", "mono id").child(
                    el("a")
                        .attr("href", format!("#{}", timeline_anchor(i)))
                        .text(&r.id),
                ),
            )
            .child(el("td").child(verdict_badge(r.verdict)))
            .child(el("td").text(r.failed_phase.as_deref().unwrap_or("")))
            .child(
                el("td")
                    .attr("class", "reason")
                    .attr("title", &r.reason)
                    .text(shorten(&r.reason, REASON_MAX)),
            )
            .child(
                el("td")
                    .attr("class", "num")
                    .text(format!("{:.1}", r.duration_ms as f64 / 1000.0)),
            )
            .child(
                el("td").attr("class", "num").text(
                    r.disk_write
                        .as_ref()
                        .map(|w| format!("{:.1}", w.mib_per_s))
                        .unwrap_or_default(),
                ),
            )
            .children(axis_keys.iter().map(|k| {
                el("td")
                    .attr("class", "param mono")
                    .text(r.params.get(*k).map(String::as_str).unwrap_or(""))
            }))
    });
    el("table")
        .attr("id", "verdicts")
        .child(el("thead").child(head))
        .child(el("tbody").children(rows))
}

/// `<table id="coverage">`: a row per axis, a cell per value coloured passed, failed or not
/// run, with the counts.
pub fn coverage_grid(coverage: &[AxisCoverage]) -> Element {
    let table = el("table").attr("id", "coverage");
    if coverage.is_empty() {
        return table.child(
            el("tr").child(
                el("td")
                    .attr("class", "empty")
                    .text("No axes: a single scenario, nothing to cover."),
            ),
        );
    }
    let columns = coverage.iter().map(|a| a.values.len()).max().unwrap_or(0);
    let rows = coverage.iter().map(|axis| {
        let mut tr = el("tr")
            .attr("data-axis", &axis.axis)
            .child(el("th").attr("class", "mono").text(&axis.axis));
        for v in &axis.values {
            let counts = format!("✓{} ✗{} –{}", v.passed, v.failed, v.not_run);
            tr = tr.child(
                el("td")
                    .attr("class", format!("cov cov-{}", v.state.as_str()))
                    .attr("data-value", &v.value)
                    .attr(
                        "title",
                        format!(
                            "{} = {}: {} passed, {} failed, {} not run",
                            axis.axis, v.value, v.passed, v.failed, v.not_run
                        ),
                    )
                    .child(el("span").attr("class", "value mono").text(&v.value))
                    .child(el("br"))
                    .child(el("span").attr("class", "counts").text(counts)),
            );
        }
        tr.children((axis.values.len()..columns).map(|_| el("td").attr("class", "pad")))
    });
    table.children(rows)
}

/// `<table id="slowest">`: the slowest phases across permutations.
pub fn slowest_table(slowest: &[SlowPhase]) -> Element {
    let head = el("tr")
        .children(["phase", "permutation", "status", "duration s"].map(|h| el("th").text(h)));
    let rows = slowest.iter().map(|s| {
        el("tr")
            .child(el("td").text(&s.phase))
            .child(el("td").attr("class", "mono").text(&s.id))
            .child(
                el("td").child(
                    el("span")
                        .attr("class", format!("status status-{}", s.status))
                        .text(s.status.as_str()),
                ),
            )
            .child(
                el("td")
                    .attr("class", "num")
                    .text(format!("{:.1}", s.duration_ms as f64 / 1000.0)),
            )
    });
    el("table")
        .attr("id", "slowest")
        .child(el("thead").child(head))
        .child(el("tbody").children(rows))
}

/// The anchor of a permutation's timeline; by position, since ids may hold any character.
pub fn timeline_anchor(index: usize) -> String {
    format!("perm-{index}")
}

/// Links to a run's evidence: result.json first, then the artifacts readers open first
/// (timeline, console, journals, screenshots), then the rest by name.
pub fn artifact_links(run: &LocatedRun) -> Element {
    const FIRST: &[&str] = &[
        "events",
        "serial",
        "journal-live",
        "journal-disk",
        "journal-raw",
        "harness-log",
        "screenshot",
    ];
    let mut artifacts: Vec<(&str, &str)> = run
        .result
        .artifacts
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    artifacts.sort_by_key(|(name, _)| {
        let rank = FIRST
            .iter()
            .position(|f| name.starts_with(f))
            .unwrap_or(FIRST.len());
        (rank, *name)
    });
    let link = |name: &str, path: &str| {
        el("li").child(
            el("a")
                .attr("href", href(&[&run.dir, path]))
                .attr("title", name)
                .text(path),
        )
    };
    el("ul")
        .attr("class", "artifacts")
        .child(link("result", crate::result::RESULT_FILE))
        .children(artifacts.into_iter().map(|(name, path)| link(name, path)))
}

/// One line, at most `max` characters, an ellipsis marking a cut.
pub(super) fn shorten(s: &str, max: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut out: String = line.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::coverage::{coverage, merge_axes, Axis};
    use crate::result::tests::{sample_fail, sample_pass};
    use crate::result::RunResult;

    #[test]
    fn coverage_grid_cells_by_state_and_padded() {
        let mut a = sample_pass("a");
        a.params = [("bus".to_string(), "virtio".to_string())].into();
        let mut b = sample_fail("b", "x");
        b.params = [("bus".to_string(), "nvme".to_string())].into();
        let runs: Vec<&RunResult> = vec![&a, &b];
        let axes = merge_axes(
            &[
                Axis::new("bus", ["virtio", "nvme", "<scsi>"]),
                Axis::new("fw", ["bios"]),
            ],
            &runs,
        );
        let html = coverage_grid(&coverage(&axes, &runs)).render();
        assert!(html.starts_with("<table id=\"coverage\">"));
        assert_eq!(html.matches("class=\"cov cov-passed\"").count(), 1);
        assert_eq!(html.matches("class=\"cov cov-failed\"").count(), 1);
        assert_eq!(html.matches("class=\"cov cov-not-run\"").count(), 2);
        assert!(html.contains("data-value=\"&lt;scsi&gt;\""));
        assert!(html.contains("✓1 ✗0 –0"));
        // fw has one value, bus three: two padding cells keep the grid square.
        assert_eq!(html.matches("<td class=\"pad\"></td>").count(), 2);
        assert!(coverage_grid(&[]).render().contains("No axes"));
    }

    #[test]
    fn artifact_links_relative_and_ordered() {
        let mut r = sample_fail("x", "y");
        r.artifacts
            .insert("screenshot".into(), "screenshot-final.png".into());
        r.artifacts
            .insert("journal-live".into(), "journal-live.txt".into());
        r.artifacts
            .insert("install-config".into(), "install-config.yaml".into());
        let html = artifact_links(&LocatedRun::in_own_dir(r)).render();
        let hrefs: Vec<&str> = html
            .split("href=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect();
        assert_eq!(
            hrefs,
            [
                "./x/result.json",
                "./x/events.jsonl",
                "./x/serial.log",
                "./x/journal-live.txt",
                "./x/screenshot-final.png",
                "./x/install-config.yaml",
            ]
        );
        assert_eq!(shorten("a\nb   c", 10), "a b c");
        assert_eq!(shorten("abcdef", 4), "abc…");
    }
}
