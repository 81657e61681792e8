//! `result.json`: the document one run leaves in its directory.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::util::input_file;

/// The schema tag every `result.json` carries.
pub const SCHEMA: &str = "sno-harness/result/v1";
/// The file name inside a run directory.
pub const RESULT_FILE: &str = "result.json";

/// The phase names of the contract, in order (one list: `flow::phase::Phase`).
pub fn phase_names() -> Vec<&'static str> {
    crate::flow::phase::Phase::names()
}

/// Formats a time as RFC 3339 UTC with second precision, e.g. `2026-11-29T23:00:00Z`.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

pub use crate::flow::machine::Verdict;

/// The outcome of one phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseStatus {
    Pass,
    Fail,
    Timeout,
    NotReached,
}

impl PhaseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Pass => "pass",
            PhaseStatus::Fail => "fail",
            PhaseStatus::Timeout => "timeout",
            PhaseStatus::NotReached => "not-reached",
        }
    }

    /// Fail or timeout.
    pub fn is_failure(self) -> bool {
        matches!(self, PhaseStatus::Fail | PhaseStatus::Timeout)
    }
}

impl fmt::Display for PhaseStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One phase of the timeline; times are milliseconds since the run started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    pub status: PhaseStatus,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub detail: String,
}

impl PhaseResult {
    /// A phase the run never got to: status `not-reached`, no times.
    pub fn not_reached(name: impl Into<String>) -> Self {
        PhaseResult {
            name: name.into(),
            status: PhaseStatus::NotReached,
            start_ms: None,
            end_ms: None,
            duration_ms: None,
            timeout_ms: None,
            detail: String::new(),
        }
    }
}

/// Throughput of the write to the install disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskWrite {
    pub disk: String,
    pub bytes: u64,
    pub duration_ms: u64,
    pub mib_per_s: f64,
    /// Where the numbers come from, e.g. `qmp` (block stats).
    pub source: String,
    #[serde(default)]
    pub image_bytes: Option<u64>,
    /// How install-to-disk's deadline followed the write (absent when it never could: no
    /// progress from coreos-installer, or the write ended too soon to project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<InstallDeadline>,
    /// The install disk's host-side cache mode (`unsafe`: the write went to the host's page
    /// cache, not its disk); absent in result.json files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

/// The write's projected length and the install-to-disk deadline it gave, against the
/// scenario's timeout, in seconds from the phase's start (the last projection of the run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstallDeadline {
    pub nominal_s: f64,
    pub adapted_s: f64,
    pub projected_write_end_s: f64,
}

/// One event of the timeline, condensed for a failure report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSignal {
    pub t_ms: u64,
    pub source: String,
    pub summary: String,
}

/// A line of the guest's logs that means trouble (flow/badness.rs): it failed the run, or was
/// allowed by the scenario and is a warning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadnessLine {
    /// `kernel-panic`, `oops`, `soft-lockup`, `kernel-bug`, `kernel-warning`,
    /// `general-protection-fault`, `emergency-shell`, `dracut-fatal`, `offline-device-io`,
    /// `oom-kill`, `segfault`, `go-panic`, `core-dump`, `ordering-cycle` (docs/badness.md).
    pub kind: String,
    /// `serial console` or `journal of <unit>`.
    pub source: String,
    pub line: String,
    pub t_ms: u64,
    /// The allow-list pattern that made it a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_by: Option<String>,
    /// Why its kind, where it was seen, is a warning (a crash outside the bootstrap units on
    /// the openshift profile, a soft lockup under TCG). Without this and `allowed_by`, the
    /// line failed the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// What the run ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostContext {
    pub qemu_version: String,
    pub cpu_model: String,
    pub harness_version: String,
    pub kernel: String,
}

impl HostContext {
    /// The context of a VM host (this one, or a remote libvirt host) measured by this harness.
    pub fn of(qemu_version: String, cpu_model: String, kernel: String) -> HostContext {
        HostContext {
            qemu_version,
            cpu_model,
            harness_version: env!("CARGO_PKG_VERSION").to_string(),
            kernel,
        }
    }
}

/// The registered node, in result.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct NodeResult {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_problem: Option<String>,
    /// Its InternalIP addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// A static address of the scenario that the Node does not have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_problem: Option<String>,
}

