//! What the binary's tests share: the binary, install-configs, and running it as the harness
//! does (with the fixture's environment cleared).

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_minisno-install");

/// A distinctive pull secret token, to look for leaks.
pub const SECRET_TOKEN: &str = "bWluaXNuby1zdXBlci1zZWNyZXQtdG9rZW4=";

pub fn valid() -> String {
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

pub fn dual_stack() -> String {
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

/// A real ECDSA P-256 public key in authorized-keys form (FIPS allows ECDSA and RSA only).
pub fn ecdsa_ssh_key() -> String {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut blob = Vec::new();
    for field in [
        b"ecdsa-sha2-nistp256".as_slice(),
        b"nistp256",
        key.public_key_raw(),
    ] {
        blob.extend_from_slice(&(field.len() as u32).to_be_bytes());
        blob.extend_from_slice(field);
    }
    format!("ecdsa-sha2-nistp256 {} test@host", B64.encode(blob))
}

/// A command with the fixture's environment cleared, so the caller's settings do not leak in.
pub fn cmd() -> Command {
    let mut c = Command::new(BIN);
    for var in [
        "MINISNO_FAULTS",
        "MINISNO_SCHEDULE",
        "MINISNO_REBOOT_DELAY_MIN",
        "MINISNO_VERSION",
        "MINISNO_LIVE_ISO",
        "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
        "OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION",
    ] {
        c.env_remove(var);
    }
    c
}

/// `create <target>` in `dir`, with extra environment.
pub fn create_with(dir: &Path, target: &str, env: &[(&str, &str)]) -> Output {
    let mut c = cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    c.arg("--dir")
        .arg(dir)
        .args(["create", target])
        .output()
        .unwrap()
}

pub fn create_in(dir: &Path) -> Output {
    create_with(dir, "single-node-ignition-config", &[])
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn with_config(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("install-config.yaml"), text).unwrap();
    dir
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The decoded contents of the file at `path` in an Ignition config (`None` when absent).
pub fn ignition_file(cfg: &Value, path: &str) -> Option<String> {
    let f = cfg["storage"]["files"]
        .as_array()?
        .iter()
        .find(|f| f["path"] == path)?;
    let src = f["contents"]["source"].as_str()?;
    let b64 = src.strip_prefix("data:;base64,")?;
    String::from_utf8(B64.decode(b64).ok()?).ok()
}

/// The installed system's config inside a live config.
pub fn installed_config(live: &Value) -> Value {
    serde_json::from_str(&ignition_file(live, "/opt/openshift/minisno/master.ign.in").unwrap())
        .unwrap()
}

/// The simulated control plane's configuration inside the installed system's config.
pub fn apiserver_config(live: &Value) -> Value {
    let master = installed_config(live);
    serde_json::from_str(&ignition_file(&master, "/etc/kubernetes/minisno/apiserver.json").unwrap())
        .unwrap()
}

/// Whether the host can be a FIPS installer host (this one normally is not).
pub fn host_in_fips_mode() -> bool {
    std::fs::read_to_string("/proc/sys/crypto/fips_enabled").is_ok_and(|s| s.trim() == "1")
}
