//! `create manifests`, then `create single-node-ignition-config` in the same directory: the
//! config saved in the state, a user's master MachineConfig carried into the installed
//! system's config, and the manifests consumed.

mod common;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use common::*;

/// The MachineConfig a harness adds to give the installed node its DNS names.
fn hosts_machine_config(hosts: &str) -> String {
    format!(
        r#"apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: master
  name: 99-sno-harness-dns-master
spec:
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
      - path: /etc/hosts
        mode: 420
        overwrite: true
        contents:
          source: data:text/plain;charset=utf-8;base64,{}
"#,
        B64.encode(hosts)
    )
}

const HOSTS: &str =
    "127.0.0.1 localhost\n10.0.2.15 api.sno.example.test api-int.sno.example.test\n";

#[test]
fn manifests_then_single_node_config_carries_a_master_machine_config() {
    let dir = with_config(&valid());
    let d = dir.path();
    let out = create_with(d, "manifests", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("level=info msg=Consuming Install Config from target directory\n"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "level=info msg=Manifests created in: {0}/manifests and {0}/openshift\n",
            d.display()
        )),
        "{err}"
    );
    assert!(!d.join("install-config.yaml").exists());
    let cluster_config = std::fs::read_to_string(d.join("manifests/cluster-config.yaml")).unwrap();
    assert!(
        cluster_config.contains("name: cluster-config-v1")
            && cluster_config.contains("installationDisk: /dev/disk/by-id/virtio-sno-disk"),
        "{cluster_config}"
    );
    assert!(!cluster_config.contains(SECRET_TOKEN));
    assert!(d
        .join("openshift/99_openshift-machineconfig_99-master-ssh.yaml")
        .exists());
    let state = std::fs::read_to_string(d.join(".openshift_install_state.json")).unwrap();
    assert!(
        state.contains("*installconfig.InstallConfig") && !state.contains(SECRET_TOKEN),
        "{state}"
    );

    std::fs::write(
        d.join("openshift/99-sno-harness-dns-master.yaml"),
        hosts_machine_config(HOSTS),
    )
    .unwrap();
    let worker_only = hosts_machine_config("ignored\n")
        .replace("role: master", "role: worker")
        .replace("/etc/hosts", "/etc/worker-only");
    std::fs::write(d.join("openshift/99-worker-only.yaml"), worker_only).unwrap();

    let out = create_in(d);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let live = read_json(&d.join("bootstrap-in-place-for-live-iso.ign"));
    let installed = installed_config(&live);
    let hosts = installed["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/etc/hosts")
        .expect("/etc/hosts in the installed config")
        .clone();
    assert_eq!(hosts["overwrite"], true);
    assert_eq!(hosts["mode"], 420);
    let src = hosts["contents"]["source"].as_str().unwrap();
    let data = src
        .strip_prefix("data:text/plain;charset=utf-8;base64,")
        .unwrap();
    assert_eq!(String::from_utf8(B64.decode(data).unwrap()).unwrap(), HOSTS);
    assert!(ignition_file(&installed, "/etc/worker-only").is_none());
    // The pull secret came back from its manifest; the live system gets it.
    assert!(ignition_file(&live, "/root/.docker/config.json")
        .unwrap()
        .contains(SECRET_TOKEN));
    // The manifests are consumed, as the real tool purges them.
    for line in [
        "Consuming Common Manifests from target directory",
        "Consuming Openshift Manifests from target directory",
        "Consuming Master Machines from target directory",
    ] {
        assert!(
            err.contains(&format!("level=info msg={line}\n")),
            "{line}: {err}"
        );
    }
    assert!(!d.join("manifests").exists() && !d.join("openshift").exists());
    for f in [
        "auth/kubeconfig",
        "auth/kubeadmin-password",
        "worker.ign",
        "metadata.json",
    ] {
        assert!(d.join(f).exists(), "{f}");
    }
}

#[test]
fn bip_checks_run_from_the_saved_state() {
    let dir = with_config(&valid().replace("  replicas: 1\n", "  replicas: 3\n"));
    let d = dir.path();
    assert_eq!(create_with(d, "manifests", &[]).status.code(), Some(0));
    let out = create_in(d);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().last().unwrap(), "level=fatal msg=failed to fetch Single node bootstrap In Place Ignition Config: failed to generate asset \"Single node bootstrap In Place Ignition Config\": controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica");
    // The manifests stay: nothing was purged.
    assert!(d.join("manifests/cluster-config.yaml").exists());
}

#[test]
fn manifests_refuse_a_bad_install_config_like_the_real_command() {
    let dir = with_config(&valid().replace("OVNKubernetes", "OpenShiftSDN"));
    let out = create_with(dir.path(), "manifests", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.trim_end(), "level=error msg=failed to fetch Master Machines: failed to load asset \"Install Config\": failed to create install config: invalid \"install-config.yaml\" file: networking.networkType: Invalid value: \"OpenShiftSDN\": networkType OpenShiftSDN is not supported, please use OVNKubernetes");
    assert!(dir.path().join("install-config.yaml").exists());
    assert!(!dir.path().join("manifests").exists());
}

#[test]
fn the_proxy_manifest_follows_the_trust_bundle_rule() {
    let bundle = "additionalTrustBundle: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\n";
    for (extra, trusted) in [
        (bundle.to_string(), "name: \"\""),
        (
            format!("{bundle}additionalTrustBundlePolicy: Always\n"),
            "name: user-ca-bundle",
        ),
        (
            format!("{bundle}proxy:\n  httpsProxy: http://proxy.example.test:3128\n"),
            "name: user-ca-bundle",
        ),
    ] {
        let dir = with_config(&format!("{}{extra}", valid()));
        let out = create_with(dir.path(), "manifests", &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let proxy =
            std::fs::read_to_string(dir.path().join("manifests/cluster-proxy-01-config.yaml"))
                .unwrap();
        assert!(proxy.contains(trusted), "{extra}: {proxy}");
        let ca = std::fs::read_to_string(dir.path().join("manifests/user-ca-bundle-config.yaml"))
            .unwrap();
        assert!(ca.contains("ca-bundle.crt"), "{ca}");
    }
}

#[test]
fn a_used_directory_is_refused() {
    let dir = with_config(&valid());
    assert_eq!(
        create_with(dir.path(), "manifests", &[]).status.code(),
        Some(0)
    );
    std::fs::write(dir.path().join("install-config.yaml"), valid()).unwrap();
    let out = create_with(dir.path(), "manifests", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("already holds generated assets"),
        "{}",
        stderr(&out)
    );
}