/// A multipath installation disk, in result.json: the kernel arguments the install passed,
/// what the installed system's root was on, and what the harness did to the disk's paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MultipathResult {
    /// The multipath kernel arguments the install appended (none under `multipath-no-kargs`).
    #[serde(default)]
    pub kargs: Vec<String>,
    /// The installed system's root, as last read over SSH; absent when never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<MultipathRoot>,
    /// The paths the harness took away and gave back (`multipath-path-lost`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_events: Vec<MultipathEvent>,
}

/// The installed system's root and boot filesystems and the multipath paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MultipathRoot {
    /// Milliseconds since the run started, when it was read.
    pub t_ms: u64,
    /// Root (and /boot) on the multipath map.
    pub on_multipath: bool,
    /// The judgement in words: the device, the map and its paths.
    pub summary: String,
    /// Each filesystem as `LABEL on DEVICE (mounted at PATH)`.
    #[serde(default)]
    pub filesystems: Vec<String>,
    /// The map root is on: name and WWID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwid: Option<String>,
    /// Every path multipathd listed: `DEVICE DM-STATE/CHECKER`.
    #[serde(default)]
    pub paths: Vec<String>,
}

/// A path the harness took away or gave back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MultipathEvent {
    pub t_ms: u64,
    /// `path-lost`, `path-restored` or `path-fault-failed`.
    pub step: String,
    pub summary: String,
}

/// `result.json`, schema `sno-harness/result/v1`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    /// Permutation id, or the scenario name for a single run.
    pub id: String,
    /// Scenario path as given.
    pub scenario: String,
    /// Axis values; empty for a single run.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    pub profile: String,
    pub backend: String,
    /// The libvirt host the run went to: its URI without the parameters. Absent on QEMU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libvirt_host: Option<String>,
    pub accel: String,
    #[serde(default)]
    pub accel_reason: String,
    pub verdict: Verdict,
    pub failed_phase: Option<String>,
    /// Empty when passed; otherwise the reason in words, quoting the evidence.
    pub reason: String,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub duration_ms: u64,
    #[serde(default)]
    pub resets: u32,
    /// Each reset's cause, in order (`guest reboot`, `guest panic`, `watchdog`, `the harness
    /// (QMP system_reset)`); one reboot is one reset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reset_causes: Vec<String>,
    /// All contract phases in order; unreached ones `not-reached` with null times.
    pub phases: Vec<PhaseResult>,
    /// The node as its kubelet registered it (its name; why that name is wrong, if it is),
    /// once the API listed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeResult>,
    pub disk_write: Option<DiskWrite>,
    #[serde(default)]
    pub last_signals: Vec<LastSignal>,
    /// Artifact name -> path relative to the run directory.
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    pub replay: String,
    #[serde(default)]
    pub host: HostContext,
    /// Badness found in the serial console and the journals, failing or allowed.
    #[serde(default)]
    pub badness: Vec<BadnessLine>,
    /// Whether bootstrap-complete waited for etcd's bootstrap member to be removed, and why
    /// (by the cluster's release, or the scenario's `[checks]`); absent when the run did not
    /// get that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_rule: Option<EtcdRuleApplied>,
    /// Each release-gated rule (docs/bip-contract.md §7, "Release history") and whether the
    /// cluster's release was held to it; absent when the run never read the release (the newest
    /// rules then applied).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release_rules: Vec<crate::flow::release_rules::RuleApplied>,
    /// The scenario keys changed on the command line (`--set KEY=VALUE`), as given, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The fingerprints (`SHA256:...`, as `ssh-keygen -l` prints them) of the keys the
    /// scenario's `[access] authorized_keys` added to user `core`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorized_keys: Vec<String>,
    /// The rule cluster-ready judged the ClusterOperators by (`installer`, exactly `wait-for
    /// install-complete`'s, or `healthy`); absent when the run did not get that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operators_rule: Option<String>,
    /// Under `installer`: the operators unavailable or degraded when cluster-ready ended, each
    /// with its condition's message. The install completes with them, as the real one does;
    /// they are warnings, never left unsaid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operator_warnings: Vec<String>,
    /// On UEFI: the SecureBoot EFI variable as each system read it over SSH (`on`, `off`,
    /// `no-variable`); a system that never answered is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<crate::flow::machine::SecureBootSeen>,
    /// The live system's bootkube.service restarts, when it restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootkube_restarts: Option<Restarts>,
    /// The installer and the live ISO the run used; absent when it made no assets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assets: Option<AssetsUsed>,
    /// A `--keep` run (passing, or failed with `--keep on-failure`) left its VM running for the
    /// user: its QEMU's pid, the harness's own or a libvirt domain's (`sno-harness gc` stops it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_left_running: Option<u32>,
    /// A `--keep` run on `--backend redfish` left its machine powered on (`sno-harness gc`
    /// powers it off through the BMC).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub left_powered_on: bool,
    /// How long the run was paused at its failure (`--pause-on-failure`), left out of
    /// `duration_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_ms: Option<u64>,
    /// How the live system booted, when not from the full live ISO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootRecord>,
    /// A multipath installation disk's record; absent for any other disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipath: Option<MultipathResult>,
    /// The run's private directory, outside the run directory: the installer's assets (the
    /// Ignition configs, auth/), the SSH key, the disks and the live ISO. Nothing of it is
    /// published; it is removed when the run ends unless kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private: Option<PrivateRecord>,
    /// What the run could not see that a VM the harness boots shows, each with what stood in
    /// for it (`observe`: no QMP, no console unless given, disk writes from coreos-installer's
    /// progress lines); absent for a VM of the harness's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<String>,
}

