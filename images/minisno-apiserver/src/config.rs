//! The apiserver's configuration file (`/etc/kubernetes/minisno/apiserver.json`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The whole configuration, as written by minisno's installer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub cluster_name: String,
    pub base_domain: String,
    /// `host:port` to listen on, e.g. `0.0.0.0:6443` (port 0 picks one).
    pub listen: String,
    /// PEM CA certificate: signs the serving certificate and is the only root for client certificates.
    pub ca_cert: PathBuf,
    /// PEM PKCS#8 (`PRIVATE KEY`) key of the CA.
    pub ca_key: PathBuf,
    #[serde(default)]
    pub extra_sans: Vec<String>,
    pub state_dir: PathBuf,
    /// The node's name. Unset (as minisno-install writes it): the hostname when the server
    /// starts, as the kubelet names its node (lowercased, `/proc/sys/kernel/hostname`).
    #[serde(default)]
    pub node_name: Option<String>,
    pub release: Release,
    #[serde(default = "Schedule::fast")]
    pub schedule: Schedule,
    /// Fault names (`api-never-ready`, `node-not-ready`, `operator-degraded:<name>`,
    /// `operator-unavailable:<name>`, `etcd-member-not-removed`, `network-type-drift`). Names this component does
    /// not know are ignored with a notice: they belong to other parts of minisno.
    #[serde(default)]
    pub faults: Vec<String>,
    /// The install-config as YAML, pull secret removed.
    #[serde(default)]
    pub install_config_yaml: String,
    /// How the simulated kubelet looks up `api-int.<cluster>.<domain>`: the node's own resolver
    /// (`"system"`, the default), or a hosts file (`{"hosts_file": "/path"}`, for tests).
    #[serde(default)]
    pub resolver: Resolver,
    /// Where the simulated pods' DNS forwards to, as CoreDNS does: the nameservers of the
    /// node's resolv.conf (`{"resolv_conf": "/etc/resolv.conf"}`, the default), or, for tests,
    /// given servers (`{"servers": ["127.0.0.1:5353"]}`, reachable whatever their address).
    #[serde(default)]
    pub cluster_dns: ClusterDns,
}

/// The upstream servers of the cluster's DNS (CoreDNS), which the operators' route checks use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterDns {
    /// The `nameserver` lines of this file, port 53; one on loopback is unreachable from a pod.
    ResolvConf(PathBuf),
    /// These servers, in this order.
    Servers(Vec<SocketAddr>),
}

impl Default for ClusterDns {
    fn default() -> Self {
        ClusterDns::ResolvConf(PathBuf::from("/etc/resolv.conf"))
    }
}

/// The simulated kubelet's name lookup. The node registers only once api-int resolves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolver {
    /// getaddrinfo, as the real kubelet's lookups go: /etc/hosts, then DNS if resolv.conf names a
    /// server.
    #[default]
    System,
    /// Only the entries of this hosts file.
    HostsFile(PathBuf),
}

/// The release the simulated cluster claims to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub version: String,
    pub image: String,
}

impl Release {
    /// `(major, minor)` of the version, `None` when it does not start `<major>.<minor>`.
    pub fn major_minor(&self) -> Option<(u32, u32)> {
        let mut parts = self.version.split(['.', '-']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    }

    /// The name under which the etcd operator of this release reports the removal of the
    /// bootstrap member: none before 4.13, misspelled `EtcdBoostrapMemberRemoved` from 4.13 to
    /// 4.15 (early 2023 to February 2024), `EtcdBootstrapMemberRemoved` since 4.16. A version
    /// that cannot be read is taken as a current one.
    pub fn etcd_removed_condition(&self) -> Option<&'static str> {
        match self.major_minor() {
            Some((4, minor)) if minor < 13 => None,
            Some((4, 13..=15)) => Some("EtcdBoostrapMemberRemoved"),
            _ => Some("EtcdBootstrapMemberRemoved"),
        }
    }

    /// Whether bootstrap-in-place creates configmap kube-system/bootstrap on this release: its
    /// post-reboot script does from 4.12 (openshift/installer PR #6521); before, nothing does.
    /// A version that cannot be read is taken as a current one.
    pub fn creates_bootstrap_configmap(&self) -> bool {
        self.major_minor().is_none_or(|r| r >= (4, 12))
    }

    /// `stable-<major>.<minor>`, the channel a new cluster of this release follows.
    pub fn channel(&self) -> String {
        match self.major_minor() {
            Some((major, minor)) => format!("stable-{major}.{minor}"),
            None => "stable".to_string(),
        }
    }
}

