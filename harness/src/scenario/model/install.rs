//! `[install]` as written (the install-config's values, the installation disk, the pull
//! secret, the install mode) and the validated install.

use std::path::PathBuf;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use super::syntax::{choice, option_choice, spanned_choice};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallSection {
    #[serde(default = "default_cluster")]
    pub cluster: String,
    #[serde(default = "default_base_domain")]
    pub base_domain: String,
    pub installation_disk: Option<Spanned<InstallationDiskSpec>>,
    #[serde(default = "default_network_type")]
    pub network_type: String,
    #[serde(default = "default_machine_network")]
    pub machine_network: Vec<String>,
    #[serde(default = "default_cluster_network")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    #[serde(default = "default_service_network")]
    pub service_network: Vec<String>,
    /// `controlPlane.replicas`; anything but 1 is rejected by the installer (a negative test).
    #[serde(default = "one")]
    pub control_plane_replicas: u32,
    /// Leave out `bootstrapInPlace` (a negative test).
    #[serde(default = "yes")]
    pub bootstrap_in_place: bool,
    pub pull_secret: Option<Spanned<SecretSource>>,
    pub proxy: Option<ProxySection>,
    /// A file with PEM certificates for `additionalTrustBundle`.
    pub additional_trust_bundle: Option<Spanned<PathBuf>>,
    /// `additionalTrustBundlePolicy`; left out, the installer's default (`Proxyonly`).
    #[serde(default, deserialize_with = "option_choice")]
    pub trust_bundle_policy: Option<TrustBundlePolicy>,
    #[serde(default)]
    pub fips: bool,
    /// Run the installer with `OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION` set: it then
    /// accepts `fips: true` on a host without FIPS (docs/bip-contract.md §3).
    #[serde(default)]
    pub skip_hostcrypt_validation: bool,
    pub capabilities: Option<CapabilitiesSection>,
    #[serde(default = "default_install_mode", deserialize_with = "spanned_choice")]
    pub mode: Spanned<InstallMode>,
    pub assisted: Option<Spanned<AssistedSection>>,
}

fn default_install_mode() -> Spanned<InstallMode> {
    Spanned::new(0..0, InstallMode::InstallToDisk)
}

impl Default for InstallSection {
    fn default() -> Self {
        InstallSection {
            cluster: default_cluster(),
            base_domain: default_base_domain(),
            installation_disk: None,
            network_type: default_network_type(),
            machine_network: default_machine_network(),
            cluster_network: default_cluster_network(),
            service_network: default_service_network(),
            control_plane_replicas: 1,
            bootstrap_in_place: true,
            pull_secret: None,
            proxy: None,
            additional_trust_bundle: None,
            trust_bundle_policy: None,
            fips: false,
            skip_hostcrypt_validation: false,
            capabilities: None,
            mode: default_install_mode(),
            assisted: None,
        }
    }
}

fn default_cluster() -> String {
    "sno".into()
}
fn default_base_domain() -> String {
    "example.test".into()
}
fn default_network_type() -> String {
    "OVNKubernetes".into()
}
fn default_machine_network() -> Vec<String> {
    // QEMU user networking's subnet: the node's IP is 10.0.2.15.
    vec!["10.0.2.0/24".into()]
}
fn default_cluster_network() -> Vec<ClusterNetworkEntry> {
    vec![ClusterNetworkEntry {
        cidr: "10.128.0.0/14".into(),
        host_prefix: 23,
    }]
}
fn default_service_network() -> Vec<String> {
    vec!["172.30.0.0/16".into()]
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// Who writes the OS to the installation disk (`[install] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum InstallMode {
    /// The live system's own install-to-disk.service, as the installer's Ignition has it.
    #[default]
    InstallToDisk,
    /// The assisted installer's way: install-to-disk.service is masked, and once bootkube
    /// has written `/opt/openshift/master.ign` the harness runs `coreos-installer install`
    /// over SSH with its own arguments, collects the live system's logs and reboots it.
    Assisted,
}

impl InstallMode {
    pub fn as_str(self) -> &'static str {
        match self {
            InstallMode::InstallToDisk => "install-to-disk",
            InstallMode::Assisted => "assisted",
        }
    }
}

/// `[install.assisted]`: the arguments the harness gives its own `coreos-installer install`
/// (besides the installation disk and `-i /opt/openshift/master.ign`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistedSection {
    /// Each one an `--append-karg`.
    #[serde(default)]
    pub append_kargs: Vec<String>,
    /// `--copy-network`: the live system's NetworkManager profiles go to the installed one.
    #[serde(default)]
    pub copy_network: bool,
    /// An Ignition config (spec 3.x) the harness merges into master.ign before the install,
    /// as the agent merges the host's config from the assisted service. Relative to the
    /// scenario file as written; resolved once validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_ignition: Option<PathBuf>,
}

/// How the scenario names the installation disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallationDiskSpec {
    /// A disk of the scenario, named as the guest sees it.
    Ref { by: DiskNaming, disk: String },
    /// Pasted into install-config as is (also how wrong disks are tested).
    Literal(String),
}

const INSTALLATION_DISK_USAGE: &str = "a device path such as \"/dev/vda\", or { by = \"id\" | \"name\" | \"path\", disk = \"<a [[disks]] id>\" }";

