//! `sno-harness report RUN_DIR [--compare BASELINE_DIR] [--html FILE]`: the command-line
//! contract (what it writes, what it prints, its exit codes).

use std::path::Path;
use std::process::{Command, Output};

use report_fixtures::passed_run;
use sno_harness::report::summary_json::Summary;
use sno_harness::result::{RunResult, Verdict};

mod report_fixtures;

const REPORTS: [&str; 4] = ["summary.json", "summary.md", "junit.xml", "report.html"];

fn sno_harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run directory holding these runs, each in `<id>/`.
fn run_dir(runs: &[RunResult]) -> tempfile::TempDir {
    let out = tempfile::Builder::new()
        .prefix("sno-report-cli-")
        .tempdir()
        .unwrap();
    for r in runs {
        let d = out.path().join(&r.id);
        std::fs::create_dir(&d).unwrap();
        r.write(&d).unwrap();
    }
    out
}

fn two_permutations() -> Vec<RunResult> {
    vec![
        passed_run("virtio.512", &[("bus", "virtio"), ("sector", "512")]),
        passed_run("nvme.4k", &[("bus", "nvme"), ("sector", "4k")]),
    ]
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn report_regenerates_the_reports_and_keeps_known_axes() {
    let out = run_dir(&two_permutations());
    let dir = path(out.path());
    let o = sno_harness(&["report", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in REPORTS {
        assert!(out.path().join(f).is_file(), "{f} written");
        assert!(stdout(&o).contains(f));
    }
    let summary = Summary::read(&out.path().join("summary.json")).unwrap();
    assert_eq!(summary.counts.pass, 2);
    assert_eq!(summary.coverage.len(), 2);

    // A value the matrix had but no permutation ran, recorded by an earlier report, survives
    // a regeneration from the result.json files.
    let mut edited = summary.clone();
    let mut scsi = edited.coverage[0].values[0].clone();
    scsi.value = "scsi".into();
    scsi.passed = 0;
    edited.coverage[0].values.push(scsi);
    std::fs::write(out.path().join("summary.json"), edited.to_json()).unwrap();
    let o = sno_harness(&["report", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let again = Summary::read(&out.path().join("summary.json")).unwrap();
    let bus = &again.coverage[0];
    assert_eq!(bus.axis, "bus");
    let scsi = bus.values.iter().find(|v| v.value == "scsi").unwrap();
    assert_eq!((scsi.passed, scsi.failed, scsi.not_run), (0, 0, 0));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));

    // An earlier summary that cannot be read is said to be lost, not dropped in silence.
    std::fs::write(out.path().join("summary.json"), "{\"schema\": 1").unwrap();
    let o = sno_harness(&["report", dir]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: the earlier summary is not read"),
        "{}",
        stderr(&o)
    );
    assert!(Summary::read(&out.path().join("summary.json")).is_some());
}

#[test]
fn report_html_only_to_a_file_elsewhere() {
    let out = run_dir(&two_permutations());
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("r.html");
    let o = sno_harness(&["report", path(out.path()), "--html", path(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&file).unwrap();
    assert_eq!(html.matches("<svg class=\"gantt\"").count(), 2);
    // Links lead back to the run directory.
    assert!(html.contains("/virtio.512/serial.log\""));
    for f in REPORTS {
        assert!(!out.path().join(f).exists(), "{f} not written with --html");
    }
}

#[test]
fn report_of_a_single_run_directory() {
    let out = tempfile::tempdir().unwrap();
    passed_run("smoke", &[]).write(out.path()).unwrap();
    let o = sno_harness(&["report", path(out.path())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = Summary::read(&out.path().join("summary.json")).unwrap();
    assert_eq!(summary.permutations[0].path, ".");
    assert!(summary.coverage.is_empty());
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    // No axis: no empty coverage section.
    assert!(!html.contains("coverage-section"), "{html}");
}

#[test]
fn report_bad_input_exits_2_naming_the_file() {
    let empty = tempfile::tempdir().unwrap();
    let o = sno_harness(&["report", path(empty.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a run directory"), "{}", stderr(&o));

    let out = run_dir(&two_permutations());
    let broken = out.path().join("nvme.4k/result.json");
    std::fs::write(&broken, "{\"schema\": \"sno-harness/result/v1\"").unwrap();
    let o = sno_harness(&["report", path(out.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(path(&broken)), "{}", stderr(&o));

    let good = run_dir(&two_permutations());
    let o = sno_harness(&["report", path(good.path()), "--compare", path(empty.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("baseline"), "{}", stderr(&o));

    let o = sno_harness(&["report", path(good.path()), "--threshold-pct", "-5"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn report_compare_exits_1_on_a_regression_and_writes_nothing() {
    let baseline = run_dir(&two_permutations());
    let mut slower = two_permutations();
    // nvme.4k's live-boot (3.5 s) takes 15 s: +329% and +11.5 s.
    slower[1].phases[1].duration_ms = Some(15_000);
    let current = run_dir(&slower);

    let o = sno_harness(&[
        "report",
        path(current.path()),
        "--compare",
        path(baseline.path()),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("nvme.4k") && l.contains("live-boot"))
        .unwrap();
    assert!(line.contains("3.5") && line.contains("15.0") && line.contains("+11.5"));
    assert!(line.ends_with("REGRESSION"), "{line}");
    assert!(text.trim_end().ends_with("1 regression"));
    for f in REPORTS {
        assert!(!current.path().join(f).exists(), "compare wrote {f}");
    }

    // Thresholds are flags: 11.5 s is not beyond 12 s.
    let o = sno_harness(&[
        "report",
        path(current.path()),
        "--compare",
        path(baseline.path()),
        "--threshold-s",
        "12",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).trim_end().ends_with("no regression"));

    // A pass that fails is a regression; --html writes the current run's page.
    let mut failed = two_permutations();
    failed[0].verdict = Verdict::Fail;
    failed[0].reason = "bootkube timed out".into();
    let current = run_dir(&failed);
    let page = current.path().join("compare.html");
    let o = sno_harness(&[
        "report",
        path(current.path()),
        "--compare",
        path(baseline.path()),
        "--html",
        path(&page),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).lines().any(|l| l.starts_with("virtio.512")
        && l.contains("verdict")
        && l.ends_with("REGRESSION")));
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("bootkube timed out"));
}

#[test]
fn report_writes_the_junit_flavour_asked_for_and_refuses_an_unknown_one() {
    let out = run_dir(&two_permutations());
    let dir = path(out.path());
    let o = sno_harness(&["report", dir, "--junit-flavour", "openshift"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let junit = std::fs::read_to_string(out.path().join("junit.xml")).unwrap();
    assert_eq!(
        junit.matches("<testsuite name=\"cluster install\"").count(),
        2
    );
    assert_eq!(
        junit
            .matches("<testcase name=\"install should succeed: overall\"")
            .count(),
        2
    );

    let o = sno_harness(&["report", dir, "--junit-flavour", "jenkins"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown JUnit flavour \"jenkins\": expected harness or openshift"),
        "{}",
        stderr(&o)
    );
    // Refused before anything is written: the openshift flavour's file stays.
    let again = std::fs::read_to_string(out.path().join("junit.xml")).unwrap();
    assert_eq!(again, junit);
}

#[test]
fn report_compare_exits_1_when_nothing_comparable_was_compared() {
    let good = run_dir(&two_permutations());
    // No id in common.
    let other = run_dir(&[passed_run(
        "scsi.512",
        &[("bus", "scsi"), ("sector", "512")],
    )]);
    let o = sno_harness(&["report", path(good.path()), "--compare", path(other.path())]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("no permutation in common with the baseline"),
        "{}",
        stderr(&o)
    );
    // Another accelerator.
    let mut kvm = two_permutations();
    for r in &mut kvm {
        r.accel = "kvm".into();
    }
    let kvm = run_dir(&kvm);
    let o = sno_harness(&["report", path(good.path()), "--compare", path(kvm.path())]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the accelerator differs"),
        "{}",
        stderr(&o)
    );
    // The same runs: comparable, no regression.
    let same = run_dir(&two_permutations());
    let o = sno_harness(&["report", path(good.path()), "--compare", path(same.path())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
