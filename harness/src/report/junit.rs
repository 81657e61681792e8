//! `junit.xml`: one test suite per run, in one of two flavours (docs/architecture.md,
//! "junit.xml"). `harness`: a case per phase. `openshift`: the cases OpenShift CI's install
//! step writes (`install should succeed: configuration`, ..., `... overall`) in a suite named
//! `cluster install`, each standing for some phases, so that the tools keying on those names
//! read a run of this harness as an install.
//!
//! A failed case carries the run's reason as its message, the failed phase as its type, and in
//! its own `system-out` the last signals of that phase and the artifacts to open, by paths
//! relative to the directory of the JUnit file (the run directory is uploaded whole and
//! lands elsewhere: an absolute path of the runner would name nothing there), each file also
//! as a `[[ATTACHMENT|path]]` line (the Jenkins JUnit-attachments convention, which Azure
//! DevOps and other collectors read, resolving a relative path from the report's directory).
//! Cases that ran have a timestamp and a time; the suite names the host.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::load::LocatedRun;
use crate::flow::phase::Phase;
use crate::result::{PhaseResult, PhaseStatus, RunResult, Verdict, RESULT_FILE};

/// Which test cases a run's suite has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JunitFlavour {
    /// One case per phase, named like the phase (the default).
    #[default]
    Harness,
    /// OpenShift CI's install steps (`OPENSHIFT_STEPS` and `OPENSHIFT_OVERALL`).
    Openshift,
}

impl JunitFlavour {
    /// The names `--junit-flavour` takes.
    pub const NAMES: [&'static str; 2] = ["harness", "openshift"];

    pub fn name(self) -> &'static str {
        match self {
            JunitFlavour::Harness => "harness",
            JunitFlavour::Openshift => "openshift",
        }
    }
}

impl fmt::Display for JunitFlavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A flavour name that is not one of [`JunitFlavour::NAMES`].
#[derive(Debug, thiserror::Error)]
#[error("unknown JUnit flavour {0:?}: expected harness or openshift")]
pub struct UnknownFlavour(String);

impl FromStr for JunitFlavour {
    type Err = UnknownFlavour;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "harness" => Ok(JunitFlavour::Harness),
            "openshift" => Ok(JunitFlavour::Openshift),
            other => Err(UnknownFlavour(other.to_string())),
        }
    }
}

/// The JUnit file of a run started alone (`run`) and of a report directory (a matrix's
/// `--out`, `report --merge --out`): the one file a collector's `junit*.xml` glob should find.
pub const JUNIT_FILE: &str = "junit.xml";

/// The JUnit file of a permutation inside a matrix's `--out` (`OUT/<id>/`):
/// the same cases as the run's suite in `OUT/junit.xml`, so it is named to match none of the
/// globs collectors are given (`**/junit*.xml`, `**/*junit*.xml`, `**/*.xml`,
/// `**/TEST-*.xml`): otherwise every case would be counted twice.
pub const PERMUTATION_JUNIT_FILE: &str = "report.junit";

/// Where a run's JUnit goes, and with which cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JunitOut {
    pub flavour: JunitFlavour,
    /// A permutation of a matrix (its `OUT/junit.xml` has its cases), not a run alone nor
    /// a perf run's run (a perf run writes no merged junit.xml).
    pub in_matrix: bool,
}

impl JunitOut {
    /// The file name in the run's directory.
    pub fn file_name(self) -> &'static str {
        if self.in_matrix {
            PERMUTATION_JUNIT_FILE
        } else {
            JUNIT_FILE
        }
    }
}

/// The suite name of the `openshift` flavour, as OpenShift CI's install step writes it.
pub const OPENSHIFT_SUITE: &str = "cluster install";

/// The OpenShift CI install steps and the phases each stands for (docs/architecture.md,
/// "junit.xml"). A step fails when one of its phases failed, is skipped when none of them
/// ran. The harness has no check of its own for operator stability: cluster-ready's judgement
/// (ClusterVersion Available and every ClusterOperator settled for 30 s, what `openshift-install
/// wait-for install-complete` waits for) is it, so cluster-ready stands for both the cluster's
/// creation and its operators' stability.
pub const OPENSHIFT_STEPS: [(&str, &[Phase]); 5] = [
    ("install should succeed: configuration", &[Phase::Assets]),
    // The VM's start is the start of live-boot; the host's preflight is not a phase (a host
    // that is not ready ends before any run directory exists).
    ("install should succeed: infrastructure", &[Phase::LiveBoot]),
    (
        "install should succeed: cluster bootstrap",
        &[
            Phase::Bootkube,
            Phase::InstallToDisk,
            Phase::Reboot,
            Phase::DiskBoot,
            Phase::ApiReady,
            Phase::BootstrapComplete,
            Phase::BootstrapCleanup,
        ],
    ),
    (
        "install should succeed: cluster creation",
        &[Phase::NodeReady, Phase::ClusterReady],
    ),
    (
        "install should succeed: cluster operator stability",
        &[Phase::ClusterReady],
    ),
];

