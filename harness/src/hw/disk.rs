//! Disks as the guest and the host see them: the bus, the sector sizes, and the host-side I/O
//! options (cache, AIO, throttling) both backends render.

use serde::{Deserialize, Serialize};

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

/// A disk of a scenario's VM, as validated: its id, size, bus, sectors, serial and host I/O.
#[derive(Debug, Clone, Serialize)]
pub struct Disk {
    pub id: String,
    pub size_bytes: u64,
    pub bus: Bus,
    pub sector: Sector,
    pub serial: String,
    /// Cache mode, AIO and throttling on the host (`cache`, `aio`, `throttle`).
    pub io: DiskIo,
    /// Reached over two paths (`multipath = true`; `hw::multipath`).
    pub multipath: bool,
}
