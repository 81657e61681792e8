//! `install-config.yaml`: the real schema's subset that single-node bootstrap-in-place uses,
//! parsed with serde-saphyr. Unknown keys are allowed (the real tool warns about them; see
//! [`unknown_top_level_keys`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// YAML for files other tools read: plain or quoted scalars only (no folded `>` blocks, which
/// would otherwise hold long base64 values and SSH keys).
pub fn to_yaml<T: Serialize>(value: &T) -> Result<String, String> {
    let options = serde_saphyr::ser_options! {
        prefer_block_scalars: false,
    };
    serde_saphyr::to_string_with_options(value, options).map_err(|e| e.to_string())
}

/// The file name in the asset directory.
pub const FILE: &str = "install-config.yaml";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_domain: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: Metadata,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<MachinePool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<Vec<MachinePool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<Networking>,
    /// One key per platform; for bootstrap-in-place only `none: {}`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub platform: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_in_place: Option<BootstrapInPlace>,
    /// JSON text. Never print it; [`InstallConfig::redacted`] drops it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle: Option<String>,
    /// `Proxyonly` (the default) or `Always`: whether the cluster's proxy config trusts the
    /// bundle even without a proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fips: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// `External` (the default) or `Internal`: kept so that the stored copy says what was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
}

/// An explicit `null` (e.g. `metadata:` with nothing under it) reads as the default, as Go's
/// YAML decoding does.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The real tool records here that the FIPS host check was skipped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachinePool {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Omitted means 3, as in the real tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyperthreading: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<BTreeMap<String, Value>>,
}

impl MachinePool {
    /// The replica count with the real tool's default (3) applied.
    pub fn effective_replicas(&self) -> u32 {
        self.replicas.unwrap_or(DEFAULT_REPLICAS)
    }
}

/// The real tool's default replica count of a machine pool.
pub const DEFAULT_REPLICAS: u32 = 3;
/// The real tool's default `additionalTrustBundlePolicy`.
pub const DEFAULT_TRUST_BUNDLE_POLICY: &str = "Proxyonly";
/// The real tool's default `publish`.
pub const DEFAULT_PUBLISH: &str = "External";
/// The real tool's default `hyperthreading` of a machine pool.
pub const DEFAULT_HYPERTHREADING: &str = "Enabled";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<MachineNetworkEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_network: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineNetworkEntry {
    #[serde(default)]
    pub cidr: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetworkEntry {
    #[serde(default)]
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_prefix: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapInPlace {
    #[serde(default)]
    pub installation_disk: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_capability_set: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_enabled_capabilities: Vec<String>,
}

/// The top-level keys the schema knows.
pub const KNOWN_TOP_LEVEL_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "baseDomain",
    "metadata",
    "controlPlane",
    "compute",
    "networking",
    "platform",
    "bootstrapInPlace",
    "pullSecret",
    "sshKey",
    "proxy",
    "additionalTrustBundle",
    "additionalTrustBundlePolicy",
    "fips",
    "capabilities",
    "publish",
    "imageContentSources",
    "imageDigestSources",
    "cpuPartitioningMode",
    "featureSet",
    "featureGates",
    "credentialsMode",
];

/// A parse failure: the message with its position in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
    pub line: Option<u64>,
    pub column: Option<u64>,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{FILE}: line {l}, column {c}: {}", self.message),
            (Some(l), None) => write!(f, "{FILE}: line {l}: {}", self.message),
            _ => write!(f, "{FILE}: {}", self.message),
        }
    }
}

fn parse_error(e: serde_saphyr::Error) -> ParseError {
    let location = e.location();
    // Without snippets: a snippet would echo file lines, which may hold the pull secret.
    let rendered = e.render_with_options(serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
    });
    let message = strip_location_suffix(rendered.trim());
    ParseError {
        message,
        line: location.map(|l| l.line()).filter(|l| *l > 0),
        column: location.map(|l| l.column()).filter(|c| *c > 0),
    }
}

/// serde-saphyr's plain rendering ends with ` at line L, column C`; the position is reported
/// separately, so drop it.
fn strip_location_suffix(s: &str) -> String {
    match s.rfind(" at line ") {
        Some(i) if s[i..].contains("column") => s[..i].to_string(),
        _ => s.to_string(),
    }
}