/// How long each milestone takes once what it waits for has happened. Only the API's start is
/// a time since the very first start; the rest follow their causes, as in a real install
/// (docs/bip-contract.md §7): the node registers when the API is up and api-int resolves on the
/// node; it is Ready `node_ready_delay_s` later; the etcd operator removes the bootstrap member
/// `etcd_bootstrap_removed_delay_s` after the node is Ready and the bootstrap configmap says
/// complete; the operators turn Available from `operators_available_delay_s` after the node is
/// Ready; the cluster version completes `cluster_version_completed_delay_s` after the member is
/// removed and every operator is Available; the operators stop progressing
/// `operators_settled_delay_s` after that.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub readyz_after_s: f64,
    pub node_ready_delay_s: f64,
    pub etcd_bootstrap_removed_delay_s: f64,
    pub operators_available_delay_s: f64,
    pub cluster_version_completed_delay_s: f64,
    pub operators_settled_delay_s: f64,
}

impl Schedule {
    /// For quick smoke runs.
    pub fn fast() -> Self {
        Schedule {
            readyz_after_s: 3.0,
            node_ready_delay_s: 2.0,
            etcd_bootstrap_removed_delay_s: 1.0,
            operators_available_delay_s: 2.0,
            cluster_version_completed_delay_s: 2.0,
            operators_settled_delay_s: 2.0,
        }
    }

    /// Realistic in shape, but minutes instead of the real tens of minutes.
    pub fn normal() -> Self {
        Schedule {
            readyz_after_s: 30.0,
            node_ready_delay_s: 60.0,
            etcd_bootstrap_removed_delay_s: 30.0,
            operators_available_delay_s: 150.0,
            cluster_version_completed_delay_s: 60.0,
            operators_settled_delay_s: 30.0,
        }
    }

    /// Every time multiplied by `factor` (tests use this to compress the fast schedule).
    pub fn scaled(self, factor: f64) -> Self {
        Schedule {
            readyz_after_s: self.readyz_after_s * factor,
            node_ready_delay_s: self.node_ready_delay_s * factor,
            etcd_bootstrap_removed_delay_s: self.etcd_bootstrap_removed_delay_s * factor,
            operators_available_delay_s: self.operators_available_delay_s * factor,
            cluster_version_completed_delay_s: self.cluster_version_completed_delay_s * factor,
            operators_settled_delay_s: self.operators_settled_delay_s * factor,
        }
    }
}

/// A fault this component knows how to inject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    ApiNeverReady,
    NodeNotReady,
    EtcdMemberNotRemoved,
    OperatorDegraded(String),
    OperatorUnavailable(String),
    /// The network operator deploys the other network type than the install-config asked for.
    NetworkTypeDrift,
}

impl Fault {
    /// `None` for names that belong to other components.
    pub fn parse(name: &str) -> Option<Fault> {
        match name {
            "api-never-ready" => Some(Fault::ApiNeverReady),
            "node-not-ready" => Some(Fault::NodeNotReady),
            "etcd-member-not-removed" => Some(Fault::EtcdMemberNotRemoved),
            "network-type-drift" => Some(Fault::NetworkTypeDrift),
            _ => {
                if let Some(op) = name.strip_prefix("operator-degraded:") {
                    (!op.is_empty()).then(|| Fault::OperatorDegraded(op.to_string()))
                } else if let Some(op) = name.strip_prefix("operator-unavailable:") {
                    (!op.is_empty()).then(|| Fault::OperatorUnavailable(op.to_string()))
                } else {
                    None
                }
            }
        }
    }
}

/// The parsed fault list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(pub Vec<Fault>);

impl Faults {
    /// Parses the known names and returns the unknown ones beside.
    pub fn parse(names: &[String]) -> (Faults, Vec<String>) {
        let mut known = Vec::new();
        let mut unknown = Vec::new();
        for name in names {
            match Fault::parse(name) {
                Some(f) => known.push(f),
                None => unknown.push(name.clone()),
            }
        }
        (Faults(known), unknown)
    }

    pub fn has(&self, fault: &Fault) -> bool {
        self.0.contains(fault)
    }

    pub fn operator_degraded(&self, op: &str) -> bool {
        self.0
            .iter()
            .any(|f| matches!(f, Fault::OperatorDegraded(o) if o == op))
    }

    pub fn operator_unavailable(&self, op: &str) -> bool {
        self.0
            .iter()
            .any(|f| matches!(f, Fault::OperatorUnavailable(o) if o == op))
    }

