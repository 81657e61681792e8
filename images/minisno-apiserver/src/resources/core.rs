//! Core group: nodes, namespaces, configmaps.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, NamespaceStatus, Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus,
    NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status, StatusDetails};
use k8s_openapi::List;

use super::{health::KUBE_VERSION, sim_meta, Reply};
use crate::app::{App, UpdateError};
use crate::schedule::{self, Timeline};
use crate::state::State;

pub const BASE_NAMESPACES: &[&str] = &[
    "default",
    "kube-node-lease",
    "kube-public",
    "kube-system",
    "openshift",
    "openshift-apiserver",
    "openshift-cluster-version",
    "openshift-config",
    "openshift-config-managed",
    "openshift-etcd",
    "openshift-ingress",
    "openshift-kube-apiserver",
    "openshift-machine-config-operator",
];

fn node(app: &App, timeline: &Timeline) -> Node {
    let name = &app.node_name;
    let elapsed = app.elapsed();
    let conditions = schedule::node_conditions(elapsed, timeline)
        .into_iter()
        .map(|c| NodeCondition {
            type_: c.type_.to_string(),
            status: c.status.to_string(),
            last_heartbeat_time: Some(app.time_at(elapsed.floor())),
            last_transition_time: Some(app.time_at(c.since_s)),
            reason: Some(c.reason),
            message: Some(c.message),
        })
        .collect();
    let labels: BTreeMap<String, String> = [
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/hostname", name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("node-role.kubernetes.io/control-plane", ""),
        ("node-role.kubernetes.io/master", ""),
        ("node-role.kubernetes.io/worker", ""),
        ("node.openshift.io/os_id", "minisno"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut addresses = Vec::new();
    for ip in &app.node_ips {
        addresses.push(NodeAddress {
            type_: "InternalIP".to_string(),
            address: ip.to_string(),
        });
    }
    addresses.push(NodeAddress {
        type_: "Hostname".to_string(),
        address: name.clone(),
    });
    let resources: BTreeMap<String, Quantity> = [
        ("cpu", "4"),
        ("memory", "16Gi"),
        ("pods", "250"),
        ("ephemeral-storage", "100Gi"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
    .collect();
    let mut meta = sim_meta(app, "Node", None, name);
    meta.creation_timestamp = timeline.node_registered.map(|t| app.time_at(t));
    Node {
        metadata: ObjectMeta {
            labels: Some(labels),
            ..meta
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            addresses: Some(addresses),
            allocatable: Some(resources.clone()),
            capacity: Some(resources),
            conditions: Some(conditions),
            node_info: Some(NodeSystemInfo {
                architecture: "amd64".to_string(),
                boot_id: app.uid("boot"),
                container_runtime_version: "cri-o://1.30.4-minisno".to_string(),
                kernel_version: "6.1.0-minisno".to_string(),
                kube_proxy_version: String::new(),
                kubelet_version: KUBE_VERSION.to_string(),
                machine_id: app.uid("machine").replace('-', ""),
                operating_system: "linux".to_string(),
                os_image: "minisno (Debian bookworm; a test fixture)".to_string(),
                system_uuid: app.uid("system"),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// The node object exists once the kubelet registered it: the API was up and api-int resolved
/// on the node.
fn registered_node(app: &App) -> Option<Node> {
    let timeline = app.timeline();
    timeline
        .node_exists(app.elapsed())
        .then(|| node(app, &timeline))
}

pub fn list_nodes(app: &App) -> Reply {
    let list = List::<Node> {
        items: registered_node(app).into_iter().collect(),
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta {
            resource_version: Some(app.generation().to_string()),
            ..Default::default()
        },
    };
    Reply::json(200, &list)
}

pub fn get_node(app: &App, name: &str) -> Reply {
    match registered_node(app).filter(|_| name == app.node_name) {
        Some(n) => Reply::json(200, &n),
        None => Reply::not_found("", "nodes", name),
    }
}

/// The base namespaces, those the operators run in (their pods and events are listed there)
/// and those configmaps were created in.
fn namespace_names(app: &App) -> Vec<String> {
    let mut names: Vec<String> = BASE_NAMESPACES.iter().map(|s| s.to_string()).collect();
    for op in schedule::operator_names(&app.faults) {
        names.extend(schedule::operator_namespaces(&op));
    }
    app.read(|s| {
        for key in s.configmaps.keys() {
            if let Some((ns, _)) = key.split_once('/') {
                names.push(ns.to_string());
            }
        }
    });
    names.sort();
    names.dedup();
    names
}

fn namespace(app: &App, name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            labels: Some(
                [("kubernetes.io/metadata.name".to_string(), name.to_string())]
                    .into_iter()
                    .collect(),
            ),
            ..sim_meta(app, "Namespace", None, name)
        },
        spec: None,
        status: Some(NamespaceStatus {
            phase: Some("Active".to_string()),
            ..Default::default()
        }),
    }
}

pub fn list_namespaces(app: &App) -> Reply {
    let list = List::<Namespace> {
        items: namespace_names(app)
            .iter()
            .map(|n| namespace(app, n))
            .collect(),
        metadata: Default::default(),
    };
    Reply::json(200, &list)
}

pub fn get_namespace(app: &App, name: &str) -> Reply {
    if namespace_names(app).iter().any(|n| n == name) {
        Reply::json(200, &namespace(app, name))
    } else {
        Reply::not_found("", "namespaces", name)
    }
}

fn key(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

/// Lists configmaps in `namespace`, or in all namespaces when `None`.
pub fn list_configmaps(app: &App, namespace: Option<&str>) -> Reply {
    let (items, rv) = app.read(|s| {
        let items: Vec<serde_json::Value> = s
            .configmaps
            .iter()
            .filter(|(k, _)| namespace.is_none_or(|ns| k.split_once('/').map(|p| p.0) == Some(ns)))
            .map(|(_, v)| v.clone())
            .collect();
        (items, s.resource_version.to_string())
    });
    Reply::json(200, &super::list_json("v1", "ConfigMapList", rv, &items))
}

pub fn get_configmap(app: &App, ns: &str, name: &str) -> Reply {
    match app.read(|s| s.configmaps.get(&key(ns, name)).cloned()) {
        Some(cm) => Reply::json(200, &cm),
        None => Reply::not_found("", "configmaps", name),
    }
}

/// Parses a ConfigMap body (apiVersion/kind may be left out) and checks its namespace.
fn parse_configmap(body: &[u8], ns: &str) -> Result<ConfigMap, Reply> {
    let mut value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| Reply::bad_request(format!("invalid JSON body: {e}")))?;
    let obj = value
        .as_object_mut()
        .ok_or_else(|| Reply::bad_request("the body must be a ConfigMap object"))?;
    obj.entry("apiVersion").or_insert("v1".into());
    obj.entry("kind").or_insert("ConfigMap".into());
    let cm: ConfigMap = serde_json::from_value(value)
        .map_err(|e| Reply::bad_request(format!("the body is not a v1 ConfigMap: {e}")))?;
    if let Some(body_ns) = &cm.metadata.namespace {
        if body_ns != ns {
            return Err(Reply::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    Ok(cm)
}

fn invalid_name(name: &str) -> Option<Reply> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then(|| {
        Reply::status_with(
            422,
            "Invalid",
            format!("ConfigMap \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"),
            Some(super::details("", "ConfigMap", name)),
        )
    })
}

fn save_failed(e: crate::state::StateError) -> Reply {
    Reply::status(
        500,
        "InternalError",
        format!("storing the change failed: {e}"),
    )
}

fn settle(r: Result<Reply, UpdateError<Reply>>) -> Reply {
    match r {
        Ok(r) | Err(UpdateError::Rejected(r)) => r,
        Err(UpdateError::Save(e)) => save_failed(e),
    }
}

/// The configmap the post-reboot script creates when the bootstrap is complete: the etcd
/// operator waits for it before it removes the bootstrap member. The first time it says
/// complete is kept.
pub const BOOTSTRAP_CONFIGMAP: &str = "kube-system/bootstrap";

fn note_bootstrap_complete(s: &mut State, key: &str, cm: &serde_json::Value, elapsed: f64) {
    if key == BOOTSTRAP_CONFIGMAP && cm["data"]["status"] == "complete" {
        s.bootstrap_complete_at_s.get_or_insert(elapsed);
    }
}

pub fn create_configmap(app: &App, ns: &str, body: &[u8]) -> Reply {
    let mut cm = match parse_configmap(body, ns) {
        Ok(cm) => cm,
        Err(r) => return r,
    };
    let name = cm.metadata.name.clone().unwrap_or_default();
    if let Some(r) = invalid_name(&name) {
        return r;
    }
    settle(app.update(|s| {
        let k = key(ns, &name);
        if s.configmaps.contains_key(&k) {
            return Err(Reply::status_with(
                409,
                "AlreadyExists",
                format!("configmaps \"{name}\" already exists"),
                Some(super::details("", "configmaps", &name)),
            ));
        }
        cm.metadata.namespace = Some(ns.to_string());
        cm.metadata.uid = Some(app.uid(&format!("ConfigMap/{ns}/{name}/{}", s.resource_version)));
        cm.metadata.resource_version = Some(s.next_resource_version());
        cm.metadata.creation_timestamp = Some(app.time_at(app.elapsed()));
        cm.metadata.generate_name = None;
        let value = serde_json::to_value(&cm).expect("configmap serializes");
        note_bootstrap_complete(s, &k, &value, app.elapsed());
        s.configmaps.insert(k, value.clone());
        Ok(Reply::json(201, &value))
    }))
}

pub fn replace_configmap(app: &App, ns: &str, name: &str, body: &[u8]) -> Reply {
    let mut cm = match parse_configmap(body, ns) {
        Ok(cm) => cm,
        Err(r) => return r,
    };
    if cm.metadata.name.as_deref() != Some(name) {
        return Reply::bad_request("the name of the object does not match the name on the URL");
    }
    settle(app.update(|s| {
        let k = key(ns, name);
        let Some(old) = s.configmaps.get(&k) else {
            return Err(Reply::not_found("", "configmaps", name));
        };
        let old_meta = &old["metadata"];
        if let Some(rv) = &cm.metadata.resource_version {
            if Some(rv.as_str()) != old_meta["resourceVersion"].as_str() {
                return Err(Reply::status_with(
                    409,
                    "Conflict",
                    format!("Operation cannot be fulfilled on configmaps \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
                    Some(super::details("", "configmaps", name)),
                ));
            }
        }
        cm.metadata.namespace = Some(ns.to_string());
        cm.metadata.uid = old_meta["uid"].as_str().map(str::to_string);
        cm.metadata.creation_timestamp =
            serde_json::from_value(old_meta["creationTimestamp"].clone()).ok();
        cm.metadata.resource_version = Some(s.next_resource_version());
        let value = serde_json::to_value(&cm).expect("configmap serializes");
        note_bootstrap_complete(s, &k, &value, app.elapsed());
        s.configmaps.insert(k, value.clone());
        Ok(Reply::json(200, &value))
    }))
}

pub fn delete_configmap(app: &App, ns: &str, name: &str) -> Reply {
    settle(app.update(|s| {
        let uid = match s.configmaps.remove(&key(ns, name)) {
            Some(old) => old["metadata"]["uid"].as_str().map(str::to_string),
            None => return Err(Reply::not_found("", "configmaps", name)),
        };
        s.next_resource_version();
        Ok(Reply::json(
            200,
            &Status {
                status: Some("Success".to_string()),
                details: Some(StatusDetails {
                    name: Some(name.to_string()),
                    kind: Some("configmaps".to_string()),
                    uid,
                    ..Default::default()
                }),
                ..Default::default()
            },
        ))
    }))
}