/// The step that is the run's verdict.
pub const OPENSHIFT_OVERALL: &str = "install should succeed: overall";

/// Renders runs as JUnit XML, to be written into `base`: a report named `report_name` with a
/// suite per run. Each run's directory is `base/<its dir>`; the artifacts of failed cases are
/// named relative to `base`.
pub fn junit_for_runs(
    runs: &[LocatedRun],
    base: &Path,
    report_name: &str,
    flavour: JunitFlavour,
) -> String {
    let host = crate::util::hostname();
    let mut report = Report::new(report_name);
    for located in &super::load::with_files_on_disk(runs, base) {
        let view = RunView::new(located, base);
        report.add_test_suite(suite_for_run(&view, flavour, &host));
    }
    report
        .set_time(Duration::from_millis(
            runs.iter().map(|r| r.result.duration_ms).sum(),
        ))
        .to_string()
        .expect("JUnit XML serializes to a string")
}

/// Writes [`junit_for_runs`] to `path`, atomically and following no link planted beside it.
pub fn write_junit(
    path: &Path,
    runs: &[LocatedRun],
    base: &Path,
    report_name: &str,
    flavour: JunitFlavour,
) -> io::Result<()> {
    use crate::util::replace_file::{replace_file, PUBLIC_FILE};
    let xml = junit_for_runs(runs, base, report_name, flavour);
    // The caller names the file.
    replace_file(path, xml.as_bytes(), PUBLIC_FILE).map_err(|e| e.source)
}

/// One run as the cases see it: its result, its directory, when it started.
struct RunView<'a> {
    run: &'a RunResult,
    /// The run's directory relative to the JUnit file's: empty for the same directory.
    dir: String,
    /// Where it is now, to see what exists.
    abs: PathBuf,
    started: Option<SystemTime>,
    kind: NonSuccessKind,
}

impl<'a> RunView<'a> {
    fn new(located: &'a LocatedRun, base: &Path) -> Self {
        let run = &located.result;
        RunView {
            run,
            dir: match located.dir.trim_end_matches('/') {
                "." | "" => String::new(),
                d => format!("{d}/"),
            },
            abs: base.join(&located.dir),
            // Empty for a run that never started; a hostile result.json may hold anything.
            started: humantime::parse_rfc3339(&run.started_at).ok(),
            kind: match run.verdict {
                Verdict::Error => NonSuccessKind::Error,
                _ => NonSuccessKind::Failure,
            },
        }
    }

    /// The wall-clock time `ms` after the run started.
    fn at(&self, ms: u64) -> Option<chrono::DateTime<chrono::FixedOffset>> {
        let t = self.started?.checked_add(Duration::from_millis(ms))?;
        Some(chrono::DateTime::<chrono::Utc>::from(t).fixed_offset())
    }

    fn phases(&self, names: &[Phase]) -> Vec<&'a PhaseResult> {
        names
            .iter()
            .filter_map(|p| self.run.phase(p.name()))
            .collect()
    }

    /// Where the run ended, for the skipped cases.
    fn ended_at(&self) -> &str {
        self.run.failed_phase.as_deref().unwrap_or("harness error")
    }

    /// The reason of the run, or its verdict in words when it gave none.
    fn reason(&self) -> String {
        if self.run.reason.is_empty() {
            format!("run ended with verdict {}", self.run.verdict)
        } else {
            self.run.reason.clone()
        }
    }

    fn failed_phase(&self) -> Option<&'a PhaseResult> {
        self.run.phase(self.run.failed_phase.as_deref()?)
    }
}

