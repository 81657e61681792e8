//! `sno-harness doctor [SCENARIO] [--json]`: the host's checks, and with a scenario the very
//! preflight `run` makes, as text or JSON; exit 0 ready, 3 not ready, 2 a scenario that does
//! not load. No VM is started.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const SECRET: &str = r#"{"auths":{"registry.invalid":{"auth":"dGVzdDp0ZXN0"}}}"#;

/// An openshift-profile scenario in `dir` with a stand-in installer that prints a version, its
/// pull secret from `$DOCTOR_PS`, and a VM of `vcpus` and `memory`.
fn scenario(dir: &Path, vcpus: u32, memory: &str) -> PathBuf {
    let installer = dir.join("openshift-install");
    std::fs::write(&installer, "#!/bin/sh\necho 'openshift-install 4.99.0'\n").unwrap();
    std::fs::set_permissions(&installer, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = format!(
        r#"name = "doctored"
profile = "openshift"

[vm]
vcpus = {vcpus}
memory = "{memory}"

[[disks]]
id = "install"
size = "8GiB"

[install]
pull_secret = {{ env = "DOCTOR_PS" }}

[openshift]
installer = "./openshift-install"
"#
    );
    let path = dir.join("doctored.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn doctor(args: &[&str], secret: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sno-harness"));
    cmd.arg("doctor").args(args).env_remove("DOCTOR_PS");
    if let Some(s) = secret {
        cmd.env("DOCTOR_PS", s);
    }
    cmd.output().unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn check<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["scenario"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {doc}"))
}

/// The exit code is the one `ready` states, and `ready` is "nothing missing".
fn assert_code_matches(o: &Output, doc: &Value) {
    let all = doc["host"]
        .as_array()
        .unwrap()
        .iter()
        .chain(doc["scenario"]["checks"].as_array().into_iter().flatten());
    let mut missing = false;
    for c in all {
        let level = c["level"].as_str().unwrap();
        assert!(["ok", "warn", "missing"].contains(&level), "{c}");
        assert!(!c["detail"].as_str().unwrap().is_empty(), "{c}");
        missing |= level == "missing";
    }
    assert_eq!(doc["ready"], !missing, "{doc}");
    assert_eq!(o.status.code(), Some(if missing { 3 } else { 0 }), "{doc}");
}

#[test]
fn a_scenario_with_its_installer_and_pull_secret_is_checked_as_run_would() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), 1, "1GiB");
    let o = doctor(&[s.to_str().unwrap(), "--json"], Some(SECRET));
    let doc = json(&o);
    assert_code_matches(&o, &doc);
    assert_eq!(doc["scenario"]["name"], "doctored");
    assert_eq!(doc["scenario"]["backend"], "qemu");
    let installer = check(&doc, "installer");
    assert_eq!(installer["level"], "ok", "{installer}");
    // Resolved next to the scenario.
    let named = Path::new(installer["detail"].as_str().unwrap());
    assert_eq!(
        named.canonicalize().unwrap(),
        tmp.path().join("openshift-install").canonicalize().unwrap()
    );
    assert_eq!(check(&doc, "pull secret")["level"], "ok");
    assert_eq!(check(&doc, "memory")["level"], "ok");
    assert_eq!(check(&doc, "CPUs")["level"], "ok");
    // Under TCG a real install is a warning, with KVM it is fine: never missing.
    assert_ne!(check(&doc, "accelerator")["level"], "missing");
}

#[test]
fn what_the_scenario_lacks_is_missing_and_the_exit_code_is_3() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), 64, "16TiB");
    let o = doctor(&[s.to_str().unwrap(), "--json"], None);
    let doc = json(&o);
    assert_code_matches(&o, &doc);
    assert_eq!(o.status.code(), Some(3));
    let secret = check(&doc, "pull secret");
    assert_eq!(secret["level"], "missing");
    assert!(
        secret["detail"]
            .as_str()
            .unwrap()
            .contains("environment variable DOCTOR_PS is not set"),
        "{secret}"
    );
    let memory = check(&doc, "memory");
    assert_eq!(memory["level"], "missing", "{memory}");
    assert!(
        memory["detail"]
            .as_str()
            .unwrap()
            .contains("the VM needs 16384.0 GiB (vm.memory)"),
        "{memory}"
    );
    // vCPUs may be overcommitted twice over, as the admission allows.
    let host_cpus = std::thread::available_parallelism().unwrap().get();
    let cpus = check(&doc, "CPUs");
    let expected = if 64 > 2 * host_cpus { "missing" } else { "ok" };
    assert_eq!(cpus["level"], expected, "{cpus}");
    // The text form says the same, and what blocks.
    let text = doctor(&[s.to_str().unwrap()], None);
    assert_eq!(text.status.code(), Some(3));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("scenario doctored on qemu:"), "{out}");
    assert!(
        out.contains("the host cannot run the scenario: ") && out.contains("pull secret"),
        "{out}"
    );
    // A pull secret that is not one is never quoted.
    let o = doctor(&[s.to_str().unwrap(), "--json"], Some("{\"canary-91\": 1}"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stdout.contains("canary-91"), "{stdout}");
    assert_eq!(check(&json(&o), "pull secret")["level"], "missing");
}

#[test]
fn the_libvirt_backend_is_asked_whether_it_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), 1, "1GiB");
    let sock = tmp.path().join("no-libvirtd.sock");
    let uri = format!("qemu:///system?socket={}", sock.display());
    let o = doctor(
        &[
            s.to_str().unwrap(),
            "--json",
            "--backend",
            "libvirt",
            "--connect",
            &uri,
        ],
        Some(SECRET),
    );
    let doc = json(&o);
    assert_code_matches(&o, &doc);
    let libvirt = check(&doc, "libvirt");
    assert_eq!(libvirt["level"], "missing", "{libvirt}");
    assert!(
        libvirt["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("libvirt at {uri} cannot be reached")),
        "{libvirt}"
    );
}

#[test]
fn the_host_alone_is_checked_without_a_scenario() {
    let o = doctor(&["--json"], None);
    let doc = json(&o);
    assert!(doc["scenario"].is_null(), "{doc}");
    assert_code_matches(&o, &doc);
    let checks: Vec<&str> = doc["host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    for c in [
        "qemu-system-x86_64",
        "qemu-img",
        "accelerator",
        "disk space",
    ] {
        assert!(checks.contains(&c), "no {c} in {checks:?}");
    }
}

#[test]
fn a_scenario_that_does_not_load_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("bad.toml");
    std::fs::write(&s, "name = \"bad\"\n[vm]\nvcpus = \"two\"\n").unwrap();
    let o = doctor(&[s.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("bad.toml:3"), "{stderr}");
    assert!(o.stdout.is_empty(), "checks printed for a bad scenario");
}
