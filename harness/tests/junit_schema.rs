//! junit.xml validates against the Jenkins JUnit schema in both flavours, and a failed run's
//! reason is the failure message of its failed case (issue 18: a JUnit a CI shows).

mod junit_xsd;

use std::path::Path;

use sno_harness::report::junit::{junit_for_runs, JunitFlavour};
use sno_harness::report::load::LocatedRun;
use sno_harness::result::RunResult;

/// The reason of the synthetic run: every character XML must escape.
const REASON: &str = "bootkube: no <done> marker & \"600 s\" silent; last seen 'etcd'";

/// A run that timed out in bootkube, the rest not reached, as result.json has it.
fn failed_run(verdict: &str) -> RunResult {
    let phases: Vec<serde_json::Value> = sno_harness::result::phase_names()
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let i = i as u64;
            match i {
                0 | 1 => serde_json::json!({"name": name, "status": "pass",
                    "start_ms": i * 1000, "end_ms": i * 1000 + 1000, "duration_ms": 1000}),
                2 => serde_json::json!({"name": name, "status": "timeout",
                    "start_ms": 2000, "end_ms": 602000, "duration_ms": 600000,
                    "detail": "last seen: bootkube.sh line 40, 600 s ago"}),
                _ => serde_json::json!({"name": name, "status": "not-reached",
                    "start_ms": null, "end_ms": null, "duration_ms": null}),
            }
        })
        .collect();
    let doc = serde_json::json!({
        "schema": "sno-harness/result/v1", "id": "nvme.4k.uefi", "scenario": "scenarios/disks.toml",
        "params": {"disks.install.bus": "nvme"}, "profile": "fixture", "backend": "qemu",
        "operators_rule": "installer",
        "operator_warnings": ["ingress: Available=True Degraded=True Progressing=False (canary <failing> & \"slow\")"],
        "accel": "tcg", "verdict": verdict, "failed_phase": "bootkube", "reason": REASON,
        "started_at": "2026-11-29T23:00:00Z", "duration_ms": 602500, "phases": phases,
        "disk_write": null,
        "last_signals": [{"t_ms": 1500, "source": "ssh", "summary": "live system up"},
                         {"t_ms": 2500, "source": "serial", "summary": "bootkube.sh: waiting for etcd <1/3>"}],
        "artifacts": {"events": "events.jsonl", "serial": "serial.log",
                      "journal-live": "journal-live.txt"},
        "replay": "sno-harness matrix scenarios/disks.toml --filter nvme.4k.uefi --keep"
    });
    serde_json::from_value(doc).expect("a result.json document")
}

fn junit(run: RunResult, flavour: JunitFlavour) -> String {
    junit_for_runs(
        &[LocatedRun::in_own_dir(run)],
        Path::new("/runs/out"),
        "scenarios/disks.toml",
        flavour,
    )
}

#[test]
fn a_failed_run_validates_with_its_reason_on_the_failed_case_in_the_harness_flavour() {
    let xml = junit(failed_run("fail"), JunitFlavour::Harness);
    junit_xsd::assert_valid(&xml);
    assert_eq!(
        junit_xsd::non_successes(&xml),
        [(
            "bootkube".to_string(),
            "failure".to_string(),
            REASON.to_string()
        )]
    );
    assert!(xml.contains("hostname=\""), "{xml}");
    // Relative to the file's directory, also as an attachment line; no runner path.
    assert!(xml.contains("  serial: nvme.4k.uefi/serial.log\n"), "{xml}");
    assert!(
        xml.contains("[[ATTACHMENT|nvme.4k.uefi/serial.log]]"),
        "{xml}"
    );
    assert!(!xml.contains("/runs/out"), "{xml}");
}

#[test]
fn a_failed_run_validates_with_its_reason_on_the_failed_case_in_the_openshift_flavour() {
    let xml = junit(failed_run("fail"), JunitFlavour::Openshift);
    junit_xsd::assert_valid(&xml);
    let failure = |case: &str| (case.to_string(), "failure".to_string(), REASON.to_string());
    assert_eq!(
        junit_xsd::non_successes(&xml),
        [
            failure("install should succeed: cluster bootstrap"),
            failure("install should succeed: overall"),
        ]
    );
    assert!(xml.contains("<testsuite name=\"cluster install\""), "{xml}");
}

#[test]
fn a_harness_error_validates_in_both_flavours() {
    for flavour in [JunitFlavour::Harness, JunitFlavour::Openshift] {
        let xml = junit(failed_run("error"), flavour);
        junit_xsd::assert_valid(&xml);
        let found = junit_xsd::non_successes(&xml);
        assert!(!found.is_empty() && found.iter().all(|(_, el, m)| el == "error" && m == REASON));
    }
}

#[test]
fn the_schema_check_refuses_what_jenkins_would_not_read() {
    // Valid, the extras aside.
    junit_xsd::validate(
        r#"<testsuites skipped="0"><testsuite name="s" tests="1"><testcase name="c" timestamp="2026-11-29T23:00:00.000+00:00"/></testsuite></testsuites>"#,
    )
    .unwrap();
    // A suite without its count of tests.
    let why = junit_xsd::validate(r#"<testsuites><testsuite name="s"/></testsuites>"#).unwrap_err();
    assert!(why.contains("tests"), "{why}");
    // An attribute beyond the schema that is not one of the extras.
    let why = junit_xsd::validate(
        r#"<testsuites><testsuite name="s" tests="1"><testcase name="c" file="x.rs"/></testsuite></testsuites>"#,
    )
    .unwrap_err();
    assert!(why.contains("file"), "{why}");
    // A failure after the case's output.
    assert!(junit_xsd::validate(
        r#"<testsuites><testsuite name="s" tests="1"><testcase name="c"><system-out>x</system-out><failure message="m"/></testcase></testsuite></testsuites>"#,
    )
    .is_err());
}
