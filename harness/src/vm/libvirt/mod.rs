//! The libvirt backend: the domain XML of a `VmSpec` (`domain`) and the run's NAT network
//! (`network`), typed structs serialised by quick-xml and checked against libvirt 9.0's schemas
//! by the tests (`virt-xml-validate`); the running domain with its events, block stats and
//! console (`runtime`, `console_stream`); remote hosts over `qemu+ssh` (`remote`,
//! `remote_run`, `storage`, `tunnel`, `host_facts`); and its half of `gc`.

pub mod capacity;
pub mod console_stream;
pub mod domain;
mod error;
pub mod gc;
pub mod host_facts;
pub mod network;
mod ppm;
pub mod qemu_user;
pub mod remote;
pub mod remote_run;
pub mod runtime;
pub mod storage;
pub mod tunnel;

pub use console_stream::{console_over_stream, ConsolePump};
pub use domain::{disk_alias, disk_id_from_qdev, domain_xml};
pub use error::LibvirtError;
pub use network::{nat_network_xml, NatNetwork};
pub use remote::{remote_target, RemoteTarget, UriError};
pub use runtime::{LibvirtVm, DEFAULT_URI};
pub use storage::{leftover_pools, RunPool, StorageError, VolumeFormat};
pub use tunnel::{Tunnel, TunnelError, TunnelOptions};

#[cfg(test)]
mod tests;
