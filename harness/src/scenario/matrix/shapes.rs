//! Shape axes: axis keys that are not a path into the scenario but rewrite a part of it.
//!
//! - `disks.layout`: how many disks the VM has and where the install disk sits among them.
//!   Values are `"N"` (N disks, the install disk first) or `"N-POSITION"` with POSITION
//!   `first`, `second`, ... `eighth` or `last`; N from 1 to 8. The base must have exactly one
//!   `[[disks]]` entry, the install disk; the others copy it (size, bus, sector) with ids
//!   `extra1`, `extra2`, ... and serials `sno-extra1`, ... so every disk has its own by-id link;
//!   a copy of a multipath install disk is a plain disk (only the install disk may be multipath).
//! - `install.network_stack`: which IP families the install-config's networks have and in what
//!   order. `ipv4` keeps the IPv4 networks; `ipv6` has only IPv6 ones; `dual-stack` lists
//!   IPv4 then IPv6; `ipv6-first` lists IPv6 first, which the installer refuses ("IPv4 addresses must be listed before IPv6
//!   addresses"). The IPv4 networks come from the scenario; the IPv6 ones too when it has any,
//!   else QEMU user networking's `fec0::/64` for the machine network, `fd01::/48` (host prefix
//!   64) for the cluster network and `fd02::/112` for services.

use toml::{Table, Value};

use crate::scenario::Scenario;

pub const LAYOUT_KEY: &str = "disks.layout";
pub const NETWORK_STACK_KEY: &str = "install.network_stack";

const MAX_DISKS: usize = 8;
const ORDINALS: [&str; MAX_DISKS] = [
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
];

/// A shape axis value that does not read, or a base scenario it cannot reshape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("disks.layout value {0:?}: use \"N\" (N disks, the install disk first) or \"N-POSITION\" with N from 1 to {MAX_DISKS} and POSITION one of {ordinals} or last (e.g. \"1\", \"2-second\", \"3-last\")", ordinals = ORDINALS.join(", "))]
    LayoutUsage(String),
    #[error(
        "disks.layout value {value:?}: the install disk cannot be {position} of {disks} disks"
    )]
    InstallBeyondDisks {
        value: String,
        position: &'static str,
        disks: usize,
    },
    #[error("disks.layout builds the disks from the base scenario's install disk, so the base needs exactly one [[disks]] entry; it has {0}")]
    LayoutBaseDisks(usize),
    #[error("disks.layout needs a [[disks]] entry in the base scenario")]
    LayoutNoDisks,
    #[error("install.network_stack value {0:?}: use {names}", names = NetworkStack::quoted_names())]
    UnknownNetworkStack(String),
    #[error("install is not a table")]
    InstallNotATable,
    /// `install.<key>`, one of the networks, set to something else than a list.
    #[error("install.{0} is not a list")]
    NetworksNotAList(&'static str),
    #[error("install.network_stack needs an IPv4 install.{0} in the scenario to start from")]
    NoIpv4Network(&'static str),
}

/// A `disks.layout` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub disks: usize,
    /// 0-based position of the install disk.
    pub install_at: usize,
}

impl Layout {
    pub fn parse(s: &str) -> Result<Layout, ShapeError> {
        let usage = || ShapeError::LayoutUsage(s.to_string());
        let (count, position) = match s.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (s, None),
        };
        let disks: usize = count.parse().map_err(|_| usage())?;
        if !(1..=MAX_DISKS).contains(&disks) {
            return Err(usage());
        }
        let install_at = match position {
            None => 0,
            Some("last") => disks - 1,
            Some(p) => ORDINALS.iter().position(|o| *o == p).ok_or_else(usage)?,
        };
        if install_at >= disks {
            return Err(ShapeError::InstallBeyondDisks {
                value: s.to_string(),
                position: ORDINALS[install_at],
                disks,
            });
        }
        Ok(Layout { disks, install_at })
    }

    /// Rewrites the scenario's `[[disks]]`: the single base disk at its position, copies of it
    /// elsewhere.
    pub fn apply(&self, table: &mut Table) -> Result<(), ShapeError> {
        let install = match table.get("disks").and_then(Value::as_array) {
            Some(d) if d.len() == 1 => d[0].clone(),
            Some(d) => return Err(ShapeError::LayoutBaseDisks(d.len())),
            None => return Err(ShapeError::LayoutNoDisks),
        };
        let mut disks = Vec::with_capacity(self.disks);
        let mut extra = 0;
        for i in 0..self.disks {
            if i == self.install_at {
                disks.push(install.clone());
                continue;
            }
            extra += 1;
            let mut copy = install.clone();
            if let Some(t) = copy.as_table_mut() {
                let id = format!("extra{extra}");
                t.insert("serial".into(), Value::String(format!("sno-{id}")));
                // Only the installation disk may be multipath: the others are plain disks of
                // its bus beside it.
                t.remove("multipath");
                t.insert("id".into(), Value::String(id));
            }
            disks.push(copy);
        }
        table.insert("disks".into(), Value::Array(disks));
        Ok(())
    }
}

/// An `install.network_stack` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkStack {
    Ipv4,
    Ipv6,
    DualStack,
    Ipv6First,
}

