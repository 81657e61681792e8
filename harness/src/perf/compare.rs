//! `report --compare` on two perf directories, the CI gate: per permutation (matched by id),
//! each phase, the whole run and the disk write of the candidate against the baseline, from
//! the samples in their perf.json, and which differences are regressions.
//!
//! A row is a regression when either
//! - the rank test ([`stats::compare`] at `alpha`) finds the candidate slower AND its median
//!   is at least `min_effect_pct` % above the baseline's: with steady runs the test finds
//!   shifts of 1 %, which are real but not worth failing a pipeline over; or
//! - the samples are too few for the test to reject at `alpha` whatever the data
//!   (`TooFewSamples`), and the medians differ by more than the fixed thresholds of the
//!   single-run comparison ([`is_slowdown`]): a 3-run perf job still gets a gate, the same one
//!   a plain run directory gets, and its row says so.
//!
//! Faster and no-difference rows never are, nor is a metric without samples on one side
//! (a phase no passed run reached, a permutation with no passed run): it is listed, and
//! whether the runs passed is `perf`'s own exit code to judge.
//!
//! Durations are compared (larger is slower), the disk write too: its MiB/s medians are shown
//! next to its seconds but decide nothing, as they are the same measurement inverted.
//!
//! Pure: the caller reads the perf.json files and prints.

use serde::{Deserialize, Serialize};

use super::model::{throttle_text, HostInfo, PerfReport, PermutationPerf, Stat};
use super::stats::{self, ComparisonVerdict, Summary};
use super::thresholds::{is_slowdown, Thresholds};

/// The schema tag of `report --compare --json`'s document.
pub const SCHEMA: &str = "sno-harness/perf-compare/v1";
/// `--min-effect-pct`'s default.
pub const DEFAULT_MIN_EFFECT_PCT: f64 = 5.0;

/// When a difference is a regression; valid by construction ([`Rules::new`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rules {
    alpha: f64,
    min_effect_pct: f64,
    thresholds: Thresholds,
}

/// A rule that cannot be applied.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum RulesError {
    #[error("the significance level must be a number strictly between 0 and 1, not {0}")]
    Alpha(f64),
    #[error("the minimum effect must be a percentage >= 0, not {0}")]
    MinEffect(f64),
    #[error("the thresholds must be numbers >= 0, not {pct} % and {secs} s")]
    Thresholds { pct: f64, secs: f64 },
}

impl Rules {
    pub fn new(
        alpha: f64,
        min_effect_pct: f64,
        thresholds: Thresholds,
    ) -> Result<Rules, RulesError> {
        if stats::min_samples_per_group(alpha).is_none() {
            return Err(RulesError::Alpha(alpha));
        }
        if !(min_effect_pct.is_finite() && min_effect_pct >= 0.0) {
            return Err(RulesError::MinEffect(min_effect_pct));
        }
        let valid = |x: f64| x.is_finite() && x >= 0.0;
        if !(valid(thresholds.pct) && valid(thresholds.secs)) {
            return Err(RulesError::Thresholds {
                pct: thresholds.pct,
                secs: thresholds.secs,
            });
        }
        Ok(Rules {
            alpha,
            min_effect_pct,
            thresholds,
        })
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The fixed thresholds, for too few samples (and for plain run directories).
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// Runs of each side the test needs at this alpha to be able to reject.
    pub fn min_samples(&self) -> usize {
        // Rules::new checked that alpha has one.
        stats::min_samples_per_group(self.alpha).unwrap_or(usize::MAX)
    }
}

/// A sample that cannot be compared (a non-finite value: perf.json never holds one, a file
/// edited by hand might).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{permutation}, {metric}: {source}")]
pub struct PerfCompareError {
    pub permutation: String,
    pub metric: String,
    pub source: stats::CompareError,
}

/// What a row measures; every one is a duration in seconds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Metric {
    Phase {
        phase: String,
    },
    /// The whole run.
    Total,
    DiskWrite,
}

impl Metric {
    /// The row's name with its unit, as the table shows it.
    pub fn label(&self) -> String {
        match self {
            Metric::Phase { phase } => format!("{phase} (s)"),
            Metric::Total => "total (s)".into(),
            Metric::DiskWrite => "disk write (s)".into(),
        }
    }
}

