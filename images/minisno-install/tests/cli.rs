//! Runs the `minisno-install` binary as the harness does.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_minisno-install");

/// A distinctive pull secret token, to look for leaks.
const SECRET_TOKEN: &str = "bWluaXNuby1zdXBlci1zZWNyZXQtdG9rZW4=";

fn valid() -> String {
    format!(
        r#"apiVersion: v1
baseDomain: example.test
metadata:
  name: sno
controlPlane:
  name: master
  replicas: 1
compute:
- name: worker
  replicas: 0
networking:
  networkType: OVNKubernetes
  machineNetwork:
  - cidr: 192.168.126.0/24
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
platform:
  none: {{}}
bootstrapInPlace:
  installationDisk: /dev/disk/by-id/virtio-sno-disk
pullSecret: '{{"auths":{{"quay.io":{{"auth":"{SECRET_TOKEN}","email":"a@b.c"}}}}}}'
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host
"#
    )
}

fn dual_stack() -> String {
    valid()
        .replace(
            "  - cidr: 192.168.126.0/24\n",
            "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
        )
        .replace(
            "    hostPrefix: 23\n",
            "    hostPrefix: 23\n  - cidr: fd01::/48\n    hostPrefix: 64\n",
        )
        .replace("  - 172.30.0.0/16\n", "  - 172.30.0.0/16\n  - fd02::/112\n")
}

/// A command with the fixture's environment cleared, so the caller's settings do not leak in.
fn cmd() -> Command {
    let mut c = Command::new(BIN);
    for var in [
        "MINISNO_FAULTS",
        "MINISNO_SCHEDULE",
        "MINISNO_REBOOT_DELAY_MIN",
        "MINISNO_LIVE_ISO",
        "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
    ] {
        c.env_remove(var);
    }
    c
}

fn create_in(dir: &Path) -> Output {
    cmd()
        .args(["--dir"])
        .arg(dir)
        .args(["create", "single-node-ignition-config"])
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn with_config(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("install-config.yaml"), text).unwrap();
    dir
}

/// Runs create on `text`, expects exit 3 with `expected` on stderr in the real error shape, and
/// nothing generated.
fn expect_config_error(text: &str, expected: &str) -> String {
    let dir = with_config(text);
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "stderr: {err}");
    assert!(err.contains(expected), "expected {expected:?} in {err}");
    assert!(
        err.contains("level=error msg=\"failed to fetch Single Node Bootstrap In Place Ignition Config: failed to load asset \\\"Install Config\\\": "),
        "{err}"
    );
    assert!(!err.contains(SECRET_TOKEN), "{err}");
    assert!(dir.path().join("install-config.yaml").exists());
    for out in [
        "bootstrap-in-place-for-live-iso.ign",
        "auth",
        "metadata.json",
    ] {
        assert!(!dir.path().join(out).exists(), "{out} written");
    }
    let log = std::fs::read_to_string(dir.path().join(".openshift_install.log")).unwrap();
    assert!(log.contains(expected), "{log}");
    err
}

#[test]
fn replicas_three() {
    expect_config_error(
        &valid().replace("  replicas: 1\n", "  replicas: 3\n"),
        "bootstrap in place requires a single ControlPlane replica",
    );
}

#[test]
fn replicas_omitted_means_three() {
    expect_config_error(
        &valid().replace("  replicas: 1\n", ""),
        "bootstrap in place requires a single ControlPlane replica",
    );
}

#[test]
fn no_bootstrap_in_place() {
    expect_config_error(
        &valid().replace(
            "bootstrapInPlace:\n  installationDisk: /dev/disk/by-id/virtio-sno-disk\n",
            "",
        ),
        "bootstrapInPlace is required when creating a single node bootstrap-in-place ignition",
    );
}

#[test]
fn empty_installation_disk() {
    expect_config_error(
        &valid().replace(
            "installationDisk: /dev/disk/by-id/virtio-sno-disk",
            "installationDisk: ''",
        ),
        "installationDisk must be set the target disk drive for the installation",
    );
}

#[test]
fn openshift_sdn() {
    expect_config_error(
        &valid().replace("OVNKubernetes", "OpenShiftSDN"),
        "networkType OpenShiftSDN is not supported, please use OVNKubernetes",
    );
}

#[test]
fn ipv6_first_machine_network() {
    expect_config_error(
        &dual_stack().replace(
            "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
            "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n",
        ),
        "IPv4 addresses must be listed before IPv6 addresses",
    );
}

