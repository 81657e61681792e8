//! `[[disks]]`: ids, sizes, serials, buses, sectors and I/O settings QEMU takes, each disk in a
//! place of the PCI plan, an installation disk the firmware can boot, and a multipath disk
//! only where the harness can give it two paths (the installation disk, on SCSI).

use std::collections::HashSet;

use toml::Spanned;

use super::{Ctx, ScenarioError};
use crate::hw::slots::disk_place;
use crate::hw::{AioMode, Bus, Disk, DiskIo, Firmware, Sector, Throttle};
use crate::scenario::model::*;
use crate::scenario::units::parse_size;

/// The QEMU ids the harness gives its own devices (`vm/qemu/argv.rs`), which no disk may take.
const HARNESS_QEMU_IDS: &[(&str, &str)] = &[
    ("cdrom0", "live ISO's drive"),
    ("net0", "network"),
    ("serial0", "serial console"),
    ("qmp0", "QMP socket"),
    ("rng0", "random number source"),
    ("scsi0", "SCSI controller"),
];

/// The largest image `qemu-img create -f qcow2` makes with its default 64 KiB clusters
/// (2 PiB); beyond it the disk would fail to be created, after the run started.
const MAX_DISK_SIZE: u64 = 2048 << 40;

/// QEMU's largest I/O throttling limit (`THROTTLE_VALUE_MAX`): it refuses to start with a
/// larger one.
const MAX_THROTTLE: u64 = 1_000_000_000_000_000;

pub(super) fn disks(
    cx: &Ctx,
    sections: &[Spanned<DiskSection>],
) -> Result<Vec<Disk>, ScenarioError> {
    if sections.is_empty() {
        return Err(cx.err(None, "no [[disks]]: a scenario needs at least the installation disk, e.g.\n[[disks]]\nid = \"install\"\nsize = \"8GiB\""));
    }
    let mut disks = Vec::new();
    let mut seen = HashSet::new();
    let mut serials = HashSet::new();
    for sd in sections {
        let d = sd.get_ref();
        // It becomes a QEMU id (`-drive id=`): a letter first.
        let id_ok = d.id.starts_with(|c: char| c.is_ascii_lowercase())
            && d.id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !id_ok {
            return Err(cx.at(
                sd,
                format!(
                    "disk id {:?}: a lowercase letter, then lowercase letters, digits and '-'",
                    d.id
                ),
            ));
        }
        if let Some(what) = HARNESS_QEMU_IDS
            .iter()
            .find_map(|(id, what)| (*id == d.id).then_some(what))
        {
            return Err(cx.at(
                sd,
                format!(
                    "disk id {:?} is the harness's own QEMU id of the {what}: choose another",
                    d.id
                ),
            ));
        }
        if !seen.insert(d.id.clone()) {
            return Err(cx.at(sd, format!("disk id {:?} is used twice", d.id)));
        }
        let size_bytes =
            parse_size(d.size.get_ref()).map_err(|m| cx.at(&d.size, format!("disks.size: {m}")))?;
        if size_bytes < (64 << 20) {
            return Err(cx.at(&d.size, "disks.size: at least 64MiB"));
        }
        if size_bytes > MAX_DISK_SIZE {
            return Err(cx.at(
                &d.size,
                "disks.size: at most 2048TiB (the largest qcow2 image qemu-img creates)",
            ));
        }
        let serial = d.serial.clone().unwrap_or_else(|| format!("sno-{}", d.id));
        if serial.is_empty()
            || serial.len() > 20
            || !serial
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            // Without a serial the message must still point at something the file says.
            let whose = if d.serial.is_none() {
                format!(
                    " (the default for disk id {:?}: give it a shorter id or a serial)",
                    d.id
                )
            } else {
                String::new()
            };
            return Err(cx.at(sd, format!("disk serial {serial:?}{whose}: 1 to 20 characters of letters, digits, '-' or '_' (the limit of virtio, NVMe and ATA serials)")));
        }
        if !serials.insert(serial.clone()) {
            return Err(cx.at(sd, format!("disk serial {serial:?} is used twice: the guest's /dev/disk/by-id links would clash; give each disk its own serial")));
        }
        if d.bus == Bus::Sata && d.sector == Sector::S4k {
            return Err(cx.at(sd, format!("disk {:?}: SATA disks cannot have 4096-byte logical sectors in QEMU; use sector = \"512\" or \"512e\", or another bus", d.id)));
        }
        let io = disk_io(cx, d)?;
        disks.push(Disk {
            id: d.id.clone(),
            size_bytes,
            bus: d.bus,
            sector: d.sector,
            serial,
            io,
            multipath: multipath(cx, sd)?,
        });
    }
    Ok(disks)
}