// By hand rather than `#[serde(untagged)]`, whose only error is "data did not match any
// variant", which tells the user neither which part is wrong nor what would be valid.
impl<'de> Deserialize<'de> for InstallationDiskSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct DiskRef {
            #[serde(deserialize_with = "choice")]
            by: DiskNaming,
            disk: String,
        }

        struct Spec;
        impl<'de> Visitor<'de> for Spec {
            type Value = InstallationDiskSpec;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(INSTALLATION_DISK_USAGE)
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(InstallationDiskSpec::Literal(s.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let r = DiskRef::deserialize(de::value::MapAccessDeserializer::new(map)).map_err(
                    |e| {
                        let e = e.to_string();
                        de::Error::custom(format!(
                            "installation_disk: {}; use {INSTALLATION_DISK_USAGE}",
                            e.trim().replace('\n', " ")
                        ))
                    },
                )?;
                Ok(InstallationDiskSpec::Ref {
                    by: r.by,
                    disk: r.disk,
                })
            }
        }
        d.deserialize_any(Spec)
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DiskNaming {
    /// `/dev/vda`, `/dev/sda`, `/dev/nvme0n1`.
    Name,
    /// `/dev/disk/by-id/...` from the disk's serial.
    Id,
    /// `/dev/disk/by-path/...` from its PCI address.
    Path,
}

/// `additionalTrustBundlePolicy`: when the cluster's Proxy trusts the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrustBundlePolicy {
    /// Only with a proxy (the installer's default).
    Proxyonly,
    /// Always.
    Always,
}

impl TrustBundlePolicy {
    pub fn name(self) -> &'static str {
        match self {
            TrustBundlePolicy::Proxyonly => "Proxyonly",
            TrustBundlePolicy::Always => "Always",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterNetworkEntry {
    pub cidr: String,
    #[serde(rename = "host_prefix", alias = "hostPrefix")]
    pub host_prefix: u32,
}

/// Where a secret comes from; secrets never sit in scenario files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    File(PathBuf),
    Env(String),
}

// By hand: as a serde enum, `{ file = "a", env = "B" }` fails with "wanted exactly 1 element,
// more than 1 element", which says nothing of what to write.
impl<'de> Deserialize<'de> for SecretSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Either {
            file: Option<PathBuf>,
            env: Option<String>,
        }
        const USAGE: &str = "use { file = \"PATH\" } or { env = \"VARIABLE\" }";
        let e = Either::deserialize(d)
            .map_err(|e| de::Error::custom(format!("{}; {USAGE}", e.to_string().trim())))?;
        match (e.file, e.env) {
            (Some(f), None) => Ok(SecretSource::File(f)),
            (None, Some(v)) => Ok(SecretSource::Env(v)),
            (Some(_), Some(_)) => Err(de::Error::custom(format!(
                "a secret comes from a file or a variable, not both: {USAGE}"
            ))),
            (None, None) => Err(de::Error::custom(format!("no source: {USAGE}"))),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProxySection {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesSection {
    pub baseline_capability_set: String,
    #[serde(default)]
    pub additional_enabled_capabilities: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InstallSpec {
    pub cluster: String,
    pub base_domain: String,
    /// The value pasted into `bootstrapInPlace.installationDisk`.
    pub installation_disk: String,
    /// The scenario disk it names, when it names one (where disk writes are measured).
    pub install_disk_id: Option<String>,
    /// The kernel arguments the install appends for a multipath installation disk
    /// (`hw::multipath::DAY1_KARGS`): empty for any other disk, and under the fault that
    /// withholds them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub multipath_kargs: Vec<String>,
    pub network_type: String,
    pub machine_network: Vec<String>,
    pub cluster_network: Vec<ClusterNetworkEntry>,
    pub service_network: Vec<String>,
    pub control_plane_replicas: u32,
    pub bootstrap_in_place: bool,
    #[serde(skip)]
    pub pull_secret: Option<SecretSource>,
    pub proxy: Option<ProxySection>,
    pub additional_trust_bundle: Option<PathBuf>,
    pub trust_bundle_policy: Option<TrustBundlePolicy>,
    pub fips: bool,
    pub skip_hostcrypt_validation: bool,
    pub capabilities: Option<CapabilitiesSection>,
    /// `[install] mode`.
    pub mode: InstallMode,
    /// `[install.assisted]` of an assisted install (its defaults when the section is absent).
    pub assisted: AssistedSection,
}

impl InstallSpec {
    /// `bootstrapInPlace.installationDisk` as install-config.yaml gets it: the disk, and for
    /// install-to-disk the multipath kernel arguments after it, each an `--append-karg`.
    /// bootstrap-in-place has no key for kernel arguments; install-to-disk.sh pastes this value
    /// unquoted into `coreos-installer install`'s command line (docs/bip-contract.md §3), which
    /// makes it the one way the installer's own install passes them. An assisted install
    /// passes them as the agent's own arguments instead (`assisted.append_kargs`).
    pub fn installation_disk_value(&self) -> String {
        if self.mode != InstallMode::InstallToDisk || self.multipath_kargs.is_empty() {
            return self.installation_disk.clone();
        }
        let mut v = self.installation_disk.clone();
        for k in &self.multipath_kargs {
            v.push_str(" --append-karg ");
            v.push_str(k);
        }
        v
    }
}
