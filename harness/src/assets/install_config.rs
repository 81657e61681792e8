//! install-config.yaml from a scenario: the real schema, rendered from typed structs.

use serde::Serialize;

use crate::scenario::files::authorized_keys::AuthorizedKey;
use crate::scenario::model::{CapabilitiesSection, InstallSpec};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfig {
    pub api_version: String,
    pub base_domain: String,
    pub metadata: Metadata,
    pub control_plane: Pool,
    pub compute: Vec<Pool>,
    pub networking: Networking,
    pub platform: Platform,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_in_place: Option<BootstrapInPlace>,
    pub pull_secret: String,
    pub ssh_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle: Option<String>,
    /// `Proxyonly` or `Always`; left out, the installer's default (`Proxyonly`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle_policy: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fips: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

#[derive(Serialize)]
pub struct Metadata {
    pub name: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    pub name: String,
    pub replicas: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    pub network_type: String,
    pub machine_network: Vec<Cidr>,
    pub cluster_network: Vec<ClusterNetwork>,
    pub service_network: Vec<String>,
}

#[derive(Serialize)]
pub struct Cidr {
    pub cidr: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetwork {
    pub cidr: String,
    pub host_prefix: u32,
}

#[derive(Serialize)]
pub struct Platform {
    pub none: Empty,
}

#[derive(Serialize)]
pub struct Empty {}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapInPlace {
    pub installation_disk: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    pub baseline_capability_set: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_enabled_capabilities: Vec<String>,
}

/// install-config's `sshKey`: the run's own key, then the scenario's `[access]
/// authorized_keys`, one per line. The installer puts the whole text on user `core` in the
/// bootstrap-in-place Ignition and in the master MachineConfig, so every line reaches
/// authorized_keys on both systems.
pub fn ssh_key_text(run_key: &str, added: &[AuthorizedKey]) -> String {
    std::iter::once(run_key.trim())
        .chain(added.iter().map(|k| k.line.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The placeholder written instead of the pull secret in the run directory's copy.
pub const REDACTED: &str = "<redacted>";

impl InstallConfig {
    pub fn from_spec(
        spec: &InstallSpec,
        pull_secret: String,
        ssh_key: String,
        trust_bundle: Option<String>,
    ) -> InstallConfig {
        InstallConfig {
            api_version: "v1".into(),
            base_domain: spec.base_domain.clone(),
            metadata: Metadata {
                name: spec.cluster.clone(),
            },
            control_plane: Pool {
                name: "master".into(),
                replicas: spec.control_plane_replicas,
            },
            compute: vec![Pool {
                name: "worker".into(),
                replicas: 0,
            }],
            networking: Networking {
                network_type: spec.network_type.clone(),
                machine_network: spec
                    .machine_network
                    .iter()
                    .map(|c| Cidr { cidr: c.clone() })
                    .collect(),
                cluster_network: spec
                    .cluster_network
                    .iter()
                    .map(|c| ClusterNetwork {
                        cidr: c.cidr.clone(),
                        host_prefix: c.host_prefix,
                    })
                    .collect(),
                service_network: spec.service_network.clone(),
            },
            platform: Platform { none: Empty {} },
            bootstrap_in_place: spec.bootstrap_in_place.then(|| BootstrapInPlace {
                installation_disk: spec.installation_disk_value(),
            }),
            pull_secret,
            ssh_key,
            proxy: spec.proxy.as_ref().map(|p| Proxy {
                http_proxy: p.http_proxy.clone(),
                https_proxy: p.https_proxy.clone(),
                no_proxy: p.no_proxy.clone(),
            }),
            additional_trust_bundle: trust_bundle,
            additional_trust_bundle_policy: spec.trust_bundle_policy.map(|p| p.name()),
            fips: spec.fips,
            capabilities: spec
                .capabilities
                .as_ref()
                .map(|c: &CapabilitiesSection| Capabilities {
                    baseline_capability_set: c.baseline_capability_set.clone(),
                    additional_enabled_capabilities: c.additional_enabled_capabilities.clone(),
                }),
        }
    }

    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).expect("install-config serialises")
    }

    /// The same document with the pull secret replaced, for the run directory and logs.
    pub fn redacted_yaml(&self) -> String {
        serde_saphyr::to_string(&self.redacted_json()).expect("install-config serialises")
    }

    /// The document as JSON with the pull secret replaced: what the cluster's reported state is
    /// compared with.
    pub fn redacted_json(&self) -> serde_json::Value {
        let mut copy = serde_json::to_value(self).expect("serialisable");
        copy["pullSecret"] = serde_json::Value::String(REDACTED.into());
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_str;

    #[test]
    fn renders_the_real_schema_and_redacts_the_secret() {
        let s = parse_str(
            std::path::Path::new("s.toml"),
            "name = \"t\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n",
        )
        .unwrap();
        let ic = InstallConfig::from_spec(
            &s.install,
            "{\"auths\":{}}".into(),
            "ssh-ed25519 AAAA k".into(),
            None,
        );
        let yaml = ic.to_yaml();
        let v: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["controlPlane"]["replicas"], 1);
        assert_eq!(v["compute"][0]["replicas"], 0);
        assert_eq!(
            v["bootstrapInPlace"]["installationDisk"],
            "/dev/disk/by-id/virtio-sno-install"
        );
        assert_eq!(v["networking"]["clusterNetwork"][0]["hostPrefix"], 23);
        assert_eq!(v["pullSecret"], "{\"auths\":{}}");
        assert!(v.get("fips").is_none());
        let red = ic.redacted_yaml();
        assert!(!red.contains("auths"), "{red}");
        assert!(red.contains(REDACTED));
    }

    #[test]
    fn the_scenarios_keys_follow_the_runs_own_one_per_line_in_ssh_key() {
        let run_key = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY= sno-harness smoke\n";
        let added = |line: &str| AuthorizedKey {
            line: line.into(),
            fingerprint: String::new(),
            from: String::new(),
        };
        assert_eq!(ssh_key_text(run_key, &[]), run_key.trim());
        let text = ssh_key_text(
            run_key,
            &[
                added("ssh-ed25519 AAAAC3 me@laptop"),
                added("ssh-rsa AAAAB3"),
            ],
        );
        let s = parse_str(
            std::path::Path::new("s.toml"),
            "name = \"t\"\nprofile = \"fixture\"\n[[disks]]\nid = \"install\"\nsize = \"8GiB\"\n",
        )
        .unwrap();
        let yaml = InstallConfig::from_spec(&s.install, "{}".into(), text, None).to_yaml();
        let v: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        let lines: Vec<&str> = v["sshKey"].as_str().unwrap().lines().collect();
        assert_eq!(
            lines,
            [
                run_key.trim(),
                "ssh-ed25519 AAAAC3 me@laptop",
                "ssh-rsa AAAAB3"
            ],
            "{yaml}"
        );
    }
}
