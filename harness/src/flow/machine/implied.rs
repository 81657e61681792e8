//! Evidence that is not the harness's own observers (`sno-harness analyze` of a journal export, a
//! serial log or an installer's log bundle): a later phase seen while an earlier one still
//! runs ends the earlier ones, passed, saying by what; and what a failed post-reboot unit left
//! for bootstrap-cleanup, which such evidence may show without the phases between.

use super::*;

impl Machine {
    /// Evidence of phase `to` while an earlier phase runs: each phase before it ends, passed,
    /// with `why` (the installed system booting implies the install and the reboot before it).
    /// Nothing happens once the run has an outcome, or before the live boot began.
    pub fn implied(&mut self, to: Phase, now: u64, why: &str) -> Vec<Action> {
        let mut out = Vec::new();
        while let Some(cur) = self.current {
            if cur >= to || self.outcome.is_some() || cur == Phase::Assets {
                break;
            }
            self.end(cur, Status::Pass, now, why.to_string(), &mut out);
        }
        out
    }

    /// The evidence that the installed system's bootkube.service (the post-reboot script)
    /// failed, which fails bootstrap-cleanup once the run gets there.
    pub fn post_reboot_failure(&self) -> Option<&str> {
        self.post_reboot_failure.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine::new(Config {
            timeouts: BTreeMap::new(),
            write_stall: Duration::from_secs(60),
            bootkube_max_restarts: None,
            adaptive_install: None,
        })
    }

    fn ev(t_ms: u64, signal: Signal) -> Event {
        Event {
            time: String::new(),
            t_ms,
            source: Source::Journal,
            signal,
        }
    }

    #[test]
    fn a_later_phase_ends_the_earlier_ones_passed_and_stops_there() {
        let mut m = machine();
        m.start(0);
        m.on_event(&ev(1, Signal::AssetsReady));
        m.on_event(&ev(2, Signal::VmStarted { pid: 1 }));
        assert_eq!(m.current(), Some(Phase::LiveBoot));
        let actions = m.implied(Phase::DiskBoot, 10, "the installed system booted");
        assert_eq!(m.current(), Some(Phase::DiskBoot));
        for p in [
            Phase::LiveBoot,
            Phase::Bootkube,
            Phase::InstallToDisk,
            Phase::Reboot,
        ] {
            assert_eq!(m.phase(p).status, Status::Pass, "{p}");
            assert_eq!(m.phase(p).detail, "the installed system booted");
        }
        assert!(actions.contains(&Action::PhaseStarted(Phase::DiskBoot)));
        // An earlier phase is no evidence of anything: nothing moves back.
        assert!(m.implied(Phase::Bootkube, 11, "x").is_empty());
        assert_eq!(m.current(), Some(Phase::DiskBoot));
    }

    #[test]
    fn nothing_is_implied_before_the_vm_started_or_after_the_outcome() {
        let mut m = machine();
        m.start(0);
        assert!(m.implied(Phase::DiskBoot, 1, "x").is_empty());
        assert_eq!(m.current(), Some(Phase::Assets));
        m.on_event(&ev(1, Signal::AssetsReady));
        m.on_event(&ev(2, Signal::VmStarted { pid: 1 }));
        m.fail_now(3, "broken".into());
        assert!(m.implied(Phase::DiskBoot, 4, "x").is_empty());
        assert_eq!(m.outcome().unwrap().failed_phase, Some(Phase::LiveBoot));
    }
}