#[test]
fn ipv6_first_cluster_network() {
    let err = expect_config_error(
        &dual_stack().replace(
            "  - cidr: 10.128.0.0/14\n    hostPrefix: 23\n  - cidr: fd01::/48\n    hostPrefix: 64\n",
            "  - cidr: fd01::/48\n    hostPrefix: 64\n  - cidr: 10.128.0.0/14\n    hostPrefix: 23\n",
        ),
        "IPv4 addresses must be listed before IPv6 addresses",
    );
    assert!(err.contains("networking.clusterNetwork"), "{err}");
}

#[test]
fn invalid_cidr() {
    expect_config_error(
        &valid().replace("192.168.126.0/24", "192.168.126.0"),
        "invalid CIDR address: 192.168.126.0",
    );
}

#[test]
fn bad_pull_secret_is_redacted() {
    let err = expect_config_error(
        &valid().replace("\"auths\"", "\"notauths\""),
        "pullSecret: Invalid value: \\\"<redacted>\\\": auths required",
    );
    assert!(!err.contains("notauths"), "{err}");
}

#[test]
fn other_checks() {
    expect_config_error(&valid().replace("  name: sno\n", ""), "metadata.name");
    expect_config_error(
        &valid().replace("baseDomain: example.test\n", ""),
        "baseDomain",
    );
    expect_config_error(
        &valid().replace("  none: {}\n", "  baremetal: {}\n"),
        "only platform none is supported for bootstrap-in-place",
    );
    expect_config_error(
        &valid().replace("  replicas: 0\n", "  replicas: 1\n"),
        "Total number of Control Plane and Compute nodes must be exactly 1",
    );
}

#[test]
fn yaml_syntax_error_reports_line() {
    let text = valid().replace("  name: sno\n", "  name: sno\n   bogus: [\n");
    expect_config_error(&text, "install-config.yaml: line 5, column");
}

#[test]
fn yaml_type_error_reports_line_and_column() {
    expect_config_error(
        &valid().replace("  replicas: 1\n", "  replicas: one\n"),
        "install-config.yaml: line 7, column 13",
    );
}

#[test]
fn missing_install_config_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = create_in(dir.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("install-config.yaml not found"));
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn pem_of(b64: &str) -> Vec<u8> {
    B64.decode(b64).unwrap()
}