/// Where a run kept what must not be published, and whether it is still there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrivateRecord {
    pub dir: String,
    /// `--keep` (or a VM left running): the directory stays for the user; else it is gone.
    pub kept: bool,
}

/// A boot other than the full live ISO's: where the root filesystem came from, and the time
/// it took.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BootRecord {
    /// `[boot] source`: `minimal-iso`.
    pub source: String,
    /// The URL the guest was given for its root filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs_url: Option<String>,
    /// What the guest asked of the harness's boot server, in order.
    #[serde(default)]
    pub served: Vec<Served>,
    /// live-boot's time spent fetching the root filesystem, and the rest of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_boot_fetch_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_boot_rest_ms: Option<u64>,
    /// What the boot server refused (requests for paths it does not serve, connections it
    /// closed at its limits), counted, never listed one by one; absent when nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl BootRecord {
    /// One sentence for the reports: `Boot: minimal-iso; GET /rootfs.img 200, 76.1 MiB in
    /// 4.2 s (18.1 MiB/s); live-boot 4.2 s fetching, 57.8 s the rest.`
    pub fn sentence(&self) -> String {
        let s = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
        let mut parts = vec![format!("Boot: {}", self.source)];
        for r in &self.served {
            let rate = r
                .mib_per_s
                .map(|m| format!(" ({m:.1} MiB/s)"))
                .unwrap_or_default();
            parts.push(format!(
                "{} {} {}, {:.1} MiB in {}{rate}",
                r.method,
                r.path,
                r.status,
                r.bytes as f64 / 1048576.0,
                s(r.duration_ms)
            ));
        }
        if let (Some(f), Some(rest)) = (self.live_boot_fetch_ms, self.live_boot_rest_ms) {
            parts.push(format!("live-boot {} fetching, {} the rest", s(f), s(rest)));
        }
        format!("{}.", parts.join("; "))
    }
}

/// One request the harness's boot server answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Served {
    /// When it ended, in the run's time.
    pub t_ms: u64,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub bytes: u64,
    pub duration_ms: u64,
    /// The body's throughput, for a GET that sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib_per_s: Option<f64>,
}

/// What the assets phase used: the installer as it names itself, the release it installs, and
/// the live ISO.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetsUsed {
    /// The installer run, as the scenario or PATH named it.
    pub installer: String,
    /// The first line of its `version` (`openshift-install 4.17.0`).
    pub installer_version: String,
    /// `built from commit ...`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer_commit: Option<String>,
    /// The release image installed: the override the installer got (the scenario's, else one
    /// inherited from the environment), else what `version` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_image: Option<String>,
    /// The installer's own variables (`OPENSHIFT_INSTALL_*`) the run inherited from its
    /// environment and passed on: `NAME=VALUE` for images and switches, the name alone else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherited_env: Vec<String>,
    /// Where the live ISO came from (a URL; or the saved state of a resumed run).
    pub iso: String,
    #[serde(default)]
    pub iso_sha256: String,
}

