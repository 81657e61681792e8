//! Run directories made of the recorded smoke run of benches/data (a passed
//! `scenarios/smoke.toml` run on minisno under TCG), cut and altered here to stand for other
//! endings.

use super::*;
use crate::analyze::report::Judged;
use serde_json::Value;

fn data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/data")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// A run directory of `events` lines and `result`, its scenario unreadable (defaults apply).
fn run_dir(events: &[String], result: &Value) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("events.jsonl"), events.join("\n") + "\n").unwrap();
    let mut r = result.clone();
    r["scenario"] = "/nonexistent/smoke.toml".into();
    std::fs::write(
        d.path().join("result.json"),
        serde_json::to_string(&r).unwrap(),
    )
    .unwrap();
    d
}

fn smoke() -> (Vec<String>, Value) {
    let events = data("smoke-events.jsonl")
        .lines()
        .map(String::from)
        .collect();
    (
        events,
        serde_json::from_str(&data("smoke-result.json")).unwrap(),
    )
}

fn opts() -> Options {
    Options::default()
}

#[test]
fn the_recorded_smoke_run_replays_to_its_own_pass() {
    let (events, result) = smoke();
    let d = run_dir(&events, &result);
    let r = analyze(d.path(), &opts()).unwrap();
    assert_eq!(r.verdict, Judged::Pass, "{}", r.text());
    assert!(r.recorded.as_ref().unwrap().agrees);
    assert!(r.phases.iter().all(|p| p.status == "pass"), "{}", r.text());
    assert!(
        r.notes.iter().any(|n| n.contains("could not be read")),
        "{:?}",
        r.notes
    );
}

/// The smoke run cut before bootkube completed, with the harness's record of bootkube's
/// timeout at the first tick past its deadline.
fn timed_out_in_bootkube() -> (Vec<String>, Value) {
    let (events, mut result) = smoke();
    let mut kept: Vec<String> = events
        .into_iter()
        .take_while(|l| !l.contains("bootkube.service complete"))
        .collect();
    // bootkube began at 26747 ms with 180 s (result.json's timeout_ms).
    let t = 26_747 + 180_000 + 400;
    kept.push(format!(
        r#"{{"time":"2026-11-30T09:46:28.000Z","t_ms":{t},"source":"harness","kind":"phase-ended","phase":"bootkube","status":"timeout","detail":"bootkube did not finish within 3m"}}"#
    ));
    result["verdict"] = "fail".into();
    result["failed_phase"] = "bootkube".into();
    (kept, result)
}

#[test]
fn a_deadline_is_passed_where_the_run_ticked_it_and_the_replay_agrees() {
    let (events, result) = timed_out_in_bootkube();
    let d = run_dir(&events, &result);
    let r = analyze(d.path(), &opts()).unwrap();
    assert_eq!(
        (r.verdict, r.failed_phase.as_deref()),
        (Judged::Fail, Some("bootkube")),
        "{}",
        r.text()
    );
    let bootkube = r.phases.iter().find(|p| p.name == "bootkube").unwrap();
    assert_eq!(bootkube.status, "timeout");
    assert!(
        bootkube
            .detail
            .starts_with("bootkube did not finish within 3m"),
        "{}",
        bootkube.detail
    );
    assert!(r.recorded.as_ref().unwrap().agrees, "{}", r.text());
}

#[test]
fn a_result_json_the_signals_do_not_bear_out_is_said() {
    let (events, mut result) = smoke();
    result["verdict"] = "fail".into();
    result["failed_phase"] = "cluster-ready".into();
    let d = run_dir(&events, &result);
    let r = analyze(d.path(), &opts()).unwrap();
    assert_eq!(r.verdict, Judged::Pass);
    assert!(!r.recorded.as_ref().unwrap().agrees);
    assert!(r.notes.iter().any(|n| n.contains("the replay disagrees with result.json: the replay says pass, the run said fail at cluster-ready")), "{:?}", r.notes);
    assert!(r.text().contains("DISAGREES"));
}

#[test]
fn a_decision_outside_the_signals_is_taken_from_the_runs_record() {
    // The installer refused the install-config: assets failed, with no signal that says so.
    let (events, mut result) = smoke();
    let mut kept: Vec<String> = events.into_iter().take(1).collect();
    kept.push(r#"{"time":"2026-11-30T09:43:02.000Z","t_ms":500,"source":"harness","kind":"phase-ended","phase":"assets","status":"fail","detail":"the installer rejected the install-config: bad CIDR"}"#.into());
    result["verdict"] = "fail".into();
    result["failed_phase"] = "assets".into();
    let d = run_dir(&kept, &result);
    let r = analyze(d.path(), &opts()).unwrap();
    assert_eq!(
        (r.verdict, r.failed_phase.as_deref()),
        (Judged::Fail, Some("assets")),
        "{}",
        r.text()
    );
    assert!(r.reason.contains("bad CIDR"), "{}", r.reason);
    assert!(r.recorded.as_ref().unwrap().agrees);
    // A harness error recorded so is the run's error.
    result["verdict"] = "error".into();
    let d = run_dir(&kept, &result);
    let r = analyze(d.path(), &opts()).unwrap();
    assert_eq!(r.verdict, Judged::Error);
}

#[test]
fn a_broken_record_is_bad_input_and_a_cut_last_line_is_a_note() {
    let (mut events, result) = smoke();
    events.insert(3, "{\"time\":\"x\",\"t_ms\":\"soon\"}".into());
    let d = run_dir(&events, &result);
    let e = analyze(d.path(), &opts()).unwrap_err().to_string();
    assert!(
        e.contains("events.jsonl: line 4: not a record of events.jsonl"),
        "{e}"
    );
    let (mut events, result) = smoke();
    events.truncate(40);
    events.push("{\"time\":\"2026-11-30T09:43:30.000Z\",\"t_ms\":300".into());
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("events.jsonl"), events.join("\n")).unwrap();
    let _ = result;
    let r = analyze(d.path(), &opts()).unwrap();
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("last line (line 41) is cut short")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes.iter().any(|n| n.contains("no usable result.json")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.verdict, Judged::NoVerdict);
}

#[test]
fn a_matrix_runs_scenario_is_its_permutation_and_an_unknown_one_is_said() {
    let matrix = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/disks.toml");
    let id = crate::scenario::matrix::load(&matrix).unwrap().permutations[1]
        .id
        .clone();
    let s = run_scenario(&matrix, &id).unwrap();
    assert_eq!(
        s.name, id,
        "the permutation's own scenario, named by its id"
    );
    let e = run_scenario(&matrix, "no.such.permutation").unwrap_err();
    assert!(
        e.contains("has no permutation \"no.such.permutation\""),
        "{e}"
    );
    let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    assert_eq!(run_scenario(&plain, "anything").unwrap().name, "smoke");
}
