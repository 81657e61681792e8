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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::sample_pass;

    fn scenario(expect: &str) -> Scenario {
        let text = format!(
            "name = \"x\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n[install]\ninstallation_disk = {{ by = \"id\", disk = \"install\" }}\n[expect]\n{expect}\n"
        );
        crate::scenario::parse_str(std::path::Path::new("x.toml"), &text).unwrap()
    }

    #[test]
    fn a_warning_expected_is_met_by_an_operator_the_installer_rule_reported() {
        let s = scenario("verdict = \"pass\"\nwarning_contains = \"ingress\"");
        let mut r = sample_pass("p");
        let missing = check_expectation(&s, &r).unwrap_err();
        assert!(missing.contains("a reported operator"), "{missing}");
        r.operator_warnings = vec!["ingress: Available=True Degraded=True".into()];
        assert!(check_expectation(&s, &r).is_ok());
    }
}
