//! `--set KEY=VALUE`: a scenario key changed from the command line, without editing the file
//! (kcli's `-P key=value`). Keys are the matrix axes' dotted keys (`vm.memory`,
//! `openshift.release_image`, `disks.install.bus`, `disks.layout`), applied to the file's TOML
//! the way an axis value is; the result is checked exactly as the file is, and an override it
//! refuses is named with the checker's words (what would be valid).

use std::path::Path;

use toml::Table;

use super::matrix::overrides::apply;
pub use super::matrix::overrides::{NotAnOverride, Override};
use super::parse::read_text;
use super::{parse_str, Scenario, ScenarioError};

/// The scenario of `path` with `sets` applied, in the order given. The file is checked alone
/// first, so that its own errors keep their lines; an override the result refuses is then the
/// override's error, naming it (the file and the key, no line: the value came from the command
/// line).
pub fn load_with(path: &Path, sets: &[Override]) -> Result<Scenario, ScenarioError> {
    parse_with(path, &read_text(path)?, sets)
}

/// [`load_with`] of a scenario's `text` that did not come from a file of its own (one built into
/// the harness), named `path` in errors.
pub fn parse_with(path: &Path, text: &str, sets: &[Override]) -> Result<Scenario, ScenarioError> {
    let s = parse_str(path, text)?;
    if sets.is_empty() {
        return Ok(s);
    }
    // The text parsed as a scenario above is TOML.
    let table: Table = toml::from_str(text).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message: e.message().to_string(),
    })?;
    apply(path, table, s, sets).map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> Override {
        s.parse().unwrap()
    }

    fn smoke() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml")
    }

    #[test]
    fn overrides_change_the_scenario_and_are_recorded_in_order() {
        let s = load_with(&smoke(), &[set("vm.memory=4GiB"), set("vm.vcpus=1")]).unwrap();
        assert_eq!((s.vm.memory_mib, s.vm.vcpus), (4096, 1));
        assert_eq!(s.overrides, ["vm.memory=4GiB", "vm.vcpus=1"]);
        let d = load_with(&smoke(), &[set("disks.install.bus=nvme")]).unwrap();
        assert_eq!(d.disks[0].bus, crate::hw::Bus::Nvme);
        assert!(crate::scenario::load(&smoke())
            .unwrap()
            .overrides
            .is_empty());
    }

    #[test]
    fn a_refused_override_is_named_with_what_would_be_valid() {
        let e = load_with(&smoke(), &[set("vm.firmware=coreboot")]).unwrap_err();
        assert_eq!(e.line, None);
        assert!(e.message.starts_with("--set vm.firmware=coreboot: "), "{e}");
        assert!(e.message.contains("bios"), "{e}");
        let e = load_with(&smoke(), &[set("vm.memroy=4GiB")]).unwrap_err();
        assert!(e.message.contains("unknown field `memroy`"), "{e}");
        let e = load_with(&smoke(), &[set("disks.nope.bus=nvme")]).unwrap_err();
        assert!(
            e.message.contains("no [[disks]] entry with id \"nope\""),
            "{e}"
        );
        let e = load_with(&smoke(), &[set("name=x")]).unwrap_err();
        assert!(e.message.contains("name cannot be"), "{e}");
    }
}
