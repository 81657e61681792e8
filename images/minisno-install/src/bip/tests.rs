//! Tests of the payload: units, scripts, faults and options.

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
        master_files: &[],
        master_units: &[],
        options,
        ipv6_primary: false,
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
        let value = f.values.first().copied().unwrap_or("ingress");
        let text = f
            .form()
            .replace(&format!("<{}>", f.parameter.unwrap_or("-")), value);
        let fault = Fault::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(fault.name(), text);
    }
    let e = Fault::parse("operator-degraded").unwrap_err().to_string();
    assert!(e.contains("valid faults: bootkube-fail, "), "{e}");
}

#[test]
fn the_fixture_knows_no_fault_the_shared_list_lacks() {
    let listed: Vec<&str> = sno_fixture_faults::FAULTS.iter().map(|f| f.name).collect();
    for (name, _) in options::PLAIN_FAULTS {
        assert!(listed.contains(name), "{name} is not in the shared list");
    }
    // the plain ones, the two that take an operator's name and post-reboot-hang: the whole list
    assert_eq!(options::PLAIN_FAULTS.len() + 3, listed.len());
}

#[test]
fn every_line_of_ssh_key_is_an_authorized_key_on_both_systems() {
    let o = FixtureOptions::default();
    let keys =
        "ecdsa-sha2-nistp256 AAAAE2 run\nssh-ed25519 AAAAC3 me@laptop\n\nssh-rsa AAAAB3 ci\n";
    let cfg = live_ignition(&BipInputs {
        ssh_key: keys,
        ..inputs(&o, "/dev/vda")
    })
    .unwrap();
    let master: Value =
        serde_json::from_str(&file_contents(&cfg, "/opt/openshift/minisno/master.ign.in")).unwrap();
    let want = json!([{"name": "core", "sshAuthorizedKeys": [
        "ecdsa-sha2-nistp256 AAAAE2 run", "ssh-ed25519 AAAAC3 me@laptop", "ssh-rsa AAAAB3 ci"
    ]}]);
    assert_eq!(cfg["passwd"]["users"], want, "the live system");
    assert_eq!(master["passwd"]["users"], want, "the installed system");
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
    assert_eq!(
        unit_names(&master),
        [
            "kubelet.service",
            "bootkube.service",
            "node-valid-hostname.service",
            "kubelet-dependencies.target"
        ]
    );
    let apiserver: Value = serde_json::from_str(&file_contents(
        &master,
        "/etc/kubernetes/minisno/apiserver.json",
    ))
    .unwrap();
    assert_eq!(apiserver["schedule"]["readyz_after_s"], 30);
    assert_eq!(apiserver["faults"], json!([]));
    // The node's name is the hostname the kubelet finds when it starts, never one built in.
    assert_eq!(apiserver.get("node_name"), None);
    assert!(file_contents(&master, "/usr/local/bin/mco-hostname")
        .contains("hostnamectl set-hostname --static --transient"));
}

#[test]
fn the_kubelet_waits_for_a_hostname_at_most_five_minutes_and_starts_without_one() {
    let nvh = units::NODE_VALID_HOSTNAME_UNIT;
    for line in [
        "Before=kubelet-dependencies.target",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "ExecStart=/usr/local/bin/mco-hostname --wait",
        "TimeoutSec=300",
        "WantedBy=kubelet-dependencies.target",
    ] {
        assert!(
            nvh.contains(line),
            "node-valid-hostname.service lacks {line}"
        );
    }
    // Wanted, never required: when the wait times out the kubelet still starts.
    assert!(!nvh.contains("RequiredBy"), "{nvh}");
    let target = units::KUBELET_DEPENDENCIES_TARGET;
    assert!(target.contains("Requires=basic.target network-online.target"));
    assert!(target.contains("Wants=NetworkManager-wait-online.service"));
    assert!(!target.contains("node-valid-hostname"), "{target}");
    assert!(DISK_KUBELET_UNIT.contains("Requires=kubelet-dependencies.target"));
    assert!(DISK_KUBELET_UNIT.contains("After=kubelet-dependencies.target"));
    assert!(!DISK_KUBELET_UNIT.contains("node-valid-hostname"));
}

