//! What can go wrong with a libvirt domain and its connection: one error type for the
//! runtime and the console stream it starts.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LibvirtError {
    #[error("libvirt's event loop: {0}")]
    EventLoop(String),
    #[error("connecting to {uri}: {message}{hint}")]
    Connect {
        uri: String,
        message: String,
        /// What to check: this host's daemons for a local URI, the SSH side for a remote one.
        hint: String,
    },
    #[error("libvirt's QEMU runs as another user and cannot reach {path}: {ancestor} has mode {mode:o}; set SNO_HARNESS_PRIVATE_DIR (where the run keeps its disks) to a directory others can traverse, such as one under /var/tmp")]
    Unreachable {
        path: PathBuf,
        ancestor: PathBuf,
        mode: u32,
    },
    #[error("libvirt refused the domain: {0}")]
    Create(String),
    #[error("libvirt refused the run's network {name}: {message} (another network may use the same subnet: choose another install.machine_network)")]
    Network { name: String, message: String },
    #[error("the domain's serial socket {path} did not accept a connection within {secs} s")]
    SerialSocket { path: PathBuf, secs: u64 },
    #[error("{what}: {message}")]
    Other { what: String, message: String },
    /// This build has no libvirt (built without the `libvirt` feature): the command line
    /// refuses the backend first (`Backend::from_flags`), so this is what a caller that got
    /// past it would see.
    #[error(
        "this build of sno-harness has no libvirt support (built without the \"libvirt\" feature)"
    )]
    NotBuiltIn,
}

#[cfg(feature = "libvirt")]
pub(super) fn other(what: &str, e: impl std::fmt::Display) -> LibvirtError {
    LibvirtError::Other {
        what: what.into(),
        message: e.to_string(),
    }
}
