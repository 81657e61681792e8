//! What can go wrong with a running VM's verbs, whichever backend runs it: starting it, saving
//! and loading its state, leaving it running, and the queries of its monitor.

use super::libvirt::LibvirtError;
use super::qemu::qmp::QmpError;
use super::qemu::state_file::StateFileError;
use super::qemu::QemuError;

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// A network of the run's own is asked of a backend that has none.
    #[error("the {backend} backend has only user-mode networking; a libvirt network needs --backend libvirt")]
    NoNetwork { backend: &'static str },
    /// A verb this backend does not have (see `Backend::can`).
    #[error("{what} needs --backend qemu")]
    NotOnThisBackend { what: &'static str },
    #[error(transparent)]
    Qemu(#[from] QemuError),
    #[error("QMP: {0}")]
    Qmp(#[from] QmpError),
    #[error(transparent)]
    StateFile(#[from] StateFileError),
    #[error("libvirt ({uri}): {source}")]
    Libvirt {
        uri: String,
        #[source]
        source: LibvirtError,
    },
    /// A call on the running domain.
    #[error("libvirt: {0}")]
    LibvirtCall(#[from] LibvirtError),
    /// A libvirt call on a blocking thread that did not come back.
    #[error("a libvirt call was lost: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// The VM could not be left running for the user.
    #[error("{0}")]
    Detach(String),
    /// The console of a machine the harness did not boot cannot be read.
    #[error("the machine's console: {0}")]
    Console(String),
    /// The BMC of a machine booted through it refused, or was not reached: its message quoted.
    #[error("{0}")]
    Bmc(String),
}
