//! Does the cluster report the install-config it was installed with?
//!
//! An install can converge and still have ignored part of its install-config (a proxy that did
//! not reach the Proxy object, a dual-stack request that came up single-stack, a capability left
//! out). This compares what the harness asked for with what the cluster says about itself, in the
//! objects a real cluster keeps it in (docs/bip-contract.md §7):
//!
//! - configmap `kube-system/cluster-config-v1`, key `install-config`: the installer's stored copy
//!   (pull secret redacted, the installer's defaults filled in);
//! - `networks.config.openshift.io/cluster`: `status` is what the network operator deployed;
//! - `proxies.config.openshift.io/cluster` and configmap `openshift-config/user-ca-bundle`;
//! - `clusterversions/version`: the capability set and the enabled capabilities.
//!
//! What is asked is the install-config with the installer's defaults applied to the fields it
//! leaves out ([`super::install_config_defaults`]): a field left out asks for its default, and
//! the cluster is held to it. Only what that asks for is compared: whatever the cluster adds
//! beyond it (fields the file does not mention and the installer does not default) is no
//! difference.
//!
//! A pure function of the JSON, like [`super::judge`], so it is tested on objects written from
//! the openshift/api types.

use serde_json::Value;

use super::install_config_defaults::with_defaults;
use super::judge::Judgement;

/// What the cluster answered; `None` where the object does not exist (404).
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub cluster_config: Option<Value>,
    pub network: Option<Value>,
    pub proxy: Option<Value>,
    pub user_ca_bundle: Option<Value>,
    pub cluster_version: Option<Value>,
}

/// Compares the install-config (as JSON, the installer's field names), with the installer's
/// defaults of the cluster's `release` applied, with the cluster's reported state. Not ok lists
/// every difference, each naming the object and field.
pub fn install_config_applied(user: &Value, release: Option<&str>, seen: &Observed) -> Judgement {
    let asked = &with_defaults(user, release);
    let mut diffs = Vec::new();
    stored_copy(asked, seen, &mut diffs);
    network(asked, seen, &mut diffs);
    proxy(asked, seen, &mut diffs);
    trust_bundle(asked, seen, &mut diffs);
    capabilities(asked, seen, &mut diffs);
    if diffs.is_empty() {
        Judgement {
            ok: true,
            detail: summary(asked),
        }
    } else {
        Judgement {
            ok: false,
            detail: format!(
                "the cluster does not report the install-config: {}",
                diffs.join("; ")
            ),
        }
    }
}

/// One line of what was confirmed, for the event log.
fn summary(asked: &Value) -> String {
    let n = &asked["networking"];
    let mut parts = vec![
        format!("networkType {}", str_at(n, "networkType")),
        format!("clusterNetwork {}", cidrs(&n["clusterNetwork"]).join(",")),
    ];
    if asked["proxy"].is_object() {
        parts.push("proxy".into());
    }
    if asked["additionalTrustBundle"].is_string() {
        parts.push("additionalTrustBundle".into());
    }
    if asked["fips"].as_bool() == Some(true) {
        parts.push("fips".into());
    }
    if let Some(set) = asked["capabilities"]["baselineCapabilitySet"].as_str() {
        parts.push(format!("capabilities {set}"));
    }
    format!("install-config applied: {}", parts.join(", "))
}

fn str_at<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// The `cidr` of each entry (objects) or the entries themselves (strings), in order: the order
/// of a dual-stack list says which family is primary.
fn cidrs(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str().or_else(|| e["cidr"].as_str()))
        .map(str::to_string)
        .collect()
}

/// Values are shown as JSON, so an empty string or a list order is visible.
fn differ(diffs: &mut Vec<String>, what: &str, asked: impl Into<Value>, seen: impl Into<Value>) {
    let (a, s): (Value, Value) = (asked.into(), seen.into());
    diffs.push(format!("{what}: asked {a}, cluster reports {s}"));
}

