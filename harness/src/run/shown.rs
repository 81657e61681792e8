//! What the state machine did, said on the terminal and recorded in events.jsonl: the same
//! whether the session is watching a VM or the run ended before it had one (the installer
//! refusing the install-config), so that every run directory's timeline holds its phases'
//! starts and ends and `analyze` can replay it.

use std::time::Duration;

use super::context::Run;
use crate::flow::event::{Signal, Source};
use crate::flow::machine::{Action, Outcome};
use crate::flow::phase::Phase;

impl Run<'_> {
    /// Says `a` on the terminal and records a phase's start or end in the timeline.
    pub fn show_action(&mut self, a: &Action) {
        match a {
            Action::PhaseStarted(p) => {
                let timeout = self.machine.phase(*p).timeout;
                self.ui.line(&format!(
                    "phase {p} started ({}{})",
                    deadline_words(timeout),
                    self.deadline_rule(*p)
                ));
                let (phase, timeout_s) = (p.name().to_string(), timeout.as_secs());
                let _ = self
                    .log
                    .record(Source::Harness, Signal::PhaseStarted { phase, timeout_s });
            }
            Action::PhaseEnded(p, st) => {
                self.ui.line(&format!("phase {p} ended: {}", st.as_str()));
                let detail = self.machine.phase(*p).detail.clone();
                let (phase, status) = (p.name().to_string(), st.as_str().to_string());
                let _ = self.log.record(
                    Source::Harness,
                    Signal::PhaseEnded {
                        phase,
                        status,
                        detail,
                    },
                );
            }
            Action::Finished(o) => self.ui.line(&format!(
                "verdict {}{}",
                o.verdict.as_str(),
                reason_suffix(o)
            )),
        }
    }

    /// Says and records what is pending, for a run that ends before a session shows it.
    pub fn show_pending(&mut self) {
        for a in std::mem::take(&mut self.pending) {
            self.show_action(&a);
        }
    }

    /// What moves phase `p`'s deadline, in words after its timeout.
    fn deadline_rule(&self, p: Phase) -> &'static str {
        if p == Phase::LiveBoot && self.s.boot_source.fetches_rootfs() {
            // A network boot's live-boot deadline moves by the boot server's sending.
            ", plus the time the boot server spends sending files"
        } else if p.budget_phase() != p {
            ", shared with bootstrap-complete from now, as wait-for bootstrap-complete's"
        } else if p == Phase::BootstrapComplete {
            ", counted from node-ready's start"
        } else {
            ""
        }
    }
}

/// `timeout 20m, until 06:31:02 UTC`: the phase's timeout and when it runs out, from now.
fn deadline_words(timeout: Duration) -> String {
    let until = std::time::SystemTime::now()
        .checked_add(timeout)
        .map(|t| humantime::format_rfc3339_seconds(t).to_string())
        .and_then(|s| s.get(11..19).map(str::to_string))
        .unwrap_or_else(|| "far ahead".into());
    format!(
        "timeout {}, until {until} UTC",
        humantime::format_duration(Duration::from_secs(timeout.as_secs()))
    )
}

/// `: REASON`, or nothing when the outcome gives none.
pub fn reason_suffix(o: &Outcome) -> String {
    if o.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", o.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_start_says_its_timeout_and_when_it_runs_out() {
        let w = deadline_words(Duration::from_secs(20 * 60));
        let (timeout, until) = w.split_once(", until ").unwrap();
        assert_eq!(timeout, "timeout 20m");
        let clock = until.strip_suffix(" UTC").unwrap();
        assert_eq!(clock.len(), 8, "{w}");
        assert!(clock.bytes().enumerate().all(|(i, b)| if i == 2 || i == 5 {
            b == b':'
        } else {
            b.is_ascii_digit()
        }));
        assert_eq!(
            deadline_words(Duration::from_secs(90)).split(',').next(),
            Some("timeout 1m 30s")
        );
    }
}
