//! The scenario file as written: its top table, and the sections that are neither the VM's,
//! the install's nor the network's (`[boot]`, `[badness]`, `[checks]`, `[fixture]`, `[openshift]`,
//! `[expect]`, `[timeouts]`, `[access]`). Unknown keys are rejected.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use super::install::InstallSection;
use super::network::NetworkSection;
use super::syntax::{choice, entries, option_choice, spanned_choice};
use super::vm::{DiskSection, VmSection};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: Spanned<String>,
    #[serde(deserialize_with = "spanned_choice")]
    pub profile: Spanned<Profile>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub vm: VmSection,
    #[serde(default, deserialize_with = "disk_entries")]
    pub disks: Vec<Spanned<DiskSection>>,
    #[serde(default)]
    pub install: InstallSection,
    /// `[network]`: None leaves the node's network as the live system sets it up (DHCP).
    pub network: Option<Spanned<NetworkSection>>,
    #[serde(default)]
    pub boot: BootSection,
    #[serde(default, deserialize_with = "duration_texts")]
    pub timeouts: BTreeMap<Spanned<String>, Spanned<TimeoutValue>>,
    pub fixture: Option<Spanned<FixtureSection>>,
    pub openshift: Option<Spanned<OpenshiftSection>>,
    pub expect: Option<Spanned<ExpectSection>>,
    #[serde(default)]
    pub badness: BadnessSection,
    #[serde(default)]
    pub checks: ChecksSection,
    #[serde(default)]
    pub access: AccessSection,
}

fn disk_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spanned<DiskSection>>, D::Error> {
    entries(d, "disks")
}

fn duration_texts<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<Spanned<String>, Spanned<TimeoutValue>>, D::Error> {
    BTreeMap::<Spanned<String>, Spanned<TimeoutValue>>::deserialize(d)
}

/// `[boot]`: how the live system boots.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootSection {
    #[serde(default = "default_boot_source", deserialize_with = "spanned_choice")]
    pub source: Spanned<BootSource>,
}

impl Default for BootSection {
    fn default() -> Self {
        BootSection {
            source: default_boot_source(),
        }
    }
}

fn default_boot_source() -> Spanned<BootSource> {
    Spanned::new(0..0, BootSource::LiveIso)
}

/// Where the live system's root filesystem comes from (`[boot] source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BootSource {
    /// The full live ISO, which carries the root filesystem.
    #[default]
    LiveIso,
    /// The minimal ISO that `coreos-installer iso extract minimal-iso` makes of the full one:
    /// the live system fetches its root filesystem from the harness over HTTP
    /// (`coreos.live.rootfs_url=`).
    MinimalIso,
    /// A network boot: the machine's iPXE (QEMU's NIC ROM, on SeaBIOS and OVMF) gets a script
    /// over the user network's TFTP and loads the kernel, the initramfs and the Ignition (as a
    /// second initramfs) from the harness over HTTP; the live system then fetches its root
    /// filesystem as the minimal ISO's does. `coreos-installer iso extract pxe` makes the
    /// files of the full ISO. No CD-ROM; the install disk is first in the boot order.
    Pxe,
}

impl BootSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BootSource::LiveIso => "live-iso",
            BootSource::MinimalIso => "minimal-iso",
            BootSource::Pxe => "pxe",
        }
    }

    /// Whether the guest fetches its root filesystem from the harness.
    pub fn fetches_rootfs(self) -> bool {
        self != BootSource::LiveIso
    }

    /// Whether the machine boots from the network (no CD-ROM).
    pub fn is_pxe(self) -> bool {
        self == BootSource::Pxe
    }
}

/// `[access]`: who may log in to the node besides the run itself.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSection {
    /// Public keys for user `core` on the live and the installed system, after the run's own:
    /// each a public key line or the path of a `.pub` file (scenario/files/authorized_keys.rs).
    #[serde(default)]
    pub authorized_keys: Vec<Spanned<String>>,
}

/// `[badness]`: lines of the guest's logs that look like trouble but are expected in this
/// scenario (flow/badness.rs): they become warnings in result.json instead of failing the run.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadnessSection {
    /// Regular expressions (Rust `regex` syntax) matched against the whole line.
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    /// Whether a crash (OOM kill, segfault, Go panic, core dump) outside the bootstrap units
    /// fails the run (`fatal`, the fixture profile's default) or is a warning (`warning`, the
    /// openshift profile's).
    #[serde(default, deserialize_with = "option_choice")]
    pub process_crashes: Option<CrashSeverity>,
    /// Whether a kernel `WARNING: CPU:` fails the run (`fatal`) or is a warning (`warning`, the
    /// default on both profiles: the kernel carries on after one, and neither `openshift-install
    /// wait-for` nor the CVO looks at the kernel's log).
    #[serde(default, deserialize_with = "option_choice")]
    pub kernel_warnings: Option<CrashSeverity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrashSeverity {
    Fatal,
    Warning,
}

