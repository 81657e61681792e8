//! install-to-disk: the end of the write by any of its evidence, a reset that comes too soon,
//! and the deadline that follows the write's projected end.

use super::*;

impl Machine {
    /// install-to-disk ends on any of its evidence: `Install complete.`, one of its markers, or
    /// a reset once the write reached the image's end. The first one seen counts.
    pub(super) fn install_done(&mut self, now: u64, evidence: String, out: &mut Vec<Action>) {
        self.disk.end_ms.get_or_insert(now);
        self.end(Phase::InstallToDisk, Status::Pass, now, evidence, out);
    }

    /// A reset while install-to-disk has not been seen done: after a complete write it is the
    /// reboot (the journal lagged); before, the install did not finish.
    pub(super) fn reset_during_install(&mut self, now: u64, out: &mut Vec<Action>) {
        match self.disk.image_percent {
            Some(p) if p >= 100.0 => self.install_done(
                now,
                "the VM reset after coreos-installer had written 100% of the image".into(),
                out,
            ),
            p => {
                let at = p.map_or("no progress line".to_string(), |p| {
                    format!("{p:.0}% of the image")
                });
                self.fail(
                    now,
                    format!(
                        "the VM reset during install-to-disk before the install was seen complete: no `Install complete.`, no coreos-installer.done or .install-to-disk.done marker, and the write at {at} ({:.0} MiB written)",
                        self.disk.written() as f64 / 1048576.0
                    ),
                    out,
                );
            }
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
