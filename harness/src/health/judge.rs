//! Verdicts on API objects, as pure functions of their JSON (so they are tested against
//! objects written from the openshift/api types, tests/data/openshift/). Each says what it
//! saw, in words, when it is not ok.

use std::time::{Duration, SystemTime};

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: Option<String>,
}

/// `status.conditions` of an object.
pub fn conditions(obj: &Value) -> Vec<Condition> {
    let s = |c: &Value, k: &str| c[k].as_str().unwrap_or("").to_string();
    obj["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| Condition {
                    type_: s(c, "type"),
                    status: s(c, "status"),
                    reason: s(c, "reason"),
                    message: s(c, "message"),
                    last_transition_time: c["lastTransitionTime"].as_str().map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition<'a>(cs: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    cs.iter().find(|c| c.type_ == type_)
}

fn status_of(cs: &[Condition], type_: &str) -> String {
    condition(cs, type_)
        .map(|c| c.status.clone())
        .unwrap_or_else(|| "missing".into())
}

/// A check's outcome: ok, or why not, quoting what the API said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub ok: bool,
    pub detail: String,
}

impl Judgement {
    fn ok(detail: impl Into<String>) -> Judgement {
        Judgement {
            ok: true,
            detail: detail.into(),
        }
    }
    fn not(detail: impl Into<String>) -> Judgement {
        Judgement {
            ok: false,
            detail: detail.into(),
        }
    }
}

/// The etcd operator's condition, as spelled since February 2024, and as releases of early
/// 2023 to then spelled it (docs/bip-contract.md §7).
pub const ETCD_CONDITION: &str = "EtcdBootstrapMemberRemoved";
pub const ETCD_CONDITION_OLD: &str = "EtcdBoostrapMemberRemoved";

/// etcds/cluster: the bootstrap member removed (`EtcdBootstrapMemberRemoved=True`, or the
/// older spelling). The operator sets the condition only once it is True: absent means not
/// yet.
pub fn etcd_bootstrap_member_removed(etcd: &Value) -> Judgement {
    let cs = conditions(etcd);
    let found = condition(&cs, ETCD_CONDITION).or_else(|| condition(&cs, ETCD_CONDITION_OLD));
    match found {
        Some(c) if c.status == "True" => Judgement::ok(format!("{}=True", c.type_)),
        Some(c) => Judgement::not(format!(
            "{}={} ({}: {})",
            c.type_, c.status, c.reason, c.message
        )),
        None => Judgement::not(format!(
            "{ETCD_CONDITION} is still absent from etcds/cluster (the etcd operator has not removed the bootstrap member)"
        )),
    }
}

/// How a node list without a node is said (the caller may add why).
pub const NO_NODE: &str = "no node has registered yet";

/// The node list: exactly one node, and it is Ready.
pub fn single_node_ready(nodes: &Value) -> Judgement {
    let items = nodes["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return Judgement::not(NO_NODE);
    }
    if items.len() != 1 {
        let names: Vec<&str> = items
            .iter()
            .filter_map(|n| n["metadata"]["name"].as_str())
            .collect();
        return Judgement::not(format!(
            "expected exactly one node, found {}: {names:?}",
            items.len()
        ));
    }
    let node = &items[0];
    let name = node["metadata"]["name"].as_str().unwrap_or("?");
    let cs = conditions(node);
    match condition(&cs, "Ready") {
        Some(c) if c.status == "True" => Judgement::ok(format!("node {name} Ready")),
        Some(c) => Judgement::not(format!(
            "node {name} Ready={} ({}: {})",
            c.status, c.reason, c.message
        )),
        None => Judgement::not(format!("node {name} has no Ready condition")),
    }
}

/// What is wrong with the name the one node registered under, if anything. A node without a
/// hostname registers as `localhost` (machine-config-operator's node-valid-hostname.service
/// waits up to 5 minutes for DHCP or reverse DNS to give one, then lets the kubelet start
/// anyway): such a node's certificates and the cluster's own records name a host that is not
/// it, and no real single-node install comes to good from there. `expected` is the name the
/// harness's DHCP gave (`<cluster>-master-0`); another name is only worth telling.
pub fn node_name_problem(name: &str, expected: Option<&str>) -> Option<String> {
    let bare = name.trim_end_matches('.').to_ascii_lowercase();
    if bare == "localhost" || bare.starts_with("localhost.") || bare.is_empty() {
        let wanted = expected
            .map(|e| format!(" instead of {e}"))
            .unwrap_or_default();
        return Some(format!(
            "it got no hostname (DHCP gave none, no reverse DNS){wanted}"
        ));
    }
    None
}

