//! The bootstrap-in-place payload: the live Ignition config (`bootstrap-in-place-for-live-iso.ign`)
//! with the units and scripts of docs/bip-contract.md §5, and inside it the installed system's
//! config that bootkube turns into `/opt/openshift/master.ign` (§6, the API server).
//!
//! The scripts live in `bip/` next to this crate's sources and are embedded at compile time.

use serde_json::{json, Value};

/// Faults and timing of the fixture, chosen when the assets are generated. The harness passes
/// them in the environment of `minisno-install create single-node-ignition-config`:
/// `MINISNO_FAULTS` (comma-separated names), `MINISNO_SCHEDULE` (`normal` or `fast`) and
/// `MINISNO_REBOOT_DELAY_MIN` (minutes for `shutdown -r +N`; default 1, 0 with `fast`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureOptions {
    pub faults: Vec<Fault>,
    pub schedule: Schedule,
    pub reboot_delay_min: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    Normal,
    Fast,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    BootkubeFail,
    BootkubeHang,
    InstallFail,
    NoReboot,
    DiskBootPanic,
    ApiNeverReady,
    NodeNotReady,
    OperatorDegraded(String),
    OperatorUnavailable(String),
    PostRebootFail,
    EtcdMemberNotRemoved,
    NetworkTypeDrift,
    OomKill,
}

/// Everything the payload needs from the install-config and the generated PKI.
pub struct BipInputs<'a> {
    pub cluster_name: &'a str,
    pub base_domain: &'a str,
    /// `bootstrapInPlace.installationDisk`, pasted into install-to-disk.sh as the real template
    /// does (unquoted).
    pub installation_disk: &'a str,
    /// The install-config's `sshKey` (may be empty).
    pub ssh_key: &'a str,
    /// The install-config's pull secret (JSON text).
    pub pull_secret: &'a str,
    /// The cluster CA, which signs the API server's serving certificate on the node and the
    /// admin client certificate.
    pub ca_cert_pem: &'a str,
    pub ca_key_pem: &'a str,
    /// A kubeconfig for `https://localhost:6443` with the admin client certificate, used on the
    /// node by the post-reboot script.
    pub loopback_kubeconfig: &'a str,
    /// The admin client certificate and key (PEM) of that kubeconfig, for the node's scripts.
    pub admin_cert_pem: &'a str,
    pub admin_key_pem: &'a str,
    /// The install-config as YAML with the pull secret redacted; the cluster reports it in
    /// configmap kube-system/cluster-config-v1.
    pub install_config_yaml_redacted: &'a str,
    pub options: &'a FixtureOptions,
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
}

impl Fault {
    /// A fault by the name the shared list (crate sno-fixture-faults) gives it.
    pub fn parse(s: &str) -> Result<Fault, BipError> {
        let named =
            sno_fixture_faults::parse(s).map_err(|e| BipError::UnknownFault(e.to_string()))?;
        let param = || named.parameter.unwrap_or_default().to_string();
        Ok(match named.fault.name {
            "bootkube-fail" => Fault::BootkubeFail,
            "bootkube-hang" => Fault::BootkubeHang,
            "install-fail" => Fault::InstallFail,
            "no-reboot" => Fault::NoReboot,
            "disk-boot-panic" => Fault::DiskBootPanic,
            "api-never-ready" => Fault::ApiNeverReady,
            "node-not-ready" => Fault::NodeNotReady,
            "operator-degraded" => Fault::OperatorDegraded(param()),
            "operator-unavailable" => Fault::OperatorUnavailable(param()),
            "post-reboot-fail" => Fault::PostRebootFail,
            "etcd-member-not-removed" => Fault::EtcdMemberNotRemoved,
            "network-type-drift" => Fault::NetworkTypeDrift,
            "oom-kill" => Fault::OomKill,
            // A name the shared list has and this fixture does not implement: the test below
            // keeps the two in step.
            other => {
                return Err(BipError::UnknownFault(format!(
                    "{other}: listed but not implemented"
                )))
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            Fault::BootkubeFail => "bootkube-fail".into(),
            Fault::BootkubeHang => "bootkube-hang".into(),
            Fault::InstallFail => "install-fail".into(),
            Fault::NoReboot => "no-reboot".into(),
            Fault::DiskBootPanic => "disk-boot-panic".into(),
            Fault::ApiNeverReady => "api-never-ready".into(),
            Fault::NodeNotReady => "node-not-ready".into(),
            Fault::OperatorDegraded(o) => format!("operator-degraded:{o}"),
            Fault::OperatorUnavailable(o) => format!("operator-unavailable:{o}"),
            Fault::PostRebootFail => "post-reboot-fail".into(),
            Fault::EtcdMemberNotRemoved => "etcd-member-not-removed".into(),
            Fault::NetworkTypeDrift => "network-type-drift".into(),
            Fault::OomKill => "oom-kill".into(),
        }
    }
}

impl FixtureOptions {
    /// Reads the options from the environment (see the type's documentation).
    pub fn from_env() -> Result<FixtureOptions, BipError> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        FixtureOptions::parse(
            get("MINISNO_FAULTS").as_deref(),
            get("MINISNO_SCHEDULE").as_deref(),
            get("MINISNO_REBOOT_DELAY_MIN").as_deref(),
        )
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
        })
    }

    pub fn has(&self, fault: &Fault) -> bool {
        self.faults.contains(fault)
    }
}

