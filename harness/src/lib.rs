//! sno-harness: an end-to-end test harness for OpenShift single-node bootstrap-in-place.
//!
//! Layers: `fixture` builds minisno (the appliance in images/); `vm` models and starts virtual
//! machines; `guest` talks to them (serial console, SSH); `util` holds shared helpers.

pub mod assets;
pub mod fixture;
pub mod flow;
pub mod guest;
pub mod health;
pub mod hw;

pub mod perf;
pub mod report;
pub mod result;
pub mod run;
pub mod scenario;
pub mod util;
pub mod vm;

/// Exit codes of the command-line contract (ARCHITECTURE.md).
pub mod exit {
    pub const OK: i32 = 0;
    pub const SCENARIO_FAILED: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const HOST_NOT_READY: i32 = 3;
    pub const HARNESS_ERROR: i32 = 4;
}
