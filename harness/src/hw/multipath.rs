//! A multipath install disk: one image the guest reaches over two paths, as kola gives QEMU a
//! multipath disk (coreos-assembler `mantle/platform/qemu.go`: each path a `scsi-hd` on a
//! virtio-scsi controller of its own, both with the same WWN and serial), and the names and
//! kernel arguments a real site uses for it on RHCOS.
//!
//! What the guest makes of it, as seen in minisno (Debian 12's multipath-tools 0.9.4) and as
//! RHCOS's do: udev's `scsi_id` reads the WWN from VPD page 0x83 as an NAA designator, so the
//! path's `ID_SERIAL` and multipath's WWID is `3` and the WWN's 16 hex digits; the map of that
//! WWID is `mpatha` under `mpathconf --enable`'s `user_friendly_names yes` (the first map a
//! host makes), and device-mapper links it as `/dev/disk/by-id/dm-uuid-mpath-<WWID>`.

use super::disk::Disk;

/// How many paths a multipath disk has: two controllers, as kola's.
pub const PATHS: u8 = 2;

/// The map's name, as a site names the installation disk with `user_friendly_names yes`
/// (kola's `iso-offline-install.mpath` installs to it). Only one disk of a scenario may be
/// multipath, so it is always the host's first map.
pub const MAP: &str = "/dev/mapper/mpatha";

/// The kernel arguments RHCOS documents for a day-1 multipath install: dracut assembles the maps
/// from the default configuration, the root is the filesystem labelled `root` on a map (the
/// link CoreOS's 90-coreos-device-mapper.rules makes), mounted read-write as `rdcore rootmap`
/// would have it. In the order assisted-service's install command appends them for a multipath
/// installation disk (internal/host/hostcommands/install_cmd.go), each one `--append-karg`.
pub const DAY1_KARGS: [&str; 3] = [
    "root=/dev/disk/by-label/dm-mpath-root",
    "rw",
    "rd.multipath=default",
];

/// The live system's /etc/multipath.conf: what `mpathconf --enable` writes, as the assisted
/// installer's discovery Ignition gives RHCOS's live system so that the disk is /dev/mapper/mpatha
/// there (RHEL's multipathd starts only once the file exists).
pub const LIVE_MULTIPATH_CONF: &str = "# device-mapper-multipath configuration file, as `mpathconf --enable` writes it\ndefaults {\n\tuser_friendly_names yes\n\tfind_multipaths yes\n}\n";

/// The WWN both paths report: NAA 5 (IEEE registered) and 60 bits of the disk's serial's
/// FNV-1a hash, so that it stays the same from run to run and differs between disks.
pub fn wwn(serial: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in serial.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (0x5 << 60) | (h & 0x0fff_ffff_ffff_ffff)
}

/// multipath's WWID of the disk: udev's `ID_SERIAL` of an NAA designator.
pub fn wwid(disk: &Disk) -> String {
    format!("3{:016x}", wwn(&disk.serial))
}

/// `/dev/disk/by-id/dm-uuid-mpath-<WWID>`: the map's link that names no path and no
/// friendly name.
pub fn by_id(disk: &Disk) -> String {
    format!("/dev/disk/by-id/dm-uuid-mpath-{}", wwid(disk))
}

/// The QEMU device id of path `n` of disk `id` (the underscore keeps it from any disk id,
/// which has none). QMP removes and restores a path by it, and block stats name it.
pub fn path_device_id(id: &str, n: u8) -> String {
    format!("{id}_path{n}")
}

/// The disk id and path of a path's device id, if `device` is one.
pub fn path_of_device(device: &str) -> Option<(&str, u8)> {
    let (id, n) = device.rsplit_once("_path")?;
    let n: u8 = n.parse().ok()?;
    (n < PATHS && !id.is_empty()).then_some((id, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::{Bus, Sector};

    fn disk(serial: &str) -> Disk {
        Disk {
            id: "install".into(),
            size_bytes: 1,
            bus: Bus::Scsi,
            sector: Sector::S512,
            serial: serial.into(),
            io: Default::default(),
            multipath: true,
        }
    }

    #[test]
    fn the_wwn_is_naa_5_and_the_serials_own() {
        let a = wwn("sno-install");
        assert_eq!(a >> 60, 5);
        assert_eq!(a, wwn("sno-install"), "the same on every run");
        assert_ne!(a, wwn("sno-other"));
        let d = disk("sno-install");
        assert_eq!(wwid(&d), format!("3{a:016x}"));
        assert_eq!(wwid(&d).len(), 17);
        assert_eq!(
            by_id(&d),
            format!("/dev/disk/by-id/dm-uuid-mpath-3{a:016x}")
        );
    }

    #[test]
    fn path_device_ids_go_both_ways() {
        assert_eq!(path_device_id("install", 1), "install_path1");
        assert_eq!(path_of_device("install_path1"), Some(("install", 1)));
        assert_eq!(path_of_device("my-disk_path0"), Some(("my-disk", 0)));
        assert_eq!(path_of_device("install_path2"), None);
        assert_eq!(path_of_device("install"), None);
        assert_eq!(path_of_device("_path0"), None);
    }
}