fn suite_for_run(view: &RunView<'_>, flavour: JunitFlavour, host: &str) -> TestSuite {
    let run = view.run;
    let mut suite = TestSuite::new(match flavour {
        JunitFlavour::Harness => run.id.as_str(),
        JunitFlavour::Openshift => OPENSHIFT_SUITE,
    });
    suite.set_time(Duration::from_millis(run.duration_ms));
    if let Some(t) = view.at(0) {
        suite.set_timestamp(t);
    }
    suite.extra.insert("hostname".into(), host.into());
    suite.add_properties([
        Property::new("id", run.id.as_str()),
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
    // The rule cluster-ready applied, and each operator it reported rather than judged: a
    // pass with unhealthy operators says so in the suite CI reads.
    suite.add_properties(
        run.operators_rule
            .iter()
            .map(|r| Property::new("operators_rule", r.as_str())),
    );
    suite.add_properties(
        run.operator_warnings
            .iter()
            .enumerate()
            .map(|(i, w)| Property::new(format!("operator_warning.{}", i + 1), w.as_str())),
    );
    suite.add_properties(firmware_and_disk_properties(run));
    let cases = match flavour {
        JunitFlavour::Harness => phase_cases(view),
        JunitFlavour::Openshift => openshift_cases(view),
    };
    suite.add_test_cases(cases);
    suite
}

/// Secure Boot as each system reported it, and whether the installed root was on the
/// multipath map: for a CI dashboard that filters by them; none for runs without either.
fn firmware_and_disk_properties(run: &crate::result::RunResult) -> Vec<Property> {
    let mut props = Vec::new();
    if let Some(sb) = run.secure_boot {
        for (system, state) in [("live", sb.live), ("installed", sb.installed)] {
            if let Some(state) = state {
                let value = serde_json::to_value(state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                props.push(Property::new(format!("secure_boot.{system}"), value));
            }
        }
    }
    if let Some(root) = run.multipath.as_ref().and_then(|m| m.root.as_ref()) {
        props.push(Property::new(
            "multipath.root_on_map",
            if root.on_multipath { "true" } else { "false" },
        ));
    }
    props
}

/// How a group of phases (one phase, or an OpenShift step) ended.
#[derive(Debug, PartialEq)]
enum Outcome<'a> {
    /// Every phase of the group passed.
    Passed,
    /// This phase of the group failed or timed out.
    Failed(&'a PhaseResult),
    /// Some phases ran, no phase of the run failed, and the run ended without passing (a
    /// harness error, an interrupt) before the next phase of this group.
    Stopped,
    /// None of its phases ran.
    Skipped,
}

fn outcome<'a>(run: &RunResult, phases: &[&'a PhaseResult]) -> Outcome<'a> {
    let failed: Vec<&PhaseResult> = phases
        .iter()
        .copied()
        .filter(|p| p.status.is_failure())
        .collect();
    // The run's failed phase first: its reason is the run's.
    if let Some(p) = failed
        .iter()
        .find(|p| run.failed_phase.as_deref() == Some(p.name.as_str()))
        .or(failed.first())
    {
        return Outcome::Failed(p);
    }
    if phases.iter().all(|p| p.status == PhaseStatus::NotReached) {
        return Outcome::Skipped;
    }
    let stopped_inside = run.verdict != Verdict::Pass
        && !run.phases.iter().any(|p| p.status.is_failure())
        && stop_phase(run).is_some_and(|stop| phases.iter().any(|p| p.name == stop));
    if stopped_inside {
        Outcome::Stopped
    } else {
        // Its phases that ran passed; those that did not were after a failure elsewhere (a
        // step's phases need not be consecutive: bootstrap-cleanup follows cluster-ready).
        Outcome::Passed
    }
}

/// The phase a run that ended without a failed phase did not get to: the one after the last
/// it reached.
fn stop_phase(run: &RunResult) -> Option<&str> {
    let last = run
        .phases
        .iter()
        .rposition(|p| p.status != PhaseStatus::NotReached)?;
    run.phases.get(last + 1).map(|p| p.name.as_str())
}

/// The case of a group of phases, named `name`.
fn group_case(view: &RunView<'_>, name: &str, phases: &[&PhaseResult]) -> TestCase {
    let (status, evidence) = match outcome(view.run, phases) {
        Outcome::Passed => (TestCaseStatus::success(), None),
        Outcome::Failed(p) => (failed_status(view, p), Some(evidence(view, Some(p)))),
        Outcome::Stopped => (
            stopped_status(view, view.run.verdict.as_str()),
            Some(evidence(view, None)),
        ),
        Outcome::Skipped => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("not reached: run ended at {}", view.ended_at()));
            (s, None)
        }
    };
    let mut case = TestCase::new(name, status);
    case.set_classname(view.run.id.as_str());
    let start = phases.iter().filter_map(|p| p.start_ms).min();
    let end = phases.iter().filter_map(|p| p.end_ms).max();
    if let Some(t) = start.and_then(|ms| view.at(ms)) {
        case.set_timestamp(t);
    }
    match (start, end) {
        (Some(s), Some(e)) if e >= s => {
            case.set_time(Duration::from_millis(e - s));
        }
        _ => {
            if let Some(ms) = phases
                .iter()
                .filter_map(|p| p.duration_ms)
                .reduce(u64::saturating_add)
            {
                case.set_time(Duration::from_millis(ms));
            }
        }
    }
    if let Some(out) = evidence {
        case.set_system_out(out);
    }
    case
}

/// The failure (error when the verdict is `error`) of phase `p`: the run's reason when `p`
/// is the run's failed phase, else what the phase says.
fn failed_status(view: &RunView<'_>, p: &PhaseResult) -> TestCaseStatus {
    let message = if view.run.failed_phase.as_deref() == Some(p.name.as_str()) {
        view.reason()
    } else if !p.detail.is_empty() {
        p.detail.clone()
    } else {
        format!("phase {} {}", p.name, p.status)
    };
    let mut s = TestCaseStatus::non_success(view.kind);
    s.set_message(message).set_type(p.name.as_str());
    if !p.detail.is_empty() {
        s.set_description(p.detail.as_str());
    }
    s
}

