//! One timeline of everything observed: each signal becomes an `Event` with host time, source
//! and payload, appended to events.jsonl as it happens.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// Where a signal came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Harness,
    Qmp,
    /// libvirt's domain events (the libvirt backend), named like the QEMU events they are.
    Libvirt,
    Serial,
    Journal,
    Guest,
    Api,
    Disk,
}

impl Source {
    pub const ALL: [Source; 8] = [
        Source::Harness,
        Source::Qmp,
        Source::Libvirt,
        Source::Serial,
        Source::Journal,
        Source::Guest,
        Source::Api,
        Source::Disk,
    ];

    /// As events.jsonl and result.json spell it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Harness => "harness",
            Source::Qmp => "qmp",
            Source::Libvirt => "libvirt",
            Source::Serial => "serial",
            Source::Journal => "journal",
            Source::Guest => "guest",
            Source::Api => "api",
            Source::Disk => "disk",
        }
    }
}

/// Where every observer sends what it sees: one channel into the run's state machine.
pub type SignalTx = tokio::sync::mpsc::UnboundedSender<(Source, Signal)>;

/// What was observed, typed where the state machine reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Signal {
    /// The harness itself: a step started or ended.
    Note {
        text: String,
    },
    AssetsReady,
    /// The harness's own record of a phase starting, with its deadline.
    PhaseStarted {
        phase: String,
        timeout_s: u64,
    },
    /// The harness's own record of a phase ending, with what ended it.
    PhaseEnded {
        phase: String,
        status: String,
        detail: String,
    },
    VmStarted {
        pid: u32,
    },
    /// A QMP event (RESET, SHUTDOWN, GUEST_PANICKED, ...).
    Qmp {
        name: String,
        data: serde_json::Value,
    },
    /// The VM process exited.
    VmExited {
        status: String,
    },
    /// An instrument the verdict depends on is lost while the VM runs (the QMP connection,
    /// the libvirt connection, the serial console): the run cannot be judged any more.
    InstrumentLost {
        instrument: String,
        detail: String,
    },
    /// A console line.
    Console {
        line: String,
    },
    /// A journal entry of a BiP unit.
    Journal {
        unit: String,
        identifier: String,
        message: String,
        /// Guest wall-clock time of the entry, microseconds since the epoch.
        guest_usec: u64,
        boot_id: String,
    },
    /// The guest's state, polled over SSH.
    GuestStatus(GuestStatus),
    /// SSH to the guest worked (true) or stopped working (false).
    Ssh {
        up: bool,
        detail: String,
    },
    /// Bytes written to the install disk so far (QMP block stats; on a backend without them,
    /// what coreos-installer's progress lines say it has read of the image).
    DiskWrite {
        bytes: u64,
    },
    /// The guest answered SSH from a new boot (its boot id changed): it rebooted. The reset of
    /// a backend without QMP, seen only once the rebooted system answers.
    BootChanged {
        from: String,
        to: String,
    },
    /// An API check's outcome.
    Api {
        check: ApiCheck,
        ok: bool,
        detail: String,
    },
    /// A request the harness's boot server answered (netboot): the guest fetching its root
    /// filesystem.
    Served(Served),
    /// The harness's boot server refused others' traffic at its limits (a flood of half-sent
    /// or junk requests), at most once a second: what it refused so far.
    BootServerStrained {
        detail: String,
    },
    /// The harness's own `coreos-installer install` of an assisted install
    /// (`[install] mode = "assisted"`), run over SSH on the live system.
    Assisted(AssistedStep),
    /// Whether bootstrap-complete waits for etcd's `EtcdBootstrapMemberRemoved`, and why
    /// (the cluster's release, or the scenario's `[checks]`): decided once the release is
    /// known.
    EtcdRule {
        required: bool,
        why: String,
    },
    /// The release ClusterVersion names (sent when it changes): the release-gated rules
    /// (`flow::release_rules`) follow it.
    Release {
        version: String,
    },
    /// The one node the API lists, by the name its kubelet registered, and what is wrong with
    /// that name, if anything (sent when either changes).
    NodeSeen(NodeSeen),
    /// The ClusterOperators unavailable or degraded that the `installer` rule reports rather
    /// than judges, each with its condition's message (sent when the list changes).
    OperatorWarnings {
        warnings: Vec<String>,
    },
    /// A multipath install's own events: a path the harness took away and gave back, and
    /// what the installed system's root is on (`flow::multipath`).
    Multipath(MultipathStep),
}

