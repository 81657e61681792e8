//! Before a run or a matrix creates anything: does this host have what the chosen backend and
//! the scenarios need? Programs, firmware, the installer and pull secret of the openshift
//! profile, memory and CPUs for the VM, the accelerator, and a libvirtd that answers. A missing
//! one is a host that is not ready (exit 3, the CLI contract), said with what to do, and nothing
//! is created. `doctor SCENARIO` prints the same findings. A tool that goes missing after this
//! check still fails the run itself, as a harness error with the same advice.

mod probe;

use crate::hw::host_programs;
use crate::hw::Firmware;
use crate::scenario::{GuestNetwork, Scenario};
use crate::vm::backend::Capabilities;
use crate::vm::Backend;
use std::path::{Path, PathBuf};

pub use probe::{NotExecutable, Probe};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    /// The run can go on, but should know this (a real install under TCG).
    Warn,
    /// The run cannot start.
    Missing,
}

/// One check: what was looked at, how it came out, and in words (with what to do when not ok).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    pub check: String,
    pub level: Level,
    pub detail: String,
}

impl Finding {
    pub fn new(check: &str, level: Level, detail: impl Into<String>) -> Self {
        Finding {
            check: check.into(),
            level,
            detail: detail.into(),
        }
    }
}

/// What the host lacks, one entry per missing thing, each saying how to get it.
#[derive(Debug, thiserror::Error)]
#[error("the host is not ready: {}; `sno-harness doctor SCENARIO` checks the whole host", .missing.join("; "))]
pub struct HostNotReady {
    pub missing: Vec<String>,
}

/// A scenario the backend cannot run as written (bad input, exit 2), named by its file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendMismatch {
    /// `vm.network = "nat"` is a libvirt network.
    #[error("{}: vm.network = \"nat\" is a libvirt network of the run's own: run it with --backend libvirt (the QEMU backend has user-mode networking only)", .scenario.display())]
    NatNeedsLibvirt { scenario: PathBuf },
    #[error("{}: boot.source = {boot_source:?} with vm.network = \"nat\" is not supported on a remote libvirt host: the guest fetches its root filesystem from the harness through an SSH forward on that host's loopback, which its NAT network does not reach; use vm.network = \"user\" there, or run it on this host", .scenario.display())]
    FetchOverRemoteNat {
        scenario: PathBuf,
        boot_source: &'static str,
    },
    /// `[network] bond` bonds the VM's two NICs.
    #[error("{}: [network] bond needs a VM with two NICs, which the {backend} backend cannot give; remove the bond, or choose another --backend", .scenario.display())]
    BondNeedsTwoNics {
        scenario: PathBuf,
        backend: &'static str,
    },
}

/// Whether the backend can run every scenario as written.
pub fn backend_fits(scenarios: &[&Scenario], backend: &Backend) -> Result<(), BackendMismatch> {
    fits(scenarios, &backend.can(), backend.name())
}

/// Whether a backend that can do `can` (named `backend` in the refusal) runs every scenario.
fn fits(
    scenarios: &[&Scenario],
    can: &Capabilities,
    backend: &'static str,
) -> Result<(), BackendMismatch> {
    if let (false, Some(s)) = (
        can.nat_network,
        scenarios.iter().find(|s| s.vm.network == GuestNetwork::Nat),
    ) {
        return Err(BackendMismatch::NatNeedsLibvirt {
            scenario: s.path.clone(),
        });
    }
    // A remote host's guest reaches the boot server through an SSH remote forward, which
    // listens on that host's loopback: QEMU's user network reaches it, a NAT network's
    // bridge does not.
    let fetching_on_nat = scenarios
        .iter()
        .find(|s| s.boot_source.fetches_rootfs() && s.vm.network == GuestNetwork::Nat);
    if let (false, Some(s)) = (can.network_boot_on_nat, fetching_on_nat) {
        return Err(BackendMismatch::FetchOverRemoteNat {
            scenario: s.path.clone(),
            boot_source: s.boot_source.as_str(),
        });
    }
    let bonded = scenarios
        .iter()
        .find(|s| s.network.as_ref().is_some_and(|n| n.bond.is_some()));
    if let (false, Some(s)) = (can.two_nics, bonded) {
        return Err(BackendMismatch::BondNeedsTwoNics {
            scenario: s.path.clone(),
            backend,
        });
    }
    Ok(())
}

/// The checks on this host: Ok with the warnings when nothing is missing.
pub fn check(scenarios: &[&Scenario], backend: &Backend) -> Result<Vec<Finding>, HostNotReady> {
    verdict(findings(scenarios, backend, &Probe::host()))
}

/// Nothing missing: the warnings; else every missing thing.
pub fn verdict(all: Vec<Finding>) -> Result<Vec<Finding>, HostNotReady> {
    let missing: Vec<String> = all
        .iter()
        .filter(|f| f.level == Level::Missing)
        .map(|f| f.detail.clone())
        .collect();
    if missing.is_empty() {
        Ok(all.into_iter().filter(|f| f.level == Level::Warn).collect())
    } else {
        Err(HostNotReady { missing })
    }
}

/// Every finding for `scenarios` on `backend`, each said once.
pub fn findings(scenarios: &[&Scenario], backend: &Backend, probe: &Probe) -> Vec<Finding> {
    let mut all = tools(scenarios, backend, probe);
    for s in scenarios {
        all.extend(openshift_inputs(s, probe));
        all.extend(probe::room_for(s, backend, probe));
    }
    all.extend(probe::accelerators(scenarios, probe));
    if let Some(uri) = backend.uri() {
        all.push(probe::libvirt(uri, probe));
    }
    let mut seen = std::collections::HashSet::new();
    all.retain(|f| seen.insert((f.check.clone(), f.detail.clone())));
    all
}

/// The programs and firmware files the backend and the scenarios need (`hw::host_programs`,
/// the list `doctor` checks too).
fn tools(scenarios: &[&Scenario], backend: &Backend, probe: &Probe) -> Vec<Finding> {
    // libvirtd starts QEMU from its own installation.
    let mut out: Vec<Finding> = host_programs::for_a_run(backend.can().starts_qemu_here)
        .map(|p| match (probe.which)(p.name) {
            Some(path) => Finding::new(p.name, Level::Ok, path.display().to_string()),
            None => Finding::new(p.name, Level::Missing, p.missing()),
        })
        .collect();
    for firmware in [Firmware::Uefi, Firmware::UefiSecure] {
        if !scenarios.iter().any(|s| s.vm.firmware == firmware) {
            continue;
        }
        let what = if firmware.secure_boot() {
            "OVMF (UEFI Secure Boot)"
        } else {
            "OVMF (UEFI)"
        };
        for file in host_programs::firmware_files(firmware) {
            out.push(if (probe.is_file)(Path::new(file.name)) {
                Finding::new(what, Level::Ok, file.name)
            } else {
                Finding::new(what, Level::Missing, file.missing())
            });
        }
    }
    out
}

/// The openshift profile's own inputs: an installer that can be run, and a pull secret that
/// can be read (a variable is only read at the run, so it is looked at here).
fn openshift_inputs(s: &Scenario, probe: &Probe) -> Vec<Finding> {
    let mut out = Vec::new();
    if s.profile == crate::scenario::Profile::Openshift {
        out.push(probe::installer(s, probe));
    }
    if let Some(source) = &s.install.pull_secret {
        out.push(probe::pull_secret(source, probe));
    }
    out
}

#[cfg(test)]
mod tests;
