//! The node's names, which a real install needs resolvable (docs/bip-contract.md §6, §9): the
//! installed node's kubelet registers through `api-int`, clients reach `api`, and the
//! console, OAuth and ingress canary routes are names under `*.apps`, which the operators
//! check from their pods. How they are served depends on the network (docs/real-openshift.md,
//! "How the cluster's names reach pods"):
//! - QEMU's user network (QEMU, and libvirt's user network, local or remote) has no DNS of
//!   the harness's: the node gets a resolver of its own ([`resolver`]: dnsmasq and a
//!   NetworkManager dispatcher script, as assisted-service gives a single-node cluster), in
//!   the live Ignition for the live system and as a MachineConfig (created between `create
//!   manifests` and `create single-node-ignition-config`, as a user adds one) for the installed
//!   one. No MachineConfig owns /etc/hosts: the machine-config daemon would see the DNS
//!   operator's node-resolver rewrite it as drift.
//! - A libvirt NAT network's own dnsmasq answers the same names (vm::libvirt::network), and
//!   the node's DHCP lease names it as the nameserver: nothing goes onto the node.
//!
//! The fixture fault `no-dns` withholds the names; `apps-dns` puts them into /etc/hosts only
//! ([`hosts`], the harness's former way), which the node's own lookups read and pods do not.

mod hosts;
pub mod resolver;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use serde_json::{json, Value};

use super::ignition_edit::EditError;
use super::{write_private, AssetsError};
use crate::scenario::{GuestNetwork, Scenario};

/// The address QEMU's user network hands the guest (its first DHCP address).
pub const USER_NETWORK_GUEST: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);
/// The fault that withholds the records.
pub const NO_DNS_FAULT: &str = "no-dns";
/// The fault that puts the records into /etc/hosts only.
pub const APPS_DNS_FAULT: &str = "apps-dns";
/// The manifest's name, under openshift/ of the installer's directory.
pub const MACHINE_CONFIG_NAME: &str = "99-sno-harness-dns-master";

/// The node's address and the names that must resolve to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    pub address: IpAddr,
    /// `<cluster>.<baseDomain>`.
    pub cluster_domain: String,
    /// The names themselves (a hosts file cannot hold the `*.apps` wildcard: the routes the
    /// install waits on are listed instead).
    pub names: Vec<String>,
}

/// How the scenario's node gets its names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provision {
    /// A resolver on the node (the user network).
    NodeResolver(Records),
    /// /etc/hosts lines only: the fixture fault `apps-dns`.
    HostsOnly(Records),
    /// The run's NAT network answers them.
    NetworkDns,
    /// None: the fixture fault `no-dns`.
    Withheld,
}

impl Provision {
    /// What goes onto the node, if anything.
    pub fn records(&self) -> Option<&Records> {
        match self {
            Provision::NodeResolver(r) | Provision::HostsOnly(r) => Some(r),
            Provision::NetworkDns | Provision::Withheld => None,
        }
    }
}

impl Provision {
    /// What the node's configuration gets, in words (for `plan`), if anything.
    pub fn what_the_node_gets(&self) -> Option<String> {
        match self {
            Provision::NodeResolver(r) => Some(format!(
                "the node's resolver: {} ({} and every name under apps.{} at {}), {} and {}, and {} enabled",
                resolver::DNSMASQ_CONF,
                r.names[..2].join(", "),
                r.cluster_domain,
                r.address,
                resolver::DISPATCHER_SCRIPT,
                resolver::NM_CONF,
                resolver::UNIT
            )),
            Provision::HostsOnly(r) => Some(format!(
                "the node's /etc/hosts only (fixture fault {APPS_DNS_FAULT}): {}",
                hosts::lines(r).trim()
            )),
            Provision::NetworkDns | Provision::Withheld => None,
        }
    }
}

/// How a scenario's node gets its names.
pub fn provision_for(s: &Scenario) -> Provision {
    if s.has_fault(NO_DNS_FAULT) {
        return Provision::Withheld;
    }
    if s.vm.network == GuestNetwork::Nat {
        return Provision::NetworkDns;
    }
    let records = Records {
        address: IpAddr::V4(USER_NETWORK_GUEST),
        cluster_domain: format!("{}.{}", s.install.cluster, s.install.base_domain),
        names: crate::hw::nat::cluster_names(&s.install.cluster, &s.install.base_domain),
    };
    if s.has_fault(APPS_DNS_FAULT) {
        Provision::HostsOnly(records)
    } else {
        Provision::NodeResolver(records)
    }
}

