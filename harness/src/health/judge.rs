//! Verdicts on API objects, as pure functions of their JSON (so they are tested against
//! objects written from the openshift/api types, tests/data/openshift/). Each says what it
//! saw, in words, when it is not ok.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::scenario::model::OperatorsRule;

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

/// The labels that make a node a control-plane node: `master` as every release sets it, and
/// `control-plane` as releases since 4.10 set it beside it.
pub const CONTROL_PLANE_LABELS: [&str; 2] = [
    "node-role.kubernetes.io/master",
    "node-role.kubernetes.io/control-plane",
];

fn node_name(node: &Value) -> &str {
    node["metadata"]["name"].as_str().unwrap_or("?")
}

fn is_control_plane(node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    CONTROL_PLANE_LABELS.iter().any(|l| labels.get(l).is_some())
}

/// The one control-plane node of the list, or why there is none to judge. A single-node
/// cluster has exactly one control-plane node and may have workers added (docs/bip-contract.md
/// §7): the workers are not it. A lone node without a role label is taken as it (a node's
/// labels may come after it registers).
pub fn control_plane_node(nodes: &Value) -> Result<&Value, String> {
    let items = nodes["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if let [only] = items {
        return Ok(only);
    }
    if items.is_empty() {
        return Err(NO_NODE.into());
    }
    let planes: Vec<&Value> = items.iter().filter(|n| is_control_plane(n)).collect();
    match planes.as_slice() {
        [one] => Ok(one),
        [] => {
            let names: Vec<&str> = items.iter().map(node_name).collect();
            Err(format!(
                "none of the {} nodes {names:?} carries a control-plane label ({})",
                items.len(),
                CONTROL_PLANE_LABELS.join(" or ")
            ))
        }
        many => {
            let names: Vec<&str> = many.iter().map(|n| node_name(n)).collect();
            Err(format!(
                "not single-node: {} control-plane nodes {names:?} (a single-node cluster has exactly one; workers may be added)",
                many.len()
            ))
        }
    }
}

