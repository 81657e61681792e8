//! The virtual machine: one definition of it (`VmSpec`, built from the `hw` vocabulary), turned
//! into a QEMU command line by `qemu::argv` or a libvirt domain by `libvirt::domain`, started
//! and watched as a `running::RunningVm` on either backend; disk images and the accelerator
//! decision.

pub mod accel;
pub mod backend;
pub mod bmc_boot;
pub mod disk;
pub mod error;
pub mod external;
pub mod libvirt;
pub mod qemu;
pub mod redfish;
pub mod run_meta;
pub mod running;
#[cfg(test)]
pub mod stand_in;
pub mod start;

use std::path::PathBuf;

pub use backend::{Backend, Capabilities};
pub use error::VmError;

/// For the harness's forced exit (a second Ctrl-C, which runs no drops): ends every VM of this
/// process's that was started to be able to outlive it (`--keep`) and not yet handed on.
pub fn end_outliving_vms() {
    qemu::process::kill_untethered();
    libvirt::runtime::destroy_outliving();
}

use serde::{Deserialize, Serialize};

use crate::hw::{Accel, Bus, DiskIo, Firmware, Sector};

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
    /// A multipath disk's WWN (`hw::multipath`): the guest reaches it over two paths, each
    /// reporting it. None for a disk with one path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipath_wwn: Option<u64>,
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
    /// A network boot from QEMU's user network (`[boot] source = "pxe"`).
    #[serde(default)]
    pub netboot: Option<NetBootSpec>,
    /// The hostname the user network's DHCP gives the guest (slirp's `hostname=`, DHCP option
    /// 12), as a site's DHCP names a master; a NAT network's dnsmasq gives its own. None: the
    /// guest gets none (the fixture fault `no-hostname`).
    #[serde(default)]
    pub dhcp_hostname: Option<String>,
    /// A second NIC (`hw::guest_net::NIC_MACS[1]`) on the same network: the other port of the
    /// scenario's bond.
    #[serde(default)]
    pub second_nic: bool,
}

/// The user network's side of a PXE boot: its TFTP server serves `tftp_dir`, its DHCP names
/// `bootfile` (an iPXE script: the NIC ROM is iPXE on both firmwares), and the NIC takes
/// `bootindex` in the boot order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetBootSpec {
    pub tftp_dir: PathBuf,
    pub bootfile: String,
    pub bootindex: u32,
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
