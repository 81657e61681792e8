//! config.openshift.io and operator.openshift.io objects, computed from the schedule.

use serde_json::{json, Value};

use super::openshift_types::*;
use super::{list_json, sim_meta, Reply};
use crate::app::App;
use crate::config::Fault;
use crate::schedule::{self, Cond, Timeline};

pub const CONFIG_V1: &str = "config.openshift.io/v1";
pub const OPERATOR_V1: &str = "operator.openshift.io/v1";

/// Capabilities an OpenShift 4.17 release knows.
pub const KNOWN_CAPABILITIES: &[&str] = &[
    "Build",
    "CSISnapshot",
    "CloudControllerManager",
    "CloudCredential",
    "Console",
    "DeploymentConfig",
    "ImageRegistry",
    "Ingress",
    "Insights",
    "MachineAPI",
    "NodeTuning",
    "OperatorLifecycleManager",
    "Storage",
    "baremetal",
    "marketplace",
    "openshift-samples",
];

fn conditions(app: &App, conds: Vec<Cond>) -> Vec<Condition> {
    conds
        .into_iter()
        .map(|c| Condition {
            type_: c.type_.to_string(),
            status: c.status.to_string(),
            last_transition_time: app.time_at(c.since_s),
            reason: c.reason,
            message: c.message,
        })
        .collect()
}

fn release(app: &App) -> Release {
    Release {
        version: app.config.release.version.clone(),
        image: app.config.release.image.clone(),
    }
}

