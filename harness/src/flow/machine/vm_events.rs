//! What QEMU (or libvirt) says of the VM itself: resets, counted once per reboot with their
//! causes, a guest panic, a shutdown instead of a reboot, a disk I/O error.

use super::*;

/// QEMU reports one reboot as several RESET events within milliseconds; later ones within
/// this window are the same reset.
const RESET_BURST_MS: u64 = 1_000;

/// Why the VM reset, in words, from QMP's RESET `reason` (QEMU's ShutdownCause).
fn reset_cause(data: &serde_json::Value) -> String {
    match data["reason"].as_str() {
        Some("guest-reset") => "guest reboot".into(),
        Some("guest-panic") => "guest panic".into(),
        Some("host-qmp-system-reset") => "the harness (QMP system_reset)".into(),
        Some("watchdog") => "watchdog".into(),
        Some(other) => other.into(),
        // libvirt's reboot event comes of the guest's own reset (the libvirt backend).
        None if data["libvirt_event"] == "reboot" => "guest reboot (libvirt's reboot event)".into(),
        None => "unknown (no reason in the RESET event)".into(),
    }
}

impl Machine {
    /// A reset of the machine, however it was seen (QMP's RESET, or a new boot id on a backend
    /// without QMP), counted once: it ends the reboot, or comes during the install (`install`).
    pub(super) fn on_reset(
        &mut self,
        cause: String,
        evidence: String,
        now: u64,
        out: &mut Vec<Action>,
    ) {
        self.resets += 1;
        self.reset_causes.push(cause);
        if self.current == Some(Phase::InstallToDisk) {
            self.reset_during_install(now, out);
        }
        if self.current == Some(Phase::Reboot) {
            self.end(Phase::Reboot, Status::Pass, now, evidence, out);
        }
    }

    pub(super) fn on_qmp(
        &mut self,
        name: &str,
        data: &serde_json::Value,
        now: u64,
        out: &mut Vec<Action>,
    ) {
        match name {
            "RESET" => {
                if self
                    .last_reset_ms
                    .is_some_and(|t| now.saturating_sub(t) < RESET_BURST_MS)
                {
                    return;
                }
                self.last_reset_ms = Some(now);
                self.on_reset(reset_cause(data), format!("VM reset ({data})"), now, out);
            }
            "GUEST_PANICKED" => {
                self.fail(
                    now,
                    format!("the guest kernel panicked (QMP GUEST_PANICKED {data})"),
                    out,
                );
            }
            "SHUTDOWN" if data["guest"] == true && data["reason"] != "guest-reset" => {
                self.fail(
                    now,
                    format!("the guest shut down instead of rebooting (QMP SHUTDOWN {data})"),
                    out,
                );
            }
            "BLOCK_IO_ERROR" => {
                self.fail(
                    now,
                    format!("a disk I/O error reached the VM (QMP BLOCK_IO_ERROR {data})"),
                    out,
                );
            }
            _ => {}
        }
    }
}
