//! Axis keys: what a key addresses in the base scenario's TOML, and how one axis value changes
//! it. `vm.firmware` and `install.network_type` are paths of tables and keys;
//! `disks.<id>.<field>` is a field of the `[[disks]]` entry with that id; `disks.layout` and
//! `install.network_stack` are shape axes (shapes.rs).

use toml::{Table, Value};

use super::shapes::{Layout, NetworkStack, ShapeError, LAYOUT_KEY, NETWORK_STACK_KEY};
use crate::scenario::Scenario;

/// An axis key that addresses nothing in the base scenario; each says what would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("axis key {0:?}: a dotted path of scenario keys, e.g. vm.firmware, install.network_type, disks.install.bus, or a shape axis ({LAYOUT_KEY}, {NETWORK_STACK_KEY})")]
    NotAPath(String),
    #[error("name cannot be an axis: each permutation is named by its id")]
    Name,
    #[error("expect cannot be an axis: use [[expect]] rules in the matrix")]
    Expect,
    #[error("axis key {key:?}: the base scenario has no [[disks]] entry with id {disk:?} (its disks: {})", .disks.join(", "))]
    NoSuchDisk {
        key: String,
        disk: String,
        /// The ids the base's `[[disks]]` entries have.
        disks: Vec<String>,
    },
    #[error("axis key {0:?}: disks are addressed as disks.<disk id>.<field> (e.g. disks.install.bus), or {LAYOUT_KEY} for the number of disks and the install disk's position")]
    NotADiskField(String),
    /// `section`, a prefix of the key, is a value in the base, not a table.
    #[error("axis key {key:?}: {section} is not a section of the base scenario")]
    NotASection { key: String, section: String },
}

/// An axis value its key cannot take, or a scenario table it cannot be written into.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangeError {
    /// A shape axis takes words (`"3-last"`, `"ipv6"`).
    #[error("{0} is not a string")]
    NotAString(Value),
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error("no [[disks]] entry has id {0:?}")]
    NoSuchDisk(String),
    #[error("{0:?} takes a shape value")]
    ShapeTarget(Target),
    #[error("an empty key")]
    EmptyKey,
    /// A prefix of the key's path holds a value, not a table.
    #[error("{0} is not a section")]
    NotASection(String),
}

/// Where an axis writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A key reached through tables: `["vm", "firmware"]`.
    Path(Vec<String>),
    /// A field of the `[[disks]]` entry with id `disk`.
    DiskField {
        disk: String,
        field: String,
    },
    Layout,
    NetworkStack,
}

impl Target {
    /// What `key` addresses in `base` (the base scenario's TOML), or why it addresses nothing.
    pub fn resolve(key: &str, base: &Table) -> Result<Target, KeyError> {
        let parts: Vec<&str> = key.split('.').collect();
        let well_formed = parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        if !well_formed {
            return Err(KeyError::NotAPath(key.to_string()));
        }
        match parts.as_slice() {
            ["name"] => Err(KeyError::Name),
            ["expect", ..] => Err(KeyError::Expect),
            _ if key == LAYOUT_KEY => Ok(Target::Layout),
            _ if key == NETWORK_STACK_KEY => Ok(Target::NetworkStack),
            ["disks", disk, field] => {
                let ids = disk_ids(base);
                if ids.iter().any(|i| i == disk) {
                    Ok(Target::DiskField {
                        disk: disk.to_string(),
                        field: field.to_string(),
                    })
                } else {
                    Err(KeyError::NoSuchDisk {
                        key: key.to_string(),
                        disk: disk.to_string(),
                        disks: ids,
                    })
                }
            }
            ["disks", ..] => Err(KeyError::NotADiskField(key.to_string())),
            _ => {
                // Sections on the way must be tables where the base has them; missing ones are
                // created, and the scenario's schema decides whether they may exist.
                let mut table = base;
                for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
                    match table.get(*part) {
                        None => break,
                        Some(Value::Table(t)) => table = t,
                        Some(_) => {
                            return Err(KeyError::NotASection {
                                key: key.to_string(),
                                section: parts[..=i].join("."),
                            })
                        }
                    }
                }
                Ok(Target::Path(parts.iter().map(|p| p.to_string()).collect()))
            }
        }
    }
}

