//! The installed system's post-reboot script as a timeout names it: the wait loop it is in
//! (flow::post_reboot, from its journal lines) and, for bootstrap-cleanup, bootkube.service's
//! state and the bootstrap files still there (from the status poll).

use super::*;
use crate::flow::post_reboot::IDENTIFIER;

/// The phases during which the post-reboot script runs: from the installed system's API to
/// its cleanup.
const SCRIPT_PHASES: [Phase; 5] = [
    Phase::ApiReady,
    Phase::NodeReady,
    Phase::BootstrapComplete,
    Phase::ClusterReady,
    Phase::BootstrapCleanup,
];

impl Machine {
    /// A journal line, if it is the post-reboot script's: its identifier is the script's name,
    /// or it comes from bootkube.service of a boot that is not the live one (the live system
    /// runs bootkube.sh under the same unit).
    pub(super) fn on_script_line(
        &mut self,
        (unit, identifier, boot_id): (&str, &str, &str),
        message: &str,
        now: u64,
    ) {
        let installed_bootkube = unit.trim_end_matches(".service") == "bootkube"
            && !boot_id.is_empty()
            && self
                .live_boot_id
                .as_ref()
                .is_some_and(|live| *live != boot_key(boot_id));
        if identifier == IDENTIFIER || installed_bootkube {
            self.post_reboot.observe(message, now);
        }
    }

    /// Keeps the installed system's latest status for the reasons below.
    pub(super) fn note_installed(&mut self, s: &GuestStatus) {
        if !s.live && self.live_boot_id.as_ref() != Some(&boot_key(&s.boot_id)) {
            self.installed = Some(s.clone());
        }
    }

    /// For a timeout of `p`: the loop the script is in, and for bootstrap-cleanup what is left
    /// to clean. Nothing before the pivot.
    pub(super) fn script_evidence(&self, p: Phase, now_ms: u64) -> String {
        if !SCRIPT_PHASES.contains(&p) {
            return String::new();
        }
        let spin = self
            .post_reboot
            .current()
            .filter(|_| self.script_may_run())
            .map(|s| format!("; {}", s.describe(now_ms)))
            .unwrap_or_default();
        let cleanup = match p {
            Phase::BootstrapCleanup => self.cleanup_evidence(),
            _ => String::new(),
        };
        spin + &cleanup
    }

    /// Whether the script may still be running: bootkube.service is not known to have
    /// stopped. A unit that ended leaves its last loop behind, which is then no cause.
    fn script_may_run(&self) -> bool {
        let Some(s) = &self.installed else {
            return true;
        };
        let active = s.bootkube_state.split('/').next().unwrap_or_default();
        !matches!(active, "inactive" | "failed")
    }

    /// bootkube.service's state on the installed system and the bootstrap files it has not
    /// removed yet (the script's `clean`, docs/bip-contract.md §6).
    fn cleanup_evidence(&self) -> String {
        let Some(s) = &self.installed else {
            return "; the installed system's status was never read over SSH".into();
        };
        let state = if s.bootkube_state.is_empty() {
            "unknown".to_string()
        } else {
            s.bootkube_state.clone()
        };
        let enabled = match s.bootkube_enabled.as_str() {
            "" => "not installed".to_string(),
            e => e.to_string(),
        };
        // Only the files the cluster's release removes (files_left: /opt/openshift from 4.13).
        let left = self.files_left(s);
        let files = if left.is_empty() {
            "none of the bootstrap files its release removes is left".to_string()
        } else {
            format!("bootstrap files still there: {}", left.join(", "))
        };
        format!(
            "; on the installed system bootkube.service is {state} (ActiveState/SubState/Result) and {enabled}; {files}"
        )
    }
}
