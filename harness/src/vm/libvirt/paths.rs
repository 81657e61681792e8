//! Where libvirt is and keeps things on a host: the URI when none is given, its QEMU driver's
//! logs, a remote host's image directory. Plain names, no libvirt call: a build without the
//! `libvirt` feature needs them too (`gc` takes the log of a dead libvirt run, `doctor` names
//! the default URI).

use std::path::Path;

/// Where libvirtd listens when no URI is given: the system instance, as dev-scripts and
/// assisted-test-infra use it.
pub const DEFAULT_URI: &str = "qemu:///system";

/// Where the run's pool directory is made on the remote host: libvirt's own image directory,
/// which exists, and which its QEMU user may read, on every libvirt host.
pub const REMOTE_POOL_BASE: &str = "/var/lib/libvirt/images";

/// Where a local libvirtd's QEMU driver logs each domain (its command line and stderr). It
/// keeps the file after a transient domain is gone: the run takes it into its directory.
pub const QEMU_LOG_DIR: &str = "/var/log/libvirt/qemu";

/// Moves libvirt's log of domain `name` into `dir` as `qemu.log` (removing it where libvirt
/// left it); a copy and a removal when the two are on different filesystems. Best effort:
/// returns whether the log is now in `dir`.
pub fn take_qemu_log(name: &str, dir: &Path) -> bool {
    let from = Path::new(QEMU_LOG_DIR).join(format!("{name}.log"));
    if !from.exists() {
        return false;
    }
    let to = dir.join("qemu.log");
    let moved = std::fs::rename(&from, &to).is_ok()
        || (dir.is_dir()
            && std::fs::copy(&from, &to).is_ok()
            && std::fs::remove_file(&from).is_ok());
    if !moved && !dir.is_dir() {
        // The run directory is gone: the log has nowhere to go.
        let _ = std::fs::remove_file(&from);
    }
    moved
}
