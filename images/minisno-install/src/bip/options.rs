//! The fixture's options, chosen when the assets are generated, through the environment of
//! `minisno-install create single-node-ignition-config`: `MINISNO_FAULTS` (comma-separated
//! fault names), `MINISNO_SCHEDULE` (`normal` or `fast`), `MINISNO_REBOOT_DELAY_MIN` (minutes
//! for `shutdown -r +N`; default 1, 0 with `fast`) and `MINISNO_VERSION` (the release the
//! cluster reports).

use serde_json::{json, Value};

use crate::release;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureOptions {
    pub faults: Vec<Fault>,
    pub schedule: Schedule,
    pub reboot_delay_min: u32,
    /// The release version the cluster reports.
    pub version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    Normal,
    Fast,
}

/// The faults of the shared list (crate sno-fixture-faults), each acted out where the real
/// failure would happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    BootkubeFail,
    BootkubeFlaky,
    BootkubeHang,
    InstallFail,
    /// The machine resets (sysrq `b`: no sync, as a power cut or a watchdog) while
    /// coreos-installer is a quarter into the write.
    InstallReset,
    /// install-to-disk.sh runs coreos-installer without `-n` (`--copy-network`): the keyfiles
    /// the live system was given stay behind, and the installed system comes up with
    /// NetworkManager's defaults (DHCP where there is a server) instead of its static address.
    CopyNetworkMissing,
    /// Late in bootkube (before master.ign), the installation disk gets a GPT with an LVM
    /// volume group (an active volume) on partition 1 and an MD RAID1 array (running) on
    /// partition 2: a disk that came with old metadata, as udev activates it on a live system.
    StaleMetadata,
    NoReboot,
    DiskBootPanic,
    ApiNeverReady,
    NodeNotReady,
    /// The harness withholds the DNS records; the fixture has nothing to do (the node's own
    /// resolver then fails, as on a real node).
    NoDns,
    OperatorDegraded(String),
    OperatorUnavailable(String),
    PostRebootFail,
    /// The post-reboot script's wait loop of that name (the shared list's
    /// `POST_REBOOT_LOOPS`) takes its condition as unmet and goes round forever, printing the
    /// real script's lines: each loop's hang, as the harness must name it.
    PostRebootHang(String),
    EtcdMemberNotRemoved,
    NetworkTypeDrift,
    OomKill,
    /// A service record that is a FIFO no one writes: whoever gathers the logs by reading
    /// every file of /var/log/openshift blocks on it; the install is not affected.
    GatherHang,
    /// Mid-bootkube, every `journalctl -f` reader's SSH session is killed from inside the
    /// guest: the connection drops as a network cut would; the install is not affected.
    JournalCut,
    /// The harness gives the route names to the node's /etc/hosts but not to its DNS; the
    /// fixture has nothing to do: its operators' route checks go through the pods' DNS, which
    /// never reads /etc/hosts, and fail as on a real cluster.
    AppsDns,
    /// The harness's DHCP gives no hostname; the fixture has nothing to do: the installed
    /// system's node-valid-hostname.service waits its five minutes and the kubelet registers
    /// the node as "localhost.localdomain" (what NetworkManager sets without a name).
    NoHostname,
    /// The harness's rootfs server answers 404 (or changes a byte, below); the fixture has
    /// nothing to do: its initramfs's own checks fail the live boot.
    Rootfs404,
    RootfsCorrupt,
    /// `coreos print-stream-json` names the live ISO whose EFI boot loader is unsigned
    /// (`stream::UNSIGNED_LOADER_ISO_NAME`), as a release whose build forgot to sign it would;
    /// the firmware's Secure Boot refuses it before anything of minisno runs.
    UnsignedLoader,
    /// The harness takes one path of the multipath installation disk away from the VM during
    /// the write and gives it back; the fixture has nothing to do: its multipathd fails over.
    MultipathPathLost,
    /// The harness's install passes no multipath kernel arguments; the fixture has nothing to
    /// do: its installed system finds its root by label on one path, as RHCOS's would.
    MultipathNoKargs,
}

