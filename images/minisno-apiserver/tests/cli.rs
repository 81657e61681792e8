//! The binary: `schedule --fast|--normal`, and `serve --config` end to end.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;
use minisno_apiserver::Schedule;

const BIN: &str = env!("CARGO_BIN_EXE_minisno-apiserver");

#[test]
fn schedule_prints_the_defaults() {
    for (flag, expected) in [
        ("--fast", Schedule::fast()),
        ("--normal", Schedule::normal()),
    ] {
        let out = Command::new(BIN).args(["schedule", flag]).output().unwrap();
        assert!(out.status.success());
        let s: Schedule = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(s, expected, "{flag}");
    }
    let fast: serde_json::Value = serde_json::from_slice(
        &Command::new(BIN)
            .args(["schedule", "--fast"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(fast["readyz_after_s"], 3.0);
    assert_eq!(fast["etcd_bootstrap_removed_delay_s"], 1.0);
}

/// Kills the child on drop (the test started it; its pid is the only one touched).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_runs_from_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("pki"));
    let cfg = config(dir.path(), &pki, &[]);
    let cfg_path = dir.path().join("apiserver.json");
    std::fs::write(&cfg_path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();

    let mut child = Child(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&cfg_path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    // the first line says where it listens
    let (line_tx, line_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = line_rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a first log line");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("https://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_string();
    assert!(first.contains("test fixture"), "{first}");

    let client = client_from_yaml(&kubeconfig(
        &url,
        &pki.ca_cert,
        Some((&pki.admin_cert, &pki.admin_key)),
        Some(SERVER_NAME),
    ))
    .await
    .unwrap();
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.git_version, "v1.30.4-minisno");
    // what the post-reboot script does once the API answers
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "kube-system");
    let bootstrap: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_slice(BOOTSTRAP_COMPLETE).unwrap();
    cms.create(&Default::default(), &bootstrap).await.unwrap();
    // milestones are logged as they are reached
    let deadline = std::time::Instant::now() + DEADLINE;
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.contains("cluster version completed"))
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = line_rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no 'cluster version completed' line in {seen:#?}"));
        seen.push(line);
    }
    for m in [
        "readyz ok",
        "api-int.sno.example.test resolves to 127.0.0.1 on this node",
        "node registered",
        "node Ready",
        "etcd bootstrap member removed",
        "operators available",
    ] {
        assert!(
            seen.iter().any(|l| l.contains(m)),
            "{m} not logged: {seen:#?}"
        );
    }
    assert!(seen.iter().any(|l| l.contains("GET /version 200")));
    assert!(dir.path().join("state/state.json").is_file());
}
