//! minisno's OpenShift half, end to end under QEMU: minisno-install generates the assets from an
//! install-config, the real coreos-installer embeds the live Ignition, and the VM goes through
//! bootkube, install-to-disk, the reboot and the disk boot to a converged API, reached through a
//! 127.0.0.1 port forward with the generated admin kubeconfig.
//!
//! As on a real node, the installed system's kubelet registers only once api-int resolves on
//! the node, and minisno provides no cluster names itself: this test gives them, as a harness
//! does, in a master MachineConfig that writes /etc/hosts, added after `create manifests`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use sno_e2e::*;
use sno_harness::assets::dns;
use sno_harness::guest::ssh::SshKeyPair;
use sno_harness::health::{judge, ApiEndpoint, ClusterApi};
use sno_harness::hw::{Bus, Firmware, Sector};

const GIB: u64 = 1024 * 1024 * 1024;

fn install_config(key: &SshKeyPair, disk: &str) -> String {
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
  - cidr: 10.0.2.0/24
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
platform:
  none: {{}}
bootstrapInPlace:
  installationDisk: {disk}
pullSecret: '{{"auths":{{"registry.example.test":{{"auth":"bWluaXNubzpzZWNyZXQ="}}}}}}'
sshKey: '{}'
"#,
        key.public_openssh
    )
}

/// The node's address under QEMU user networking, which its DHCP lease always gives.
const NODE_IP: &str = "10.0.2.15";

/// How the node gets the cluster's names, as a run on the user network gives them: a resolver
/// on the node (assets::dns), never /etc/hosts, which pods do not read.
fn node_resolver() -> dns::Provision {
    dns::Provision::NodeResolver(dns::Records {
        address: NODE_IP.parse().unwrap(),
        cluster_domain: "sno.example.test".into(),
        names: sno_harness::hw::nat::cluster_names("sno", "example.test"),
    })
}

/// Runs minisno-install in `dir` with the fast schedule: `create manifests`, the DNS
/// MachineConfig, then `create single-node-ignition-config`.
fn create_assets(dir: &Path, config: &str) {
    std::fs::write(dir.join("install-config.yaml"), config).unwrap();
    let installer = fixture()
        .installer
        .clone()
        .expect("the fixture ships minisno-install");
    for target in ["manifests", "single-node-ignition-config"] {
        if target == "single-node-ignition-config" {
            dns::write_machine_config(dir, &node_resolver()).unwrap();
        }
        run(Command::new(&installer)
            .args(["--dir"])
            .arg(dir)
            .args(["create", target])
            .env("MINISNO_SCHEDULE", "fast"));
    }
}

fn live_iso_with(dir: &Path, ign: &Path) -> std::path::PathBuf {
    // The live system's names too, as a run gives them (its bootkube reaches the API by name).
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ign).unwrap()).unwrap();
    dns::add_to_live_ignition(&mut config, &node_resolver()).unwrap();
    let ign = dir.join("live.ign");
    std::fs::write(&ign, config.to_string()).unwrap();
    let iso = dir.join("live.iso");
    run(Command::new("coreos-installer")
        .args(["iso", "ignition", "embed", "-f", "-i"])
        .arg(&ign)
        .arg("-o")
        .arg(&iso)
        .arg(&fixture().live_iso));
    run(Command::new("coreos-installer")
        .args(["iso", "kargs", "modify", "-a", "console=ttyS0,115200n8"])
        .arg(&iso));
    iso
}