#[test]
fn unit_ordering_and_conditions_are_the_real_ones() {
    let units: std::collections::HashMap<_, _> = units::LIVE_UNITS.iter().copied().collect();
    let bootkube = units["bootkube.service"];
    for line in [
        "ConditionPathExists=!/opt/openshift/.bootkube.done",
        "Restart=on-failure",
        "WorkingDirectory=/opt/openshift",
        "RestartSec=5s",
    ] {
        assert!(bootkube.contains(line), "bootkube.service lacks {line}");
    }
    // No start limit of its own: one start per 5 s never reaches systemd's default limit.
    assert!(!bootkube.contains("StartLimit"), "{bootkube}");
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
    assert!(script.contains("shutdown -r +1 \"Bootstrap completed, server is going to reboot.\""));
}

#[test]
fn copy_network_missing_runs_coreos_installer_without_dash_n() {
    // Without the fault: `-n` (--copy-network), as openshift/installer's install-to-disk.sh
    // template has it, so that the live system's keyfiles reach the installed system.
    let o = FixtureOptions::default();
    let script = file_contents(
        &live_ignition(&inputs(&o, "/dev/vda")).unwrap(),
        "/usr/local/bin/install-to-disk.sh",
    );
    assert!(script.contains(
        "    coreos-installer install -n -i /opt/openshift/master.ign $(minisno_image_source /dev/vda) /dev/vda\n"
    ));

    let o = FixtureOptions::parse(Some("copy-network-missing"), Some("fast"), None).unwrap();
    assert_eq!(o.faults, vec![Fault::CopyNetworkMissing]);
    let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
    let script = file_contents(&cfg, "/usr/local/bin/install-to-disk.sh");
    assert!(
        script.contains(
            "    coreos-installer install -i /opt/openshift/master.ign $(minisno_image_source /dev/vda) /dev/vda\n"
        ),
        "{script}"
    );
    // No -n and no --copy-network anywhere on the coreos-installer line; the rest as always.
    let line = script
        .lines()
        .find(|l| l.trim_start().starts_with("coreos-installer install"))
        .unwrap();
    assert!(
        !line
            .split_whitespace()
            .any(|w| w == "-n" || w == "--copy-network"),
        "{line}"
    );
    assert!(script.contains("touch coreos-installer.done"));
    assert!(!script.contains("{{"));
    let record: Value =
        serde_json::from_str(&file_contents(&cfg, "/etc/minisno/fixture.json")).unwrap();
    assert_eq!(record["faults"], json!(["copy-network-missing"]));
}

