//! The run a VM belongs to, as the VM carries it (a libvirt domain's metadata) so that `gc`
//! can find what a killed run left: the run, its directory and its owner process.

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
            owner_host: host_name(),
            owner_pid: pid,
            owner_start: crate::util::process::process_start(pid).unwrap_or(0),
        }
    }
}

/// This machine's name (the kernel's), for the owner of a domain.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
