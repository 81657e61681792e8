//! `report --compare` of two perf directories as plain text: the rules, a warning when the
//! hosts differ, one aligned row per permutation and metric, and a closing count.

use crate::perf::compare::{HostDifference, MibS, PerfComparison, Row, Side};
use crate::report::dir_compare::{aligned_columns, not_comparable_text, signed};

/// The comparison as plain text: the rules, a host warning, the aligned table, what was only
/// on one side, and a closing count.
pub fn render_text(cmp: &PerfComparison) -> String {
    let mut out = format!(
        "regression: slower at alpha {} (two-sided Mann-Whitney U test on the runs' samples) \
         with the median at least {}% above the baseline's; with too few runs for the test \
         ({} per side at this alpha), a median slower by more than {}% and {} s\n",
        cmp.alpha,
        cmp.min_effect_pct,
        cmp.min_samples_per_group,
        cmp.threshold_pct,
        cmp.threshold_s
    );
    out.push_str(&host_warning(&cmp.host_differences));
    out.push('\n');
    out.push_str(&aligned_columns(&table_rows(&cmp.rows), &TABLE_RIGHT));
    for (ids, side) in [
        (&cmp.only_in_baseline, "the baseline"),
        (&cmp.only_in_candidate, "the candidate"),
    ] {
        if !ids.is_empty() {
            out.push_str(&format!(
                "\nonly in {side} (not compared): {}\n",
                ids.join(", ")
            ));
        }
    }
    out.push_str(&match cmp.regressions {
        0 => "\nno regression\n".to_string(),
        1 => "\n1 regression\n".to_string(),
        n => format!("\n{n} regressions\n"),
    });
    out.push_str(&not_comparable_text(&cmp.not_comparable));
    out
}

/// The warning naming what differs between the two hosts; empty when nothing does.
pub fn host_warning(diffs: &[HostDifference]) -> String {
    if diffs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nWARNING: the host context differs from the baseline's; the comparison still runs, but \
         a difference may come from the host rather than the change:\n",
    );
    for d in diffs {
        let scope = if d.permutations.is_empty() {
            String::new()
        } else {
            format!(" (permutations {})", d.permutations.join(", "))
        };
        out.push_str(&format!(
            "  - {}: {} in the baseline, {} in the candidate{scope}\n",
            d.what, d.baseline, d.candidate
        ));
    }
    out
}

const TABLE_HEADER: [&str; 9] = [
    "permutation",
    "metric",
    "baseline",
    "candidate",
    "change",
    "p-value",
    "n",
    "verdict",
    "",
];
/// Numbers right-aligned, names left-aligned.
const TABLE_RIGHT: [bool; 9] = [false, false, true, true, true, true, true, false, false];

fn table_rows(rows: &[Row]) -> Vec<Vec<String>> {
    let mut out = vec![TABLE_HEADER.map(String::from).to_vec()];
    for r in rows {
        out.push(text_row(r));
        if let Some(m) = &r.mib_s {
            out.push(mib_s_row(r, m));
        }
    }
    out
}

fn text_row(r: &Row) -> Vec<String> {
    let verdict = if r.note.is_empty() {
        r.verdict.label().to_string()
    } else {
        format!("{}; {}", r.verdict.label(), r.note)
    };
    vec![
        r.permutation.clone(),
        r.metric.label(),
        value(r.baseline.map(|s| s.median)),
        value(r.candidate.map(|s| s.median)),
        change(
            r.median_change_pct,
            r.baseline.is_some() && r.candidate.is_some(),
        ),
        p_value(r.p_value),
        counts(r),
        verdict,
        if r.regression { "REGRESSION" } else { "" }.into(),
    ]
}

