//! Secure Boot as each system reports it: the SecureBoot EFI variable of the live system and
//! of the installed one, read over SSH by the status poll. With `vm.firmware = "uefi-secure"`
//! each system must say it booted with Secure Boot on: a firmware that enforces it runs nothing
//! unsigned, so a system that reports it off (or no UEFI at all) did not boot through the
//! chain the scenario is about. The firmware's refusal of an unsigned loader never gets this
//! far: it is a console line (`flow::badness`, the kind `boot-refused`).

use serde::{Deserialize, Serialize};

use super::*;
use crate::flow::event::SecureBootState;

/// What each system's first status said of Secure Boot; None for a system that never
/// answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecureBootSeen {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<SecureBootState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<SecureBootState>,
}

impl Machine {
    /// Whether each system must report Secure Boot on (the firmware enforces it).
    pub fn expect_secure_boot(&mut self, required: bool) {
        self.secure_boot_required = required;
    }

    /// What each system said of Secure Boot so far.
    pub fn secure_boot(&self) -> SecureBootSeen {
        self.secure_boot
    }

    /// Notes the first status of each system, and fails the current phase when Secure Boot
    /// is required and that system does not report it on.
    pub(super) fn judge_secure_boot(&mut self, s: &GuestStatus, now: u64, out: &mut Vec<Action>) {
        let (seen, system) = if s.live {
            (&mut self.secure_boot.live, "the live system")
        } else {
            (&mut self.secure_boot.installed, "the installed system")
        };
        if seen.is_some() {
            return;
        }
        *seen = Some(s.secure_boot);
        if !self.secure_boot_required {
            return;
        }
        let why = match s.secure_boot {
            SecureBootState::On => return,
            SecureBootState::Off => {
                "its SecureBoot EFI variable reads 0: the firmware did not enforce Secure Boot"
            }
            SecureBootState::NoVariable => {
                "it has no SecureBoot EFI variable: it did not boot through UEFI"
            }
        };
        let reason = format!(
            "Secure Boot is not on in {system}: {why} (vm.firmware = \"uefi-secure\" boots OVMF's Secure Boot build with Microsoft's keys enrolled, where it reads 1)"
        );
        self.fail(now, reason, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(required: bool) -> Machine {
        let timeouts = Phase::ALL
            .iter()
            .map(|p| (*p, Duration::from_secs(100)))
            .collect();
        let mut m = Machine::new(Config {
            timeouts,
            write_stall: Duration::from_secs(20),
            bootkube_max_restarts: None,
            adaptive_install: None,
        });
        m.expect_secure_boot(required);
        m.start(0);
        m
    }

    fn feed(m: &mut Machine, events: Vec<(u64, Signal)>) -> Vec<Action> {
        events
            .into_iter()
            .flat_map(|(t_ms, signal)| {
                m.on_event(&Event {
                    time: String::new(),
                    t_ms,
                    source: Source::Harness,
                    signal,
                })
            })
            .collect()
    }

    fn status(boot: &str, live: bool, secure_boot: SecureBootState) -> Signal {
        Signal::GuestStatus(GuestStatus {
            boot_id: boot.into(),
            live,
            secure_boot,
            bootkube_enabled: "enabled".into(),
            ..Default::default()
        })
    }

    fn started() -> Vec<(u64, Signal)> {
        vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
        ]
    }

    /// The live system up, bootkube done, the disk written and the machine reset.
    fn to_the_reboot(m: &mut Machine) {
        let mut events = started();
        events.extend([
            (20_000, status("live", true, SecureBootState::On)),
            (
                30_000,
                Signal::Journal {
                    unit: "bootkube.service".into(),
                    identifier: String::new(),
                    message: "bootkube.service complete".into(),
                    guest_usec: 0,
                    boot_id: "live".into(),
                },
            ),
            (
                37_000,
                Signal::Journal {
                    unit: "install-to-disk.service".into(),
                    identifier: String::new(),
                    message: "Install complete.".into(),
                    guest_usec: 0,
                    boot_id: "live".into(),
                },
            ),
            (
                38_000,
                Signal::Qmp {
                    name: "RESET".into(),
                    data: serde_json::json!({"guest": true}),
                },
            ),
        ]);
        feed(m, events);
        assert_eq!(m.current(), Some(Phase::DiskBoot));
    }

    fn outcome(a: &[Action]) -> &Outcome {
        match a.last() {
            Some(Action::Finished(o)) => o,
            other => panic!("not finished: {other:?}"),
        }
    }

    #[test]
    fn both_systems_reporting_secure_boot_on_pass_their_boots_and_are_recorded() {
        let mut m = machine(true);
        to_the_reboot(&mut m);
        feed(
            &mut m,
            vec![(55_000, status("disk", false, SecureBootState::On))],
        );
        assert_eq!(m.phase(Phase::LiveBoot).status, Status::Pass);
        assert_eq!(m.phase(Phase::DiskBoot).status, Status::Pass);
        assert_eq!(
            m.secure_boot(),
            SecureBootSeen {
                live: Some(SecureBootState::On),
                installed: Some(SecureBootState::On),
            }
        );
        assert_eq!(
            serde_json::to_string(&m.secure_boot()).unwrap(),
            r#"{"live":"on","installed":"on"}"#
        );
    }

    #[test]
    fn a_live_system_without_secure_boot_fails_live_boot_saying_what_it_read() {
        let mut m = machine(true);
        let mut events = started();
        events.push((20_000, status("live", true, SecureBootState::Off)));
        let a = feed(&mut m, events);
        let o = outcome(&a);
        assert_eq!(o.failed_phase, Some(Phase::LiveBoot));
        assert_eq!(
            o.reason,
            "live-boot: Secure Boot is not on in the live system: its SecureBoot EFI variable reads 0: the firmware did not enforce Secure Boot (vm.firmware = \"uefi-secure\" boots OVMF's Secure Boot build with Microsoft's keys enrolled, where it reads 1)"
        );
    }

    #[test]
    fn an_installed_system_without_the_variable_fails_disk_boot() {
        let mut m = machine(true);
        to_the_reboot(&mut m);
        let a = feed(
            &mut m,
            vec![(55_000, status("disk", false, SecureBootState::NoVariable))],
        );
        let o = outcome(&a);
        assert_eq!(o.failed_phase, Some(Phase::DiskBoot));
        assert!(
            o.reason.contains("not on in the installed system: it has no SecureBoot EFI variable: it did not boot through UEFI"),
            "{}",
            o.reason
        );
        assert_eq!(m.secure_boot().installed, Some(SecureBootState::NoVariable));
    }

    #[test]
    fn without_secure_boot_asked_for_what_each_system_says_is_only_recorded() {
        let mut m = machine(false);
        to_the_reboot(&mut m);
        feed(
            &mut m,
            vec![(55_000, status("disk", false, SecureBootState::Off))],
        );
        assert_eq!(m.phase(Phase::DiskBoot).status, Status::Pass);
        assert_eq!(m.secure_boot().installed, Some(SecureBootState::Off));
        // Later polls of the same system change nothing.
        feed(
            &mut m,
            vec![(56_000, status("disk", false, SecureBootState::On))],
        );
        assert_eq!(m.secure_boot().installed, Some(SecureBootState::Off));
    }

    #[test]
    fn the_firmware_refusing_the_loader_fails_live_boot_quoting_its_console_line() {
        let mut m = machine(true);
        let mut events = started();
        let refused = "BdsDxe: failed to load Boot0002 \"UEFI QEMU DVD-ROM QM00011 \" from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x5,0xFFFF,0x0): Access Denied";
        events.extend([
            (
                3_000,
                Signal::Console {
                    line: "BdsDxe: failed to load Boot0001 \"UEFI Misc Device\" from PciRoot(0x0)/Pci(0x8,0x0): Not Found".into(),
                },
            ),
            (
                4_000,
                Signal::Console {
                    line: refused.into(),
                },
            ),
        ]);
        let a = feed(&mut m, events);
        let o = outcome(&a);
        assert_eq!(o.verdict, Verdict::Fail);
        assert_eq!(o.failed_phase, Some(Phase::LiveBoot));
        assert_eq!(
            o.reason,
            format!("live-boot: Secure Boot refusal in the serial console at 4.0 s: {refused:?}")
        );
    }
}
