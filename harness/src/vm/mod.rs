//! The virtual machine: one model of the hardware (this module), turned into a QEMU command
//! line by `qemu::argv` (and, later, into libvirt domain XML), plus disks and accelerators.

pub mod accel;
pub mod disk;
pub mod libvirt;
pub mod qemu;
pub mod running;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use accel::{Accel, AccelChoice};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Firmware {
    /// SeaBIOS.
    Bios,
    /// OVMF, with a per-VM copy of the variable store.
    Uefi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bus {
    Virtio,
    Scsi,
    Nvme,
    Sata,
}

impl Bus {
    pub const ALL: [Bus; 4] = [Bus::Virtio, Bus::Scsi, Bus::Nvme, Bus::Sata];

    pub fn name(self) -> &'static str {
        match self {
            Bus::Virtio => "virtio",
            Bus::Scsi => "scsi",
            Bus::Nvme => "nvme",
            Bus::Sata => "sata",
        }
    }
}

/// Logical and physical sector sizes of a disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Sector {
    #[serde(rename = "512")]
    S512,
    /// 512-byte logical sectors on 4096-byte physical ones.
    #[serde(rename = "512e")]
    S512e,
    /// 4K native.
    #[serde(rename = "4k")]
    S4k,
}

impl Sector {
    pub fn logical(self) -> u32 {
        match self {
            Sector::S512 | Sector::S512e => 512,
            Sector::S4k => 4096,
        }
    }

    pub fn physical(self) -> u32 {
        match self {
            Sector::S512 => 512,
            Sector::S512e | Sector::S4k => 4096,
        }
    }
}

/// How the host caches a disk's image (QEMU's `cache=`, libvirt's `<driver cache=...>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Host page cache, guest flushes ignored: the fastest, and safe enough for throw-away
    /// runs (the reason is at the `-drive` in `qemu::argv`).
    #[default]
    Unsafe,
    /// Host page cache, guest flushes reach the host's disk.
    Writeback,
    /// O_DIRECT, bypassing the host page cache; guest flushes reach the host's disk.
    None,
    /// O_DIRECT, and every write is flushed before it completes (no write cache in the guest).
    Directsync,
}

impl CacheMode {
    pub const ALL: [CacheMode; 4] = [
        CacheMode::Unsafe,
        CacheMode::Writeback,
        CacheMode::None,
        CacheMode::Directsync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Unsafe => "unsafe",
            CacheMode::Writeback => "writeback",
            CacheMode::None => "none",
            CacheMode::Directsync => "directsync",
        }
    }

    /// Whether the image is opened with O_DIRECT (`cache.direct`).
    pub fn direct(self) -> bool {
        matches!(self, CacheMode::None | CacheMode::Directsync)
    }

    /// Whether guest flushes are ignored (`cache.no-flush`).
    pub fn no_flush(self) -> bool {
        self == CacheMode::Unsafe
    }

    /// Whether the guest sees a volatile write cache (the device's `write-cache`); without
    /// one every write is written through.
    pub fn guest_write_cache(self) -> bool {
        self != CacheMode::Directsync
    }
}

/// How QEMU submits a disk's I/O to the host (QEMU's `aio=`, libvirt's `<driver io=...>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AioMode {
    /// A pool of worker threads doing blocking I/O: QEMU's default.
    #[default]
    Threads,
    /// Linux native AIO; QEMU accepts it only with O_DIRECT (cache `none` or `directsync`).
    Native,
    /// Linux io_uring.
    IoUring,
}

impl AioMode {
    pub const ALL: [AioMode; 3] = [AioMode::Threads, AioMode::Native, AioMode::IoUring];

    pub fn name(self) -> &'static str {
        match self {
            AioMode::Threads => "threads",
            AioMode::Native => "native",
            AioMode::IoUring => "io_uring",
        }
    }
}

/// QEMU's I/O throttling of one disk, reads and writes together: an emulated slow disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Throttle {
    /// Bytes per second (`throttling.bps-total`).
    pub bytes_per_s: Option<u64>,
    /// Requests per second (`throttling.iops-total`).
    pub iops: Option<u64>,
}

/// A disk's host-side I/O options. The default is what runs have always used: `cache=unsafe`,
/// `aio=threads`, no throttling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct DiskIo {
    pub cache: CacheMode,
    pub aio: AioMode,
    pub throttle: Option<Throttle>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskSpec {
    /// Short name, unique in the VM; also the QEMU drive id.
    pub id: String,
    pub path: PathBuf,
    /// `qcow2` or `raw`.
    pub format: String,
    pub bus: Bus,
    pub sector: Sector,
    pub serial: Option<String>,
    pub bootindex: Option<u32>,
    /// Cache mode, AIO and throttling on the host.
    #[serde(default)]
    pub io: DiskIo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CdromSpec {
    pub path: PathBuf,
    pub bootindex: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortForward {
    pub host_port: u16,
    pub guest_port: u16,
}

/// Everything that defines one VM, independent of how it is started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmSpec {
    pub name: String,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub firmware: Firmware,
    pub accel: Accel,
    pub disks: Vec<DiskSpec>,
    pub cdrom: Option<CdromSpec>,
    /// Per-VM copy of the OVMF variable store (UEFI only).
    pub uefi_vars: Option<PathBuf>,
    /// Unix socket the harness reads the serial console from.
    pub serial_socket: PathBuf,
    /// Unix socket of the QMP monitor (QEMU listens, never waits for it), if wanted.
    #[serde(default)]
    pub qmp_socket: Option<PathBuf>,
    pub forwards: Vec<PortForward>,
    #[serde(default)]
    pub nic: Nic,
}

/// The guest's network card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Nic {
    /// QEMU's user-mode network; the harness reaches the guest through `forwards` on
    /// 127.0.0.1.
    #[default]
    User,
    /// A port on the libvirt network `network` (libvirt backend only), with the MAC the
    /// network reserves the node's address for; `forwards` are not used.
    LibvirtNetwork { network: String },
}

/// Paths of the OVMF firmware shipped by Debian's `ovmf` package.
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
