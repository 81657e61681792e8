//! What starting a VM takes besides its `VmSpec`, whichever backend starts it: the run it
//! belongs to (`RunMeta`, in `run_meta.rs`) and the options of the start (`StartOptions`).

pub use super::run_meta::RunMeta;

/// How to start a VM, beyond its `VmSpec`, on any backend.
pub struct StartOptions<'a> {
    /// The run's own NAT network, created before the domain and destroyed after it.
    pub network: Option<&'a crate::vm::libvirt::NatNetwork>,
    /// The guest's addresses the harness will connect to; on a remote libvirtd they are
    /// forwarded over SSH (see `LibvirtVm::local_addr`).
    pub reach: &'a [std::net::SocketAddr],
    /// `--keep`: on a remote libvirtd, the disks come back into the run directory at the end.
    pub keep_disks: bool,
    /// Start paused, waiting for a saved state (`-incoming defer`): the QEMU backend only.
    pub incoming: bool,
    /// The QEMU backend's `--keep`: a QEMU that a passing run may leave running for the user
    /// (`RunningVm::detach`). A libvirt domain is auto-destroyed with the harness's connection.
    pub may_outlive: bool,
}
