//! What the guest says: its journal (bootkube and install-to-disk) and its status over SSH,
//! whose host key each boot pins, which ends the live boot, bootkube, the disk boot and the
//! bootstrap cleanup.

use super::*;
use crate::flow::release_rules::{self, Rule};

impl Machine {
    pub(super) fn on_journal(
        &mut self,
        unit: &str,
        message: &str,
        guest_usec: u64,
        now: u64,
        out: &mut Vec<Action>,
    ) {
        let cur = self.current;
        let unit = unit.trim_end_matches(".service");
        if unit == "bootkube" && (message.starts_with("Error") || message.contains("error")) {
            self.last_bootkube_error = Some(message.to_string());
        }
        if unit == "bootkube" && cur == Some(Phase::LiveBoot) && self.live_boot_id.is_none() {
            // Only the live system runs bootkube before the install: it is up and answering.
            self.catch_up(
                Phase::Bootkube,
                now,
                "the live system's bootkube.service runs (its journal is read over SSH)",
                out,
            );
        }
        let cur = self.current;
        if unit == "bootkube"
            && message.contains("bootkube.service complete")
            && cur == Some(Phase::Bootkube)
        {
            self.end(Phase::Bootkube, Status::Pass, now, message.into(), out);
            return;
        }
        if unit != "install-to-disk" || self.reboot_line(message, guest_usec, now, out) {
            return;
        }
        if message.starts_with("Executing coreos-installer")
            || message.contains("Install complete.")
        {
            self.catch_up(
                Phase::InstallToDisk,
                now,
                "install-to-disk runs coreos-installer, which it does only once bootkube is done",
                out,
            );
        }
        let cur = self.current;
        if message.starts_with("Executing coreos-installer") {
            self.installer_started(now);
        } else if self.installer_output(message, now) {
            if cur == Some(Phase::InstallToDisk) || cur == Some(Phase::Bootkube) {
                // install-to-disk restarts every 5 s and fails the same way forever: the
                // evidence is already here.
                let reason = format!("coreos-installer failed: {message:?} (install-to-disk.service restarts every 5 s with the same error)");
                if cur == Some(Phase::Bootkube) {
                    // The install ran before bootkube was seen complete: still its failure.
                    self.end(
                        Phase::Bootkube,
                        Status::Pass,
                        now,
                        "bootkube done (install-to-disk ran)".into(),
                        out,
                    );
                }
                self.fail(now, reason, out);
            }
        } else if message.contains("Install complete.") && cur == Some(Phase::InstallToDisk) {
            self.install_written(now, message);
        }
    }

    /// Pins each boot's SSH host key at its first answer; a later answer of the same boot
    /// with another key is what the harness cannot trust.
    pub(super) fn host_key_changed(&mut self, s: &GuestStatus) -> Option<String> {
        if s.host_key.is_empty() {
            return None;
        }
        let boot = boot_key(&s.boot_id);
        let pinned = self
            .host_keys
            .entry(boot.clone())
            .or_insert_with(|| s.host_key.clone());
        (*pinned != s.host_key).then(|| {
            let short = |k: &str| k.chars().take(16).collect::<String>();
            format!(
                "the guest's SSH host key changed within boot {boot} (SHA-256 {}... pinned, now {}...): another machine answers at the guest's address, and what it reports cannot be trusted",
                short(pinned),
                short(&s.host_key)
            )
        })
    }