/// `multipath = true`, where it can be: on SCSI (the two paths are the disks of two
/// virtio-scsi controllers, as kola's) and without a throttle (each path would get the whole
/// limit).
fn multipath(cx: &Ctx, sd: &Spanned<DiskSection>) -> Result<bool, ScenarioError> {
    let d = sd.get_ref();
    let Some(m) = d.multipath.as_ref().filter(|m| *m.get_ref()) else {
        return Ok(false);
    };
    if d.bus != Bus::Scsi {
        return Err(cx.at(
            m,
            format!(
                "disk {:?}: multipath = true needs bus = \"scsi\" (its bus is {:?}): the two paths are SCSI disks on two virtio-scsi controllers sharing one image and one WWN, as a SAN LUN reaches a host through two HBAs; set bus = \"scsi\" or leave multipath out",
                d.id,
                d.bus.name()
            ),
        ));
    }
    if let Some(t) = &d.throttle {
        return Err(cx.at(
            t,
            format!(
                "disk {:?}: a multipath disk takes no throttle (each of its two paths would get the whole limit); leave throttle out or multipath",
                d.id
            ),
        ));
    }
    Ok(true)
}

/// One multipath disk at most, and it is the installation disk: the harness passes the
/// multipath kernel arguments for the disk it installs to, and the guest's map is `mpatha`.
pub(super) fn check_multipath(
    cx: &Ctx,
    f: &ScenarioFile,
    disks: &[Disk],
    install_disk_id: Option<&String>,
) -> Result<(), ScenarioError> {
    let mut seen: Option<&str> = None;
    for (d, sd) in disks.iter().zip(&f.disks).filter(|(d, _)| d.multipath) {
        if let Some(first) = seen {
            return Err(cx.at(
                sd,
                format!(
                    "disk {:?} is multipath, and so is disk {first:?}: only one disk, the installation disk, may be multipath",
                    d.id
                ),
            ));
        }
        seen = Some(&d.id);
        if install_disk_id != Some(&d.id) {
            let named = match install_disk_id {
                Some(id) => format!("disk {id:?}"),
                None => "no disk of the scenario (a literal path)".to_string(),
            };
            return Err(cx.at(
                sd,
                format!(
                    "disk {:?} is multipath, but install.installation_disk names {named}: only the installation disk may be multipath; name it with installation_disk = {{ by = \"name\", disk = {:?} }} (/dev/mapper/mpatha) or by = \"id\" (its dm-uuid link)",
                    d.id, d.id
                ),
            ));
        }
    }
    Ok(())
}