#[test]
fn every_script_is_valid_bash() {
    for faults in [
        "",
        "bootkube-fail",
        "bootkube-hang,install-fail,no-reboot,post-reboot-fail",
        "bootkube-flaky,oom-kill,no-dns,install-reset",
        "gather-hang,bootkube-fail",
        "journal-cut",
        "copy-network-missing,install-fail",
        "post-reboot-hang:static-pod,oom-kill",
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
        file_contents(&cfg, "/usr/local/bin/minisno-image-source.sh").contains("metal-truncated")
    );
    assert!(file_contents(&cfg, "/usr/local/bin/install-to-disk.sh").contains("shutdown -c"));
    let master: Value =
        serde_json::from_str(&file_contents(&cfg, "/opt/openshift/minisno/master.ign.in")).unwrap();
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

/// Runs the rendered bootkube.sh in a scratch /opt/openshift stand-in, `runs` times (as the
/// unit's restarts would), and gives each run's exit status and output.
fn run_bootkube(faults: &str, runs: usize) -> Vec<(bool, String)> {
    let o = FixtureOptions::parse(Some(faults), Some("fast"), None).unwrap();
    let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // The script's absolute paths, moved under the scratch directory.
    let script = file_contents(&cfg, "/usr/local/bin/bootkube.sh")
        .replace("/opt/openshift", &root.join("opt").display().to_string())
        .replace(". /usr/local/bin/bootstrap-service-record.sh", ":")
        .replace("STAGE_DELAY=0.1", "STAGE_DELAY=0")
        .replace("record_service_stage_start \"$marker\"", ":")
        .replace("record_service_stage_success", ":");
    std::fs::create_dir_all(root.join("opt/minisno")).unwrap();
    std::fs::write(
        root.join("opt/minisno/master.ign.in"),
        "{\"storage\":{\"files\":[]}}",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("log/openshift")).unwrap();
    // bip-gather's installer-gather.sh, its paths moved the same way.
    let gather = root.join("installer-gather.sh");
    let gather_script = file_contents(&cfg, "/usr/local/bin/installer-gather.sh")
        .replace("/opt/openshift", &root.join("opt").display().to_string())
        .replace("/var/log", &root.join("log").display().to_string())
        .replace(
            "/tmp/artifacts-",
            &root.join("artifacts-").display().to_string(),
        );
    std::fs::write(&gather, gather_script).unwrap();
    let script = script
        .replace("/var/log", &root.join("log").display().to_string())
        .replace(
            "/usr/local/bin/installer-gather.sh",
            &format!("bash {}", gather.display()),
        );
    (0..runs)
        .map(|_| {
            let out = std::process::Command::new("bash")
                .args(["-c", &script])
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.success(), text)
        })
        .collect()
}

/// The BiP scripts parse JSON with jq; ci/install-host-deps.sh installs it. A missing jq is a
/// broken host, not a reason to pass.
fn require_jq() {
    let ok = std::process::Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "jq is not installed: run ci/install-host-deps.sh");
}

#[test]
fn bootkube_flaky_fails_twice_then_resumes_from_its_markers() {
    require_jq();
    let runs = run_bootkube("bootkube-flaky", 3);
    for (ok, out) in &runs[..2] {
        assert!(!ok, "{out}");
        assert!(
            out.contains(
                "Error: error while checking pod status: timed out waiting for the condition"
            ),
            "{out}"
        );
    }
    let (ok, out) = &runs[2];
    assert!(ok, "{out}");
    // The stages before cluster-bootstrap were done by the first run and are skipped now.
    assert!(!out.contains("Rendering api manifests..."), "{out}");
    assert!(out.contains("Starting cluster-bootstrap..."), "{out}");
    assert!(
        out.trim_end().ends_with("bootkube.service complete"),
        "{out}"
    );
    assert!(
        runs[0].1.contains("Rendering api manifests..."),
        "{}",
        runs[0].1
    );
}

#[test]
fn bootkube_fail_keeps_failing() {
    require_jq();
    for (ok, out) in run_bootkube("bootkube-fail", 4) {
        assert!(!ok, "{out}");
        assert!(out.contains("timed out waiting for the condition"), "{out}");
    }
}

