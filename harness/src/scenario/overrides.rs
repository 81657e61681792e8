//! `--set KEY=VALUE`: a scenario key changed from the command line, without editing the file
//! (kcli's `-P key=value`). Keys are the matrix axes' dotted keys (`vm.memory`,
//! `openshift.release_image`, `disks.install.bus`, `disks.layout`), applied to the file's TOML
//! the way an axis value is; the result is checked exactly as the file is, and an override it
//! refuses is named with the checker's words (what would be valid).

use std::path::Path;
use std::str::FromStr;

use toml::{Table, Value};

use super::matrix::keys::{apply_all, Change, Target};
use super::parse::read_text;
use super::{parse_str, Scenario, ScenarioError};

/// One `--set KEY=VALUE`, as given and as a TOML value.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub key: String,
    pub value: Value,
    /// `KEY=VALUE` as the user wrote it, for messages and the run's record.
    pub given: String,
}

/// A `--set` argument that is not `KEY=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not KEY=VALUE (a scenario key as a matrix axis names it, e.g. vm.memory=24GiB, openshift.release_image=quay.io/..., disks.install.bus=nvme)")]
pub struct NotAnOverride(String);

impl FromStr for Override {
    type Err = NotAnOverride;

    /// The value is read as TOML when it is a TOML value (`4`, `true`, `["a", "b"]`,
    /// `"quoted"`), else taken as the string it is (`24GiB`, `quay.io/x:4.16`), so that the
    /// shell's quoting is not needed for the common case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some((key, raw)) = s.split_once('=') else {
            return Err(NotAnOverride(s.to_string()));
        };
        let key = key.trim();
        if key.is_empty() || raw.is_empty() {
            return Err(NotAnOverride(s.to_string()));
        }
        let value = toml::from_str::<Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| Value::String(raw.to_string()));
        Ok(Override {
            key: key.to_string(),
            value,
            given: s.to_string(),
        })
    }
}

/// The scenario of `path` with `sets` applied, in the order given. The file is checked alone
/// first, so that its own errors keep their lines; an override the result refuses is then the
/// override's error, naming it (the file and the key, no line: the value came from the command
/// line).
pub fn load_with(path: &Path, sets: &[Override]) -> Result<Scenario, ScenarioError> {
    let text = read_text(path)?;
    let mut s = parse_str(path, &text)?;
    if sets.is_empty() {
        return Ok(s);
    }
    let refuse = |o: &Override, why: String| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message: format!("--set {}: {why}", o.given),
    };
    // The text parsed as a scenario above is TOML.
    let mut table: Table = toml::from_str(&text).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message: e.message().to_string(),
    })?;
    for o in sets {
        let target = Target::resolve(&o.key, &table).map_err(|e| refuse(o, e.to_string()))?;
        let change = Change::new(&target, &o.value).map_err(|e| refuse(o, e.to_string()))?;
        table = apply_all(&table, &s, &[&change]).map_err(|e| refuse(o, e.to_string()))?;
        let text = toml::to_string(&table).map_err(|e| refuse(o, e.to_string()))?;
        // Each override is checked as it comes, so that the first one refused is named.
        s = parse_str(path, &text).map_err(|e| refuse(o, e.message))?;
    }
    s.overrides = sets.iter().map(|o| o.given.clone()).collect();
    Ok(s)
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
    fn a_value_is_toml_when_it_is_toml_and_a_string_otherwise() {
        assert_eq!(set("vm.vcpus=4").value, Value::Integer(4));
        assert_eq!(set("vm.memory=24GiB").value, Value::String("24GiB".into()));
        assert_eq!(set("a.b=\"x y\"").value, Value::String("x y".into()));
        assert_eq!(
            set("openshift.release_image=quay.io/o/r:4.16=x").value,
            Value::String("quay.io/o/r:4.16=x".into())
        );
        for bad in ["vm.vcpus", "=4", "vm.vcpus="] {
            assert!(bad.parse::<Override>().is_err(), "{bad}");
        }
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
