//! The validated `Scenario` the runner uses: everything it needs, resolved.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::file::{BootSource, EtcdCheck, ExpectSection, OperatorsRule, Profile};
use super::install::InstallSpec;
use super::network::NetworkSpec;
use super::vm::VmConfig;
use super::Disk;
use crate::flow::phase::Phase;
use crate::scenario::files::authorized_keys::AuthorizedKey;

#[derive(Debug, Clone, Serialize)]
pub struct FixtureSpec {
    pub faults: Vec<String>,
    pub schedule: String,
    pub version: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenshiftSpec {
    pub installer: Option<PathBuf>,
    pub release_image: Option<String>,
    /// `[openshift] iso`: None boots the ISO of the installer's stream metadata.
    pub iso: Option<OwnIso>,
}

/// A live ISO the scenario names, and its digest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub enum OwnIso {
    /// A file on this host, resolved; without a digest it is hashed at the run.
    File {
        path: PathBuf,
        sha256: Option<String>,
    },
    /// An http(s) URL, downloaded into the ISO cache.
    Url { url: String, sha256: String },
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
    /// `[network]`, when the scenario has the table: the node's NetworkManager keyfiles
    /// (`assets::keyfiles`). Left out of the JSON without it, as before the table existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSpec>,
    /// `[boot] source`.
    pub boot_source: BootSource,
    /// Per-phase overrides of the profile's default timeouts (before scaling).
    pub timeouts: BTreeMap<Phase, Duration>,
    /// `[timeouts] disk-write-stall`: no write to the install disk for this long while
    /// coreos-installer runs fails the run (default 2 minutes; scaled like the timeouts).
    pub disk_write_stall: Option<Duration>,
    /// `[timeouts] bootkube-restarts`: bootkube fails once its unit restarted this often
    /// (default: no limit, as the real unit; the phase's deadline ends it).
    pub bootkube_max_restarts: Option<u32>,
    pub fixture: Option<FixtureSpec>,
    pub openshift: Option<OpenshiftSpec>,
    pub expect: Option<ExpectSection>,
    /// `[checks] etcd_bootstrap_member_removed`.
    pub etcd_check: EtcdCheck,
    /// `[checks] operators`: the rule cluster-ready judges the ClusterOperators by.
    pub operators_rule: OperatorsRule,
    /// `[badness] process_crashes`, when the scenario sets it.
    pub process_crashes_fatal: Option<bool>,
    /// The `--set KEY=VALUE` overrides applied to the file, as given, in order
    /// (scenario/overrides.rs); empty for the file as it is.
    pub overrides: Vec<String>,
    /// `[badness] kernel_warnings = "fatal"`: a kernel `WARNING: CPU:` fails the run.
    pub kernel_warnings_fatal: bool,
    /// `[badness] allow`: patterns of log lines that are warnings, not failures.
    pub badness_allow: Vec<String>,
    /// `[access] authorized_keys`, read and checked: the keys `core` gets on both systems after
    /// the run's own (install-config's `sshKey`, one per line), without repeats.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub authorized_keys: Vec<AuthorizedKey>,
}

impl Scenario {
    /// Whether the scenario's `[fixture] faults` name `fault`.
    pub fn has_fault(&self, fault: &str) -> bool {
        self.fixture
            .as_ref()
            .is_some_and(|f| f.faults.iter().any(|x| x.trim() == fault))
    }
}