#[test]
fn master_machine_config_files_reach_the_installed_system() {
    let o = FixtureOptions::default();
    let hosts = json!({"path": "/etc/hosts", "mode": 420, "overwrite": true,
        "contents": {"source": "data:,10.0.2.15%20api-int.sno.example.test%0A"}});
    let replaced_ca = json!({"path": "/etc/kubernetes/minisno/ca.crt", "mode": 420, "overwrite": true,
        "contents": {"source": "data:,mine"}});
    let extra = [hosts.clone(), replaced_ca.clone()];
    let mut i = inputs(&o, "/dev/vda");
    i.master_files = &extra;
    let dnsmasq = json!({"name": "dnsmasq.service", "enabled": true, "contents": "[Service]\n"});
    let kubelet =
        json!({"name": "kubelet.service", "contents": "[Service]\nExecStart=/bin/mine\n"});
    let units = [dnsmasq.clone(), kubelet.clone()];
    i.master_units = &units;
    let master = master_ignition(&i);
    let all_units = master["systemd"]["units"].as_array().unwrap();
    assert!(all_units.contains(&dnsmasq));
    let kubelets: Vec<&Value> = all_units
        .iter()
        .filter(|u| u["name"] == "kubelet.service")
        .collect();
    assert_eq!(
        kubelets,
        [&kubelet],
        "a MachineConfig's unit replaces the fixture's own"
    );
    let files = master["storage"]["files"].as_array().unwrap();
    assert!(files.contains(&hosts));
    let cas: Vec<&Value> = files
        .iter()
        .filter(|f| f["path"] == "/etc/kubernetes/minisno/ca.crt")
        .collect();
    assert_eq!(cas, [&replaced_ca]);
    minisno_ignition::parse(&master.to_string()).unwrap();
}

#[test]
fn the_release_version_reaches_the_apiserver() {
    let o = FixtureOptions::default()
        .with_version(Some("4.14.3"))
        .unwrap();
    let master = master_ignition(&inputs(&o, "/dev/vda"));
    let apiserver: Value = serde_json::from_str(&file_contents(
        &master,
        "/etc/kubernetes/minisno/apiserver.json",
    ))
    .unwrap();
    assert_eq!(apiserver["release"]["version"], "4.14.3");
    assert_eq!(
        apiserver["release"]["image"],
        "quay.io/minisno/release:4.14.3"
    );
    let o = FixtureOptions::default().with_version(None).unwrap();
    assert_eq!(o.version, "4.17.0-minisno");
    let e = FixtureOptions::default()
        .with_version(Some("fourteen"))
        .unwrap_err();
    assert_eq!(e.to_string(), "MINISNO_VERSION must be a release version such as 4.14.3 (major.minor.patch, optionally -suffix), not \"fourteen\"");
}

#[test]
fn an_ipv6_primary_cluster_binds_the_api_on_every_ipv6_address() {
    let o = FixtureOptions::default();
    let listen = |ipv6_primary: bool| {
        let i = BipInputs {
            ipv6_primary,
            ..inputs(&o, "/dev/vda")
        };
        let apiserver: Value = serde_json::from_str(&file_contents(
            &master_ignition(&i),
            "/etc/kubernetes/minisno/apiserver.json",
        ))
        .unwrap();
        apiserver["listen"].clone()
    };
    assert_eq!(listen(false), "0.0.0.0:6443");
    assert_eq!(listen(true), "[::]:6443");
}

#[test]
fn no_dns_is_accepted_and_left_to_the_harness() {
    let o = FixtureOptions::parse(Some("no-dns"), None, None).unwrap();
    assert_eq!(o.faults, [Fault::NoDns]);
    let master = master_ignition(&inputs(&o, "/dev/vda"));
    let apiserver: Value = serde_json::from_str(&file_contents(
        &master,
        "/etc/kubernetes/minisno/apiserver.json",
    ))
    .unwrap();
    assert_eq!(apiserver["faults"], json!([]));
}

#[test]
fn gather_hang_makes_a_fifo_at_the_start_of_bootkube_beside_bootkube_fail() {
    let o = FixtureOptions::parse(Some("gather-hang,bootkube-fail"), Some("fast"), None).unwrap();
    assert_eq!(o.faults, [Fault::GatherHang, Fault::BootkubeFail]);
    assert_eq!(Fault::GatherHang.name(), "gather-hang");
    let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
    let script = file_contents(&cfg, "/usr/local/bin/bootkube.sh");
    let fifo = script
        .find("mkfifo /var/log/openshift/minisno-stalled.json")
        .expect("the FIFO is made");
    assert!(
        fifo < script.find("stage openshift-manifests").unwrap(),
        "at the start"
    );
    assert!(
        script.contains("timed out waiting for the condition"),
        "bootkube-fail still acts"
    );
    // without the fault, no FIFO
    let plain = live_ignition(&inputs(&FixtureOptions::default(), "/dev/vda")).unwrap();
    assert!(!file_contents(&plain, "/usr/local/bin/bootkube.sh").contains("mkfifo"));
}

