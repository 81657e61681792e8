//! `--set KEY=VALUE` on a matrix, through the real binary and without a VM: it changes the
//! base, so `plan` shows it in every permutation; a key the base refuses, or one an axis sets,
//! exits 2 naming what is wrong (the axis by its line) before anything is made.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn matrix_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/matrix/disks.toml")
}

fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .env("SNO_HARNESS_LOG", "warn")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn plan_of_a_matrix_with_set_shows_the_override_in_every_permutation() {
    let m = matrix_file();
    let m = m.to_str().unwrap();
    let json = harness(&["plan", m, "--set", "vm.memory=4GiB", "--json"]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json.stderr));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["overrides"], serde_json::json!(["vm.memory=4GiB"]));
    let perms = v["permutations"].as_array().unwrap();
    assert_eq!(perms.len(), 11);
    for p in perms {
        assert_eq!(p["overrides"], serde_json::json!(["vm.memory=4GiB"]), "{p}");
    }
    let plain = harness(&["plan", m, "--set", "vm.memory=4GiB", "--set", "vm.vcpus=1"]);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    assert!(
        text(&plain.stdout).contains(
            "overridden on the command line, in every permutation: --set vm.memory=4GiB --set vm.vcpus=1"
        ),
        "{}",
        text(&plain.stdout)
    );
}

#[test]
fn a_key_the_base_refuses_exits_2_naming_it_and_what_is_valid() {
    let m = matrix_file();
    for cmd in ["plan", "matrix", "perf"] {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("out");
        let mut args = vec![cmd, m.to_str().unwrap(), "--set", "vm.memroy=4GiB"];
        if cmd != "plan" {
            args.extend(["--out", run_dir.to_str().unwrap()]);
        }
        if cmd == "perf" {
            args.extend(["--repeat", "1"]);
        }
        let o = harness(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("base.toml: --set vm.memroy=4GiB: "),
            "{cmd}: {err}"
        );
        assert!(err.contains("did you mean `memory`?"), "{cmd}: {err}");
        assert!(!run_dir.exists(), "{cmd}: made {}", run_dir.display());
    }
}

#[test]
fn a_key_an_axis_sets_exits_2_naming_the_axis_and_its_line() {
    let m = matrix_file();
    for (cmd, set, line, axis) in [
        ("plan", "vm.firmware=uefi", 16, "vm.firmware"),
        ("matrix", "disks.install.bus=nvme", 8, "disks.install.bus"),
        (
            "perf",
            "install.installation_disk.by=path",
            20,
            "install.installation_disk",
        ),
    ] {
        let out = tempfile::tempdir().unwrap();
        let run_dir = out.path().join("out");
        let mut args = vec![cmd, m.to_str().unwrap(), "--set", set];
        if cmd != "plan" {
            args.extend(["--out", run_dir.to_str().unwrap()]);
        }
        if cmd == "perf" {
            args.extend(["--repeat", "1"]);
        }
        let o = harness(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains(&format!("disks.toml:{line}:")), "{cmd}: {err}");
        assert!(
            err.contains(&format!("--set {set}: {axis} is an axis of this matrix")),
            "{cmd}: {err}"
        );
        assert!(!run_dir.exists(), "{cmd}: made {}", run_dir.display());
    }
}