/// The failure (or error) of a run that ended without a failed phase.
fn stopped_status(view: &RunView<'_>, kind: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(view.kind);
    s.set_message(view.reason()).set_type(kind);
    s
}

/// What a non-passing case shows: the last signals of the phase it failed in (the run's last
/// signals when there is none), the artifacts to open, the replay command.
fn evidence(view: &RunView<'_>, failed: Option<&PhaseResult>) -> String {
    let mut out = last_signals_text(view.run, failed);
    out.push_str("artifacts (relative to this file's directory):\n");
    let paths = artifact_paths(view);
    for (name, path, _) in &paths {
        out.push_str(&format!("  {name}: {path}\n"));
    }
    if !view.run.replay.is_empty() {
        out.push_str(&format!("replay: {}\n", view.run.replay));
    }
    for (_, path, file) in &paths {
        if *file && attachable(path) {
            out.push_str(&format!("[[ATTACHMENT|{path}]]\n"));
        }
    }
    out
}

/// A path an attachment line can carry: relative (an upload keeps no absolute path), on one
/// line, without the line's own delimiters (a hostile result.json names its artifacts).
fn attachable(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains(|c: char| c.is_control() || c == '|' || c == ']' || c == '[')
}

/// The last signals within `phase`'s span, with their source; all of the run's when the
/// phase has none (or no phase failed).
fn last_signals_text(run: &RunResult, phase: Option<&PhaseResult>) -> String {
    let line = |s: &crate::result::LastSignal| {
        format!(
            "  [{:>9.3}s] {}: {}\n",
            s.t_ms as f64 / 1000.0,
            s.source,
            s.summary
        )
    };
    let within: Vec<_> = match phase {
        Some(p) => {
            let (from, to) = (p.start_ms.unwrap_or(0), p.end_ms.unwrap_or(u64::MAX));
            run.last_signals
                .iter()
                .filter(|s| (from..=to).contains(&s.t_ms))
                .collect()
        }
        None => Vec::new(),
    };
    let (title, signals): (String, Vec<_>) = match phase {
        Some(p) if !within.is_empty() => (format!("last signals of {}", p.name), within),
        Some(p) => (
            format!("no signal within {}; the run's last signals", p.name),
            run.last_signals.iter().collect(),
        ),
        None => (
            "the run's last signals".to_string(),
            run.last_signals.iter().collect(),
        ),
    };
    if signals.is_empty() {
        return format!("{title}: none recorded\n");
    }
    let mut out = format!("{title}:\n");
    for s in signals {
        out.push_str(&line(s));
    }
    out
}

/// The evidence a reader opens first, relative to the JUnit file: result.json, the timeline,
/// the console, the journals (each boot's raw one too), harness.log, and the gathered logs
/// when there are some; each with whether it is a file (an attachment) or a directory.
fn artifact_paths(view: &RunView<'_>) -> Vec<(String, String, bool)> {
    let mut paths = vec![(
        "result".to_string(),
        format!("{}{RESULT_FILE}", view.dir),
        true,
    )];
    // The timeline, the console, the journals by system, each boot's whole journal, the log.
    let first = |name: &str| match name {
        "events" => (0, 0),
        "serial" => (1, 0),
        "harness-log" => (4, 0),
        _ => match name.strip_prefix("journal-raw-").map(str::parse::<u32>) {
            Some(Ok(n)) => (3, n),
            _ => (2, 0),
        },
    };
    let mut named: Vec<(&String, &String)> = view
        .run
        .artifacts
        .iter()
        .filter(|(name, _)| {
            matches!(name.as_str(), "events" | "serial" | "harness-log")
                || name.starts_with("journal-")
        })
        .collect();
    named.sort_by_key(|(name, _)| (first(name), name.as_str()));
    paths.extend(
        named
            .into_iter()
            .map(|(name, rel)| (name.clone(), format!("{}{rel}", view.dir), true)),
    );
    if view.abs.join("gather").is_dir() {
        paths.push(("gather".to_string(), format!("{}gather", view.dir), false));
    }
    paths
}

/// The `harness` flavour: a case per phase, and a `harness` case carrying the reason of a
/// run that did not pass without a failed phase (it must not look green).
fn phase_cases(view: &RunView<'_>) -> Vec<TestCase> {
    let run = view.run;
    let mut cases: Vec<TestCase> = run
        .phases
        .iter()
        .map(|p| group_case(view, &p.name, &[p]))
        .collect();
    let any_failure = run.phases.iter().any(|p| p.status.is_failure());
    if run.verdict != Verdict::Pass && !any_failure {
        let mut case = TestCase::new("harness", stopped_status(view, run.verdict.as_str()));
        case.set_classname(run.id.as_str());
        case.set_system_out(evidence(view, None));
        cases.push(case);
    }
    cases
}

