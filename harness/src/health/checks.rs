//! The post-pivot checks in one pass over the API, made the same way by `run` (its API poller
//! feeds them to the state machine) and by `sno-harness check` (against any cluster): /readyz,
//! the bootstrap configmap, the node, etcd's bootstrap member by the rule the cluster's release
//! calls for, ClusterVersion, the ClusterOperators settled, and the install-config applied.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::{applied, judge, ClusterApi, HealthError};
use crate::flow::event::{ApiCheck, NodeSeen};
use crate::flow::release_rules::{self, Rule};
use crate::scenario::model::EtcdCheck;

/// How long ClusterOperators must stay settled (`wait-for install-complete` uses 30 s).
pub const OPERATORS_SETTLE: Duration = Duration::from_secs(30);

/// What a pass compares with.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The install-config the cluster was installed with (pull secret redacted), as JSON;
    /// without one, the applied check is not made.
    pub install_config: Option<Value>,
    pub etcd: EtcdCheck,
    /// `api-int.<cluster>.<baseDomain>`, named when no node has registered.
    pub api_int: Option<String>,
    /// The hostname the harness's DHCP gave the node (`<cluster>-master-0`), named when the
    /// node registered without it; None when the harness did not boot the node.
    pub node_name: Option<String>,
    /// The node's static addresses (the scenario's `[network]`), each of which must be one of
    /// the Node's InternalIPs; empty when the network gives the addresses.
    pub static_addresses: Vec<std::net::IpAddr>,
}

/// Whether bootstrap-complete waits for the etcd condition, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdRule {
    pub required: bool,
    pub why: String,
}

/// One pass: each check's judgement, in the order of the phases that read them.
#[derive(Debug, Clone)]
pub struct Pass {
    pub results: Vec<(ApiCheck, judge::Judgement)>,
    /// None while the release is unknown and the rule depends on it.
    pub etcd_rule: Option<EtcdRule>,
    /// The cluster's release, from ClusterVersion.
    pub version: Option<String>,
    /// The API could not be reached at all (not an answer, not even a 503).
    pub unreachable: Option<String>,
    /// The one node, once it registered, and what is wrong with its name.
    pub node: Option<NodeSeen>,
}

/// The rule for the etcd condition: the scenario's, or (automatic) by the cluster's release.
pub fn etcd_rule(setting: EtcdCheck, version: Option<&str>) -> Option<EtcdRule> {
    let rule = |required, why: String| Some(EtcdRule { required, why });
    match setting {
        EtcdCheck::Required => rule(
            true,
            "the scenario requires it ([checks] etcd_bootstrap_member_removed = \"required\")"
                .into(),
        ),
        EtcdCheck::Skipped => rule(
            false,
            "the scenario skips it ([checks] etcd_bootstrap_member_removed = \"skipped\")".into(),
        ),
        EtcdCheck::Auto => {
            let v = version?;
            let since = release_rules::row(Rule::EtcdBootstrapMemberRemoved).from;
            let (major, minor) = since;
            match release_rules::major_minor(v) {
                Some(r) if r >= since => rule(
                    true,
                    format!("the cluster's release {v} is {major}.{minor} or later, whose wait-for bootstrap-complete checks it"),
                ),
                Some(_) => rule(
                    false,
                    format!("the cluster's release {v} is older than {major}.{minor}, whose wait-for bootstrap-complete does not check it"),
                ),
                None => rule(
                    true,
                    format!("the cluster's release {v:?} is no version the harness can read, so the current rule applies"),
                ),
            }
        }
    }
}

