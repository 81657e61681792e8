//! The installation disk as the run's observers watch it, and what a multipath disk adds: its
//! write counter summed over its paths (a path taken away keeps what it wrote), and the
//! `multipath-path-lost` fault, which takes one path away from the VM during the write to
//! disk, as a cable pulled from one HBA, and gives it back later in the write, as the cable
//! put back. The write must go on over the other path meanwhile (dm-multipath fails over);
//! the path must be back before the reboot, since the installed system's first boot assembles
//! its map only from paths it sees (`find_multipaths yes` knows no WWID yet).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::scenario::model::MULTIPATH_PATH_LOST_FAULT;
use crate::scenario::Scenario;
use crate::vm::VmSpec;

/// The path the fault takes away: the second, not the one the firmware boots from (kola's
/// multipath.single-disk test removes the second path too).
pub const LOST_PATH: u8 = 1;
/// The fault takes the path away as soon as the block stats show the write begun (its first
/// bytes): the bulk of the image then goes over the other path. Block stats are polled every
/// second, and a fast host writes the whole image in a few of those, so a later mark could
/// fall after the write.
pub const LOSE_AFTER: u64 = 1;
/// The path comes back once this much more has been written over the other path: well before
/// the end of the write (minisno's image is some 280 MiB), so that it is back before the
/// reboot.
pub const RESTORE_AFTER: u64 = 64 << 20;
/// Or once the write has stood still this long (it ended, or it hangs, which the restore's
/// event then shows as nothing written meanwhile).
pub const RESTORE_IF_STILL: Duration = Duration::from_secs(20);

/// The installation disk the observers watch.
#[derive(Debug, Clone, Default)]
pub struct InstallDrive {
    /// Its disk id (block stats), when install-config names a disk of the scenario.
    pub id: Option<String>,
    pub multipath: Option<MultipathDrive>,
}

/// A multipath installation disk: where it is in the VM, and whether the run takes a path away.
#[derive(Debug, Clone)]
pub struct MultipathDrive {
    pub spec: VmSpec,
    pub index: usize,
    pub lose_path: bool,
}

impl InstallDrive {
    pub fn of(s: &Scenario, spec: &VmSpec) -> InstallDrive {
        let id = s.install.install_disk_id.clone();
        let multipath = id.as_ref().and_then(|id| {
            let index = spec
                .disks
                .iter()
                .position(|d| &d.id == id && d.multipath_wwn.is_some())?;
            Some(MultipathDrive {
                spec: spec.clone(),
                index,
                lose_path: s.has_fault(MULTIPATH_PATH_LOST_FAULT),
            })
        });
        InstallDrive { id, multipath }
    }
}

/// A disk's bytes written, over every block backend it has had: a multipath disk's path taken
/// away takes its QEMU counter with it, and one given back starts from zero.
#[derive(Debug, Default)]
pub struct WriteCounters {
    current: BTreeMap<String, u64>,
    gone: u64,
}

impl WriteCounters {
    /// The counters now, one per device; returns the total.
    pub fn update(&mut self, now: &[(String, u64)]) -> u64 {
        let present: BTreeMap<&str, u64> = now.iter().map(|(d, w)| (d.as_str(), *w)).collect();
        let gone: u64 = self
            .current
            .iter()
            .filter(|(d, before)| present.get(d.as_str()).is_none_or(|w| w < before))
            .map(|(_, before)| before)
            .sum();
        self.gone += gone;
        self.current = now.iter().cloned().collect();
        self.total()
    }

    pub fn total(&self) -> u64 {
        self.gone + self.current.values().sum::<u64>()
    }
}

/// What the fault does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathAction {
    Lose,
    /// Give the path back; so much was written while it was gone.
    Restore {
        written_while_lost: u64,
    },
}

/// The fault's course over the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathFault {
    Waiting,
    Lost {
        at: u64,
        last_bytes: u64,
        last_growth: Instant,
    },
    Done,
}