#[test]
fn gather_hang_survives_restarts_and_bip_gather_archives_the_fifo() {
    require_jq();
    // bootkube-fail restarts the unit: the FIFO, already there, must not fail the next run
    // before cluster-bootstrap does
    for (ok, out) in run_bootkube("gather-hang,bootkube-fail", 2) {
        assert!(!ok, "{out}");
        assert!(out.contains("timed out waiting for the condition"), "{out}");
    }
    // alone, the install goes through bip-gather's tar (GNU tar does not read a FIFO)
    let runs = run_bootkube("gather-hang", 1);
    let (ok, out) = &runs[0];
    assert!(ok, "{out}");
    assert!(
        out.trim_end().ends_with("bootkube.service complete"),
        "{out}"
    );
}

/// A stand-in for curl that answers the post-reboot script as a settled minisno API server
/// would: the API up, the bootstrap configmap there, no lease left, ClusterVersion Available,
/// the master node and the kube-apiserver-operator pod Ready, console not Available.
const FAKE_CURL: &str = r#"#!/bin/bash
m=GET; prev=; for a in "$@"; do [ "$prev" = -X ] && m=$a; prev=$a; done
path=${!#}; path=${path#https://localhost:6443}
ready='"status":{"conditions":[{"type":"Ready","status":"True"}]}'
case "$m $path" in
  "GET /readyz") echo ok ;;
  "GET /apis/certificates.k8s.io/v1/certificatesigningrequests") echo '{"items":[]}' ;;
  "GET /api/v1/namespaces/kube-system/configmaps/bootstrap") echo '{}' ;;
  "GET /apis/config.openshift.io/v1/clusterversions/version") echo '{"status":{"conditions":[{"type":"Available","status":"True"}]}}' ;;
  "GET /api/v1/nodes") echo "{\"items\":[{\"metadata\":{\"labels\":{\"node-role.kubernetes.io/master\":\"\"}},$ready}]}" ;;
  "GET /api/v1/namespaces/openshift-kube-apiserver-operator/pods") echo "{\"items\":[{\"metadata\":{\"labels\":{\"app\":\"kube-apiserver-operator\"}},$ready}]}" ;;
  "GET /apis/config.openshift.io/v1/clusteroperators") echo '{"items":[{"metadata":{"name":"console"},"status":{"conditions":[{"type":"Available","status":"False","message":"route not reachable"}]}}]}' ;;
  *) echo '{"kind":"Status","code":404}'; exit 22 ;;
esac
"#;

/// Runs the rendered post-reboot script with `faults` under a scratch root, with the fake curl
/// and a systemctl that only logs, to its end or, with `stop_at`, until it printed that line
/// three times (at most a minute either way): `(finished, output, systemctl calls)`.
fn run_post_reboot(faults: &str, stop_at: Option<&str>) -> (bool, String, String) {
    use std::io::BufRead;
    require_jq();
    let o = FixtureOptions::parse(Some(faults), Some("fast"), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let script = post_reboot_under(root, &o);
    let path = format!("{}:{}", root.display(), std::env::var("PATH").unwrap());
    let mut child = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let watchdog = kill_after_a_minute(child.id());
    let mut text = String::new();
    let mut seen = 0;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        seen += usize::from(Some(line.as_str()) == stop_at);
        text.push_str(&line);
        text.push('\n');
        if seen == 3 {
            child.kill().unwrap();
            break;
        }
    }
    let status = child.wait().unwrap();
    watchdog.store(true, std::sync::atomic::Ordering::SeqCst);
    let calls = std::fs::read_to_string(root.join("systemctl.log")).unwrap_or_default();
    assert!(
        seen == 3 || stop_at.is_none(),
        "{faults}: {status:?} {text}"
    );
    (status.success(), text, calls)
}

