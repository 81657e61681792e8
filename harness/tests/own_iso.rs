//! The real user's way, end to end on the fixture: a scenario of profile `openshift` that names
//! its own installer (`[openshift] installer`: minisno-install, the fixture's stand-in for
//! openshift-install; the profile sets none of its fixture settings, so the test gives it the
//! fast schedule through the environment it inherits) and its own live ISO with its digest
//! (`[openshift] iso`, `iso_sha256`). The run boots that ISO, passes, and result.json and
//! summary.md name the installer, its version and the ISO.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

fn fixture() -> (PathBuf, PathBuf) {
    let out = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["fixture", "build", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fixture build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = |k: &str| PathBuf::from(v[k].as_str().unwrap_or_else(|| panic!("no {k}: {v}")));
    (path("installer"), path("live_iso"))
}

fn sha256_of(p: &Path) -> String {
    let mut h = Sha256::new();
    std::io::copy(&mut std::fs::File::open(p).unwrap(), &mut h).unwrap();
    hex::encode(h.finalize())
}

/// smoke.toml made an openshift-profile scenario in `dir`: a pull secret file beside it, the
/// fixture's installer and ISO named, no [fixture] section.
fn openshift_smoke(dir: &Path, installer: &Path, iso: &Path, digest: &str) -> PathBuf {
    std::fs::write(
        dir.join("pull-secret.json"),
        r#"{"auths":{"registry.invalid":{"auth":"dGVzdDp0ZXN0"}}}"#,
    )
    .unwrap();
    let smoke = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"),
    )
    .unwrap();
    let fixture_section = "[fixture]\nschedule = \"fast\"\nfaults = []\n";
    assert!(
        smoke.contains(fixture_section) && smoke.contains("profile = \"fixture\""),
        "smoke.toml changed shape"
    );
    let text = smoke
        .replace("name = \"smoke\"", "name = \"own-iso\"")
        .replace("profile = \"fixture\"", "profile = \"openshift\"")
        .replace(
            "[install]\n",
            "[install]\npull_secret = { file = \"pull-secret.json\" }\n",
        )
        .replace(
            fixture_section,
            &format!(
                "[openshift]\ninstaller = {:?}\niso = {:?}\niso_sha256 = \"{digest}\"\n",
                installer.display().to_string(),
                iso.display().to_string()
            ),
        );
    let path = dir.join("own-iso.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_openshift_scenario_with_its_own_installer_and_iso_passes_and_names_both() {
    let (installer, iso) = fixture();
    let digest = sha256_of(&iso);
    let work = tempfile::Builder::new()
        .prefix("sno-own-iso-")
        .tempdir()
        .unwrap();
    // The user's own installer: the fixture's, behind a wrapper that notes each call.
    let wrapper = work.path().join("openshift-install");
    let calls = work.path().join("calls");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> {:?}\nexec {:?} \"$@\"\n",
            calls.display().to_string(),
            installer.display().to_string()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    let scenario = openshift_smoke(work.path(), &wrapper, &iso, &digest);
    let out = work.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", work.path().join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .env("XDG_CACHE_HOME", work.path().join("cache"))
        .env("MINISNO_SCHEDULE", "fast")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the run failed:\n{stderr}");
    let dir = out.join("own-iso");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "pass");
    assert_eq!(result["profile"], "openshift");
    let a = &result["assets"];
    assert_eq!(a["installer"], wrapper.display().to_string(), "{a}");
    assert!(
        a["installer_version"]
            .as_str()
            .unwrap()
            .starts_with("minisno-install "),
        "{a}"
    );
    assert!(
        a["release_image"].as_str().is_some_and(|r| !r.is_empty()),
        "{a}"
    );
    // Named as a URL, as a downloaded one is.
    assert_eq!(a["iso"], format!("file://{}", iso.display()), "{a}");
    assert_eq!(a["iso_sha256"], digest.as_str(), "{a}");
    // The ISO was the scenario's: the installer made the Ignition but was not asked for its
    // stream metadata, and nothing was downloaded into the (empty) cache.
    let called = std::fs::read_to_string(&calls).unwrap();
    assert!(
        called.contains("create single-node-ignition-config"),
        "{called}"
    );
    assert!(!called.contains("print-stream-json"), "{called}");
    // (The cache keeps a memo of the file's verified digest, not a copy.)
    let copies: Vec<_> = std::fs::read_dir(work.path().join("cache/sno-harness/iso"))
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p: &PathBuf| p.extension().is_some_and(|x| x == "iso"))
        .collect();
    assert!(copies.is_empty(), "{copies:?}");
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains(&digest) && summary.contains("minisno-install "),
        "{summary}"
    );
    // Under TCG the preflight warns that a real install would take hours.
    if result["accel"] == "tcg" {
        assert!(stderr.contains("warning: accelerator: tcg"), "{stderr}");
    }
}
