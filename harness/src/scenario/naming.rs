//! How the guest names a scenario's disks: the kernel's device names and udev's by-id links.

use crate::vm::Bus;

use super::model::Disk;

/// `/dev/disk/by-id/...` of a disk, from its bus and serial (udev's persistent-storage rules).
pub fn by_id(disk: &Disk) -> String {
    let id = match disk.bus {
        Bus::Virtio => format!("virtio-{}", disk.serial),
        Bus::Scsi => format!("scsi-0QEMU_QEMU_HARDDISK_{}", disk.serial),
        Bus::Nvme => format!("nvme-QEMU_NVMe_Ctrl_{}", disk.serial),
        Bus::Sata => format!("ata-QEMU_HARDDISK_{}", disk.serial),
    };
    format!("/dev/disk/by-id/{id}")
}

/// The kernel's name for disk `index` of `disks`: virtio disks are vda, vdb... in order;
/// NVMe controllers nvme0n1, nvme1n1...; SCSI or SATA disks sda, sdb... in order. SCSI and SATA
/// disks together have no stable order (two drivers probe in parallel), so that is refused.
pub fn kernel_name(disks: &[Disk], index: usize) -> Result<String, String> {
    let disk = &disks[index];
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
                Err(format!(
                    "disk {:?} has no stable name: SCSI and SATA disks share the sdX names in probe order; name it by = \"id\"",
                    disk.id
                ))
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
fn letters(mut n: usize) -> String {
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
    use crate::vm::Sector;

    fn d(id: &str, bus: Bus) -> Disk {
        Disk {
            id: id.into(),
            size_bytes: 1,
            bus,
            sector: Sector::S512,
            serial: format!("sno-{id}"),
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
        assert!(kernel_name(&disks, 1).unwrap_err().contains("by = \"id\""));
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
