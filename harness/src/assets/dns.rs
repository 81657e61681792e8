//! The node's names, which a real install needs resolvable (docs/bip-contract.md §6, §9): the
//! installed node's kubelet registers through `api-int`, clients reach `api`, and the
//! console, OAuth and ingress canary routes are names under `*.apps`. On QEMU's user network
//! nothing answers them, so the harness provides them as host records, on every backend and
//! network mode:
//! - the live system: appended to its /etc/hosts by the embedded Ignition;
//! - the installed system: a MachineConfig manifest (created between `create manifests` and
//!   `create single-node-ignition-config`, as a user adds one) writes its /etc/hosts, the way
//!   the machine-config operator renders any MachineConfig into the node's configuration.
//!
//! A wildcard cannot be a host record: the routes the install waits on are listed instead.
//! On a libvirt NAT network the network's dnsmasq answers the same names. The fixture fault
//! `no-dns` withholds the records, to show what a node without DNS does.

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
/// The manifest's name, under openshift/ of the installer's directory.
pub const MACHINE_CONFIG_NAME: &str = "99-sno-harness-dns-master";

/// The node's address and the names that must resolve to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    pub address: IpAddr,
    pub names: Vec<String>,
}

/// The records for a scenario's node, or None when its faults withhold them.
pub fn records_for(s: &Scenario) -> Option<Records> {
    let withheld = s
        .fixture
        .as_ref()
        .is_some_and(|f| f.faults.iter().any(|x| x.trim() == NO_DNS_FAULT));
    if withheld {
        return None;
    }
    let address = match s.vm.network {
        GuestNetwork::User => IpAddr::V4(USER_NETWORK_GUEST),
        // Validated with the scenario: a NAT scenario's machine network has a layout.
        GuestNetwork::Nat => IpAddr::V4(
            crate::hw::nat::layout(&s.install.machine_network)
                .map(|l| l.node_ipv4)
                .unwrap_or(USER_NETWORK_GUEST),
        ),
    };
    Some(Records {
        address,
        names: crate::hw::nat::cluster_names(&s.install.cluster, &s.install.base_domain),
    })
}

/// The records as /etc/hosts lines.
pub fn hosts_lines(r: &Records) -> String {
    format!("{}\t{}\n", r.address, r.names.join(" "))
}

/// The installed system's whole /etc/hosts (a MachineConfig file replaces the file).
pub fn hosts_file(r: &Records) -> String {
    format!(
        "127.0.0.1\tlocalhost localhost.localdomain localhost4 localhost4.localdomain4\n\
         ::1\tlocalhost localhost.localdomain localhost6 localhost6.localdomain6\n\
         # sno-harness: the cluster's names, for the node\n{}",
        hosts_lines(r)
    )
}

/// An Ignition `data:` URL of `text` (percent-encoded, as RFC 2397 allows).
fn data_url(text: &str) -> String {
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

/// The MachineConfig that writes the installed system's /etc/hosts.
pub fn machine_config(r: &Records) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": MACHINE_CONFIG_NAME,
            "labels": {"machineconfiguration.openshift.io/role": "master"}
        },
        "spec": {"config": {
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{
                "path": "/etc/hosts",
                "mode": 420,
                "overwrite": true,
                "contents": {"source": data_url(&hosts_file(r))}
            }]}
        }}
    })
}

/// Writes the MachineConfig into `dir/openshift/`, after `create manifests`.
pub fn write_machine_config(dir: &Path, r: &Records) -> Result<(), AssetsError> {
    let yaml = serde_saphyr::to_string(&machine_config(r)).expect("a manifest serialises");
    let openshift = dir.join("openshift");
    std::fs::create_dir_all(&openshift)
        .map_err(|e| AssetsError::io(format!("creating {}", openshift.display()), e))?;
    write_private(
        &openshift.join(format!("{MACHINE_CONFIG_NAME}.yaml")),
        yaml.as_bytes(),
    )
}

/// Appends the records to the live system's /etc/hosts in an Ignition config (spec 3.x).
pub fn add_to_live_ignition(ignition: &mut Value, r: &Records) -> Result<(), EditError> {
    let root = ignition.as_object_mut().ok_or(EditError::NotAnObject)?;
    let storage = root.entry("storage").or_insert_with(|| json!({}));
    let files = storage
        .as_object_mut()
        .ok_or(EditError::StorageNotAnObject)?
        .entry("files")
        .or_insert_with(|| json!([]));
    files
        .as_array_mut()
        .ok_or(EditError::FilesNotAList)?
        .push(json!({
            "path": "/etc/hosts",
            "append": [{"source": data_url(&hosts_lines(r))}]
        }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Records {
        Records {
            address: IpAddr::V4(USER_NETWORK_GUEST),
            names: crate::hw::nat::cluster_names("sno", "example.test"),
        }
    }

    #[test]
    fn the_records_name_the_api_api_int_and_the_routes() {
        let lines = hosts_lines(&records());
        assert!(
            lines.starts_with("10.0.2.15\tapi.sno.example.test api-int.sno.example.test "),
            "{lines}"
        );
        assert!(lines.contains("console-openshift-console.apps.sno.example.test"));
        assert!(lines.contains("oauth-openshift.apps.sno.example.test"));
    }

    #[test]
    fn the_machine_config_writes_the_whole_hosts_file_for_masters() {
        let mc = machine_config(&records());
        assert_eq!(mc["kind"], "MachineConfig");
        assert_eq!(
            mc["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
            "master"
        );
        let file = &mc["spec"]["config"]["storage"]["files"][0];
        assert_eq!(file["path"], "/etc/hosts");
        assert_eq!(file["overwrite"], true);
        let source = file["contents"]["source"].as_str().unwrap();
        assert!(
            source.starts_with("data:,127.0.0.1%09localhost"),
            "{source}"
        );
        assert!(source.contains("api-int.sno.example.test"));
    }

    #[test]
    fn the_live_ignition_appends_to_hosts_and_keeps_what_it_had() {
        let mut ign =
            json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/x"}]}});
        add_to_live_ignition(&mut ign, &records()).unwrap();
        let files = ign["storage"]["files"].as_array().unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[1]["path"], "/etc/hosts");
        assert!(files[1]["append"][0]["source"]
            .as_str()
            .unwrap()
            .contains("api.sno.example.test"));
        let mut bare = json!({"ignition": {"version": "3.2.0"}});
        add_to_live_ignition(&mut bare, &records()).unwrap();
        assert_eq!(bare["storage"]["files"][0]["path"], "/etc/hosts");
    }
}
