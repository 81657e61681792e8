//! The accelerator trial against a real QEMU. The ROM is proven under TCG, which works on every
//! host with QEMU, so these tests fail if the ROM, the exit-status check or the timeout breaks;
//! then the decision is checked against what KVM really does on this host.

use std::time::{Duration, Instant};

use sno_harness::vm::accel::trial::{self, TrialError, EXPECTED_STATUS, RESET_VECTOR};
use sno_harness::vm::accel::{decide, Accel, AccelChoice};

#[test]
fn accel_trial_rom_exits_with_the_expected_status_under_tcg() {
    let took = trial::trial_boot(Accel::Tcg)
        .unwrap_or_else(|e| panic!("the trial ROM must pass under TCG: {e}"));
    eprintln!("TCG trial: {took:?}");
    assert!(took < trial::TRIAL_TIMEOUT);
}

#[test]
fn accel_trial_notices_a_guest_that_signals_the_wrong_byte() {
    // mov al, 0x10 instead of 0x15: the guest runs, but QEMU exits with (0x20 << 1) | 1.
    let mut rom = trial::rom_image();
    assert_eq!(rom[RESET_VECTOR], 0xB0, "mov al, imm8");
    rom[RESET_VECTOR + 1] = 0x10;
    let err = trial::trial_boot_with(Accel::Tcg, &rom, trial::TRIAL_TIMEOUT).unwrap_err();
    assert!(matches!(err, TrialError::WrongExit(..)), "{err}");
    assert!(err.to_string().contains("exited with status 65"), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("instead of exiting with status {EXPECTED_STATUS}")),
        "{err}"
    );
}

#[test]
fn accel_trial_kills_a_guest_that_never_signals() {
    // All hlt: the vCPU stops at the reset vector and QEMU would wait forever.
    let rom = vec![0xF4; trial::ROM_SIZE];
    let limit = Duration::from_secs(1);
    let started = Instant::now();
    let err = trial::trial_boot_with(Accel::Tcg, &rom, limit).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, TrialError::Timeout(..)), "{err}");
    assert!(
        err.to_string().starts_with("no exit within 1s, killed"),
        "{err}"
    );
    // Killed promptly at the limit, not left to run.
    assert!(
        took >= limit && took < limit + Duration::from_secs(3),
        "{took:?}"
    );
}

/// What KVM does here, measured directly (the cheap checks may stop `decide` before its trial).
/// A host whose CPU flags lack vmx/svm cannot run KVM guests, whatever /dev/kvm says. On some
/// such hosts the trial aborts ("failed to set MSR"); on others a paravirtual KVM (PVM: the
/// kernel logs `kvm-pvm: loaded`) runs the trial's real-mode ROM and then hangs a Linux kernel
/// right after "Probing EDD", both measured on this kind of machine. So the trial alone never
/// decides: a failed trial must say why, and a passed one must still not make `decide` take
/// KVM without vmx/svm.
#[test]
fn accel_trial_under_kvm_fails_with_evidence_on_a_host_without_vmx_or_svm() {
    let started = Instant::now();
    let outcome = trial::trial_boot(Accel::Kvm);
    eprintln!("KVM trial: {outcome:?} after {:?}", started.elapsed());
    if cpu_has_virtualisation() {
        eprintln!("this host has vmx/svm: nothing to assert about a broken KVM");
        return;
    }
    match outcome {
        Err(err) => {
            let text = err.to_string();
            assert!(!text.is_empty());
            if std::path::Path::new("/dev/kvm").exists() {
                // QEMU got as far as starting; its first stderr line must be in the reason.
                assert!(text.contains("; stderr: \""), "{text}");
            }
        }
        Ok(_) => {
            let d = decide(AccelChoice::Auto).expect("auto always decides");
            assert_eq!(d.accel, Accel::Tcg, "{}", d.reason);
            assert!(d.reason.contains("neither vmx nor svm"), "{}", d.reason);
            assert!(decide(AccelChoice::Kvm).is_err());
        }
    }
}

#[test]
fn accel_auto_falls_back_to_tcg_here_and_says_why() {
    let d = decide(AccelChoice::Auto).expect("auto always decides");
    eprintln!("auto: {:?} ({})", d.accel, d.reason);
    let kvm_trial = trial::trial_boot(Accel::Kvm);
    if cpu_has_virtualisation() && kvm_trial.is_ok() {
        // A host where KVM works: auto must take it.
        assert_eq!(d.accel, Accel::Kvm, "{}", d.reason);
        return;
    }
    assert_eq!(d.accel, Accel::Tcg, "{}", d.reason);
    assert!(d.reason.starts_with("KVM unusable: "), "{}", d.reason);
    assert!(
        d.reason
            .ends_with("; falling back to TCG, expect slow guests"),
        "{}",
        d.reason
    );
    if !cpu_has_virtualisation() {
        assert!(d.reason.contains("neither vmx nor svm"), "{}", d.reason);
    } else {
        assert!(
            d.reason.contains("trial guest under -accel kvm"),
            "{}",
            d.reason
        );
    }
    // Cached: the second call returns the same verdict without another trial.
    let again = Instant::now();
    assert_eq!(decide(AccelChoice::Auto).unwrap(), d);
    assert!(again.elapsed() < Duration::from_millis(50));
    // Requiring KVM is an error with the same evidence.
    let e = decide(AccelChoice::Kvm).unwrap_err();
    assert!(d.reason.contains(&e.0), "{} vs {}", d.reason, e.0);
}

fn cpu_has_virtualisation() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"))
}
