//! Firmware: SeaBIOS, OVMF, or OVMF with Secure Boot, and where Debian's `ovmf` package puts
//! OVMF's builds.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Firmware {
    /// SeaBIOS.
    Bios,
    /// OVMF, with a per-VM copy of the variable store.
    Uefi,
    /// OVMF's Secure Boot build with Microsoft's keys enrolled in the variable store, as on a
    /// PC: the firmware runs only boot loaders signed by a key of its db (shim, signed by
    /// Microsoft's UEFI CA). kola's `uefi-secure` (coreos-assembler's
    /// mantle/platform/qemu.go) is the same machine: the secboot code, a variable store with
    /// the keys, q35 with SMM, the code flash marked secure.
    UefiSecure,
}

/// Paths of the OVMF firmware shipped by Debian's `ovmf` package.
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";
/// OVMF's Secure Boot build: its variable store lives behind SMM, so it needs a machine with
/// SMM and the code flash marked secure (only SMM code may write the variables).
pub const OVMF_CODE_SECBOOT: &str = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd";
/// A variable store with Secure Boot on and Microsoft's keys enrolled (KEK, db: the Windows
/// and UEFI CAs), which is what trusts shim.
pub const OVMF_VARS_MS: &str = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd";

impl Firmware {
    /// As the scenario file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Firmware::Bios => "bios",
            Firmware::Uefi => "uefi",
            Firmware::UefiSecure => "uefi-secure",
        }
    }

    /// OVMF, with or without Secure Boot: a variable store per VM, EFI boot entries.
    pub fn is_uefi(self) -> bool {
        self != Firmware::Bios
    }

    /// The firmware enforces Secure Boot.
    pub fn secure_boot(self) -> bool {
        self == Firmware::UefiSecure
    }

    /// OVMF's code, read-only and shared; None for SeaBIOS (QEMU's default).
    pub fn ovmf_code(self) -> Option<&'static str> {
        match self {
            Firmware::Bios => None,
            Firmware::Uefi => Some(OVMF_CODE),
            Firmware::UefiSecure => Some(OVMF_CODE_SECBOOT),
        }
    }

    /// What a VM's own variable store starts as; None for SeaBIOS.
    pub fn ovmf_vars_template(self) -> Option<&'static str> {
        match self {
            Firmware::Bios => None,
            Firmware::Uefi => Some(OVMF_VARS),
            Firmware::UefiSecure => Some(OVMF_VARS_MS),
        }
    }
}

impl std::fmt::Display for Firmware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_firmware_has_its_own_ovmf_build_and_store() {
        assert_eq!(Firmware::Bios.ovmf_code(), None);
        assert_eq!(Firmware::Bios.ovmf_vars_template(), None);
        assert_eq!(Firmware::Uefi.ovmf_code(), Some(OVMF_CODE));
        assert_eq!(Firmware::Uefi.ovmf_vars_template(), Some(OVMF_VARS));
        assert_eq!(Firmware::UefiSecure.ovmf_code(), Some(OVMF_CODE_SECBOOT));
        assert_eq!(
            Firmware::UefiSecure.ovmf_vars_template(),
            Some(OVMF_VARS_MS)
        );
        assert!(Firmware::UefiSecure.is_uefi() && Firmware::UefiSecure.secure_boot());
        assert!(Firmware::Uefi.is_uefi() && !Firmware::Uefi.secure_boot());
        assert!(!Firmware::Bios.is_uefi());
    }

    #[test]
    fn the_scenario_spelling_is_serdes() {
        for f in [Firmware::Bios, Firmware::Uefi, Firmware::UefiSecure] {
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.as_str()));
            assert_eq!(serde_json::from_str::<Firmware>(&json).unwrap(), f);
        }
    }
}
