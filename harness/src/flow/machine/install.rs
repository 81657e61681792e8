//! install-to-disk: the end of the write by any of its evidence, a reset that comes too soon,
//! and the deadline that follows the write's projected end.

use super::*;

/// How long the install disk must have taken no write before a reset, for a reset after the
/// whole image was read to count as the reboot: the real one comes a minute after the install.
const WRITE_SETTLED_MS: u64 = 10_000;

impl Machine {
    /// install-to-disk ends at the reboot command (`Going to reboot`, .install-to-disk.done, the
    /// assisted install's reboot), or at a reset once the disk was seen written or the write
    /// reached the image's end (reboot.rs). The first one seen counts.
    pub(super) fn install_done(&mut self, now: u64, evidence: String, out: &mut Vec<Action>) {
        self.disk.end_ms.get_or_insert(now);
        self.end(Phase::InstallToDisk, Status::Pass, now, evidence, out);
    }

    /// A reset while install-to-disk has not been seen done. coreos-installer's percent counts
    /// the image it has read; what it has read sits in the guest's page cache until written,
    /// and a reset loses it. So a reset is the reboot (the journal lagged) only once the whole
    /// image was read and the disk had gone quiet: the real reboot comes a minute after the
    /// install (`shutdown -r +1`), with nothing written in between. Else the install did not
    /// finish.
    pub(super) fn reset_during_install(&mut self, now: u64, out: &mut Vec<Action>) {
        if let Some(w) = self.written_evidence() {
            let evidence =
                format!("{w}, then the VM reset before the reboot command's line was read");
            return self.install_done(now, evidence, out);
        }
        let quiet_ms = now.saturating_sub(self.disk.last_growth_ms);
        let read_all = self.disk.image_percent.is_some_and(|p| p >= 100.0);
        if read_all && self.orderly_reboot_ms.is_some() {
            let evidence = "the VM rebooted in order (systemd's reboot on the console) after coreos-installer had read 100% of the image".to_string();
            return self.install_done(now, evidence, out);
        }
        if read_all && quiet_ms >= WRITE_SETTLED_MS {
            let evidence = format!(
                "the VM reset after coreos-installer had read 100% of the image and the disk had been quiet for {:.0} s",
                quiet_ms as f64 / 1000.0
            );
            return self.install_done(now, evidence, out);
        }
        let at = match self.disk.image_percent {
            Some(p) if read_all => format!(
                "{p:.0}% of the image read but the disk still being written {:.1} s before the reset",
                quiet_ms as f64 / 1000.0
            ),
            Some(p) => format!("{p:.0}% of the image"),
            None => "no progress line".to_string(),
        };
        self.fail(
            now,
            format!(
                "the VM reset during install-to-disk before the install was seen complete: no `Install complete.`, no coreos-installer.done or .install-to-disk.done marker, and the write at {at} ({:.0} MiB written)",
                self.disk.written() as f64 / 1048576.0
            ),
            out,
        );
    }

    /// systemd's reboot on the console while install-to-disk runs (its own lines, or the
    /// kernel's last one): install-to-disk.sh's `shutdown -r`, not a crash or a reset.
    pub(super) fn note_orderly_reboot(&mut self, line: &str, now: u64) {
        const ORDERLY: &[&str] = &[
            "Reached target reboot.target",
            "systemd-shutdown[1]: Rebooting.",
            "reboot: Restarting system",
        ];
        if self.current == Some(Phase::InstallToDisk) && ORDERLY.iter().any(|p| line.contains(p)) {
            self.orderly_reboot_ms.get_or_insert(now);
        }
    }

