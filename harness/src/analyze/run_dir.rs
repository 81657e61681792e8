//! A run directory: its events.jsonl replayed through the machine as the run fed it, and
//! compared with its result.json.
//!
//! The machine is configured as the run's was: the scenario (the one given, else the one
//! result.json names) at the timeouts result.json records; without a readable scenario, those
//! timeouts and the profile's defaults. The run ticked its machine every second; a tick that
//! decided something (a deadline, the write stall, an emergency's cause) left the harness's
//! `phase-ended` record at its time, so the replay ticks there and nowhere else, and ends each
//! phase when the run did. What the run decided outside the signals (the installer refusing
//! the install-config, a harness error, an interruption) the replay takes from the harness's
//! own record of the phase's end.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::report::{EvidenceRead, Recorded, Report};
use super::{kind, AnalyzeError, Options};
use crate::flow::badness::{AllowList, Policy};
use crate::flow::event::{Event, Signal, Source};
use crate::flow::machine::{AdaptiveDeadline, Config, Machine, Verdict};
use crate::flow::phase::Phase;
use crate::result::{PhaseStatus, RunResult};

/// Replays the run directory `dir`.
pub fn analyze(dir: &Path, opts: &Options) -> Result<Report, AnalyzeError> {
    let events_path = dir.join("events.jsonl");
    let (events, mut notes) = read_events(&events_path, opts)?;
    let result = match RunResult::read(dir.join(crate::result::RESULT_FILE)) {
        Ok(r) => Some(r),
        Err(e) => {
            notes.push(format!("no usable result.json ({e}): the run did not finish recording, and only the replay speaks"));
            None
        }
    };
    let mut m = machine(result.as_ref(), &events, opts, &mut notes)?;
    start(&mut m, &events, result.as_ref());
    for ev in &events {
        if ev.source == Source::Harness && matches!(ev.signal, Signal::PhaseEnded { .. }) {
            m.tick(ev.t_ms);
        }
        m.on_event(ev);
    }
    if m.outcome().is_none() {
        adopt_recorded_end(&mut m, &events, result.as_ref(), &mut notes);
    }
    let started_at = events
        .first()
        .map(|e| e.time.clone())
        .filter(|t| !t.is_empty());
    let mut report = Report::of(&m, None, started_at);
    report.evidence.push(EvidenceRead {
        path: dir.display().to_string(),
        kind: kind::Kind::RunDir.describe().to_string(),
        read: format!(
            "events.jsonl: {} records{}",
            events.len(),
            if result.is_some() {
                "; result.json"
            } else {
                ""
            }
        ),
    });
    if let Some(r) = &result {
        let agrees = report.verdict == r.verdict.into() && report.failed_phase == r.failed_phase;
        if !agrees {
            notes.push(format!(
                "the replay disagrees with result.json: the replay says {}{}, the run said {}{}",
                report.verdict.as_str(),
                at(report.failed_phase.as_deref()),
                r.verdict,
                at(r.failed_phase.as_deref())
            ));
        }
        report.recorded = Some(Recorded {
            verdict: r.verdict.to_string(),
            failed_phase: r.failed_phase.clone(),
            reason: r.reason.clone(),
            agrees,
        });
    }
    report.notes = notes;
    Ok(report)
}

fn at(phase: Option<&str>) -> String {
    phase.map(|p| format!(" at {p}")).unwrap_or_default()
}

/// events.jsonl as typed events. A last line that does not read is a run killed mid-write
/// (said); any other is bad input naming its line.
fn read_events(path: &Path, opts: &Options) -> Result<(Vec<Event>, Vec<String>), AnalyzeError> {
    let (bytes, _) = kind::read_all(path, &opts.limits)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() > opts.limits.records {
        return Err(AnalyzeError::malformed(
            path,
            format!("more than {} records, the limit", opts.limits.records),
        ));
    }
    let mut events = Vec::with_capacity(lines.len());
    let mut notes = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(ev) => events.push(ev),
            Err(_) if i + 1 == lines.len() => notes.push(format!(
                "events.jsonl's last line (line {}) is cut short: the run was stopped while writing it",
                i + 1
            )),
            Err(e) => {
                return Err(AnalyzeError::malformed(
                    path,
                    format!("line {}: not a record of events.jsonl (a JSON object with time, t_ms, source, kind and the kind's fields): {e}", i + 1),
                ))
            }
        }
    }
    Ok((events, notes))
}