/// One side of a row: how many samples, and their median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub n: usize,
    pub median: f64,
}

/// What the comparison of a row found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowVerdict {
    Slower,
    Faster,
    NoSignificantDifference,
    /// The test cannot reject with so few samples: the fixed thresholds decided.
    TooFewSamples,
    /// One side (or both) has no sample: nothing compared.
    NoSamples,
}

impl RowVerdict {
    pub fn label(self) -> &'static str {
        match self {
            RowVerdict::Slower => "slower",
            RowVerdict::Faster => "faster",
            RowVerdict::NoSignificantDifference => "no significant difference",
            RowVerdict::TooFewSamples => "too few runs",
            RowVerdict::NoSamples => "not compared",
        }
    }
}

/// Which rule decided whether a row is a regression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The rank test and the minimum effect.
    Test,
    /// The fixed thresholds on the medians (too few samples for the test).
    Thresholds,
    /// Nothing: a side had no samples.
    NotCompared,
}

/// The disk write's MiB/s medians, shown next to its seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MibS {
    pub baseline_median: Option<f64>,
    pub candidate_median: Option<f64>,
    /// Either side's caveat on its figure (measured through `cache = "unsafe"`: the host's
    /// page cache, not the disk): the gate refuses sides of different cache modes, so when
    /// the two are compared they share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
}

/// One metric of one permutation, baseline against candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub permutation: String,
    pub metric: Metric,
    /// `None`: no sample on that side.
    pub baseline: Option<Side>,
    pub candidate: Option<Side>,
    /// (candidate median - baseline median) / baseline median, in percent: +25 is 25 %
    /// slower. `None` without both sides, or with a baseline median of 0.
    pub median_change_pct: Option<f64>,
    /// The two-sided Mann-Whitney p-value.
    pub p_value: Option<f64>,
    /// The Hodges-Lehmann estimate of candidate - baseline, in seconds.
    pub shift_s: Option<f64>,
    pub verdict: RowVerdict,
    pub decided_by: DecidedBy,
    pub regression: bool,
    /// Why, when the verdict alone does not say: the threshold fallback, an effect below the
    /// minimum, a missing side.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Disk write only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib_s: Option<MibS>,
}

/// A host context field that differs between the two sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDifference {
    pub what: String,
    pub baseline: String,
    pub candidate: String,
    /// The compared permutations it concerns; empty for all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permutations: Vec<String>,
}

/// The comparison of two perf directories (`--json` writes it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerfComparison {
    pub schema: String,
    /// The directories, as the caller names them (empty when it does not).
    pub baseline_dir: String,
    pub candidate_dir: String,
    pub alpha: f64,
    pub min_effect_pct: f64,
    pub threshold_pct: f64,
    pub threshold_s: f64,
    /// Runs of each side the test needs at this alpha.
    pub min_samples_per_group: usize,
    /// Empty when the host contexts agree.
    pub host_differences: Vec<HostDifference>,
    /// Per permutation present in both, in the candidate's order: its phases, the whole run,
    /// the disk write.
    pub rows: Vec<Row>,
    pub only_in_baseline: Vec<String>,
    pub only_in_candidate: Vec<String>,
    /// The rows that are regressions.
    pub regressions: usize,
    /// Why the comparison cannot pass as a gate, whatever its rows say: nothing was compared
    /// (no permutation in common, no passed run on a side), or the two sides ran on hosts
    /// whose numbers are not comparable (another accelerator, another disk cache mode).
    /// `report --compare` exits 1 when this is not empty.
    #[serde(default)]
    pub not_comparable: Vec<String>,
}

impl PerfComparison {
    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("PerfComparison serializes");
        s.push('\n');
        s
    }
}

