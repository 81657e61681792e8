//! A multipath install: disk-boot passes only once the installed system runs its root from the
//! multipath device with every path active (`flow::multipath` reads that), and the path the
//! harness took away during the write must not have stopped the write.

use super::*;
use crate::flow::event::MultipathStep;
use crate::flow::multipath::{Judged, RootDevices};

/// What the machine knows of a multipath install.
#[derive(Debug, Clone, Default)]
pub struct MultipathState {
    /// How many paths the installed system must have active.
    pub expected_paths: u8,
    /// The installed system answered SSH (disk-boot's own evidence).
    installed_up: bool,
    /// The installed system's latest answer, and when it came.
    pub root: Option<(u64, RootDevices)>,
    /// What the harness did to the paths, each with the run's time.
    pub path_events: Vec<(u64, MultipathStep)>,
}

impl Machine {
    /// Disk-boot waits for the installed system's root on the multipath device with `paths`
    /// paths active (a scenario whose installation disk is multipath).
    pub fn expect_multipath(&mut self, paths: u8) {
        self.multipath = Some(MultipathState {
            expected_paths: paths,
            ..Default::default()
        });
    }

    pub fn multipath(&self) -> Option<&MultipathState> {
        self.multipath.as_ref()
    }

    /// The installed system answered SSH during disk-boot: with a multipath disk, the phase
    /// also waits for its root's devices. True when the caller may end the phase now.
    pub(super) fn multipath_lets_disk_boot_end(&mut self, now: u64, out: &mut Vec<Action>) -> bool {
        let Some(m) = self.multipath.as_mut() else {
            return true;
        };
        m.installed_up = true;
        self.judge_multipath_root(now, out);
        false
    }

    pub(super) fn on_multipath(&mut self, step: &MultipathStep, now: u64, out: &mut Vec<Action>) {
        let Some(m) = self.multipath.as_mut() else {
            return;
        };
        match step {
            MultipathStep::Root(r) => {
                if r.live || Some(boot_key(&r.boot_id)) == self.live_boot_id {
                    return;
                }
                m.root = Some((now, r.clone()));
                self.judge_multipath_root(now, out);
            }
            MultipathStep::PathLost { .. } => m.path_events.push((now, step.clone())),
            MultipathStep::PathRestored {
                device,
                written_while_lost,
            } => {
                m.path_events.push((now, step.clone()));
                if *written_while_lost == 0 {
                    let reason = format!(
                        "the install disk's write stopped while its path {device} was gone: no byte reached the disk over the other path, so I/O did not fail over (the harness gave the path back after the write stood still)"
                    );
                    self.fail(now, reason, out);
                }
            }
            MultipathStep::PathFaultFailed { detail } => {
                m.path_events.push((now, step.clone()));
                let reason = format!("the harness could not play the multipath fault: {detail}");
                out.extend(self.error(now, reason));
            }
        }
    }

    /// During disk-boot, with the installed system up: its root on the map with every path
    /// active ends the phase, passed; a root off the map fails it (it will not move by
    /// waiting); a path not yet active is waited for, until the phase's deadline.
    fn judge_multipath_root(&mut self, now: u64, out: &mut Vec<Action>) {
        let Some(m) = self.multipath.as_ref() else {
            return;
        };
        if self.current != Some(Phase::DiskBoot) || !m.installed_up {
            return;
        }
        let Some((_, root)) = &m.root else { return };
        match root.judge(m.expected_paths) {
            Judged::Good(said) => self.end(
                Phase::DiskBoot,
                Status::Pass,
                now,
                format!("SSH works, /run/ostree-live is absent, and {said}"),
                out,
            ),
            Judged::NotMultipath(reason) => self.fail(now, reason, out),
            Judged::Waiting(_) => {}
        }
    }

    /// For a disk-boot timeout: what the installed system's root was last seen on.
    pub(super) fn multipath_evidence(&self) -> String {
        let Some(m) = self.multipath.as_ref() else {
            return String::new();
        };
        match &m.root {
            None => "; the installed system's root devices were never read over SSH".into(),
            Some((_, r)) => match r.judge(m.expected_paths) {
                Judged::Waiting(s) | Judged::Good(s) | Judged::NotMultipath(s) => {
                    format!("; multipath: {s}")
                }
            },
        }
    }
}
