//! What starting a VM takes besides its `VmSpec`, whichever backend starts it: the run it
//! belongs to (`RunMeta`: a libvirt domain's metadata, QEMU's registration) and the options of
//! the start (`StartOptions`).

use std::path::PathBuf;

/// The run a domain belongs to, written into its metadata so that `gc` can find what a killed
/// run left behind and where that run kept its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMeta {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// The harness process that owns the domain: its host name, pid and start time (clock ticks
    /// since boot), so that `gc` can tell a live run's domain from a dead one's without any
    /// other record.
    pub owner_host: String,
    pub owner_pid: u32,
    pub owner_start: u64,
}

impl RunMeta {
    /// Metadata naming this process as the owner.
    pub fn for_this_process(run_id: String, run_dir: PathBuf) -> RunMeta {
        let pid = std::process::id();
        RunMeta {
            run_id,
            run_dir,
            owner_host: crate::vm::libvirt::domain::host_name(),
            owner_pid: pid,
            owner_start: crate::util::process::process_start(pid).unwrap_or(0),
        }
    }
}

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
