//! The three checks of the bootstrap-in-place Ignition asset. They run while that asset is
//! generated, after the install-config was accepted, so a failure here is a fatal error of the
//! command (exit 1), not an install-config error (docs/bip-contract.md §3). Errors are
//! aggregated as the real tool does.

use super::field::{self, Value};
use crate::install_config::InstallConfig;

/// The checks on a config whose defaults are applied (omitted replicas are 3 by then).
pub fn verify(config: &InstallConfig) -> Result<(), String> {
    let mut errs = Vec::new();
    let replicas = config.control_plane_replicas();
    if replicas != 1 {
        errs.push(field::invalid(
            "controlPlane.replicas",
            Value::Int(replicas.into()),
            "bootstrap in place requires a single ControlPlane replica",
        ));
    }
    match &config.bootstrap_in_place {
        None => errs.push(field::required(
            "bootstrapInPlace",
            "bootstrapInPlace is required when creating a single node bootstrap-in-place ignition",
        )),
        Some(b) if b.installation_disk.is_empty() => errs.push(field::required(
            "bootstrapInPlace.installationDisk",
            "installationDisk must be set the target disk drive for the installation",
        )),
        // No format check: the real tool has none (docs/bip-contract.md §3).
        Some(_) => {}
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(field::aggregate(&errs))
    }
}
