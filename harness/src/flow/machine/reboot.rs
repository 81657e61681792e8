//! The reboot as it happens (docs/bip-contract.md §5): install-to-disk.sh writes the disk,
//! says `Going to reboot` and runs `shutdown -r +1` (openshift/installer's
//! bootstrap-in-place install-to-disk script), so the reboot phase starts at that command, not
//! at coreos-installer's `Install complete.`, and its budget also covers the scheduled delay
//! that `shutdown` announces. The assisted agent (assisted-installer's agent) uploads its logs
//! after coreos-installer and only then reboots: the harness's log collection is its own timed
//! step inside install-to-disk.

use super::*;

/// The longest the harness's collection of an assisted install's live logs may take once
/// coreos-installer exited 0: install-to-disk's deadline is at least this far past the exit.
pub const ASSISTED_LOG_COLLECTION_LIMIT: Duration = Duration::from_secs(300);

/// install-to-disk.sh's line just before its `shutdown -r`: the reboot command follows.
const GOING_TO_REBOOT: &str = "Going to reboot";

/// What is known of the install's end and the reboot's start.
#[derive(Debug, Default)]
pub(super) struct Evidence {
    /// When the disk was seen written (`Install complete.`, coreos-installer.done, the
    /// assisted coreos-installer's exit 0), and by what.
    written: Option<(u64, String)>,
    /// The delay `shutdown` announced (`Reboot scheduled for ...`), credited to the reboot.
    scheduled_delay_ms: u64,
    /// The assisted install's log collection: when it began and, once over, its end and result.
    logs_from_ms: Option<u64>,
    logs: Option<(u64, String)>,
    /// The reset is seen only once the rebooted system answers SSH (no QMP): the reboot's
    /// deadline then covers the disk boot's too.
    seen_at_boot: bool,
}

impl Machine {
    /// The machine's resets are seen only once the rebooted system answers SSH, as a new boot
    /// id (a backend without QMP): the reboot ends then, and its deadline is its own plus
    /// disk-boot's.
    pub fn resets_seen_at_boot(&mut self) {
        self.reboot.seen_at_boot = true;
    }

    /// The disk is written: install-to-disk goes on until the reboot command.
    pub(super) fn install_written(&mut self, now: u64, evidence: &str) {
        self.disk.end_ms.get_or_insert(now);
        self.reboot
            .written
            .get_or_insert((now, evidence.to_string()));
    }

    /// What the disk's write was seen complete by, if it was.
    pub(super) fn written_evidence(&self) -> Option<&str> {
        self.reboot.written.as_ref().map(|(_, e)| e.as_str())
    }

    /// install-to-disk.service's own lines about the reboot: `Going to reboot` ends the phase,
    /// and `shutdown`'s `Reboot scheduled for ...` sets the delay the reboot may take on top
    /// of its timeout. True when the line was one of them.
    pub(super) fn reboot_line(
        &mut self,
        message: &str,
        guest_usec: u64,
        now: u64,
        out: &mut Vec<Action>,
    ) -> bool {
        if message.trim() == GOING_TO_REBOOT {
            if self.current == Some(Phase::InstallToDisk) {
                let evidence = match self.written_evidence() {
                    Some(w) => format!("{w}; install-to-disk.sh said `{GOING_TO_REBOOT}`"),
                    None => format!("install-to-disk.sh said `{GOING_TO_REBOOT}`"),
                };
                self.install_done(now, evidence, out);
            }
            return true;
        }
        match scheduled_delay_ms(message, guest_usec) {
            Some(ms) => {
                self.reboot.scheduled_delay_ms = ms;
                true
            }
            None => false,
        }
    }

