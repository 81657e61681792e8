//! kubectl (from PATH) against the simulator with an admin kubeconfig file.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn kubectl_path() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("kubectl"))
            .find(|p| p.is_file())
    })
}

/// Runs kubectl in a blocking thread; returns (exit ok, stdout, stderr).
async fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new("kubectl");
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--request-timeout=10s")
        .args(args)
        .env("HOME", cache);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("running kubectl"))
        .await
        .unwrap();
    println!(
        "$ kubectl {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_gets_nodes_readyz_clusterversion_and_operators() {
    if kubectl_path().is_none() {
        println!("SKIPPED: no kubectl on PATH");
        return;
    }
    let fx = Fixture::start_bootstrapped(&[]).await;
    let kubeconfig = fx.kubeconfig_file();
    let cache = fx.dir.path().join("kube-cache");
    std::fs::create_dir_all(&cache).unwrap();

    let readyz = poll("kubectl get --raw /readyz", DEADLINE, || async {
        let (ok, out, _) = kubectl(&kubeconfig, &cache, &["get", "--raw", "/readyz"]).await;
        ok.then_some(out)
    })
    .await;
    assert_eq!(readyz.trim(), "ok");

    poll("kubectl shows the node", DEADLINE, || async {
        let (ok, out, _) = kubectl(&kubeconfig, &cache, &["get", "nodes"]).await;
        (ok && out.contains("minisno")).then_some(())
    })
    .await;
    // the server prints tables like the real one: the node's status and roles show
    let out = poll("kubectl shows the node Ready", DEADLINE, || async {
        let (ok, out, _) = kubectl(&kubeconfig, &cache, &["get", "nodes"]).await;
        (ok && out.contains(" Ready ")).then_some(out)
    })
    .await;
    assert!(out.contains("control-plane,master,worker"), "{out}");
    assert!(out.contains("v1.30.4-minisno"), "{out}");

    let (ok, out, err) = kubectl(&kubeconfig, &cache, &["get", "clusterversion"]).await;
    assert!(ok, "kubectl get clusterversion: {err}");
    assert!(out.contains("version"), "{out}");

    let (ok, out, err) = kubectl(&kubeconfig, &cache, &["get", "clusteroperators"]).await;
    assert!(ok, "kubectl get clusteroperators: {err}");
    for name in [
        "authentication",
        "etcd",
        "ingress",
        "kube-apiserver",
        "storage",
    ] {
        assert!(out.contains(name), "{name} missing in {out}");
    }
    let (ok, out, err) =
        kubectl(&kubeconfig, &cache, &["get", "co", "ingress", "-o", "json"]).await;
    assert!(ok, "kubectl get co ingress -o json: {err}");
    let co: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(co["kind"], "ClusterOperator");

    // what openshift-install's wait-for and people type by hand
    let (ok, out, err) = kubectl(
        &kubeconfig,
        &cache,
        &[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "cluster-config-v1",
            "-o",
            "jsonpath={.data.install-config}",
        ],
    )
    .await;
    assert!(ok, "kubectl get configmap: {err}");
    assert_eq!(out, INSTALL_CONFIG);
    let (ok, out, err) = kubectl(
        &kubeconfig,
        &cache,
        &["get", "etcd", "cluster", "-o", "name"],
    )
    .await;
    assert!(ok, "kubectl get etcd: {err}");
    assert_eq!(out.trim(), "etcd.operator.openshift.io/cluster");
    let (ok, out, err) = kubectl(&kubeconfig, &cache, &["get", "csr"]).await;
    assert!(ok, "kubectl get csr: {err}");
    assert!(out.contains("csr-"), "{out}");
    // watches are refused (405), and kubectl wait copes by listing again
    let (ok, out, err) = kubectl(
        &kubeconfig,
        &cache,
        &[
            "wait",
            "--for=condition=Available",
            "clusterversion/version",
            "--timeout=10s",
        ],
    )
    .await;
    assert!(ok, "kubectl wait: {err}");
    assert!(out.contains("condition met"), "{out}");
    fx.running.stop().await;
}