/// Compares `candidate` with `baseline`, permutations matched by id.
pub fn compare_reports(
    baseline: &PerfReport,
    candidate: &PerfReport,
    rules: Rules,
) -> Result<PerfComparison, PerfCompareError> {
    let mut rows = Vec::new();
    let mut only_in_candidate = Vec::new();
    let mut matched = Vec::new();
    for cand in &candidate.permutations {
        match baseline.permutations.iter().find(|b| b.id == cand.id) {
            Some(base) => {
                rows.extend(permutation_rows(base, cand, rules)?);
                matched.push((base, cand));
            }
            None => only_in_candidate.push(cand.id.clone()),
        }
    }
    let only_in_baseline = baseline
        .permutations
        .iter()
        .filter(|b| !candidate.permutations.iter().any(|c| c.id == b.id))
        .map(|b| b.id.clone())
        .collect();
    let regressions = rows.iter().filter(|r| r.regression).count();
    let host_differences = host_differences(baseline, candidate, &matched);
    let not_comparable = not_comparable(baseline, candidate, &matched, &host_differences);
    Ok(PerfComparison {
        schema: SCHEMA.into(),
        baseline_dir: String::new(),
        candidate_dir: String::new(),
        alpha: rules.alpha,
        min_effect_pct: rules.min_effect_pct,
        threshold_pct: rules.thresholds.pct,
        threshold_s: rules.thresholds.secs,
        min_samples_per_group: rules.min_samples(),
        host_differences,
        rows,
        only_in_baseline,
        only_in_candidate,
        regressions,
        not_comparable,
    })
}

/// The rows of one permutation: each phase either side has (the candidate's order, then the
/// baseline's others), the whole run, and the disk write when either side wrote.
fn permutation_rows(
    base: &PermutationPerf,
    cand: &PermutationPerf,
    rules: Rules,
) -> Result<Vec<Row>, PerfCompareError> {
    let mut names: Vec<&str> = cand.phases.iter().map(|p| p.phase.as_str()).collect();
    for p in &base.phases {
        if !names.contains(&p.phase.as_str()) {
            names.push(&p.phase);
        }
    }
    let phase = |p: &PermutationPerf, name: &str| {
        p.phases
            .iter()
            .find(|s| s.phase == name)
            .map(|s| s.seconds.clone())
    };
    let mut rows = Vec::new();
    for name in names {
        let metric = Metric::Phase {
            phase: name.to_string(),
        };
        rows.push(row(
            &cand.id,
            metric,
            phase(base, name).as_ref(),
            phase(cand, name).as_ref(),
            rules,
        )?);
    }
    rows.push(row(
        &cand.id,
        Metric::Total,
        base.total_seconds.as_ref(),
        cand.total_seconds.as_ref(),
        rules,
    )?);
    let (bw, cw) = (base.disk_write.as_ref(), cand.disk_write.as_ref());
    if bw.is_some() || cw.is_some() {
        let mut r = row(
            &cand.id,
            Metric::DiskWrite,
            bw.map(|w| &w.seconds),
            cw.map(|w| &w.seconds),
            rules,
        )?;
        r.mib_s = Some(MibS {
            baseline_median: bw.and_then(|w| median(&w.mib_s.samples)),
            candidate_median: cw.and_then(|w| median(&w.mib_s.samples)),
            caveat: cw.or(bw).and_then(|w| w.caveat.clone()),
        });
        rows.push(r);
    }
    Ok(rows)
}

/// The median of the samples themselves (not the summary beside them, which a hand-edited
/// file could contradict); `None` for none.
fn median(samples: &[f64]) -> Option<f64> {
    Summary::of(samples).ok().map(|s| s.median)
}

fn side(s: Option<&Stat>) -> Option<Side> {
    let s = s?;
    Some(Side {
        n: s.samples.len(),
        median: median(&s.samples)?,
    })
}