/// Kills process `pid` unless the flag it gives is set within a minute: a script that never
/// prints what a test waits for must not hold the test forever.
fn kill_after_a_minute(pid: u32) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        for _ in 0..600 {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    });
    done
}

/// The rendered post-reboot script with every absolute path it removes or writes moved under
/// `root` (a test run must not touch the host's), a fast poll, and the fake curl and a logging
/// systemctl in `root`.
fn post_reboot_under(root: &std::path::Path, o: &FixtureOptions) -> String {
    use std::os::unix::fs::PermissionsExt;
    let cfg = live_ignition(&inputs(o, "/dev/vda")).unwrap();
    let master: Value =
        serde_json::from_str(&file_contents(&cfg, "/opt/openshift/minisno/master.ign.in")).unwrap();
    let mut script = file_contents(&master, "/usr/local/bin/bootstrap-in-place-post-reboot.sh")
        .replace("POLL=1", "POLL=0.01");
    for dir in [
        "/etc/kubernetes",
        "/opt/openshift",
        "/usr/local/bin",
        "/var/log",
    ] {
        let moved = root.join(dir.trim_start_matches('/'));
        std::fs::create_dir_all(&moved).unwrap();
        script = script.replace(dir, &moved.display().to_string());
    }
    let systemctl = format!(
        "#!/bin/sh\necho \"$*\" >> {}/systemctl.log\n",
        root.display()
    );
    for (name, body) in [("curl", FAKE_CURL), ("systemctl", &systemctl)] {
        let path = root.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

/// The script's own lines (not the operators the CVO loop lists), each run of equal lines
/// once.
fn steps(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains(": Available="))
        .collect();
    lines.dedup();
    lines
}

#[test]
fn the_post_reboot_script_goes_through_the_real_steps_in_the_real_order_and_cleans_up() {
    let (finished, text, calls) = run_post_reboot("", None);
    assert!(finished, "{text}");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "Running bootkube bootstrap-in-place post reboot",
            "Restoring CVO overrides",
            "Waiting for node to report ready status",
            "node is ready",
            "Waiting for kube-apiserver-operator",
            "Restarting kubelet",
            "Restarting kubelet",
            "Waiting for cvo",
        ]
    );
    assert_eq!(
        calls,
        "daemon-reload\nrestart kubelet.service\nrestart kubelet.service\ndisable bootkube.service\n"
    );
}

/// Each loop of the real script, the line it prints every round, and the lines it printed
/// before it.
const LOOPS: &[(&str, &str, &str)] = &[
    (
        "api",
        "Waiting for api ...",
        "Running bootkube bootstrap-in-place post reboot",
    ),
    (
        "bootstrap-configmap",
        "Creating bootstrap configmap ...",
        "Running bootkube bootstrap-in-place post reboot",
    ),
    (
        "cvo-lease",
        "Deleting openshift-cluster-version version lease",
        "Running bootkube bootstrap-in-place post reboot",
    ),
    (
        "cpc-lease",
        "Deleting kube-system cluster-policy-controller-lock lease",
        "Running bootkube bootstrap-in-place post reboot",
    ),
    (
        "cvo-overrides",
        "Trying again to restore CVO overrides ...",
        "Restoring CVO overrides",
    ),
    (
        "csr",
        "Approving csrs ...",
        "Waiting for node to report ready status",
    ),
    (
        "kube-apiserver-operator",
        "Waiting for kube-apiserver-operator ready condition to be True",
        "Waiting for kube-apiserver-operator",
    ),
    (
        "static-pod",
        "Waiting for kube-apiserver to apply the new static pod configuration",
        "Restarting kubelet",
    ),
    ("cvo", "Still waiting for cvo ...", "Waiting for cvo"),
];