/// `[checks]`: how the checks after the pivot judge this scenario's cluster.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecksSection {
    #[serde(default, deserialize_with = "choice")]
    pub etcd_bootstrap_member_removed: EtcdCheck,
    #[serde(default, deserialize_with = "choice")]
    pub operators: OperatorsRule,
}

/// `[checks] operators`: what cluster-ready asks of the ClusterOperators. `installer` (the
/// default) is exactly `openshift-install wait-for install-complete`'s rule
/// (cmd/openshift-install/create.go, waitForInstallComplete: ClusterVersion Available, not
/// Failing, not Progressing, then every operator Progressing=False for more than 30 s); it
/// does not look at the operators' Available or Degraded, so those are reported as warnings.
/// `healthy` also fails the phase while an operator is unavailable or degraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperatorsRule {
    #[default]
    Installer,
    Healthy,
}

impl OperatorsRule {
    /// As the scenario, `check --operators`, result.json and the reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            OperatorsRule::Installer => "installer",
            OperatorsRule::Healthy => "healthy",
        }
    }
}

/// `[checks] etcd_bootstrap_member_removed`: whether bootstrap-complete waits for etcd's
/// `EtcdBootstrapMemberRemoved`. `auto` (the default) follows the cluster's release, as the
/// installer of that release does (docs/bip-contract.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EtcdCheck {
    #[default]
    Auto,
    Required,
    Skipped,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSection {
    #[serde(default)]
    pub faults: Vec<Spanned<String>>,
    #[serde(default = "default_schedule")]
    pub schedule: String,
    /// The release minisno reports (`4.14.3`), with that release's etcd condition: its
    /// spelling, or none before 4.13 (docs/bip-contract.md §7). Default: minisno's own.
    pub version: Option<Spanned<String>>,
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
    /// The live ISO to boot instead of the one the installer's stream metadata names: a path
    /// (relative to the scenario) or an http(s) URL.
    pub iso: Option<Spanned<String>>,
    /// The ISO's SHA-256 (64 hex digits); required with a URL.
    pub iso_sha256: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    pub verdict: String,
    pub failed_phase: Option<String>,
    pub reason_contains: Option<String>,
    /// A warning must contain this: a badness line that did not fail the run (`[badness]
    /// allow`, or a warning by its kind), or an operator the `installer` rule reported as
    /// unavailable or degraded (result.json's `operator_warnings`).
    #[serde(default)]
    pub warning_contains: Option<String>,
}

impl ExpectSection {
    /// The expectation in one line, as `plan` and `list` show it: `fail at bootkube: "timed
    /// out"`, `pass, a warning containing "(tail)"`.
    pub fn summary(&self) -> String {
        use std::fmt::Write as _;
        let mut s = self.verdict.clone();
        if let Some(p) = &self.failed_phase {
            let _ = write!(s, " at {p}");
        }
        if let Some(r) = &self.reason_contains {
            let _ = write!(s, ": {r:?}");
        }
        if let Some(w) = &self.warning_contains {
            let _ = write!(s, ", a warning containing {w:?}");
        }
        s
    }
}

/// The `[timeouts]` key of the disk-write no-progress detector.
pub const DISK_WRITE_STALL_KEY: &str = "disk-write-stall";

/// The `[timeouts]` key of a limit on bootkube.service's restarts (a count, not a duration).
pub const BOOTKUBE_RESTARTS_KEY: &str = "bootkube-restarts";

/// A `[timeouts]` value: a duration (`"20m"`), or a count for `bootkube-restarts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutValue {
    Text(String),
    Count(i64),
}

impl<'de> Deserialize<'de> for TimeoutValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TimeoutValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as \"90s\", \"20m\" or \"1h30m\" (bootkube-restarts: a whole number)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Text(s.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Count(n))
            }
        }
        d.deserialize_any(V)
    }
}

impl std::fmt::Display for TimeoutValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeoutValue::Text(t) => write!(f, "{t:?}"),
            TimeoutValue::Count(n) => write!(f, "{n}"),
        }
    }
}

/// Its default: a write stalled this long is stuck, not slow, even on slow hardware.
pub const DEFAULT_DISK_WRITE_STALL: Duration = Duration::from_secs(120);

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
