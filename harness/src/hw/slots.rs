//! Where every device sits, so the guest's `/dev/disk/by-path/...` links follow from the VmSpec
//! alone (`hw::naming::by_path` turns a [`DiskPlace`] into the link). All PCI devices are
//! on q35's root bus `pcie.0` at a fixed slot, function 0, given as `bus=pcie.0,addr=0xSS`:
//!
//! | PCI address | device |
//! |---|---|
//! | 00:00.0 | q35 host bridge (built in) |
//! | 00:01.0 | `VGA` |
//! | 00:02.0 | `virtio-net-pci` |
//! | 00:03.0 | `virtio-rng-pci` |
//! | 00:04.0 | `virtio-scsi-pci`, when a disk is on SCSI; its `scsi-hd` disks are channel 0, target 0, 1, ... in the order of the disks, LUN 0 (a multipath disk's first path) |
//! | 00:06.0 | a second `virtio-scsi-pci`, when a disk is multipath: its second path, at the target of its first |
//! | 00:08.0 to 00:1e.0 | `virtio-blk-pci` and `nvme` disks, one slot each, in the order of the disks (23 at most) |
//! | 00:1f.0 | ICH9 LPC bridge (built in); `pvpanic` is an ISA device behind it (no PCI address) |
//! | 00:1f.2 | ICH9 AHCI (built in): SATA disks (`ide-hd`) on ports 0 to 4 in the order of the disks, the CD-ROM on port 5 |
//! | 00:1f.3 | ICH9 SMBus (built in) |

use super::disk::Bus;

pub const VGA_SLOT: u8 = 0x01;
pub const NET_SLOT: u8 = 0x02;
pub const RNG_SLOT: u8 = 0x03;
/// NIC 1, the second port of a bond, when the scenario has one.
pub const NET2_SLOT: u8 = 0x05;
/// The virtio-scsi controller, present only when a disk is on SCSI.
pub const SCSI_CONTROLLER_SLOT: u8 = 0x04;
/// The second virtio-scsi controller, present only when a disk is multipath: the other path.
pub const SCSI2_CONTROLLER_SLOT: u8 = 0x06;
/// virtio-blk and NVMe disks take slots from here up, in the order of the disks.
pub const FIRST_DISK_SLOT: u8 = 0x08;
/// The last free slot: 0x1f holds q35's built-in ICH9 functions.
pub const LAST_DISK_SLOT: u8 = 0x1e;
/// q35's built-in AHCI controller, 00:1f.2.
pub const AHCI_SLOT: u8 = 0x1f;
pub const AHCI_FUNCTION: u8 = 2;
/// AHCI port of the CD-ROM; SATA disks take ports from 0 up to the one before it.
pub const CDROM_AHCI_PORT: u8 = 5;
/// virtio-scsi's highest target (QEMU's `VIRTIO_SCSI_MAX_TARGET`).
pub const LAST_SCSI_TARGET: u8 = 255;

/// Where a disk sits: one variant per bus, so a place says which device it is too, and a match
/// over places needs no case for a bus at a place it cannot have. A new bus then fails to
/// compile wherever a place is turned into a device, rather than panicking at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskPlace {
    /// A virtio-blk disk: a PCI slot of its own on pcie.0, function 0.
    Virtio { slot: u8 },
    /// An NVMe controller: a PCI slot of its own on pcie.0, function 0.
    Nvme { slot: u8 },
    /// Channel 0, this target, LUN 0 of the virtio-scsi controller at [`SCSI_CONTROLLER_SLOT`].
    Scsi { target: u8 },
    /// This port of q35's AHCI controller.
    Sata { port: u8 },
}

/// Why a disk has no place in the plan (`disk_place`), or no name the guest gives it
/// reliably (`hw::naming`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiskPlanError {
    /// Disk `number` (from 1) of those that share `bus`'s pool, which has `room` places.
    #[error("the VM has {room} {}; this {} disk would be number {number}", pool(*.bus), .bus.name())]
    NoRoom {
        bus: Bus,
        room: usize,
        number: usize,
    },
    /// SCSI and SATA disks share the kernel's sdX names, in the order two drivers probe.
    #[error("disk {disk:?} has no stable name: SCSI and SATA disks share the sdX names in probe order; name it by = \"id\"")]
    NoStableName { disk: String },
    /// A multipath disk's two paths are SCSI disks too, of two controllers probed in parallel.
    #[error("disk {disk:?} has no stable name: the multipath disk's two paths take sdX names too, on two controllers probed in parallel; name it by = \"id\"")]
    BesideMultipath { disk: String },
}

/// The places of a bus's pool, in words.
fn pool(bus: Bus) -> String {
    match bus {
        Bus::Virtio | Bus::Nvme => format!(
            "PCI slots for virtio and NVMe disks (00:{FIRST_DISK_SLOT:02x}.0 to 00:{LAST_DISK_SLOT:02x}.0)"
        ),
        Bus::Scsi => "virtio-scsi targets".to_string(),
        Bus::Sata => {
            format!("AHCI ports for SATA disks (the CD-ROM is on port {CDROM_AHCI_PORT})")
        }
    }
}

/// How many disks of `bus`'s pool the plan has places for.
fn room(bus: Bus) -> usize {
    match bus {
        Bus::Virtio | Bus::Nvme => usize::from(LAST_DISK_SLOT - FIRST_DISK_SLOT) + 1,
        Bus::Scsi => usize::from(LAST_SCSI_TARGET) + 1,
        Bus::Sata => usize::from(CDROM_AHCI_PORT),
    }
}

/// Where disk `index` of a VM whose disks are on `buses` (in order) sits, or why it does not
/// fit the plan. The command line places every disk with `place`; one that does not fit
/// gets an address QEMU refuses to start with (slot 0x1f is taken, so is the CD-ROM's port).
pub fn disk_place(buses: &[Bus], index: usize) -> Result<DiskPlace, DiskPlanError> {
    let (bus, rank) = (buses[index], rank(buses, index));
    if rank >= room(bus) {
        return Err(DiskPlanError::NoRoom {
            bus,
            room: room(bus),
            number: rank + 1,
        });
    }
    Ok(place(buses, index))
}

/// [`disk_place`] without the check that the disk fits.
pub fn place(buses: &[Bus], index: usize) -> DiskPlace {
    let rank = rank(buses, index);
    let small = |n: usize| u8::try_from(n).unwrap_or(u8::MAX);
    let slot = || small(usize::from(FIRST_DISK_SLOT) + rank);
    match buses[index] {
        Bus::Virtio => DiskPlace::Virtio { slot: slot() },
        Bus::Nvme => DiskPlace::Nvme { slot: slot() },
        Bus::Scsi => DiskPlace::Scsi {
            target: small(rank),
        },
        Bus::Sata => DiskPlace::Sata { port: small(rank) },
    }
}

/// How many disks before `index` take from the same pool (PCI slots, SCSI targets, ports).
fn rank(buses: &[Bus], index: usize) -> usize {
    let pool = |b: Bus| match b {
        Bus::Virtio | Bus::Nvme => 0,
        Bus::Scsi => 1,
        Bus::Sata => 2,
    };
    buses[..index]
        .iter()
        .filter(|b| pool(**b) == pool(buses[index]))
        .count()
}
