//! The API's collectors, when it answers: the objects OpenShift CI's gather-extra starts a
//! failed install's reading with (ClusterVersion, ClusterOperators, nodes, every namespace's
//! events, the etcd operator), and the pods of the namespaces that the related objects of
//! every unhealthy operator name. Each is kept as the server's JSON text.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::sink::safe_component;
use super::{Collector, ProbeError};
use crate::health::{judge, ApiEndpoint, ClusterApi};

/// At most this many namespaces' pods: a cluster where every operator is broken has some
/// fifty, and more would be the API's own invention.
const MAX_NAMESPACES: usize = 64;

/// The objects kept whole: file, path.
const OBJECTS: &[(&str, &str)] = &[
    (
        "api/clusterversion.json",
        "/apis/config.openshift.io/v1/clusterversions/version",
    ),
    (
        "api/clusteroperators.json",
        "/apis/config.openshift.io/v1/clusteroperators",
    ),
    ("api/nodes.json", "/api/v1/nodes"),
    ("api/events.json", "/api/v1/events"),
    (
        "api/etcd.json",
        "/apis/operator.openshift.io/v1/etcds/cluster",
    ),
];

/// Connects within `within`: Err says why the API is not there to gather from.
pub async fn probe(ep: &ApiEndpoint, within: Duration) -> Result<Arc<ClusterApi>, ProbeError> {
    let reach = async {
        let api = ClusterApi::connect(ep).await?;
        api.readyz().await?;
        Ok(Arc::new(api))
    };
    tokio::time::timeout(within, reach)
        .await
        .unwrap_or(Err(ProbeError::NoAnswer(within)))
}

pub fn collectors(api: Arc<ClusterApi>, limit: Duration) -> Vec<Collector> {
    let mut v: Vec<Collector> = OBJECTS
        .iter()
        .map(|&(file, path)| {
            let api = api.clone();
            Collector::new(file, limit, move |sink| {
                Box::pin(async move {
                    let text = api.get_text(path).await.map_err(|e| e.to_string())?;
                    sink.write(file, text.as_bytes())?;
                    Ok(None)
                })
            })
        })
        .collect();
    v.push(Collector::new("api/pods", limit, move |sink| {
        Box::pin(async move {
            let ops = api
                .get_text("/apis/config.openshift.io/v1/clusteroperators")
                .await
                .map_err(|e| e.to_string())?;
            let ops: Value = serde_json::from_str(&ops).map_err(|e| e.to_string())?;
            let (namespaces, refused) = unhealthy_namespaces(&ops);
            if namespaces.is_empty() && refused.is_empty() {
                return Ok(Some(
                    "every ClusterOperator is Available and not Degraded".into(),
                ));
            }
            for ns in &namespaces {
                let path = format!("/api/v1/namespaces/{ns}/pods");
                let text = api.get_text(&path).await.map_err(|e| e.to_string())?;
                sink.write(&format!("api/pods/{ns}.json"), text.as_bytes())?;
            }
            match refused.is_empty() {
                true => Ok(None),
                false => Err(format!(
                    "related namespaces that are not namespace names were not asked for: {}",
                    refused.join(", ")
                )
                .into()),
            }
        })
    }));
    v
}

/// The namespaces that the related objects of every operator not Available, or Degraded,
/// name: the ones that are namespace names, sorted, at most [`MAX_NAMESPACES`]; and the ones
/// that are not (shown escaped), never used in a path.
fn unhealthy_namespaces(ops: &Value) -> (Vec<String>, Vec<String>) {
    let (mut ok, mut refused) = (BTreeSet::new(), Vec::new());
    let items = ops["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for op in items.iter().filter(|op| !healthy(op)) {
        let related = op["status"]["relatedObjects"].as_array();
        for r in related.map(Vec::as_slice).unwrap_or(&[]) {
            let name = if r["resource"] == "namespaces" {
                r["name"].as_str()
            } else {
                r["namespace"].as_str()
            };
            match name.map(|n| (n, safe_component(n))) {
                Some((_, Some(n))) => {
                    ok.insert(n.to_string());
                }
                Some((n, None)) => refused.push(format!("{n:?}")),
                None => {}
            }
        }
    }
    (ok.into_iter().take(MAX_NAMESPACES).collect(), refused)
}

fn healthy(op: &Value) -> bool {
    let cs = judge::conditions(op);
    let is = |t: &str, s: &str| cs.iter().any(|c| c.type_ == t && c.status == s);
    is("Available", "True") && !is("Degraded", "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(name: &str, available: &str, degraded: &str, related: Value) -> Value {
        json!({"metadata": {"name": name}, "status": {
            "conditions": [
                {"type": "Available", "status": available},
                {"type": "Degraded", "status": degraded}
            ],
            "relatedObjects": related
        }})
    }

    #[test]
    fn the_namespaces_of_unhealthy_operators_only_and_never_a_path() {
        let ops = json!({"items": [
            op("ingress", "True", "True", json!([
                {"group": "", "resource": "namespaces", "name": "openshift-ingress-operator"},
                {"group": "operator.openshift.io", "resource": "ingresscontrollers",
                 "namespace": "openshift-ingress-operator", "name": "default"},
                {"group": "", "resource": "namespaces", "name": "openshift-ingress"}
            ])),
            op("dns", "False", "False", json!([
                {"group": "", "resource": "namespaces", "name": "openshift-dns"},
                {"group": "", "resource": "namespaces", "name": "../../etc"},
                {"group": "", "resource": "namespaces", "name": "a/b"}
            ])),
            op("etcd", "True", "False", json!([
                {"group": "", "resource": "namespaces", "name": "openshift-etcd"}
            ])),
            {"metadata": {"name": "no-status"}}
        ]});
        let (ok, refused) = unhealthy_namespaces(&ops);
        assert_eq!(
            ok,
            [
                "openshift-dns",
                "openshift-ingress",
                "openshift-ingress-operator"
            ]
        );
        assert_eq!(refused, ["\"../../etc\"", "\"a/b\""]);
    }

    #[test]
    fn a_healthy_cluster_names_no_namespace() {
        let ops = json!({"items": [op("etcd", "True", "False", json!([
            {"group": "", "resource": "namespaces", "name": "openshift-etcd"}
        ]))]});
        assert_eq!(unhealthy_namespaces(&ops), (vec![], vec![]));
        assert_eq!(
            unhealthy_namespaces(&json!({"items": "x"})),
            (vec![], vec![])
        );
    }
}