/// A disk's `cache`, `aio` and `throttle`, checked: QEMU refuses native AIO without O_DIRECT,
/// and a throttle of nothing or of zero is a mistake, not a limit.
fn disk_io(cx: &Ctx, d: &DiskSection) -> Result<DiskIo, ScenarioError> {
    let cache = d.cache.as_ref().map(|c| *c.get_ref()).unwrap_or_default();
    let aio = d.aio.as_ref().map(|a| *a.get_ref()).unwrap_or_default();
    if let Some(a) = d.aio.as_ref().filter(|_| aio == AioMode::Native) {
        if !cache.direct() {
            let default = if d.cache.is_none() {
                " (the default)"
            } else {
                ""
            };
            return Err(cx.at(
                a,
                format!(
                    "disk {:?}: aio = \"native\" needs cache = \"none\" or \"directsync\" (QEMU refuses native AIO without O_DIRECT), and cache is {:?}{default}; set one of those, or use aio = \"threads\" or \"io_uring\"",
                    d.id,
                    cache.name()
                ),
            ));
        }
    }
    let throttle = match &d.throttle {
        None => None,
        Some(t) => {
            let sec = t.get_ref();
            if sec.bytes_per_s.is_none() && sec.iops.is_none() {
                return Err(cx.at(
                    t,
                    format!(
                        "disk {:?}: throttle sets no limit; give bytes_per_s, iops or both, e.g. throttle = {{ bytes_per_s = \"20MiB\", iops = 500 }} (leave throttle out for a disk without limits)",
                        d.id
                    ),
                ));
            }
            let bytes_per_s = match &sec.bytes_per_s {
                None => None,
                Some(b) => {
                    let zero = b
                        .get_ref()
                        .trim()
                        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                        .trim()
                        .parse::<f64>()
                        == Ok(0.0);
                    let v = if zero {
                        0
                    } else {
                        parse_size(b.get_ref())
                            .map_err(|m| cx.at(b, format!("disks.throttle.bytes_per_s: {m}")))?
                    };
                    Some(throttle_limit(cx, b, "bytes_per_s", v)?)
                }
            };
            let iops = match &sec.iops {
                None => None,
                Some(i) => Some(throttle_limit(cx, i, "iops", *i.get_ref())?),
            };
            Some(Throttle { bytes_per_s, iops })
        }
    };
    Ok(DiskIo {
        cache,
        aio,
        throttle,
    })
}

/// A throttling limit QEMU takes: more than 0, at most its maximum.
fn throttle_limit<T>(
    cx: &Ctx,
    at: &Spanned<T>,
    key: &str,
    value: u64,
) -> Result<u64, ScenarioError> {
    if value == 0 {
        return Err(cx.at(
            at,
            format!("disks.throttle.{key} = 0: a limit is more than 0; leave {key} out for none"),
        ));
    }
    if value > MAX_THROTTLE {
        return Err(cx.at(
            at,
            format!(
                "disks.throttle.{key}: {value} is more than QEMU's largest limit, {MAX_THROTTLE}"
            ),
        ));
    }
    Ok(value)
}

pub(super) fn check_slots(cx: &Ctx, f: &ScenarioFile, disks: &[Disk]) -> Result<(), ScenarioError> {
    // A disk that does not fit the VM's slots gets an address QEMU refuses, after the run
    // directory and the disk images exist. Checked after the installation disk, whose by-path
    // error says more.
    let buses: Vec<Bus> = disks.iter().map(|d| d.bus).collect();
    for (i, sd) in f.disks.iter().enumerate() {
        disk_place(&buses, i).map_err(|m| {
            cx.at(
                sd,
                format!(
                    "disk {:?}: {m}; use fewer disks of its kind, or another bus",
                    disks[i].id
                ),
            )
        })?;
    }
    Ok(())
}

/// SeaBIOS cannot boot a 4Kn installation disk.
pub(super) fn check_bootable(
    cx: &Ctx,
    f: &ScenarioFile,
    disks: &[Disk],
    install_disk_id: Option<&String>,
    firmware: Firmware,
) -> Result<(), ScenarioError> {
    if let Some(id) = install_disk_id {
        let d = disks.iter().find(|d| &d.id == id).expect("resolved above");
        if firmware == Firmware::Bios && d.sector == Sector::S4k {
            let span = f
                .install
                .installation_disk
                .as_ref()
                .map(|s| s.span())
                .unwrap_or(f.vm.firmware.span());
            return Err(cx.err(Some(span), format!("disk {id:?} is 4K-native and vm.firmware is \"bios\": SeaBIOS and GRUB's BIOS boot code cannot boot 4Kn disks (neither can RHCOS); use firmware = \"uefi\" or sector = \"512e\"")));
        }
    }
    Ok(())
}
