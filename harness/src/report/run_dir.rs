//! The reports of a run directory (docs/architecture.md, "Run directory contract"): `summary.json`,
//! `junit.xml`, `summary.md` and `report.html` next to the permutations' directories.

use std::io;
use std::path::{Path, PathBuf};

use super::coverage::{merge_axes, Axis};
use super::html::{render_html, render_perf_html, REPORT_HTML_FILE};
use super::junit::{junit_for_runs, JunitFlavour, PERMUTATION_JUNIT_FILE};
use super::load::{with_files_on_disk, LocatedRun};
use super::summary::matrix_summary_markdown;
use super::summary_json::{Summary, SUMMARY_JSON_FILE};
use crate::perf::model::PerfReport;
use crate::result::RunResult;
use crate::scenario::matrix::PlanIdentity;
use crate::util::replace_file::{replace_file, PUBLIC_FILE};

/// The merged JUnit file name.
pub use super::junit::JUNIT_FILE;
/// The Markdown summary file name.
pub const SUMMARY_MD_FILE: &str = "summary.md";
/// The JUnit report's name when the runs do not share one scenario.
const JUNIT_NAME: &str = "sno-harness";

/// Writes the four reports of a matrix run into `out_dir`, each permutation's directory being
/// `out_dir/<id>/`. `axes` are the matrix axes with all their values (so values no
/// permutation ran show as "not run"); pass `&[]` when unknown, they are then the union of the
/// runs' params. junit.xml has the cases of `junit`. Each file is replaced atomically; an
/// error names the file.
pub fn write_reports(
    out_dir: &Path,
    results: &[RunResult],
    axes: &[(String, Vec<String>)],
    plan: Option<&PlanIdentity>,
    junit: JunitFlavour,
) -> io::Result<()> {
    let runs: Vec<LocatedRun> = results
        .iter()
        .cloned()
        .map(LocatedRun::in_own_dir)
        .collect();
    let axes: Vec<Axis> = axes
        .iter()
        .map(|(key, values)| Axis::new(key.as_str(), values.iter().map(String::as_str)))
        .collect();
    write_reports_for(out_dir, &runs, &axes, plan, junit).map(|_| ())
}