/// One metric compared.
fn row(
    id: &str,
    metric: Metric,
    base: Option<&Stat>,
    cand: Option<&Stat>,
    rules: Rules,
) -> Result<Row, PerfCompareError> {
    let label = || metric.label();
    // Checked first: a non-finite sample has no median, and must not pass for a missing one.
    let test = match (base, cand) {
        (Some(b), Some(c)) => Some(stats::compare(&b.samples, &c.samples, rules.alpha).map_err(
            |source| PerfCompareError {
                permutation: id.to_string(),
                metric: label(),
                source,
            },
        )?),
        _ => None,
    };
    let (b, c) = (side(base), side(cand));
    let mut r = Row {
        permutation: id.to_string(),
        metric,
        baseline: b,
        candidate: c,
        median_change_pct: None,
        p_value: None,
        shift_s: None,
        verdict: RowVerdict::NoSamples,
        decided_by: DecidedBy::NotCompared,
        regression: false,
        note: String::new(),
        mib_s: None,
    };
    let (Some(test), Some(b), Some(c)) = (test, b, c) else {
        r.note = missing_note(b.is_none(), c.is_none());
        return Ok(r);
    };
    r.p_value = test.p_value;
    r.shift_s = test.hodges_lehmann_shift.filter(|s| s.is_finite());
    r.median_change_pct = (b.median != 0.0)
        .then(|| (c.median - b.median) / b.median.abs() * 100.0)
        .filter(|p| p.is_finite());
    let j = judge(&test, b, c, rules);
    r.verdict = j.verdict;
    r.decided_by = j.decided_by;
    r.regression = j.regression;
    r.note = j.note;
    Ok(r)
}

fn missing_note(no_baseline: bool, no_candidate: bool) -> String {
    match (no_baseline, no_candidate) {
        (true, true) => "no samples on either side",
        (true, false) => "no samples in the baseline",
        _ => "no samples in the candidate",
    }
    .into()
}

/// The outcome of the rules on one compared metric.
struct Judgement {
    verdict: RowVerdict,
    decided_by: DecidedBy,
    regression: bool,
    note: String,
}

/// The regression rules of the module doc, on a test's result and the two medians.
fn judge(test: &stats::Comparison, b: Side, c: Side, rules: Rules) -> Judgement {
    let by_test = |verdict, regression, note| Judgement {
        verdict,
        decided_by: DecidedBy::Test,
        regression,
        note,
    };
    match test.verdict {
        ComparisonVerdict::Slower => {
            if effect_pct(b.median, c.median) >= rules.min_effect_pct {
                by_test(RowVerdict::Slower, true, String::new())
            } else {
                let note = format!("below the {}% minimum effect", rules.min_effect_pct);
                by_test(RowVerdict::Slower, false, note)
            }
        }
        ComparisonVerdict::Faster => by_test(RowVerdict::Faster, false, String::new()),
        ComparisonVerdict::NoSignificantDifference => {
            by_test(RowVerdict::NoSignificantDifference, false, String::new())
        }
        ComparisonVerdict::TooFewSamples => Judgement {
            verdict: RowVerdict::TooFewSamples,
            decided_by: DecidedBy::Thresholds,
            regression: is_slowdown(ms(b.median), ms(c.median), rules.thresholds),
            note: too_few_note(b.n, c.n, rules.min_samples()),
        },
    }
}

/// How much slower the candidate's median is, in percent of the baseline's; from a baseline
/// of 0 any increase is unbounded, so it clears every minimum.
fn effect_pct(base: f64, cand: f64) -> f64 {
    if base != 0.0 {
        (cand - base) / base.abs() * 100.0
    } else if cand > base {
        f64::INFINITY
    } else {
        0.0
    }
}

/// Seconds as the whole milliseconds [`is_slowdown`] takes; negative durations (impossible
/// from perf) saturate to 0.
fn ms(seconds: f64) -> u64 {
    (seconds * 1000.0).round() as u64
}

fn too_few_note(nb: usize, nc: usize, min: usize) -> String {
    if nb == nc {
        format!("threshold: n={nb} < {min} needed for the test")
    } else {
        format!("threshold: n={nb}/{nc}, too few for the test ({min} each needed)")
    }
}

