//! The names as /etc/hosts lines: what the fixture fault `apps-dns` gives the node, as the
//! harness once did on every network. The node's own lookups (getaddrinfo: the kubelet's
//! `api-int`) read /etc/hosts; pods do not (CoreDNS reads the node's resolv.conf only), so the
//! operators that check their routes fail, as they would on a real cluster.

use serde_json::{json, Value};

use super::{data_url, Records};

/// The records as /etc/hosts lines.
pub fn lines(r: &Records) -> String {
    format!("{}\t{}\n", r.address, r.names.join(" "))
}

/// The installed system's whole /etc/hosts (a MachineConfig file replaces the file).
fn installed_text(r: &Records) -> String {
    format!(
        "127.0.0.1\tlocalhost localhost.localdomain localhost4 localhost4.localdomain4\n\
         ::1\tlocalhost localhost.localdomain localhost6 localhost6.localdomain6\n\
         # sno-harness: the cluster's names, for the node\n{}",
        lines(r)
    )
}

/// The installed system's /etc/hosts, as an Ignition file entry.
pub fn installed_file(r: &Records) -> Value {
    json!({
        "path": "/etc/hosts",
        "mode": 420,
        "overwrite": true,
        "contents": {"source": data_url(&installed_text(r))}
    })
}

/// The lines appended to the live system's /etc/hosts, as an Ignition file entry.
pub fn live_append(r: &Records) -> Value {
    json!({
        "path": "/etc/hosts",
        "append": [{"source": data_url(&lines(r))}]
    })
}
