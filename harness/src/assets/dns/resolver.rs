//! The node's own resolver for the cluster's names, as assisted-service gives a single-node
//! cluster that has no site DNS (its SNO manifests: a dnsmasq on the node, and a
//! NetworkManager dispatcher script that puts the node's address first in /etc/resolv.conf).
//! Pods resolve through CoreDNS, whose Corefile forwards to the nameservers of the node's
//! resolv.conf and reads no hosts file: only a nameserver they can reach (the node's address,
//! not its loopback) answers them. The same files go into the live system (its Ignition) and
//! the installed one (a MachineConfig), so both resolve alike.

use serde_json::{json, Value};

use super::{data_url, Records};

/// dnsmasq's configuration, read by the unit below alone (not the distribution's own file).
pub const DNSMASQ_CONF: &str = "/etc/dnsmasq.d/single-node.conf";
/// The dispatcher script NetworkManager runs on each change of a connection.
pub const DISPATCHER_SCRIPT: &str = "/etc/NetworkManager/dispatcher.d/forcedns";
/// NetworkManager's drop-in that leaves /etc/resolv.conf to the script.
pub const NM_CONF: &str = "/etc/NetworkManager/conf.d/single-node.conf";
/// The unit that runs dnsmasq (it replaces the distribution's, when there is one).
pub const UNIT: &str = "dnsmasq.service";

/// `address=/DOMAIN/IP` answers DOMAIN and every name under it: `apps` is the wildcard the
/// routes need, which an /etc/hosts line cannot be.
pub fn dnsmasq_conf(r: &Records, cluster_domain: &str) -> String {
    let ip = r.address;
    format!(
        "# sno-harness: the single-node cluster's names at the node's address, for the node\n\
         # and its pods (assisted-service's way for a cluster without a site DNS).\n\
         address=/apps.{cluster_domain}/{ip}\n\
         address=/api-int.{cluster_domain}/{ip}\n\
         address=/api.{cluster_domain}/{ip}\n"
    )
}

/// Runs on NetworkManager's `up` and DHCP changes: /etc/resolv.conf becomes NetworkManager's
/// own (/run/NetworkManager/resolv.conf) with the node's address as the first nameserver and
/// the cluster's domain first in `search`. dnsmasq reads the same file for its upstreams and
/// skips its own address there.
pub fn dispatcher_script(r: &Records, cluster_domain: &str) -> String {
    format!(
        r#"#!/bin/bash
# sno-harness: the node's own resolver first, for the node and for its pods.
set -eu
node_ip={ip}
domain={cluster_domain}
case "${{2:-}}" in
    up|dhcp4-change|dhcp6-change|connectivity-change) ;;
    *) exit 0 ;;
esac
from=/run/NetworkManager/resolv.conf
[ -f "$from" ] || exit 0
tmp=$(mktemp /etc/.resolv.conf.sno-harness.XXXXXX)
awk -v ip="$node_ip" -v domain="$domain" '
    BEGIN {{ searched = 0; first = 1 }}
    /^search[ \t]/ {{ $1 = ""; print "search " domain $0; searched = 1; next }}
    /^nameserver[ \t]/ && $2 == ip {{ next }}
    /^nameserver[ \t]/ && first {{ print "nameserver " ip; first = 0 }}
    {{ print }}
    END {{
        if (first) print "nameserver " ip
        if (!searched) print "search " domain
    }}' "$from" > "$tmp"
chmod 0644 "$tmp"
mv -f "$tmp" /etc/resolv.conf
"#,
        ip = r.address
    )
}

/// NetworkManager leaves /etc/resolv.conf alone: the dispatcher script writes it.
pub const NM_UNMANAGED: &str = "[main]\nrc-manager=unmanaged\n";

