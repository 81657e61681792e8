//! The bootstrap-in-place payload: the live Ignition config (`bootstrap-in-place-for-live-iso.ign`)
//! with the units and scripts of docs/bip-contract.md §5, and inside it the installed system's
//! config that bootkube turns into `/opt/openshift/master.ign` (§6, the API server).
//!
//! The scripts live in `bip/` next to this crate's sources and are embedded at compile time.

mod faults;
pub mod options;
#[cfg(test)]
mod tests;
pub mod units;

use serde_json::{json, Value};

use crate::release;
use faults::{apiserver_faults, FaultSnippets};
pub use options::{BipError, Fault, FixtureOptions, Schedule};
use units::{
    DISK_BOOTKUBE_UNIT, DISK_KUBELET_UNIT, KUBELET_DEPENDENCIES_TARGET, LIVE_UNITS,
    NODE_VALID_HOSTNAME_UNIT, PANIC_UNIT,
};

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
    /// Ignition file entries of the user's master MachineConfigs, which the installed system
    /// gets as the machine-config operator would render them into its config.
    pub master_files: &'a [Value],
    /// Their systemd units, likewise.
    pub master_units: &'a [Value],
    pub options: &'a FixtureOptions,
    /// The cluster's first service network is IPv6 (an IPv6 single-stack or IPv6-primary
    /// cluster): the API server then binds `[::]:6443` instead of `0.0.0.0:6443`.
    pub ipv6_primary: bool,
}

/// The API server's bind address. openshift/cluster-kube-apiserver-operator binds the API on
/// every IPv4 address, `0.0.0.0:6443`, unless the cluster's primary family (its first service
/// network) is IPv6, when it binds `[::]:6443`; Linux's `[::]` socket takes IPv4 too.
pub fn api_listen(ipv6_primary: bool) -> &'static str {
    if ipv6_primary {
        "[::]:6443"
    } else {
        "0.0.0.0:6443"
    }
}

/// The live Ignition's size limit: the ISO's embed area holds it (compressed), and a config of
/// this size always fits.
pub const LIVE_IGNITION_LIMIT: usize = 256 * 1024;

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

/// A shell flag of a rendered script: what its release does.
fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
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

/// User `core` with every line of `sshKey`. The real installer puts the whole `sshKey` text,
/// which may hold several authorized_keys lines, as one entry of `sshAuthorizedKeys` in the
/// bootstrap(-in-place) Ignition (pkg/asset/ignition/bootstrap/common.go) and in the 99-master-ssh
/// MachineConfig that master.ign is rendered from; Ignition writes the entry as it is, so every
/// line reaches authorized_keys on both systems. minisno-ignition writes one line per entry,
/// hence one entry per line here, with the same authorized_keys as the result.
fn users(ssh_key: &str) -> Value {
    let keys: Vec<&str> = ssh_key
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    json!({"users": [{"name": "core", "sshAuthorizedKeys": keys}]})
}

/// The installed system's config (master.ign before bootkube adds the live bootstrap's data).
pub fn master_ignition(inputs: &BipInputs) -> Value {
    let o = inputs.options;
    let faults = FaultSnippets::for_options(o);
    let poll = o.schedule.poll_seconds();
    let apiserver = json!({
        "cluster_name": inputs.cluster_name,
        "base_domain": inputs.base_domain,
        "listen": api_listen(inputs.ipv6_primary),
        "ca_cert": "/etc/kubernetes/minisno/ca.crt",
        "ca_key": "/etc/kubernetes/minisno/ca.key",
        "extra_sans": [],
        "state_dir": "/var/lib/minisno-apiserver",
        "release": {"version": o.version, "image": o.release_image()},
        "schedule": o.schedule.apiserver_schedule(),
        "faults": apiserver_faults(o),
        "install_config_yaml": inputs.install_config_yaml_redacted,
    });
    let gather = script!("live/installer-gather.sh");
    // No node name in the API server's config: like the kubelet, it takes the hostname it
    // finds when it starts, after node-valid-hostname.service (units.rs).
    let mut units = vec![
        unit("kubelet.service", DISK_KUBELET_UNIT),
        unit("bootkube.service", DISK_BOOTKUBE_UNIT),
        unit("node-valid-hostname.service", NODE_VALID_HOSTNAME_UNIT),
        json!({"name": "kubelet-dependencies.target", "contents": KUBELET_DEPENDENCIES_TARGET}),
    ];
    if o.has(&Fault::DiskBootPanic) {
        units.push(unit("minisno-fault-panic.service", PANIC_UNIT));
    }
    let mut config = json!({
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
                             &[("POLL_SECONDS", poll), ("FAULT_POST_REBOOT", faults.post_reboot),
                               ("CREATE_BOOTSTRAP_CONFIGMAP", flag(release::creates_bootstrap_configmap(&o.version))),
                               ("REMOVE_OPT_OPENSHIFT", flag(release::removes_opt_openshift(&o.version))),
                               ("HANG_LOOP", o.held_loop())])),
                file("/usr/local/bin/kubelet.sh", 0o755, script!("disk/kubelet.sh")),
                file("/usr/local/bin/mco-hostname", 0o755, script!("disk/mco-hostname.sh")),
                file("/usr/local/bin/installer-gather.sh", 0o755, gather),
                file("/usr/local/bin/installer-masters-gather.sh", 0o755, gather),
            ]
        },
        "systemd": {"units": units}
    });
    merge_files(&mut config, inputs.master_files);
    merge_units(&mut config, inputs.master_units);
    config
}

/// Adds file entries to a config; an entry for a path the config already has replaces it, as a
/// later MachineConfig's file wins over an earlier one's.
fn merge_files(config: &mut Value, extra: &[Value]) {
    merge_by(&mut config["storage"]["files"], "path", extra);
}

/// Adds units to a config; a unit of a name the config already has replaces it, as the
/// machine-config operator's rendering lets a later MachineConfig's unit win.
fn merge_units(config: &mut Value, extra: &[Value]) {
    merge_by(&mut config["systemd"]["units"], "name", extra);
}

/// Appends each of `extra` to the list `into`, replacing an entry of the same `key`.
fn merge_by(into: &mut Value, key: &str, extra: &[Value]) {
    let list = into.as_array_mut().expect("the config has the list");
    for entry in extra {
        list.retain(|e| e[key] != entry[key]);
        list.push(entry.clone());
    }
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
            ("COPY_NETWORK", faults.copy_network),
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
        "release": o.version,
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
                    ("RELEASE_IMAGE", &o.release_image()),
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
                    ("FAULT_BOOTKUBE_START", faults.bootkube_start),
                    ("FAULT_BOOTKUBE", faults.bootkube),
                    ("FAULT_BOOTKUBE_MID", faults.bootkube_mid),
                    ("FAULT_BOOTKUBE_LATE", faults.bootkube_late),
                    ("INSTALLATION_DISK", inputs.installation_disk),
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
        (
            "installer-gather.sh",
            script!("live/installer-gather.sh").to_string(),
        ),
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