/// Polls `check` once a second until it is ok; fails with its last detail.
async fn until_ok<F, Fut>(what: &str, timeout: Duration, mut check: F) -> String
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<judge::Judgement, String>>,
{
    let start = Instant::now();
    let mut last = String::from("never checked");
    while start.elapsed() < timeout {
        match check().await {
            Ok(j) if j.ok => return j.detail,
            Ok(j) => last = j.detail,
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("{what} not reached within {timeout:?}; last: {last}");
}

#[test]
fn bootstrap_in_place_converges_on_seabios_virtio() {
    let t0 = Instant::now();
    let key = SshKeyPair::generate("sno-e2e").unwrap();
    let work = tempfile::tempdir().unwrap();
    let assets = work.path().join("assets");
    std::fs::create_dir(&assets).unwrap();
    create_assets(&assets, &install_config(&key, "/dev/vda"));
    let iso = live_iso_with(
        work.path(),
        &assets.join("bootstrap-in-place-for-live-iso.ign"),
    );
    step(t0, "assets and ISO ready");

    let disks = [TestDisk {
        bus: Bus::Virtio,
        sector: Sector::S512,
        serial: "sno-install".into(),
        size_bytes: 8 * GIB,
        bootindex: Some(1),
    }];
    let m = Machine::start_with_ports("bip", Firmware::Bios, &iso, &disks, &key, &[6443]);
    let t_boot = Instant::now();
    let live = m.wait_for_ssh();
    step(t0, "live system up");
    succeed(&live, "test -e /run/ostree-live");
    drop(live);

    let mark = m.console.line_count();
    m.wait_for_console_after(mark, "minisno: disk system up");
    step(
        t0,
        "installed system up after install-to-disk and the reboot",
    );
    let disk = m.wait_for_ssh();
    let out = disk.exec("test -e /run/ostree-live").unwrap();
    assert_ne!(out.status, 0, "the installed system is not live");

    let endpoint = ApiEndpoint {
        kubeconfig: assets.join("auth/kubeconfig"),
        server: Some(format!("https://127.0.0.1:{}", m.host_port(6443))),
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let api = ClusterApi::connect(&endpoint).await.unwrap();
        let limit = Duration::from_secs(240);
        until_ok("readyz", limit, || async {
            let ok = api.readyz().await.map_err(|e| e.to_string())?;
            Ok(judge::Judgement {
                ok,
                detail: format!("readyz ok={ok}"),
            })
        })
        .await;
        step(t0, "API ready");
        until_ok("bootstrap configmap", limit, || async {
            let s = api.bootstrap_status().await.map_err(|e| e.to_string())?;
            Ok(judge::Judgement {
                ok: s.as_deref() == Some("complete"),
                detail: format!("{s:?}"),
            })
        })
        .await;
        until_ok("node ready", limit, || async {
            Ok(judge::single_node_ready(
                &api.nodes().await.map_err(|e| e.to_string())?,
            ))
        })
        .await;
        until_ok("etcd bootstrap member removed", limit, || async {
            Ok(judge::etcd_bootstrap_member_removed(
                &api.etcd().await.map_err(|e| e.to_string())?,
            ))
        })
        .await;
        until_ok("cluster version", limit, || async {
            Ok(judge::cluster_version(
                &api.cluster_version().await.map_err(|e| e.to_string())?,
            ))
        })
        .await;
        until_ok("operators available, not progressing, not degraded", limit, || async {
            let cos = api.cluster_operators().await.map_err(|e| e.to_string())?;
            Ok(judge::cluster_operators(&cos, SystemTime::now(), Duration::ZERO))
        })
        .await;
        step(
            t0,
            &format!(
                "MEASURE live boot to a converged cluster (every operator settled, ClusterVersion Available): {:.1} s after the VM started",
                t_boot.elapsed().as_secs_f64()
            ),
        );
        // The harness's cluster-ready asks for 30 s of that stability on top.
        until_ok("operators settled for 30 s", limit, || async {
            let cos = api.cluster_operators().await.map_err(|e| e.to_string())?;
            Ok(judge::cluster_operators(
                &cos,
                SystemTime::now(),
                Duration::from_secs(30),
            ))
        })
        .await;
    });
    step(
        t0,
        &format!(
            "MEASURE cluster-ready (operators settled for 30 s): {:.1} s after the VM started",
            t_boot.elapsed().as_secs_f64()
        ),
    );

    // Bootstrap cleanup: the post-reboot unit ran once and disabled itself.
    let cleaned = m.ssh.wait_for_ssh(BOOT_TIMEOUT).unwrap();
    sno_harness::util::wait::wait_until_succeeds("bootstrap cleanup", Duration::from_secs(120), Duration::from_secs(1), || {
        cleaned.succeed("test ! -e /opt/openshift && test ! -e /etc/kubernetes/bootstrap-secrets && systemctl is-enabled bootkube.service | grep -qx disabled")
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // The names through the node's own resolver (the MachineConfig's dnsmasq), as pods ask.
    let answer = succeed(
        &cleaned,
        "getent ahostsv4 anything.apps.sno.example.test | head -n 1",
    );
    assert!(
        answer.starts_with(NODE_IP),
        "*.apps does not resolve to the node through its resolver: {answer}"
    );

    let journal = succeed(
        &cleaned,
        "sudo journalctl -b -o cat -t bootstrap-in-place-post-reboot.sh",
    );
    let apiserver = succeed(&cleaned, "sudo journalctl -b -o cat -u kubelet.service");
    assert!(
        apiserver.contains("api-int.sno.example.test resolves to 10.0.2.15 on this node")
            || apiserver.contains("node registered"),
        "the apiserver's journal shows no registration:\n{apiserver}"
    );
    for line in [
        "Running bootkube bootstrap-in-place post reboot",
        "Creating bootstrap configmap ...",
        "node is ready",
        "Waiting for cvo",
    ] {
        assert!(
            journal.contains(line),
            "post-reboot journal lacks {line:?}:\n{journal}"
        );
    }
}
