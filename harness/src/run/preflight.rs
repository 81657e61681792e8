//! Before a run or a matrix creates anything: does this host have the programs and files the
//! chosen backend and the scenarios need? A missing one is a host that is not ready (exit 3, the
//! CLI contract), said with what to install, and nothing is created. A tool that goes missing
//! after this check still fails the run itself, as a harness error with the same advice.

use crate::hw::{Firmware, OVMF_CODE, OVMF_VARS};
use crate::scenario::{GuestNetwork, Scenario};
use crate::vm::qemu::QEMU_BINARY;
use crate::vm::running::Backend;
use std::path::Path;

/// What the host lacks, one entry per missing thing, each saying how to get it.
#[derive(Debug, thiserror::Error)]
#[error("the host is not ready: {}; `sno-harness doctor` checks the whole host", .missing.join("; "))]
pub struct HostNotReady {
    pub missing: Vec<String>,
}

/// A scenario the backend cannot run as written (bad input, exit 2): `vm.network = "nat"`
/// is a libvirt network.
pub fn backend_fits(scenarios: &[&Scenario], backend: &Backend) -> Result<(), String> {
    match (backend, scenarios.iter().find(|s| s.vm.network == GuestNetwork::Nat)) {
        (Backend::Qemu, Some(s)) => Err(format!(
            "{}: vm.network = \"nat\" is a libvirt network of the run's own: run it with --backend libvirt (the QEMU backend has user-mode networking only)",
            s.path.display()
        )),
        _ => Ok(()),
    }
}

/// Checks what `scenarios` need on `backend`. Programs are looked up on PATH, as the run will.
pub fn check(scenarios: &[&Scenario], backend: &Backend) -> Result<(), HostNotReady> {
    check_with(scenarios, backend, &|tool| {
        crate::util::which(tool).is_some()
    })
}

fn check_with(
    scenarios: &[&Scenario],
    backend: &Backend,
    on_path: &dyn Fn(&str) -> bool,
) -> Result<(), HostNotReady> {
    let mut missing = Vec::new();
    let mut need = |tool: &str, install: &str| {
        if !on_path(tool) {
            missing.push(format!("{tool} is not on PATH ({install})"));
        }
    };
    // The live ISO gets its Ignition through coreos-installer, and the disks are made by
    // qemu-img, on either backend.
    need(
        "coreos-installer",
        "cargo install coreos-installer --locked, or ci/install-host-deps.sh",
    );
    need(
        "qemu-img",
        "Debian and Ubuntu: apt-get install qemu-utils; Fedora: dnf install qemu-img",
    );
    match backend {
        // libvirtd starts QEMU from its own installation; a connection failure is reported by
        // the run with libvirt's own words.
        Backend::Libvirt { .. } => {}
        Backend::Qemu => need(
            QEMU_BINARY,
            "QEMU is not installed: Debian and Ubuntu: apt-get install qemu-system-x86; \
             Fedora: dnf install qemu-system-x86-core",
        ),
    }
    if scenarios.iter().any(|s| s.vm.firmware == Firmware::Uefi) {
        for file in [OVMF_CODE, OVMF_VARS] {
            if !Path::new(file).is_file() {
                missing.push(format!(
                    "{file} is missing, and firmware = \"uefi\" needs it (apt-get install ovmf)"
                ));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(HostNotReady { missing })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smoke() -> Scenario {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
        crate::scenario::load(&path).unwrap()
    }

    #[test]
    fn a_host_with_every_tool_is_ready_on_both_backends() {
        let s = smoke();
        let all = |_: &str| true;
        assert!(check_with(&[&s], &Backend::Qemu, &all).is_ok());
        let libvirt = Backend::Libvirt {
            uri: "qemu:///system".into(),
        };
        assert!(check_with(&[&s], &libvirt, &all).is_ok());
    }

    #[test]
    fn each_missing_tool_is_named_with_how_to_install_it() {
        let s = smoke();
        let none = |_: &str| false;
        let e = check_with(&[&s], &Backend::Qemu, &none).unwrap_err();
        let text = e.to_string();
        for said in [
            "coreos-installer is not on PATH (cargo install coreos-installer",
            "qemu-img is not on PATH (Debian and Ubuntu: apt-get install qemu-utils",
            "qemu-system-x86_64 is not on PATH (QEMU is not installed",
            "sno-harness doctor",
        ] {
            assert!(text.contains(said), "{said:?} not in {text}");
        }
        assert_eq!(e.missing.len(), 3);
    }

    #[test]
    fn a_nat_network_is_for_the_libvirt_backend_only() {
        let user = smoke();
        let mut nat = smoke();
        nat.vm.network = GuestNetwork::Nat;
        assert!(backend_fits(&[&user], &Backend::Qemu).is_ok());
        let e = backend_fits(&[&user, &nat], &Backend::Qemu).unwrap_err();
        assert!(
            e.contains("smoke.toml") && e.contains("--backend libvirt"),
            "{e}"
        );
        let libvirt = Backend::Libvirt {
            uri: "qemu:///system".into(),
        };
        assert!(backend_fits(&[&user, &nat], &libvirt).is_ok());
    }

    #[test]
    fn the_libvirt_backend_does_not_need_qemu_on_our_path() {
        let s = smoke();
        let no_qemu = |t: &str| t != QEMU_BINARY;
        let libvirt = Backend::Libvirt {
            uri: "qemu:///system".into(),
        };
        assert!(check_with(&[&s], &libvirt, &no_qemu).is_ok());
        let e = check_with(&[&s], &Backend::Qemu, &no_qemu).unwrap_err();
        assert_eq!(e.missing.len(), 1, "{e}");
    }
}