/// The machine the run had: its scenario's, at the timeouts it recorded.
fn machine(
    result: Option<&RunResult>,
    events: &[Event],
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<Machine, AnalyzeError> {
    let recorded = recorded_timeouts(result, events);
    let accel = match result.map(|r| r.accel.as_str()) {
        Some("tcg") => crate::hw::Accel::Tcg,
        _ => crate::hw::Accel::Kvm,
    };
    let scenario_path = opts
        .scenario
        .clone()
        .or_else(|| result.map(|r| r.scenario.clone().into()));
    if let Some(path) = scenario_path {
        let id = result.map_or("", |r| r.id.as_str());
        match run_scenario(&path, id) {
            Ok(s) => return Ok(from_scenario(&s, accel, &recorded, &path, result, notes)),
            Err(e) if opts.scenario.is_some() => return Err(AnalyzeError::unreadable(&path, e)),
            Err(e) => notes.push(format!(
                "the run's scenario could not be read ({e}): the replay has the run's timeouts but the profile's defaults for the rest (its allow-list and limits are not applied; give --scenario)"
            )),
        }
    }
    let timeouts: BTreeMap<Phase, Duration> = Phase::ALL
        .iter()
        .map(|p| {
            (
                *p,
                recorded
                    .get(p)
                    .copied()
                    .unwrap_or(crate::flow::phase::openshift_default_timeout(*p)),
            )
        })
        .collect();
    let adaptive_install = Some(AdaptiveDeadline::around(timeouts[&Phase::InstallToDisk]));
    let mut m = Machine::new(Config {
        timeouts,
        write_stall: crate::scenario::DEFAULT_DISK_WRITE_STALL,
        bootkube_max_restarts: None,
        adaptive_install,
    });
    m.allow_badness(AllowList::default());
    m.scope_badness(Policy {
        process_crashes_fatal: result.is_some_and(|r| r.profile == "fixture"),
        tcg: accel == crate::hw::Accel::Tcg,
        kernel_warnings_fatal: false,
    });
    Ok(m)
}

/// The scenario the run ran: the file itself, or (a matrix's run names its matrix file) the
/// permutation `id` of it, in the file's strategy or else in the full product.
fn run_scenario(path: &Path, id: &str) -> Result<crate::scenario::Scenario, String> {
    use crate::scenario::matrix::{self, Strategy};
    if !matrix::is_matrix_file(path) {
        return crate::scenario::load(path).map_err(|e| e.to_string());
    }
    let m = matrix::load(path).map_err(|e| e.to_string())?;
    if let Some(p) = m.permutation(id) {
        return Ok(p.scenario.clone());
    }
    let full = m.with_strategy(Strategy::Full).map_err(|e| e.to_string())?;
    full.permutation(id)
        .map(|p| p.scenario.clone())
        .ok_or_else(|| {
            format!(
                "{}: matrix {} has no permutation {id:?}",
                path.display(),
                m.name
            )
        })
}

/// The scenario's machine, scaled to the timeouts the run recorded (its `--timeout-scale`).
fn from_scenario(
    s: &crate::scenario::Scenario,
    accel: crate::hw::Accel,
    recorded: &BTreeMap<Phase, Duration>,
    path: &Path,
    result: Option<&RunResult>,
    notes: &mut Vec<String>,
) -> Machine {
    let nominal = crate::run::phase_timeouts(s, accel, 1.0);
    let scale = match (
        recorded.get(&Phase::Bootkube),
        nominal.get(&Phase::Bootkube),
    ) {
        (Some(r), Some(n)) if !n.is_zero() => r.as_secs_f64() / n.as_secs_f64(),
        _ => 1.0,
    };
    let scaled = crate::run::phase_timeouts(s, accel, scale);
    let differs = recorded.iter().any(|(p, r)| {
        scaled
            .get(p)
            .is_some_and(|x| x.as_secs().abs_diff(r.as_secs()) > 1)
    });
    if differs {
        notes.push(format!("scenario {}'s timeouts differ from the ones the run recorded: it changed since the run?", path.display()));
    }
    if result.is_some_and(|r| !r.overrides.is_empty()) {
        notes.push(format!(
            "the run's --set overrides ({}) are not applied to scenario {}",
            result.map(|r| r.overrides.join(", ")).unwrap_or_default(),
            path.display()
        ));
    }
    let state = crate::run::state::StateMode::Fresh;
    let mut m = crate::run::plan::machine_for(s, accel, scale, &state);
    if let Some(p) = stopped_after(result) {
        m.stop_after(p);
    }
    m
}

/// The timeouts the run recorded, by phase: each phase's start in events.jsonl, and
/// result.json's for the phases that never started.
fn recorded_timeouts(result: Option<&RunResult>, events: &[Event]) -> BTreeMap<Phase, Duration> {
    let mut out: BTreeMap<Phase, Duration> = result
        .map(|r| {
            r.phases
                .iter()
                .filter_map(|p| {
                    Some((
                        Phase::from_name(&p.name)?,
                        Duration::from_millis(p.timeout_ms?),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    for e in events {
        if let Signal::PhaseStarted { phase, timeout_s } = &e.signal {
            if let Some(p) = Phase::from_name(phase) {
                out.insert(p, Duration::from_secs(*timeout_s));
            }
        }
    }
    out
}

/// A passed run that ended before the last phase (it saved its state there).
fn stopped_after(result: Option<&RunResult>) -> Option<Phase> {
    let r = result.filter(|r| r.verdict == Verdict::Pass)?;
    let last = r
        .phases
        .iter()
        .rev()
        .find(|p| p.status == PhaseStatus::Pass)?;
    let p = Phase::from_name(&last.name)?;
    (p != Phase::BootstrapCleanup).then_some(p)
}

/// Starts the machine where the run did: at its first phase, or where a resumed run began.
fn start(m: &mut Machine, events: &[Event], _result: Option<&RunResult>) {
    let first = events.iter().find_map(|e| match &e.signal {
        Signal::PhaseStarted { phase, .. } => Some((Phase::from_name(phase), e.t_ms)),
        _ => None,
    });
    match first {
        Some((Some(p), t)) if p != Phase::Assets => {
            m.start_at(p, t, "ran in the run whose saved state this run resumed");
        }
        _ => {
            m.start(0);
        }
    }
}

/// The run decided outside the signals (its installer refused the assets, a harness error,
/// an interruption): its own record of the phase's end, and result.json's verdict, decide.
fn adopt_recorded_end(
    m: &mut Machine,
    events: &[Event],
    result: Option<&RunResult>,
    notes: &mut Vec<String>,
) {
    let Some(cur) = m.current() else { return };
    let recorded = events.iter().rev().find_map(|e| match &e.signal {
        Signal::PhaseEnded {
            phase,
            status,
            detail,
        } if *phase == cur.name() && status != "pass" => {
            Some((e.t_ms, status.clone(), detail.clone()))
        }
        _ => None,
    });
    let Some((t, status, detail)) = recorded else {
        return;
    };
    notes.push(format!(
        "the replay does not decide {cur} from the signals: the run recorded it ended {status} ({detail}); that record decides (a decision outside the signals: the installer, the harness, an interruption; or a rule of the run the replay does not know)"
    ));
    if result.is_some_and(|r| r.verdict == Verdict::Error) {
        m.error(t, detail);
    } else {
        m.fail_now(t, detail);
    }
}

#[cfg(test)]
mod tests;
