//! The Redfish client the bare-metal backend boots a machine through: its BMC attaches the live
//! ISO as virtual media from a URL, boots once from that CD, powers the machine on and off
//! (the path metal3 and zero-touch provisioning take to boot single-node OpenShift). It asks
//! only what DMTF's Redfish defines (ServiceRoot, Systems, Managers, VirtualMedia,
//! ComputerSystem.Reset), which sushy-tools' emulator with its libvirt driver also serves
//! (harness/tests/redfish_emulator.rs drives the real one).
//!
//! A BMC is a network peer the harness does not control: every request has a deadline and
//! every answer a size limit (`http`), a refusal is an error quoting the BMC's own message
//! (`error`), credentials come from an owner-only file or the environment and are never shown
//! (`credentials`), and https is verified, by the system's roots, a CA file or the BMC's
//! certificate fingerprint, never not at all (`tls`).

mod bmc;
pub mod credentials;
mod discovery;
pub mod endpoint;
pub mod error;
pub mod http;
mod task;
pub mod tls;

pub use bmc::{Bmc, BmcSettings, BootOverride, Media, PowerState, ResetType};
pub use credentials::Credentials;
pub use discovery::Target;
pub use error::{Problem, RedfishError, RequestError, SetupError};
pub use http::Limits;
pub use tls::{Fingerprint, Trust};

#[cfg(test)]
mod tests;
