//! Saving the VM once bootkube is done and resuming it for install-to-disk alone:
//! `run --save-state DIR`, `run --resume-state DIR`, `perf --disk-write-only`.
//!
//! The bad-input tests run with a PATH of stand-ins that exit at once, so none can boot a VM
//! even if validation regressed. `perf_disk_write_only_saves_once_and_resumes_twice` boots
//! three VMs (one bootstrap and two resumes, about 3 minutes under TCG).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod fake_tools;
use fake_tools::fake_tools;

const BAD_INPUT: i32 = 2;

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

struct Ran {
    code: i32,
    stderr: String,
}

fn harness(args: &[&str], tmp: &Path, path: Option<&Path>) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sno-harness"));
    cmd.args(args)
        .env("SNO_HARNESS_STATE_DIR", tmp.join("registry"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .env_remove("ARTIFACT_DIR")
        .current_dir(repo_file("."));
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let o = cmd.output().unwrap();
    Ran {
        code: o.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[track_caller]
fn assert_bad_input(r: &Ran, words: &[&str]) {
    assert_eq!(r.code, BAD_INPUT, "exit code; stderr:\n{}", r.stderr);
    for w in words {
        assert!(r.stderr.contains(w), "stderr lacks {w:?}:\n{}", r.stderr);
    }
}

/// smoke.toml with its install disk on `bus`, written into `dir`.
fn smoke_on(dir: &Path, bus: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo_file("scenarios/smoke.toml"))
        .unwrap()
        .replace("bus = \"virtio\"", &format!("bus = \"{bus}\""));
    let p = dir.join(format!("smoke-{bus}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn what_cannot_be_saved_or_resumed_is_bad_input_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_tools(tmp.path());
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let fresh = tmp.path().join("state");
    let fresh_s = fresh.to_str().unwrap();
    let nvme = smoke_on(tmp.path(), "nvme");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let empty_s = empty.to_str().unwrap();

    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["run", "scenarios/smoke.toml", "--save-state", empty_s],
            vec!["--save-state", "it exists"],
        ),
        (
            vec!["run", nvme.to_str().unwrap(), "--save-state", fresh_s],
            vec!["disk \"install\" is on NVMe", "not migratable"],
        ),
        (
            vec![
                "run",
                "scenarios/smoke.toml",
                "--backend",
                "libvirt",
                "--save-state",
                fresh_s,
            ],
            vec!["needs --backend qemu"],
        ),
        (
            vec!["run", "scenarios/smoke.toml", "--resume-state", empty_s],
            vec!["--resume-state", "snapshot.json"],
        ),
        (
            vec![
                "perf",
                "scenarios/smoke.toml",
                "--repeat",
                "1",
                "--disk-write-only",
                "--backend",
                "libvirt",
            ],
            vec!["--disk-write-only", "needs --backend qemu"],
        ),
        (
            vec![
                "perf",
                nvme.to_str().unwrap(),
                "--repeat",
                "1",
                "--disk-write-only",
            ],
            vec!["--disk-write-only", "NVMe"],
        ),
    ];
    for (args, words) in cases {
        let mut args = args;
        args.extend(["--out", out_s]);
        let r = harness(&args, tmp.path(), Some(&bin));
        assert_bad_input(&r, &words);
        assert!(!out.exists(), "{args:?} created {}", out.display());
        assert!(!fresh.exists(), "{args:?} created {}", fresh.display());
    }

    // Both at once: clap refuses, with its own exit 2.
    let r = harness(
        &[
            "run",
            "scenarios/smoke.toml",
            "--save-state",
            fresh_s,
            "--resume-state",
            empty_s,
        ],
        tmp.path(),
        Some(&bin),
    );
    assert_bad_input(&r, &["cannot be used with"]);
}

#[test]
fn a_state_of_another_scenario_is_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_tools(tmp.path());
    // A complete state directory whose only disk is "data", not smoke's "install".
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    for f in ["data.qcow2", "vm.state", "live.iso", "ssh-key"] {
        std::fs::write(state.join(f), "x").unwrap();
    }
    std::fs::write(
        state.join("snapshot.json"),
        serde_json::json!({
            "schema": "sno-harness/snapshot/v1", "run_id": "other",
            "scenario": "scenarios/other.toml", "saved_at": "2026-11-30T13:00:00Z",
            "accel": "tcg", "memory_mib": 3072,
            "disks": [{"id": "data", "file": "data.qcow2"}], "uefi_vars": null,
            "bootstrap_ms": 1, "save_ms": 1, "state_bytes": 1
        })
        .to_string(),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let r = harness(
        &[
            "run",
            "scenarios/smoke.toml",
            "--resume-state",
            state.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
        Some(&bin),
    );
    assert_bad_input(&r, &["no disk \"install\"", "scenarios/other.toml"]);
    assert!(!out.exists());
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn events(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("events.jsonl")).unwrap()
}

/// QEMU processes whose command line names `needle` (the run's directory).
fn qemu_processes(needle: &Path) -> Vec<String> {
    let needle = needle.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("qemu-system") && c.contains(&needle))
        .collect()
}

#[test]
fn perf_disk_write_only_saves_once_and_resumes_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = harness(
        &[
            "perf",
            "scenarios/smoke.toml",
            "--repeat",
            "2",
            "--disk-write-only",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
        None,
    );
    assert_eq!(r.code, 0, "stderr:\n{}", r.stderr);

    // The save run bootstrapped, stopped at bootkube and never began the install: the hold
    // kept coreos-installer from running.
    let save = out.join("smoke/save-state");
    let saved = read_json(&save.join("result.json"));
    assert_eq!(saved["verdict"], "pass", "{saved}");
    let phase = |r: &Value, name: &str| {
        r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(phase(&saved, "bootkube")["status"], "pass");
    assert_eq!(phase(&saved, "install-to-disk")["status"], "not-reached");
    let ev = events(&save);
    assert!(ev.contains("VM state saved in"), "no save note");
    assert!(
        !ev.contains("Executing coreos-installer"),
        "the install began"
    );
    let held =
        std::fs::read_to_string(save.join("assets/bootstrap-in-place-for-live-iso.held.ign"))
            .unwrap();
    assert!(held.contains("50-sno-harness-hold.conf"));

    // Each resumed run: the earlier phases skipped, install-to-disk run and measured.
    for run in ["run-0", "run-1"] {
        let dir = out.join("smoke").join(run);
        let r = read_json(&dir.join("result.json"));
        assert_eq!(r["verdict"], "pass", "{run}: {r}");
        for skipped in ["assets", "live-boot", "bootkube"] {
            let p = phase(&r, skipped);
            assert_eq!(p["status"], "not-reached", "{run} {skipped}");
            assert!(
                p["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("ran in the run that saved"),
                "{run} {skipped}: {p}"
            );
        }
        assert_eq!(phase(&r, "install-to-disk")["status"], "pass", "{run}");
        assert_eq!(phase(&r, "reboot")["status"], "not-reached", "{run}");
        let w = &r["disk_write"];
        assert!(w["bytes"].as_u64().unwrap() > 100 << 20, "{run}: {w}");
        let ev = events(&dir);
        assert!(ev.contains("VM state loaded from"), "{run}");
        assert!(ev.contains("released from the saved state's hold"), "{run}");
        // A resume does not bootstrap: it is over well before a full run would be.
        assert!(
            r["duration_ms"].as_u64().unwrap() < saved["duration_ms"].as_u64().unwrap() + 60_000,
            "{run}: {r}"
        );
    }

    let v = read_json(&out.join("perf.json"));
    let p = &v["permutations"][0];
    assert_eq!(p["counts"]["measured"], 2);
    assert_eq!(p["counts"]["passed"], 2);
    let names: Vec<&str> = p["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ph| ph["phase"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["install-to-disk"], "only the install is measured");
    assert_eq!(p["phases"][0]["seconds"]["n"], 2);
    assert_eq!(p["disk_write"]["mib_s"]["n"], 2);
    let sr = &p["state_reuse"];
    assert_eq!(sr["saved"], true, "{sr}");
    assert_eq!(sr["save_run"], "smoke/save-state");
    assert_eq!(sr["resumed_runs"], 2);
    assert!(sr["bootstrap_s"].as_f64().unwrap() > 10.0, "{sr}");
    assert!(sr["saved_s"].as_f64().unwrap() > 0.0, "{sr}");
    let md = std::fs::read_to_string(out.join("perf.md")).unwrap();
    assert!(md.contains("disk write only: bootstrapped once"), "{md}");

    // The saved VM (GiBs) is gone without --keep; no QEMU of the runs is left.
    assert!(!out.join("smoke/state").exists());
    assert!(qemu_processes(&out).is_empty());
}
