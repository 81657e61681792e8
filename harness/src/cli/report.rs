//! `sno-harness report`: a run directory's reports regenerated from its result.json files (a
//! perf directory's report.html from its perf.json), or its comparison with a baseline.

use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::perf::compare::{compare_reports, Rules, RulesError, DEFAULT_MIN_EFFECT_PCT};
use sno_harness::perf::load::{is_perf_dir, read_perf_dir};
use sno_harness::perf::model::{PerfReport, COMPARE_ALPHA};
use sno_harness::perf::thresholds::Thresholds;
use sno_harness::util::input_file::Problem;

use super::error::{bad, harness, CliError, Outcome};
use super::flags::write_atomically;

/// Regenerate the reports of a run directory (summary.json, summary.md, junit.xml,
/// report.html) from its result.json files, or compare it with a baseline: per-phase
/// deltas, exit 1 when a phase, the disk write or a verdict regressed. On a perf directory
/// (with perf.json) it writes report.html with the distributions of the runs, and
/// --compare compares the runs' samples: per phase, whole run and disk write a
/// Mann-Whitney test, a regression being significantly slower at --alpha AND at least
/// --min-effect-pct slower in median (too few runs for the test: the thresholds on the
/// medians). A perf directory compares only with a perf directory (else exit 2).
#[derive(clap::Args)]
pub struct ReportArgs {
    /// A run directory: permutation directories with a result.json each, or one run's; or
    /// a perf directory.
    #[arg(required_unless_present = "merge")]
    pub run_dir: Option<PathBuf>,
    /// Merge the output directories of several shards (or matrix runs) of one plan into one
    /// report in --out: refused when their plans differ; missing and duplicated
    /// permutations are listed (exit 1).
    #[arg(long, num_args = 1.., value_name = "DIR", conflicts_with_all = ["run_dir", "compare", "html"])]
    pub merge: Vec<PathBuf>,
    /// With --merge: the directory for the merged report (new, or empty).
    #[arg(long, value_name = "DIR", requires = "merge")]
    pub out: Option<PathBuf>,
    /// With --merge: copy the permutation directories into --out instead of linking to them
    /// relatively. Left out, and counted: symbolic links, sockets, FIFOs and devices, disk
    /// images, ISOs and firmware (disks/, *.qcow2, *.raw, *.iso, *.img, *.fd), assets/
    /// directories (secrets) and run.lock.
    #[arg(long, requires = "merge")]
    pub copy: bool,
    /// Compare with this run directory (permutations matched by id); prints the deltas
    /// and writes nothing unless --html is given.
    #[arg(long, value_name = "BASELINE_DIR")]
    pub compare: Option<PathBuf>,
    /// Write only the HTML report, to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// A phase regressed when slower by more than this percentage...
    #[arg(long, default_value_t = 20.0, value_name = "PCT")]
    threshold_pct: f64,
    /// ...and by more than this many seconds. The disk write regressed when its MiB/s
    /// dropped by more than --threshold-pct.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    threshold_s: f64,
    /// Perf directories: the significance level of the test, between 0 and 1
    /// [default: 0.05].
    #[arg(long, value_name = "ALPHA", allow_negative_numbers = true)]
    alpha: Option<f64>,
    /// Perf directories: a significantly slower metric is a regression only when its
    /// median is at least this many percent slower [default: 5].
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    min_effect_pct: Option<f64>,
    /// Perf directories: also write the comparison to this file as JSON (schema
    /// sno-harness/perf-compare/v1).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run directories: the cases of the regenerated junit.xml (a run directory does not
    /// record the flavour it was written with).
    #[command(flatten)]
    junit: super::flags::JunitFlag,
}