/// The disk write's MiB/s under its seconds: shown, not judged.
fn mib_s_row(r: &Row, m: &MibS) -> Vec<String> {
    let pct = match (m.baseline_median, m.candidate_median) {
        (Some(b), Some(c)) if b != 0.0 => Some((c - b) / b.abs() * 100.0),
        _ => None,
    };
    vec![
        r.permutation.clone(),
        "disk write (MiB/s)".into(),
        value(m.baseline_median),
        value(m.candidate_median),
        change(
            pct,
            m.baseline_median.is_some() && m.candidate_median.is_some(),
        ),
        String::new(),
        counts(r),
        match &m.caveat {
            Some(c) => format!("shown only: the seconds above decide; {c}"),
            None => "shown only: the seconds above decide".into(),
        },
        String::new(),
    ]
}

fn value(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// `+12.3%`; `n/a` when both sides have a median but the change is undefined (from 0).
fn change(pct: Option<f64>, both: bool) -> String {
    match pct {
        Some(p) => signed(p) + "%",
        None if both => "n/a".into(),
        None => "-".into(),
    }
}

/// Three decimals where they say something, scientific below 0.001.
fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p >= 0.001 => format!("{p:.3}"),
        Some(p) => format!("{p:.1e}"),
        None => "-".into(),
    }
}

