//! The hardware vocabulary, below the scenario and the backends: disks (bus, sectors, serial,
//! host I/O), firmware, accelerators, where each device sits on the PCI bus, how the guest
//! names its disks, and the address layout of a run's NAT network. Scenario validation, both
//! backends and `plan` read the same facts from here.

pub mod accel;
pub mod disk;
pub mod firmware;
pub mod naming;
pub mod nat;
pub mod slots;

pub use accel::{Accel, AccelChoice};
pub use disk::{AioMode, Bus, CacheMode, Disk, DiskIo, Sector, Throttle};
pub use firmware::{Firmware, OVMF_CODE, OVMF_VARS};