/// The host context fields that bear on the numbers, each as text ("unknown" when absent).
fn host_fields(h: &HostInfo) -> Vec<(&'static str, String)> {
    let known = |s: &str| {
        if s.trim().is_empty() {
            "unknown".to_string()
        } else {
            s.to_string()
        }
    };
    let disk = h.install_disk.as_ref();
    let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    vec![
        ("accelerator", known(&h.accel)),
        ("CPU model", known(&h.cpu_model)),
        ("QEMU version", known(&h.qemu_version)),
        ("backend", known(&h.backend)),
        (
            "install-disk cache",
            or_unknown(disk.map(|d| d.cache.name().to_string())),
        ),
        (
            "install-disk aio",
            or_unknown(disk.map(|d| d.aio.name().to_string())),
        ),
        (
            "install-disk throttle",
            or_unknown(disk.map(|d| throttle_text(d.throttle))),
        ),
        (
            "backing store filesystem",
            or_unknown(h.backing_store.as_ref().map(|b| known(&b.fstype))),
        ),
    ]
}

/// The host context fields whose difference makes the numbers incomparable: KVM against TCG
/// is a different machine, and a disk cache mode decides whether a write reaches the disk.
const DECISIVE: [&str; 2] = ["accelerator", "install-disk cache"];

/// Why `candidate` cannot pass a gate against `baseline` (see
/// [`PerfComparison::not_comparable`]).
fn not_comparable(
    baseline: &PerfReport,
    candidate: &PerfReport,
    matched: &[(&PermutationPerf, &PermutationPerf)],
    diffs: &[HostDifference],
) -> Vec<String> {
    let ids = |r: &PerfReport| -> String {
        let ids: Vec<&str> = r.permutations.iter().map(|p| p.id.as_str()).collect();
        if ids.is_empty() {
            "none".into()
        } else {
            ids.join(", ")
        }
    };
    let mut out = Vec::new();
    if matched.is_empty() {
        out.push(format!(
            "no permutation in common: the baseline has {}, the candidate {}",
            ids(baseline),
            ids(candidate)
        ));
    } else {
        for (side, passed) in [
            (
                "baseline",
                matched.iter().map(|(b, _)| b.counts.passed).sum::<u32>(),
            ),
            (
                "candidate",
                matched.iter().map(|(_, c)| c.counts.passed).sum::<u32>(),
            ),
        ] {
            if passed == 0 {
                out.push(format!(
                    "the {side} has no passed measured run in the permutations in common, so no figure of it was compared"
                ));
            }
        }
    }
    for d in diffs.iter().filter(|d| DECISIVE.contains(&d.what.as_str())) {
        // An older perf.json that does not say cannot be told apart; the warning names it.
        if d.baseline == "unknown" || d.candidate == "unknown" {
            continue;
        }
        let scope = if d.permutations.is_empty() {
            String::new()
        } else {
            format!(" (permutations {})", d.permutations.join(", "))
        };
        out.push(format!(
            "{}: {} in the baseline, {} in the candidate{scope}: the figures are not comparable",
            d.what, d.baseline, d.candidate
        ));
    }
    out
}

