//! Choosing the accelerator: KVM only when it is proven to work, else TCG, always with the
//! reason.

pub mod trial;

use std::fs::OpenOptions;
use std::sync::OnceLock;
use std::time::Duration;

pub use crate::hw::accel::{Accel, AccelChoice};

/// The accelerator to use and why, in words for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelDecision {
    pub accel: Accel,
    pub reason: String,
}

#[derive(Debug, thiserror::Error)]
#[error("KVM was requested but cannot be used: {0}")]
pub struct KvmUnusable(pub String);

/// Why KVM cannot be used here: the evidence, in the order the checks run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoKvm {
    #[error("the CPU flags have neither vmx nor svm: no hardware virtualisation, or nested virtualisation is off")]
    NoVirtualisation,
    #[error("/dev/kvm: {0}")]
    DevKvm(String),
    /// The trial guest failed: what it said.
    #[error("trial guest under -accel kvm: {0}")]
    Trial(String),
}

/// Decides on the accelerator. `auto` takes KVM only after proving it works: the CPU advertises
/// hardware virtualisation, /dev/kvm opens read-write, and a trial guest (`trial`) runs under
/// `-accel kvm` with the real VMs' CPU model. A nested host can pass the first two and still
/// hang or abort its guests, hence the trial. The verdict is computed once per process.
pub fn decide(choice: AccelChoice) -> Result<AccelDecision, KvmUnusable> {
    if choice == AccelChoice::Tcg {
        // Nothing to prove: do not spend a trial on it.
        return decide_from(choice, &Ok(Duration::ZERO));
    }
    decide_from(choice, kvm_verdict())
}

/// The decision given the KVM verdict (`Ok` = the trial's duration, `Err` = the evidence).
fn decide_from(
    choice: AccelChoice,
    kvm: &Result<Duration, NoKvm>,
) -> Result<AccelDecision, KvmUnusable> {
    match (choice, kvm) {
        (AccelChoice::Tcg, _) => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: "TCG requested".into(),
        }),
        (AccelChoice::Kvm | AccelChoice::Auto, Ok(took)) => Ok(AccelDecision {
            accel: Accel::Kvm,
            reason: format!(
                "KVM usable: vmx/svm present, /dev/kvm opens, a trial guest ran under -accel kvm \
                 in {:.2} s",
                took.as_secs_f64()
            ),
        }),
        (AccelChoice::Kvm, Err(why)) => Err(KvmUnusable(why.to_string())),
        (AccelChoice::Auto, Err(why)) => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: format!(
                "KVM unusable: {}; falling back to TCG, expect slow guests",
                without_parentheses(&why.to_string())
            ),
        }),
    }
}

/// The evidence as the reason quotes it: callers show the reason in parentheses, so an OS
/// error's "(os error 13)" becomes ", os error 13". Text QEMU printed stays as it was, quoted.
fn without_parentheses(why: &str) -> String {
    let mut out = String::with_capacity(why.len());
    let mut rest = why;
    while let Some(at) = rest.find(" (os error ") {
        let Some(close) = rest[at..].find(')') else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(", ");
        out.push_str(&rest[at + 2..at + close]);
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether KVM works, proven once per process: several VMs in one run share the verdict
/// instead of each paying for (and logging) a trial.
fn kvm_verdict() -> &'static Result<Duration, NoKvm> {
    static VERDICT: OnceLock<Result<Duration, NoKvm>> = OnceLock::new();
    VERDICT.get_or_init(|| {
        let verdict = probe_kvm();
        // Debug only: every caller logs the decision's reason itself (run, doctor, plan).
        tracing::debug!(?verdict, "KVM verdict");
        verdict
    })
}

/// The cheap checks first (they explain the common failures best), then the trial.
fn probe_kvm() -> Result<Duration, NoKvm> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpu_has_virtualisation(&cpuinfo)?;
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map_err(|e| NoKvm::DevKvm(e.to_string()))?;
    trial::trial_boot(Accel::Kvm).map_err(|e| NoKvm::Trial(e.to_string()))
}