    /// The assisted install's steps after coreos-installer exited 0: its logs, then the
    /// reboot the harness asks for, which ends install-to-disk.
    pub(super) fn assisted_after_install(
        &mut self,
        step: &AssistedStep,
        now: u64,
        out: &mut Vec<Action>,
    ) {
        match step {
            AssistedStep::CollectingLogs => {
                self.reboot.logs_from_ms.get_or_insert(now);
            }
            AssistedStep::LogsCollected { detail } => {
                self.reboot.logs = Some((now, detail.clone()));
            }
            AssistedStep::Rebooting => {
                let mut evidence = self
                    .written_evidence()
                    .unwrap_or("coreos-installer exited 0")
                    .to_string();
                if let (Some(from), Some((to, _))) = (self.reboot.logs_from_ms, &self.reboot.logs) {
                    let s = to.saturating_sub(from) as f64 / 1000.0;
                    evidence += &format!("; the live system's logs collected in {s:.1} s");
                }
                evidence += "; the harness asked the live system to reboot";
                self.install_done(now, evidence, out);
            }
            _ => {}
        }
    }

    /// install-to-disk's deadline while the assisted install's logs are collected: at least
    /// [`ASSISTED_LOG_COLLECTION_LIMIT`] past the collection's start.
    pub(super) fn log_collection_deadline(&self, deadline: u64) -> u64 {
        match (self.current, self.reboot.logs_from_ms) {
            (Some(Phase::InstallToDisk), Some(from)) => {
                deadline.max(from + ASSISTED_LOG_COLLECTION_LIMIT.as_millis() as u64)
            }
            _ => deadline,
        }
    }

    /// What install-to-disk was doing when it timed out after the write: the log collection.
    pub(super) fn log_collection_running(&self, now: u64) -> Option<String> {
        let from = self.reboot.logs_from_ms?;
        if self.reboot.logs.is_some() {
            return None;
        }
        Some(format!(
            "the harness was still collecting the live system's logs (assisted install), for {} s, its limit {} s",
            now.saturating_sub(from) / 1000,
            ASSISTED_LOG_COLLECTION_LIMIT.as_secs()
        ))
    }

    /// A new boot answered over SSH (`Signal::BootChanged`, sent on a backend without QMP): the
    /// reset it stands for. It is seen only once the rebooted system answers, so the reboot
    /// ends then, its time including the new system's boot up to SSH.
    pub(super) fn on_boot_changed(
        &mut self,
        (from, to): (&str, &str),
        now: u64,
        out: &mut Vec<Action>,
    ) {
        let (from, to) = (boot_key(from), boot_key(to));
        let cause = format!(
            "a new boot seen over SSH (boot id {to} after {from}; without QMP, when and why it reset is not known)"
        );
        let evidence = format!(
            "the guest answered SSH from a new boot (boot id {to}, {from} before): it rebooted"
        );
        self.on_reset(cause, evidence, now, out);
    }

    /// The reboot's share of its deadline that is not the scenario's timeout: the delay
    /// `shutdown` scheduled, at most the timeout itself.
    pub(super) fn scheduled_reboot_credit_ms(&self) -> u64 {
        let timeout = self.phases[&Phase::Reboot].timeout.as_millis() as u64;
        self.reboot.scheduled_delay_ms.min(timeout)
    }

    /// The reboot's share of its deadline for a reset seen only at the next boot: disk-boot's
    /// timeout, since the system booting from disk up to SSH is part of what is waited for.
    pub(super) fn seen_at_boot_credit_ms(&self) -> u64 {
        match self.reboot.seen_at_boot {
            true => self.phases[&Phase::DiskBoot].timeout.as_millis() as u64,
            false => 0,
        }
    }
}