#[derive(Debug, thiserror::Error)]
pub enum BipError {
    /// The shared list's message: the text, and every valid fault.
    #[error("{0}")]
    UnknownFault(String),
    #[error("MINISNO_SCHEDULE must be `normal` or `fast`, not {0:?}")]
    BadSchedule(String),
    #[error("MINISNO_REBOOT_DELAY_MIN must be a whole number of minutes, not {0:?}")]
    BadRebootDelay(String),
    #[error("MINISNO_VERSION must be a release version such as 4.14.3 (major.minor.patch, optionally -suffix), not {0:?}")]
    BadVersion(String),
}

/// The names of the plain faults, both ways.
pub(crate) const PLAIN_FAULTS: &[(&str, Fault)] = &[
    ("bootkube-fail", Fault::BootkubeFail),
    ("bootkube-flaky", Fault::BootkubeFlaky),
    ("bootkube-hang", Fault::BootkubeHang),
    ("install-fail", Fault::InstallFail),
    ("install-reset", Fault::InstallReset),
    ("copy-network-missing", Fault::CopyNetworkMissing),
    ("stale-metadata", Fault::StaleMetadata),
    ("no-reboot", Fault::NoReboot),
    ("disk-boot-panic", Fault::DiskBootPanic),
    ("api-never-ready", Fault::ApiNeverReady),
    ("node-not-ready", Fault::NodeNotReady),
    ("no-dns", Fault::NoDns),
    ("post-reboot-fail", Fault::PostRebootFail),
    ("etcd-member-not-removed", Fault::EtcdMemberNotRemoved),
    ("network-type-drift", Fault::NetworkTypeDrift),
    ("oom-kill", Fault::OomKill),
    ("gather-hang", Fault::GatherHang),
    ("journal-cut", Fault::JournalCut),
    ("apps-dns", Fault::AppsDns),
    ("no-hostname", Fault::NoHostname),
    ("rootfs-404", Fault::Rootfs404),
    ("rootfs-corrupt", Fault::RootfsCorrupt),
    ("unsigned-loader", Fault::UnsignedLoader),
    ("multipath-path-lost", Fault::MultipathPathLost),
    ("multipath-no-kargs", Fault::MultipathNoKargs),
];

impl Fault {
    /// A fault by the name the shared list gives it.
    pub fn parse(s: &str) -> Result<Fault, BipError> {
        let named =
            sno_fixture_faults::parse(s).map_err(|e| BipError::UnknownFault(e.to_string()))?;
        let param = || named.parameter.unwrap_or_default().to_string();
        match named.fault.name {
            "operator-degraded" => return Ok(Fault::OperatorDegraded(param())),
            "operator-unavailable" => return Ok(Fault::OperatorUnavailable(param())),
            "post-reboot-hang" => return Ok(Fault::PostRebootHang(param())),
            _ => {}
        }
        PLAIN_FAULTS
            .iter()
            .find(|(n, _)| *n == named.fault.name)
            .map(|(_, f)| f.clone())
            // A name the shared list has and this fixture does not implement: a test keeps
            // the two in step.
            .ok_or_else(|| {
                BipError::UnknownFault(format!("{}: listed but not implemented", named.fault.name))
            })
    }

    pub fn name(&self) -> String {
        match self {
            Fault::OperatorDegraded(o) => format!("operator-degraded:{o}"),
            Fault::OperatorUnavailable(o) => format!("operator-unavailable:{o}"),
            Fault::PostRebootHang(l) => format!("post-reboot-hang:{l}"),
            plain => PLAIN_FAULTS
                .iter()
                .find(|(_, f)| f == plain)
                .map(|(n, _)| n.to_string())
                .expect("every plain fault has a name"),
        }
    }
}

