//! Runs the `minisno-install` binary as the harness does: the outputs of a successful run, the
//! command line's forms, the fixture's options, `coreos print-stream-json` and `version`.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use common::*;
use serde_json::Value;

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
    let ic = &state["*installconfig.InstallConfig"]["config"];
    assert_eq!(ic["metadata"]["name"], "sno");
    assert!(ic.get("pullSecret").is_none());
    assert_eq!(
        state["*kubeconfig.AdminClient"]["File"]["Filename"],
        "auth/kubeconfig"
    );

    // logs
    let log = std::fs::read_to_string(dir.join(".openshift_install.log")).unwrap();
    assert!(log.contains("level=info msg=\"Consuming Install Config from target directory\""));
    assert!(
        err.contains("level=info msg=Consuming Install Config from target directory\n"),
        "{err}"
    );
    assert!(err.contains("level=warning msg=Making control-plane schedulable by setting MastersSchedulable to true for Scheduler cluster settings\n"), "{err}");
    assert!(log
        .lines()
        .all(|l| l.starts_with("time=\"") && l.contains(" level=")));
    assert!(
        err.contains("level=info msg=Single-Node-Ignition-Config created in: "),
        "{err}"
    );

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
        err.contains("level=warning msg=failed to parse first occurrence of unknown field: failed to unmarshal install-config.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field \"someFutureField\"\n")
            && err.contains("level=info msg=Attempting to unmarshal while ignoring unknown keys because strict unmarshaling failed\n"),
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
            "level=fatal msg=failed to fetch Single node bootstrap In Place Ignition Config: "
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

#[test]
fn fips_is_accepted_when_the_host_check_is_skipped() {
    let text = format!("{}fips: true\n", valid()).replace(
        "sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host",
        &format!("sshKey: {}", ecdsa_ssh_key()),
    );
    let dir = with_config(&text);
    let out = create_with(
        dir.path(),
        "single-node-ignition-config",
        &[("OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION", "1")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The refusal is still said, as a warning of two records.
    assert!(err.contains("level=warning msg=target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9"), "{err}");
    assert!(err.contains("level=warning msg=To obtain a suitable binary, download the openshift-install-rhel9 archive"), "{err}");
    // The cluster sees a FIPS install-config, marked as the real tool marks it.
    let live = read_json(&dir.path().join("bootstrap-in-place-for-live-iso.ign"));
    let reported = apiserver_config(&live)["install_config_yaml"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reported.contains("fips: true"), "{reported}");
    assert!(
        reported.contains("install.openshift.io/hostcrypt-check-bypassed: 'true'")
            || reported.contains("install.openshift.io/hostcrypt-check-bypassed: \"true\""),
        "{reported}"
    );
}

#[test]
fn the_trust_bundle_policy_is_reported_as_given_or_defaulted() {
    for (extra, expected) in [
        ("", "Proxyonly"),
        ("additionalTrustBundlePolicy: Always\n", "Always"),
    ] {
        let dir = with_config(&format!("{}{extra}", valid()));
        let out = create_in(dir.path());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let live = read_json(&dir.path().join("bootstrap-in-place-for-live-iso.ign"));
        let reported = apiserver_config(&live)["install_config_yaml"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            reported.contains(&format!("additionalTrustBundlePolicy: {expected}")),
            "{reported}"
        );
    }
}

#[test]
fn a_post_reboot_loop_that_is_not_the_scripts_is_refused_naming_the_loops() {
    let dir = with_config(&valid());
    let out = create_with(
        dir.path(),
        "single-node-ignition-config",
        &[("MINISNO_FAULTS", "post-reboot-hang:kubelet")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("post-reboot-hang:kubelet"), "{err}");
    assert!(
        err.contains("<loop> is one of: api, bootstrap-configmap"),
        "{err}"
    );
}

#[test]
fn new_faults_are_accepted() {
    for fault in ["no-dns", "bootkube-flaky", "post-reboot-hang:csr"] {
        let dir = with_config(&valid());
        let out = create_with(
            dir.path(),
            "single-node-ignition-config",
            &[("MINISNO_FAULTS", fault)],
        );
        assert_eq!(out.status.code(), Some(0), "{fault}: {}", stderr(&out));
        let state = read_json(&dir.path().join(".openshift_install_state.json"));
        assert_eq!(state["*minisno.Fixture"]["faults"][0], fault);
    }
}

#[test]
fn minisno_version_names_the_release_the_cluster_reports() {
    let dir = with_config(&valid());
    let out = create_with(
        dir.path(),
        "single-node-ignition-config",
        &[("MINISNO_VERSION", "4.14.3")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let live = read_json(&dir.path().join("bootstrap-in-place-for-live-iso.ign"));
    let release = &apiserver_config(&live)["release"];
    assert_eq!(release["version"], "4.14.3");
    assert_eq!(release["image"], "quay.io/minisno/release:4.14.3");

    let dir = with_config(&valid());
    let out = create_with(dir.path(), "single-node-ignition-config", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let live = read_json(&dir.path().join("bootstrap-in-place-for-live-iso.ign"));
    assert_eq!(
        apiserver_config(&live)["release"]["version"],
        "4.17.0-minisno"
    );

    let dir = with_config(&valid());
    let out = create_with(
        dir.path(),
        "single-node-ignition-config",
        &[("MINISNO_VERSION", "4.14")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("MINISNO_VERSION must be a release version such as 4.14.3 (major.minor.patch, optionally -suffix), not \"4.14\""), "{err}");
    assert!(dir.path().join("install-config.yaml").exists());
    let out = cmd()
        .env("MINISNO_VERSION", "4.15.2")
        .arg("version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("minisno-install 4.15.2 "));
}