/// What happened to a multipath installation disk's paths, and what the installed system
/// booted from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum MultipathStep {
    /// The harness took path `device` (its QEMU device id) away from the VM, `written` bytes
    /// into the install disk's write (fault `multipath-path-lost`).
    PathLost { device: String, written: u64 },
    /// It gave the path back; `written_while_lost` bytes reached the disk meanwhile, over the
    /// path that was left.
    PathRestored {
        device: String,
        written_while_lost: u64,
    },
    /// Taking the path away or giving it back failed.
    PathFaultFailed { detail: String },
    /// The installed (or live) system's root and boot filesystems and multipath paths, over
    /// SSH.
    Root(super::multipath::RootDevices),
}

impl MultipathStep {
    pub fn describe(&self) -> String {
        let mib = |b: &u64| *b as f64 / 1048576.0;
        match self {
            MultipathStep::PathLost { device, written } => format!(
                "multipath: the harness removed path {device} of the installation disk from the VM, {:.0} MiB into the write",
                mib(written)
            ),
            MultipathStep::PathRestored {
                device,
                written_while_lost,
            } => format!(
                "multipath: the harness gave path {device} back; {:.0} MiB were written over the other path meanwhile",
                mib(written_while_lost)
            ),
            MultipathStep::PathFaultFailed { detail } => {
                format!("multipath: the harness could not take a path away or give it back: {detail}")
            }
            MultipathStep::Root(r) => {
                let system = if r.live { "live system" } else { "installed system" };
                let fs: Vec<String> = r
                    .filesystems
                    .iter()
                    .map(|f| match f.map() {
                        Some(dm) => format!("{} on {dm}", f.label),
                        None => format!("{} on {}", f.label, f.device),
                    })
                    .collect();
                let active = r.paths.iter().filter(|p| p.active()).count();
                format!(
                    "multipath: the {system}'s filesystems: {}; {active} of {} multipath paths active",
                    if fs.is_empty() { "none found".into() } else { fs.join(", ") },
                    r.paths.len()
                )
            }
        }
    }
}

/// The node as registered: its name, and why that name means the install went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default, Deserialize)]
pub struct NodeSeen {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_problem: Option<String>,
    /// Its InternalIP addresses, as the Node's status lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// What is wrong with them: a static address of the scenario that is not among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_problem: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApiCheck {
    Readyz,
    BootstrapConfigmap,
    EtcdBootstrapMemberRemoved,
    NodeReady,
    ClusterVersion,
    ClusterOperators,
    /// The cluster reports the install-config it was given (health/applied.rs).
    InstallConfigApplied,
}

/// One request the harness's boot server answered. `ms` runs from the request to its last
/// byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Served {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub bytes: u64,
    pub ms: u64,
}