/// An Ignition `data:` URL of `text` (percent-encoded, as RFC 2397 allows).
pub(super) fn data_url(text: &str) -> String {
    let mut out = String::from("data:,");
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The system the entries are for: the live one appends to its /etc/hosts, the installed
/// one's MachineConfig writes the whole file.
#[derive(Clone, Copy)]
enum System {
    Live,
    Installed,
}

/// The Ignition file entries and units that give `system` its names, if any.
fn entries(p: &Provision, system: System) -> Option<(Vec<Value>, Vec<Value>)> {
    match (p, system) {
        (Provision::NodeResolver(r), _) => Some((
            resolver::files(r, &r.cluster_domain),
            vec![resolver::unit_entry()],
        )),
        (Provision::HostsOnly(r), System::Live) => Some((vec![hosts::live_append(r)], vec![])),
        (Provision::HostsOnly(r), System::Installed) => {
            Some((vec![hosts::installed_file(r)], vec![]))
        }
        (Provision::NetworkDns | Provision::Withheld, _) => None,
    }
}

/// The MachineConfig that gives the installed system its names: the node's resolver (files
/// and the dnsmasq unit), or under `apps-dns` the whole /etc/hosts. None when nothing goes
/// onto the node.
pub fn machine_config(p: &Provision) -> Option<Value> {
    let (files, units) = entries(p, System::Installed)?;
    Some(master_machine_config(
        MACHINE_CONFIG_NAME,
        json!({"storage": {"files": files}, "systemd": {"units": units}}),
    ))
}

/// A master MachineConfig `name` whose Ignition (spec 3.2) has `parts` (`storage`, `systemd`).
pub(super) fn master_machine_config(name: &str, parts: Value) -> Value {
    let mut config = json!({"ignition": {"version": "3.2.0"}});
    if let (Some(c), Value::Object(parts)) = (config.as_object_mut(), parts) {
        c.extend(parts);
    }
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": name,
            "labels": {"machineconfiguration.openshift.io/role": "master"}
        },
        "spec": {"config": config}
    })
}

/// Writes the MachineConfig into `dir/openshift/`, after `create manifests`, when there is one.
pub fn write_machine_config(dir: &Path, p: &Provision) -> Result<(), AssetsError> {
    match machine_config(p) {
        Some(mc) => write_manifest(dir, MACHINE_CONFIG_NAME, &mc),
        None => Ok(()),
    }
}

/// Writes manifest `name` into `dir/openshift/NAME.yaml`, owner-only.
pub(super) fn write_manifest(dir: &Path, name: &str, manifest: &Value) -> Result<(), AssetsError> {
    let yaml = serde_saphyr::to_string(manifest).expect("a manifest serialises");
    let openshift = dir.join("openshift");
    std::fs::create_dir_all(&openshift)
        .map_err(|e| AssetsError::io(format!("creating {}", openshift.display()), e))?;
    write_private(&openshift.join(format!("{name}.yaml")), yaml.as_bytes())
}

/// Gives the live system its names in its Ignition config (spec 3.x): the resolver's files
/// and unit, or under `apps-dns` lines appended to /etc/hosts.
pub fn add_to_live_ignition(ignition: &mut Value, p: &Provision) -> Result<(), EditError> {
    let Some((files, units)) = entries(p, System::Live) else {
        return Ok(());
    };
    let root = ignition.as_object_mut().ok_or(EditError::NotAnObject)?;
    let not_files = (EditError::StorageNotAnObject, EditError::FilesNotAList);
    list_in(root, ("storage", "files"), not_files)?.extend(files);
    if !units.is_empty() {
        let not_units = (EditError::NoUnits, EditError::NoUnits);
        list_in(root, ("systemd", "units"), not_units)?.extend(units);
    }
    Ok(())
}

/// The list `root[section][key]` of an Ignition config, made when absent; `errors` say which
/// of the two is not what Ignition has there.
pub(super) fn list_in<'a>(
    root: &'a mut serde_json::Map<String, Value>,
    (section, key): (&str, &str),
    errors: (EditError, EditError),
) -> Result<&'a mut Vec<Value>, EditError> {
    root.entry(section)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or(errors.0)?
        .entry(key)
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or(errors.1)
}

#[cfg(test)]
mod tests;
