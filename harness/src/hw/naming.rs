//! How the guest names a scenario's disks: the kernel's device names and udev's by-id and
//! by-path links.

use super::disk::{Bus, Disk};
use super::slots::{self as plan, DiskPlace, DiskPlanError};

/// `/dev/disk/by-id/...` of a disk, from its bus and serial (udev's persistent-storage rules);
/// of a multipath disk, its map's (`dm-uuid-mpath-<WWID>`, see `hw::multipath`).
pub fn by_id(disk: &Disk) -> String {
    if disk.multipath {
        return super::multipath::by_id(disk);
    }
    let id = match disk.bus {
        Bus::Virtio => format!("virtio-{}", disk.serial),
        Bus::Scsi => format!("scsi-0QEMU_QEMU_HARDDISK_{}", disk.serial),
        Bus::Nvme => format!("nvme-QEMU_NVMe_Ctrl_{}", disk.serial),
        Bus::Sata => format!("ata-QEMU_HARDDISK_{}", disk.serial),
    };
    format!("/dev/disk/by-id/{id}")
}

/// `/dev/disk/by-path/...` of disk `index` of a VM whose disks are on `buses`, in the order of
/// the VmSpec's (and the scenario's) disks: where the command line places the disk
/// (`hw::slots`) as udev's `path_id` names it (systemd 252, seen in the guest):
///
/// | bus | link |
/// |---|---|
/// | virtio | `pci-0000:00:SS.0` (udev adds the deprecated `virtio-pci-0000:00:SS.0` too) |
/// | scsi | `pci-0000:00:04.0-scsi-0:0:T:0`, T the disk's target (0, 1, ... among SCSI disks) |
/// | nvme | `pci-0000:00:SS.0-nvme-1` (namespace 1 of the controller) |
/// | sata | `pci-0000:00:1f.2-ata-P.0`, P the AHCI port + 1 (udev's ID_PATH; it adds the older `...-ata-P` too) |
///
/// SS is the disk's own PCI slot: 08, 09, ... in order among virtio and NVMe disks.
pub fn by_path(buses: &[Bus], index: usize) -> Result<String, DiskPlanError> {
    let path = match plan::disk_place(buses, index)? {
        DiskPlace::Virtio { slot } => format!("pci-0000:00:{slot:02x}.0"),
        DiskPlace::Nvme { slot } => format!("pci-0000:00:{slot:02x}.0-nvme-1"),
        DiskPlace::Scsi { target } => format!(
            "pci-0000:00:{:02x}.0-scsi-0:0:{target}:0",
            plan::SCSI_CONTROLLER_SLOT
        ),
        DiskPlace::Sata { port } => format!(
            "pci-0000:00:{:02x}.{}-ata-{}.0",
            plan::AHCI_SLOT,
            plan::AHCI_FUNCTION,
            u32::from(port) + 1
        ),
    };
    Ok(format!("/dev/disk/by-path/{path}"))
}

/// The kernel's name for disk `index` of `disks`: virtio disks are vda, vdb... in order;
/// NVMe controllers nvme0n1, nvme1n1...; SCSI or SATA disks sda, sdb... in order. SCSI and SATA
/// disks together have no stable order (two drivers probe in parallel), so that is refused, as
/// is a SCSI or SATA disk beside a multipath disk. A multipath disk is its map, `mpatha`.
pub fn kernel_name(disks: &[Disk], index: usize) -> Result<String, DiskPlanError> {
    let disk = &disks[index];
    if disk.multipath {
        return Ok(super::multipath::MAP.to_string());
    }
    if matches!(disk.bus, Bus::Scsi | Bus::Sata) && disks.iter().any(|d| d.multipath) {
        return Err(DiskPlanError::BesideMultipath {
            disk: disk.id.clone(),
        });
    }
    let rank = disks[..index]
        .iter()
        .filter(|d| same_namespace(d.bus, disk.bus))
        .count();
    match disk.bus {
        Bus::Virtio => Ok(format!("/dev/vd{}", letters(rank))),
        Bus::Nvme => Ok(format!("/dev/nvme{rank}n1")),
        Bus::Scsi | Bus::Sata => {
            let mixed = disks.iter().any(|d| d.bus == Bus::Scsi)
                && disks.iter().any(|d| d.bus == Bus::Sata);
            if mixed {
                Err(DiskPlanError::NoStableName {
                    disk: disk.id.clone(),
                })
            } else {
                Ok(format!("/dev/sd{}", letters(rank)))
            }
        }
    }
}

fn same_namespace(a: Bus, b: Bus) -> bool {
    a == b || (matches!(a, Bus::Scsi | Bus::Sata) && matches!(b, Bus::Scsi | Bus::Sata))
}

