//! Comparing a run directory with a baseline: per-phase durations, disk-write throughput and
//! verdicts of the permutations both have, and which differences are regressions.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::perf::thresholds::{is_slowdown, is_throughput_drop, Thresholds};
use crate::result::{RunResult, Verdict};

/// What a comparison row measures.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    Verdict {
        baseline: Verdict,
        current: Verdict,
    },
    Phase {
        name: String,
        baseline_ms: u64,
        current_ms: u64,
    },
    DiskWrite {
        baseline_mib_s: f64,
        current_mib_s: f64,
    },
}

/// One line of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The permutation id.
    pub id: String,
    pub metric: Metric,
    pub regression: bool,
}

/// The comparison of two run directories.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Per permutation present in both (in the current run's order): its verdict, each phase
    /// with a duration in both, then disk write when measured in both.
    pub rows: Vec<Row>,
    pub only_in_baseline: Vec<String>,
    pub only_in_current: Vec<String>,
    /// Why the comparison cannot pass as a gate whatever its rows say (nothing compared, or
    /// hosts whose figures are not comparable); `report --compare` exits 1 when not empty.
    pub not_comparable: Vec<String>,
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.rows.iter().filter(|r| r.regression).count()
    }
}

/// Compares `current` with `baseline`, matching permutations by id.
pub fn compare(baseline: &[RunResult], current: &[RunResult], t: Thresholds) -> Comparison {
    let base_by_id: BTreeMap<&str, &RunResult> =
        baseline.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut cmp = Comparison::default();
    for cur in current {
        let Some(base) = base_by_id.get(cur.id.as_str()) else {
            cmp.only_in_current.push(cur.id.clone());
            continue;
        };
        cmp.rows.push(Row {
            id: cur.id.clone(),
            metric: Metric::Verdict {
                baseline: base.verdict,
                current: cur.verdict,
            },
            regression: base.verdict == Verdict::Pass && cur.verdict != Verdict::Pass,
        });
        for phase in &cur.phases {
            let (Some(current_ms), Some(baseline_ms)) = (
                phase.duration_ms,
                base.phase(&phase.name).and_then(|p| p.duration_ms),
            ) else {
                continue;
            };
            cmp.rows.push(Row {
                id: cur.id.clone(),
                metric: Metric::Phase {
                    name: phase.name.clone(),
                    baseline_ms,
                    current_ms,
                },
                regression: is_slowdown(baseline_ms, current_ms, t),
            });
        }
        if let (Some(b), Some(c)) = (&base.disk_write, &cur.disk_write) {
            cmp.rows.push(Row {
                id: cur.id.clone(),
                metric: Metric::DiskWrite {
                    baseline_mib_s: b.mib_per_s,
                    current_mib_s: c.mib_per_s,
                },
                regression: is_throughput_drop(b.mib_per_s, c.mib_per_s, t),
            });
        }
    }
    let current_ids: Vec<&str> = current.iter().map(|r| r.id.as_str()).collect();
    cmp.only_in_baseline = baseline
        .iter()
        .filter(|r| !current_ids.contains(&r.id.as_str()))
        .map(|r| r.id.clone())
        .collect();
    let pairs: Vec<(&RunResult, &RunResult)> = current
        .iter()
        .filter_map(|c| Some((*base_by_id.get(c.id.as_str())?, c)))
        .collect();
    cmp.not_comparable = not_comparable(&pairs);
    cmp
}