/// The `openshift` flavour: OpenShift CI's install steps, then the verdict as `overall`.
fn openshift_cases(view: &RunView<'_>) -> Vec<TestCase> {
    let mut cases: Vec<TestCase> = OPENSHIFT_STEPS
        .iter()
        .map(|(name, phases)| group_case(view, name, &view.phases(phases)))
        .collect();
    cases.push(overall_case(view));
    cases
}

fn overall_case(view: &RunView<'_>) -> TestCase {
    let run = view.run;
    let failed = view.failed_phase().filter(|p| p.status.is_failure());
    let status = match (run.verdict, failed) {
        (Verdict::Pass, _) => TestCaseStatus::success(),
        (_, Some(p)) => failed_status(view, p),
        (v, None) => stopped_status(view, v.as_str()),
    };
    let mut case = TestCase::new(OPENSHIFT_OVERALL, status);
    case.set_classname(run.id.as_str());
    if let Some(t) = view.at(0) {
        case.set_timestamp(t);
    }
    case.set_time(Duration::from_millis(run.duration_ms));
    if run.verdict != Verdict::Pass {
        case.set_system_out(evidence(view, failed));
    }
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};
    use crate::result::{LastSignal, PhaseResult};
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

    /// The value of the suite's property `name`.
    fn property<'a>(els: &'a [Element], name: &str) -> Option<&'a str> {
        els.iter()
            .find(|e| e.0 == "property" && attr(&e.1, "name") == Some(name))
            .and_then(|e| attr(&e.1, "value"))
    }

    fn count(els: &[Element], name: &str) -> usize {
        els.iter().filter(|e| e.0 == name).count()
    }

    fn located(runs: Vec<RunResult>) -> Vec<LocatedRun> {
        runs.into_iter().map(LocatedRun::in_own_dir).collect()
    }

    fn case<'a>(els: &'a [Element], name: &str) -> &'a Element {
        els.iter()
            .find(|e| e.0 == "testcase" && attr(&e.1, "name") == Some(name))
            .unwrap_or_else(|| panic!("no case {name}"))
    }

    /// The elements inside the case named `name` (up to the next case or suite).
    fn inside<'a>(els: &'a [Element], name: &str) -> &'a [Element] {
        let at = els
            .iter()
            .position(|e| e.0 == "testcase" && attr(&e.1, "name") == Some(name))
            .unwrap_or_else(|| panic!("no case {name}"));
        let end = els[at + 1..]
            .iter()
            .position(|e| e.0 == "testcase" || e.0 == "testsuite")
            .map_or(els.len(), |n| at + 1 + n);
        &els[at + 1..end]
    }

    fn child<'a>(els: &'a [Element], case_name: &str, child: &str) -> Option<&'a Element> {
        inside(els, case_name).iter().find(|e| e.0 == child)
    }

    #[test]
    fn the_operators_rule_and_each_reported_operator_are_properties() {
        let mut r = sample_pass("p");
        r.operators_rule = Some("installer".into());
        r.operator_warnings = vec![
            "ingress: Degraded=True".into(),
            "console: Available=False".into(),
        ];
        let xml = junit_for_runs(
            &located(vec![r]),
            Path::new("/runs/out"),
            "x",
            JunitFlavour::Harness,
        );
        let els = elements(&xml);
        let prop = |name: &str| property(&els, name);
        assert_eq!(prop("operators_rule"), Some("installer"));
        assert_eq!(prop("operator_warning.1"), Some("ingress: Degraded=True"));
        assert_eq!(prop("operator_warning.2"), Some("console: Available=False"));
        assert_eq!(prop("operator_warning.3"), None);
    }

    #[test]
    fn secure_boot_and_a_multipath_root_are_properties_when_the_run_read_them() {
        use crate::flow::event::SecureBootState;
        let mut r = sample_pass("p");
        r.secure_boot = Some(crate::flow::machine::SecureBootSeen {
            live: Some(SecureBootState::On),
            installed: Some(SecureBootState::NoVariable),
        });
        r.multipath = Some(crate::result::MultipathResult {
            root: Some(crate::result::MultipathRoot {
                on_multipath: true,
                ..Default::default()
            }),
            ..Default::default()
        });
        let plain = junit_for_runs(
            &located(vec![sample_pass("q")]),
            Path::new("/runs/out"),
            "x",
            JunitFlavour::Harness,
        );
        assert!(
            !plain.contains("secure_boot") && !plain.contains("multipath"),
            "{plain}"
        );
        let xml = junit_for_runs(
            &located(vec![r]),
            Path::new("/runs/out"),
            "x",
            JunitFlavour::Harness,
        );
        let els = elements(&xml);
        let prop = |name: &str| property(&els, name);
        assert_eq!(prop("secure_boot.live"), Some("on"));
        assert_eq!(prop("secure_boot.installed"), Some("no-variable"));
        assert_eq!(prop("multipath.root_on_map"), Some("true"));
    }

    #[test]
    fn pass_and_fail_runs() {
        let runs = located(vec![
            sample_pass("virtio.512.bios.by-id"),
            sample_fail(
                "nvme.4k.uefi.by-path",
                "bootkube: no <done> marker & 600 s silent",
            ),
        ]);
        let xml = junit_for_runs(
            &runs,
            Path::new("/runs/out"),
            "disks",
            JunitFlavour::Harness,
        );
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
        assert_eq!(attr(&failure.1, "type"), Some("bootkube"));
        assert_eq!(failure.2, "last seen: bootkube.sh line 40, 600 s ago");

        let skipped = els.iter().find(|e| e.0 == "skipped").unwrap();
        assert_eq!(
            attr(&skipped.1, "message"),
            Some("not reached: run ended at bootkube")
        );

        let case = case(&els, "install-to-disk");
        assert_eq!(attr(&case.1, "classname"), Some("virtio.512.bios.by-id"));
        assert_eq!(attr(&case.1, "time"), Some("1.000"));
        // Started 3 s into a run that started at 23:00:00.
        assert_eq!(
            attr(&case.1, "timestamp"),
            Some("2026-11-29T23:00:03.000+00:00")
        );
        let suite = els.iter().find(|e| e.0 == "testsuite").unwrap();
        assert_eq!(
            attr(&suite.1, "hostname"),
            Some(crate::util::hostname().as_str())
        );
        assert_eq!(
            attr(&suite.1, "timestamp"),
            Some("2026-11-29T23:00:00.000+00:00")
        );

        let props: Vec<_> = els.iter().filter(|e| e.0 == "property").collect();
        assert!(props
            .iter()
            .any(|p| attr(&p.1, "name") == Some("accel") && attr(&p.1, "value") == Some("tcg")));
        assert!(props.iter().any(|p| attr(&p.1, "name") == Some("backend")));
        assert!(props.iter().any(|p| attr(&p.1, "name") == Some("profile")));
        // Only the failed case has an output: the run's passing cases have none.
        assert_eq!(count(&els, "system-out"), 1);
    }

    #[test]
    fn the_failed_case_shows_its_phase_signals_and_the_artifacts() {
        let mut run = sample_fail("nvme", "bootkube timed out");
        run.last_signals = vec![
            LastSignal {
                t_ms: 1500,
                source: "ssh".into(),
                summary: "live system up".into(),
            },
            LastSignal {
                t_ms: 2500,
                source: "serial".into(),
                summary: "bootkube.sh: waiting for etcd".into(),
            },
        ];
        run.artifacts
            .insert("journal-live".into(), "journal-live.txt".into());
        run.artifacts.insert("vm".into(), "vm.txt".into());
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(base.path().join("nvme/gather")).unwrap();
        let xml = junit_for_runs(&located(vec![run]), base.path(), "x", JunitFlavour::Harness);
        let els = elements(&xml);
        let out = &child(&els, "bootkube", "system-out").unwrap().2;
        let expected =
            "last signals of bootkube:\n  [    2.500s] serial: bootkube.sh: waiting for etcd\n\
             artifacts (relative to this file's directory):\n  result: nvme/result.json\n  \
             events: nvme/events.jsonl\n  serial: nvme/serial.log\n  \
             journal-live: nvme/journal-live.txt\n  gather: nvme/gather\n\
             replay: sno-harness run scenarios/disks.toml --filter nvme --keep\n\
             [[ATTACHMENT|nvme/result.json]]\n[[ATTACHMENT|nvme/events.jsonl]]\n\
             [[ATTACHMENT|nvme/serial.log]]\n[[ATTACHMENT|nvme/journal-live.txt]]\n";
        assert_eq!(out, &expected);
        // The signal of live-boot is not bootkube's; vm.txt is not what one opens first.
        assert!(
            !out.contains("live system up") && !out.contains("vm.txt"),
            "{out}"
        );
    }

    /// The paths a failed case names: its listing's and its attachment lines'.
    fn named_paths(out: &str) -> (Vec<String>, Vec<String>) {
        let listed = out
            .split("artifacts (relative to this file's directory):\n")
            .nth(1)
            .unwrap_or_else(|| panic!("no artifacts in {out}"))
            .lines()
            .take_while(|l| l.starts_with("  "))
            .map(|l| l.split_once(": ").unwrap().1.to_string())
            .collect();
        let attached = out
            .lines()
            .filter_map(|l| l.strip_prefix("[[ATTACHMENT|")?.strip_suffix("]]"))
            .map(str::to_string)
            .collect();
        (listed, attached)
    }

    #[test]
    fn the_artifacts_of_a_moved_run_directory_still_resolve_from_its_junit() {
        let mut run = sample_fail("nvme", "bootkube timed out");
        run.artifacts
            .insert("journal-live".into(), "journal-live.txt".into());
        let root = tempfile::tempdir().unwrap();
        let old = root.path().join("runner/work/out");
        let dir = old.join("nvme");
        std::fs::create_dir_all(dir.join("gather")).unwrap();
        for f in [
            "events.jsonl",
            "serial.log",
            "journal-live.txt",
            "journal-1-ab12.json.gz",
            "journal-2-cd34.json.gz",
            "harness.log",
        ] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        let runs = [LocatedRun {
            dir: ".".into(),
            result: run.clone(),
        }];
        // A run's own junit.xml, and a matrix's one directory up.
        write_junit(
            &dir.join("junit.xml"),
            &runs,
            &dir,
            "x",
            JunitFlavour::Harness,
        )
        .unwrap();
        let matrix = located(vec![run]);
        write_junit(
            &old.join("junit.xml"),
            &matrix,
            &old,
            "x",
            JunitFlavour::Openshift,
        )
        .unwrap();
        std::fs::write(dir.join("result.json"), "{}").unwrap();

        let moved = root.path().join("downloaded/artifacts");
        std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
        std::fs::rename(&old, &moved).unwrap();
        for junit in [moved.join("nvme/junit.xml"), moved.join("junit.xml")] {
            let xml = std::fs::read_to_string(&junit).unwrap();
            assert!(!xml.contains(root.path().to_str().unwrap()), "{xml}");
            let els = elements(&xml);
            let out = &els.iter().find(|e| e.0 == "system-out").unwrap().2;
            let (listed, attached) = named_paths(out);
            assert_eq!(listed.len(), 8, "{out}");
            assert_eq!(attached.len(), 7, "gather is a directory: {out}");
            assert!(listed.iter().any(|p| p.ends_with("harness.log")), "{out}");
            assert!(listed.iter().any(|p| p.ends_with("journal-2-cd34.json.gz")));
            let at = junit.parent().unwrap();
            for p in listed.iter().chain(&attached) {
                assert!(
                    at.join(p).exists(),
                    "{} names {p}: not there",
                    junit.display()
                );
            }
        }
    }

    #[test]
    fn an_attachment_line_carries_no_path_a_hostile_result_could_break_it_with() {
        assert!(attachable("nvme/serial.log"));
        for bad in ["/etc/passwd", "a]]\n[[ATTACHMENT|x", "a|b", "", "a\rb"] {
            assert!(!attachable(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_failed_phase_without_signals_of_its_own_shows_the_runs() {
        let mut run = sample_fail("f", "bootkube timed out");
        run.last_signals[0].t_ms = 100;
        let xml = junit_for_runs(
            &located(vec![run]),
            Path::new("/o"),
            "x",
            JunitFlavour::Harness,
        );
        let els = elements(&xml);
        let out = &child(&els, "bootkube", "system-out").unwrap().2;
        assert!(
            out.starts_with(
                "no signal within bootkube; the run's last signals:\n  [    0.100s] serial: "
            ),
            "{out}"
        );
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
        let runs = [LocatedRun {
            dir: ".".into(),
            result: run,
        }];
        write_junit(&path, &runs, dir.path(), "smoke", JunitFlavour::Harness).unwrap();
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
        assert_eq!(attr(&errors[0].1, "type"), Some("error"));
        let last_case = els.iter().rfind(|e| e.0 == "testcase").unwrap();
        assert_eq!(attr(&last_case.1, "name"), Some("harness"));
        let out = &child(&els, "harness", "system-out").unwrap().2;
        assert!(out.contains("  result: result.json\n"), "{out}");
        assert!(out.contains("\n[[ATTACHMENT|result.json]]\n"), "{out}");
        let skipped = els.iter().find(|e| e.0 == "skipped").unwrap();
        assert_eq!(
            attr(&skipped.1, "message"),
            Some("not reached: run ended at harness error")
        );
    }

    /// The names OpenShift CI's install step gives its cases, in its order.
    const OPENSHIFT_CASES: [&str; 6] = [
        "install should succeed: configuration",
        "install should succeed: infrastructure",
        "install should succeed: cluster bootstrap",
        "install should succeed: cluster creation",
        "install should succeed: cluster operator stability",
        "install should succeed: overall",
    ];

    fn case_names(els: &[Element]) -> Vec<&str> {
        els.iter()
            .filter(|e| e.0 == "testcase")
            .filter_map(|e| attr(&e.1, "name"))
            .collect()
    }

    #[test]
    fn every_phase_is_in_an_openshift_step() {
        for p in Phase::ALL {
            assert!(
                OPENSHIFT_STEPS.iter().any(|(_, ps)| ps.contains(&p)),
                "{p} is in no step"
            );
        }
    }

    #[test]
    fn openshift_flavour_of_a_passed_run() {
        let xml = junit_for_runs(
            &located(vec![sample_pass("ok")]),
            Path::new("/o"),
            "smoke",
            JunitFlavour::Openshift,
        );
        let els = elements(&xml);
        let suite = els.iter().find(|e| e.0 == "testsuite").unwrap();
        assert_eq!(attr(&suite.1, "name"), Some("cluster install"));
        assert_eq!(case_names(&els), OPENSHIFT_CASES);
        assert_eq!(
            count(&els, "failure") + count(&els, "error") + count(&els, "skipped"),
            0
        );
        // bootkube (2 s) to bootstrap-cleanup (ends at 11 s).
        let bootstrap = case(&els, OPENSHIFT_CASES[2]);
        assert_eq!(attr(&bootstrap.1, "time"), Some("9.000"));
        assert_eq!(
            attr(&bootstrap.1, "timestamp"),
            Some("2026-11-29T23:00:02.000+00:00")
        );
        assert_eq!(
            attr(&case(&els, OPENSHIFT_CASES[5]).1, "time"),
            Some("61.234")
        );
    }

    #[test]
    fn openshift_flavour_of_a_run_failed_in_bootkube() {
        let xml = junit_for_runs(
            &located(vec![sample_fail("nvme", "bootkube timed out")]),
            Path::new("/o"),
            "smoke",
            JunitFlavour::Openshift,
        );
        let els = elements(&xml);
        assert_eq!(case_names(&els), OPENSHIFT_CASES);
        assert!(inside(&els, OPENSHIFT_CASES[0]).is_empty());
        assert!(inside(&els, OPENSHIFT_CASES[1]).is_empty());
        for failed in [OPENSHIFT_CASES[2], OPENSHIFT_CASES[5]] {
            let f = child(&els, failed, "failure").unwrap();
            assert_eq!(attr(&f.1, "message"), Some("bootkube timed out"));
            assert_eq!(attr(&f.1, "type"), Some("bootkube"));
            let out = &child(&els, failed, "system-out").unwrap().2;
            assert!(
                out.contains("serial: bootkube.sh: waiting for etcd"),
                "{out}"
            );
            assert!(out.contains("  result: nvme/result.json\n"), "{out}");
        }
        for skipped in [OPENSHIFT_CASES[3], OPENSHIFT_CASES[4]] {
            let s = child(&els, skipped, "skipped").unwrap();
            assert_eq!(
                attr(&s.1, "message"),
                Some("not reached: run ended at bootkube")
            );
        }
    }

    #[test]
    fn a_cluster_ready_failure_fails_creation_and_operator_stability() {
        let mut run = sample_pass("co");
        run.verdict = Verdict::Fail;
        run.failed_phase = Some("cluster-ready".into());
        run.reason = "ClusterOperator etcd Degraded".into();
        run.phases[9].status = PhaseStatus::Fail;
        run.phases[10] = PhaseResult::not_reached("bootstrap-cleanup");
        let xml = junit_for_runs(
            &located(vec![run]),
            Path::new("/o"),
            "x",
            JunitFlavour::Openshift,
        );
        let els = elements(&xml);
        for name in [OPENSHIFT_CASES[3], OPENSHIFT_CASES[4], OPENSHIFT_CASES[5]] {
            let f = child(&els, name, "failure").unwrap_or_else(|| panic!("{name}"));
            assert_eq!(attr(&f.1, "message"), Some("ClusterOperator etcd Degraded"));
            assert_eq!(attr(&f.1, "type"), Some("cluster-ready"));
        }
        // The bootstrap step ran partly (bootstrap-cleanup, after cluster-ready, never did)
        // and failed nowhere: the failure is cluster-ready's, not its.
        assert!(inside(&els, OPENSHIFT_CASES[2]).is_empty());
    }

    #[test]
    fn a_harness_error_inside_a_step_is_that_steps_error() {
        let mut run = sample_pass("err");
        run.verdict = Verdict::Error;
        run.reason = "qemu died".into();
        for p in &mut run.phases[3..] {
            *p = PhaseResult::not_reached(p.name.clone());
        }
        let xml = junit_for_runs(
            &located(vec![run]),
            Path::new("/o"),
            "x",
            JunitFlavour::Openshift,
        );
        let els = elements(&xml);
        let e = child(&els, OPENSHIFT_CASES[2], "error").unwrap();
        assert_eq!(attr(&e.1, "message"), Some("qemu died"));
        assert_eq!(attr(&e.1, "type"), Some("error"));
        assert!(child(&els, OPENSHIFT_CASES[5], "error").is_some());
        assert!(child(&els, OPENSHIFT_CASES[3], "skipped").is_some());
    }

    #[test]
    fn a_start_time_that_is_no_time_gives_no_timestamps() {
        let mut run = sample_fail("h", "x");
        run.started_at = "yesterday".into();
        let xml = junit_for_runs(
            &located(vec![run]),
            Path::new("/o"),
            "x",
            JunitFlavour::Openshift,
        );
        assert!(!xml.contains("timestamp="), "{xml}");
    }

    #[test]
    fn flavour_names_round_trip() {
        for name in JunitFlavour::NAMES {
            assert_eq!(name.parse::<JunitFlavour>().unwrap().name(), name);
        }
        let e = "jenkins".parse::<JunitFlavour>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown JUnit flavour \"jenkins\": expected harness or openshift"
        );
    }
}
