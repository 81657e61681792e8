//! `junit.xml`: one test suite per run, one test case per phase.

use std::io;
use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::result::{PhaseStatus, RunResult, Verdict};

/// Renders runs as JUnit XML: a suite per run (named by its id), a case per phase (classname =
/// run id). Failed or timed-out phases are failures (errors when the verdict is `error`),
/// unreached phases are skipped, and a non-passing run without a failed phase gets a `harness`
/// case that carries the reason.
pub fn junit_for_runs(runs: &[RunResult], suite_name: &str) -> String {
    let mut report = Report::new(suite_name);
    for run in runs {
        report.add_test_suite(suite_for_run(run));
    }
    report
        .set_time(Duration::from_millis(
            runs.iter().map(|r| r.duration_ms).sum(),
        ))
        .to_string()
        .expect("JUnit XML serializes to a string")
}

/// Writes [`junit_for_runs`] to `path`.
pub fn write_junit(path: &Path, runs: &[RunResult], suite_name: &str) -> io::Result<()> {
    std::fs::write(path, junit_for_runs(runs, suite_name))
}

fn suite_for_run(run: &RunResult) -> TestSuite {
    let mut suite = TestSuite::new(run.id.as_str());
    suite.set_time(Duration::from_millis(run.duration_ms));
    suite.add_properties([
        Property::new("profile", run.profile.as_str()),
        Property::new("backend", run.backend.as_str()),
        Property::new("accel", run.accel.as_str()),
        Property::new("verdict", run.verdict.as_str()),
        Property::new("scenario", run.scenario.as_str()),
        Property::new("started_at", run.started_at.as_str()),
    ]);
    suite.add_properties(
        run.params
            .iter()
            .map(|(k, v)| Property::new(format!("param.{k}"), v.as_str())),
    );

    let kind = match run.verdict {
        Verdict::Error => NonSuccessKind::Error,
        _ => NonSuccessKind::Failure,
    };
    let ended_at = run.failed_phase.as_deref().unwrap_or("harness error");
    let mut any_failure = false;
    for phase in &run.phases {
        let status = match phase.status {
            PhaseStatus::Pass => TestCaseStatus::success(),
            PhaseStatus::Fail | PhaseStatus::Timeout => {
                any_failure = true;
                let message = if run.failed_phase.as_deref() == Some(phase.name.as_str())
                    && !run.reason.is_empty()
                {
                    run.reason.clone()
                } else if !phase.detail.is_empty() {
                    phase.detail.clone()
                } else {
                    format!("phase {} {}", phase.name, phase.status)
                };
                let mut s = TestCaseStatus::non_success(kind);
                s.set_message(message).set_type(phase.status.as_str());
                if !phase.detail.is_empty() {
                    s.set_description(phase.detail.as_str());
                }
                s
            }
            PhaseStatus::NotReached => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("not reached: run ended at {ended_at}"));
                s
            }
        };
        let mut case = TestCase::new(phase.name.as_str(), status);
        case.set_classname(run.id.as_str());
        if let Some(ms) = phase.duration_ms {
            case.set_time(Duration::from_millis(ms));
        }
        suite.add_test_case(case);
    }

    // A run that did not pass must not look green: carry its reason in a `harness` case.
    if run.verdict != Verdict::Pass && !any_failure {
        let mut s = TestCaseStatus::non_success(kind);
        let message = if run.reason.is_empty() {
            format!("run ended with verdict {}", run.verdict)
        } else {
            run.reason.clone()
        };
        s.set_message(message).set_type(run.verdict.as_str());
        let mut case = TestCase::new("harness", s);
        case.set_classname(run.id.as_str());
        suite.add_test_case(case);
    }

    if run.verdict != Verdict::Pass {
        let mut out = String::new();
        for sig in &run.last_signals {
            out.push_str(&format!(
                "[{:>9.3}s] {}: {}\n",
                sig.t_ms as f64 / 1000.0,
                sig.source,
                sig.summary
            ));
        }
        if !run.replay.is_empty() {
            out.push_str(&format!("replay: {}\n", run.replay));
        }
        if !out.is_empty() {
            suite.set_system_out(out);
        }
    }
    suite
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};
    use crate::result::PhaseResult;
    use quick_xml::events::Event;

    type Element = (String, Vec<(String, String)>, String);

    fn element(e: &quick_xml::events::BytesStart<'_>) -> Element {
        let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
        let attrs = e
            .attributes()
            .map(|a| {
                let a = a.unwrap();
                let k = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
                (
                    k,
                    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .unwrap()
                        .into_owned(),
                )
            })
            .collect();
        (name, attrs, String::new())
    }

    /// (element name, attributes, text inside) for every element, in document order.
    fn elements(xml: &str) -> Vec<Element> {
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut out: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) => {
                    out.push(element(&e));
                    open.push(out.len() - 1);
                }
                Event::Empty(e) => out.push(element(&e)),
                Event::Text(t) => {
                    if let Some(&i) = open.last() {
                        out[i].2.push_str(&t.decode().unwrap());
                    }
                }
                Event::GeneralRef(r) => {
                    if let Some(&i) = open.last() {
                        let name = r.decode().unwrap();
                        let s = quick_xml::escape::resolve_predefined_entity(&name).unwrap();
                        out[i].2.push_str(s);
                    }
                }
                Event::End(_) => {
                    open.pop();
                }
                Event::Eof => break,
                _ => {}
            }
        }
        out
    }

    fn attr<'a>(attrs: &'a [(String, String)], key: &str) -> Option<&'a str> {
        attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn count(els: &[Element], name: &str) -> usize {
        els.iter().filter(|e| e.0 == name).count()
    }

    #[test]
    fn pass_and_fail_runs() {
        let runs = [
            sample_pass("virtio.512.bios.by-id"),
            sample_fail(
                "nvme.4k.uefi.by-path",
                "bootkube: no <done> marker & 600 s silent",
            ),
        ];
        let xml = junit_for_runs(&runs, "disks");
        let els = elements(&xml);
        assert_eq!(attr(&els[0].1, "name"), Some("disks"));
        assert_eq!(count(&els, "testsuite"), 2);
        assert_eq!(count(&els, "testcase"), 22);
        assert_eq!(count(&els, "failure"), 1);
        assert_eq!(count(&els, "skipped"), 8);
        assert_eq!(count(&els, "error"), 0);

        let failure = els.iter().find(|e| e.0 == "failure").unwrap();
        assert_eq!(
            attr(&failure.1, "message"),
            Some("bootkube: no <done> marker & 600 s silent")
        );
        assert_eq!(attr(&failure.1, "type"), Some("timeout"));
        assert_eq!(failure.2, "last seen: bootkube.sh line 40, 600 s ago");

        let skipped = els.iter().find(|e| e.0 == "skipped").unwrap();
        assert_eq!(
            attr(&skipped.1, "message"),
            Some("not reached: run ended at bootkube")
        );

        let case = els
            .iter()
            .find(|e| e.0 == "testcase" && attr(&e.1, "name") == Some("install-to-disk"))
            .unwrap();
        assert_eq!(attr(&case.1, "classname"), Some("virtio.512.bios.by-id"));
        assert_eq!(attr(&case.1, "time"), Some("1.000"));

        let props: Vec<_> = els.iter().filter(|e| e.0 == "property").collect();
        assert!(props
            .iter()
            .any(|p| attr(&p.1, "name") == Some("accel") && attr(&p.1, "value") == Some("tcg")));
        assert!(props.iter().any(|p| attr(&p.1, "name") == Some("backend")));
        assert!(props.iter().any(|p| attr(&p.1, "name") == Some("profile")));
        assert!(xml.contains("bootkube.sh: waiting for etcd"));
    }

    #[test]
    fn error_without_failed_phase_gets_harness_case() {
        let mut run = sample_pass("smoke");
        run.verdict = Verdict::Error;
        run.reason = "qemu exited with status 1: could not open disk".into();
        run.phases = RunResult::unreached_phases();
        run.phases[0] = PhaseResult {
            status: PhaseStatus::Pass,
            start_ms: Some(0),
            end_ms: Some(500),
            duration_ms: Some(500),
            ..PhaseResult::not_reached("assets")
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        write_junit(&path, &[run], "smoke").unwrap();
        let els = elements(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(count(&els, "testsuite"), 1);
        assert_eq!(count(&els, "testcase"), 12);
        assert_eq!(count(&els, "skipped"), 10);
        assert_eq!(count(&els, "failure"), 0);
        let errors: Vec<_> = els.iter().filter(|e| e.0 == "error").collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(
            attr(&errors[0].1, "message"),
            Some("qemu exited with status 1: could not open disk")
        );
        let last_case = els.iter().rfind(|e| e.0 == "testcase").unwrap();
        assert_eq!(attr(&last_case.1, "name"), Some("harness"));
        let skipped = els.iter().find(|e| e.0 == "skipped").unwrap();
        assert_eq!(
            attr(&skipped.1, "message"),
            Some("not reached: run ended at harness error")
        );
    }
}