/// The release ClusterVersion names: the desired one, else the newest in its history.
pub fn cluster_release(cv: &Value) -> Option<String> {
    cv["status"]["desired"]["version"]
        .as_str()
        .or_else(|| cv["status"]["history"][0]["version"].as_str())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

fn judged(
    r: Result<Value, HealthError>,
    f: impl Fn(&Value) -> judge::Judgement,
) -> judge::Judgement {
    match r {
        Ok(v) => f(&v),
        Err(e) => judge::Judgement {
            ok: false,
            detail: e.to_string(),
        },
    }
}

/// Every check once. When /readyz gets no answer the rest are not asked: each would wait out
/// its own timeouts against the same silent server (a pass would take ten times as long), and
/// each is failed with the reason instead.
pub async fn evaluate(api: &ClusterApi, inputs: &Inputs) -> Pass {
    let readyz = match api.readyz().await {
        Ok(ok) => judge::Judgement {
            ok,
            detail: format!("/readyz {}", if ok { "ok" } else { "not ready (503)" }),
        },
        Err(e) if e.is_unreachable() => return unreachable(inputs, &e.to_string()),
        Err(e) => judge::Judgement {
            ok: false,
            detail: e.to_string(),
        },
    };
    let mut results = vec![(ApiCheck::Readyz, readyz)];
    let (node_ready, node) = node_check(api, inputs).await;
    // The release first: whether the bootstrap configmap is waited for depends on it.
    let cv = api.cluster_version().await;
    let version = cv.as_ref().ok().and_then(cluster_release);
    let configmap = bootstrap_configmap(
        api.bootstrap_status().await,
        version.as_deref(),
        &node_ready,
    );
    results.push((ApiCheck::NodeReady, node_ready));
    results.push((ApiCheck::BootstrapConfigmap, configmap));
    let etcd_rule = etcd_rule(inputs.etcd, version.as_deref());
    results.push((
        ApiCheck::EtcdBootstrapMemberRemoved,
        etcd_check(api, etcd_rule.as_ref()).await,
    ));
    results.push((ApiCheck::ClusterVersion, judged(cv, judge::cluster_version)));
    let co = judged(api.cluster_operators().await, |v| {
        judge::cluster_operators(v, SystemTime::now(), OPERATORS_SETTLE)
    });
    results.push((ApiCheck::ClusterOperators, co));
    if let Some(j) = applied_check(api, inputs, version.as_deref()).await {
        results.push((ApiCheck::InstallConfigApplied, j));
    }
    Pass {
        results,
        etcd_rule,
        version,
        unreachable: None,
        node,
    }
}

/// A pass whose /readyz got no answer (`why`): every check fails with it, but the
/// install-config's, for which only an answer is evidence (as in [`applied_check`]).
pub fn unreachable(inputs: &Inputs, why: &str) -> Pass {
    let fail = |detail: String| judge::Judgement { ok: false, detail };
    let mut results = vec![(ApiCheck::Readyz, fail(why.into()))];
    for check in [
        ApiCheck::NodeReady,
        ApiCheck::BootstrapConfigmap,
        ApiCheck::EtcdBootstrapMemberRemoved,
        ApiCheck::ClusterVersion,
        ApiCheck::ClusterOperators,
    ] {
        results.push((check, fail("not asked: GET /readyz got no answer".into())));
    }
    Pass {
        results,
        etcd_rule: etcd_rule(inputs.etcd, None),
        version: None,
        unreachable: Some(why.into()),
        node: None,
    }
}

/// Whether the one node is Ready, and the node as it registered (its name judged).
async fn node_check(api: &ClusterApi, inputs: &Inputs) -> (judge::Judgement, Option<NodeSeen>) {
    let nodes = api.nodes().await;
    let seen = nodes
        .as_ref()
        .ok()
        .and_then(judge::single_node_name)
        .map(|name| {
            let addresses = nodes
                .as_ref()
                .map(judge::single_node_internal_ips)
                .unwrap_or_default();
            NodeSeen {
                name_problem: judge::node_name_problem(&name, inputs.node_name.as_deref()),
                address_problem: judge::node_address_problem(&addresses, &inputs.static_addresses),
                addresses,
                name,
            }
        });
    let mut j = judged(nodes, judge::single_node_ready);
    if !j.ok && j.detail.starts_with(judge::NO_NODE) {
        let name = inputs
            .api_int
            .as_deref()
            .unwrap_or("api-int.<cluster>.<baseDomain>");
        j.detail.push_str(&format!(
            ": the node's kubelet registers through {name}, which must resolve on the node"
        ));
    }
    (j, seen)
}

/// Configmap `kube-system/bootstrap` with `status: complete`, as `wait-for bootstrap-complete`
/// waits for it. A release whose post-reboot script does not create it (before 4.12, see
/// [`release_rules`]) is not held to it: its bootstrap-in-place users ran only `wait-for
/// install-complete`, so bootstrap-complete ends once the node is Ready (`node_ready`).
pub fn bootstrap_configmap(
    status: Result<Option<String>, HealthError>,
    version: Option<&str>,
    node_ready: &judge::Judgement,
) -> judge::Judgement {
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            return judge::Judgement {
                ok: false,
                detail: e.to_string(),
            }
        }
    };
    let seen = format!(
        "configmap kube-system/bootstrap status {}",
        status.as_deref().unwrap_or("absent")
    );
    if status.as_deref() == Some("complete")
        || release_rules::applies(Rule::BootstrapConfigmap, version)
    {
        return judge::Judgement {
            ok: status.as_deref() == Some("complete"),
            detail: seen,
        };
    }
    let (major, minor) = release_rules::row(Rule::BootstrapConfigmap).from;
    let why = format!(
        "{seen}, not required of release {}: bootstrap-in-place creates it only from {major}.{minor} (openshift/installer PR #6521), so bootstrap-complete ends when the node is Ready",
        version.unwrap_or_default()
    );
    judge::Judgement {
        ok: node_ready.ok,
        detail: if node_ready.ok {
            why
        } else {
            format!("{why}; {}", node_ready.detail)
        },
    }
}