fn disk_ids(base: &Table) -> Vec<String> {
    base.get("disks")
        .and_then(Value::as_array)
        .map(|disks| {
            disks
                .iter()
                .filter_map(|d| d.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What one axis value does to the scenario's TOML.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Set { target: Target, value: Value },
    Layout(Layout),
    NetworkStack(NetworkStack),
}

impl Change {
    /// The change for `value` on an axis writing to `target`; shape axes take their own
    /// vocabulary.
    pub fn new(target: &Target, value: &Value) -> Result<Change, ChangeError> {
        let word = || {
            value
                .as_str()
                .ok_or_else(|| ChangeError::NotAString(value.clone()))
        };
        Ok(match target {
            Target::Layout => Change::Layout(Layout::parse(word()?)?),
            Target::NetworkStack => Change::NetworkStack(NetworkStack::parse(word()?)?),
            t => Change::Set {
                target: t.clone(),
                value: value.clone(),
            },
        })
    }

    /// Shape changes rewrite whole lists, so they apply after every plain key is set (a
    /// layout copies the install disk as the other axes left it).
    pub fn is_shape(&self) -> bool {
        !matches!(self, Change::Set { .. })
    }

    pub fn apply(&self, table: &mut Table, base: &Scenario) -> Result<(), ChangeError> {
        match self {
            Change::Set {
                target: Target::Path(path),
                value,
            } => set_path(table, path, value.clone()),
            Change::Set {
                target: Target::DiskField { disk, field },
                value,
            } => {
                let entry = table
                    .get_mut("disks")
                    .and_then(Value::as_array_mut)
                    .and_then(|disks| {
                        disks
                            .iter_mut()
                            .find(|d| d.get("id").and_then(Value::as_str) == Some(disk))
                    })
                    .and_then(Value::as_table_mut)
                    .ok_or_else(|| ChangeError::NoSuchDisk(disk.clone()))?;
                entry.insert(field.clone(), value.clone());
                Ok(())
            }
            Change::Set { target, .. } => Err(ChangeError::ShapeTarget(target.clone())),
            Change::Layout(l) => l.apply(table).map_err(ChangeError::Shape),
            Change::NetworkStack(n) => n.apply(table, base).map_err(ChangeError::Shape),
        }
    }
}

/// The base scenario's TOML with `changes` applied: plain keys first, in the order given,
/// then shapes.
pub fn apply_all(
    base_table: &Table,
    base: &Scenario,
    changes: &[&Change],
) -> Result<Table, ChangeError> {
    let mut table = base_table.clone();
    let (shapes, plain): (Vec<&Change>, Vec<&Change>) = changes.iter().partition(|c| c.is_shape());
    for c in plain.into_iter().chain(shapes) {
        c.apply(&mut table, base)?;
    }
    Ok(table)
}

fn set_path(table: &mut Table, path: &[String], value: Value) -> Result<(), ChangeError> {
    let Some((last, sections)) = path.split_last() else {
        return Err(ChangeError::EmptyKey);
    };
    let mut t = table;
    for (i, part) in sections.iter().enumerate() {
        t = t
            .entry(part.clone())
            .or_insert_with(|| Value::Table(Table::new()))
            .as_table_mut()
            .ok_or_else(|| ChangeError::NotASection(path[..=i].join(".")))?;
    }
    t.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Table {
        toml::from_str(
            "name = \"b\"\n[vm]\nfirmware = \"bios\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n",
        )
        .unwrap()
    }

    #[test]
    fn keys_resolve_to_paths_disk_fields_and_shapes() {
        let b = base();
        assert_eq!(
            Target::resolve("vm.firmware", &b).unwrap(),
            Target::Path(vec!["vm".into(), "firmware".into()])
        );
        assert_eq!(
            Target::resolve("timeouts.bootkube", &b).unwrap(),
            Target::Path(vec!["timeouts".into(), "bootkube".into()])
        );
        assert_eq!(
            Target::resolve("disks.install.bus", &b).unwrap(),
            Target::DiskField {
                disk: "install".into(),
                field: "bus".into()
            }
        );
        assert_eq!(Target::resolve("disks.layout", &b).unwrap(), Target::Layout);
        assert_eq!(
            Target::resolve("install.network_stack", &b).unwrap(),
            Target::NetworkStack
        );
    }

    #[test]
    fn keys_that_address_nothing_say_what_would() {
        let b = base();
        let e = Target::resolve("disks.data.bus", &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"axis key "disks.data.bus": the base scenario has no [[disks]] entry with id "data" (its disks: install)"#
        );
        let e = Target::resolve("disks.bus", &b).unwrap_err();
        assert_eq!(e, KeyError::NotADiskField("disks.bus".into()));
        assert!(e.to_string().contains("disks.<disk id>.<field>"), "{e}");
        let e = Target::resolve("name.x", &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"axis key "name.x": name is not a section of the base scenario"#
        );
        assert_eq!(Target::resolve("name", &b), Err(KeyError::Name));
        assert_eq!(
            Target::resolve("vm..firmware", &b),
            Err(KeyError::NotAPath("vm..firmware".into()))
        );
        assert_eq!(Target::resolve("expect.verdict", &b), Err(KeyError::Expect));
    }

    #[test]
    fn set_creates_missing_sections() {
        let mut t = base();
        set_path(
            &mut t,
            &["fixture".into(), "schedule".into()],
            Value::String("normal".into()),
        )
        .unwrap();
        assert_eq!(t["fixture"]["schedule"].as_str(), Some("normal"));
    }
}