/// Parses the file's text. YAML syntax and type errors carry their line and column.
pub fn parse(text: &str) -> Result<InstallConfig, ParseError> {
    serde_saphyr::from_str::<InstallConfig>(text).map_err(parse_error)
}

/// The top-level keys of the document that the schema does not know (the real tool warns).
pub fn unknown_top_level_keys(text: &str) -> Vec<String> {
    match serde_saphyr::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(text) {
        Ok(map) => map
            .into_keys()
            .filter(|k| !KNOWN_TOP_LEVEL_KEYS.contains(&k.as_str()))
            .collect(),
        Err(_) => Vec::new(),
    }
}

impl InstallConfig {
    /// The config with the real tool's defaults filled in, as it validates it and as the
    /// cluster reports it in configmap kube-system/cluster-config-v1 (openshift/installer
    /// pkg/types/defaults/installconfig.go and machinepools.go): controlPlane `master`/3,
    /// compute `worker`/3, each pool's hyperthreading `Enabled`, networking OVNKubernetes with
    /// the default networks, publish `External`, trust-bundle policy `Proxyonly`.
    pub fn with_defaults(&self) -> InstallConfig {
        let mut c = self.clone();
        c.additional_trust_bundle_policy
            .get_or_insert_with(|| DEFAULT_TRUST_BUNDLE_POLICY.into());
        c.publish.get_or_insert_with(|| DEFAULT_PUBLISH.into());
        let cp = c.control_plane.get_or_insert_with(MachinePool::default);
        cp.name = "master".into();
        cp.replicas.get_or_insert(DEFAULT_REPLICAS);
        cp.hyperthreading
            .get_or_insert_with(|| DEFAULT_HYPERTHREADING.into());
        let compute = c.compute.get_or_insert_with(|| {
            vec![MachinePool {
                name: "worker".into(),
                ..MachinePool::default()
            }]
        });
        for pool in compute.iter_mut() {
            if pool.name.is_empty() {
                pool.name = "worker".into();
            }
            pool.replicas.get_or_insert(DEFAULT_REPLICAS);
            pool.hyperthreading
                .get_or_insert_with(|| DEFAULT_HYPERTHREADING.into());
        }
        let n = c.networking.get_or_insert_with(Networking::default);
        n.network_type.get_or_insert_with(|| "OVNKubernetes".into());
        if n.machine_network.is_empty() {
            n.machine_network.push(MachineNetworkEntry {
                cidr: "10.0.0.0/16".into(),
            });
        }
        if n.cluster_network.is_empty() {
            n.cluster_network.push(ClusterNetworkEntry {
                cidr: "10.128.0.0/14".into(),
                host_prefix: Some(23),
            });
        }
        if n.service_network.is_empty() {
            n.service_network.push("172.30.0.0/16".into());
        }
        c
    }

    /// The config without its pull secret, for anything that is stored or shown.
    pub fn redacted(&self) -> InstallConfig {
        InstallConfig {
            pull_secret: None,
            ..self.clone()
        }
    }

    /// YAML of [`InstallConfig::redacted`].
    pub fn redacted_yaml(&self) -> Result<String, String> {
        to_yaml(&self.redacted())
    }

    pub fn control_plane_replicas(&self) -> u32 {
        self.control_plane
            .as_ref()
            .map_or(DEFAULT_REPLICAS, MachinePool::effective_replicas)
    }

    /// Whether the cluster's Proxy config names the user's trust bundle
    /// (`spec.trustedCA.name: user-ca-bundle`): only with a bundle, and then only when a proxy
    /// is configured or the policy is `Always`.
    pub fn proxy_trusts_bundle(&self) -> bool {
        let has_bundle = self
            .additional_trust_bundle
            .as_deref()
            .is_some_and(|b| !b.is_empty());
        let always = self.additional_trust_bundle_policy.as_deref() == Some("Always");
        has_bundle && (always || self.proxy.is_some())
    }

    /// The first network the real tool could not decode, with its error (it reads networks as
    /// `net.IPNet` while it unmarshals the file, so a bad one fails the parse, not validation).
    pub fn network_decode_error(&self) -> Option<String> {
        let n = self.networking.as_ref()?;
        let machine = n.machine_network.iter().map(|m| m.cidr.as_str());
        let cluster = n.cluster_network.iter().map(|c| c.cidr.as_str());
        let service = n.service_network.iter().map(String::as_str);
        machine
            .chain(cluster)
            .chain(service)
            .find_map(|c| crate::cidr::Cidr::parse(c).err())
            .map(|e| {
                format!(
                    "error unmarshaling JSON: while decoding JSON: failed to Parse cidr string to net.IPNet: {e}"
                )
            })
    }
}

