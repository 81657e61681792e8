//! The manifests `create manifests` writes for a single-node cluster on platform none: a few of
//! the real tool's files, by their real names, holding what the install-config says.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::install_config::{to_yaml, InstallConfig};

/// One manifest: its path under the asset directory and its YAML.
pub type Manifest = (String, String);

fn yaml(rel: &str, doc: &Value) -> Result<Manifest, String> {
    to_yaml(doc)
        .map(|y| (rel.to_string(), y))
        .map_err(|e| format!("failed to create {rel}: {e}"))
}

fn ssh_machine_config(role: &str, ssh_key: &str) -> Value {
    let keys: Vec<&str> = ssh_key
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"labels": {"machineconfiguration.openshift.io/role": role}, "name": format!("99-{role}-ssh")},
        "spec": {"config": {"ignition": {"version": "3.2.0"},
                            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": keys}]}}}
    })
}

/// The pointer config a machine of `role` would boot with, in the secret the real tool writes.
fn user_data_secret(role: &str, c: &InstallConfig) -> Value {
    let pointer = json!({"ignition": {"config": {"merge": [{"source": format!(
        "https://api-int.{}.{}:22623/config/{role}", c.metadata.name, c.base_domain)}]},
        "version": "3.2.0"}});
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": format!("{role}-user-data"), "namespace": "openshift-machine-api"},
        "type": "Opaque",
        "data": {"disableTemplating": B64.encode("true"), "userData": B64.encode(pointer.to_string())}
    })
}

fn cluster_config(install_config_yaml: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cluster-config-v1",
            "namespace": "kube-system",
            "annotations": {"kubernetes.io/description": "The install-config content used to create the cluster.  The cluster configuration may have evolved since installation, so check cluster configuration resources directly if you are interested in the current cluster state."}
        },
        "data": {"install-config": install_config_yaml}
    })
}

fn proxy(c: &InstallConfig) -> Value {
    let trusted = if c.proxy_trusts_bundle() {
        "user-ca-bundle"
    } else {
        ""
    };
    let mut spec = json!({"trustedCA": {"name": trusted}});
    if let Some(p) = &c.proxy {
        for (k, v) in [
            ("httpProxy", &p.http_proxy),
            ("httpsProxy", &p.https_proxy),
            ("noProxy", &p.no_proxy),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                spec[k] = json!(v);
            }
        }
    }
    json!({"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"}, "spec": spec, "status": {}})
}

fn network(c: &InstallConfig) -> Value {
    let n = c.networking.clone().unwrap_or_default();
    json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "Network",
        "metadata": {"name": "cluster"},
        "spec": {"clusterNetwork": n.cluster_network, "networkType": n.network_type,
                 "serviceNetwork": n.service_network, "externalIP": {"policy": {}}},
        "status": {}
    })
}

fn infrastructure(c: &InstallConfig, infra_id: &str) -> Value {
    let domain = format!("{}.{}", c.metadata.name, c.base_domain);
    json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "spec": {"cloudConfig": {"name": ""}, "platformSpec": {"type": "None"}},
        "status": {"apiServerURL": format!("https://api.{domain}:6443"),
                   "apiServerInternalURI": format!("https://api-int.{domain}:6443"),
                   "controlPlaneTopology": "SingleReplica", "infrastructureTopology": "SingleReplica",
                   "infrastructureName": infra_id, "platform": "None", "platformStatus": {"type": "None"}}
    })
}

fn pull_secret(secret: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pull-secret", "namespace": "openshift-config"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": B64.encode(secret)}
    })
}

fn trust_bundle(bundle: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "user-ca-bundle", "namespace": "openshift-config",
                     "annotations": {"openshift.io/owning-component": "End User"}},
        "data": {"ca-bundle.crt": bundle}
    })
}

/// Every manifest of the command, in the order written.
pub fn manifests(
    c: &InstallConfig,
    infra_id: &str,
    version: &str,
) -> Result<Vec<Manifest>, String> {
    let ssh = c.ssh_key.as_deref().unwrap_or_default();
    let mut out = vec![
        yaml(
            "openshift/99_openshift-cluster-api_master-user-data-secret.yaml",
            &user_data_secret("master", c),
        )?,
        yaml(
            "openshift/99_openshift-machineconfig_99-master-ssh.yaml",
            &ssh_machine_config("master", ssh),
        )?,
        yaml(
            "openshift/99_openshift-cluster-api_worker-user-data-secret.yaml",
            &user_data_secret("worker", c),
        )?,
        yaml(
            "openshift/99_openshift-machineconfig_99-worker-ssh.yaml",
            &ssh_machine_config("worker", ssh),
        )?,
        yaml(
            "manifests/cluster-config.yaml",
            &cluster_config(&c.redacted_yaml()?),
        )?,
        yaml(
            "manifests/cluster-infrastructure-02-config.yml",
            &infrastructure(c, infra_id),
        )?,
        yaml("manifests/cluster-network-02-config.yml", &network(c))?,
        yaml("manifests/cluster-proxy-01-config.yaml", &proxy(c))?,
        yaml(
            "manifests/cluster-scheduler-02-config.yml",
            &json!({
            "apiVersion": "config.openshift.io/v1", "kind": "Scheduler", "metadata": {"name": "cluster"},
            "spec": {"mastersSchedulable": crate::assets::outputs::no_compute_replicas(c), "policy": {"name": ""}}, "status": {}}),
        )?,
        yaml(
            "manifests/openshift-config-secret-pull-secret.yaml",
            &pull_secret(c.pull_secret.as_deref().unwrap_or_default()),
        )?,
        yaml(
            "openshift/openshift-install-manifests.yaml",
            &json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "openshift-install-manifests", "namespace": "openshift-config"},
            "data": {"invoker": "minisno-install (a test fixture)", "version": version}}),
        )?,
    ];
    if let Some(bundle) = c
        .additional_trust_bundle
        .as_deref()
        .filter(|b| !b.is_empty())
    {
        out.push(yaml(
            "manifests/user-ca-bundle-config.yaml",
            &trust_bundle(bundle),
        )?);
    }
    Ok(out)
}