    /// Operators named by faults, in the order given, without repeats.
    pub fn operators(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in &self.0 {
            if let Fault::OperatorDegraded(o) | Fault::OperatorUnavailable(o) = f {
                if !out.contains(o) {
                    out.push(o.clone());
                }
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("install_config_yaml is not valid YAML: {0}")]
    InstallConfig(String),
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    pub fn api_host(&self) -> String {
        format!("api.{}.{}", self.cluster_name, self.base_domain)
    }

    pub fn api_int_host(&self) -> String {
        format!("api-int.{}.{}", self.cluster_name, self.base_domain)
    }

    /// The install-config parsed into JSON (`null` when empty).
    pub fn install_config(&self) -> Result<serde_json::Value, ConfigError> {
        if self.install_config_yaml.trim().is_empty() {
            return Ok(serde_json::Value::Null);
        }
        serde_saphyr::from_str(&self.install_config_yaml)
            .map_err(|e| ConfigError::InstallConfig(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse() {
        let (f, unknown) = Faults::parse(&[
            "operator-degraded:ingress".into(),
            "api-never-ready".into(),
            "boot-order:cdrom-first".into(),
            "operator-unavailable:ingress".into(),
        ]);
        assert!(f.operator_degraded("ingress"));
        assert!(f.operator_unavailable("ingress"));
        assert!(f.has(&Fault::ApiNeverReady));
        assert_eq!(unknown, vec!["boot-order:cdrom-first".to_string()]);
        assert_eq!(f.operators(), vec!["ingress".to_string()]);
    }

    #[test]
    fn example_config_parses() {
        let text = r#"{
          "cluster_name": "sno", "base_domain": "example.test",
          "listen": "0.0.0.0:6443",
          "ca_cert": "/etc/kubernetes/minisno/ca.crt", "ca_key": "/etc/kubernetes/minisno/ca.key",
          "extra_sans": [],
          "state_dir": "/var/lib/minisno-apiserver",
          "node_name": "minisno",
          "release": {"version": "4.17.0-minisno", "image": "quay.io/minisno/release:4.17.0-minisno"},
          "schedule": {"readyz_after_s": 3, "node_ready_delay_s": 2, "etcd_bootstrap_removed_delay_s": 1,
                       "operators_available_delay_s": 2, "cluster_version_completed_delay_s": 2, "operators_settled_delay_s": 2},
          "faults": ["operator-degraded:ingress"],
          "install_config_yaml": "apiVersion: v1\nmetadata:\n  name: sno\nnetworking:\n  networkType: OVNKubernetes\n"
        }"#;
        let c: Config = serde_json::from_str(text).unwrap();
        assert_eq!(c.schedule, Schedule::fast());
        assert_eq!(c.api_host(), "api.sno.example.test");
        let ic = c.install_config().unwrap();
        assert_eq!(ic["networking"]["networkType"], "OVNKubernetes");
        assert_eq!(c.resolver, Resolver::System);
        assert_eq!(c.node_name.as_deref(), Some("minisno"));
        assert_eq!(c.cluster_dns, ClusterDns::default());
        let with_hosts = text.replace(
            "\"faults\"",
            "\"resolver\": {\"hosts_file\": \"/tmp/hosts\"}, \"faults\"",
        );
        let c: Config = serde_json::from_str(&with_hosts).unwrap();
        assert_eq!(c.resolver, Resolver::HostsFile("/tmp/hosts".into()));
        let unnamed = text.replace("\"node_name\": \"minisno\",", "").replace(
            "\"faults\"",
            "\"cluster_dns\": {\"servers\": [\"127.0.0.1:5353\"]}, \"faults\"",
        );
        let c: Config = serde_json::from_str(&unnamed).unwrap();
        assert_eq!(c.node_name, None);
        assert_eq!(
            c.cluster_dns,
            ClusterDns::Servers(vec!["127.0.0.1:5353".parse().unwrap()])
        );
    }

    #[test]
    fn the_bootstrap_configmap_exists_from_4_12() {
        let r = |v: &str| Release {
            version: v.into(),
            image: String::new(),
        };
        assert!(!r("4.11.59").creates_bootstrap_configmap());
        assert!(!r("4.8.0").creates_bootstrap_configmap());
        assert!(r("4.12.0").creates_bootstrap_configmap());
        assert!(r("4.17.0-minisno").creates_bootstrap_configmap());
        assert!(r("nightly").creates_bootstrap_configmap());
    }

    #[test]
    fn the_etcd_condition_follows_the_release() {
        let r = |v: &str| Release {
            version: v.into(),
            image: String::new(),
        };
        assert_eq!(r("4.12.30").etcd_removed_condition(), None);
        assert_eq!(
            r("4.13.0").etcd_removed_condition(),
            Some("EtcdBoostrapMemberRemoved")
        );
        assert_eq!(
            r("4.14.3").etcd_removed_condition(),
            Some("EtcdBoostrapMemberRemoved")
        );
        assert_eq!(
            r("4.15.9").etcd_removed_condition(),
            Some("EtcdBoostrapMemberRemoved")
        );
        assert_eq!(
            r("4.16.0").etcd_removed_condition(),
            Some("EtcdBootstrapMemberRemoved")
        );
        assert_eq!(
            r("4.17.0-minisno").etcd_removed_condition(),
            Some("EtcdBootstrapMemberRemoved")
        );
        assert_eq!(
            r("weird").etcd_removed_condition(),
            Some("EtcdBootstrapMemberRemoved")
        );
        assert_eq!(r("4.14.3").channel(), "stable-4.14");
    }
}