/// Exit 0, 1 (a regression), 2 (bad input: not a run directory, an unreadable result.json or
/// perf.json, a perf directory against a plain one, bad flags) or 4 (a report could not be
/// written).
pub fn report(a: ReportArgs) -> Outcome {
    if !a.merge.is_empty() {
        return super::report_merge::merge(&a.merge, a.out.as_deref(), a.copy, a.junit.flavour);
    }
    if a.out.is_some() || a.copy {
        return Err(bad(
            "--out and --copy go with --merge DIR...; `report RUN_DIR` writes into RUN_DIR",
        ));
    }
    let run_dir = a.run_dir.clone().expect("clap requires it without --merge");
    let rules = rules(&a)?;
    let perf_only = a.alpha.is_some() || a.min_effect_pct.is_some() || a.json.is_some();
    match &a.compare {
        Some(base) => match (is_perf_dir(&run_dir), is_perf_dir(base)) {
            (true, true) => perf_compare(&a, base, rules),
            (false, false) if perf_only => Err(bad(format!(
                "--alpha, --min-effect-pct and --json compare perf directories \
                 (with a perf.json, from `sno-harness perf`); {} and {} are run directories, \
                 compared with --threshold-pct and --threshold-s",
                run_dir.display(),
                base.display()
            ))),
            (false, false) => report_run_dir(
                &run_dir,
                Some(base),
                a.html.as_deref(),
                rules.thresholds(),
                a.junit.flavour,
            ),
            (run_is_perf, _) => Err(mixed_kinds(&run_dir, base, run_is_perf)),
        },
        None if perf_only => Err(bad(
            "--alpha, --min-effect-pct and --json apply to a comparison: give \
             --compare BASELINE_DIR",
        )),
        None if is_perf_dir(&run_dir) => perf_page(&a),
        None => report_run_dir(
            &run_dir,
            None,
            a.html.as_deref(),
            rules.thresholds(),
            a.junit.flavour,
        ),
    }
}

/// A perf directory against a run directory: say which is which, and what is missing.
fn mixed_kinds(dir: &Path, base: &Path, run_is_perf: bool) -> CliError {
    let (perf, plain) = if run_is_perf {
        (dir.display().to_string(), base)
    } else {
        (format!("the baseline {}", base.display()), dir)
    };
    let named = if run_is_perf { "the baseline " } else { "" };
    // A missing directory is the likelier mistake than a wrong one: say which.
    let lacks = if plain.is_dir() {
        "has none"
    } else {
        "is not a directory"
    };
    bad(format!(
        "cannot compare a perf directory with a run directory: {perf} \
         has a perf.json, {named}{} {lacks}; compare two perf directories (both \
         from `sno-harness perf`) or two run directories (from `run` or `matrix`)",
        plain.display()
    ))
}

/// The comparison rules from the flags, or which flag is wrong.
fn rules(a: &ReportArgs) -> Result<Rules, CliError> {
    let t = Thresholds {
        pct: a.threshold_pct,
        secs: a.threshold_s,
    };
    let alpha = a.alpha.unwrap_or(COMPARE_ALPHA);
    let min_effect = a.min_effect_pct.unwrap_or(DEFAULT_MIN_EFFECT_PCT);
    Rules::new(alpha, min_effect, t).map_err(|e| {
        let flag = match e {
            RulesError::Alpha(_) => "--alpha",
            RulesError::MinEffect(_) => "--min-effect-pct",
            RulesError::Thresholds { .. } => "--threshold-pct and --threshold-s",
        };
        bad(format!("{flag}: {e}"))
    })
}

/// `report --compare` of two perf directories: the statistical comparison of their perf.json.
fn perf_compare(a: &ReportArgs, baseline_dir: &Path, rules: Rules) -> Outcome {
    let run_dir = a.run_dir.as_deref().expect("set without --merge");
    let base = read_perf_dir(baseline_dir).map_err(|e| bad(format!("baseline: {e}")))?;
    let cand = read_perf_dir(run_dir).map_err(bad)?;
    let mut cmp = compare_reports(&base, &cand, rules).map_err(|e| {
        bad(format!(
            "comparing {} with {}: {e}",
            run_dir.display(),
            baseline_dir.display()
        ))
    })?;
    cmp.baseline_dir = baseline_dir.display().to_string();
    cmp.candidate_dir = run_dir.display().to_string();
    outln!(
        "{} compared with the baseline {} (their perf.json)",
        run_dir.display(),
        baseline_dir.display()
    );
    out!("{}", sno_harness::report::perf_compare::render_text(&cmp));
    if !cmp.host_differences.is_empty() {
        let what: Vec<&str> = cmp
            .host_differences
            .iter()
            .map(|d| d.what.as_str())
            .collect();
        errln!(
            "sno-harness: warning: the host context differs from the baseline's: {}",
            what.join(", ")
        );
    }
    if let Some(path) = &a.json {
        write_atomically(path, &cmp.to_json()).map_err(|e| harness(format!("writing {e}")))?;
        outln!("wrote {}", path.display());
    }
    if let Some(file) = &a.html {
        write_perf_page(file, run_dir, &cand)?;
    }
    for r in &cmp.not_comparable {
        errln!("sno-harness: report --compare: {r}");
    }
    Ok(if cmp.regressions > 0 || !cmp.not_comparable.is_empty() {
        exit::SCENARIO_FAILED
    } else {
        exit::OK
    })
}