/// A field of the stored install-config: its name for messages, and how to read it in the shape
/// both documents are compared in.
type StoredField = (&'static str, fn(&Value) -> Value);

fn stored_copy(asked: &Value, seen: &Observed, diffs: &mut Vec<String>) {
    const WHERE: &str = "configmap kube-system/cluster-config-v1";
    let Some(cm) = &seen.cluster_config else {
        diffs.push(format!("{WHERE} does not exist"));
        return;
    };
    let Some(text) = cm["data"]["install-config"].as_str() else {
        diffs.push(format!("{WHERE} has no key install-config"));
        return;
    };
    let stored: Value = match serde_saphyr::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            diffs.push(format!("{WHERE}: install-config is not YAML: {e}"));
            return;
        }
    };
    let fields: [StoredField; 13] = [
        ("metadata.name", |v| v["metadata"]["name"].clone()),
        ("publish", |v| v["publish"].clone()),
        ("controlPlane.replicas", |v| {
            v["controlPlane"]["replicas"].clone()
        }),
        ("controlPlane.hyperthreading", |v| {
            v["controlPlane"]["hyperthreading"].clone()
        }),
        ("baseDomain", |v| v["baseDomain"].clone()),
        ("networking.networkType", |v| {
            v["networking"]["networkType"].clone()
        }),
        ("networking.clusterNetwork", |v| {
            Value::from(cidrs(&v["networking"]["clusterNetwork"]))
        }),
        ("networking.serviceNetwork", |v| {
            Value::from(cidrs(&v["networking"]["serviceNetwork"]))
        }),
        ("networking.machineNetwork", |v| {
            Value::from(cidrs(&v["networking"]["machineNetwork"]))
        }),
        // The installer omits `fips: false`.
        ("fips", |v| {
            Value::Bool(v["fips"].as_bool().unwrap_or(false))
        }),
        ("bootstrapInPlace.installationDisk", |v| {
            v["bootstrapInPlace"]["installationDisk"].clone()
        }),
        ("platform", |v| match v["platform"].as_object() {
            Some(p) => Value::from(p.keys().cloned().collect::<Vec<_>>()),
            None => Value::Null,
        }),
        ("proxy", |v| {
            let p = &v["proxy"];
            if !p.is_object() {
                return Value::Null;
            }
            Value::from(
                ["httpProxy", "httpsProxy", "noProxy"]
                    .iter()
                    .map(|k| p[*k].as_str().unwrap_or("").to_string())
                    .collect::<Vec<_>>(),
            )
        }),
    ];
    for (name, get) in fields {
        let (a, s) = (get(asked), get(&stored));
        // A field that neither the file nor the installer's defaults give is not asked for.
        if !a.is_null() && a != s {
            differ(diffs, &format!("{WHERE} {name}"), a, s);
        }
    }
    compute_pools(asked, &stored, diffs);
}

/// Each compute pool asked for (with the defaults, at least `worker`), by name: its replicas
/// and hyperthreading as stored. Pools the cluster has beyond them are not compared.
fn compute_pools(asked: &Value, stored: &Value, diffs: &mut Vec<String>) {
    const WHERE: &str = "configmap kube-system/cluster-config-v1 compute";
    let pools = |v: &Value| v["compute"].as_array().cloned().unwrap_or_default();
    let stored_pools = pools(stored);
    for pool in pools(asked) {
        let name = pool["name"].as_str().unwrap_or_default();
        let found = stored_pools.iter().find(|p| p["name"] == pool["name"]);
        for key in ["replicas", "hyperthreading"] {
            let have = found.map_or(Value::Null, |p| p[key].clone());
            if !pool[key].is_null() && pool[key] != have {
                differ(
                    diffs,
                    &format!("{WHERE}[{name}].{key}"),
                    pool[key].clone(),
                    have,
                );
            }
        }
    }
}