    /// Where the disk write is heading, once coreos-installer has reported enough progress
    /// (2 %, 5 s into the write) for a projection: its end, and the install-to-disk deadline
    /// that follows from it (`Config::adaptive_install`).
    pub fn install_projection(&self) -> Option<Projection> {
        let bounds = self.cfg.adaptive_install?;
        let st = &self.phases[&Phase::InstallToDisk];
        let phase_start = st.start_ms?;
        let write_start = self.disk.start_ms?;
        let percent = self.disk.image_percent?;
        let at = self.disk.image_percent_ms?;
        let so_far = at.saturating_sub(write_start);
        if percent < 2.0 || so_far < 5_000 {
            return None;
        }
        let write_ms = (so_far as f64 * 100.0 / percent) as u64;
        let write_end_ms = write_start + write_ms;
        let slack = bounds.slack.as_millis() as u64;
        let mut wanted =
            write_end_ms + (write_ms as f64 * (bounds.margin - 1.0).max(0.0)) as u64 + slack;
        // coreos-installer's percent counts the image it has read; a slow (or throttled) disk
        // is still taking what the guest's page cache holds after 100 %. While the write
        // counter grows, the deadline stays at least `slack` past its last growth. Once the
        // write ended, this is the deadline that was in force at its end (what result.json
        // reports): a write that outlived its projection was allowed to by this rule.
        wanted = wanted.max(self.disk.last_growth_ms + slack);
        let deadline_ms = wanted.clamp(
            phase_start + bounds.min.as_millis() as u64,
            phase_start + bounds.max.as_millis() as u64,
        );
        Some(Projection {
            write_end_ms,
            deadline_ms,
            nominal_deadline_ms: phase_start + st.timeout.as_millis() as u64,
        })
    }

    /// coreos-installer starts (install-to-disk's `Executing coreos-installer`, or the harness's
    /// own of an assisted install): the phase and the write are timed from here. A later
    /// attempt of the assisted install restarts the write's timing but not the phase's: the
    /// agent's retries share the stage's time.
    pub(super) fn installer_started(&mut self, now: u64) {
        if self.current == Some(Phase::InstallToDisk) && self.install_attempts.is_empty() {
            self.phases
                .get_mut(&Phase::InstallToDisk)
                .expect("state")
                .start_ms = Some(now);
        }
        if self.disk.start_ms.is_none() {
            self.disk.start_ms = Some(now);
            self.disk.last_growth_ms = now;
            self.disk.base_bytes.get_or_insert(self.disk.last_bytes);
        }
    }

    /// A failed attempt of the assisted install's coreos-installer, which the harness runs
    /// again as the agent does (assisted-installer's writeImageToDisk retries it up to 3
    /// times): its error is kept for the verdict, and the next attempt's write starts afresh.
    fn installer_retrying(&mut self, attempt: u32, code: i32, error: Option<&str>) {
        let said = match error.or(self.last_install_error.as_deref()) {
            Some(e) => format!("{e:?}"),
            None => "without an Error: line".to_string(),
        };
        self.install_attempts
            .push(format!("attempt {attempt} exited {code}: {said}"));
        self.last_install_error = None;
        self.disk.start_ms = None;
        self.disk.image_percent = None;
        self.disk.image_percent_ms = None;
    }

    /// Why the assisted install's coreos-installer failed for good: the last attempt's exit and
    /// error, then each earlier attempt's.
    fn installer_failed(&self, code: i32) -> String {
        const WHO: &str = "coreos-installer, run by the harness over SSH (assisted install)";
        let said = match &self.last_install_error {
            Some(e) => format!(": {e:?}"),
            None => " without an Error: line".to_string(),
        };
        if self.install_attempts.is_empty() {
            return format!("{WHO} exited {code}{said}");
        }
        let n = self.install_attempts.len() + 1;
        format!(
            "{WHO} failed {n} times; attempt {n} exited {code}{said}; earlier: {}",
            self.install_attempts.join("; ")
        )
    }

    /// A line coreos-installer printed: its progress is noted; an error line is kept as the
    /// install's last error, and true says it was one.
    pub(super) fn installer_output(&mut self, line: &str, now: u64) -> bool {
        if let Some(p) = installer_progress_percent(line) {
            if self.disk.image_percent != Some(p) {
                self.disk.image_percent = Some(p);
                self.disk.image_percent_ms = Some(now);
            }
            return false;
        }
        if line.starts_with("Error:") || line == "install failed" {
            self.last_install_error = Some(line.to_string());
            return true;
        }
        false
    }