/// The real tool's warning for the first unknown key (it reports only the first one), and the
/// info line that follows it.
pub fn unknown_field_messages(key: &str) -> [String; 2] {
    [
        format!(
            "failed to parse first occurrence of unknown field: failed to unmarshal {FILE}: error unmarshaling JSON: while decoding JSON: json: unknown field \"{key}\""
        ),
        "Attempting to unmarshal while ignoring unknown keys because strict unmarshaling failed"
            .to_string(),
    ]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub const VALID: &str = r#"apiVersion: v1
baseDomain: example.test
metadata:
  name: sno
controlPlane:
  name: master
  replicas: 1
  hyperthreading: Enabled
  architecture: amd64
compute:
- name: worker
  replicas: 0
networking:
  networkType: OVNKubernetes
  machineNetwork:
  - cidr: 192.168.126.0/24
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
platform:
  none: {}
bootstrapInPlace:
  installationDisk: /dev/vda
pullSecret: '{"auths":{"quay.io":{"auth":"c2VjcmV0LXRva2Vu"}}}'
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host
"#;

    #[test]
    fn parses_the_documented_shape() {
        let c = parse(VALID).unwrap();
        assert_eq!(c.api_version.as_deref(), Some("v1"));
        assert_eq!(c.metadata.name, "sno");
        assert_eq!(c.base_domain, "example.test");
        assert_eq!(c.control_plane_replicas(), 1);
        assert_eq!(c.compute.as_ref().unwrap()[0].replicas, Some(0));
        let n = c.networking.as_ref().unwrap();
        assert_eq!(n.cluster_network[0].host_prefix, Some(23));
        assert_eq!(n.service_network, vec!["172.30.0.0/16".to_string()]);
        assert!(c.platform.contains_key("none"));
        assert_eq!(
            c.bootstrap_in_place.as_ref().unwrap().installation_disk,
            "/dev/vda"
        );
        assert!(c.pull_secret.as_deref().unwrap().contains("auths"));
    }

    #[test]
    fn an_ssh_key_of_several_lines_is_read_whole() {
        let text = VALID.replace(
            "sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host",
            "sshKey: |-\n  ecdsa-sha2-nistp256 AAAAE2 run\n  ssh-ed25519 AAAAC3 me@laptop",
        );
        let c = parse(&text).unwrap();
        assert_eq!(
            c.ssh_key.as_deref(),
            Some("ecdsa-sha2-nistp256 AAAAE2 run\nssh-ed25519 AAAAC3 me@laptop")
        );
    }

    #[test]
    fn omitted_replicas_mean_three() {
        let c = parse(&VALID.replace("  replicas: 1\n", "")).unwrap();
        assert_eq!(c.control_plane_replicas(), 3);
        let c = parse(&VALID.replace("compute:\n- name: worker\n  replicas: 0\n", "")).unwrap();
        assert_eq!(c.with_defaults().compute.unwrap()[0].replicas, Some(3));
    }

    #[test]
    fn the_proxy_trusts_the_bundle_only_with_a_proxy_or_policy_always() {
        let bundle = "additionalTrustBundle: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\n";
        let proxy = "proxy:\n  httpProxy: http://proxy.example.test:3128\n";
        let trusts = |extra: &str| {
            parse(&format!("{VALID}{extra}"))
                .unwrap()
                .with_defaults()
                .proxy_trusts_bundle()
        };
        assert!(!trusts(""));
        assert!(!trusts(bundle));
        assert!(!trusts(&format!(
            "{bundle}additionalTrustBundlePolicy: Proxyonly\n"
        )));
        assert!(trusts(&format!(
            "{bundle}additionalTrustBundlePolicy: Always\n"
        )));
        assert!(trusts(&format!("{bundle}{proxy}")));
        assert!(!trusts(proxy));
        assert!(!trusts("additionalTrustBundlePolicy: Always\n"));
    }

    #[test]
    fn networks_are_decoded_with_the_file() {
        let c = parse(&VALID.replace("172.30.0.0/16", "172.30.0.0")).unwrap();
        assert_eq!(
            c.network_decode_error().unwrap(),
            "error unmarshaling JSON: while decoding JSON: failed to Parse cidr string to net.IPNet: invalid CIDR address: 172.30.0.0"
        );
        assert_eq!(parse(VALID).unwrap().network_decode_error(), None);
    }

    #[test]
    fn syntax_error_has_line() {
        let bad = VALID.replace("  name: sno\n", "  name: sno\n   bogus: [\n");
        let e = parse(&bad).unwrap_err();
        assert!(e.line.is_some(), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("install-config.yaml: line 5, column"),
            "{e}"
        );
    }

    #[test]
    fn type_error_has_line_and_column() {
        let bad = VALID.replace("  replicas: 1\n", "  replicas: many\n");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, Some(7), "{e:?}");
        assert!(e.column.is_some(), "{e:?}");
        assert_eq!(
            e.to_string(),
            "install-config.yaml: line 7, column 13: invalid u32"
        );
        let e = parse(&VALID.replace("metadata:\n", "metadata: 5\n")).unwrap_err();
        assert_eq!(e.line, Some(3), "{e:?}");
    }

    #[test]
    fn unknown_keys_are_reported_not_rejected() {
        let text = format!("{VALID}surprise: 1\n");
        assert!(parse(&text).is_ok());
        assert_eq!(unknown_top_level_keys(&text), vec!["surprise".to_string()]);
        assert!(unknown_top_level_keys(VALID).is_empty());
    }

    #[test]
    fn redacted_yaml_has_no_pull_secret_and_round_trips() {
        let c = parse(VALID).unwrap();
        let y = c.with_defaults().redacted_yaml().unwrap();
        assert!(!y.contains("pullSecret"), "{y}");
        assert!(!y.contains("c2VjcmV0LXRva2Vu"), "{y}");
        assert!(!y.contains(">-") && !y.contains("|-"), "{y}");
        assert!(y.contains("sshKey: ssh-ed25519 AAAA"), "{y}");
        let back = parse(&y).unwrap();
        assert_eq!(back, c.with_defaults().redacted());
    }

    #[test]
    fn the_stored_copy_of_a_minimal_file_has_the_installers_defaults() {
        let minimal = "apiVersion: v1\nbaseDomain: example.test\nmetadata:\n  name: sno\nplatform:\n  none: {}\n";
        let y = parse(minimal)
            .unwrap()
            .with_defaults()
            .redacted_yaml()
            .unwrap();
        let stored: Value = serde_saphyr::from_str(&y).unwrap();
        assert_eq!(stored["publish"], "External");
        assert_eq!(
            stored["controlPlane"],
            serde_json::json!({"name": "master", "replicas": 3, "hyperthreading": "Enabled"})
        );
        assert_eq!(
            stored["compute"],
            serde_json::json!([{"name": "worker", "replicas": 3, "hyperthreading": "Enabled"}])
        );
        assert_eq!(
            stored["networking"],
            serde_json::json!({"networkType": "OVNKubernetes",
                "machineNetwork": [{"cidr": "10.0.0.0/16"}],
                "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                "serviceNetwork": ["172.30.0.0/16"]})
        );
        assert_eq!(stored["additionalTrustBundlePolicy"], "Proxyonly");
        // What the file says stays.
        let internal = parse(&format!("{minimal}publish: Internal\n")).unwrap();
        assert_eq!(
            internal.with_defaults().publish.as_deref(),
            Some("Internal")
        );
    }

    #[test]
    fn defaults_fill_networking() {
        let c = InstallConfig::default().with_defaults();
        let n = c.networking.unwrap();
        assert_eq!(n.network_type.as_deref(), Some("OVNKubernetes"));
        assert_eq!(n.service_network, vec!["172.30.0.0/16".to_string()]);
        assert_eq!(c.control_plane.unwrap().replicas, Some(3));
        assert_eq!(
            c.additional_trust_bundle_policy.as_deref(),
            Some("Proxyonly")
        );
        let given = parse(&format!("{VALID}additionalTrustBundlePolicy: Always\n")).unwrap();
        assert_eq!(
            given
                .with_defaults()
                .additional_trust_bundle_policy
                .as_deref(),
            Some("Always")
        );
    }
}