/// The delay of `shutdown -r +N`, from its announcement (systemd's `Reboot scheduled for Sun
/// 2026-12-06 18:20:00 UTC, use 'shutdown -c' to cancel.`) and the entry's own time on the
/// guest's clock. Only UTC times are read (RHCOS and minisno keep the clock in UTC); another
/// zone gives no credit rather than a wrong one.
fn scheduled_delay_ms(message: &str, guest_usec: u64) -> Option<u64> {
    let rest = message.split("Reboot scheduled for ").nth(1)?;
    let when = rest.split(',').next()?;
    let words: Vec<&str> = when.split_whitespace().collect();
    let [_, date, time, "UTC"] = words.as_slice() else {
        return None;
    };
    let at = humantime::parse_rfc3339(&format!("{date}T{time}Z")).ok()?;
    let at_ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64;
    let ms = at_ms.checked_sub(guest_usec / 1000)?;
    // A day or more is a clock that jumped, not a delay to wait for.
    (ms < 24 * 3600 * 1000).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine whose resets are seen at the next boot, through bootkube to the reboot
    /// command; all phases 100 s.
    fn seen_at_boot_through_the_install() -> Machine {
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
        m.resets_seen_at_boot();
        m.start_at(Phase::LiveBoot, 0, "made by others");
        let status = |boot: &str, live| {
            Signal::GuestStatus(GuestStatus {
                boot_id: boot.into(),
                live,
                ..Default::default()
            })
        };
        let line = |unit: &str, message: &str| Signal::Journal {
            unit: unit.into(),
            identifier: String::new(),
            message: message.into(),
            guest_usec: 0,
            boot_id: "live-1".into(),
        };
        for (t, signal) in [
            (10_000, status("live-1", true)),
            (
                20_000,
                line("bootkube.service", "bootkube.service complete"),
            ),
            (
                21_000,
                line("install-to-disk.service", "Executing coreos-installer"),
            ),
            (22_000, Signal::DiskWrite { bytes: 50 << 20 }),
            (30_000, line("install-to-disk.service", "Install complete.")),
            (31_000, line("install-to-disk.service", GOING_TO_REBOOT)),
        ] {
            m.on_event(&Event {
                time: String::new(),
                t_ms: t,
                source: Source::Guest,
                signal,
            });
        }
        assert_eq!(m.current(), Some(Phase::Reboot));
        m
    }

    #[test]
    fn without_qmp_a_new_boot_ends_the_reboot_and_the_disk_boot_it_answers_from() {
        let mut m = seen_at_boot_through_the_install();
        assert!(
            m.tick(31_000 + 150_000).is_empty(),
            "100 s, plus disk-boot's 100 s"
        );
        for (t, signal) in [
            (
                190_000,
                Signal::BootChanged {
                    from: "live1".into(),
                    to: "disk1".into(),
                },
            ),
            (
                190_000,
                Signal::GuestStatus(GuestStatus {
                    boot_id: "disk-1".into(),
                    live: false,
                    ..Default::default()
                }),
            ),
        ] {
            m.on_event(&Event {
                time: String::new(),
                t_ms: t,
                source: Source::Guest,
                signal,
            });
        }
        assert_eq!(m.phase(Phase::Reboot).status, Status::Pass);
        assert!(m.phase(Phase::Reboot).detail.contains("new boot"));
        assert_eq!(m.phase(Phase::DiskBoot).status, Status::Pass);
        assert_eq!(m.current(), Some(Phase::ApiReady));
        assert_eq!(m.resets, 1);
        assert!(
            m.reset_causes[0].contains("without QMP"),
            "{:?}",
            m.reset_causes
        );
    }

    #[test]
    fn without_qmp_a_reboot_that_never_answers_times_out_saying_why_it_waited_longer() {
        let mut m = seen_at_boot_through_the_install();
        let out = m.tick(31_000 + 200_001);
        assert!(
            out.contains(&Action::PhaseEnded(Phase::Reboot, Status::Timeout)),
            "{out:?}"
        );
        let reason = &m.outcome().unwrap().reason;
        assert!(reason.contains("disk-boot's 100 s"), "{reason}");
    }

    #[test]
    fn the_delay_is_read_from_shutdowns_announcement_in_utc_only() {
        let said = "Reboot scheduled for Sun 2026-12-06 18:20:00 UTC, use 'shutdown -c' to cancel.";
        let at = humantime::parse_rfc3339("2026-12-06T18:19:00.250Z").unwrap();
        let usec = at
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        assert_eq!(scheduled_delay_ms(said, usec), Some(59_750));
        let cest = said.replace("UTC", "CEST");
        assert_eq!(scheduled_delay_ms(&cest, usec), None);
        assert_eq!(scheduled_delay_ms("Going to reboot", usec), None);
        // A schedule in the past or a day away is no delay.
        assert_eq!(scheduled_delay_ms(said, usec + 3_600_000_000), None);
        let far = said.replace("2026-12-06", "2026-12-09");
        assert_eq!(scheduled_delay_ms(&far, usec), None);
    }
}
