//! Choosing the accelerator: KVM only when it can work, else TCG, always with the reason.

use std::fs::OpenOptions;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

/// What a scenario asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    #[default]
    Auto,
    Kvm,
    Tcg,
}

/// The accelerator to use and why, in words for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelDecision {
    pub accel: Accel,
    pub reason: String,
}

#[derive(Debug, thiserror::Error)]
#[error("KVM was requested but cannot be used: {0}")]
pub struct KvmUnusable(pub String);

/// Decides on the accelerator. `auto` takes KVM only when the CPU advertises hardware
/// virtualisation and /dev/kvm opens read-write; a nested setup without `vmx`/`svm` has a
/// /dev/kvm whose guests hang, which is why the CPU flags are checked too.
pub fn decide(choice: AccelChoice) -> Result<AccelDecision, KvmUnusable> {
    let probe = probe_kvm();
    match (choice, probe) {
        (AccelChoice::Tcg, _) => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: "TCG requested".into(),
        }),
        (AccelChoice::Kvm, Ok(())) | (AccelChoice::Auto, Ok(())) => Ok(AccelDecision {
            accel: Accel::Kvm,
            reason: "KVM usable (vmx/svm present, /dev/kvm opens)".into(),
        }),
        (AccelChoice::Kvm, Err(why)) => Err(KvmUnusable(why)),
        (AccelChoice::Auto, Err(why)) => Ok(AccelDecision {
            accel: Accel::Tcg,
            reason: format!("KVM unusable ({why}); falling back to TCG, expect slow guests"),
        }),
    }
}

fn probe_kvm() -> Result<(), String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpu_has_virtualisation(&cpuinfo)?;
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map_err(|e| format!("/dev/kvm: {e}"))?;
    Ok(())
}

fn cpu_has_virtualisation(cpuinfo: &str) -> Result<(), String> {
    let has = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if has {
        Ok(())
    } else {
        Err("the CPU flags have neither vmx nor svm (nested virtualisation is off)".into())
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
        assert!(err.contains("vmx"), "{err}");
    }

    #[test]
    fn tcg_is_always_available_and_says_why() {
        let d = decide(AccelChoice::Tcg).unwrap();
        assert_eq!(d.accel, Accel::Tcg);
        assert!(!d.reason.is_empty());
    }
}
