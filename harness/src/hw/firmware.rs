//! Firmware: SeaBIOS or OVMF, and where Debian's `ovmf` package puts OVMF.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Firmware {
    /// SeaBIOS.
    Bios,
    /// OVMF, with a per-VM copy of the variable store.
    Uefi,
}

/// Paths of the OVMF firmware shipped by Debian's `ovmf` package.
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