impl NetworkStack {
    const NAMES: [(&'static str, NetworkStack); 4] = [
        ("ipv4", NetworkStack::Ipv4),
        ("ipv6", NetworkStack::Ipv6),
        ("dual-stack", NetworkStack::DualStack),
        ("ipv6-first", NetworkStack::Ipv6First),
    ];

    pub fn parse(s: &str) -> Result<NetworkStack, ShapeError> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, v)| *v)
            .ok_or_else(|| ShapeError::UnknownNetworkStack(s.to_string()))
    }

    /// The values, quoted: `"ipv4", "ipv6", ...`.
    fn quoted_names() -> String {
        let names: Vec<String> = Self::NAMES.iter().map(|(n, _)| format!("{n:?}")).collect();
        names.join(", ")
    }

    /// Rewrites `install.machine_network`, `cluster_network` and `service_network`. Lists the
    /// table does not set come from `base` (the scenario defaults resolved).
    pub fn apply(&self, table: &mut Table, base: &Scenario) -> Result<(), ShapeError> {
        let install = table
            .entry("install")
            .or_insert_with(|| Value::Table(Table::new()));
        let Some(install) = install.as_table_mut() else {
            return Err(ShapeError::InstallNotATable);
        };
        let defaults = [
            (
                "machine_network",
                strings(&base.install.machine_network),
                vec![Value::String("fec0::/64".into())],
            ),
            (
                "cluster_network",
                Value::try_from(&base.install.cluster_network)
                    .ok()
                    .and_then(|v| v.as_array().cloned())
                    .unwrap_or_default(),
                vec![cluster_entry("fd01::/48", 64)],
            ),
            (
                "service_network",
                strings(&base.install.service_network),
                vec![Value::String("fd02::/112".into())],
            ),
        ];
        for (key, from_base, ipv6_default) in defaults {
            let current = match install.get(key) {
                Some(Value::Array(a)) => a.clone(),
                Some(_) => return Err(ShapeError::NetworksNotAList(key)),
                None => from_base,
            };
            let (v6, v4): (Vec<Value>, Vec<Value>) =
                current.into_iter().partition(|e| cidr_of(e).contains(':'));
            if v4.is_empty() {
                return Err(ShapeError::NoIpv4Network(key));
            }
            let v6 = if v6.is_empty() { ipv6_default } else { v6 };
            let list = match self {
                NetworkStack::Ipv4 => v4,
                NetworkStack::Ipv6 => v6,
                NetworkStack::DualStack => v4.into_iter().chain(v6).collect(),
                NetworkStack::Ipv6First => v6.into_iter().chain(v4).collect(),
            };
            install.insert(key.into(), Value::Array(list));
        }
        Ok(())
    }
}

fn strings(list: &[String]) -> Vec<Value> {
    list.iter().map(|s| Value::String(s.clone())).collect()
}

fn cluster_entry(cidr: &str, host_prefix: i64) -> Value {
    let mut t = Table::new();
    t.insert("cidr".into(), Value::String(cidr.into()));
    t.insert("host_prefix".into(), Value::Integer(host_prefix));
    Value::Table(t)
}

/// The CIDR of a network entry: the string itself, or a cluster network's `cidr`.
fn cidr_of(entry: &Value) -> &str {
    match entry {
        Value::String(s) => s,
        Value::Table(t) => t.get("cidr").and_then(Value::as_str).unwrap_or(""),
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_name_a_count_and_a_position() {
        assert_eq!(
            Layout::parse("1").unwrap(),
            Layout {
                disks: 1,
                install_at: 0
            }
        );
        assert_eq!(Layout::parse("2-second").unwrap().install_at, 1);
        assert_eq!(
            Layout::parse("3-last").unwrap(),
            Layout::parse("3-third").unwrap()
        );
        assert_eq!(
            Layout::parse("3").unwrap(),
            Layout::parse("3-first").unwrap()
        );
        let e = Layout::parse("2-third").unwrap_err();
        assert_eq!(
            e.to_string(),
            "disks.layout value \"2-third\": the install disk cannot be third of 2 disks"
        );
        for bad in ["0", "9", "two", "2-middle", "", "-first"] {
            let e = Layout::parse(bad).unwrap_err();
            assert_eq!(e, ShapeError::LayoutUsage(bad.into()));
            let e = e.to_string();
            assert!(e.contains("\"N-POSITION\""), "{bad}: {e}");
        }
    }

    #[test]
    fn a_layout_copies_the_install_disk() {
        let mut t: Table = toml::from_str(
            "[[disks]]\nid = \"install\"\nsize = \"8GiB\"\nbus = \"nvme\"\nserial = \"sno-install\"\n",
        )
        .unwrap();
        Layout::parse("3-second").unwrap().apply(&mut t).unwrap();
        let disks = t["disks"].as_array().unwrap();
        let field = |i: usize, k: &str| disks[i][k].as_str().unwrap().to_string();
        assert_eq!(
            (0..3).map(|i| field(i, "id")).collect::<Vec<_>>(),
            ["extra1", "install", "extra2"]
        );
        assert_eq!(field(2, "serial"), "sno-extra2");
        assert_eq!(field(0, "bus"), "nvme");
        assert_eq!(field(0, "size"), "8GiB");
    }

    #[test]
    fn network_stacks_name_their_vocabulary() {
        let e = NetworkStack::parse("ipv7").unwrap_err().to_string();
        assert_eq!(
            e,
            r#"install.network_stack value "ipv7": use "ipv4", "ipv6", "dual-stack", "ipv6-first""#
        );
        assert_eq!(NetworkStack::parse("ipv6"), Ok(NetworkStack::Ipv6));
    }
}