/// a, b, ..., z, aa, ab, ... as the kernel suffixes disks.
pub fn letters(mut n: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'a' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).expect("ascii")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::Sector;

    fn d(id: &str, bus: Bus) -> Disk {
        Disk {
            id: id.into(),
            size_bytes: 1,
            bus,
            sector: Sector::S512,
            serial: format!("sno-{id}"),
            io: Default::default(),
            multipath: false,
        }
    }

    #[test]
    fn names_follow_each_bus_order() {
        let disks = [
            d("a", Bus::Virtio),
            d("b", Bus::Nvme),
            d("c", Bus::Virtio),
            d("e", Bus::Nvme),
            d("f", Bus::Sata),
        ];
        let names: Vec<_> = (0..disks.len())
            .map(|i| kernel_name(&disks, i).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "/dev/vda",
                "/dev/nvme0n1",
                "/dev/vdb",
                "/dev/nvme1n1",
                "/dev/sda"
            ]
        );
        assert_eq!(letters(25), "z");
        assert_eq!(letters(26), "aa");
        assert_eq!(letters(27), "ab");
    }

    #[test]
    fn scsi_with_sata_is_ambiguous() {
        let disks = [d("a", Bus::Scsi), d("b", Bus::Sata)];
        let e = kernel_name(&disks, 1).unwrap_err();
        assert_eq!(e, DiskPlanError::NoStableName { disk: "b".into() });
        assert!(e.to_string().contains("by = \"id\""), "{e}");
    }

    #[test]
    fn a_multipath_disk_is_its_map_and_the_sd_disks_beside_it_have_no_stable_name() {
        let mut mp = d("install", Bus::Scsi);
        mp.multipath = true;
        let disks = [mp.clone(), d("data", Bus::Scsi), d("v", Bus::Virtio)];
        assert_eq!(kernel_name(&disks, 0).unwrap(), "/dev/mapper/mpatha");
        assert_eq!(
            kernel_name(&disks, 1).unwrap_err(),
            DiskPlanError::BesideMultipath {
                disk: "data".into()
            }
        );
        assert_eq!(kernel_name(&disks, 2).unwrap(), "/dev/vda");
        assert!(by_id(&mp).starts_with("/dev/disk/by-id/dm-uuid-mpath-35"));
    }

    #[test]
    fn by_path_links_follow_the_pci_plan() {
        use Bus::*;
        let buses = [Virtio, Scsi, Nvme, Sata, Virtio, Scsi, Nvme, Sata];
        let links: Vec<_> = (0..buses.len())
            .map(|i| by_path(&buses, i).unwrap())
            .collect();
        // As udev made them in the guest for these eight disks.
        assert_eq!(
            links,
            [
                "/dev/disk/by-path/pci-0000:00:08.0",
                "/dev/disk/by-path/pci-0000:00:04.0-scsi-0:0:0:0",
                "/dev/disk/by-path/pci-0000:00:09.0-nvme-1",
                "/dev/disk/by-path/pci-0000:00:1f.2-ata-1.0",
                "/dev/disk/by-path/pci-0000:00:0a.0",
                "/dev/disk/by-path/pci-0000:00:04.0-scsi-0:0:1:0",
                "/dev/disk/by-path/pci-0000:00:0b.0-nvme-1",
                "/dev/disk/by-path/pci-0000:00:1f.2-ata-2.0",
            ]
        );
        assert_eq!(
            by_path(&[Nvme], 0).unwrap(),
            "/dev/disk/by-path/pci-0000:00:08.0-nvme-1"
        );
    }

    #[test]
    fn by_path_refuses_disks_beyond_the_plan() {
        let pci = [Bus::Virtio; 24];
        assert_eq!(
            by_path(&pci, 22).unwrap(),
            "/dev/disk/by-path/pci-0000:00:1e.0"
        );
        let e = by_path(&pci, 23).unwrap_err();
        assert_eq!(
            e,
            DiskPlanError::NoRoom {
                bus: Bus::Virtio,
                room: 23,
                number: 24
            }
        );
        assert_eq!(
            e.to_string(),
            "the VM has 23 PCI slots for virtio and NVMe disks (00:08.0 to 00:1e.0); this virtio disk would be number 24"
        );
        let sata = [Bus::Sata; 6];
        assert_eq!(
            by_path(&sata, 4).unwrap(),
            "/dev/disk/by-path/pci-0000:00:1f.2-ata-5.0"
        );
        let e = by_path(&sata, 5).unwrap_err().to_string();
        assert!(e.contains("CD-ROM"), "{e}");
    }

    #[test]
    fn by_id_links_follow_udev() {
        assert_eq!(
            by_id(&d("x", Bus::Scsi)),
            "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_sno-x"
        );
        assert_eq!(
            by_id(&d("x", Bus::Nvme)),
            "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_sno-x"
        );
    }
}