fn network(asked: &Value, seen: &Observed, diffs: &mut Vec<String>) {
    const WHERE: &str = "networks.config.openshift.io/cluster status";
    let Some(net) = &seen.network else {
        diffs.push("networks.config.openshift.io/cluster does not exist".into());
        return;
    };
    let (n, st) = (&asked["networking"], &net["status"]);
    if str_at(n, "networkType") != str_at(st, "networkType") {
        differ(
            diffs,
            &format!("{WHERE}.networkType"),
            str_at(n, "networkType"),
            str_at(st, "networkType"),
        );
    }
    for key in ["clusterNetwork", "serviceNetwork"] {
        let (a, s) = (cidrs(&n[key]), cidrs(&st[key]));
        if a != s {
            differ(diffs, &format!("{WHERE}.{key}"), a, s);
        }
    }
}

fn proxy(asked: &Value, seen: &Observed, diffs: &mut Vec<String>) {
    const WHERE: &str = "proxies.config.openshift.io/cluster";
    // Neither a proxy nor a bundle asked for: the Proxy object is the cluster's own business.
    if !asked["proxy"].is_object() && !asked["additionalTrustBundle"].is_string() {
        return;
    }
    let Some(p) = &seen.proxy else {
        diffs.push(format!("{WHERE} does not exist"));
        return;
    };
    let want = &asked["proxy"];
    if want.is_object() {
        proxy_settings(want, p, diffs);
    }
    let want_ca = if trusts_bundle(asked) {
        "user-ca-bundle"
    } else {
        ""
    };
    let ca = str_at(&p["spec"]["trustedCA"], "name");
    if want_ca != ca {
        differ(diffs, &format!("{WHERE} spec.trustedCA.name"), want_ca, ca);
    }
}

/// The proxies asked for, in the Proxy's spec and in effect (status).
fn proxy_settings(want: &Value, p: &Value, diffs: &mut Vec<String>) {
    const WHERE: &str = "proxies.config.openshift.io/cluster";
    for key in ["httpProxy", "httpsProxy", "noProxy"] {
        let (a, s) = (str_at(want, key), str_at(&p["spec"], key));
        if a != s {
            differ(diffs, &format!("{WHERE} spec.{key}"), a, s);
        }
    }
    // status is the proxy actually in effect; its noProxy is the spec's plus what the network
    // operator adds, so only the proxies themselves are compared.
    for key in ["httpProxy", "httpsProxy"] {
        let (a, s) = (str_at(want, key), str_at(&p["status"], key));
        if a != s {
            differ(diffs, &format!("{WHERE} status.{key}"), a, s);
        }
    }
}

/// Whether the Proxy trusts the additional bundle (`spec.trustedCA`): only with a proxy, or
/// with `additionalTrustBundlePolicy: Always` (docs/bip-contract.md §8). Without either the
/// bundle still reaches configmap openshift-config/user-ca-bundle.
fn trusts_bundle(asked: &Value) -> bool {
    let has_proxy = ["httpProxy", "httpsProxy"]
        .iter()
        .any(|k| !str_at(&asked["proxy"], k).is_empty());
    asked["additionalTrustBundle"].is_string()
        && (has_proxy || asked["additionalTrustBundlePolicy"].as_str() == Some("Always"))
}

/// PEM blocks, whitespace-normalised, so a bundle is found inside a larger one.
fn pem_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("-----BEGIN ") {
            cur = Some(String::new());
        }
        if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
        if line.starts_with("-----END ") {
            out.extend(cur.take());
        }
    }
    out
}