/// A step of the assisted install, as the harness ran it on the live system: the
/// preparation of the install device and of master.ign, coreos-installer's attempts, the EFI
/// boot entry, the logs and the reboot (assisted-installer's `src/installer/installer.go`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum AssistedStep {
    /// The installation disk as named (a by-id or by-path link) and the kernel device it
    /// resolved to, which every later step and coreos-installer are given.
    DeviceResolved { link: String, device: String },
    /// Old LVM metadata on the device: what was found and removed, or why nothing was.
    LvmCleaned { detail: String },
    /// Old MD RAID membership of the device: what was stopped and zeroed, or why nothing was.
    RaidCleaned { detail: String },
    /// The signatures wipefs erased from the device's partitions and the device.
    SignaturesWiped { detail: String },
    /// A cleanup step that failed; as the agent does, the install goes on.
    CleanupFailed { what: String, detail: String },
    /// The scenario's host Ignition was merged into master.ign.
    IgnitionMerged { detail: String },
    /// coreos-installer attempt `attempt` exited `code`; another attempt follows.
    Retrying {
        attempt: u32,
        code: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The EFI boot entry for the installed disk was created, with this command.
    BootEntrySet { command: String },
    /// No EFI boot entry was created, and why (no efibootmgr, no ESP, a failure); as the agent
    /// does, the install goes on.
    BootEntryNotSet { detail: String },
    /// coreos-installer started, with this command line.
    Started { command: String },
    /// A line it printed (stdout and stderr, in order).
    Output { line: String },
    /// It exited with this code.
    Exited { code: i32 },
    /// It could not be run or followed to its end (no master.ign, SSH lost): what happened.
    Broken { detail: String },
    /// After an exit 0: the harness collects the live system's logs, as the agent uploads
    /// them before it reboots.
    CollectingLogs,
    /// The collection ended: what was collected, or why not.
    LogsCollected { detail: String },
    /// The harness asks the live system to reboot (the agent's `shutdown -r now`).
    Rebooting,
}

impl AssistedStep {
    /// One line for the steps around coreos-installer (the preparation, the retries, the boot
    /// entry).
    pub fn describe(&self) -> String {
        let text = match self {
            AssistedStep::DeviceResolved { link, device } if link == device => {
                format!("the install device is {device}")
            }
            AssistedStep::DeviceResolved { link, device } => {
                format!("the install device {link} resolves to {device}")
            }
            AssistedStep::LvmCleaned { detail }
            | AssistedStep::RaidCleaned { detail }
            | AssistedStep::SignaturesWiped { detail }
            | AssistedStep::IgnitionMerged { detail } => detail.clone(),
            AssistedStep::CleanupFailed { what, detail } => {
                format!(
                    "cleaning the install device ({what}) failed, the install goes on: {detail}"
                )
            }
            AssistedStep::Retrying {
                attempt,
                code,
                error,
            } => {
                let said = error
                    .as_deref()
                    .map_or(String::new(), |e| format!(": {e:?}"));
                format!("coreos-installer attempt {attempt} of {INSTALL_ATTEMPTS} exited {code}{said}; trying again")
            }
            AssistedStep::BootEntrySet { command } => format!("EFI boot entry set: {command}"),
            AssistedStep::BootEntryNotSet { detail } => {
                format!("no EFI boot entry set, the install goes on: {detail}")
            }
            AssistedStep::Started { command } => format!("the harness runs {command}"),
            AssistedStep::Output { line } => line.clone(),
            AssistedStep::Exited { code } => format!("coreos-installer exited {code}"),
            AssistedStep::Broken { detail } | AssistedStep::LogsCollected { detail } => {
                detail.clone()
            }
            AssistedStep::CollectingLogs => "collecting the live system's logs".to_string(),
            AssistedStep::Rebooting => "the harness asks the live system to reboot".to_string(),
        };
        format!("assisted install: {text}")
    }
}

/// How many times the assisted agent runs coreos-installer before the install fails
/// (assisted-installer's writeImageToDisk: `utils.Retry(3, ...)`).
pub const INSTALL_ATTEMPTS: u32 = 3;

/// What one SSH status poll of the guest found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default, Deserialize)]
#[serde(default)]
pub struct GuestStatus {
    pub boot_id: String,
    /// `/run/ostree-live` exists: the live ISO system.
    pub live: bool,
    pub host_key: String,
    pub bootkube_done: bool,
    /// `/opt/openshift/coreos-installer.done`: install-to-disk.sh wrote the disk.
    pub coreos_installer_done: bool,
    pub install_to_disk_done: bool,
    /// `systemctl is-enabled bootkube.service` (empty when the unit does not exist).
    pub bootkube_enabled: String,
    /// `ActiveState/SubState/Result` of bootkube.service, e.g. "failed/failed/exit-code".
    pub bootkube_state: String,
    /// bootkube.service's restart count.
    pub bootkube_restarts: u32,
    /// install-to-disk.service's restart count.
    pub install_restarts: u32,
    /// Bootstrap files still present after the reboot (docs/bip-contract.md §6).
    pub bootstrap_files: Vec<String>,
    /// The guest's clock when it answered, nanoseconds since the epoch: with the event's host
    /// time it gives the clock offset, so guest timestamps (journal) map onto the host's.
    pub guest_time_ns: u64,
    /// The SecureBoot EFI variable, as this system reads it.
    pub secure_boot: SecureBootState,
}