/// `baseline/candidate` sample counts, 0 for a missing side.
fn counts(r: &Row) -> String {
    let n = |s: Option<Side>| s.map_or(0, |s| s.n);
    format!("{}/{}", n(r.baseline), n(r.candidate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::CacheMode;
    use crate::perf::compare::{compare_reports, DecidedBy, RowVerdict, Rules};
    use crate::perf::testdata::{noisy, perm, report, rules, with_disk_write};
    use crate::perf::thresholds::Thresholds;

    fn find<'a>(cmp: &'a PerfComparison, id: &str, metric: &str) -> &'a Row {
        cmp.rows
            .iter()
            .find(|r| r.permutation == id && r.metric.label() == metric)
            .unwrap_or_else(|| panic!("no row {id} {metric}: {:#?}", cmp.rows))
    }

    #[test]
    fn a_clear_slowdown_is_flagged() {
        let base = report(vec![perm(
            "smoke",
            &[("assets", &noisy(20.0)), ("bootkube", &noisy(100.0))],
        )]);
        let cand = report(vec![perm(
            "smoke",
            &[("assets", &noisy(20.0)), ("bootkube", &noisy(130.0))],
        )]);
        let cmp = compare_reports(&base, &cand, rules()).unwrap();
        let b = find(&cmp, "smoke", "bootkube (s)");
        assert_eq!(b.verdict, RowVerdict::Slower);
        assert_eq!(b.decided_by, DecidedBy::Test);
        assert!(b.regression);
        assert!(b.p_value.unwrap() < 0.01, "{b:?}");
        assert!((b.median_change_pct.unwrap() - 30.0).abs() < 1e-9, "{b:?}");
        assert_eq!((b.baseline.unwrap().n, b.candidate.unwrap().n), (7, 7));
        let a = find(&cmp, "smoke", "assets (s)");
        assert_eq!(a.verdict, RowVerdict::NoSignificantDifference);
        assert!(!a.regression);
        // The whole run is bootkube plus assets: slower too, by about 25 %.
        assert!(find(&cmp, "smoke", "total (s)").regression);
        assert_eq!(cmp.regressions, 2);

        let text = render_text(&cmp);
        let line = text.lines().find(|l| l.contains("bootkube (s)")).unwrap();
        assert!(line.ends_with("REGRESSION"), "{line}");
        for cell in ["100.00", "130.00", "+30.0%", "7/7", "slower"] {
            assert!(line.contains(cell), "{cell} in {line}");
        }
        assert!(text.trim_end().ends_with("2 regressions"), "{text}");
        // The other way round it is faster: never a regression.
        let cmp = compare_reports(&cand, &base, rules()).unwrap();
        assert_eq!(
            find(&cmp, "smoke", "bootkube (s)").verdict,
            RowVerdict::Faster
        );
        assert_eq!(cmp.regressions, 0);
    }

    #[test]
    fn noise_is_not_flagged() {
        // The same values in another order, and a sample shifted within its own spread.
        let mut shuffled = noisy(100.0);
        shuffled.reverse();
        let base = report(vec![perm("a", &[("bootkube", &noisy(100.0))])]);
        let cand = report(vec![perm(
            "a",
            &[("bootkube", &[98.0, 101.0, 103.5, 99.0, 100.5, 97.5, 102.0])],
        )]);
        let cmp = compare_reports(&base, &cand, rules()).unwrap();
        let r = find(&cmp, "a", "bootkube (s)");
        assert_eq!(r.verdict, RowVerdict::NoSignificantDifference, "{r:?}");
        assert_eq!(cmp.regressions, 0);
        let same = report(vec![perm("a", &[("bootkube", &shuffled)])]);
        let cmp = compare_reports(&base, &same, rules()).unwrap();
        assert_eq!(cmp.regressions, 0);
        assert_eq!(find(&cmp, "a", "bootkube (s)").p_value, Some(1.0));
        assert!(render_text(&cmp).trim_end().ends_with("no regression"));
    }

    #[test]
    fn a_significant_one_percent_shift_is_below_the_minimum_effect() {
        // Very steady runs: every candidate run is 1 % slower, which the test finds.
        let base: Vec<f64> = (0..8).map(|i| 600.0 + 0.1 * f64::from(i)).collect();
        let cand: Vec<f64> = base.iter().map(|v| v * 1.01).collect();
        let b = report(vec![perm("a", &[("bootkube", &base)])]);
        let c = report(vec![perm("a", &[("bootkube", &cand)])]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        let r = find(&cmp, "a", "bootkube (s)");
        assert_eq!(r.verdict, RowVerdict::Slower);
        assert!(r.p_value.unwrap() < 0.001);
        assert!(!r.regression);
        assert_eq!(r.note, "below the 5% minimum effect");
        let text = render_text(&cmp);
        let line = text.lines().find(|l| l.contains("bootkube (s)")).unwrap();
        assert!(
            line.ends_with("slower; below the 5% minimum effect"),
            "{line}"
        );

        // With a smaller minimum it counts.
        let strict = Rules::new(0.05, 0.5, Thresholds::default()).unwrap();
        assert!(
            find(
                &compare_reports(&b, &c, strict).unwrap(),
                "a",
                "bootkube (s)"
            )
            .regression
        );

        // Exactly at the minimum counts ("at least"); a hair above it does not.
        let base = [99.9, 99.95, 100.0, 100.0, 100.05, 100.1];
        let cand: Vec<f64> = base.iter().map(|v| v + 1.0).collect();
        let b = report(vec![perm("a", &[("bootkube", &base)])]);
        let c = report(vec![perm("a", &[("bootkube", &cand)])]);
        let at = |min| {
            let rules = Rules::new(0.05, min, Thresholds::default()).unwrap();
            let cmp = compare_reports(&b, &c, rules).unwrap();
            find(&cmp, "a", "bootkube (s)").clone()
        };
        let r = at(1.0);
        assert_eq!(r.median_change_pct, Some(1.0));
        assert!(r.regression, "{r:?}");
        assert!(!at(1.000_001).regression);
    }

    #[test]
    fn too_few_runs_fall_back_to_the_thresholds() {
        let b = report(vec![perm(
            "a",
            &[("bootkube", &[50.0, 50.0]), ("assets", &[50.0, 52.0])],
        )]);
        let c = report(vec![perm(
            "a",
            &[("bootkube", &[70.0, 72.0]), ("assets", &[55.0, 57.0])],
        )]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        // bootkube: 50 -> 71 s, +42 % and +21 s: beyond both thresholds.
        let r = find(&cmp, "a", "bootkube (s)");
        assert_eq!(r.verdict, RowVerdict::TooFewSamples);
        assert_eq!(r.decided_by, DecidedBy::Thresholds);
        assert!(r.regression);
        assert_eq!(r.note, "threshold: n=2 < 4 needed for the test");
        // assets: +10 %, +5 s: within them.
        let r = find(&cmp, "a", "assets (s)");
        assert_eq!(r.decided_by, DecidedBy::Thresholds);
        assert!(!r.regression);
        let text = render_text(&cmp);
        let line = text.lines().find(|l| l.contains("bootkube (s)")).unwrap();
        assert!(
            line.contains("too few runs; threshold: n=2 < 4 needed for the test")
                && line.ends_with("REGRESSION"),
            "{line}"
        );
        // Unequal sizes say both.
        let c = report(vec![perm("a", &[("bootkube", &[70.0, 72.0, 71.0])])]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        assert_eq!(
            find(&cmp, "a", "bootkube (s)").note,
            "threshold: n=2/3, too few for the test (4 each needed)"
        );
        // The thresholds are the caller's.
        let lax = Rules::new(
            0.05,
            5.0,
            Thresholds {
                pct: 50.0,
                secs: 10.0,
            },
        )
        .unwrap();
        let cmp = compare_reports(&b, &c, lax).unwrap();
        assert!(!find(&cmp, "a", "bootkube (s)").regression);
    }

    #[test]
    fn what_only_one_side_has_is_listed_not_a_regression() {
        let b = report(vec![
            with_disk_write(perm("a", &[("assets", &noisy(2.0))]), &noisy(3.0)),
            perm("gone", &[("assets", &noisy(2.0))]),
        ]);
        let mut none_passed = perm("a", &[]);
        none_passed.counts.passed = 0;
        let c = report(vec![
            perm("new", &[("assets", &noisy(2.0))]),
            perm("a", &[("assets", &noisy(2.0)), ("bootkube", &noisy(9.0))]),
        ]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        assert_eq!(cmp.only_in_baseline, ["gone"]);
        assert_eq!(cmp.only_in_candidate, ["new"]);
        let r = find(&cmp, "a", "bootkube (s)");
        assert_eq!(
            (r.verdict, r.decided_by, r.regression),
            (RowVerdict::NoSamples, DecidedBy::NotCompared, false)
        );
        assert_eq!(r.note, "no samples in the baseline");
        assert!(r.baseline.is_none() && r.candidate.is_some());
        let w = find(&cmp, "a", "disk write (s)");
        assert_eq!(w.note, "no samples in the candidate");
        let m = w.mib_s.clone().unwrap();
        assert!(
            (m.baseline_median.unwrap() - 256.0 / 3.0).abs() < 1e-9,
            "{m:?}"
        );
        assert_eq!(m.candidate_median, None);
        // The only regression is the whole run, which the new phase made longer.
        let flagged: Vec<String> = cmp
            .rows
            .iter()
            .filter(|r| r.regression)
            .map(|r| r.metric.label())
            .collect();
        assert_eq!(flagged, ["total (s)"]);

        // A permutation no run of which passed, on both sides: its whole run is listed.
        let cmp = compare_reports(
            &report(vec![none_passed.clone()]),
            &report(vec![none_passed]),
            rules(),
        )
        .unwrap();
        assert_eq!(cmp.rows.len(), 1);
        assert_eq!(cmp.rows[0].note, "no samples on either side");

        let text = render_text(&compare_reports(&b, &c, rules()).unwrap());
        assert!(
            text.contains("\nonly in the baseline (not compared): gone\n"),
            "{text}"
        );
        assert!(
            text.contains("\nonly in the candidate (not compared): new\n"),
            "{text}"
        );
        let line = text.lines().find(|l| l.contains("bootkube (s)")).unwrap();
        assert!(line.contains(" - ") && line.contains("0/7"), "{line}");
        assert!(
            line.ends_with("not compared; no samples in the baseline"),
            "{line}"
        );
    }

    /// Both sides through the unsafe cache (the gate compares only like with like): the MiB/s
    /// row says its figures are the host's page cache.
    #[test]
    fn a_disk_write_through_the_unsafe_cache_is_labelled_in_the_comparison() {
        let unsafe_write = |secs| {
            let mut p = with_disk_write(perm("a", &[]), &noisy(secs));
            p.disk_write.as_mut().unwrap().caveat = Some("the host's page cache".into());
            p
        };
        let cmp = compare_reports(
            &report(vec![unsafe_write(2.0)]),
            &report(vec![unsafe_write(2.1)]),
            rules(),
        )
        .unwrap();
        let text = render_text(&cmp);
        let mib = text
            .lines()
            .find(|l| l.contains("disk write (MiB/s)"))
            .unwrap();
        assert!(mib.ends_with("; the host's page cache"), "{mib}");
        let plain = report(vec![with_disk_write(perm("a", &[]), &noisy(2.0))]);
        let text = render_text(&compare_reports(&plain, &plain, rules()).unwrap());
        assert!(!text.contains("page cache"), "{text}");
    }

    #[test]
    fn the_disk_write_compares_seconds_and_shows_mib_s() {
        let b = report(vec![with_disk_write(perm("a", &[]), &noisy(2.0))]);
        let c = report(vec![with_disk_write(perm("a", &[]), &noisy(4.0))]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        let w = find(&cmp, "a", "disk write (s)");
        assert_eq!(w.verdict, RowVerdict::Slower);
        assert!(w.regression);
        let text = render_text(&cmp);
        let mib = text
            .lines()
            .find(|l| l.contains("disk write (MiB/s)"))
            .unwrap();
        // 256 MiB in 2 s and in 4 s.
        assert!(
            mib.contains("128.00") && mib.contains("64.00") && mib.contains("-50.0%"),
            "{mib}"
        );
        assert!(!mib.contains("REGRESSION"), "{mib}");
    }

    #[test]
    fn a_slowdown_from_a_zero_median_is_unbounded() {
        let zeros = [0.0; 6];
        let b = report(vec![perm("a", &[("reboot", &zeros)])]);
        let c = report(vec![perm("a", &[("reboot", &noisy(1.0))])]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        let r = find(&cmp, "a", "reboot (s)");
        assert_eq!(r.median_change_pct, None);
        assert!(r.regression);
        let text = render_text(&cmp);
        let line = text.lines().find(|l| l.contains("reboot (s)")).unwrap();
        assert!(line.contains(" n/a "), "{line}");
    }

    #[test]
    fn host_differences_are_named() {
        let b = report(vec![
            perm("a", &[("assets", &noisy(2.0))]),
            perm("b", &[("assets", &noisy(2.0))]),
        ]);
        let mut c = b.clone();
        c.host.accel = "tcg".into();
        let mut own = c.host.clone();
        own.install_disk.as_mut().unwrap().cache = CacheMode::None;
        c.permutations[1].host = Some(own);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        assert_eq!(
            cmp.host_differences,
            [
                HostDifference {
                    what: "accelerator".into(),
                    baseline: "kvm".into(),
                    candidate: "tcg".into(),
                    permutations: vec![],
                },
                HostDifference {
                    what: "install-disk cache".into(),
                    baseline: "unsafe".into(),
                    candidate: "none".into(),
                    permutations: vec!["b".into()],
                },
            ]
        );
        let text = render_text(&cmp);
        assert!(text.contains("WARNING: the host context differs"), "{text}");
        assert!(text.contains("  - accelerator: kvm in the baseline, tcg in the candidate\n"));
        assert!(text.contains(
            "  - install-disk cache: unsafe in the baseline, none in the candidate (permutations b)\n"
        ));
        // The comparison still ran.
        assert_eq!(cmp.rows.len(), 4);

        // Same host: no warning. Nothing matched: the top-level hosts are compared.
        assert!(compare_reports(&b, &b, rules())
            .unwrap()
            .host_differences
            .is_empty());
        assert!(!render_text(&compare_reports(&b, &b, rules()).unwrap()).contains("WARNING"));
        let mut other = report(vec![perm("z", &[])]);
        other.host.backing_store = None;
        other.host.install_disk.as_mut().unwrap().throttle = Some(crate::hw::Throttle {
            bytes_per_s: Some(8 << 20),
            iops: None,
        });
        let cmp = compare_reports(&b, &other, rules()).unwrap();
        let what: Vec<(&str, &str)> = cmp
            .host_differences
            .iter()
            .map(|d| (d.what.as_str(), d.candidate.as_str()))
            .collect();
        assert_eq!(
            what,
            [
                ("install-disk throttle", "throttled to 8.0 MiB/s"),
                ("backing store filesystem", "unknown")
            ]
        );
    }

    /// A permutation as `perm`, whose measured runs all failed (no statistics).
    fn failed(id: &str) -> crate::perf::model::PermutationPerf {
        let mut p = perm(id, &[]);
        p.counts.measured = 6;
        p.counts.planned = 6;
        p.counts.passed = 0;
        p
    }

    #[test]
    fn no_permutation_in_common_is_no_pass() {
        let b = report(vec![perm("a", &[("assets", &noisy(2.0))])]);
        let c = report(vec![perm("b", &[("assets", &noisy(2.0))])]);
        let cmp = compare_reports(&b, &c, rules()).unwrap();
        assert_eq!(cmp.regressions, 0);
        assert_eq!(
            cmp.not_comparable,
            ["no permutation in common: the baseline has a, the candidate b"]
        );
        let text = render_text(&cmp);
        assert!(
            text.contains("FAILED: nothing comparable was compared"),
            "{text}"
        );
        // An empty candidate too.
        let cmp = compare_reports(&b, &report(vec![]), rules()).unwrap();
        assert!(
            cmp.not_comparable[0].ends_with("the candidate none"),
            "{cmp:?}"
        );
        // One permutation in common, with passed runs on both sides: comparable.
        assert!(compare_reports(&b, &b, rules())
            .unwrap()
            .not_comparable
            .is_empty());
    }

    #[test]
    fn no_passed_run_on_a_side_is_no_pass() {
        let good = report(vec![perm("a", &[("assets", &noisy(2.0))])]);
        let bad = report(vec![failed("a")]);
        for (b, c, side) in [
            (&good, &bad, "the candidate"),
            (&bad, &good, "the baseline"),
        ] {
            let cmp = compare_reports(b, c, rules()).unwrap();
            assert_eq!(cmp.regressions, 0, "{side}");
            assert_eq!(cmp.not_comparable.len(), 1, "{:?}", cmp.not_comparable);
            assert!(
                cmp.not_comparable[0].starts_with(&format!("{side} has no passed measured run")),
                "{:?}",
                cmp.not_comparable
            );
        }
        let cmp = compare_reports(&bad, &bad, rules()).unwrap();
        assert_eq!(cmp.not_comparable.len(), 2, "{:?}", cmp.not_comparable);
    }

    #[test]
    fn another_accelerator_or_disk_cache_is_no_pass() {
        let b = report(vec![perm("a", &[("assets", &noisy(2.0))])]);
        let mut tcg = b.clone();
        tcg.host.accel = "tcg".into();
        let cmp = compare_reports(&b, &tcg, rules()).unwrap();
        assert_eq!(
            cmp.not_comparable,
            ["accelerator: kvm in the baseline, tcg in the candidate: the figures are not comparable"]
        );
        let mut direct = b.clone();
        direct.host.install_disk.as_mut().unwrap().cache = CacheMode::None;
        let cmp = compare_reports(&b, &direct, rules()).unwrap();
        assert_eq!(
            cmp.not_comparable,
            ["install-disk cache: unsafe in the baseline, none in the candidate: the figures are not comparable"]
        );
        // Another CPU model is a warning, not a refusal.
        let mut cpu = b.clone();
        cpu.host.cpu_model = "another".into();
        let cmp = compare_reports(&b, &cpu, rules()).unwrap();
        assert!(!cmp.host_differences.is_empty());
        assert!(cmp.not_comparable.is_empty(), "{:?}", cmp.not_comparable);
        // A side that does not record its cache mode is not told apart.
        let mut old = b.clone();
        old.host.install_disk = None;
        assert!(compare_reports(&b, &old, rules())
            .unwrap()
            .not_comparable
            .is_empty());
    }
}