fn trust_bundle(asked: &Value, seen: &Observed, diffs: &mut Vec<String>) {
    const WHERE: &str = "configmap openshift-config/user-ca-bundle";
    let Some(bundle) = asked["additionalTrustBundle"].as_str() else {
        return;
    };
    let Some(cm) = &seen.user_ca_bundle else {
        diffs.push(format!("{WHERE} does not exist"));
        return;
    };
    let have = pem_blocks(cm["data"]["ca-bundle.crt"].as_str().unwrap_or(""));
    let missing = pem_blocks(bundle)
        .into_iter()
        .filter(|b| !have.contains(b))
        .count();
    if missing > 0 {
        diffs.push(format!(
            "{WHERE} ca-bundle.crt lacks {missing} of the additionalTrustBundle's certificates"
        ));
    }
}

fn capabilities(asked: &Value, seen: &Observed, diffs: &mut Vec<String>) {
    const WHERE: &str = "clusterversions/version";
    let want = &asked["capabilities"];
    let Some(set) = want["baselineCapabilitySet"].as_str() else {
        return;
    };
    let Some(cv) = &seen.cluster_version else {
        diffs.push(format!("{WHERE} does not exist"));
        return;
    };
    let have_set = str_at(&cv["spec"]["capabilities"], "baselineCapabilitySet");
    if set != have_set {
        differ(
            diffs,
            &format!("{WHERE} spec.capabilities.baselineCapabilitySet"),
            set,
            have_set,
        );
    }
    let enabled: Vec<&str> = cv["status"]["capabilities"]["enabledCapabilities"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let missing: Vec<&str> = want["additionalEnabledCapabilities"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|c| !enabled.contains(c))
        .collect();
    if !missing.is_empty() {
        diffs.push(format!(
            "{WHERE} status.capabilities.enabledCapabilities lacks {}",
            missing.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The release the clusters below run.
    const RELEASE: Option<&str> = Some("4.17.0");

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBcert\nAAAA\n-----END CERTIFICATE-----\n";

    fn asked() -> Value {
        json!({
            "apiVersion": "v1",
            "baseDomain": "example.test",
            "metadata": {"name": "sno"},
            "networking": {
                "networkType": "OVNKubernetes",
                "machineNetwork": [{"cidr": "fd00:10::/64"}, {"cidr": "10.0.2.0/24"}],
                "clusterNetwork": [
                    {"cidr": "fd01::/48", "hostPrefix": 64},
                    {"cidr": "10.128.0.0/14", "hostPrefix": 23}
                ],
                "serviceNetwork": ["fd02::/112", "172.30.0.0/16"]
            },
            "bootstrapInPlace": {"installationDisk": "/dev/disk/by-id/virtio-install"},
            "pullSecret": "<redacted>",
            "proxy": {"httpProxy": "http://proxy.example.test:3128", "noProxy": ".example.test"},
            "additionalTrustBundle": CA,
            "fips": true,
            "capabilities": {
                "baselineCapabilitySet": "None",
                "additionalEnabledCapabilities": ["marketplace"]
            }
        })
    }

    /// The objects a cluster installed with `asked` reports, shaped like a real cluster's:
    /// the stored install-config has the installer's defaults filled in and no pull secret.
    fn cluster_for(a: &Value) -> Observed {
        let mut stored = with_defaults(a, RELEASE);
        stored["pullSecret"] = json!("");
        let n = &stored["networking"];
        Observed {
            cluster_config: Some(stored_copy_of(&stored)),
            network: Some(json!({
                "spec": {"networkType": n["networkType"], "clusterNetwork": n["clusterNetwork"],
                         "serviceNetwork": n["serviceNetwork"]},
                "status": {"networkType": n["networkType"], "clusterNetwork": n["clusterNetwork"],
                           "serviceNetwork": n["serviceNetwork"], "clusterNetworkMTU": 1400}
            })),
            proxy: Some(json!({
                "spec": {"httpProxy": a["proxy"]["httpProxy"], "noProxy": a["proxy"]["noProxy"],
                         "trustedCA": {"name": "user-ca-bundle"}},
                "status": {"httpProxy": a["proxy"]["httpProxy"],
                           "noProxy": ".cluster.local,.example.test,.svc,127.0.0.1,localhost"}
            })),
            user_ca_bundle: Some(json!({
                "data": {"ca-bundle.crt": format!("# from the install-config\n{CA}")}
            })),
            cluster_version: Some(json!({
                "spec": {"capabilities": {"baselineCapabilitySet": "None",
                         "additionalEnabledCapabilities": ["marketplace"]}},
                "status": {"capabilities": {
                    "enabledCapabilities": ["marketplace"],
                    "knownCapabilities": ["baremetal", "marketplace", "openshift-samples"]
                }}
            })),
        }
    }

    fn stored_copy_of(stored: &Value) -> Value {
        json!({"data": {"install-config": serde_saphyr::to_string(stored).unwrap()}})
    }

    /// The smallest install-config bootstrap-in-place takes: everything else is defaulted.
    fn minimal() -> Value {
        json!({
            "apiVersion": "v1",
            "baseDomain": "example.test",
            "metadata": {"name": "sno"},
            "controlPlane": {"replicas": 1},
            "compute": [{"name": "worker", "replicas": 0}],
            "platform": {"none": {}},
            "bootstrapInPlace": {"installationDisk": "/dev/vda"},
            "pullSecret": "<redacted>",
        })
    }

    /// The cluster `minimal()` makes, but with `change` applied to the stored copy.
    fn minimal_cluster_storing(change: impl FnOnce(&mut Value)) -> Observed {
        let mut seen = cluster_for(&minimal());
        let mut stored = with_defaults(&minimal(), RELEASE);
        change(&mut stored);
        seen.cluster_config = Some(stored_copy_of(&stored));
        seen
    }

    #[test]
    fn a_minimal_install_config_matches_the_stored_copy_with_defaults_filled_in() {
        let seen = minimal_cluster_storing(|stored| {
            // What the cluster adds that the file does not mention is no difference.
            stored["credentialsMode"] = json!("Passthrough");
            stored["featureSet"] = json!("");
            stored["compute"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "edge", "replicas": 2}));
        });
        let stored: Value = serde_saphyr::from_str(
            seen.cluster_config.as_ref().unwrap()["data"]["install-config"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            stored["networking"]["serviceNetwork"],
            json!(["172.30.0.0/16"])
        );
        assert_eq!(stored["publish"], "External");
        let j = install_config_applied(&minimal(), RELEASE, &seen);
        assert!(j.ok, "{}", j.detail);
        assert_eq!(
            j.detail,
            "install-config applied: networkType OVNKubernetes, clusterNetwork 10.128.0.0/14"
        );
    }

    #[test]
    fn a_network_type_the_file_gives_is_compared_with_the_stored_one_naming_both() {
        let mut user = minimal();
        user["networking"] = json!({"networkType": "OVNKubernetes"});
        let seen = minimal_cluster_storing(|stored| {
            stored["networking"]["networkType"] = json!("OpenShiftSDN");
        });
        let j = install_config_applied(&user, RELEASE, &seen);
        assert!(!j.ok);
        assert_eq!(
            j.detail,
            "the cluster does not report the install-config: configmap kube-system/cluster-config-v1 networking.networkType: asked \"OVNKubernetes\", cluster reports \"OpenShiftSDN\""
        );
    }

    #[test]
    fn a_default_the_file_left_out_is_asked_for() {
        let seen = minimal_cluster_storing(|stored| {
            stored["networking"]["serviceNetwork"] = json!(["172.31.0.0/16"]);
        });
        let j = install_config_applied(&minimal(), RELEASE, &seen);
        assert!(!j.ok);
        assert_eq!(
            j.detail,
            "the cluster does not report the install-config: configmap kube-system/cluster-config-v1 networking.serviceNetwork: asked [\"172.30.0.0/16\"], cluster reports [\"172.31.0.0/16\"]"
        );
        let seen = minimal_cluster_storing(|stored| {
            stored["publish"] = json!("Internal");
            stored["compute"][0]["hyperthreading"] = json!("Disabled");
        });
        let j = install_config_applied(&minimal(), RELEASE, &seen);
        assert!(
            j.detail
                .contains("publish: asked \"External\", cluster reports \"Internal\""),
            "{}",
            j.detail
        );
        assert!(
            j.detail.contains(
                "compute[worker].hyperthreading: asked \"Enabled\", cluster reports \"Disabled\""
            ),
            "{}",
            j.detail
        );
    }

    #[test]
    fn the_network_type_left_out_asks_for_the_default_of_the_clusters_release() {
        // A 4.11 installer filled in OpenShiftSDN; the cluster deployed OVNKubernetes.
        let seen = cluster_for(&minimal());
        let j = install_config_applied(&minimal(), Some("4.11.0"), &seen);
        assert!(!j.ok);
        assert!(
            j.detail
                .contains("networkType: asked \"OpenShiftSDN\", cluster reports \"OVNKubernetes\""),
            "{}",
            j.detail
        );
        let j = install_config_applied(&minimal(), Some("4.12.0"), &seen);
        assert!(j.ok, "{}", j.detail);
    }

    #[test]
    fn a_cluster_that_applied_everything_passes() {
        let j = install_config_applied(&asked(), RELEASE, &cluster_for(&asked()));
        assert!(j.ok, "{}", j.detail);
        assert_eq!(
            j.detail,
            "install-config applied: networkType OVNKubernetes, clusterNetwork fd01::/48,10.128.0.0/14, proxy, additionalTrustBundle, fips, capabilities None"
        );
    }

    #[test]
    fn a_minimal_install_config_without_proxy_bundle_or_capabilities_passes() {
        let mut a = asked();
        let o = a.as_object_mut().unwrap();
        for k in ["proxy", "additionalTrustBundle", "fips", "capabilities"] {
            o.remove(k);
        }
        let mut seen = cluster_for(&a);
        seen.proxy = Some(json!({"spec": {"trustedCA": {"name": ""}}, "status": {}}));
        seen.user_ca_bundle = None;
        let j = install_config_applied(&a, RELEASE, &seen);
        assert!(j.ok, "{}", j.detail);
    }

    #[test]
    fn a_different_network_type_is_named_with_both_values() {
        let mut seen = cluster_for(&asked());
        seen.network.as_mut().unwrap()["status"]["networkType"] = json!("OpenShiftSDN");
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(!j.ok);
        assert_eq!(
            j.detail,
            "the cluster does not report the install-config: networks.config.openshift.io/cluster status.networkType: asked \"OVNKubernetes\", cluster reports \"OpenShiftSDN\""
        );
    }

    #[test]
    fn a_dual_stack_cluster_with_the_families_swapped_fails() {
        let mut seen = cluster_for(&asked());
        let st = &mut seen.network.as_mut().unwrap()["status"];
        st["serviceNetwork"] = json!(["172.30.0.0/16", "fd02::/112"]);
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(!j.ok);
        assert!(j.detail.contains("status.serviceNetwork: asked [\"fd02::/112\",\"172.30.0.0/16\"], cluster reports [\"172.30.0.0/16\",\"fd02::/112\"]"), "{}", j.detail);
    }

    #[test]
    fn a_proxy_that_did_not_reach_the_proxy_object_fails() {
        let mut seen = cluster_for(&asked());
        seen.proxy = Some(json!({"spec": {"trustedCA": {"name": "user-ca-bundle"}}, "status": {}}));
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(!j.ok);
        assert!(
            j.detail.contains(
                "spec.httpProxy: asked \"http://proxy.example.test:3128\", cluster reports \"\""
            ),
            "{}",
            j.detail
        );
        assert!(j.detail.contains("status.httpProxy"), "{}", j.detail);
        assert!(j.detail.contains("spec.noProxy"), "{}", j.detail);
    }

    #[test]
    fn a_missing_or_incomplete_trust_bundle_fails() {
        let mut seen = cluster_for(&asked());
        seen.user_ca_bundle = None;
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(
            j.detail.contains("user-ca-bundle does not exist"),
            "{}",
            j.detail
        );
        seen.user_ca_bundle = Some(
            json!({"data": {"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nother\n-----END CERTIFICATE-----\n"}}),
        );
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(!j.ok);
        assert!(
            j.detail
                .contains("lacks 1 of the additionalTrustBundle's certificates"),
            "{}",
            j.detail
        );
    }

    #[test]
    fn fips_and_the_installation_disk_are_checked_in_the_stored_copy() {
        let mut stored = asked();
        stored["fips"] = json!(false);
        stored["bootstrapInPlace"]["installationDisk"] = json!("/dev/sda");
        let mut seen = cluster_for(&asked());
        seen.cluster_config = Some(json!({
            "data": {"install-config": serde_saphyr::to_string(&stored).unwrap()}
        }));
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(!j.ok);
        assert!(
            j.detail
                .contains("cluster-config-v1 fips: asked true, cluster reports false"),
            "{}",
            j.detail
        );
        assert!(j.detail.contains("installationDisk"), "{}", j.detail);
    }

    #[test]
    fn a_capability_left_out_fails() {
        let mut seen = cluster_for(&asked());
        seen.cluster_version.as_mut().unwrap()["status"]["capabilities"]["enabledCapabilities"] =
            json!([]);
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(!j.ok);
        assert!(
            j.detail
                .ends_with("status.capabilities.enabledCapabilities lacks marketplace"),
            "{}",
            j.detail
        );
    }

    #[test]
    fn absent_objects_and_a_broken_stored_copy_are_reported_not_panicked_on() {
        let j = install_config_applied(&asked(), RELEASE, &Observed::default());
        assert!(!j.ok);
        for what in [
            "cluster-config-v1 does not exist",
            "networks.config.openshift.io/cluster does not exist",
            "proxies.config.openshift.io/cluster does not exist",
            "clusterversions/version does not exist",
        ] {
            assert!(j.detail.contains(what), "{what}: {}", j.detail);
        }
        let mut seen = cluster_for(&asked());
        seen.cluster_config = Some(json!({"data": {"install-config": "a: [unclosed"}}));
        let j = install_config_applied(&asked(), RELEASE, &seen);
        assert!(
            j.detail.contains("install-config is not YAML"),
            "{}",
            j.detail
        );
    }

    #[test]
    fn a_bundle_without_a_proxy_is_trusted_by_the_proxy_only_with_policy_always() {
        let mut a = asked();
        a.as_object_mut().unwrap().remove("proxy");
        let mut seen = cluster_for(&a);
        // The default policy (Proxyonly), no proxy: trustedCA stays empty, as the real
        // installer leaves it; the bundle is still in user-ca-bundle.
        seen.proxy = Some(json!({"spec": {"trustedCA": {"name": ""}}, "status": {}}));
        let j = install_config_applied(&a, RELEASE, &seen);
        assert!(j.ok, "{}", j.detail);
        // A cluster that trusts it anyway reports something else than was asked.
        seen.proxy = Some(json!({"spec": {"trustedCA": {"name": "user-ca-bundle"}}, "status": {}}));
        let j = install_config_applied(&a, RELEASE, &seen);
        assert!(!j.ok);
        assert!(
            j.detail
                .contains("spec.trustedCA.name: asked \"\", cluster reports \"user-ca-bundle\""),
            "{}",
            j.detail
        );
        // Always: trusted without a proxy.
        a["additionalTrustBundlePolicy"] = json!("Always");
        let j = install_config_applied(&a, RELEASE, &seen);
        assert!(j.ok, "{}", j.detail);
    }
}
