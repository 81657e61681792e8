//! The libvirt backend: the domain XML of a `VmSpec` (`domain`) and the run's NAT network
//! (`network`), typed structs serialised by quick-xml and checked against libvirt 9.0's schemas
//! by the tests (`virt-xml-validate`); the running domain with its events, block stats and
//! console (`runtime`, `console_stream`); remote hosts over `qemu+ssh` (`remote`,
//! `remote_run`, `storage`, `tunnel`, `host_facts`); and its half of `gc`.
//!
//! The modules that call libvirt (`runtime`, `console_stream`, `storage`, `remote_run`,
//! `capacity`, `gc`) are built with the `libvirt` feature only (on by default). Without it,
//! `absent` stands in for the ones the rest of the harness calls, under the same names: a
//! domain that cannot be started, a connection that cannot be opened, a gc that says what it
//! skipped. The XML, the URIs and the SSH forwards need no libvirt and are always built.

#[cfg(not(feature = "libvirt"))]
mod absent;
#[cfg(feature = "libvirt")]
pub mod capacity;
mod collected;
#[cfg(feature = "libvirt")]
pub mod console_stream;
pub mod domain;
mod error;
#[cfg(feature = "libvirt")]
pub mod gc;
pub mod host_facts;
pub mod network;
pub mod paths;
#[cfg(feature = "libvirt")]
mod ppm;
pub mod qemu_user;
pub mod remote;
#[cfg(feature = "libvirt")]
pub mod remote_run;
#[cfg(feature = "libvirt")]
pub mod runtime;
#[cfg(feature = "libvirt")]
pub mod storage;
pub mod tunnel;

#[cfg(not(feature = "libvirt"))]
pub use absent::{capacity, gc, runtime};
#[cfg(feature = "libvirt")]
pub use console_stream::{console_over_stream, ConsolePump};
pub use domain::{disk_alias, disk_id_from_qdev, domain_xml};
pub use error::LibvirtError;
pub use network::{nat_network_xml, NatNetwork};
pub use paths::DEFAULT_URI;
pub use remote::{remote_target, RemoteTarget, UriError};
pub use runtime::LibvirtVm;
#[cfg(feature = "libvirt")]
pub use storage::{leftover_pools, RunPool, StorageError, VolumeFormat};
pub use tunnel::{Tunnel, TunnelError, TunnelOptions};

#[cfg(test)]
mod tests;