impl Default for FixtureOptions {
    fn default() -> Self {
        FixtureOptions {
            faults: Vec::new(),
            schedule: Schedule::Normal,
            reboot_delay_min: 1,
        }
    }
}

/// The release minisno reports; its "image" is baked into the OS image.
pub const RELEASE_VERSION: &str = "4.17.0-minisno";
pub const RELEASE_IMAGE: &str = "quay.io/minisno/release:4.17.0-minisno";

/// The live Ignition's size limit: the ISO's embed area holds it (compressed), and a config of
/// this size always fits.
pub const LIVE_IGNITION_LIMIT: usize = 256 * 1024;

impl Schedule {
    /// Seconds each bootkube stage takes.
    fn stage_delay(self) -> &'static str {
        match self {
            Schedule::Normal => "2",
            Schedule::Fast => "0.1",
        }
    }

    /// Seconds between polls in the scripts (the real ones poll every 5 s).
    fn poll_seconds(self) -> &'static str {
        match self {
            Schedule::Normal => "5",
            Schedule::Fast => "1",
        }
    }

    /// When the simulated control plane reaches each milestone, in seconds since its first
    /// start (minisno-apiserver's config).
    fn apiserver_schedule(self) -> Value {
        match self {
            // Fast: the milestones come in their real order within a few seconds; what
            // remains is the 30 s an operator must stay settled for install-complete.
            Schedule::Fast => json!({
                "readyz_after_s": 2, "etcd_bootstrap_removed_after_s": 4, "node_ready_after_s": 4,
                "operators_available_after_s": 5, "operators_settled_after_s": 7,
                "cluster_version_completed_after_s": 8
            }),
            Schedule::Normal => json!({
                "readyz_after_s": 30, "etcd_bootstrap_removed_after_s": 60, "node_ready_after_s": 90,
                "operators_available_after_s": 240, "operators_settled_after_s": 300,
                "cluster_version_completed_after_s": 330
            }),
        }
    }
}

macro_rules! script {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/bip/", $path))
    };
}

/// Fills `{{NAME}}` placeholders; every placeholder must have a value.
fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    assert!(
        !out.contains("{{"),
        "unfilled placeholder in a BiP script: {}",
        out.lines().find(|l| l.contains("{{")).unwrap_or("")
    );
    out
}

fn data_url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

fn file(path: &str, mode: u32, contents: &str) -> Value {
    json!({"path": path, "mode": mode, "overwrite": true,
           "contents": {"source": data_url(contents.as_bytes())}})
}

fn unit(name: &str, contents: &str) -> Value {
    json!({"name": name, "enabled": true, "contents": contents})
}

fn users(ssh_key: &str) -> Value {
    let keys: Vec<&str> = ssh_key
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    json!({"users": [{"name": "core", "sshAuthorizedKeys": keys}]})
}