fn enabled_capabilities(install_config: &Value) -> Vec<String> {
    let caps = &install_config["capabilities"];
    let additional: Vec<String> = caps["additionalEnabledCapabilities"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut enabled: Vec<String> = if caps["baselineCapabilitySet"].as_str() == Some("None") {
        additional
    } else {
        let mut all: Vec<String> = KNOWN_CAPABILITIES.iter().map(|s| s.to_string()).collect();
        all.extend(additional);
        all
    };
    enabled.sort();
    enabled.dedup();
    enabled
}

pub fn cluster_version(app: &App) -> ClusterVersion {
    let elapsed = app.elapsed();
    let rel = release(app);
    let view = schedule::cluster_version(
        elapsed,
        &app.timeline(),
        &app.faults,
        &app.config.release.version,
    );
    let capabilities = app.install_config.get("capabilities").cloned();
    ClusterVersion {
        api_version: CONFIG_V1.to_string(),
        kind: "ClusterVersion".to_string(),
        metadata: sim_meta(app, "ClusterVersion", None, "version"),
        spec: ClusterVersionSpec {
            cluster_id: app.uid("clusterID"),
            channel: app.config.release.channel(),
            desired_update: None,
            capabilities,
        },
        status: ClusterVersionStatus {
            desired: rel.clone(),
            history: vec![UpdateHistory {
                state: if view.completed_at.is_some() {
                    "Completed"
                } else {
                    "Partial"
                }
                .to_string(),
                started_time: app.time_at(0.0),
                completion_time: view.completed_at.map(|t| app.time_at(t)),
                version: rel.version,
                image: rel.image,
                verified: false,
            }],
            observed_generation: 1,
            version_hash: app.uid("versionHash")[..11].to_string(),
            capabilities: Capabilities {
                enabled_capabilities: enabled_capabilities(&app.install_config),
                known_capabilities: KNOWN_CAPABILITIES.iter().map(|s| s.to_string()).collect(),
            },
            available_updates: None,
            conditions: conditions(app, view.conditions),
        },
    }
}

pub fn list_cluster_versions(app: &App) -> Reply {
    Reply::json(
        200,
        &list_json(
            CONFIG_V1,
            "ClusterVersionList",
            app.generation().to_string(),
            &[cluster_version(app)],
        ),
    )
}

pub fn get_cluster_version(app: &App, name: &str) -> Reply {
    if name != "version" {
        return Reply::not_found("config.openshift.io", "clusterversions", name);
    }
    Reply::json(200, &cluster_version(app))
}

fn cluster_operator(app: &App, name: &str, index: usize, timeline: &Timeline) -> ClusterOperator {
    let version = &app.config.release.version;
    let conds =
        schedule::operator_conditions(name, index, app.elapsed(), timeline, &app.faults, version);
    // the namespaces first, then the operator itself, as the real operators list them
    let mut related: Vec<ObjectReference> = schedule::operator_namespaces(name)
        .into_iter()
        .map(|ns| ObjectReference {
            group: String::new(),
            resource: "namespaces".to_string(),
            namespace: String::new(),
            name: ns,
        })
        .collect();
    related.push(ObjectReference {
        group: "config.openshift.io".to_string(),
        resource: "clusteroperators".to_string(),
        namespace: String::new(),
        name: name.to_string(),
    });
    ClusterOperator {
        api_version: CONFIG_V1.to_string(),
        kind: "ClusterOperator".to_string(),
        metadata: sim_meta(app, "ClusterOperator", None, name),
        spec: json!({}),
        status: ClusterOperatorStatus {
            conditions: conditions(app, conds),
            versions: vec![OperandVersion {
                name: "operator".to_string(),
                version: version.clone(),
            }],
            related_objects: related,
        },
    }
}

pub fn cluster_operators(app: &App) -> Vec<ClusterOperator> {
    let timeline = app.timeline();
    schedule::operator_names(&app.faults)
        .iter()
        .enumerate()
        .map(|(i, n)| cluster_operator(app, n, i, &timeline))
        .collect()
}

pub fn list_cluster_operators(app: &App) -> Reply {
    Reply::json(
        200,
        &list_json(
            CONFIG_V1,
            "ClusterOperatorList",
            app.generation().to_string(),
            &cluster_operators(app),
        ),
    )
}

pub fn get_cluster_operator(app: &App, name: &str) -> Reply {
    let names = schedule::operator_names(&app.faults);
    match names.iter().position(|n| n == name) {
        Some(i) => Reply::json(200, &cluster_operator(app, name, i, &app.timeline())),
        None => Reply::not_found("config.openshift.io", "clusteroperators", name),
    }
}

pub fn etcd(app: &App) -> Etcd {
    let conds = schedule::etcd_conditions(
        app.elapsed(),
        &app.timeline(),
        app.config.release.etcd_removed_condition(),
    );
    Etcd {
        api_version: OPERATOR_V1.to_string(),
        kind: "Etcd".to_string(),
        metadata: sim_meta(app, "Etcd", None, "cluster"),
        spec: EtcdSpec {
            management_state: "Managed".to_string(),
        },
        status: EtcdStatus {
            conditions: conditions(app, conds),
            latest_available_revision: 3,
            observed_generation: 1,
            ready_replicas: 0,
        },
    }
}

fn networking(app: &App) -> (Value, Value, Value, Value) {
    let n = &app.install_config["networking"];
    let cluster = n
        .get("clusterNetwork")
        .filter(|v| v.is_array())
        .cloned()
        .unwrap_or_else(|| json!([{"cidr": "10.128.0.0/14", "hostPrefix": 23}]));
    let service = n
        .get("serviceNetwork")
        .filter(|v| v.is_array())
        .cloned()
        .unwrap_or_else(|| json!(["172.30.0.0/16"]));
    let machine = n
        .get("machineNetwork")
        .filter(|v| v.is_array())
        .cloned()
        .unwrap_or_else(|| json!([]));
    let kind = n
        .get("networkType")
        .filter(|v| v.is_string())
        .cloned()
        .unwrap_or_else(|| json!("OVNKubernetes"));
    (cluster, service, machine, kind)
}

pub fn network(app: &App) -> Network {
    let (cluster, service, _, kind) = networking(app);
    // What the network operator deployed; the fault makes it differ from what was asked.
    let deployed = if app.faults.has(&Fault::NetworkTypeDrift) {
        json!(if kind == "OpenShiftSDN" {
            "OVNKubernetes"
        } else {
            "OpenShiftSDN"
        })
    } else {
        kind.clone()
    };
    Network {
        api_version: CONFIG_V1.to_string(),
        kind: "Network".to_string(),
        metadata: sim_meta(app, "Network", None, "cluster"),
        spec: json!({
            "clusterNetwork": cluster,
            "serviceNetwork": service,
            "networkType": kind,
            "externalIP": {"policy": {}},
        }),
        status: json!({
            "clusterNetwork": cluster,
            "serviceNetwork": service,
            "networkType": deployed,
            "clusterNetworkMTU": 1400,
        }),
    }
}

/// Whether the Proxy config names the user's trust bundle, as the installer writes it: only
/// with a bundle, and then only with a proxy configured or the policy `Always` (the default
/// policy is `Proxyonly`). The bundle's configmap exists either way.
pub fn trusts_bundle(install_config: &Value) -> bool {
    let has_bundle = install_config["additionalTrustBundle"]
        .as_str()
        .is_some_and(|b| !b.is_empty());
    let always = install_config["additionalTrustBundlePolicy"] == "Always";
    let proxy = install_config["proxy"].is_object();
    has_bundle && (always || proxy)
}

pub fn proxy(app: &App) -> Proxy {
    let p = &app.install_config["proxy"];
    let field = |k: &str| p[k].as_str().unwrap_or_default().to_string();
    let (http, https, no) = (field("httpProxy"), field("httpsProxy"), field("noProxy"));
    let trusted = if trusts_bundle(&app.install_config) {
        "user-ca-bundle"
    } else {
        ""
    };
    let mut spec = json!({"trustedCA": {"name": trusted}});
    let mut status = json!({});
    for (k, v) in [
        ("httpProxy", &http),
        ("httpsProxy", &https),
        ("noProxy", &no),
    ] {
        if !v.is_empty() {
            spec[k] = json!(v);
            if k != "noProxy" {
                status[k] = json!(v);
            }
        }
    }
    if !http.is_empty() || !https.is_empty() {
        // what the network operator adds to noProxy when a proxy is set
        let (cluster, service, machine, _) = networking(app);
        let mut entries: Vec<String> = no
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        entries.extend(
            [".cluster.local", ".svc", "127.0.0.1", "localhost"]
                .iter()
                .map(|s| s.to_string()),
        );
        entries.push(app.config.api_int_host());
        for list in [&cluster, &machine] {
            for c in list.as_array().into_iter().flatten() {
                if let Some(cidr) = c["cidr"].as_str() {
                    entries.push(cidr.to_string());
                }
            }
        }
        for s in service.as_array().into_iter().flatten() {
            if let Some(cidr) = s.as_str() {
                entries.push(cidr.to_string());
            }
        }
        entries.sort();
        entries.dedup();
        status["noProxy"] = json!(entries.join(","));
    }
    Proxy {
        api_version: CONFIG_V1.to_string(),
        kind: "Proxy".to_string(),
        metadata: sim_meta(app, "Proxy", None, "cluster"),
        spec,
        status,
    }
}

pub fn infrastructure(app: &App) -> Infrastructure {
    let c = &app.config;
    Infrastructure {
        api_version: CONFIG_V1.to_string(),
        kind: "Infrastructure".to_string(),
        metadata: sim_meta(app, "Infrastructure", None, "cluster"),
        spec: json!({
            "cloudConfig": {"name": ""},
            "platformSpec": {"type": "None"},
        }),
        status: json!({
            "apiServerURL": format!("https://{}:6443", c.api_host()),
            "apiServerInternalURI": format!("https://{}:6443", c.api_int_host()),
            "controlPlaneTopology": "SingleReplica",
            "infrastructureTopology": "SingleReplica",
            "cpuPartitioning": "None",
            "etcdDiscoveryDomain": "",
            "infrastructureName": format!("{}-{}", c.cluster_name, &app.uid("infra")[..5]),
            "platform": "None",
            "platformStatus": {"type": "None"},
        }),
    }
}

/// The cluster-scoped singletons named `cluster`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Singleton {
    Network,
    Proxy,
    Infrastructure,
    Etcd,
}