#[test]
fn post_reboot_hang_holds_each_loop_printing_its_real_line_and_nothing_after_it() {
    let ids: Vec<&str> = LOOPS.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, sno_fixture_faults::POST_REBOOT_LOOPS);
    for (id, round, before) in LOOPS {
        let fault = format!("post-reboot-hang:{id}");
        let (finished, text, calls) = run_post_reboot(&fault, Some(round));
        assert!(!finished, "{id}: {text}");
        assert!(!calls.contains("disable"), "{id}: {calls}");
        let rounds = text.lines().filter(|l| l == round).count();
        assert!(rounds >= 3, "{id}: {rounds} rounds: {text}");
        let steps = steps(&text);
        let at = steps.iter().position(|l| l == round).unwrap();
        assert_eq!(steps[at - 1], *before, "{id}: {text}");
        assert!(steps[at + 1..].is_empty(), "{id}: {text}");
    }
}

#[test]
fn the_cvo_loop_lists_the_operators_that_are_not_available_each_round() {
    let (_, text, _) = run_post_reboot("post-reboot-hang:cvo", Some("Still waiting for cvo ..."));
    assert!(
        text.contains("Still waiting for cvo ...\nconsole: Available=False route not reachable\n"),
        "{text}"
    );
}

/// The installed system's post-reboot script of `version`, run under bash with its paths moved
/// under a scratch directory and the API, systemctl and sleep stubbed: an API whose every
/// object is ready, and which has configmap kube-system/bootstrap only once it is created and no
/// lease (nor a lease's configmap) to release.
/// Returns the script's output, the API calls it made, and whether /opt/openshift is left.
fn run_post_reboot_of(version: &str) -> (String, String, bool) {
    require_jq();
    let o = FixtureOptions::parse(None, Some("fast"), None)
        .unwrap()
        .with_version(Some(version))
        .unwrap();
    let master = master_ignition(&inputs(&o, "/dev/vda"));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let mut script = file_contents(&master, "/usr/local/bin/bootstrap-in-place-post-reboot.sh");
    for (from, to) in [
        ("/etc/kubernetes", "etc/kubernetes"),
        ("/usr/local/bin", "bin"),
        ("/var/log", "log"),
        ("/opt/openshift", "opt/openshift"),
    ] {
        script = script.replace(from, &format!("{root}/{to}"));
        std::fs::create_dir_all(format!("{root}/{to}")).unwrap();
    }
    std::fs::create_dir_all(format!("{root}/etc/kubernetes/bootstrap-secrets")).unwrap();
    let stubs = format!(
        r#"ROOT={root}
READY='{{"items":[{{"metadata":{{"name":"m","labels":{{"node-role.kubernetes.io/master":"","app":"kube-apiserver-operator"}}}},"status":{{"conditions":[{{"type":"Ready","status":"True"}}]}}}}],"status":{{"conditions":[{{"type":"Available","status":"True"}}]}}}}'
curl() {{
    local method=GET url="${{@: -1}}"
    while [ $# -gt 0 ]; do [ "$1" = -X ] && method=$2; shift; done
    local call="$method ${{url#https://localhost:6443}}"
    echo "$call" >> "$ROOT/calls"
    case "$call" in
        "GET /readyz") echo ok ;;
        "GET /api/v1/namespaces/kube-system/configmaps/bootstrap") [ -e "$ROOT/configmap" ] || return 22 ;;
        "POST /api/v1/namespaces/kube-system/configmaps") touch "$ROOT/configmap"; echo '{{}}' ;;
        "GET "*/leases/*|"GET "*/configmaps/version|"GET "*/configmaps/cluster-policy-controller-lock) return 22 ;;
        *) echo "$READY" ;;
    esac
}}
systemctl() {{ echo "systemctl $*" >> "$ROOT/calls"; }}
sleep() {{ :; }}
"#
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &format!("{stubs}{script}")])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{version}: {text}");
    assert!(
        !dir.path().join("etc/kubernetes/bootstrap-secrets").exists(),
        "{version}: the bootstrap secrets stay: {text}"
    );
    let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap_or_default();
    (text, calls, dir.path().join("opt/openshift").exists())
}