/// The shell snippets that inject each fault where the real failure would happen.
struct FaultSnippets {
    bootkube: &'static str,
    install: &'static str,
    post_reboot: &'static str,
}

impl FaultSnippets {
    fn for_options(o: &FixtureOptions) -> FaultSnippets {
        FaultSnippets {
            bootkube: if o.has(&Fault::BootkubeFail) {
                "echo \"Error: error while checking pod status: timed out waiting for the condition\" >&2\n            echo \"Tearing down temporary bootstrap control plane...\"\n            false"
            } else if o.has(&Fault::BootkubeHang) {
                "while true; do echo \"Pod Status:openshift-kube-apiserver/kube-apiserver        Pending\"; sleep 30; done"
            } else {
                ":"
            },
            install: if o.has(&Fault::InstallFail) {
                // A truncated image: coreos-installer fails mid-write with its own error,
                // resets the partition table, and the unit restarts every 5 s.
                "head -c 48M \"$image\" > /var/tmp/metal-truncated.raw.zst\n    image=/var/tmp/metal-truncated.raw.zst"
            } else {
                ":"
            },
            post_reboot: if o.has(&Fault::PostRebootFail) {
                "echo \"error: failed to restore the bootstrap-in-place cluster state: exit status 1\" >&2\nexit 1"
            } else if o.has(&Fault::OomKill) {
                // A real OOM kill, not a printed imitation: a process that grows without
                // bound in a 32 MiB cgroup. The kernel and systemd report it in their own
                // words; the install itself goes on and succeeds.
                "systemd-run --unit=minisno-memory-hog --property=MemoryMax=32M --property=MemorySwapMax=0 tail /dev/zero"
            } else {
                ":"
            },
        }
    }
}

/// The faults the simulated control plane acts out.
fn apiserver_faults(o: &FixtureOptions) -> Vec<String> {
    o.faults
        .iter()
        .filter(|f| {
            matches!(
                f,
                Fault::ApiNeverReady
                    | Fault::NodeNotReady
                    | Fault::OperatorDegraded(_)
                    | Fault::OperatorUnavailable(_)
                    | Fault::EtcdMemberNotRemoved
                    | Fault::NetworkTypeDrift
            )
        })
        .map(Fault::name)
        .collect()
}

