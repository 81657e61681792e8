//! The one preflight of every command that starts VMs, before anything is created: the
//! scenarios fit the backend (else bad input), then the command's own checks of its input,
//! then the host has what they need (else the host is not ready).

use sno_harness::scenario::Scenario;
use sno_harness::vm::Backend;

use super::error::CliError;

/// Runs the checks in that order; `input` is the command's own (bad input, or what it
/// decided from its flags).
pub fn preflight<T>(
    scenarios: &[&Scenario],
    backend: &Backend,
    input: impl FnOnce() -> Result<T, CliError>,
) -> Result<T, CliError> {
    sno_harness::fleet::preflight::backend_fits(scenarios, backend)
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    let decided = input()?;
    let warnings = sno_harness::fleet::preflight::check(scenarios, backend)
        .map_err(|e| CliError::HostNotReady(e.to_string()))?;
    for w in warnings {
        errln!("sno-harness: warning: {}: {}", w.check, w.detail);
    }
    Ok(decided)
}
