//! Accelerators: what a scenario asks for and what a VM runs under (`vm::accel` decides).

use serde::{Deserialize, Serialize};

/// The accelerator a VM runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

/// What a scenario asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    #[default]
    Auto,
    Kvm,
    Tcg,
}
