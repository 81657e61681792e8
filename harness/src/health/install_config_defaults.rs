//! The installer's defaults of an install-config, in one place. The cluster stores its
//! install-config (configmap `kube-system/cluster-config-v1`) with these filled in, and deploys
//! what they say: an install-config that leaves a field out asks for its default, so the
//! comparison of what was asked with what the cluster reports ([`super::applied`]) is made on
//! the user's file with these applied.
//!
//! Source: openshift/installer `pkg/types/defaults/installconfig.go` (`SetInstallConfigDefaults`)
//! and `pkg/types/defaults/machinepools.go` (`SetMachinePoolDefaults`), read in their May 2025
//! state and in the history of `defaultNetworkType`. Defaults the harness cannot know are left
//! out: a pool's `architecture` is the installer binary's own, and platform none sets nothing.

use serde_json::{json, Value};

use crate::flow::release_rules::{self, Rule};

/// `networking.machineNetwork` when left out (libvirt's own default does not apply: bootstrap
/// in place runs on platform none).
pub const MACHINE_NETWORK: &str = "10.0.0.0/16";
/// `networking.serviceNetwork` when left out.
pub const SERVICE_NETWORK: &str = "172.30.0.0/16";
/// `networking.clusterNetwork` when left out: one entry, with a /23 per node.
pub const CLUSTER_NETWORK: &str = "10.128.0.0/14";
pub const HOST_PREFIX: u64 = 23;
/// `publish` when left out.
pub const PUBLISH: &str = "External";
/// A machine pool's `replicas` and `hyperthreading` when left out (`machinepools.go`).
pub const POOL_REPLICAS: u64 = 3;
pub const HYPERTHREADING: &str = "Enabled";
/// `additionalTrustBundlePolicy` when left out.
pub const TRUST_BUNDLE_POLICY: &str = "Proxyonly";

/// `networking.networkType` when left out: OVNKubernetes from the 4.12 installer, OpenShiftSDN
/// before (the rule `default-network-type-ovn` of [`release_rules`]). `release` is the cluster's;
/// unknown means the newest installer's default.
pub fn network_type(release: Option<&str>) -> &'static str {
    if release_rules::applies(Rule::DefaultNetworkTypeOvn, release) {
        "OVNKubernetes"
    } else {
        "OpenShiftSDN"
    }
}

/// The user's install-config (as JSON) with every default the installer fills in applied to the
/// fields it leaves out (absent, null, an empty string or an empty list, as Go's zero values
/// read). What the file says is kept as it is.
pub fn with_defaults(user: &Value, release: Option<&str>) -> Value {
    let mut c = user.clone();
    if !c.is_object() {
        return c;
    }
    networking(&mut c, release);
    set_if_empty(&mut c["publish"], json!(PUBLISH));
    control_plane(&mut c);
    compute(&mut c);
    set_if_empty(
        &mut c["additionalTrustBundlePolicy"],
        json!(TRUST_BUNDLE_POLICY),
    );
    c
}

/// Go's zero value: what `omitempty` leaves out and what the installer's `== ""` and
/// `len(...) == 0` tests take as "not given".
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn set_if_empty(slot: &mut Value, default: Value) {
    if is_empty(slot) {
        *slot = default;
    }
}

fn networking(c: &mut Value, release: Option<&str>) {
    if !c["networking"].is_object() {
        c["networking"] = json!({});
    }
    let n = &mut c["networking"];
    set_if_empty(
        &mut n["machineNetwork"],
        json!([{ "cidr": MACHINE_NETWORK }]),
    );
    set_if_empty(&mut n["networkType"], json!(network_type(release)));
    set_if_empty(&mut n["serviceNetwork"], json!([SERVICE_NETWORK]));
    set_if_empty(
        &mut n["clusterNetwork"],
        json!([{ "cidr": CLUSTER_NETWORK, "hostPrefix": HOST_PREFIX }]),
    );
}

