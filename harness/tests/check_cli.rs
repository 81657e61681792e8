//! `sno-harness check` as a user runs it, without a cluster: what it refuses (exit 2) and an API
//! that does not answer (exit 4, the JSON says so). Its judgements against minisno's API
//! server, healthy and in each fault, are in tests/tests/check.rs of the e2e crate.

use std::path::Path;
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

mod planted;

fn harness(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .output()
        .unwrap()
}

/// `check --kubeconfig KC FLAG FILE`.
fn check_with(kc: &str, flag: &str, file: &Path) -> std::process::Output {
    harness(&["check", "--kubeconfig", kc, flag, file.to_str().unwrap()])
}

/// A kubeconfig with a real CA and client certificate, for a server at `server`.
fn kubeconfig(dir: &Path, server: &str) -> String {
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["admin".into()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    for (name, text) in [
        ("ca.crt", ca.pem()),
        ("admin.crt", cert.pem()),
        ("admin.key", key.serialize_pem()),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let d = dir.display();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority: {d}/ca.crt\n    tls-server-name: api.sno.example.test\nusers:\n- name: u\n  user:\n    client-certificate: {d}/admin.crt\n    client-key: {d}/admin.key\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

/// A port on 127.0.0.1 that nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn an_api_that_does_not_answer_is_exit_4_and_said_so_in_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &format!("https://127.0.0.1:{}", closed_port()));
    let json = dir.path().join("check.json");
    let out = check_with(&kc, "--json", &json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("the API cannot be reached"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "sno-harness/check/v1");
    assert_eq!(v["reachable"], false);
    assert_eq!(v["healthy"], false);
    assert_eq!(v["checks"][0]["name"], "api-ready");
    assert_eq!(v["checks"][0]["status"], "fail");
}

#[test]
fn the_json_is_written_through_no_link_planted_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &format!("https://127.0.0.1:{}", closed_port()));
    let json = dir.path().join("check.json");
    let victim = planted::Victim::new(dir.path());
    let check_writes_the_json = || {
        let out = check_with(&kc, "--json", &json);
        assert_eq!(out.status.code(), Some(4));
        victim.assert_untouched();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["schema"], "sno-harness/check/v1");
    };
    victim.link_beside(&json);
    check_writes_the_json();
    // A link at the path itself is replaced, not written through.
    std::fs::remove_file(&json).unwrap();
    victim.link_at(&json);
    check_writes_the_json();
    assert!(std::fs::symlink_metadata(&json).unwrap().is_file());
}

#[test]
fn bad_input_is_exit_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), "https://127.0.0.1:1");
    let cases: [(&[&str], &str); 5] = [
        (
            &["check", "--kubeconfig", "/nonexistent/kubeconfig"],
            "/nonexistent/kubeconfig",
        ),
        (
            &["check", "--kubeconfig", &kc, "--wait", "soon"],
            "--wait \"soon\"",
        ),
        (
            &["check", "--kubeconfig", &kc, "--wait", "0s"],
            "--wait \"0s\": the deadline must be longer than zero",
        ),
        (
            &["check", "--kubeconfig", &kc, "--install-config", "/"],
            "not a regular file",
        ),
        (
            &["check", "--kubeconfig", &kc, "--etcd-rule", "maybe"],
            "maybe",
        ),
    ];
    for (args, says) in cases {
        let out = harness(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let bad_yaml = dir.path().join("install-config.yaml");
    std::fs::write(&bad_yaml, "apiVersion: v1\nmetadata: [unclosed\n").unwrap();
    let out = check_with(&kc, "--install-config", &bad_yaml);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("install-config.yaml"));
}
