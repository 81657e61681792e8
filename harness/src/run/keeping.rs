//! What a run keeps for the user once it ends (`--keep on-failure | always | never`), and how
//! many runs may leave their VM running (one for `run`; a matrix's `--keep-running N`, taken by
//! its first failures, so that a matrix of failures never leaves all its VMs eating the host's
//! memory).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// When a run keeps its private directory (disks, secrets) and, where it may, its VM running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeepWhen {
    #[default]
    Never,
    OnFailure,
    Always,
}

impl KeepWhen {
    pub const ALL: [KeepWhen; 3] = [KeepWhen::OnFailure, KeepWhen::Always, KeepWhen::Never];

    pub fn as_str(self) -> &'static str {
        match self {
            KeepWhen::OnFailure => "on-failure",
            KeepWhen::Always => "always",
            KeepWhen::Never => "never",
        }
    }

    /// Whether a run with this verdict keeps what it made.
    pub fn applies(self, passed: bool) -> bool {
        match self {
            KeepWhen::OnFailure => !passed,
            KeepWhen::Always => true,
            KeepWhen::Never => false,
        }
    }

    /// Whether the run may keep anything: decided before the verdict is known, for what must
    /// be set up front (a QEMU without the parent-death signal, a domain libvirt does not
    /// destroy with the connection, disks not deleted by a remote host's cleanup).
    pub fn may_keep(self) -> bool {
        self != KeepWhen::Never
    }
}

/// A `--keep` value that is none of the modes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a keep mode; valid: on-failure, always (also `--keep` alone), never")]
pub struct UnknownKeep(pub String);

impl std::str::FromStr for KeepWhen {
    type Err = UnknownKeep;
    fn from_str(s: &str) -> Result<KeepWhen, UnknownKeep> {
        KeepWhen::ALL
            .into_iter()
            .find(|w| w.as_str() == s)
            .ok_or_else(|| UnknownKeep(s.into()))
    }
}

/// How many more VMs the runs sharing it may leave running: each run that keeps takes one,
/// first come first served; the rest keep their disks only.
#[derive(Debug, Clone)]
pub struct RunningSlots {
    left: Arc<AtomicUsize>,
    capacity: usize,
}

impl RunningSlots {
    pub fn new(capacity: usize) -> RunningSlots {
        RunningSlots {
            left: Arc::new(AtomicUsize::new(capacity)),
            capacity,
        }
    }

    /// Whether any run sharing these slots may ever leave its VM running.
    pub fn any(&self) -> bool {
        self.capacity > 0
    }

    /// Takes a slot: `true` when one was left.
    pub fn take(&self) -> bool {
        self.left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

impl Default for RunningSlots {
    fn default() -> RunningSlots {
        RunningSlots::new(0)
    }
}

/// What a run keeps: when, and the slots of VMs left running it shares with its matrix.
#[derive(Debug, Clone, Default)]
pub struct Keep {
    pub when: KeepWhen,
    pub running: RunningSlots,
    /// Whether a passing run may take a slot too (`run --keep`: the cluster is the user's to
    /// use); a matrix's slots are its failures' alone.
    pub passing_too: bool,
}

impl Keep {
    /// Keeps nothing.
    pub fn never() -> Keep {
        Keep::default()
    }

    /// Whether the run must be set up so that its VM could outlive it.
    pub fn may_leave_running(&self) -> bool {
        self.when.may_keep() && self.running.any()
    }

    /// Whether this run, kept with this verdict, leaves its VM running: it takes a slot if one
    /// is left. Asked last, once everything else allows it, so that no slot is lost.
    pub fn takes_running_slot(&self, passed: bool) -> bool {
        self.when.applies(passed) && (!passed || self.passing_too) && self.running.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_keeps_for_its_verdicts() {
        let kept = |w: KeepWhen| (w.applies(true), w.applies(false));
        assert_eq!(kept(KeepWhen::Never), (false, false));
        assert_eq!(kept(KeepWhen::OnFailure), (false, true));
        assert_eq!(kept(KeepWhen::Always), (true, true));
        assert!(!KeepWhen::Never.may_keep());
        assert!(KeepWhen::OnFailure.may_keep());
    }

    #[test]
    fn modes_parse_by_name_and_a_wrong_one_lists_the_valid() {
        for w in KeepWhen::ALL {
            assert_eq!(w.as_str().parse::<KeepWhen>(), Ok(w));
        }
        let e = "onfailure".parse::<KeepWhen>().unwrap_err().to_string();
        assert!(e.contains("on-failure, always"), "{e}");
    }

    #[test]
    fn slots_go_to_the_first_takers_and_no_further() {
        let s = RunningSlots::new(2);
        let shared = s.clone();
        assert!(s.take());
        assert!(shared.take());
        assert!(!s.take());
        assert!(!shared.take());
        assert!(s.any());
        assert!(!RunningSlots::new(0).take());
        assert!(!RunningSlots::new(0).any());
    }

    #[test]
    fn slots_taken_from_many_threads_are_never_more_than_there_are() {
        let s = RunningSlots::new(3);
        let taken: usize = (0..8)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || (0..10).filter(|_| s.take()).count())
            })
            .map(|t| t.join().unwrap())
            .sum();
        assert_eq!(taken, 3);
    }

    #[test]
    fn a_run_may_leave_its_vm_running_only_when_it_may_keep_and_has_a_slot() {
        let k = |when, n| Keep {
            when,
            running: RunningSlots::new(n),
            passing_too: false,
        };
        assert!(k(KeepWhen::OnFailure, 1).may_leave_running());
        assert!(!k(KeepWhen::OnFailure, 0).may_leave_running());
        assert!(!k(KeepWhen::Never, 1).may_leave_running());
    }

    #[test]
    fn a_matrixs_slots_go_to_failures_and_a_single_runs_to_a_pass_too() {
        let matrix = Keep {
            when: KeepWhen::Always,
            running: RunningSlots::new(1),
            passing_too: false,
        };
        assert!(!matrix.takes_running_slot(true), "a pass takes no slot");
        assert!(matrix.takes_running_slot(false));
        assert!(!matrix.takes_running_slot(false), "the one slot is gone");
        let run = Keep {
            when: KeepWhen::Always,
            running: RunningSlots::new(1),
            passing_too: true,
        };
        assert!(run.takes_running_slot(true));
        let on_failure = Keep {
            when: KeepWhen::OnFailure,
            running: RunningSlots::new(1),
            passing_too: true,
        };
        assert!(!on_failure.takes_running_slot(true), "a pass is not kept");
        assert!(on_failure.takes_running_slot(false));
    }
}
