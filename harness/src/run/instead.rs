//! What stands in for a VM's own signals on a backend that lacks them (`Backend::can`), so that
//! the state machine reads the same timeline whoever booted the machine: a reboot seen as a new
//! boot id over SSH where QMP would report the reset, and the install disk's write read from
//! coreos-installer's progress lines where block statistics would count it.

use crate::flow::disk_write::installer_progress_bytes;
use crate::flow::event::{Signal, Source};
use crate::flow::machine::boot_key;
use crate::vm::Capabilities;

/// The unit whose journal carries coreos-installer's progress lines.
const INSTALL_UNIT: &str = "install-to-disk.service";

pub struct Instead {
    /// No QMP: a reboot is a new boot id in the guest's status.
    reboots_from_boot_ids: bool,
    /// No block statistics: the write is what coreos-installer read of the image.
    writes_from_progress: bool,
    /// The boot the guest last answered from.
    last_boot: Option<String>,
}

impl Instead {
    pub fn for_backend(can: &Capabilities) -> Instead {
        Instead {
            reboots_from_boot_ids: !can.qmp,
            writes_from_progress: !can.block_stats,
            last_boot: None,
        }
    }

    /// The signals that stand in for the VM's, given one that came from the guest: to be
    /// handled before it.
    pub fn signals_for(&mut self, signal: &Signal) -> Vec<(Source, Signal)> {
        match signal {
            Signal::GuestStatus(st) if self.reboots_from_boot_ids && !st.boot_id.is_empty() => {
                let now = boot_key(&st.boot_id);
                match self.last_boot.replace(now.clone()) {
                    Some(before) if before != now => vec![(
                        Source::Guest,
                        Signal::BootChanged {
                            from: before,
                            to: now,
                        },
                    )],
                    _ => Vec::new(),
                }
            }
            Signal::Journal { unit, message, .. }
                if self.writes_from_progress && unit == INSTALL_UNIT =>
            {
                installer_progress_bytes(message)
                    .map(|bytes| (Source::Journal, Signal::DiskWrite { bytes }))
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::event::GuestStatus;
    use crate::vm::Backend;

    fn status(boot: &str) -> Signal {
        Signal::GuestStatus(GuestStatus {
            boot_id: boot.into(),
            ..Default::default()
        })
    }

    fn progress(unit: &str, message: &str) -> Signal {
        Signal::Journal {
            unit: unit.into(),
            identifier: "install-to-disk.sh".into(),
            message: message.into(),
            guest_usec: 0,
            boot_id: "b1".into(),
        }
    }

    fn without_qmp() -> Capabilities {
        Capabilities {
            qmp: false,
            block_stats: false,
            ..Backend::Qemu.can()
        }
    }

    #[test]
    fn a_new_boot_id_stands_for_the_reset_once() {
        let mut i = Instead::for_backend(&without_qmp());
        assert!(
            i.signals_for(&status("aaaa-1111")).is_empty(),
            "the first boot is no reboot"
        );
        assert!(
            i.signals_for(&status("AAAA1111")).is_empty(),
            "the same boot, spelt otherwise"
        );
        let out = i.signals_for(&status("bbbb-2222"));
        assert_eq!(out.len(), 1);
        assert!(matches!(
            &out[0],
            (Source::Guest, Signal::BootChanged { from, to }) if from == "aaaa1111" && to == "bbbb2222"
        ));
        assert!(i.signals_for(&status("bbbb-2222")).is_empty());
    }

    #[test]
    fn progress_lines_of_install_to_disk_stand_for_the_disks_counter() {
        let mut i = Instead::for_backend(&without_qmp());
        let out = i.signals_for(&progress(INSTALL_UNIT, "Read disk 42.5 MiB/98.9 MiB (42%)"));
        assert!(matches!(
            out.as_slice(),
            [(Source::Journal, Signal::DiskWrite { bytes })] if *bytes == (42.5 * 1048576.0) as u64
        ));
        assert!(i
            .signals_for(&progress(INSTALL_UNIT, "Install complete."))
            .is_empty());
        let other = progress("bootkube.service", "Read disk 1.0 MiB/2.0 MiB (50%)");
        assert!(
            i.signals_for(&other).is_empty(),
            "another unit's line is not the install's"
        );
    }

    #[test]
    fn a_backend_with_its_own_signals_gets_none_instead() {
        let mut i = Instead::for_backend(&Backend::Qemu.can());
        assert!(i.signals_for(&status("a")).is_empty());
        assert!(
            i.signals_for(&status("b")).is_empty(),
            "QMP says when it reset"
        );
        let line = progress(INSTALL_UNIT, "Read disk 42.5 MiB/98.9 MiB (42%)");
        assert!(
            i.signals_for(&line).is_empty(),
            "block statistics count the writes"
        );
    }
}