/// The SecureBoot EFI variable (global variable GUID 8be4df61-93ca-11d2-aa0d-00e098032b8c, one
/// byte after the four of its attributes) as a system reads it through efivarfs, which is what
/// `mokutil --sb-state` reads too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SecureBootState {
    /// 1: the firmware enforced Secure Boot on this boot.
    On,
    /// 0: UEFI without Secure Boot.
    Off,
    /// No such variable (or none readable): the system did not boot through UEFI.
    #[default]
    NoVariable,
}

impl SecureBootState {
    /// From the status script's field: the variable's value byte, or `-` without one.
    pub fn parse(field: &str) -> SecureBootState {
        match field.trim() {
            "1" => SecureBootState::On,
            "0" => SecureBootState::Off,
            _ => SecureBootState::NoVariable,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    /// Host time, RFC 3339 with milliseconds.
    pub time: String,
    /// Milliseconds since the run started.
    pub t_ms: u64,
    pub source: Source,
    #[serde(flatten)]
    pub signal: Signal,
}

impl Signal {
    /// One line for heartbeats and failure reasons.
    pub fn summary(&self) -> String {
        match self {
            Signal::Note { text } => text.clone(),
            Signal::AssetsReady => "assets ready".into(),
            Signal::PhaseStarted { phase, timeout_s } => {
                format!("phase {phase} started (timeout {timeout_s} s)")
            }
            Signal::PhaseEnded { phase, status, .. } => format!("phase {phase} ended: {status}"),
            Signal::VmStarted { pid } => format!("VM started (pid {pid})"),
            Signal::Qmp { name, .. } => format!("QMP {name}"),
            Signal::VmExited { status } => format!("VM exited ({status})"),
            Signal::InstrumentLost { instrument, detail } => {
                format!("lost the {instrument}: {detail}")
            }
            Signal::Console { line } => format!("console: {line}"),
            Signal::Journal { unit, message, .. } => format!("{unit}: {message}"),
            Signal::GuestStatus(s) => format!(
                "guest {} (boot {})",
                if s.live {
                    "live system"
                } else {
                    "installed system"
                },
                &s.boot_id[..s.boot_id.len().min(8)]
            ),
            Signal::Ssh { up, detail } => {
                format!("SSH {}: {detail}", if *up { "up" } else { "down" })
            }
            Signal::DiskWrite { bytes } => format!(
                "{:.0} MiB written to the install disk",
                *bytes as f64 / 1048576.0
            ),
            Signal::BootChanged { from, to } => format!(
                "the guest rebooted: boot {} answers, boot {} did before",
                short_boot(to),
                short_boot(from)
            ),
            Signal::Api { check, ok, detail } => format!("API {check:?} ok={ok}: {detail}"),
            Signal::BootServerStrained { detail } => {
                format!("the harness's boot server is under strain: {detail}")
            }
            Signal::Served(r) => format!(
                "boot server: {} {} {}, {:.1} MiB in {:.1} s",
                r.method,
                r.path,
                r.status,
                r.bytes as f64 / 1048576.0,
                r.ms as f64 / 1000.0
            ),
            Signal::Assisted(step) => step.describe(),
            Signal::Multipath(step) => step.describe(),
            Signal::NodeSeen(n) => {
                let at = match n.addresses.as_slice() {
                    [] => String::new(),
                    ips => format!(" at {}", ips.join(", ")),
                };
                let problems: Vec<&str> = [&n.name_problem, &n.address_problem]
                    .into_iter()
                    .flatten()
                    .map(String::as_str)
                    .collect();
                match problems.as_slice() {
                    [] => format!("the node registered as {}{at}", n.name),
                    ps => format!("the node registered as {}{at}: {}", n.name, ps.join("; ")),
                }
            }
            Signal::Release { version } => super::release_rules::describe(version),
            Signal::OperatorWarnings { warnings } => match warnings.as_slice() {
                [] => "no operator is unavailable or degraded".to_string(),
                ws => format!(
                    "operators unavailable or degraded (a warning: wait-for install-complete does not judge them): {}",
                    ws.join("; ")
                ),
            },
            Signal::EtcdRule { required, why } => format!(
                "EtcdBootstrapMemberRemoved {}: {why}",
                if *required {
                    "required"
                } else {
                    "not required"
                }
            ),
        }
    }
}

/// A boot id's first 8 characters, as the summaries show it.
fn short_boot(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Appends events to events.jsonl, one JSON object a line, flushed as they come.
pub struct EventLog {
    out: BufWriter<File>,
    started: Instant,
}

impl EventLog {
    pub fn create(path: &Path, started: Instant) -> std::io::Result<EventLog> {
        Ok(EventLog {
            out: BufWriter::new(File::create(path)?),
            started,
        })
    }

    /// Stamps a signal with the time now and records it.
    pub fn record(&mut self, source: Source, signal: Signal) -> std::io::Result<Event> {
        let ev = Event {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            t_ms: self.started.elapsed().as_millis() as u64,
            source,
            signal,
        };
        serde_json::to_writer(&mut self.out, &ev)?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_one_json_object_a_line_with_source_and_kind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("events.jsonl");
        let mut log = EventLog::create(&p, Instant::now()).unwrap();
        log.record(
            Source::Qmp,
            Signal::Qmp {
                name: "RESET".into(),
                data: serde_json::json!({"guest": true}),
            },
        )
        .unwrap();
        log.record(Source::Disk, Signal::DiskWrite { bytes: 42 })
            .unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["source"], "qmp");
        assert_eq!(lines[0]["kind"], "qmp");
        assert_eq!(lines[0]["name"], "RESET");
        assert_eq!(lines[1]["kind"], "disk-write");
        assert_eq!(lines[1]["bytes"], 42);
        assert!(lines[1]["time"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn the_release_says_which_rules_it_is_not_held_to() {
        let says = |v: &str| Signal::Release { version: v.into() }.summary();
        assert_eq!(
            says("4.12.3"),
            "the cluster's release is 4.12.3: not held to opt-openshift-removed (from 4.13), etcd-bootstrap-member-removed (from 4.16); held to bootstrap-configmap (from 4.12), default-network-type-ovn (from 4.12)"
        );
        assert_eq!(
            says("4.16.0"),
            "the cluster's release is 4.16.0: every release rule applies"
        );
        let v = serde_json::to_value(Signal::Release {
            version: "4.11.0".into(),
        })
        .unwrap();
        assert_eq!(v["kind"], "release");
        assert_eq!(v["version"], "4.11.0");
    }

    #[test]
    fn phase_records_say_the_phase_its_timeout_and_how_it_ended() {
        let started = serde_json::to_value(Signal::PhaseStarted {
            phase: "bootkube".into(),
            timeout_s: 1200,
        })
        .unwrap();
        assert_eq!(
            started,
            serde_json::json!({"kind": "phase-started", "phase": "bootkube", "timeout_s": 1200})
        );
        let ended = serde_json::to_value(Signal::PhaseEnded {
            phase: "bootkube".into(),
            status: "pass".into(),
            detail: "bootkube.service complete".into(),
        })
        .unwrap();
        assert_eq!(ended["kind"], "phase-ended");
        assert_eq!(ended["status"], "pass");
        for s in Source::ALL {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(
                json,
                s.name(),
                "events.jsonl and result.json spell it alike"
            );
        }
    }
}