fn cpu_has_virtualisation(cpuinfo: &str) -> Result<(), NoKvm> {
    let has = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if has {
        Ok(())
    } else {
        Err(NoKvm::NoVirtualisation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_flags_decide_whether_kvm_can_work() {
        assert!(cpu_has_virtualisation("flags\t\t: fpu vme vmx sse\n").is_ok());
        assert!(cpu_has_virtualisation("flags\t\t: fpu svm\n").is_ok());
        let err = cpu_has_virtualisation("flags\t\t: fpu sse hypervisor\n").unwrap_err();
        assert!(err.to_string().contains("vmx"), "{err}");
    }

    #[test]
    fn a_passed_trial_means_kvm_for_auto_and_kvm() {
        let ok = Ok(Duration::from_millis(60));
        for choice in [AccelChoice::Auto, AccelChoice::Kvm] {
            let d = decide_from(choice, &ok).unwrap();
            assert_eq!(d.accel, Accel::Kvm);
            assert!(d.reason.contains("trial guest ran"), "{}", d.reason);
            assert!(d.reason.contains("0.06 s"), "{}", d.reason);
        }
    }

    #[test]
    fn a_failed_trial_means_tcg_for_auto_with_the_evidence() {
        let failed = Err(NoKvm::Trial(
            "KVM internal error; stderr: \"KVM internal error. Suberror: 1\"".to_string(),
        ));
        let d = decide_from(AccelChoice::Auto, &failed).unwrap();
        assert_eq!(d.accel, Accel::Tcg);
        assert_eq!(
            d.reason,
            "KVM unusable: trial guest under -accel kvm: KVM internal error; stderr: \
             \"KVM internal error. Suberror: 1\"; falling back to TCG, expect slow guests"
        );
    }

    #[test]
    fn a_failed_trial_is_an_error_when_kvm_is_required() {
        let failed = Err(NoKvm::Trial("no exit within 10s, killed".to_string()));
        let e = decide_from(AccelChoice::Kvm, &failed).unwrap_err();
        assert!(e.to_string().contains("no exit within 10s"), "{e}");
    }

    /// Callers show the reason in parentheses ("accelerator tcg (...)"), so it has none of its
    /// own: not the evidence's, not an OS error's "(os error 13)", not a signal's name.
    #[test]
    fn a_reason_reads_without_parentheses() {
        use trial::{Ended, EndedText, Stderr, TrialError};
        let evidence = [
            NoKvm::NoVirtualisation,
            NoKvm::DevKvm(std::io::Error::from_raw_os_error(13).to_string()),
            NoKvm::Trial(
                TrialError::WrongExit(EndedText(Ended::Signalled(6)), Stderr(None)).to_string(),
            ),
            NoKvm::Trial(TrialError::Spawn(std::io::Error::from_raw_os_error(2)).to_string()),
        ];
        let mut reasons: Vec<String> = evidence
            .into_iter()
            .map(|why| decide_from(AccelChoice::Auto, &Err(why)).unwrap().reason)
            .collect();
        reasons.push(
            decide_from(AccelChoice::Auto, &Ok(Duration::from_millis(60)))
                .unwrap()
                .reason,
        );
        for reason in reasons {
            assert!(!reason.contains(['(', ')']), "{reason}");
        }
    }

    #[test]
    fn tcg_requested_ignores_kvm() {
        let d = decide_from(AccelChoice::Tcg, &Err(NoKvm::NoVirtualisation)).unwrap();
        assert_eq!(d.accel, Accel::Tcg);
        assert_eq!(d.reason, "TCG requested");
    }

    #[test]
    fn tcg_is_always_available_and_says_why() {
        let d = decide(AccelChoice::Tcg).unwrap();
        assert_eq!(d.accel, Accel::Tcg);
        assert!(!d.reason.is_empty());
    }
}