impl AssetsUsed {
    /// One sentence for the reports: `Installer openshift-install 4.17.0 (commit abc; release
    /// image quay.io/...); ISO https://... (sha256 ...).`
    pub fn sentence(&self) -> String {
        let mut about = Vec::new();
        if let Some(c) = &self.installer_commit {
            about.push(format!("commit {c}"));
        }
        if let Some(r) = &self.release_image {
            about.push(format!("release image {r}"));
        }
        if !self.inherited_env.is_empty() {
            about.push(format!(
                "from the environment: {}",
                self.inherited_env.join(", ")
            ));
        }
        let version = match self.installer_version.as_str() {
            "" => self.installer.clone(),
            v => v.to_string(),
        };
        let about = if about.is_empty() {
            String::new()
        } else {
            format!(" ({})", about.join("; "))
        };
        let digest = if self.iso_sha256.is_empty() {
            String::new()
        } else {
            format!(" (sha256 {})", self.iso_sha256)
        };
        format!("Installer {version}{about}; ISO {}{digest}.", self.iso)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EtcdRuleApplied {
    pub required: bool,
    pub why: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restarts {
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Reading a `result.json` failed.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// Missing, not a regular file, larger than a result may be, not UTF-8.
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: input_file::Problem,
    },
    #[error("{path}: not a valid result document: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: schema {found:?}, expected {SCHEMA:?}")]
    Schema { path: PathBuf, found: String },
}

impl RunResult {
    /// The result of a run that never started (not admitted, interrupted while queued, or its
    /// directory could not be made): verdict `error`, every phase `not-reached`.
    pub fn unreached_error(id: &str, reason: &str) -> RunResult {
        RunResult {
            schema: SCHEMA.into(),
            id: id.into(),
            scenario: String::new(),
            params: BTreeMap::new(),
            profile: String::new(),
            backend: "qemu".into(),
            accel: String::new(),
            libvirt_host: None,
            accel_reason: String::new(),
            verdict: Verdict::Error,
            failed_phase: None,
            reason: reason.into(),
            started_at: String::new(),
            duration_ms: 0,
            resets: 0,
            reset_causes: Vec::new(),
            phases: RunResult::unreached_phases(),
            node: None,
            disk_write: None,
            last_signals: vec![],
            artifacts: BTreeMap::new(),
            replay: String::new(),
            host: HostContext::default(),
            badness: vec![],
            etcd_rule: None,
            release_rules: Vec::new(),
            overrides: Vec::new(),
            authorized_keys: Vec::new(),
            operators_rule: None,
            operator_warnings: Vec::new(),
            secure_boot: None,
            bootkube_restarts: None,
            assets: None,
            vm_left_running: None,
            left_powered_on: false,
            paused_ms: None,
            boot: None,
            multipath: None,
            private: None,
            lacks: Vec::new(),
        }
    }

    /// Every contract phase, all `not-reached`: the starting point of a run's phase list.
    pub fn unreached_phases() -> Vec<PhaseResult> {
        phase_names()
            .into_iter()
            .map(PhaseResult::not_reached)
            .collect()
    }

    /// The phase with this name, if present.
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// Whether the run got as far as any phase. A run that never did (cancelled before it
    /// started, or the harness failed while setting up) exercised nothing of the system under
    /// test: coverage counts it as "not run" whatever its verdict.
    pub fn reached_any_phase(&self) -> bool {
        self.phases
            .iter()
            .any(|p| p.status != PhaseStatus::NotReached)
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("RunResult serializes");
        s.push('\n');
        s
    }

    /// Writes `dir/result.json` atomically (temporary file in `dir`, then rename).
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let target = dir.join(RESULT_FILE);
        let tmp = dir.join(format!(".{RESULT_FILE}.tmp"));
        let res = (|| {
            // A fresh file, never through a link planted under the temporary name.
            let _ = std::fs::remove_file(&tmp);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(self.to_json().as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &target)
        })();
        if res.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        res
    }

    /// Reads a `result.json` file and checks its schema tag.
    pub fn read(path: impl AsRef<Path>) -> Result<RunResult, ResultError> {
        let path = path.as_ref();
        let text =
            input_file::read_text(path, input_file::RESULT).map_err(|e| ResultError::Read {
                path: e.path,
                source: e.problem,
            })?;
        let r: RunResult = serde_json::from_str(&text).map_err(|source| ResultError::Json {
            path: path.to_owned(),
            source,
        })?;
        if r.schema != SCHEMA {
            return Err(ResultError::Schema {
                path: path.to_owned(),
                found: r.schema,
            });
        }
        Ok(r)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Value;

    /// A passed run with every phase timed and a disk write.
    #[test]
    fn writing_never_follows_a_link_planted_at_the_temporary_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".result.json.tmp")).unwrap();
        sample_pass("x").write(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(RunResult::read(dir.path().join(RESULT_FILE)).is_ok());
    }