impl Singleton {
    pub fn from_resource(group: &str, resource: &str) -> Option<Singleton> {
        match (group, resource) {
            ("config.openshift.io", "networks") => Some(Singleton::Network),
            ("config.openshift.io", "proxies") => Some(Singleton::Proxy),
            ("config.openshift.io", "infrastructures") => Some(Singleton::Infrastructure),
            ("operator.openshift.io", "etcds") => Some(Singleton::Etcd),
            _ => None,
        }
    }

    fn value(self, app: &App) -> (Value, &'static str, &'static str) {
        fn v<T: serde::Serialize>(x: T) -> Value {
            serde_json::to_value(x).expect("object serializes")
        }
        match self {
            Singleton::Network => (v(network(app)), CONFIG_V1, "NetworkList"),
            Singleton::Proxy => (v(proxy(app)), CONFIG_V1, "ProxyList"),
            Singleton::Infrastructure => (v(infrastructure(app)), CONFIG_V1, "InfrastructureList"),
            Singleton::Etcd => (v(etcd(app)), OPERATOR_V1, "EtcdList"),
        }
    }

    pub fn list(self, app: &App) -> Reply {
        let (item, api_version, kind) = self.value(app);
        Reply::json(
            200,
            &list_json(api_version, kind, app.generation().to_string(), &[item]),
        )
    }

    pub fn get(self, app: &App, group: &str, resource: &str, name: &str) -> Reply {
        if name != "cluster" {
            return Reply::not_found(group, resource, name);
        }
        Reply::json(200, &self.value(app).0)
    }
}