/// Why a comparison of these (baseline, current) pairs of one id cannot pass as a gate: no
/// pair; no passed run on a side, so no duration was compared; a pair on another
/// accelerator (KVM against TCG) or another install-disk cache mode (whether a write reached
/// the disk). A side that does not record its cache mode (an older result.json) is not
/// told apart.
pub fn not_comparable(pairs: &[(&RunResult, &RunResult)]) -> Vec<String> {
    if pairs.is_empty() {
        return vec!["no permutation in common with the baseline".into()];
    }
    let mut out = Vec::new();
    for (side, passed) in [
        (
            "baseline",
            pairs.iter().any(|(b, _)| b.verdict == Verdict::Pass),
        ),
        (
            "current run",
            pairs.iter().any(|(_, c)| c.verdict == Verdict::Pass),
        ),
    ] {
        if !passed {
            out.push(format!(
                "the {side} has no passed run in the permutations in common, so no duration of it was compared"
            ));
        }
    }
    let differ = |what: &str, f: &dyn Fn(&RunResult) -> Option<String>| -> Option<String> {
        let ids: Vec<String> = pairs
            .iter()
            .filter_map(|(b, c)| {
                let (bv, cv) = (f(b)?, f(c)?);
                (bv != cv).then(|| format!("{} ({bv} in the baseline, {cv} now)", c.id))
            })
            .collect();
        (!ids.is_empty()).then(|| {
            format!(
                "{what} differs: {}: the figures are not comparable",
                ids.join(", ")
            )
        })
    };
    let accel = |r: &RunResult| (!r.accel.is_empty()).then(|| r.accel.clone());
    let cache = |r: &RunResult| r.disk_write.as_ref()?.cache.clone();
    out.extend(differ("the accelerator", &accel));
    out.extend(differ("the install disk's cache mode", &cache));
    out
}

/// The comparison as a plain-text table, with the thresholds and a closing count.
pub fn render_text(cmp: &Comparison, t: Thresholds) -> String {
    let header = [
        "permutation",
        "metric",
        "baseline",
        "current",
        "delta",
        "delta %",
        "",
    ];
    let rows: Vec<Vec<String>> = std::iter::once(header.map(String::from).to_vec())
        .chain(cmp.rows.iter().map(|r| text_row(r).to_vec()))
        .collect();
    // Names left-aligned, numbers right-aligned.
    let right = [false, false, true, true, true, true, false];

    let mut out = format!(
        "regression: a phase slower by more than {}% and {} s, disk write slower by more than \
         {}%, or a pass that no longer passes\n\n",
        t.pct, t.secs, t.pct
    );
    out.push_str(&aligned_columns(&rows, &right));
    if !cmp.only_in_baseline.is_empty() {
        let _ = writeln!(
            out,
            "\nonly in the baseline (not compared): {}",
            cmp.only_in_baseline.join(", ")
        );
    }
    if !cmp.only_in_current.is_empty() {
        let _ = writeln!(
            out,
            "\nonly in this run (not compared): {}",
            cmp.only_in_current.join(", ")
        );
    }
    let n = cmp.regressions();
    let _ = writeln!(
        out,
        "\n{}",
        match n {
            0 => "no regression".to_string(),
            1 => "1 regression".to_string(),
            n => format!("{n} regressions"),
        }
    );
    out.push_str(&not_comparable_text(&cmp.not_comparable));
    out
}

/// Why the comparison fails as a gate whatever its rows say; empty when it can pass.
pub fn not_comparable_text(reasons: &[String]) -> String {
    if reasons.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nFAILED: nothing comparable was compared, so this is no pass:\n");
    for r in reasons {
        out.push_str(&format!("  - {r}\n"));
    }
    out
}

