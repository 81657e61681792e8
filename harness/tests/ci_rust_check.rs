//! ci/check-rust.sh, which ci/install-host-deps.sh runs before it installs anything: a host
//! without cargo, or with a rustc older than Cargo.toml's rust-version, is told how to get
//! one and stops with exit 3; a new enough toolchain passes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Runs the check with only `bin` (stand-ins) before /usr/bin:/bin and an empty HOME, so that
/// the host's own rustup toolchain is out of sight.
fn check(bin: &Path) -> (i32, String) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("/bin/bash")
        .arg(repo.join("ci/check-rust.sh"))
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn stand_in(dir: &Path, name: &str, stdout: &str) {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\necho '{stdout}'\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn rust_version() -> String {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
            .unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with("rust-version"))
        .expect("Cargo.toml has a rust-version");
    line.split('"').nth(1).unwrap().to_string()
}

#[test]
fn a_host_without_cargo_is_told_how_to_get_it_and_stops_with_exit_3() {
    let bin = tempfile::tempdir().unwrap();
    let (code, err) = check(bin.path());
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&format!("needs Rust {} or newer", rust_version())),
        "{err}"
    );
    assert!(err.contains("https://sh.rustup.rs"), "{err}");
}

#[test]
fn a_rustc_older_than_the_workspace_needs_is_named_and_refused() {
    let bin = tempfile::tempdir().unwrap();
    stand_in(bin.path(), "cargo", "cargo 1.63.0");
    stand_in(bin.path(), "rustc", "rustc 1.63.0 (4b91a6ea7 2022-08-08)");
    let (code, err) = check(bin.path());
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("this host has 1.63.0"), "{err}");
}

#[test]
fn a_new_enough_toolchain_passes() {
    let bin = tempfile::tempdir().unwrap();
    stand_in(bin.path(), "cargo", "cargo 9.0.0");
    stand_in(bin.path(), "rustc", "rustc 9.0.0 (0000000 2099-01-01)");
    let (code, err) = check(bin.path());
    assert_eq!(code, 0, "{err}");
}
