//! What analyze says: the phases and the verdict as a run would have them, the installer's own
//! conclusions of the service records, what the evidence was, and, for a run directory, whether
//! the replay agrees with the run's result.json. Text for people, `--json` for tools
//! (schema `sno-harness/analyze/v1`).

use serde::Serialize;

use super::records::{Conclusion, ServiceAnalysis};
use crate::flow::machine::{Machine, Status, Verdict};
use crate::flow::phase::Phase;

pub const SCHEMA: &str = "sno-harness/analyze/v1";

/// The verdict of the evidence: a run's three, or none where the evidence stops first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Judged {
    Pass,
    Fail,
    Error,
    /// The evidence ends before any verdict: not a pass.
    NoVerdict,
}

impl Judged {
    pub fn as_str(self) -> &'static str {
        match self {
            Judged::Pass => "pass",
            Judged::Fail => "fail",
            Judged::Error => "error",
            Judged::NoVerdict => "no-verdict",
        }
    }
}

impl From<Verdict> for Judged {
    fn from(v: Verdict) -> Judged {
        match v {
            Verdict::Pass => Judged::Pass,
            Verdict::Fail => Judged::Fail,
            Verdict::Error => Judged::Error,
        }
    }
}

/// One PATH and what was read of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct EvidenceRead {
    pub path: String,
    pub kind: String,
    pub read: String,
}

/// One phase as the evidence shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PhaseReport {
    pub name: String,
    /// pass, fail, timeout, skipped, not-reached (after a verdict), no-evidence (the evidence
    /// ends first).
    pub status: String,
    /// Milliseconds from the evidence's start.
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub detail: String,
}

/// A run directory's own result.json, and whether the replay agrees.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Recorded {
    pub verdict: String,
    pub failed_phase: Option<String>,
    pub reason: String,
    pub agrees: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub evidence: Vec<EvidenceRead>,
    pub verdict: Judged,
    pub failed_phase: Option<String>,
    pub reason: String,
    /// When the evidence starts (RFC 3339), the phases' times count from it.
    pub started_at: Option<String>,
    pub phases: Vec<PhaseReport>,
    /// The service records found, each as the installer's analysis reads it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceAnalysis>,
    /// What the installer's analysis (pkg/gather/service/analyze.go) concludes of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub installer_analysis: Vec<Conclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Recorded>,
    /// The last signals before the end, oldest first, as a run's result.json has them.
    pub last_signals: Vec<String>,
    /// What the evidence did not show and what was inferred from it.
    pub notes: Vec<String>,
}

/// The verdict when it is not the machine's own: where the evidence shows a failure the
/// machine reaches only later (a failed post-reboot unit fails bootstrap-cleanup), or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub verdict: Judged,
    pub failed_phase: Option<Phase>,
    pub reason: String,
}

impl Report {
    /// The report of a replayed machine; `ending` when its outcome is not the verdict.
    pub fn of(machine: &Machine, ending: Option<Ending>, started_at: Option<String>) -> Report {
        let ending = ending.unwrap_or_else(|| match machine.outcome() {
            Some(o) => Ending {
                verdict: o.verdict.into(),
                failed_phase: o.failed_phase,
                reason: o.reason.clone(),
            },
            None => no_verdict(machine),
        });
        let phases = phases(machine, &ending);
        Report {
            schema: SCHEMA,
            evidence: Vec::new(),
            verdict: ending.verdict,
            failed_phase: ending.failed_phase.map(|p| p.name().to_string()),
            reason: ending.reason,
            started_at,
            phases,
            services: Vec::new(),
            installer_analysis: Vec::new(),
            recorded: None,
            last_signals: machine
                .last_signals()
                .map(|(t, source, s)| {
                    format!("+{:.1} s {}: {s}", *t as f64 / 1000.0, source.name())
                })
                .collect(),
            notes: Vec::new(),
        }
    }

    /// The report for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for e in &self.evidence {
            out += &format!("evidence: {} ({}): {}\n", e.path, e.kind, e.read);
        }
        if let Some(t) = &self.started_at {
            out += &format!("the evidence starts at {t}; times count from there\n");
        }
        for p in &self.phases {
            let span = match (p.start_ms, p.end_ms) {
                (Some(s), Some(e)) => format!(
                    " +{:.1} s .. +{:.1} s",
                    s as f64 / 1000.0,
                    e as f64 / 1000.0
                ),
                (Some(s), None) => format!(" from +{:.1} s", s as f64 / 1000.0),
                _ => String::new(),
            };
            let detail = if p.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", p.detail)
            };
            out += &format!("phase {:<19} {:<11}{span}{detail}\n", p.name, p.status);
        }
        for c in &self.installer_analysis {
            out += &format!("installer analysis ({}): {}\n", c.level, c.message);
        }
        for n in &self.notes {
            out += &format!("note: {n}\n");
        }
        if let Some(r) = &self.recorded {
            let phase = r
                .failed_phase
                .as_deref()
                .map(|p| format!(" at {p}"))
                .unwrap_or_default();
            out += &format!(
                "result.json: {}{phase}; the replay {}\n",
                r.verdict,
                if r.agrees { "agrees" } else { "DISAGREES" }
            );
        }
        let phase = self
            .failed_phase
            .as_deref()
            .map(|p| format!(" at {p}"))
            .unwrap_or_default();
        let reason = if self.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", self.reason)
        };
        out += &format!("verdict {}{phase}{reason}\n", self.verdict.as_str());
        out
    }
}

/// No verdict: the phase that was running when the evidence ended, and its last evidence.
fn no_verdict(machine: &Machine) -> Ending {
    let last = machine
        .last_signals()
        .last()
        .map(|(_, _, s)| format!("; the last evidence: {s}"))
        .unwrap_or_default();
    let reason = match machine.current() {
        Some(p) => format!(
            "the evidence ends while {p} runs: no evidence of its end or of the phases after it{last}"
        ),
        None => format!("the evidence shows no phase's end{last}"),
    };
    Ending {
        verdict: Judged::NoVerdict,
        failed_phase: None,
        reason,
    }
}

/// Each phase's status as the machine left it, with the ending's failed phase, and `no
/// evidence` for what the evidence does not reach.
fn phases(machine: &Machine, ending: &Ending) -> Vec<PhaseReport> {
    let decided = ending.verdict != Judged::NoVerdict;
    Phase::ALL
        .iter()
        .map(|p| {
            let st = machine.phase(*p);
            let (status, detail) = match st.status {
                _ if ending.failed_phase == Some(*p) && machine.outcome().is_none() => {
                    ("fail", ending.reason.clone())
                }
                Status::Pass | Status::Fail | Status::Timeout | Status::Skipped => {
                    (st.status.as_str(), st.detail.clone())
                }
                Status::Running => (
                    "no-evidence",
                    "it began, and the evidence ends before it ended".to_string(),
                ),
                Status::Pending if decided && ending.failed_phase.is_some_and(|f| *p < f) => (
                    "no-evidence",
                    "the evidence skips it: the failure after it is seen without it".to_string(),
                ),
                Status::Pending if decided => ("not-reached", String::new()),
                Status::Pending => ("no-evidence", String::new()),
            };
            PhaseReport {
                name: p.name().to_string(),
                status: status.to_string(),
                start_ms: st.start_ms,
                end_ms: st.end_ms,
                detail,
            }
        })
        .collect()
}