/// Where the hosts of the compared permutations differ (each permutation's own host context
/// where it has one, else its report's); the top-level hosts when nothing was compared.
fn host_differences(
    baseline: &PerfReport,
    candidate: &PerfReport,
    matched: &[(&PermutationPerf, &PermutationPerf)],
) -> Vec<HostDifference> {
    let host = |r: &'_ PerfReport, p: &'_ PermutationPerf| p.host.clone().unwrap_or(r.host.clone());
    let pairs: Vec<(String, HostInfo, HostInfo)> = if matched.is_empty() {
        vec![(String::new(), baseline.host.clone(), candidate.host.clone())]
    } else {
        matched
            .iter()
            .map(|(b, c)| (c.id.clone(), host(baseline, b), host(candidate, c)))
            .collect()
    };
    let mut diffs: Vec<HostDifference> = Vec::new();
    for (id, b, c) in &pairs {
        for ((what, bv), (_, cv)) in host_fields(b).into_iter().zip(host_fields(c)) {
            if bv == cv {
                continue;
            }
            match diffs
                .iter_mut()
                .find(|d| d.what == what && d.baseline == bv && d.candidate == cv)
            {
                Some(d) => d.permutations.push(id.clone()),
                None => diffs.push(HostDifference {
                    what: what.into(),
                    baseline: bv,
                    candidate: cv,
                    permutations: vec![id.clone()],
                }),
            }
        }
    }
    // A difference every compared permutation shares is the host's, not a permutation's.
    for d in &mut diffs {
        if d.permutations.len() == pairs.len() {
            d.permutations.clear();
        }
    }
    diffs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::testdata::{noisy, perm, report, rules, with_disk_write};

    /// Equal JSON values, numbers within a relative 1e-12.
    #[track_caller]
    fn assert_same(a: &serde_json::Value, b: &serde_json::Value) {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} != {y}");
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len());
                x.iter().zip(y).for_each(|(x, y)| assert_same(x, y));
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>());
                x.iter().for_each(|(k, v)| assert_same(v, &y[k]));
            }
            _ => assert_eq!(a, b),
        }
    }

    #[test]
    fn json_round_trip() {
        let b = report(vec![with_disk_write(
            perm("a", &[("assets", &noisy(2.0)), ("bootkube", &[1.0, 2.0])]),
            &noisy(3.0),
        )]);
        let mut c = report(vec![with_disk_write(
            perm("a", &[("assets", &noisy(3.0))]),
            &noisy(3.0),
        )]);
        c.host.accel = "tcg".into();
        let mut cmp = compare_reports(&b, &c, rules()).unwrap();
        cmp.baseline_dir = "runs/main".into();
        cmp.candidate_dir = "runs/pr".into();
        let text = cmp.to_json();
        assert!(text.ends_with("}\n"));
        let back: PerfComparison = serde_json::from_str(&text).unwrap();
        // serde_json's default float parser may land an ulp off (2.0300000000000002 comes back
        // as 2.03): equal up to that.
        assert_same(
            &serde_json::to_value(&back).unwrap(),
            &serde_json::to_value(&cmp).unwrap(),
        );
        assert_eq!((back.rows.len(), back.regressions), (cmp.rows.len(), 2));

        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], "sno-harness/perf-compare/v1");
        assert_eq!(v["alpha"], 0.05);
        assert_eq!(v["min_effect_pct"], 5.0);
        assert_eq!(v["min_samples_per_group"], 4);
        assert_eq!(v["regressions"], 2);
        assert_eq!(v["host_differences"][0]["what"], "accelerator");
        let r = &v["rows"][0];
        assert_eq!(
            r["metric"],
            serde_json::json!({"kind": "phase", "phase": "assets"})
        );
        assert_eq!(r["verdict"], "slower");
        assert_eq!(r["decided_by"], "test");
        assert_eq!(r["regression"], true);
        assert_eq!(r["baseline"]["n"], 7);
        assert!(r.get("note").is_none(), "empty notes are left out: {r}");
        let missing = &v["rows"][1];
        assert_eq!(missing["verdict"], "no_samples");
        assert!(missing["candidate"].is_null());
        assert_eq!(v["rows"][2]["metric"]["kind"], "total");
        assert_eq!(v["rows"][3]["metric"]["kind"], "disk_write");
        assert!(v["rows"][3]["mib_s"]["baseline_median"].is_number());
    }

    #[test]
    fn bad_rules_are_refused() {
        let t = Thresholds::default();
        for alpha in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            assert!(
                matches!(Rules::new(alpha, 5.0, t), Err(RulesError::Alpha(_))),
                "{alpha}"
            );
        }
        for min in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(Rules::new(0.05, min, t), Err(RulesError::MinEffect(_))),
                "{min}"
            );
        }
        let bad = Thresholds {
            pct: -1.0,
            secs: 10.0,
        };
        assert!(matches!(
            Rules::new(0.05, 5.0, bad),
            Err(RulesError::Thresholds { .. })
        ));
        assert_eq!(Rules::new(0.01, 0.0, t).unwrap().min_samples(), 5);
        assert!(RulesError::Alpha(1.5)
            .to_string()
            .contains("between 0 and 1"));
    }

    #[test]
    fn a_non_finite_sample_is_an_error_naming_the_row() {
        let b = report(vec![perm("a", &[("assets", &noisy(2.0))])]);
        let mut c = b.clone();
        c.permutations[0].phases[0].seconds.samples[2] = f64::INFINITY;
        let e = compare_reports(&b, &c, rules()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a, assets (s): candidate: sample 2 is inf, not a finite number"
        );
    }
}