#[test]
fn the_post_reboot_script_does_what_its_release_does() {
    let creates = |calls: &str| calls.contains("POST /api/v1/namespaces/kube-system/configmaps");
    // 4.11: no bootstrap configmap, /opt/openshift stays.
    let (out, calls, opt_left) = run_post_reboot_of("4.11.0");
    assert!(!creates(&calls), "{calls}");
    assert!(!out.contains("Creating bootstrap configmap"), "{out}");
    assert!(opt_left, "{out}");
    assert!(
        calls.contains("systemctl disable bootkube.service"),
        "{calls}"
    );
    // 4.12: the configmap, but /opt/openshift still stays.
    let (out, calls, opt_left) = run_post_reboot_of("4.12.0");
    assert!(creates(&calls), "{calls}");
    assert!(out.contains("Creating bootstrap configmap ..."), "{out}");
    assert!(opt_left, "{out}");
    // 4.13 on: both.
    for v in ["4.13.0", "4.17.0-minisno"] {
        let (_, calls, opt_left) = run_post_reboot_of(v);
        assert!(creates(&calls), "{v}: {calls}");
        assert!(!opt_left, "{v}");
    }
}

/// installer-gather.sh writes the installer's layout: the service records under
/// bootstrap/services, a journal per unit under bootstrap/journals, the failed units, the
/// network and the rendered assets' listing, all under log-bundle-<id>/.
#[test]
fn installer_gather_writes_the_installers_bundle_layout() {
    let o = FixtureOptions::parse(None, Some("fast"), None).unwrap();
    let cfg = live_ignition(&inputs(&o, "/dev/vda")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("log/openshift")).unwrap();
    std::fs::write(root.join("log/openshift/bootkube.json"), "[]").unwrap();
    std::fs::create_dir_all(root.join("opt")).unwrap();
    std::fs::write(root.join("opt/master.ign"), "{}").unwrap();
    let script = file_contents(&cfg, "/usr/local/bin/installer-gather.sh")
        .replace("/opt/openshift", &root.join("opt").display().to_string())
        .replace("/var/log", &root.join("log").display().to_string())
        .replace(
            "/tmp/artifacts-",
            &root.join("artifacts-").display().to_string(),
        );
    let tar = root.join("bundle.tar.gz");
    let out = std::process::Command::new("bash")
        .args(["-c", &script, "installer-gather.sh", "--id", "bootstrap"])
        .env("TAR_FILE", &tar)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("Log bundle written to"),
        "{said}"
    );
    let listed = std::process::Command::new("tar")
        .arg("tzf")
        .arg(&tar)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&listed.stdout);
    for want in [
        "log-bundle-bootstrap/bootstrap/services/bootkube.json",
        "log-bundle-bootstrap/bootstrap/journals/bootkube.log",
        "log-bundle-bootstrap/bootstrap/journals/install-to-disk.log",
        "log-bundle-bootstrap/failed-units.txt",
        "log-bundle-bootstrap/bootstrap/network/ip-route.txt",
        "log-bundle-bootstrap/rendered-assets/listing.txt",
    ] {
        assert!(
            names.lines().any(|n| n == want),
            "{want} missing from:\n{names}"
        );
    }
    // The rendered assets are listed, never copied: master.ign holds the fixture's keys.
    assert!(!names.contains("rendered-assets/master.ign"), "{names}");
}