    /// The assisted install, which the harness runs itself over SSH once install-to-disk has
    /// begun (bootkube done): the device's preparation, coreos-installer's attempts (their
    /// start, output and exit are the phase's evidence, where install-to-disk.service's journal
    /// is otherwise), the boot entry, the logs and the reboot.
    pub(super) fn on_assisted(&mut self, step: &AssistedStep, now: u64, out: &mut Vec<Action>) {
        const WHO: &str = "coreos-installer, run by the harness over SSH (assisted install)";
        // After the install only the reboot the harness asks for can still go wrong.
        let reboot_broke =
            self.current == Some(Phase::Reboot) && matches!(step, AssistedStep::Broken { .. });
        if self.current != Some(Phase::InstallToDisk) && !reboot_broke {
            return;
        }
        match step {
            AssistedStep::Started { .. } => self.installer_started(now),
            AssistedStep::Output { line } => {
                self.installer_output(line, now);
            }
            AssistedStep::Retrying {
                attempt,
                code,
                error,
            } => self.installer_retrying(*attempt, *code, error.as_deref()),
            // The disk is written; the logs and the reboot command end the phase.
            AssistedStep::Exited { code: 0 } => {
                self.install_written(now, &format!("{WHO}, exited 0"))
            }
            AssistedStep::Exited { code } => {
                let reason = self.installer_failed(*code);
                self.fail(now, reason, out);
            }
            AssistedStep::Broken { detail } => {
                self.fail(
                    now,
                    format!("the assisted install could not run {WHO}: {detail}"),
                    out,
                );
            }
            AssistedStep::CollectingLogs
            | AssistedStep::LogsCollected { .. }
            | AssistedStep::Rebooting => self.assisted_after_install(step, now, out),
            // The agent's steps before coreos-installer: none ends the phase (a failed cleanup
            // lets the install go on, as the agent's does), and they say the install's write
            // has not begun. A write seen before them (the cleanup's own, an old disk's
            // metadata written by a fixture fault) is not coreos-installer's: its write is
            // timed, and watched for stalls, from its start.
            AssistedStep::DeviceResolved { .. }
            | AssistedStep::LvmCleaned { .. }
            | AssistedStep::RaidCleaned { .. }
            | AssistedStep::SignaturesWiped { .. }
            | AssistedStep::CleanupFailed { .. }
            | AssistedStep::IgnitionMerged { .. } => {
                self.disk.start_ms = None;
                self.disk.base_bytes = None;
            }
            // After the write, as the logs: in the timeline only.
            AssistedStep::BootEntrySet { .. } | AssistedStep::BootEntryNotSet { .. } => {}
        }
    }

    pub(super) fn on_disk_write(&mut self, bytes: u64, now: u64, out: &mut Vec<Action>) {
        let grew = bytes > self.disk.last_bytes;
        if grew {
            // Block stats come from the VM, not the guest: they say the install began even
            // when the followers lag behind a loaded guest (the write then starts here, as
            // coreos-installer's own line would have said).
            let before = self.current;
            self.catch_up(
                Phase::InstallToDisk,
                now,
                "the install disk is being written, which install-to-disk does only once bootkube is done",
                out,
            );
            let caught_up = before != self.current && self.current == Some(Phase::InstallToDisk);
            if caught_up && self.disk.start_ms.is_none() {
                self.disk.start_ms = Some(now);
                self.disk.base_bytes = Some(self.disk.last_bytes);
            }
            self.disk.last_growth_ms = now;
        }
        self.disk.last_bytes = bytes;
    }

    /// Evidence of a later phase while an earlier one still waits (a follower that lagged, a
    /// status poll a loaded guest answered too late): the live boot and bootkube are over,
    /// since what came next cannot begin before them. They end, passed, saying by what.
    pub(super) fn catch_up(&mut self, to: Phase, now: u64, why: &str, out: &mut Vec<Action>) {
        while let Some(cur) = self.current {
            if cur >= to || !matches!(cur, Phase::LiveBoot | Phase::Bootkube) {
                return;
            }
            self.end(cur, Status::Pass, now, why.to_string(), out);
        }
    }
}
