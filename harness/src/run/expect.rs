//! Whether a run ended as its scenario's `[expect]` section says.

use crate::result::{RunResult, Verdict};
use crate::scenario::Scenario;

/// Whether a result is what the scenario's `[expect]` section says (a pass, without one).
pub fn check_expectation(s: &Scenario, r: &RunResult) -> Result<String, String> {
    let Some(e) = &s.expect else {
        return if r.verdict == Verdict::Pass {
            Ok("passed".into())
        } else {
            Err(format!(
                "{} at {}: {}",
                r.verdict.as_str(),
                r.failed_phase.as_deref().unwrap_or("-"),
                r.reason
            ))
        };
    };
    let verdict_ok = e.verdict == r.verdict.as_str();
    let phase_ok = e.failed_phase.is_none() || e.failed_phase == r.failed_phase;
    let reason_ok = e
        .reason_contains
        .as_ref()
        .is_none_or(|x| r.reason.contains(x.as_str()));
    // A warning is a badness line that did not fail the run, or an operator the `installer`
    // rule reported.
    let warning_ok = e.warning_contains.as_ref().is_none_or(|x| {
        r.badness
            .iter()
            .any(|b| (b.allowed_by.is_some() || b.warning.is_some()) && b.line.contains(x.as_str()))
            || r.operator_warnings.iter().any(|w| w.contains(x.as_str()))
    });
    let mut expected = format!(
        "{} at {} with a reason containing {:?}",
        e.verdict,
        e.failed_phase.as_deref().unwrap_or("-"),
        e.reason_contains.as_deref().unwrap_or("")
    );
    if let Some(w) = &e.warning_contains {
        expected.push_str(&format!(
            " and a warning (an allowed badness line or a reported operator) containing {w:?}"
        ));
    }
    if verdict_ok && phase_ok && reason_ok && warning_ok {
        Ok(format!("as expected: {expected}"))
    } else {
        Err(format!(
            "expected {expected}, got {} at {}: {}",
            r.verdict.as_str(),
            r.failed_phase.as_deref().unwrap_or("-"),
            r.reason
        ))
    }
}