async fn etcd_check(api: &ClusterApi, rule: Option<&EtcdRule>) -> judge::Judgement {
    match rule {
        None => judge::Judgement {
            ok: false,
            detail: "waiting for ClusterVersion to name the release: whether the etcd bootstrap member must be removed depends on it".into(),
        },
        Some(r) if !r.required => judge::Judgement {
            ok: true,
            detail: format!("EtcdBootstrapMemberRemoved not required: {}", r.why),
        },
        Some(_) => judged(api.etcd().await, judge::etcd_bootstrap_member_removed),
    }
}

/// Only an answer is evidence here: a dropped connection says nothing about the config, while
/// a refusal such as 403 is kept.
async fn applied_check(
    api: &ClusterApi,
    inputs: &Inputs,
    release: Option<&str>,
) -> Option<judge::Judgement> {
    let install_config = inputs.install_config.as_ref()?;
    match api.applied_config().await {
        Ok(seen) => Some(applied::install_config_applied(
            install_config,
            release,
            &seen,
        )),
        Err(e @ HealthError::Api { .. }) => Some(judge::Judgement {
            ok: false,
            detail: e.to_string(),
        }),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_etcd_rule_follows_the_release_unless_the_scenario_says() {
        let auto = |v| etcd_rule(EtcdCheck::Auto, Some(v)).unwrap();
        assert!(auto("4.16.0").required);
        assert!(auto("4.17.0-minisno").required);
        assert!(auto("5.0.1").required);
        assert!(!auto("4.15.9").required);
        assert!(!auto("4.14.3").required);
        assert!(
            auto("4.14.3").why.contains("older than 4.16"),
            "{}",
            auto("4.14.3").why
        );
        assert!(auto("nightly").required);
        assert_eq!(etcd_rule(EtcdCheck::Auto, None), None);
        assert!(
            etcd_rule(EtcdCheck::Required, Some("4.12.0"))
                .unwrap()
                .required
        );
        assert!(!etcd_rule(EtcdCheck::Skipped, None).unwrap().required);
    }

    fn node(ok: bool) -> judge::Judgement {
        judge::Judgement {
            ok,
            detail: format!("node minisno Ready={}", if ok { "True" } else { "False" }),
        }
    }

    #[test]
    fn the_bootstrap_configmap_is_required_from_4_12_on() {
        let absent = || Ok(None);
        for v in ["4.12.0", "4.13.0", "4.15.2", "4.16.0"] {
            let j = bootstrap_configmap(absent(), Some(v), &node(true));
            assert!(!j.ok, "{v}: {}", j.detail);
            assert_eq!(j.detail, "configmap kube-system/bootstrap status absent");
        }
        let j = bootstrap_configmap(Ok(Some("complete".into())), Some("4.12.0"), &node(false));
        assert!(j.ok, "{}", j.detail);
    }

    #[test]
    fn before_4_12_bootstrap_complete_ends_with_the_node_ready() {
        let j = bootstrap_configmap(Ok(None), Some("4.11.59"), &node(true));
        assert!(j.ok, "{}", j.detail);
        assert_eq!(
            j.detail,
            "configmap kube-system/bootstrap status absent, not required of release 4.11.59: bootstrap-in-place creates it only from 4.12 (openshift/installer PR #6521), so bootstrap-complete ends when the node is Ready"
        );
        let j = bootstrap_configmap(Ok(None), Some("4.11.0"), &node(false));
        assert!(!j.ok);
        assert!(
            j.detail.ends_with("; node minisno Ready=False"),
            "{}",
            j.detail
        );
        // An answer that is an error stays one, whatever the release.
        let refused = Err(HealthError::Api {
            what: "GET configmap kube-system/bootstrap".into(),
            message: "forbidden".into(),
            code: 403,
        });
        let j = bootstrap_configmap(refused, Some("4.11.0"), &node(true));
        assert!(!j.ok);
        assert!(j.detail.contains("forbidden (403)"), "{}", j.detail);
    }

    #[test]
    fn an_unknown_release_waits_for_the_bootstrap_configmap() {
        for v in [None, Some("nightly")] {
            let j = bootstrap_configmap(Ok(None), v, &node(true));
            assert!(!j.ok, "{v:?}: {}", j.detail);
        }
    }

    #[test]
    fn the_release_is_the_desired_one_or_the_newest_in_the_history() {
        let cv = serde_json::json!({"status": {"desired": {"version": "4.15.2"}, "history": [{"version": "4.15.1"}]}});
        assert_eq!(cluster_release(&cv).as_deref(), Some("4.15.2"));
        let cv = serde_json::json!({"status": {"history": [{"version": "4.14.3"}]}});
        assert_eq!(cluster_release(&cv).as_deref(), Some("4.14.3"));
        assert_eq!(cluster_release(&serde_json::json!({})), None);
    }
}