/// Checks the full output set of a successful run.
fn check_outputs(dir: &Path, err: &str) {
    let files = [
        "bootstrap-in-place-for-live-iso.ign",
        "auth/kubeconfig",
        "auth/kubeadmin-password",
        "metadata.json",
        "worker.ign",
        ".openshift_install.log",
        ".openshift_install_state.json",
    ];
    for f in files {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
    assert!(!dir.join("master.ign").exists());
    assert!(!dir.join("install-config.yaml").exists());

    // kubeconfig
    let kc_text = std::fs::read_to_string(dir.join("auth/kubeconfig")).unwrap();
    let kc: Value = serde_saphyr::from_str(&kc_text).unwrap();
    assert_eq!(
        kc["clusters"][0]["cluster"]["server"],
        "https://api.sno.example.test:6443"
    );
    assert_eq!(kc["clusters"][0]["name"], "sno");
    assert_eq!(kc["current-context"], "admin");
    assert_eq!(kc["contexts"][0]["name"], "admin");
    assert_eq!(kc["users"][0]["name"], "admin");
    let ca_pem = pem_of(
        kc["clusters"][0]["cluster"]["certificate-authority-data"]
            .as_str()
            .unwrap(),
    );
    let cert_pem = pem_of(
        kc["users"][0]["user"]["client-certificate-data"]
            .as_str()
            .unwrap(),
    );
    let key_pem = pem_of(kc["users"][0]["user"]["client-key-data"].as_str().unwrap());
    let key_pem = String::from_utf8(key_pem).unwrap();
    assert!(key_pem.contains("PRIVATE KEY"));

    // the client certificate chains to the CA
    let (_, ca) = x509_parser::pem::parse_x509_pem(&ca_pem).unwrap();
    let ca = ca.parse_x509().unwrap();
    let (_, cert) = x509_parser::pem::parse_x509_pem(&cert_pem).unwrap();
    let cert = cert.parse_x509().unwrap();
    assert!(ca.is_ca());
    assert_eq!(
        ca.subject()
            .iter_common_name()
            .next()
            .unwrap()
            .as_str()
            .unwrap(),
        "kube-apiserver-lb-signer"
    );
    assert_eq!(cert.issuer(), ca.subject());
    assert_eq!(
        cert.subject()
            .iter_common_name()
            .next()
            .unwrap()
            .as_str()
            .unwrap(),
        "system:admin"
    );
    assert_eq!(
        cert.subject()
            .iter_organization()
            .next()
            .unwrap()
            .as_str()
            .unwrap(),
        "system:masters"
    );
    cert.verify_signature(Some(ca.public_key())).unwrap();

    // kubeadmin-password
    let pw = std::fs::read_to_string(dir.join("auth/kubeadmin-password")).unwrap();
    assert_eq!(pw.len(), 23, "{pw}");
    let groups: Vec<&str> = pw.split('-').collect();
    assert_eq!(groups.len(), 4);
    assert!(groups
        .iter()
        .all(|g| g.len() == 5 && g.bytes().all(|b| b.is_ascii_alphanumeric())));

    // metadata.json
    let md: Value =
        serde_json::from_slice(&std::fs::read(dir.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(md["clusterName"], "sno");
    let id = md["clusterID"].as_str().unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "4", "uuid v4: {id}");
    let infra = md["infraID"].as_str().unwrap();
    assert!(infra.starts_with("sno-") && infra.len() == 9, "{infra}");
    assert!(md["none"].is_object());

    // worker.ign
    let w: Value = serde_json::from_slice(&std::fs::read(dir.join("worker.ign")).unwrap()).unwrap();
    assert_eq!(w["ignition"]["version"], "3.2.0");
    assert_eq!(
        w["ignition"]["config"]["merge"][0]["source"],
        "https://api-int.sno.example.test:22623/config/worker"
    );
    assert_eq!(
        w["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"],
        format!(
            "data:text/plain;charset=utf-8;base64,{}",
            B64.encode(&ca_pem)
        )
    );

    // the live config
    let live: Value = serde_json::from_slice(
        &std::fs::read(dir.join("bootstrap-in-place-for-live-iso.ign")).unwrap(),
    )
    .unwrap();
    assert!(live["ignition"]["version"]
        .as_str()
        .unwrap()
        .starts_with("3."));

    // the state file
    let state: Value =
        serde_json::from_slice(&std::fs::read(dir.join(".openshift_install_state.json")).unwrap())
            .unwrap();
    let ic = &state["*installconfig.InstallConfig"];
    assert_eq!(ic["metadata"]["name"], "sno");
    assert!(ic.get("pullSecret").is_none());
    assert_eq!(
        state["*kubeconfig.AdminClient"]["File"]["Filename"],
        "auth/kubeconfig"
    );

    // logs
    let log = std::fs::read_to_string(dir.join(".openshift_install.log")).unwrap();
    assert!(log.contains("level=info msg=\"Consuming Install Config from target directory\""));
    assert!(log
        .lines()
        .all(|l| l.starts_with("time=\"") && l.contains(" level=")));
    assert!(err.contains("level=info msg=\"Single-Node-Ignition-Config created in: "));

    // no secret anywhere it could be read
    let state_text = std::fs::read_to_string(dir.join(".openshift_install_state.json")).unwrap();
    let ca_key_marker = "PRIVATE KEY";
    for (what, text) in [
        ("log", &log),
        ("state", &state_text),
        ("stderr", &err.to_string()),
    ] {
        assert!(!text.contains(SECRET_TOKEN), "pull secret in {what}");
        assert!(!text.contains(ca_key_marker), "private key in {what}");
        assert!(!text.contains(key_pem.trim()), "admin key in {what}");
        assert!(!text.contains(&B64.encode(&key_pem)), "admin key in {what}");
        assert!(!text.contains(pw.trim()), "password in {what}");
    }
}

#[test]
fn valid_ipv4() {
    let dir = with_config(&valid());
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    check_outputs(dir.path(), &err);
}

#[test]
fn valid_dual_stack_ipv4_first() {
    let dir = with_config(&dual_stack());
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    check_outputs(dir.path(), &err);
}

#[test]
fn unknown_field_warns() {
    let dir = with_config(&format!("{}someFutureField: 1\n", valid()));
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("level=warning") && err.contains("unknown field \\\"someFutureField\\\""),
        "{err}"
    );
}

#[test]
fn dir_after_subcommand_and_equals_form() {
    let a = with_config(&valid());
    let out = cmd()
        .args(["create", "single-node-ignition-config", "--dir"])
        .arg(a.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(a
        .path()
        .join("bootstrap-in-place-for-live-iso.ign")
        .exists());

    let b = with_config(&valid());
    let mut arg = std::ffi::OsString::from("--dir=");
    arg.push(b.path());
    let out = cmd()
        .arg(arg)
        .args([
            "--log-level",
            "debug",
            "create",
            "single-node-ignition-config",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(b.path().join("auth/kubeconfig").exists());
    assert!(stderr(&out).contains("level=debug"));
}

#[test]
fn default_dir_is_cwd() {
    let dir = with_config(&valid());
    let out = cmd()
        .current_dir(dir.path())
        .args(["create", "single-node-ignition-config"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("created in: . and auth"), "{err}");
    assert!(dir.path().join("auth/kubeconfig").exists());
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    [
        "bootstrap-in-place-for-live-iso.ign",
        "auth/kubeconfig",
        "auth/kubeadmin-password",
        "metadata.json",
        "worker.ign",
        ".openshift_install_state.json",
        "install-config.yaml",
    ]
    .iter()
    .map(|f| {
        (
            f.to_string(),
            std::fs::read(dir.join(f)).unwrap_or_default(),
        )
    })
    .collect()
}

#[test]
fn second_run_refuses_and_changes_nothing() {
    let dir = with_config(&valid());
    assert_eq!(create_in(dir.path()).status.code(), Some(0));
    std::fs::write(
        dir.path().join("install-config.yaml"),
        valid().replace("name: sno", "name: other"),
    )
    .unwrap();
    let before = snapshot(dir.path());
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "level=fatal msg=\"failed to fetch Single Node Bootstrap In Place Ignition Config: "
        ),
        "{err}"
    );
    assert!(err.contains("already holds generated assets"), "{err}");
    assert!(err.contains("fresh directory"), "{err}");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_single_leftover_output_is_enough_to_refuse() {
    let dir = with_config(&valid());
    std::fs::write(dir.path().join("metadata.json"), "{}").unwrap();
    let out = create_in(dir.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(dir.path().join("install-config.yaml").exists());
    assert!(!dir.path().join("auth").exists());
}

#[test]
fn bogus_fault_is_refused_with_the_valid_list() {
    let dir = with_config(&valid());
    let out = cmd()
        .env("MINISNO_FAULTS", "bogus")
        .arg("--dir")
        .arg(dir.path())
        .args(["create", "single-node-ignition-config"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("MINISNO_FAULTS"), "{err}");
    assert!(err.contains("bogus"), "{err}");
    assert!(
        err.contains("bootkube-fail") && err.contains("post-reboot-fail"),
        "{err}"
    );
    assert!(dir.path().join("install-config.yaml").exists());
    assert!(!dir
        .path()
        .join("bootstrap-in-place-for-live-iso.ign")
        .exists());
}

#[test]
fn valid_fault_is_recorded() {
    let dir = with_config(&valid());
    let out = cmd()
        .env("MINISNO_FAULTS", "install-fail")
        .env("MINISNO_SCHEDULE", "fast")
        .arg("--dir")
        .arg(dir.path())
        .args(["create", "single-node-ignition-config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let state: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(".openshift_install_state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["*minisno.Fixture"]["faults"][0], "install-fail");
    assert_eq!(state["*minisno.Fixture"]["schedule"], "fast");
}

#[test]
fn print_stream_json() {
    let dir = tempfile::tempdir().unwrap();
    let iso = dir.path().join("my live.iso");
    std::fs::write(&iso, b"not really an iso").unwrap();
    let out = cmd()
        .env("MINISNO_LIVE_ISO", &iso)
        .args(["coreos", "print-stream-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let arch = std::env::consts::ARCH;
    let disk = &v["architectures"][arch]["artifacts"]["metal"]["formats"]["iso"]["disk"];
    let expected_url = format!("file://{}", iso.to_str().unwrap().replace(' ', "%20"));
    assert_eq!(disk["location"], expected_url.as_str());
    use sha2::Digest;
    let sha = hex::encode(sha2::Sha256::digest(b"not really an iso"));
    assert_eq!(disk["sha256"], sha.as_str());
    assert!(v["metadata"]["last-modified"].is_string());
    assert_eq!(v["stream"], "minisno");
}

#[test]
fn print_stream_json_without_iso_fails() {
    let out = cmd()
        .env("MINISNO_LIVE_ISO", "/nonexistent/live.iso")
        .args(["coreos", "print-stream-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("level=fatal"));
    assert!(stderr(&out).contains("/nonexistent/live.iso"));
    assert!(out.stdout.is_empty());
}

#[test]
fn version() {
    let out = cmd().arg("version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("minisno-install ") && first.contains("minisno"),
        "{text}"
    );
    assert!(text.contains("built from commit "), "{text}");
    assert!(
        text.contains("release image quay.io/minisno/release:4.17.0-minisno"),
        "{text}"
    );
    let out = cmd()
        .env(
            "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
            "example.test/r:1",
        )
        .arg("version")
        .output()
        .unwrap();
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("release image example.test/r:1"));
}

#[test]
fn usage_error_exits_2() {
    let out = cmd().args(["create", "cluster"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = cmd().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