/// The InternalIP addresses of the only node, as its status lists them.
pub fn single_node_internal_ips(nodes: &Value) -> Vec<String> {
    let Some([node]) = nodes["items"].as_array().map(Vec::as_slice) else {
        return Vec::new();
    };
    node["status"]["addresses"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|x| x["type"] == "InternalIP")
                .filter_map(|x| x["address"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What is wrong with the node's InternalIPs for a node given `wanted` statically: each must
/// be among them (the kubelet reports the addresses of the NIC that carries the default
/// route, nodeip-configuration's choice). An address written another way (`fd00:1::10` and
/// `fd00:1:0::10`) is the same address.
pub fn node_address_problem(
    internal_ips: &[String],
    wanted: &[std::net::IpAddr],
) -> Option<String> {
    let have: Vec<std::net::IpAddr> = internal_ips.iter().filter_map(|a| a.parse().ok()).collect();
    let missing: Vec<String> = wanted
        .iter()
        .filter(|w| !have.contains(w))
        .map(|w| w.to_string())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let listed = if internal_ips.is_empty() {
        "no InternalIP".to_string()
    } else {
        format!("InternalIP {}", internal_ips.join(", "))
    };
    Some(format!(
        "with {listed}, not its static {} (the scenario's [network]): the node is not on the addresses its keyfiles give",
        missing.join(", ")
    ))
}

/// The name of the only node, when there is exactly one.
pub fn single_node_name(nodes: &Value) -> Option<String> {
    match nodes["items"].as_array().map(Vec::as_slice) {
        Some([node]) => node["metadata"]["name"].as_str().map(str::to_string),
        _ => None,
    }
}

/// ClusterVersion `version`: Available=True, Failing=False, Progressing=False.
pub fn cluster_version(cv: &Value) -> Judgement {
    let cs = conditions(cv);
    let (a, f, p) = (
        status_of(&cs, "Available"),
        status_of(&cs, "Failing"),
        status_of(&cs, "Progressing"),
    );
    let version = cv["status"]["desired"]["version"].as_str().unwrap_or("?");
    if a == "True" && f == "False" && p == "False" {
        return Judgement::ok(format!("ClusterVersion {version} Available"));
    }
    // Quote the most telling condition: Failing first, then Progressing, then Available.
    let why = ["Failing", "Progressing", "Available"]
        .iter()
        .filter_map(|t| condition(&cs, t))
        .find(|c| !c.message.is_empty())
        .map(|c| format!("; {}: {}", c.type_, c.message))
        .unwrap_or_default();
    Judgement::not(format!(
        "ClusterVersion {version}: Available={a} Failing={f} Progressing={p}{why}"
    ))
}

/// Every ClusterOperator Available=True, Degraded=False, Progressing=False, the last of them
/// for at least `settle` (by Progressing's lastTransitionTime), as `wait-for install-complete`
/// judges it.
pub fn cluster_operators(list: &Value, now: SystemTime, settle: Duration) -> Judgement {
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return Judgement::not("no ClusterOperators yet");
    }
    let mut problems = Vec::new();
    let mut unsettled = Vec::new();
    for co in &items {
        let name = co["metadata"]["name"].as_str().unwrap_or("?");
        let cs = conditions(co);
        let (a, d, p) = (
            status_of(&cs, "Available"),
            status_of(&cs, "Degraded"),
            status_of(&cs, "Progressing"),
        );
        if a != "True" || d == "True" || p != "False" {
            let msg = ["Degraded", "Available", "Progressing"]
                .iter()
                .filter_map(|t| condition(&cs, t))
                .find(|c| {
                    (c.type_ == "Degraded" && c.status == "True")
                        || (c.type_ == "Available" && c.status != "True")
                        || (c.type_ == "Progressing" && c.status != "False")
                })
                .map(|c| format!(" ({})", c.message))
                .unwrap_or_default();
            // The worst first, so that the handful named are the ones to read.
            let rank = match (d.as_str(), a.as_str()) {
                ("True", _) => 0,
                (_, "True") => 2,
                _ => 1,
            };
            problems.push((
                rank,
                format!("{name}: Available={a} Degraded={d} Progressing={p}{msg}"),
            ));
            continue;
        }
        let since = condition(&cs, "Progressing")
            .and_then(|c| c.last_transition_time.as_deref())
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok());
        if let Some(t) = since {
            let age = now.duration_since(t).unwrap_or_default();
            if age < settle {
                unsettled.push(format!("{name} ({:.0} s)", age.as_secs_f64()));
            }
        }
    }
    if !problems.is_empty() {
        problems.sort_by_key(|(rank, _)| *rank);
        let problems: Vec<String> = problems.into_iter().map(|(_, p)| p).collect();
        return Judgement::not(format!(
            "{} of {} operators not ready: {}",
            problems.len(),
            items.len(),
            handful(&problems, "; ")
        ));
    }
    if !unsettled.is_empty() {
        return Judgement::not(format!(
            "operators settled for less than {} s: {}",
            settle.as_secs(),
            handful(&unsettled, ", ")
        ));
    }
    Judgement::ok(format!(
        "all {} operators Available and settled",
        items.len()
    ))
}

/// At most [`HANDFUL`] of `items`, and how many more: a real cluster has some 33 operators,
/// and a line naming all of them (a heartbeat, a reason) is read by no one.
fn handful(items: &[String], sep: &str) -> String {
    let shown = items[..items.len().min(HANDFUL)].join(sep);
    match items.len().saturating_sub(HANDFUL) {
        0 => shown,
        more => format!("{shown}{sep}and {more} more"),
    }
}

const HANDFUL: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_named_localhost_has_no_hostname_and_any_other_name_is_fine() {
        for name in ["localhost", "localhost.localdomain", "LOCALHOST.", ""] {
            let p = node_name_problem(name, Some("sno-master-0")).unwrap();
            assert!(
                p.starts_with(
                    "it got no hostname (DHCP gave none, no reverse DNS) instead of sno-master-0"
                ),
                "{p}"
            );
        }
        assert_eq!(
            node_name_problem("sno-master-0", Some("sno-master-0")),
            None
        );
        // A name the site gave some other way is not wrong.
        assert_eq!(node_name_problem("node1.lab", Some("sno-master-0")), None);
        assert!(!node_name_problem("localhost", None)
            .unwrap()
            .contains("instead"));
    }

    #[test]
    fn the_name_of_the_single_node_and_none_for_zero_or_two() {
        let one = serde_json::json!({"items": [{"metadata": {"name": "sno-master-0"}}]});
        assert_eq!(single_node_name(&one).as_deref(), Some("sno-master-0"));
        assert_eq!(single_node_name(&serde_json::json!({"items": []})), None);
        let two = serde_json::json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]});
        assert_eq!(single_node_name(&two), None);
    }

    #[test]
    fn of_many_operators_not_ready_the_degraded_and_unavailable_are_named_first() {
        let op = |name: &str, a: &str, d: &str| {
            serde_json::json!({"metadata": {"name": name}, "status": {"conditions": [
                {"type": "Available", "status": a, "message": ""},
                {"type": "Degraded", "status": d, "message": ""},
                {"type": "Progressing", "status": "True", "message": ""}
            ]}})
        };
        let mut items: Vec<serde_json::Value> = (0..8)
            .map(|i| op(&format!("a{i}"), "True", "False"))
            .collect();
        items.push(op("ingress", "True", "True"));
        items.push(op("dns", "False", "False"));
        let j = cluster_operators(
            &serde_json::json!({ "items": items }),
            SystemTime::now(),
            Duration::from_secs(30),
        );
        let d = j.detail;
        assert!(
            d.starts_with("10 of 10 operators not ready: ingress: "),
            "{d}"
        );
        assert!(d.contains("; dns: Available=False"), "{d}");
        assert!(d.ends_with("and 5 more"), "{d}");
    }

    #[test]
    fn a_long_list_names_a_handful_and_counts_the_rest() {
        let items: Vec<String> = (1..=33).map(|i| format!("op{i}")).collect();
        assert_eq!(
            handful(&items, ", "),
            "op1, op2, op3, op4, op5, and 28 more"
        );
        assert_eq!(handful(&items[..5], "; "), "op1; op2; op3; op4; op5");
        assert_eq!(handful(&[], ", "), "");
    }
    use serde_json::json;

    fn co(name: &str, a: &str, d: &str, p: &str, since: &str) -> Value {
        json!({"metadata": {"name": name}, "status": {"conditions": [
            {"type": "Available", "status": a, "lastTransitionTime": since, "message": format!("{name} available={a}")},
            {"type": "Degraded", "status": d, "lastTransitionTime": since, "message": format!("{name} degraded={d}")},
            {"type": "Progressing", "status": p, "lastTransitionTime": since, "message": ""}
        ]}})
    }

    #[test]
    fn operators_must_be_available_and_settled() {
        let now = humantime::parse_rfc3339("2026-11-30T01:00:00Z").unwrap();
        let settle = Duration::from_secs(30);
        let old = "2026-11-30T00:59:00Z";
        let fresh = "2026-11-30T00:59:50Z";
        let all = json!({"items": [co("dns", "True", "False", "False", old), co("etcd", "True", "False", "False", old)]});
        assert!(cluster_operators(&all, now, settle).ok);

        let young = json!({"items": [co("dns", "True", "False", "False", fresh)]});
        let j = cluster_operators(&young, now, settle);
        assert!(!j.ok && j.detail.contains("dns (10 s)"), "{}", j.detail);

        let degraded = json!({"items": [co("ingress", "True", "True", "False", old)]});
        let j = cluster_operators(&degraded, now, settle);
        assert!(
            !j.ok && j.detail.contains("ingress degraded=True"),
            "{}",
            j.detail
        );

        assert!(!cluster_operators(&json!({"items": []}), now, settle).ok);
    }

    #[test]
    fn one_ready_node_is_required() {
        let node = |ready: &str| json!({"metadata": {"name": "minisno"}, "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletNotReady", "message": "PLEG is not healthy"}]}});
        assert!(single_node_ready(&json!({"items": [node("True")]})).ok);
        let j = single_node_ready(&json!({"items": [node("False")]}));
        assert!(!j.ok && j.detail.contains("PLEG"), "{}", j.detail);
        assert!(!single_node_ready(&json!({"items": [node("True"), node("True")]})).ok);
    }

    #[test]
    fn cluster_version_quotes_the_failing_message() {
        let cv = |a: &str, f: &str, p: &str, msg: &str| {
            json!({"status": {"desired": {"version": "4.17.0"}, "conditions": [
            {"type": "Available", "status": a, "message": ""},
            {"type": "Failing", "status": f, "message": msg},
            {"type": "Progressing", "status": p, "message": ""}]}})
        };
        assert!(cluster_version(&cv("True", "False", "False", "")).ok);
        let j = cluster_version(&cv(
            "False",
            "True",
            "True",
            "Cluster operator ingress is degraded",
        ));
        assert!(
            !j.ok && j.detail.contains("ingress is degraded"),
            "{}",
            j.detail
        );
    }

    #[test]
    fn etcd_member_removal_is_read_from_its_condition() {
        let e = |s: &str| json!({"status": {"conditions": [{"type": "EtcdBootstrapMemberRemoved", "status": s, "reason": "R", "message": "M"}]}});
        assert!(etcd_bootstrap_member_removed(&e("True")).ok);
        assert!(!etcd_bootstrap_member_removed(&e("False")).ok);
        assert!(!etcd_bootstrap_member_removed(&json!({})).ok);
    }

    #[test]
    fn a_static_address_must_be_among_the_nodes_internal_ips() {
        let nodes = json!({"items": [{"metadata": {"name": "sno-master-0"}, "status": {"addresses": [
            {"type": "InternalIP", "address": "192.168.126.10"},
            {"type": "InternalIP", "address": "fd00:1::10"},
            {"type": "Hostname", "address": "sno-master-0"}
        ]}}]});
        let ips = single_node_internal_ips(&nodes);
        assert_eq!(ips, ["192.168.126.10", "fd00:1::10"]);
        let v4: std::net::IpAddr = "192.168.126.10".parse().unwrap();
        let v6: std::net::IpAddr = "fd00:1:0::10".parse().unwrap();
        assert_eq!(
            node_address_problem(&ips, &[v4, v6]),
            None,
            "the same address, written another way"
        );
        assert_eq!(
            node_address_problem(&ips, &[]),
            None,
            "DHCP: nothing is asked"
        );
        let other: std::net::IpAddr = "192.168.126.11".parse().unwrap();
        let p = node_address_problem(&ips, &[other, v6]).unwrap();
        assert!(
            p.starts_with(
                "with InternalIP 192.168.126.10, fd00:1::10, not its static 192.168.126.11 "
            ),
            "{p}"
        );
        let p = node_address_problem(&[], &[v4]).unwrap();
        assert!(
            p.starts_with("with no InternalIP, not its static 192.168.126.10"),
            "{p}"
        );
        assert!(single_node_internal_ips(&json!({"items": []})).is_empty());
    }
}