fn pool_defaults(pool: &mut Value) {
    set_if_empty(&mut pool["replicas"], json!(POOL_REPLICAS));
    set_if_empty(&mut pool["hyperthreading"], json!(HYPERTHREADING));
}

/// The control plane pool is always named `master`, whatever the file says.
fn control_plane(c: &mut Value) {
    if !c["controlPlane"].is_object() {
        c["controlPlane"] = json!({});
    }
    let cp = &mut c["controlPlane"];
    cp["name"] = json!("master");
    pool_defaults(cp);
}

/// A `worker` pool is added when the file has none; every pool gets the pool defaults.
fn compute(c: &mut Value) {
    if !c["compute"].is_array() {
        c["compute"] = json!([]);
    }
    let Some(pools) = c["compute"].as_array_mut() else {
        return;
    };
    if !pools.iter().any(|p| p["name"] == "worker") {
        pools.push(json!({ "name": "worker" }));
    }
    pools
        .iter_mut()
        .filter(|p| p.is_object())
        .for_each(pool_defaults);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_file_gets_every_default() {
        let user = json!({"apiVersion": "v1", "baseDomain": "example.test",
            "metadata": {"name": "sno"}, "platform": {"none": {}}});
        let c = with_defaults(&user, Some("4.17.0"));
        assert_eq!(
            c["networking"],
            json!({"machineNetwork": [{"cidr": "10.0.0.0/16"}], "networkType": "OVNKubernetes",
                   "serviceNetwork": ["172.30.0.0/16"],
                   "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}]})
        );
        assert_eq!(c["publish"], "External");
        assert_eq!(
            c["controlPlane"],
            json!({"name": "master", "replicas": 3, "hyperthreading": "Enabled"})
        );
        assert_eq!(
            c["compute"],
            json!([{"name": "worker", "replicas": 3, "hyperthreading": "Enabled"}])
        );
        assert_eq!(c["additionalTrustBundlePolicy"], "Proxyonly");
        assert_eq!(c["platform"], json!({"none": {}}));
    }

    #[test]
    fn what_the_file_says_is_kept() {
        let user = json!({"networking": {"networkType": "OVNKubernetes",
                "serviceNetwork": ["fd02::/112"], "clusterNetwork": []},
            "controlPlane": {"name": "cp", "replicas": 1},
            "compute": [{"name": "worker", "replicas": 0}], "publish": "Internal"});
        let c = with_defaults(&user, Some("4.11.0"));
        assert_eq!(c["networking"]["networkType"], "OVNKubernetes");
        assert_eq!(c["networking"]["serviceNetwork"], json!(["fd02::/112"]));
        // An empty list is a list left out, as the installer's len() == 0 reads it.
        assert_eq!(
            c["networking"]["clusterNetwork"][0]["cidr"],
            "10.128.0.0/14"
        );
        assert_eq!(c["controlPlane"]["replicas"], 1);
        assert_eq!(c["controlPlane"]["name"], "master");
        assert_eq!(c["compute"].as_array().unwrap().len(), 1);
        assert_eq!(c["compute"][0]["replicas"], 0);
        assert_eq!(c["publish"], "Internal");
    }

    #[test]
    fn the_network_type_default_follows_the_release() {
        let nt = |v| with_defaults(&json!({}), v)["networking"]["networkType"].clone();
        assert_eq!(nt(Some("4.11.59")), "OpenShiftSDN");
        assert_eq!(nt(Some("4.12.0")), "OVNKubernetes");
        assert_eq!(nt(None), "OVNKubernetes");
        assert_eq!(nt(Some("nightly")), "OVNKubernetes");
    }

    #[test]
    fn other_pools_keep_their_names_and_get_a_worker_beside_them() {
        let c = with_defaults(&json!({"compute": [{"name": "arbiter"}]}), None);
        let names: Vec<&str> = c["compute"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["arbiter", "worker"]);
        assert_eq!(c["compute"][0]["replicas"], 3);
    }
}