    pub(super) fn on_guest(&mut self, s: &GuestStatus, now: u64, out: &mut Vec<Action>) {
        self.note_installed(s);
        self.judge_secure_boot(s, now, out);
        if self.outcome.is_some() {
            return;
        }
        match self.current {
            Some(Phase::LiveBoot) if s.live => {
                self.live_boot_id = Some(boot_key(&s.boot_id));
                self.end(
                    Phase::LiveBoot,
                    Status::Pass,
                    now,
                    "SSH works and /run/ostree-live exists".into(),
                    out,
                );
            }
            Some(Phase::LiveBoot) => {
                self.fail(now, "the system that answered SSH is not the live ISO (/run/ostree-live is absent): the disk booted before the install".into(), out);
            }
            // install-to-disk.sh touches .install-to-disk.done after its `shutdown -r`, and
            // coreos-installer.done once the disk is written, before it.
            Some(Phase::InstallToDisk) if s.live && s.install_to_disk_done => {
                self.install_done(now, "/opt/openshift/.install-to-disk.done".into(), out);
            }
            Some(Phase::InstallToDisk) if s.live && s.coreos_installer_done => {
                self.install_written(now, "/opt/openshift/coreos-installer.done");
            }
            Some(Phase::Bootkube) => {
                if s.live {
                    self.bootkube_restarts = self.bootkube_restarts.max(s.bootkube_restarts);
                }
                if s.bootkube_done {
                    self.end(
                        Phase::Bootkube,
                        Status::Pass,
                        now,
                        "/opt/openshift/.bootkube.done".into(),
                        out,
                    );
                } else if self
                    .cfg
                    .bootkube_max_restarts
                    .is_some_and(|limit| s.bootkube_restarts >= limit)
                {
                    let why = format!(
                        "bootkube.service restarted {} times, the scenario's limit ([timeouts] bootkube-restarts = {}){}",
                        s.bootkube_restarts,
                        self.cfg.bootkube_max_restarts.unwrap_or_default(),
                        self.restart_evidence()
                    );
                    self.fail(now, why, out);
                }
            }
            Some(Phase::DiskBoot) if Some(boot_key(&s.boot_id)) != self.live_boot_id => {
                if s.live {
                    self.fail(now, "the live ISO booted again after the install (/run/ostree-live exists after the reset): the bootstrap would loop; check the boot order".into(), out);
                } else if self.multipath_lets_disk_boot_end(now, out) {
                    self.end(
                        Phase::DiskBoot,
                        Status::Pass,
                        now,
                        "SSH works and /run/ostree-live is absent".into(),
                        out,
                    );
                }
            }
            Some(Phase::BootstrapCleanup) => self.judge_cleanup(s, now, out),
            _ => {}
        }
        if !s.live
            && s.bootkube_state.starts_with("failed")
            && self.live_boot_id != Some(boot_key(&s.boot_id))
        {
            self.post_reboot_failure = Some(format!(
                "the post-reboot bootkube.service failed ({}); bootstrap files remain: {}",
                s.bootkube_state,
                s.bootstrap_files.join(", ")
            ));
        }
        if self.current == Some(Phase::BootstrapCleanup) {
            self.judge_cleanup(s, now, out);
        }
    }

    fn judge_cleanup(&mut self, s: &GuestStatus, now: u64, out: &mut Vec<Action>) {
        if self.current != Some(Phase::BootstrapCleanup) || s.live {
            return;
        }
        if let Some(reason) = self.post_reboot_failure.clone() {
            self.fail(now, reason, out);
        } else if s.bootkube_enabled == "disabled" && self.files_left(s).is_empty() {
            // Nothing left that must go, so whatever is listed is the directory kept.
            let kept = if !s.bootstrap_files.is_empty() {
                format!(
                    " (/opt/openshift stays, as the post-reboot script of release {} leaves it)",
                    self.release.as_deref().unwrap_or_default()
                )
            } else {
                String::new()
            };
            self.end(
                Phase::BootstrapCleanup,
                Status::Pass,
                now,
                format!("bootkube.service finished and disabled; bootstrap files gone{kept}"),
                out,
            );
        }
    }

    /// The bootstrap files the cleanup must have removed that are still there. The post-reboot
    /// script removes /opt/openshift only from 4.13 (`release_rules`): an older release keeps
    /// it, and is not held to its removal.
    pub(super) fn files_left<'a>(&self, s: &'a GuestStatus) -> Vec<&'a str> {
        let opt_removed =
            release_rules::applies(Rule::OptOpenshiftRemoved, self.release.as_deref());
        s.bootstrap_files
            .iter()
            .map(String::as_str)
            .filter(|f| opt_removed || *f != "/opt/openshift")
            .collect()
    }
}