const LIVE_UNITS: &[(&str, &str)] = &[
    (
        "release-image.service",
        "[Unit]\nDescription=Download the OpenShift Release Image\nWants=network-online.target\nAfter=network-online.target\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/release-image-download.sh\nRemainAfterExit=true\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "kubelet.service",
        "[Unit]\nDescription=Kubernetes Kubelet\nWants=release-image.service\nAfter=release-image.service\n\n[Service]\nExecStart=/usr/local/bin/kubelet.sh\nRestart=always\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "bootkube.service",
        "[Unit]\nDescription=Bootstrap a Kubernetes cluster\nWants=kubelet.service\nAfter=kubelet.service\nConditionPathExists=!/opt/openshift/.bootkube.done\n\n[Service]\nWorkingDirectory=/opt/openshift\nExecStart=/usr/local/bin/bootkube.sh\nRestart=on-failure\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "install-to-disk.service",
        "[Unit]\nDescription=Install to disk\nRequires=bootkube.service\nWants=bootkube.service\nAfter=bootkube.service\nConditionPathExists=!/opt/openshift/.install-to-disk.done\n\n[Service]\nWorkingDirectory=/opt/openshift\nExecStart=/usr/local/bin/install-to-disk.sh\nRestart=on-failure\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "progress.service",
        "[Unit]\nDescription=Report the completion of the cluster bootstrap process\nWants=bootkube.service\nAfter=bootkube.service\n\n[Service]\nExecStart=/usr/local/bin/progress.sh\nRestart=on-failure\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
    (
        "approve-csr.service",
        "[Unit]\nDescription=Approve CSRs during bootstrap phase\nWants=bootkube.service\nAfter=bootkube.service\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/approve-csr.sh\nRemainAfterExit=true\n\n[Install]\nWantedBy=multi-user.target\n",
    ),
];

const DISK_BOOTKUBE_UNIT: &str = "[Unit]\nDescription=Bootkube - bootstrap in place post reboot\nWants=kubelet.service\nAfter=kubelet.service\nConditionPathExists=/etc/kubernetes/bootstrap-secrets/kubeconfig\n\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/bootstrap-in-place-post-reboot.sh\nRestartSec=5s\n\n[Install]\nWantedBy=multi-user.target\n";

const DISK_KUBELET_UNIT: &str = "[Unit]\nDescription=Kubernetes Kubelet (minisno: runs minisno-apiserver)\nWants=network-online.target\nAfter=network-online.target\n\n[Service]\nExecStart=/usr/local/bin/kubelet.sh\nRestart=always\nRestartSec=2\n\n[Install]\nWantedBy=multi-user.target\n";

/// disk-boot-panic: the installed system panics early in its first boot, as a broken kernel or
/// initramfs would; the pvpanic device reports it to the host.
const PANIC_UNIT: &str = "[Unit]\nDescription=minisno fault disk-boot-panic\nDefaultDependencies=no\nAfter=systemd-udev-settle.service systemd-modules-load.service\n\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'modprobe pvpanic 2>/dev/null; echo 1 > /proc/sys/kernel/sysrq; echo c > /proc/sysrq-trigger'\n\n[Install]\nWantedBy=sysinit.target\n";

/// The installed system's config (master.ign before bootkube adds the live bootstrap's data).
pub fn master_ignition(inputs: &BipInputs) -> Value {
    let o = inputs.options;
    let faults = FaultSnippets::for_options(o);
    let poll = o.schedule.poll_seconds();
    let apiserver = json!({
        "cluster_name": inputs.cluster_name,
        "base_domain": inputs.base_domain,
        "listen": "0.0.0.0:6443",
        "ca_cert": "/etc/kubernetes/minisno/ca.crt",
        "ca_key": "/etc/kubernetes/minisno/ca.key",
        "extra_sans": [],
        "state_dir": "/var/lib/minisno-apiserver",
        "node_name": "minisno",
        "release": {"version": RELEASE_VERSION, "image": RELEASE_IMAGE},
        "schedule": o.schedule.apiserver_schedule(),
        "faults": apiserver_faults(o),
        "install_config_yaml": inputs.install_config_yaml_redacted,
    });
    let gather = script!("disk/installer-gather.sh");
    let mut units = vec![
        unit("kubelet.service", DISK_KUBELET_UNIT),
        unit("bootkube.service", DISK_BOOTKUBE_UNIT),
    ];
    if o.has(&Fault::DiskBootPanic) {
        units.push(unit("minisno-fault-panic.service", PANIC_UNIT));
    }
    json!({
        "ignition": {"version": "3.2.0"},
        "passwd": users(inputs.ssh_key),
        "storage": {
            "directories": [{"path": "/opt/openshift", "mode": 493}],
            "files": [
                file("/etc/kubernetes/minisno/ca.crt", 0o644, inputs.ca_cert_pem),
                file("/etc/kubernetes/minisno/ca.key", 0o600, inputs.ca_key_pem),
                file("/etc/kubernetes/minisno/apiserver.json", 0o600,
                     &serde_json::to_string_pretty(&apiserver).expect("serialisable")),
                file("/etc/kubernetes/bootstrap-secrets/kubeconfig", 0o600, inputs.loopback_kubeconfig),
                file("/etc/kubernetes/bootstrap-secrets/ca.crt", 0o644, inputs.ca_cert_pem),
                file("/etc/kubernetes/bootstrap-secrets/admin.crt", 0o600, inputs.admin_cert_pem),
                file("/etc/kubernetes/bootstrap-secrets/admin.key", 0o600, inputs.admin_key_pem),
                file("/etc/kubernetes/bootstrap-configs/cluster.json", 0o600,
                     &json!({"clusterName": inputs.cluster_name, "baseDomain": inputs.base_domain}).to_string()),
                file("/opt/openshift/.bootstrap-in-place", 0o644, "post-reboot bootstrap pending\n"),
                file("/usr/local/bin/bootstrap-in-place-post-reboot.sh", 0o755,
                     &render(script!("disk/bootstrap-in-place-post-reboot.sh"),
                             &[("POLL_SECONDS", poll), ("FAULT_POST_REBOOT", faults.post_reboot)])),
                file("/usr/local/bin/kubelet.sh", 0o755, script!("disk/kubelet.sh")),
                file("/usr/local/bin/installer-gather.sh", 0o755, gather),
                file("/usr/local/bin/installer-masters-gather.sh", 0o755, gather),
            ]
        },
        "systemd": {"units": units}
    })
}

/// Builds the live Ignition config.
pub fn live_ignition(inputs: &BipInputs) -> Result<Value, BipError> {
    let o = inputs.options;
    let faults = FaultSnippets::for_options(o);
    let poll = o.schedule.poll_seconds();
    let reboot_delay = o.reboot_delay_min.to_string();
    let shutdown = if o.has(&Fault::NoReboot) {
        // The reboot is scheduled and then lost (as when shutdown is cancelled or the
        // scheduling fails): the script carries on and reports success.
        format!(
            "shutdown -r +{} \"Bootstrap completed, server is going to reboot.\" && shutdown -c",
            o.reboot_delay_min.max(1)
        )
    } else {
        format!("shutdown -r +{reboot_delay} \"Bootstrap completed, server is going to reboot.\"")
    };
    let install_to_disk = render(
        script!("live/install-to-disk.sh"),
        &[
            ("POLL_SECONDS", poll),
            ("INSTALLATION_DISK", inputs.installation_disk),
            ("SHUTDOWN", &shutdown),
        ],
    );
    let master = serde_json::to_string(&master_ignition(inputs)).expect("serialisable");
    let fixture_record = json!({
        "fixture": "minisno",
        "note": "a test fixture standing in for OpenShift; not RHCOS",
        "schedule": format!("{:?}", o.schedule).to_lowercase(),
        "faults": o.faults.iter().map(Fault::name).collect::<Vec<_>>(),
        "reboot_delay_min": o.reboot_delay_min,
    });
    let scripts = [
        (
            "bootstrap-service-record.sh",
            script!("live/bootstrap-service-record.sh").to_string(),
        ),
        (
            "release-image-download.sh",
            render(
                script!("live/release-image-download.sh"),
                &[
                    ("RELEASE_IMAGE", RELEASE_IMAGE),
                    ("STAGE_DELAY", o.schedule.stage_delay()),
                ],
            ),
        ),
        ("kubelet.sh", script!("live/kubelet.sh").to_string()),
        (
            "bootkube.sh",
            render(
                script!("live/bootkube.sh"),
                &[
                    ("STAGE_DELAY", o.schedule.stage_delay()),
                    ("FAULT_BOOTKUBE", faults.bootkube),
                ],
            ),
        ),
        ("install-to-disk.sh", install_to_disk),
        (
            "minisno-image-source.sh",
            render(
                script!("live/minisno-image-source.sh"),
                &[("FAULT_INSTALL", faults.install)],
            ),
        ),
        (
            "progress.sh",
            render(script!("live/progress.sh"), &[("POLL_SECONDS", poll)]),
        ),
        ("approve-csr.sh", script!("live/approve-csr.sh").to_string()),
    ];
    let mut files: Vec<Value> = scripts
        .iter()
        .map(|(name, body)| file(&format!("/usr/local/bin/{name}"), 0o755, body))
        .collect();
    files.push(file("/root/.docker/config.json", 0o600, inputs.pull_secret));
    files.push(file("/opt/openshift/minisno/master.ign.in", 0o600, &master));
    files.push(file(
        "/etc/minisno/fixture.json",
        0o644,
        &fixture_record.to_string(),
    ));
    let units: Vec<Value> = LIVE_UNITS.iter().map(|(n, c)| unit(n, c)).collect();
    Ok(json!({
        "ignition": {"version": "3.2.0"},
        "passwd": users(inputs.ssh_key),
        "storage": {
            "directories": [
                {"path": "/opt/openshift", "mode": 493},
                {"path": "/var/log/openshift", "mode": 493}
            ],
            "files": files
        },
        "systemd": {"units": units}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\n";

    fn inputs<'a>(options: &'a FixtureOptions, disk: &'a str) -> BipInputs<'a> {
        BipInputs {
            cluster_name: "sno",
            base_domain: "example.test",
            installation_disk: disk,
            ssh_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB test",
            pull_secret: r#"{"auths":{"example.test":{"auth":"c2VjcmV0"}}}"#,
            ca_cert_pem: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n",
            ca_key_pem: "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n",
            loopback_kubeconfig: KUBECONFIG,
            admin_cert_pem: "-----BEGIN CERTIFICATE-----\nADMIN\n-----END CERTIFICATE-----\n",
            admin_key_pem: "-----BEGIN PRIVATE KEY-----\nADMINKEY\n-----END PRIVATE KEY-----\n",
            install_config_yaml_redacted: "apiVersion: v1\n",
            options,
        }
    }

    /// The decoded contents of the file at `path` in an Ignition config.
    fn file_contents(cfg: &Value, path: &str) -> String {
        let f = cfg["storage"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("{path} is not in the config"));
        let src = f["contents"]["source"].as_str().unwrap();
        let b64 = src.strip_prefix("data:;base64,").unwrap();
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap(),
        )
        .unwrap()
    }

    fn unit_names(cfg: &Value) -> Vec<String> {
        cfg["systemd"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn every_fault_of_the_shared_list_is_implemented_under_its_own_name() {
        for f in sno_fixture_faults::FAULTS {
            let text = f.form().replace("<name>", "ingress");
            let fault = Fault::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(fault.name(), text);
        }
        let e = Fault::parse("operator-degraded").unwrap_err().to_string();
        assert!(e.contains("valid faults: bootkube-fail, "), "{e}");
    }

    #[test]
    fn live_config_carries_the_bip_units_and_is_accepted_by_minisno_ignition() {
        let o = FixtureOptions::default();
        let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
        let text = serde_json::to_string(&cfg).unwrap();
        assert!(text.len() < LIVE_IGNITION_LIMIT, "{} bytes", text.len());
        minisno_ignition::parse(&text).unwrap();
        assert_eq!(
            unit_names(&cfg),
            [
                "release-image.service",
                "kubelet.service",
                "bootkube.service",
                "install-to-disk.service",
                "progress.service",
                "approve-csr.service"
            ]
        );
        let master = file_contents(&cfg, "/opt/openshift/minisno/master.ign.in");
        minisno_ignition::parse(&master).unwrap();
        let master: Value = serde_json::from_str(&master).unwrap();
        assert_eq!(unit_names(&master), ["kubelet.service", "bootkube.service"]);
        let apiserver: Value = serde_json::from_str(&file_contents(
            &master,
            "/etc/kubernetes/minisno/apiserver.json",
        ))
        .unwrap();
        assert_eq!(apiserver["schedule"]["readyz_after_s"], 30);
        assert_eq!(apiserver["faults"], json!([]));
    }

    #[test]
    fn unit_ordering_and_conditions_are_the_real_ones() {
        let units: std::collections::HashMap<_, _> = LIVE_UNITS.iter().copied().collect();
        let bootkube = units["bootkube.service"];
        for line in [
            "ConditionPathExists=!/opt/openshift/.bootkube.done",
            "Restart=on-failure",
            "WorkingDirectory=/opt/openshift",
        ] {
            assert!(bootkube.contains(line), "bootkube.service lacks {line}");
        }
        let itd = units["install-to-disk.service"];
        for line in [
            "Requires=bootkube.service",
            "After=bootkube.service",
            "ConditionPathExists=!/opt/openshift/.install-to-disk.done",
            "RestartSec=5s",
        ] {
            assert!(itd.contains(line), "install-to-disk.service lacks {line}");
        }
        assert!(DISK_BOOTKUBE_UNIT
            .contains("ConditionPathExists=/etc/kubernetes/bootstrap-secrets/kubeconfig"));
        assert!(DISK_BOOTKUBE_UNIT.contains("Type=oneshot"));
        assert!(!DISK_BOOTKUBE_UNIT.contains("Restart="));
    }

    #[test]
    fn the_installation_disk_is_pasted_unquoted_like_the_real_template() {
        let o = FixtureOptions::default();
        let cfg = live_ignition(&inputs(&o, "/dev/vda --extra-arg")).unwrap();
        let script = file_contents(&cfg, "/usr/local/bin/install-to-disk.sh");
        assert!(script.contains(
            "coreos-installer install -n -i /opt/openshift/master.ign $(minisno_image_source /dev/vda --extra-arg) /dev/vda --extra-arg"
        ));
        assert!(script.contains("install -i /opt/openshift/master.ign /dev/vda --extra-arg\""));
        assert!(
            script.contains("shutdown -r +1 \"Bootstrap completed, server is going to reboot.\"")
        );
    }

    #[test]
    fn every_script_is_valid_bash() {
        for faults in [
            "",
            "bootkube-fail",
            "bootkube-hang,install-fail,no-reboot,post-reboot-fail",
        ] {
            let o = FixtureOptions::parse(Some(faults), Some("fast"), None).unwrap();
            let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
            let master: Value =
                serde_json::from_str(&file_contents(&cfg, "/opt/openshift/minisno/master.ign.in"))
                    .unwrap();
            for c in [&cfg, &master] {
                for f in c["storage"]["files"].as_array().unwrap() {
                    let path = f["path"].as_str().unwrap();
                    if !path.ends_with(".sh") {
                        continue;
                    }
                    let body = file_contents(c, path);
                    let out = std::process::Command::new("bash")
                        .args(["-n", "-c", &body])
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{path} with faults {faults:?}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }

    #[test]
    fn faults_land_where_the_real_failures_happen() {
        let o = FixtureOptions::parse(
            Some("bootkube-fail,install-fail,no-reboot,disk-boot-panic,post-reboot-fail,operator-degraded:ingress,etcd-member-not-removed"),
            Some("fast"),
            None,
        )
        .unwrap();
        assert_eq!(o.reboot_delay_min, 0);
        let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
        assert!(file_contents(&cfg, "/usr/local/bin/bootkube.sh")
            .contains("timed out waiting for the condition"));
        assert!(
            file_contents(&cfg, "/usr/local/bin/minisno-image-source.sh")
                .contains("metal-truncated")
        );
        assert!(file_contents(&cfg, "/usr/local/bin/install-to-disk.sh").contains("shutdown -c"));
        let master: Value =
            serde_json::from_str(&file_contents(&cfg, "/opt/openshift/minisno/master.ign.in"))
                .unwrap();
        assert!(unit_names(&master).contains(&"minisno-fault-panic.service".to_string()));
        assert!(
            file_contents(&master, "/usr/local/bin/bootstrap-in-place-post-reboot.sh")
                .contains("exit 1")
        );
        let apiserver: Value = serde_json::from_str(&file_contents(
            &master,
            "/etc/kubernetes/minisno/apiserver.json",
        ))
        .unwrap();
        assert_eq!(
            apiserver["faults"],
            json!(["operator-degraded:ingress", "etcd-member-not-removed"])
        );
        assert_eq!(apiserver["schedule"]["readyz_after_s"], 2);
    }

    #[test]
    fn fixture_options_reject_what_they_do_not_know() {
        let err = FixtureOptions::parse(Some("bogus"), None, None).unwrap_err();
        assert!(
            err.to_string().contains("operator-degraded:<name>"),
            "{err}"
        );
        assert!(FixtureOptions::parse(None, Some("slow"), None).is_err());
        assert!(FixtureOptions::parse(None, None, Some("soon")).is_err());
        assert!(Fault::parse("operator-degraded:").is_err());
        let o = FixtureOptions::parse(
            Some(" node-not-ready , operator-unavailable:console"),
            None,
            Some("3"),
        )
        .unwrap();
        assert_eq!(
            o.faults,
            [
                Fault::NodeNotReady,
                Fault::OperatorUnavailable("console".into())
            ]
        );
        assert_eq!(o.reboot_delay_min, 3);
    }
}
