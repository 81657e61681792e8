//! One `--set KEY=VALUE` (scenario/overrides.rs), and how overrides change a scenario's TOML:
//! the key is a matrix axis's dotted key, written into the table the way an axis value is
//! (`keys`), and the result checked exactly as a scenario file is. A matrix's base takes them
//! too, before its axes.

use std::path::Path;
use std::str::FromStr;

use toml::{Table, Value};

use super::keys::{apply_all, Change, Target};
use crate::scenario::{parse_str, Scenario, ScenarioError};

/// One `--set KEY=VALUE`, as given and as a TOML value.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub key: String,
    pub value: Value,
    /// `KEY=VALUE` as the user wrote it, for messages and the run's record.
    pub given: String,
}

impl Override {
    /// Whether the override and a matrix axis over `axis_key` set the same key, or one a part
    /// of the other's (`install.proxy` and `install.proxy.http_proxy`): the axis's value would
    /// replace the override's in every permutation.
    pub fn overlaps(&self, axis_key: &str) -> bool {
        let within = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|r| r.starts_with('.'));
        self.key == axis_key || within(&self.key, axis_key) || within(axis_key, &self.key)
    }
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

/// `sets` applied in order to `table`, the TOML of the valid scenario `s` of `path` (a matrix's
/// base, or a scenario file): the changed table and the scenario it validates to, which
/// records the overrides. Errors name the file (no line: the value came from the command line), the
/// override and the checker's words (what would be valid).
pub fn apply(
    path: &Path,
    mut table: Table,
    mut s: Scenario,
    sets: &[Override],
) -> Result<(Table, Scenario), ScenarioError> {
    let refuse = |o: &Override, why: String| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message: format!("--set {}: {why}", o.given),
    };
    for o in sets {
        let target = Target::resolve(&o.key, &table).map_err(|e| refuse(o, e.to_string()))?;
        let change = Change::new(&target, &o.value).map_err(|e| refuse(o, e.to_string()))?;
        table = apply_all(&table, &s, &[&change]).map_err(|e| refuse(o, e.to_string()))?;
        let text = toml::to_string(&table).map_err(|e| refuse(o, e.to_string()))?;
        // Each override is checked as it comes, so that the first one refused is named.
        s = parse_str(path, &text).map_err(|e| refuse(o, e.message))?;
    }
    s.overrides = sets.iter().map(|o| o.given.clone()).collect();
    Ok((table, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> Override {
        s.parse().unwrap()
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
    fn an_override_overlaps_an_axis_of_its_key_or_of_a_part_of_it() {
        let o = set("install.proxy.http_proxy=http://p:3128");
        assert!(o.overlaps("install.proxy.http_proxy"));
        assert!(o.overlaps("install.proxy"));
        assert!(set("install.proxy={}").overlaps("install.proxy.http_proxy"));
        assert!(!o.overlaps("install.proxy.https_proxy"));
        assert!(!set("vm.memory=4GiB").overlaps("vm.memory_x"));
        assert!(!set("disks.install.bus=nvme").overlaps("disks.layout"));
    }
}