/// The workers of the list that are not Ready, each with its Ready condition: said beside the
/// control plane's verdict, never part of it.
fn workers_not_ready(nodes: &Value, plane: &str) -> Vec<String> {
    let items = nodes["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    items
        .iter()
        .filter(|n| node_name(n) != plane)
        .filter_map(|n| {
            let cs = conditions(n);
            let ready = condition(&cs, "Ready");
            match ready {
                Some(c) if c.status == "True" => None,
                Some(c) => Some(format!(
                    "{} Ready={} ({})",
                    node_name(n),
                    c.status,
                    c.reason
                )),
                None => Some(format!("{} has no Ready condition", node_name(n))),
            }
        })
        .collect()
}

/// The node list: its one control-plane node is Ready. Workers are accepted and their
/// readiness is not judged (`wait-for` never looks at nodes); those not Ready are named in
/// the detail as a warning.
pub fn single_node_ready(nodes: &Value) -> Judgement {
    let node = match control_plane_node(nodes) {
        Ok(n) => n,
        Err(why) => return Judgement::not(why),
    };
    let name = node_name(node);
    let cs = conditions(node);
    let mut j = match condition(&cs, "Ready") {
        Some(c) if c.status == "True" => Judgement::ok(format!("node {name} Ready")),
        Some(c) => Judgement::not(format!(
            "node {name} Ready={} ({}: {})",
            c.status, c.reason, c.message
        )),
        None => Judgement::not(format!("node {name} has no Ready condition")),
    };
    let workers = workers_not_ready(nodes, name);
    if !workers.is_empty() {
        j.detail.push_str(&format!(
            " (a warning, not judged: workers not Ready: {})",
            workers.join(", ")
        ));
    }
    j
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

/// The InternalIP addresses of the control-plane node, as its status lists them.
pub fn single_node_internal_ips(nodes: &Value) -> Vec<String> {
    let Ok(node) = control_plane_node(nodes) else {
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

/// The name of the control-plane node, when there is exactly one.
pub fn single_node_name(nodes: &Value) -> Option<String> {
    control_plane_node(nodes)
        .ok()
        .and_then(|n| n["metadata"]["name"].as_str())
        .map(str::to_string)
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

/// The ClusterOperators by the default rule, `installer` (see [`operators`]).
pub fn cluster_operators(list: &Value, now: SystemTime, settle: Duration) -> Judgement {
    operators(list, now, settle, OperatorsRule::Installer).judgement
}

/// The ClusterOperators' verdict, and the operators reported beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorsVerdict {
    pub judgement: Judgement,
    /// Under `installer`: each operator unavailable or degraded, with its condition's
    /// message. Not part of the verdict, but never to be left unsaid.
    pub warnings: Vec<String>,
}

/// What one operator's conditions say, as the two rules read them.
struct OperatorState {
    name: String,
    /// Available not True, or Degraded True: `name: Available=.. Degraded=.. Progressing=..
    /// (message)`, with its rank (degraded first: the handful named are the ones to read).
    unhealthy: Option<(u8, String)>,
    /// Progressing not False: `name: Progressing=.. (message)`.
    progressing: Option<String>,
    /// Since when Progressing has been False, when it is.
    settled_since: Option<SystemTime>,
}

fn operator_state(co: &Value) -> OperatorState {
    let name = co["metadata"]["name"].as_str().unwrap_or("?").to_string();
    let cs = conditions(co);
    let (a, d, p) = (
        status_of(&cs, "Available"),
        status_of(&cs, "Degraded"),
        status_of(&cs, "Progressing"),
    );
    let message = |t: &str| {
        condition(&cs, t)
            .filter(|c| !c.message.is_empty())
            .map(|c| format!(" ({})", c.message))
            .unwrap_or_default()
    };
    // Degraded's message first: it says what is wrong, where Available's says only that.
    let unhealthy = (a != "True" || d == "True").then(|| {
        let msg = if d == "True" {
            message("Degraded")
        } else {
            message("Available")
        };
        let rank = if d == "True" { 0 } else { 1 };
        (
            rank,
            format!("{name}: Available={a} Degraded={d} Progressing={p}{msg}"),
        )
    });
    let progressing =
        (p != "False").then(|| format!("{name}: Progressing={p}{}", message("Progressing")));
    let settled_since = condition(&cs, "Progressing")
        .filter(|c| c.status == "False")
        .and_then(|c| c.last_transition_time.as_deref())
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok());
    OperatorState {
        name,
        unhealthy,
        progressing,
        settled_since,
    }
}

/// Every ClusterOperator by `rule`. `installer` is exactly `openshift-install wait-for
/// install-complete`'s second step (cmd/openshift-install/create.go, waitForInstallComplete's
/// operator stability wait): each operator Progressing=False, its lastTransitionTime more than
/// `settle` (30 s) ago; Available and Degraded are not looked at, and an operator unavailable
/// or degraded is a warning. `healthy` also fails while one is unavailable or degraded.
pub fn operators(
    list: &Value,
    now: SystemTime,
    settle: Duration,
    rule: OperatorsRule,
) -> OperatorsVerdict {
    let items = list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if items.is_empty() {
        return OperatorsVerdict {
            judgement: Judgement::not("no ClusterOperators yet"),
            warnings: Vec::new(),
        };
    }
    let states: Vec<OperatorState> = items.iter().map(operator_state).collect();
    let mut unhealthy: Vec<(u8, String)> =
        states.iter().filter_map(|s| s.unhealthy.clone()).collect();
    unhealthy.sort_by_key(|(rank, _)| *rank);
    // One problem an operator: under `healthy` its health, else whether it still progresses.
    let mut problems: Vec<(u8, String)> = states
        .iter()
        .filter_map(|s| match (rule, &s.unhealthy, &s.progressing) {
            (OperatorsRule::Healthy, Some(u), _) => Some(u.clone()),
            (_, _, Some(p)) => Some((2, p.clone())),
            _ => None,
        })
        .collect();
    problems.sort_by_key(|(rank, _)| *rank);
    let problems: Vec<String> = problems.into_iter().map(|(_, p)| p).collect();
    let unsettled: Vec<String> = states
        .iter()
        .filter_map(|s| Some((s, now.duration_since(s.settled_since?).unwrap_or_default())))
        .filter(|(_, age)| *age <= settle)
        .map(|(s, age)| format!("{} ({:.0} s)", s.name, age.as_secs_f64()))
        .collect();
    let warnings: Vec<String> = match rule {
        OperatorsRule::Installer => unhealthy.into_iter().map(|(_, u)| u).collect(),
        OperatorsRule::Healthy => Vec::new(),
    };
    let found = Found {
        count: items.len(),
        problems,
        unsettled,
    };
    OperatorsVerdict {
        judgement: operators_judgement(rule, settle, &found, &warnings),
        warnings,
    }
}

/// What the operators' conditions came to: how many there are, those failing the rule, and
/// those that have not been settled long enough.
struct Found {
    count: usize,
    problems: Vec<String>,
    unsettled: Vec<String>,
}

/// The verdict's words: what fails first, then what has not settled, and under `installer`
/// how many operators are reported unhealthy.
fn operators_judgement(
    rule: OperatorsRule,
    settle: Duration,
    found: &Found,
    warnings: &[String],
) -> Judgement {
    let Found {
        count,
        problems,
        unsettled,
    } = found;
    let secs = settle.as_secs();
    let reported = match warnings.len() {
        0 => String::new(),
        n => format!(
            "; reported, not judged by the installer's rule: {n} unavailable or degraded: {}",
            handful(warnings, "; ")
        ),
    };
    let what = match rule {
        OperatorsRule::Installer => {
            format!("not settled (Progressing=False for more than {secs} s)")
        }
        OperatorsRule::Healthy => "not ready (Available, not Degraded, settled)".to_string(),
    };
    if !problems.is_empty() {
        return Judgement::not(format!(
            "{} of {count} operators {what}: {}{reported}",
            problems.len(),
            handful(problems, "; ")
        ));
    }
    if !unsettled.is_empty() {
        return Judgement::not(format!(
            "operators settled for no more than {secs} s: {}{reported}",
            handful(unsettled, ", ")
        ));
    }
    let all = match rule {
        OperatorsRule::Installer => "settled",
        OperatorsRule::Healthy => "Available, not Degraded and settled",
    };
    Judgement::ok(format!("all {count} operators {all}{reported}"))
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
        let j = operators(
            &serde_json::json!({ "items": items }),
            SystemTime::now(),
            Duration::from_secs(30),
            OperatorsRule::Healthy,
        )
        .judgement;
        let d = j.detail;
        assert!(
            d.starts_with(
                "10 of 10 operators not ready (Available, not Degraded, settled): ingress: "
            ),
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

    /// A ClusterOperator written from the openshift/api config/v1 types: the condition types,
    /// status values and lastTransitionTime as `ClusterOperatorStatusCondition` spells them.
    fn co(name: &str, a: &str, d: &str, p: &str, since: &str) -> Value {
        json!({"metadata": {"name": name}, "status": {"conditions": [
            {"type": "Available", "status": a, "lastTransitionTime": since, "message": format!("{name} available={a}")},
            {"type": "Degraded", "status": d, "lastTransitionTime": since, "message": format!("{name} degraded={d}")},
            {"type": "Progressing", "status": p, "lastTransitionTime": since, "message": ""}
        ]}})
    }

    const NOW: &str = "2026-11-30T01:00:00Z";
    const OLD: &str = "2026-11-30T00:59:00Z";

    fn judged(items: Vec<Value>, at: &str, rule: OperatorsRule) -> OperatorsVerdict {
        let now = humantime::parse_rfc3339(at).unwrap();
        operators(
            &json!({ "items": items }),
            now,
            Duration::from_secs(30),
            rule,
        )
    }

    #[test]
    fn settled_operators_pass_either_rule_and_none_yet_fails() {
        let all = || {
            vec![
                co("dns", "True", "False", "False", OLD),
                co("etcd", "True", "False", "False", OLD),
            ]
        };
        for rule in [OperatorsRule::Installer, OperatorsRule::Healthy] {
            let v = judged(all(), NOW, rule);
            assert!(v.judgement.ok, "{}", v.judgement.detail);
            assert!(v.warnings.is_empty());
            assert!(!judged(vec![], NOW, rule).judgement.ok);
        }
    }

    #[test]
    fn a_degraded_operator_passes_the_installer_rule_with_a_warning_and_fails_healthy() {
        let items = || {
            vec![
                co("dns", "True", "False", "False", OLD),
                co("ingress", "True", "True", "False", OLD),
            ]
        };
        let v = judged(items(), NOW, OperatorsRule::Installer);
        assert!(v.judgement.ok, "{}", v.judgement.detail);
        assert_eq!(
            v.warnings,
            ["ingress: Available=True Degraded=True Progressing=False (ingress degraded=True)"]
        );
        assert!(
            v.judgement.detail.contains(
                "reported, not judged by the installer's rule: 1 unavailable or degraded: ingress"
            ),
            "{}",
            v.judgement.detail
        );
        // The default of the three-argument form is the installer's rule.
        let now = humantime::parse_rfc3339(NOW).unwrap();
        assert!(cluster_operators(&json!({"items": items()}), now, Duration::from_secs(30)).ok);

        let v = judged(items(), NOW, OperatorsRule::Healthy);
        assert!(!v.judgement.ok);
        assert!(
            v.judgement
                .detail
                .contains("ingress: Available=True Degraded=True"),
            "{}",
            v.judgement.detail
        );
        assert!(v.warnings.is_empty(), "healthy fails them instead");
    }

    #[test]
    fn an_unavailable_but_settled_operator_is_only_a_warning_under_the_installer_rule() {
        let items = vec![co("console", "False", "False", "False", OLD)];
        let v = judged(items.clone(), NOW, OperatorsRule::Installer);
        assert!(v.judgement.ok, "{}", v.judgement.detail);
        assert!(
            v.warnings[0].contains("console available=False"),
            "{:?}",
            v.warnings
        );
        assert!(!judged(items, NOW, OperatorsRule::Healthy).judgement.ok);
    }

    #[test]
    fn an_operator_progressing_or_settled_for_thirty_seconds_or_less_holds_either_rule() {
        for rule in [OperatorsRule::Installer, OperatorsRule::Healthy] {
            // Progressing=False 10 s ago, and exactly 30 s ago: wait-for wants more than 30 s.
            for (since, age) in [
                ("2026-11-30T00:59:50Z", "10 s"),
                ("2026-11-30T00:59:30Z", "30 s"),
            ] {
                let v = judged(vec![co("dns", "True", "False", "False", since)], NOW, rule);
                let d = &v.judgement.detail;
                assert!(
                    !v.judgement.ok && d.contains(&format!("dns ({age})")),
                    "{d}"
                );
            }
            let v = judged(
                vec![co("dns", "True", "False", "False", "2026-11-30T00:59:29Z")],
                NOW,
                rule,
            );
            assert!(v.judgement.ok, "{}", v.judgement.detail);
            let v = judged(vec![co("dns", "True", "False", "True", OLD)], NOW, rule);
            assert!(
                !v.judgement.ok && v.judgement.detail.contains("dns: Progressing=True"),
                "{}",
                v.judgement.detail
            );
        }
        // An operator without a Progressing condition has not settled.
        let bare = json!({"metadata": {"name": "x"}, "status": {"conditions": [
            {"type": "Available", "status": "True"}]}});
        let v = judged(vec![bare], NOW, OperatorsRule::Installer);
        assert!(
            !v.judgement.ok && v.judgement.detail.contains("x: Progressing=missing"),
            "{}",
            v.judgement.detail
        );
    }

    #[test]
    fn one_ready_node_is_required() {
        let node = |ready: &str| json!({"metadata": {"name": "minisno"}, "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletNotReady", "message": "PLEG is not healthy"}]}});
        assert!(single_node_ready(&json!({"items": [node("True")]})).ok);
        let j = single_node_ready(&json!({"items": [node("False")]}));
        assert!(!j.ok && j.detail.contains("PLEG"), "{}", j.detail);
        let j = single_node_ready(&json!({"items": [node("True"), node("True")]}));
        assert!(
            !j.ok && j.detail.contains("carries a control-plane label"),
            "{}",
            j.detail
        );
    }

    /// A Node as the kubelet registers it, with `role`'s labels as a 4.17 node carries them.
    fn node(name: &str, role: &str, ready: &str) -> Value {
        let labels = match role {
            "master" => {
                json!({"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": ""})
            }
            "control-plane" => json!({"node-role.kubernetes.io/control-plane": ""}),
            _ => json!({"node-role.kubernetes.io/worker": ""}),
        };
        json!({"metadata": {"name": name, "labels": labels}, "status": {
            "addresses": [{"type": "InternalIP", "address": format!("10.0.0.{}", name.len())}],
            "conditions": [{"type": "Ready", "status": ready, "reason": if ready == "True" { "KubeletReady" } else { "KubeletNotReady" }, "message": ""}]}})
    }

    #[test]
    fn one_control_plane_with_two_workers_is_single_node_and_judged_alone() {
        let nodes = json!({"items": [node("w1", "worker", "True"), node("sno-master-0", "master", "True"), node("w2", "worker", "True")]});
        let j = single_node_ready(&nodes);
        assert!(j.ok, "{}", j.detail);
        assert_eq!(j.detail, "node sno-master-0 Ready");
        assert_eq!(single_node_name(&nodes).as_deref(), Some("sno-master-0"));
        assert_eq!(single_node_internal_ips(&nodes), ["10.0.0.12"]);
        // The control-plane label alone, as a release that dropped `master` would set it.
        let nodes =
            json!({"items": [node("w1", "worker", "True"), node("cp", "control-plane", "False")]});
        let j = single_node_ready(&nodes);
        assert!(
            !j.ok && j.detail.starts_with("node cp Ready=False"),
            "{}",
            j.detail
        );
    }

    #[test]
    fn two_control_planes_are_not_single_node_and_are_named() {
        let nodes = json!({"items": [node("m0", "master", "True"), node("m1", "control-plane", "True"), node("w1", "worker", "True")]});
        let j = single_node_ready(&nodes);
        assert!(!j.ok);
        assert!(
            j.detail
                .starts_with(r#"not single-node: 2 control-plane nodes ["m0", "m1"]"#),
            "{}",
            j.detail
        );
        assert_eq!(single_node_name(&nodes), None);
        assert!(single_node_internal_ips(&nodes).is_empty());
    }

    #[test]
    fn a_worker_not_ready_does_not_fail_the_control_planes_judgement_and_is_said() {
        let nodes = json!({"items": [node("sno-master-0", "master", "True"), node("w1", "worker", "False")]});
        let j = single_node_ready(&nodes);
        assert!(j.ok, "{}", j.detail);
        assert!(
            j.detail.ends_with(
                "(a warning, not judged: workers not Ready: w1 Ready=False (KubeletNotReady))"
            ),
            "{}",
            j.detail
        );
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
        // Available yet Failing: wait-for install-complete keeps waiting, so this fails.
        let j = cluster_version(&cv("True", "True", "False", "Could not update deployment"));
        assert!(
            !j.ok
                && j.detail.contains(
                    "Failing=True Progressing=False; Failing: Could not update deployment"
                ),
            "{}",
            j.detail
        );
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