/// dnsmasq in the foreground, on its own configuration only; started again if it stops (it
/// does, when it starts before any address it could bind exists).
pub fn unit() -> String {
    format!(
        "[Unit]\n\
         Description=The single-node cluster's names at the node's address (sno-harness)\n\
         Wants=network.target\n\
         After=network.target\n\
         Before=kubelet.service crio.service\n\
         \n\
         [Service]\n\
         ExecStart=/usr/sbin/dnsmasq --keep-in-foreground --conf-file={DNSMASQ_CONF}\n\
         Restart=always\n\
         RestartSec=3\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

/// The files, as Ignition spec 3 entries (mode in decimal, as Ignition takes it).
pub fn files(r: &Records, cluster_domain: &str) -> Vec<Value> {
    let file = |path: &str, mode: u32, text: &str| {
        json!({
            "path": path,
            "mode": mode,
            "overwrite": true,
            "contents": {"source": data_url(text)}
        })
    };
    vec![
        file(DNSMASQ_CONF, 0o644, &dnsmasq_conf(r, cluster_domain)),
        file(
            DISPATCHER_SCRIPT,
            0o755,
            &dispatcher_script(r, cluster_domain),
        ),
        file(NM_CONF, 0o644, NM_UNMANAGED),
    ]
}

/// The unit, as an Ignition spec 3 entry.
pub fn unit_entry() -> Value {
    json!({"name": UNIT, "enabled": true, "contents": unit()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    fn records() -> Records {
        Records {
            address: "10.0.2.15".parse().unwrap(),
            cluster_domain: "sno.example.test".into(),
            names: vec![],
        }
    }

    #[test]
    fn dnsmasq_answers_apps_as_a_wildcard_and_the_api_names() {
        let conf = dnsmasq_conf(&records(), "sno.example.test");
        for line in [
            "address=/apps.sno.example.test/10.0.2.15",
            "address=/api-int.sno.example.test/10.0.2.15",
            "address=/api.sno.example.test/10.0.2.15",
        ] {
            assert!(conf.lines().any(|l| l == line), "{conf}");
        }
    }

    /// Runs the dispatcher script on `nm` (NetworkManager's resolv.conf) with bash, in a
    /// scratch root: the script's paths are rewritten into it.
    fn dispatched(nm: &str, action: &str) -> Option<String> {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("run/NetworkManager")).unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(root.path().join("run/NetworkManager/resolv.conf"), nm).unwrap();
        let script = dispatcher_script(&records(), "sno.example.test")
            .replace("/run/", &format!("{}/run/", root.path().display()))
            .replace("/etc/", &format!("{}/etc/", root.path().display()));
        let mut child = Command::new("bash")
            .args(["-s", "enp1s0", action])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        std::fs::read_to_string(root.path().join("etc/resolv.conf")).ok()
    }

    #[test]
    fn the_node_address_becomes_the_first_nameserver_and_the_rest_follow() {
        let out = dispatched(
            "# Generated by NetworkManager\nsearch lan\nnameserver 10.0.2.3\nnameserver 10.0.2.15\noptions edns0\n",
            "up",
        )
        .unwrap();
        assert_eq!(
            out,
            "# Generated by NetworkManager\nsearch sno.example.test lan\nnameserver 10.0.2.15\nnameserver 10.0.2.3\noptions edns0\n"
        );
    }

    #[test]
    fn a_resolv_conf_without_nameservers_or_search_gets_both() {
        let out = dispatched("# Generated by NetworkManager\n", "dhcp4-change").unwrap();
        assert_eq!(
            out,
            "# Generated by NetworkManager\nnameserver 10.0.2.15\nsearch sno.example.test\n"
        );
    }

    #[test]
    fn other_actions_leave_resolv_conf_alone() {
        assert_eq!(dispatched("nameserver 10.0.2.3\n", "down"), None);
        assert_eq!(dispatched("nameserver 10.0.2.3\n", "pre-up"), None);
    }

    #[test]
    fn the_files_and_the_unit_are_ignition_entries() {
        let files = files(&records(), "sno.example.test");
        let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
        assert_eq!(paths, [DNSMASQ_CONF, DISPATCHER_SCRIPT, NM_CONF]);
        assert_eq!(files[1]["mode"], 0o755);
        let u = unit_entry();
        assert_eq!(
            (u["name"].as_str(), u["enabled"].as_bool()),
            (Some(UNIT), Some(true))
        );
        let text = u["contents"].as_str().unwrap();
        assert!(text.contains(&format!("--conf-file={DNSMASQ_CONF}")));
        assert!(text.contains("Before=kubelet.service"));
    }
}
