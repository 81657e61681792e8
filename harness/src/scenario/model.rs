//! The scenario file as written (serde types, unknown keys rejected) and the validated
//! `Scenario` the runner uses.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::flow::phase::Phase;
use crate::vm::{AccelChoice, Bus, Firmware, Sector};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// minisno, the fixture appliance.
    Fixture,
    /// Real OpenShift: `openshift-install` and the RHCOS live ISO.
    Openshift,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Fixture => "fixture",
            Profile::Openshift => "openshift",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BootOrder {
    /// Install disk first, CD-ROM second: the empty disk falls through to the ISO, and after
    /// the install the disk wins.
    #[default]
    DiskFirst,
    /// CD-ROM first: after the install the live ISO boots again (fault F-BOOT-1).
    CdromFirst,
}

// ---- the file, as written ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: Spanned<String>,
    pub profile: Profile,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub vm: VmSection,
    #[serde(default)]
    pub disks: Vec<Spanned<DiskSection>>,
    #[serde(default)]
    pub install: InstallSection,
    #[serde(default)]
    pub timeouts: BTreeMap<Spanned<String>, Spanned<String>>,
    pub fixture: Option<Spanned<FixtureSection>>,
    pub openshift: Option<Spanned<OpenshiftSection>>,
    pub expect: Option<ExpectSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSection {
    #[serde(default = "default_vcpus")]
    pub vcpus: Spanned<u32>,
    #[serde(default = "default_memory")]
    pub memory: Spanned<String>,
    #[serde(default = "default_firmware")]
    pub firmware: Spanned<Firmware>,
    #[serde(default)]
    pub accel: AccelChoice,
    #[serde(default)]
    pub boot_order: BootOrder,
}

fn default_vcpus() -> Spanned<u32> {
    Spanned::new(0..0, 2)
}
fn default_memory() -> Spanned<String> {
    Spanned::new(0..0, "3GiB".into())
}
fn default_firmware() -> Spanned<Firmware> {
    Spanned::new(0..0, Firmware::Bios)
}

impl Default for VmSection {
    fn default() -> Self {
        VmSection {
            vcpus: default_vcpus(),
            memory: default_memory(),
            firmware: default_firmware(),
            accel: AccelChoice::Auto,
            boot_order: BootOrder::DiskFirst,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSection {
    pub id: String,
    pub size: Spanned<String>,
    #[serde(default = "default_bus")]
    pub bus: Bus,
    #[serde(default = "default_sector")]
    pub sector: Sector,
    pub serial: Option<String>,
}

fn default_bus() -> Bus {
    Bus::Virtio
}
fn default_sector() -> Sector {
    Sector::S512
}

/// How the scenario names the installation disk.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum InstallationDiskSpec {
    /// A disk of the scenario, named as the guest sees it.
    Ref { by: DiskNaming, disk: String },
    /// Pasted into install-config as is (also how wrong disks are tested).
    Literal(String),
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
    pub additional_trust_bundle: Option<PathBuf>,
    #[serde(default)]
    pub fips: bool,
    pub capabilities: Option<CapabilitiesSection>,
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
            fips: false,
            capabilities: None,
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

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterNetworkEntry {
    pub cidr: String,
    #[serde(rename = "host_prefix", alias = "hostPrefix")]
    pub host_prefix: u32,
}

/// Where a secret comes from; secrets never sit in scenario files.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum SecretSource {
    File(PathBuf),
    Env(String),
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSection {
    #[serde(default)]
    pub faults: Vec<Spanned<String>>,
    #[serde(default = "default_schedule")]
    pub schedule: String,
}

fn default_schedule() -> String {
    "fast".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenshiftSection {
    /// `openshift-install` to use; default: the one on PATH.
    pub installer: Option<PathBuf>,
    /// `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE` for the installer.
    pub release_image: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    pub verdict: String,
    pub failed_phase: Option<String>,
    pub reason_contains: Option<String>,
}

// ---- the validated scenario ----------------------------------------------------------------

#[derive(Debug, Clone, Serialize)]
pub struct Disk {
    pub id: String,
    pub size_bytes: u64,
    pub bus: Bus,
    pub sector: Sector,
    pub serial: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VmConfig {
    pub vcpus: u32,
    pub memory_mib: u64,
    pub firmware: Firmware,
    pub accel: AccelChoice,
    pub boot_order: BootOrder,
}

#[derive(Debug, Clone, Serialize)]
pub struct InstallSpec {
    pub cluster: String,
    pub base_domain: String,
    /// The value pasted into `bootstrapInPlace.installationDisk`.
    pub installation_disk: String,
    /// The scenario disk it names, when it names one (where disk writes are measured).
    pub install_disk_id: Option<String>,
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
    pub fips: bool,
    pub capabilities: Option<CapabilitiesSection>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FixtureSpec {
    pub faults: Vec<String>,
    pub schedule: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenshiftSpec {
    pub installer: Option<PathBuf>,
    pub release_image: Option<String>,
}

/// A scenario that passed validation: everything the runner needs, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    pub name: String,
    pub path: PathBuf,
    pub profile: Profile,
    pub description: String,
    pub vm: VmConfig,
    pub disks: Vec<Disk>,
    pub install: InstallSpec,
    /// Per-phase overrides of the profile's default timeouts (before scaling).
    pub timeouts: BTreeMap<Phase, Duration>,
    /// `[timeouts] disk-write-stall`: no write to the install disk for this long while
    /// coreos-installer runs fails the run (default 2 minutes; scaled like the timeouts).
    pub disk_write_stall: Option<Duration>,
    pub fixture: Option<FixtureSpec>,
    pub openshift: Option<OpenshiftSpec>,
    pub expect: Option<ExpectSection>,
}

/// The `[timeouts]` key of the disk-write no-progress detector.
pub const DISK_WRITE_STALL_KEY: &str = "disk-write-stall";

/// Its default: a write stalled this long is stuck, not slow, even on slow hardware.
pub const DEFAULT_DISK_WRITE_STALL: Duration = Duration::from_secs(120);