impl FixtureOptions {
    /// Reads the options from the environment (see the module's documentation).
    pub fn from_env() -> Result<FixtureOptions, BipError> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        FixtureOptions::parse(
            get("MINISNO_FAULTS").as_deref(),
            get("MINISNO_SCHEDULE").as_deref(),
            get("MINISNO_REBOOT_DELAY_MIN").as_deref(),
        )?
        .with_version(get(release::VERSION_ENV).as_deref())
    }

    pub fn parse(
        faults: Option<&str>,
        schedule: Option<&str>,
        reboot_delay_min: Option<&str>,
    ) -> Result<FixtureOptions, BipError> {
        let faults = faults
            .unwrap_or("")
            .split(',')
            .filter(|f| !f.trim().is_empty())
            .map(Fault::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let schedule = match schedule.map(str::trim) {
            None | Some("normal") => Schedule::Normal,
            Some("fast") => Schedule::Fast,
            Some(other) => return Err(BipError::BadSchedule(other.into())),
        };
        let default_delay = if schedule == Schedule::Fast { 0 } else { 1 };
        let reboot_delay_min = match reboot_delay_min {
            None => default_delay,
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| BipError::BadRebootDelay(v.into()))?,
        };
        Ok(FixtureOptions {
            faults,
            schedule,
            reboot_delay_min,
            version: release::DEFAULT_VERSION.into(),
        })
    }

    /// The options with the release `version` (`None`: the default release).
    pub fn with_version(self, version: Option<&str>) -> Result<FixtureOptions, BipError> {
        let version = match version.map(str::trim) {
            None => release::DEFAULT_VERSION.to_string(),
            Some(v) if release::is_version(v) => v.to_string(),
            Some(v) => return Err(BipError::BadVersion(v.into())),
        };
        Ok(FixtureOptions { version, ..self })
    }

    pub fn has(&self, fault: &Fault) -> bool {
        self.faults.contains(fault)
    }

    /// The post-reboot loop the options hold (`post-reboot-hang:<loop>`), or "" for none.
    pub fn held_loop(&self) -> &str {
        self.faults
            .iter()
            .find_map(|f| match f {
                Fault::PostRebootHang(l) => Some(l.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }

    /// The release image the cluster reports.
    pub fn release_image(&self) -> String {
        release::image(&self.version)
    }
}

impl Default for FixtureOptions {
    fn default() -> Self {
        FixtureOptions {
            faults: Vec::new(),
            schedule: Schedule::Normal,
            reboot_delay_min: 1,
            version: release::DEFAULT_VERSION.into(),
        }
    }
}

impl Schedule {
    /// Seconds each bootkube stage takes.
    pub(crate) fn stage_delay(self) -> &'static str {
        match self {
            Schedule::Normal => "2",
            Schedule::Fast => "0.1",
        }
    }

    /// Seconds between polls in the scripts (the real ones poll every 5 to 20 s).
    pub(crate) fn poll_seconds(self) -> &'static str {
        match self {
            Schedule::Normal => "5",
            Schedule::Fast => "1",
        }
    }

    /// The simulated control plane's schedule (minisno-apiserver's config): when the API
    /// answers, and how long each later milestone takes once the ones it waits for are
    /// reached (the node's registration needs DNS for api-int; see minisno-apiserver).
    pub(crate) fn apiserver_schedule(self) -> Value {
        match self {
            // Fast: every milestone within a few seconds of its causes; what remains is the
            // 30 s an operator must stay settled for install-complete.
            Schedule::Fast => json!({
                "readyz_after_s": 2, "node_ready_delay_s": 1, "etcd_bootstrap_removed_delay_s": 1,
                "operators_available_delay_s": 1, "cluster_version_completed_delay_s": 1,
                "operators_settled_delay_s": 1
            }),
            Schedule::Normal => json!({
                "readyz_after_s": 30, "node_ready_delay_s": 60, "etcd_bootstrap_removed_delay_s": 30,
                "operators_available_delay_s": 150, "cluster_version_completed_delay_s": 60,
                "operators_settled_delay_s": 30
            }),
        }
    }
}