/// Plain-text columns, each padded to its widest cell and two spaces apart, with trailing
/// blanks trimmed; `right[i]` right-aligns column i (numbers), the others are left-aligned
/// (names). Widths count characters, not bytes: ids and units may be non-ASCII.
pub fn aligned_columns(rows: &[Vec<String>], right: &[bool]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            if right.get(i).copied().unwrap_or(false) {
                line.push_str(&format!("{pad}{c}  "));
            } else {
                line.push_str(&format!("{c}{pad}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn text_row(row: &Row) -> [String; 7] {
    let flag = if row.regression { "REGRESSION" } else { "" }.to_string();
    match &row.metric {
        Metric::Verdict { baseline, current } => [
            row.id.clone(),
            "verdict".into(),
            baseline.to_string(),
            current.to_string(),
            String::new(),
            String::new(),
            flag,
        ],
        Metric::Phase {
            name,
            baseline_ms,
            current_ms,
        } => {
            let delta = *current_ms as f64 - *baseline_ms as f64;
            [
                row.id.clone(),
                format!("{name} (s)"),
                format!("{:.1}", *baseline_ms as f64 / 1000.0),
                format!("{:.1}", *current_ms as f64 / 1000.0),
                signed(delta / 1000.0),
                percent(delta, *baseline_ms as f64),
                flag,
            ]
        }
        Metric::DiskWrite {
            baseline_mib_s,
            current_mib_s,
        } => [
            row.id.clone(),
            "disk write (MiB/s)".into(),
            format!("{baseline_mib_s:.1}"),
            format!("{current_mib_s:.1}"),
            signed(current_mib_s - baseline_mib_s),
            percent(current_mib_s - baseline_mib_s, *baseline_mib_s),
            flag,
        ],
    }
}

fn percent(delta: f64, base: f64) -> String {
    if base == 0.0 {
        "n/a".into()
    } else {
        signed(delta * 100.0 / base) + "%"
    }
}

/// A signed number with one decimal; what rounds to zero is `+0.0`, never `-0.0`.
pub fn signed(x: f64) -> String {
    let s = format!("{x:+.1}");
    if s == "-0.0" {
        "+0.0".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    const T: Thresholds = Thresholds {
        pct: 20.0,
        secs: 10.0,
    };

    #[test]
    fn slowdown_needs_both_thresholds_exceeded() {
        // Exactly 20% and exactly 10 s: at the boundary, not beyond it.
        assert!(!is_slowdown(50_000, 60_000, T));
        // One millisecond beyond both.
        assert!(is_slowdown(50_000, 60_001, T));
        // 30% but only 5 s.
        assert!(!is_slowdown(16_667, 21_667, T));
        // 15 s but only 10%.
        assert!(!is_slowdown(150_000, 165_000, T));
        // 25% and 12 s.
        assert!(is_slowdown(48_000, 60_000, T));
        // Faster, or equal, never.
        assert!(!is_slowdown(60_000, 10_000, T));
        assert!(!is_slowdown(60_000, 60_000, T));
        // From nothing to 11 s: infinitely slower and beyond 10 s.
        assert!(is_slowdown(0, 11_000, T));
        assert!(!is_slowdown(0, 9_000, T));
        // Thresholds are parameters.
        let strict = Thresholds {
            pct: 5.0,
            secs: 1.0,
        };
        assert!(is_slowdown(20_000, 22_000, strict));
    }

    #[test]
    fn throughput_drop_beyond_the_percentage() {
        assert!(
            !is_throughput_drop(100.0, 80.0, T),
            "exactly 20% is not beyond"
        );
        assert!(is_throughput_drop(100.0, 79.9, T));
        assert!(!is_throughput_drop(100.0, 130.0, T));
        assert!(!is_throughput_drop(0.0, 0.0, T));
    }

    #[test]
    fn compares_matched_permutations_and_flags_regressions() {
        let base_a = sample_pass("a");
        let mut cur_a = sample_pass("a");
        // bootkube: 1 s -> 13 s: +1200% and +12 s.
        cur_a.phases[2].duration_ms = Some(13_000);
        // Disk write: 82.6 -> 50 MiB/s, a 39% drop.
        cur_a.disk_write.as_mut().unwrap().mib_per_s = 50.0;
        let base_b = sample_pass("b");
        let cur_b = sample_fail("b", "bootkube timed out");
        let only_base = sample_pass("gone");
        let only_cur = sample_pass("new");

        let cmp = compare(&[base_a, base_b, only_base], &[cur_a, cur_b, only_cur], T);
        assert_eq!(cmp.only_in_baseline, ["gone"]);
        assert_eq!(cmp.only_in_current, ["new"]);
        let flagged: Vec<String> = cmp
            .rows
            .iter()
            .filter(|r| r.regression)
            .map(|r| match &r.metric {
                Metric::Verdict { .. } => format!("{} verdict", r.id),
                Metric::Phase { name, .. } => format!("{} {name}", r.id),
                Metric::DiskWrite { .. } => format!("{} disk", r.id),
            })
            .collect();
        assert_eq!(flagged, ["a bootkube", "a disk", "b verdict"]);
        assert_eq!(cmp.regressions(), 3);
        // a: verdict + 11 phases + disk; b: verdict + its 3 timed phases (no disk write now).
        assert_eq!(cmp.rows.len(), 13 + 4);

        let text = render_text(&cmp, T);
        let line = text
            .lines()
            .find(|l| l.contains("bootkube (s)") && l.starts_with("a "))
            .unwrap();
        assert!(line.contains("1.0"));
        assert!(line.contains("13.0"));
        assert!(line.contains("+12.0"));
        assert!(line.contains("+1200.0%"));
        assert!(line.ends_with("REGRESSION"));
        let verdict = text
            .lines()
            .find(|l| l.starts_with("b ") && l.contains("verdict"))
            .unwrap();
        assert!(
            verdict.contains("pass") && verdict.contains("fail") && verdict.ends_with("REGRESSION")
        );
        assert!(text.contains("only in the baseline (not compared): gone"));
        assert!(text.contains("only in this run (not compared): new"));
        assert!(text.trim_end().ends_with("3 regressions"));
        assert_eq!(signed(-0.04), "+0.0");
        assert_eq!(percent(-1.0, 4.0), "-25.0%");
        assert_eq!(percent(1.0, 0.0), "n/a");
    }

    #[test]
    fn identical_runs_have_no_regression() {
        let runs = [sample_pass("a"), sample_fail("b", "x")];
        let cmp = compare(&runs, &runs, T);
        assert_eq!(cmp.regressions(), 0);
        // fail -> fail is not a new regression.
        assert!(render_text(&cmp, T).trim_end().ends_with("no regression"));
    }

    #[test]
    fn nothing_in_common_is_no_pass() {
        let cmp = compare(&[sample_pass("a")], &[sample_pass("b")], T);
        assert_eq!(cmp.regressions(), 0);
        assert_eq!(
            cmp.not_comparable,
            ["no permutation in common with the baseline"]
        );
        assert!(render_text(&cmp, T).contains("FAILED: nothing comparable was compared"));
        let cmp = compare(&[sample_pass("a")], &[], T);
        assert_eq!(cmp.not_comparable.len(), 1);
        assert!(compare(&[sample_pass("a")], &[sample_pass("a")], T)
            .not_comparable
            .is_empty());
    }

    #[test]
    fn no_passed_run_on_a_side_is_no_pass() {
        let fail = || sample_fail("a", "x");
        // Both failed: no verdict regressed, no duration compared.
        let cmp = compare(&[fail()], &[fail()], T);
        assert_eq!(cmp.regressions(), 0);
        assert_eq!(cmp.not_comparable.len(), 2, "{:?}", cmp.not_comparable);
        assert!(cmp.not_comparable[0].starts_with("the baseline has no passed run"));
        assert!(cmp.not_comparable[1].starts_with("the current run has no passed run"));
        // A baseline that failed and a run that passes: nothing to hold the run against.
        let cmp = compare(&[fail()], &[sample_pass("a")], T);
        assert_eq!(cmp.regressions(), 0);
        assert_eq!(cmp.not_comparable.len(), 1, "{:?}", cmp.not_comparable);
    }

    #[test]
    fn another_accelerator_or_disk_cache_is_no_pass() {
        let base = sample_pass("a");
        let mut kvm = sample_pass("a");
        kvm.accel = "kvm".into();
        assert_eq!(base.accel, "tcg");
        let cmp = compare(std::slice::from_ref(&base), &[kvm], T);
        assert_eq!(
            cmp.not_comparable,
            ["the accelerator differs: a (tcg in the baseline, kvm now): the figures are not comparable"]
        );
        let cached = |c: Option<&str>| {
            let mut r = sample_pass("a");
            r.disk_write.as_mut().unwrap().cache = c.map(str::to_string);
            r
        };
        let cmp = compare(&[cached(Some("unsafe"))], &[cached(Some("none"))], T);
        assert_eq!(
            cmp.not_comparable,
            ["the install disk's cache mode differs: a (unsafe in the baseline, none now): the figures are not comparable"]
        );
        // A result.json from before the cache mode was recorded is not told apart.
        assert!(compare(&[cached(None)], &[cached(Some("none"))], T)
            .not_comparable
            .is_empty());
        assert!(compare(&[cached(Some("none"))], &[cached(Some("none"))], T)
            .not_comparable
            .is_empty());
    }
}