/// The reports of `runs` (their directories relative to `out_dir`), written into `out_dir`.
/// Returns the paths written.
pub fn write_reports_for(
    out_dir: &Path,
    runs: &[LocatedRun],
    axes: &[Axis],
    plan: Option<&PlanIdentity>,
    junit: JunitFlavour,
) -> io::Result<Vec<PathBuf>> {
    let mut summary = summarise(runs, axes);
    summary.plan = plan.cloned();
    // A summary.json too large to be read back would lose the plan: nothing is written.
    let summary_json = summary.to_json_readable().map_err(|e| {
        io::Error::other(format!(
            "{}: {e}",
            out_dir.join(SUMMARY_JSON_FILE).display()
        ))
    })?;
    let results: Vec<RunResult> = runs.iter().map(|r| r.result.clone()).collect();
    let junit_xml = junit_for_runs(runs, out_dir, &junit_name(&results), junit);
    let files = [
        (SUMMARY_JSON_FILE, summary_json),
        (junit_file_in(out_dir, runs), junit_xml),
        (SUMMARY_MD_FILE, matrix_summary_markdown(runs, &summary)),
        (
            REPORT_HTML_FILE,
            render_html(&with_files_on_disk(runs, out_dir), &summary),
        ),
    ];
    let mut written = Vec::new();
    for (name, content) in files {
        let path = out_dir.join(name);
        write_atomic(&path, content.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

/// The JUnit file `report` writes in `out_dir`: `junit.xml`, but for one permutation's own
/// directory inside a matrix's or a merge's `--out` (its parent's summary.json lists it),
/// `report.junit` as the matrix runner wrote it: a regenerated `junit.xml` there would be a
/// second file a `**/junit*.xml` collector counts the permutation's cases in.
fn junit_file_in(out_dir: &Path, runs: &[LocatedRun]) -> &'static str {
    let [run] = runs else {
        return JUNIT_FILE;
    };
    let own_dir = run.dir == "." && out_dir.file_name() == Some(run.result.id.as_ref());
    let listed_above = || {
        let parent = out_dir
            .parent()
            .unwrap_or(Path::new("."))
            .join(SUMMARY_JSON_FILE);
        Summary::read(&parent).is_some_and(|s| s.permutations.iter().any(|p| p.id == run.result.id))
    };
    if own_dir && listed_above() {
        PERMUTATION_JUNIT_FILE
    } else {
        JUNIT_FILE
    }
}

/// Writes only `report.html` for `runs` to `path` (anywhere: links are made relative to
/// `runs_dir`, the directory holding the permutations, as seen from `path`'s directory).
pub fn write_html(
    path: &Path,
    runs_dir: &Path,
    runs: &[LocatedRun],
    axes: &[Axis],
) -> io::Result<()> {
    let summary = summarise(runs, axes);
    let relocated: Vec<LocatedRun> = with_files_on_disk(runs, runs_dir)
        .into_iter()
        .map(|r| LocatedRun {
            dir: relative_dir(path.parent().unwrap_or(Path::new(".")), runs_dir, &r.dir),
            result: r.result,
        })
        .collect();
    write_atomic(path, render_html(&relocated, &summary).as_bytes())
}

/// Writes the report.html of a perf directory to `path` (`perf_dir/report.html`, or anywhere:
/// links to the runs are made relative to `perf_dir` as seen from `path`'s directory).
pub fn write_perf_html(path: &Path, perf_dir: &Path, report: &PerfReport) -> io::Result<()> {
    let base = relative_dir(path.parent().unwrap_or(Path::new(".")), perf_dir, ".");
    write_atomic(path, render_perf_html(report, &base).as_bytes())
}

/// The summary of `runs` over `axes` completed with the runs' params.
pub fn summarise(runs: &[LocatedRun], axes: &[Axis]) -> Summary {
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    Summary::build(runs, &merge_axes(axes, &results))
}

/// The scenario all runs share, else a generic name.
fn junit_name(results: &[RunResult]) -> String {
    match results.first() {
        Some(first) if results.iter().all(|r| r.scenario == first.scenario) => {
            first.scenario.clone()
        }
        _ => JUNIT_NAME.to_string(),
    }
}

/// `run_dir` (a permutation's directory relative to `runs_dir`) as seen from `from`. Both
/// are made absolute first; when that fails the path stays as given (a link that may not
/// resolve beats no report).
pub(crate) fn relative_dir(from: &Path, runs_dir: &Path, run_dir: &str) -> String {
    let target = runs_dir.join(run_dir);
    let (Ok(from), Ok(target)) = (std::path::absolute(from), std::path::absolute(&target)) else {
        return target.display().to_string();
    };
    let from: Vec<_> = normalise(&from);
    let target: Vec<_> = normalise(&target);
    let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(target[common..].iter().cloned());
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The normal components of an absolute path, with `.` and `..` resolved lexically.
fn normalise(p: &Path) -> Vec<String> {
    use std::path::Component;
    let mut out: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Writes whole or not at all, so a reader (a browser, CI collecting artifacts) never sees half
/// a report, following no link planted beside it. Reports carry no secrets (assets/ does, and
/// stays 0600): readable like any other file. The error names the file.
fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    Ok(replace_file(path, content, PUBLIC_FILE)?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::coverage::tests::sample_not_run;
    use crate::result::tests::{sample_fail, sample_pass};

    #[test]
    fn writes_the_four_reports_with_declared_axes() {
        let out = tempfile::tempdir().unwrap();
        let mut fail = sample_fail("nvme", "bootkube timed out");
        fail.params
            .insert("disks.install.bus".into(), "nvme".into());
        let results = vec![sample_pass("virtio"), fail, sample_not_run("sata")];
        let axes = vec![(
            "disks.install.bus".to_string(),
            vec!["virtio".to_string(), "nvme".to_string(), "scsi".to_string()],
        )];
        write_reports(out.path(), &results, &axes, None, JunitFlavour::Harness).unwrap();

        let names: Vec<String> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut names = names;
        names.sort();
        assert_eq!(
            names,
            ["junit.xml", "report.html", "summary.json", "summary.md"]
        );
        // No run may be named like one of them (scenario validation refuses those names).
        for n in &names {
            assert!(crate::scenario::RESERVED_NAMES.contains(&n.as_str()), "{n}");
        }

        let summary = Summary::read(&out.path().join("summary.json")).unwrap();
        assert_eq!(summary.counts.total, 3);
        assert_eq!(summary.coverage[0].values[2].value, "scsi");
        assert_eq!(summary.permutations[1].path, "nvme");

        let junit = std::fs::read_to_string(out.path().join("junit.xml")).unwrap();
        assert_eq!(junit.matches("<testsuite ").count(), 3);
        assert!(junit.contains("<testsuites name=\"scenarios/disks.toml\""));
        assert!(junit.contains("message=\"bootkube timed out\""));

        let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
        assert!(md.contains("## Coverage"));
        assert!(md.contains(
            "| `disks.install.bus` | `scsi`   | 0      | 0      | 0       | not-run    |"
        ));
        assert!(md.contains("## Slowest phases"));
        assert!(md.contains("### `nvme`: **FAIL**"));
        assert!(md.contains("- serial: `nvme/serial.log`"));
        assert!(!md.contains("### `virtio`"), "passed runs have no section");

        let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
        assert_eq!(html.matches("<svg class=\"gantt\"").count(), 3);
    }

    /// What a CI collector given `**/junit*.xml` finds under `root` (`**/` matching no
    /// directory too): each file's cases, as (file, suite, case) triples.
    pub(crate) fn collected_cases(root: &Path) -> Vec<(PathBuf, String, String)> {
        let mut found = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().unwrap().is_dir() {
                    dirs.push(e.path());
                } else if name.starts_with("junit") && name.ends_with(".xml") {
                    let xml = std::fs::read_to_string(e.path()).unwrap();
                    for case in xml.split("<testcase ").skip(1) {
                        let attr = |k: &str| {
                            let v = case.split(&format!(" {k}=\"")).nth(1).unwrap_or("");
                            v.split('"').next().unwrap().to_string()
                        };
                        let name = case.split("name=\"").nth(1).unwrap();
                        let name = name.split('"').next().unwrap().to_string();
                        found.push((e.path(), attr("classname"), name));
                    }
                }
            }
        }
        found
    }

    /// Each (suite, case) of `cases` once.
    pub(crate) fn assert_each_case_once(cases: &[(PathBuf, String, String)], expected: usize) {
        let mut keys: Vec<(&str, &str)> = cases
            .iter()
            .map(|(_, s, c)| (s.as_str(), c.as_str()))
            .collect();
        keys.sort();
        let files: std::collections::BTreeSet<&PathBuf> = cases.iter().map(|c| &c.0).collect();
        assert_eq!(files.len(), 1, "more than one junit*.xml: {files:?}");
        assert_eq!(keys.len(), expected, "{keys:?}");
        keys.dedup();
        assert_eq!(keys.len(), expected, "a case counted twice");
    }

    #[test]
    fn a_collector_globbing_junit_xml_counts_each_case_of_a_matrix_once() {
        use crate::report::junit::{JunitOut, PERMUTATION_JUNIT_FILE};
        let out = tempfile::tempdir().unwrap();
        let results = vec![
            sample_pass("virtio"),
            sample_fail("nvme", "bootkube timed out"),
        ];
        // As the matrix runner leaves them: each permutation's reports, then the matrix's.
        let junit = JunitOut {
            flavour: JunitFlavour::Harness,
            in_matrix: true,
        };
        for r in &results {
            let dir = out.path().join(&r.id);
            std::fs::create_dir(&dir).unwrap();
            assert!(crate::run::artifacts::rewrite(&dir, junit, r).is_empty());
            assert!(dir.join(PERMUTATION_JUNIT_FILE).is_file());
        }
        write_reports(out.path(), &results, &[], None, JunitFlavour::Harness).unwrap();
        let cases = collected_cases(out.path());
        assert_eq!(cases[0].0, out.path().join("junit.xml"));
        // 11 phases each, and the failed run's cases are all there too.
        assert_each_case_once(&cases, 22);
        // A run alone still writes its junit.xml.
        let alone = tempfile::tempdir().unwrap();
        let junit = JunitOut::default();
        assert!(crate::run::artifacts::rewrite(alone.path(), junit, &results[1]).is_empty());
        assert_each_case_once(&collected_cases(alone.path()), 11);
    }

    /// `report OUT/<id>` by hand, after the matrix: the permutation's reports are written
    /// again under the names the matrix gave them, and a run alone keeps its junit.xml.
    #[test]
    fn a_permutation_reported_again_keeps_its_junit_out_of_the_collectors_glob() {
        use crate::report::load::load_run_dir;
        let out = tempfile::tempdir().unwrap();
        let results = vec![
            sample_pass("virtio"),
            sample_fail("nvme", "bootkube timed out"),
        ];
        for r in &results {
            std::fs::create_dir(out.path().join(&r.id)).unwrap();
            r.write(&out.path().join(&r.id)).unwrap();
        }
        write_reports(out.path(), &results, &[], None, JunitFlavour::Harness).unwrap();
        let nvme = out.path().join("nvme");
        let runs = load_run_dir(&nvme).unwrap();
        let written = write_reports_for(&nvme, &runs, &[], None, JunitFlavour::Harness).unwrap();
        assert!(
            written.contains(&nvme.join(PERMUTATION_JUNIT_FILE)),
            "{written:?}"
        );
        assert!(!nvme.join("junit.xml").exists());
        assert_each_case_once(&collected_cases(out.path()), 22);
        // Taken out of the matrix's directory, it is a run alone again.
        let alone = tempfile::tempdir().unwrap();
        let moved = alone.path().join("nvme");
        std::fs::rename(&nvme, &moved).unwrap();
        let runs = load_run_dir(&moved).unwrap();
        write_reports_for(&moved, &runs, &[], None, JunitFlavour::Harness).unwrap();
        assert!(moved.join("junit.xml").is_file());
    }

    #[test]
    fn html_elsewhere_links_back_to_the_runs() {
        assert_eq!(
            relative_dir(Path::new("/a/b"), Path::new("/a/runs"), "x"),
            "../runs/x"
        );
        assert_eq!(
            relative_dir(Path::new("/a/runs"), Path::new("/a/runs"), "x"),
            "x"
        );
        assert_eq!(
            relative_dir(Path::new("/a/runs/x"), Path::new("/a/runs"), "."),
            ".."
        );
        assert_eq!(
            relative_dir(Path::new("/a/runs"), Path::new("/a/runs"), "."),
            "."
        );
        let out = tempfile::tempdir().unwrap();
        let runs = vec![LocatedRun::in_own_dir(sample_fail("f", "x"))];
        let elsewhere = out.path().join("html");
        std::fs::create_dir(&elsewhere).unwrap();
        let file = elsewhere.join("r.html");
        write_html(&file, &out.path().join("runs"), &runs, &[]).unwrap();
        let html = std::fs::read_to_string(&file).unwrap();
        assert!(
            html.contains("href=\"../runs/f/serial.log\""),
            "{}",
            &html[..200]
        );
        let err =
            write_html(&out.path().join("missing/r.html"), out.path(), &runs, &[]).unwrap_err();
        assert!(err.to_string().contains("missing/r.html"), "{err}");
    }

    #[test]
    fn perf_html_in_the_directory_or_elsewhere_links_to_the_runs() {
        use crate::perf::testdata::{perm, report};
        let out = tempfile::tempdir().unwrap();
        let perf_dir = out.path().join("perf");
        std::fs::create_dir(&perf_dir).unwrap();
        let r = report(vec![perm("a", &[("assets", &[1.0])])]);
        let inside = perf_dir.join(REPORT_HTML_FILE);
        write_perf_html(&inside, &perf_dir, &r).unwrap();
        let html = std::fs::read_to_string(&inside).unwrap();
        assert!(html.contains("href=\"./a/run-0/result.json\""));
        let elsewhere = out.path().join("r.html");
        write_perf_html(&elsewhere, &perf_dir, &r).unwrap();
        let html = std::fs::read_to_string(&elsewhere).unwrap();
        assert!(html.contains("href=\"./perf/a/run-0/result.json\""));
        let err = write_perf_html(&out.path().join("missing/r.html"), &perf_dir, &r).unwrap_err();
        assert!(err.to_string().contains("missing/r.html"), "{err}");
    }
}
