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

/// As scenarios and QEMU spell it: `kvm`, `tcg`.
impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accelerator_prints_as_scenarios_spell_it() {
        for a in [Accel::Kvm, Accel::Tcg] {
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{a}\""));
        }
    }
}
