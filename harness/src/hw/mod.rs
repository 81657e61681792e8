//! The hardware vocabulary, below the scenario and the backends: disks (bus, sectors, serial,
//! host I/O, multipath), firmware, accelerators, where each device sits on the PCI bus, how the guest
//! names its disks, its NICs' MACs and QEMU's user network (`guest_net`), the address layout
//! of a run's NAT network, and the programs and firmware files the host must provide
//! (`host_programs`). Scenario validation, both backends, `plan`, the preflight and `doctor`
//! read the same facts from here.

pub mod accel;
pub mod disk;
pub mod firmware;
pub mod guest_net;
pub mod host_programs;
pub mod multipath;
pub mod naming;
pub mod nat;
pub mod slots;

pub use accel::{Accel, AccelChoice};
pub use disk::{AioMode, Bus, CacheMode, Disk, DiskIo, Sector, Throttle};
pub use firmware::{Firmware, OVMF_CODE, OVMF_CODE_SECBOOT, OVMF_VARS, OVMF_VARS_MS};