    pub(crate) fn sample_pass(id: &str) -> RunResult {
        let mut t = 0;
        let phases = phase_names()
            .iter()
            .map(|name| {
                let start = t;
                t += 1000;
                PhaseResult {
                    name: (*name).into(),
                    status: PhaseStatus::Pass,
                    start_ms: Some(start),
                    end_ms: Some(t),
                    duration_ms: Some(1000),
                    timeout_ms: Some(600_000),
                    detail: String::new(),
                }
            })
            .collect();
        RunResult {
            schema: SCHEMA.into(),
            id: id.into(),
            scenario: "scenarios/disks.toml".into(),
            params: BTreeMap::from([("disks.install.bus".into(), "virtio".into())]),
            profile: "fixture".into(),
            backend: "qemu".into(),
            accel: "tcg".into(),
            libvirt_host: None,
            accel_reason: "/dev/kvm: nested virtualization unavailable".into(),
            verdict: Verdict::Pass,
            failed_phase: None,
            reason: String::new(),
            started_at: "2026-11-29T23:00:00Z".into(),
            duration_ms: 61234,
            resets: 1,
            reset_causes: vec!["guest reboot".into()],
            phases,
            node: Some(NodeResult {
                name: "sno-master-0".into(),
                name_problem: None,
                addresses: vec!["10.0.2.15".into()],
                address_problem: None,
            }),
            disk_write: Some(DiskWrite {
                disk: "install".into(),
                bytes: 268_435_456,
                duration_ms: 3100,
                mib_per_s: 82.6,
                source: "qmp".into(),
                image_bytes: Some(268_435_456),
                deadline: None,
                cache: None,
            }),
            last_signals: vec![],
            artifacts: BTreeMap::from([
                ("serial".into(), "serial.log".into()),
                ("events".into(), "events.jsonl".into()),
            ]),
            replay: format!("sno-harness run scenarios/disks.toml --filter {id} --keep"),
            host: HostContext {
                qemu_version: "9.2.0".into(),
                ..Default::default()
            },
            badness: vec![],
            etcd_rule: None,
            release_rules: Vec::new(),
            overrides: Vec::new(),
            authorized_keys: Vec::new(),
            operators_rule: None,
            operator_warnings: Vec::new(),
            secure_boot: None,
            bootkube_restarts: None,
            assets: None,
            vm_left_running: None,
            left_powered_on: false,
            paused_ms: None,
            boot: None,
            multipath: None,
            private: None,
            lacks: Vec::new(),
        }
    }

    /// A run that timed out in `bootkube`; later phases not reached.
    pub(crate) fn sample_fail(id: &str, reason: &str) -> RunResult {
        let mut r = sample_pass(id);
        r.verdict = Verdict::Fail;
        r.failed_phase = Some("bootkube".into());
        r.reason = reason.into();
        r.disk_write = None;
        r.resets = 0;
        r.phases[2].status = PhaseStatus::Timeout;
        r.phases[2].detail = "last seen: bootkube.sh line 40, 600 s ago".into();
        for p in &mut r.phases[3..] {
            *p = PhaseResult::not_reached(p.name.clone());
        }
        r.last_signals = vec![LastSignal {
            t_ms: 2500,
            source: "serial".into(),
            summary: "bootkube.sh: waiting for etcd".into(),
        }];
        r
    }