/// `report PERF_DIR`: its report.html (in it, or at --html) from its perf.json.
fn perf_page(a: &ReportArgs) -> Outcome {
    let run_dir = a.run_dir.as_deref().expect("set without --merge");
    let report = read_perf_dir(run_dir).map_err(bad)?;
    let path = a
        .html
        .clone()
        .unwrap_or_else(|| run_dir.join(sno_harness::report::html::REPORT_HTML_FILE));
    write_perf_page(&path, run_dir, &report)?;
    Ok(exit::OK)
}

fn write_perf_page(path: &Path, perf_dir: &Path, report: &PerfReport) -> Result<(), CliError> {
    sno_harness::report::run_dir::write_perf_html(path, perf_dir, report)
        .map_err(|e| harness(format!("writing the report: {e}")))?;
    outln!("wrote {}", path.display());
    Ok(())
}

/// The summary.json an earlier report left, if any; one that cannot be read is said (the new
/// one would lack its plan and the values no permutation ran), and left for the new one.
fn earlier_summary(path: &Path) -> Option<sno_harness::report::summary_json::Summary> {
    use sno_harness::report::summary_json::{Summary, SummaryReadError};
    match Summary::load(path) {
        Ok(s) => Some(s),
        Err(SummaryReadError::File(e)) if matches!(&e.problem, Problem::Io(io) if io.kind() == std::io::ErrorKind::NotFound) => {
            None
        }
        Err(e) => {
            errln!("sno-harness: warning: the earlier summary is not read ({e}): the new one has no plan and only the axis values that ran");
            None
        }
    }
}

/// `report` of plain run directories (from `run` or `matrix`): their reports, or their
/// comparison with fixed thresholds.
fn report_run_dir(
    dir: &Path,
    baseline: Option<&Path>,
    html: Option<&Path>,
    t: Thresholds,
    junit: sno_harness::report::junit::JunitFlavour,
) -> Outcome {
    use sno_harness::report::dir_compare::{compare, render_text};
    use sno_harness::report::load::load_run_dir;
    use sno_harness::report::run_dir::{write_html, write_reports_for};
    use sno_harness::report::summary_json::SUMMARY_JSON_FILE;

    let runs = load_run_dir(dir).map_err(bad)?;
    // An earlier report's summary.json knows the matrix axes, with the values no permutation
    // ran; the result.json files alone only know the values that did.
    let earlier = earlier_summary(&dir.join(SUMMARY_JSON_FILE));
    let axes = earlier.as_ref().map(|s| s.axes()).unwrap_or_default();
    // And its plan, which the result.json files do not record.
    let plan = earlier.and_then(|s| s.plan);
    let mut regressed = false;
    if let Some(baseline_dir) = baseline {
        let base = load_run_dir(baseline_dir).map_err(|e| bad(format!("baseline: {e}")))?;
        let base: Vec<_> = base.into_iter().map(|r| r.result).collect();
        let current: Vec<_> = runs.iter().map(|r| r.result.clone()).collect();
        let cmp = compare(&base, &current, t);
        outln!(
            "{} compared with the baseline {}",
            dir.display(),
            baseline_dir.display()
        );
        out!("{}", render_text(&cmp, t));
        for r in &cmp.not_comparable {
            errln!("sno-harness: report --compare: {r}");
        }
        regressed = cmp.regressions() > 0 || !cmp.not_comparable.is_empty();
    }
    let written: Vec<PathBuf> = match (html, baseline) {
        (Some(file), _) => write_html(file, dir, &runs, &axes).map(|()| vec![file.to_path_buf()]),
        (None, None) => write_reports_for(dir, &runs, &axes, plan.as_ref(), junit),
        // A comparison only reads.
        (None, Some(_)) => Ok(Vec::new()),
    }
    .map_err(|e| harness(format!("writing the report: {e}")))?;
    for p in written {
        outln!("wrote {}", p.display());
    }
    // The contract's exit 1, here meaning "regressed".
    Ok(if regressed {
        exit::SCENARIO_FAILED
    } else {
        exit::OK
    })
}