impl PathFault {
    /// The fault at `bytes` written, `now`: what to do, if anything. The caller does it and
    /// the fault moves on whatever happens (it is played once).
    pub fn next(&mut self, bytes: u64, now: Instant) -> Option<PathAction> {
        match *self {
            PathFault::Waiting if bytes >= LOSE_AFTER => {
                *self = PathFault::Lost {
                    at: bytes,
                    last_bytes: bytes,
                    last_growth: now,
                };
                Some(PathAction::Lose)
            }
            PathFault::Lost {
                at,
                last_bytes,
                last_growth,
            } => {
                let grew = bytes > last_bytes;
                let still = if grew {
                    Duration::ZERO
                } else {
                    now.saturating_duration_since(last_growth)
                };
                if bytes.saturating_sub(at) >= RESTORE_AFTER || still >= RESTORE_IF_STILL {
                    *self = PathFault::Done;
                    return Some(PathAction::Restore {
                        written_while_lost: bytes.saturating_sub(at),
                    });
                }
                *self = PathFault::Lost {
                    at,
                    last_bytes: bytes,
                    last_growth: if grew { now } else { last_growth },
                };
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(list: &[(&str, u64)]) -> Vec<(String, u64)> {
        list.iter().map(|(d, b)| (d.to_string(), *b)).collect()
    }

    #[test]
    fn a_path_taken_away_keeps_what_it_wrote_and_one_given_back_adds_to_it() {
        let mut c = WriteCounters::default();
        assert_eq!(c.update(&w(&[("d_path0", 10), ("d_path1", 5)])), 15);
        // path 1 removed: its 5 stay counted.
        assert_eq!(c.update(&w(&[("d_path0", 30)])), 35);
        // path 1 back, its counter from zero.
        assert_eq!(c.update(&w(&[("d_path0", 40), ("d_path1", 2)])), 47);
        // A counter that went down was recreated between two polls.
        assert_eq!(c.update(&w(&[("d_path0", 40), ("d_path1", 1)])), 48);
        let mut plain = WriteCounters::default();
        assert_eq!(plain.update(&w(&[("install", 7)])), 7);
        assert_eq!(plain.update(&w(&[("install", 9)])), 9);
    }

    #[test]
    fn the_fault_loses_the_path_into_the_write_and_restores_it_later() {
        let t0 = Instant::now();
        let mut f = PathFault::Waiting;
        assert_eq!(f.next(LOSE_AFTER - 1, t0), None);
        assert_eq!(f.next(LOSE_AFTER, t0), Some(PathAction::Lose));
        assert_eq!(f.next(LOSE_AFTER + (1 << 20), t0), None);
        assert_eq!(
            f.next(LOSE_AFTER + RESTORE_AFTER, t0),
            Some(PathAction::Restore {
                written_while_lost: RESTORE_AFTER
            })
        );
        assert_eq!(f, PathFault::Done);
        assert_eq!(f.next(u64::MAX, t0), None);
    }

    #[test]
    fn a_write_that_stands_still_gets_its_path_back_saying_how_much_was_written() {
        let t0 = Instant::now();
        let mut f = PathFault::Waiting;
        f.next(LOSE_AFTER, t0);
        assert_eq!(f.next(LOSE_AFTER, t0 + Duration::from_secs(10)), None);
        assert_eq!(
            f.next(LOSE_AFTER, t0 + RESTORE_IF_STILL),
            Some(PathAction::Restore {
                written_while_lost: 0
            })
        );
        let mut g = PathFault::Waiting;
        g.next(LOSE_AFTER, t0);
        // Growth resets the stillness clock.
        assert_eq!(g.next(LOSE_AFTER + 1, t0 + Duration::from_secs(15)), None);
        assert_eq!(g.next(LOSE_AFTER + 1, t0 + Duration::from_secs(30)), None);
        assert_eq!(
            g.next(LOSE_AFTER + 1, t0 + Duration::from_secs(35)),
            Some(PathAction::Restore {
                written_while_lost: 1
            })
        );
    }
}