    #[test]
    fn phase_names_in_contract_order() {
        assert_eq!(phase_names().len(), 11);
        assert_eq!(phase_names()[0], "assets");
        assert_eq!(phase_names()[10], "bootstrap-cleanup");
        let un = RunResult::unreached_phases();
        assert!(un
            .iter()
            .all(|p| p.status == PhaseStatus::NotReached && p.start_ms.is_none()));
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn pass_round_trip_and_field_names() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample_pass("virtio.512.bios.by-id");
        r.write(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(RESULT_FILE)).unwrap();
        assert!(text.ends_with("}\n"));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], "sno-harness/result/v1");
        assert_eq!(v["verdict"], "pass");
        assert!(v["failed_phase"].is_null());
        assert_eq!(v["reason"], "");
        assert_eq!(v["params"]["disks.install.bus"], "virtio");
        assert_eq!(v["phases"][0]["name"], "assets");
        assert_eq!(v["phases"][2]["status"], "pass");
        assert_eq!(v["phases"][2]["start_ms"], 2000);
        assert_eq!(v["phases"][2]["duration_ms"], 1000);
        assert_eq!(v["disk_write"]["mib_per_s"], 82.6);
        assert_eq!(v["disk_write"]["source"], "qmp");
        assert_eq!(v["started_at"], "2026-11-29T23:00:00Z");
        assert_eq!(v["duration_ms"], 61234);
        assert_eq!(v["resets"], 1);
        assert_eq!(v["host"]["qemu_version"], "9.2.0");
        // No temporary file left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(RunResult::read(dir.path().join(RESULT_FILE)).unwrap(), r);
    }

    #[test]
    fn the_release_rules_are_recorded_beside_the_etcd_rule() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = sample_pass("release");
        r.release_rules = crate::flow::release_rules::applied(Some("4.12.1"));
        r.write(dir.path()).unwrap();
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(RESULT_FILE)).unwrap()).unwrap();
        assert_eq!(
            v["release_rules"][0],
            serde_json::json!({"rule": "bootstrap-configmap", "from": "4.12", "applied": true})
        );
        assert_eq!(v["release_rules"][2]["rule"], "opt-openshift-removed");
        assert_eq!(v["release_rules"][2]["applied"], false);
        assert_eq!(RunResult::read(dir.path().join(RESULT_FILE)).unwrap(), r);
        // A run that never read the release records none.
        let text = serde_json::to_string(&sample_pass("early")).unwrap();
        assert!(!text.contains("release_rules"), "{text}");
    }

    #[test]
    fn fail_round_trip_not_reached_is_null() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample_fail("smoke", "bootkube timed out");
        r.write(dir.path()).unwrap();
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(RESULT_FILE)).unwrap()).unwrap();
        assert_eq!(v["verdict"], "fail");
        assert_eq!(v["failed_phase"], "bootkube");
        assert_eq!(v["phases"][2]["status"], "timeout");
        assert_eq!(v["phases"][3]["status"], "not-reached");
        assert!(v["phases"][3]["start_ms"].is_null());
        assert!(v["disk_write"].is_null());
        assert_eq!(v["last_signals"][0]["source"], "serial");
        assert_eq!(RunResult::read(dir.path().join(RESULT_FILE)).unwrap(), r);
    }

    #[test]
    fn reads_minimal_document_and_rejects_other_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(RESULT_FILE);
        // The example of docs/architecture.md, verbatim apart from a missing field or two.
        let doc = r#"{ "schema": "sno-harness/result/v1", "id": "virtio.512.bios.by-id",
          "scenario": "scenarios/disks.toml", "params": {"disks.install.bus": "virtio"},
          "profile": "fixture", "backend": "qemu", "accel": "tcg",
          "verdict": "pass", "failed_phase": null, "reason": "",
          "started_at": "2026-11-29T23:00:00Z", "duration_ms": 61234, "resets": 1,
          "phases": [{"name": "bootkube", "status": "pass", "start_ms": 4100, "end_ms": 9050, "duration_ms": 4950}],
          "disk_write": {"disk": "install", "bytes": 268435456, "duration_ms": 3100, "mib_per_s": 82.6, "source": "qmp"},
          "replay": "sno-harness run scenarios/disks.toml --filter virtio.512.bios.by-id --keep" }"#;
        std::fs::write(&p, doc).unwrap();
        let r = RunResult::read(&p).unwrap();
        assert_eq!(r.phase("bootkube").unwrap().duration_ms, Some(4950));
        assert_eq!(r.disk_write.unwrap().image_bytes, None);
        std::fs::write(&p, doc.replace("result/v1", "result/v0")).unwrap();
        assert!(matches!(
            RunResult::read(&p),
            Err(ResultError::Schema { .. })
        ));
        assert!(matches!(
            RunResult::read(dir.path().join("missing.json")),
            Err(ResultError::Read { .. })
        ));
    }
}
