//! `status`, `ssh`, `console` and `resume` without a VM: what they say of the registry as it is,
//! their exit codes, and a console log read with the guest's control characters replaced; the
//! refusals of `--keep`, `--keep-running` and `--pause-on-failure` before anything starts.
//! (Their runs on VMs are harness/tests/hands_on_vm.rs.)

use std::path::Path;
use std::process::{Command, Output};

use sno_harness::registry::{self, Entry, ProcessId};

fn harness(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .args(args)
        .env("SNO_HARNESS_STATE_DIR", state)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn with_no_run_registered_each_command_says_so_with_its_exit_code() {
    let t = tempfile::tempdir().unwrap();
    let all = harness(t.path(), &["status"]);
    assert_eq!(all.status.code(), Some(0));
    assert!(text(&all.stdout).contains("no run is registered"));
    let json: serde_json::Value =
        serde_json::from_slice(&harness(t.path(), &["status", "--json"]).stdout).unwrap();
    assert_eq!(json["schema"], "sno-harness/status/v1");
    assert_eq!(json["runs"], serde_json::json!([]));
    assert_eq!(
        harness(t.path(), &["status", "smoke"]).status.code(),
        Some(1)
    );
    for cmd in ["ssh", "console", "resume"] {
        let o = harness(t.path(), &[cmd, "smoke"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        assert!(
            text(&o.stderr).contains("smoke: no registered run has this id or directory"),
            "{cmd}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn a_registered_run_is_listed_and_its_console_read_without_the_guests_control_sequences() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let run = t.path().join("smoke");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("events.jsonl"),
        "{\"time\":\"2026-12-06T18:00:00Z\",\"t_ms\":0,\"source\":\"harness\",\"kind\":\"phase-started\",\"phase\":\"live-boot\",\"timeout_s\":240}\n",
    )
    .unwrap();
    std::fs::write(
        run.join("serial.log"),
        "[    1.0] Linux version 6.1\n\x1b]0;owned\x07[  OK  ] Reached target emergency.target\n",
    )
    .unwrap();
    let me = ProcessId::of(std::process::id()).unwrap();
    let entry = Entry {
        id: "smoke".into(),
        pid: me.pid,
        pid_start: me.start,
        dir: run.clone(),
        backend: "qemu".into(),
        uri: None,
        domain: None,
        keep: false,
        paused: false,
        qemu: None,
        private: None,
        bmc: None,
    };
    let _registration = registry::register(&state.join("runs"), entry).unwrap();
    let listed = harness(&state, &["status"]);
    assert_eq!(listed.status.code(), Some(0));
    assert!(
        text(&listed.stdout).contains("smoke  running  live-boot ("),
        "{}",
        text(&listed.stdout)
    );
    let console = harness(&state, &["console", "smoke", "--no-follow"]);
    assert_eq!(console.status.code(), Some(0), "{}", text(&console.stderr));
    let shown = text(&console.stdout);
    assert!(
        !shown.contains('\x1b') && !shown.contains('\x07'),
        "{shown:?}"
    );
    assert!(
        shown.contains(" ]0;owned [  OK  ] Reached target emergency.target\n"),
        "{shown:?}"
    );
    // Its key and address live in a private directory it does not have.
    let ssh = harness(&state, &["ssh", run.to_str().unwrap()]);
    assert_eq!(ssh.status.code(), Some(2));
    assert!(
        text(&ssh.stderr).contains("has no private directory"),
        "{}",
        text(&ssh.stderr)
    );
}

#[test]
fn resume_of_a_run_that_is_not_paused_or_not_running_exits_1_and_signals_nobody() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let me = ProcessId::of(std::process::id()).unwrap();
    let entry = |id: &str, pid: u32, pid_start: u64| Entry {
        id: id.into(),
        pid,
        pid_start,
        dir: t.path().join(id),
        backend: "qemu".into(),
        uri: None,
        domain: None,
        keep: false,
        paused: false,
        qemu: None,
        private: None,
        bmc: None,
    };
    // This test's own process, running and not paused: SIGUSR1 would end it, so the exit 1
    // without a signal is what keeps this test alive.
    let _running =
        registry::register(&state.join("runs"), entry("busy", me.pid, me.start)).unwrap();
    let o = harness(&state, &["resume", "busy"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("is running, not paused"),
        "{}",
        text(&o.stderr)
    );
    // A registration that says paused but whose harness is gone (its pid's start time differs).
    let mut gone = entry("gone", me.pid, me.start + 1);
    gone.paused = true;
    let path = state.join("runs").join("gone.json");
    std::fs::write(&path, serde_json::to_vec(&gone).unwrap()).unwrap();
    let o = harness(&state, &["resume", "gone"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("is not running"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn keep_and_pause_flags_are_refused_before_anything_starts() {
    let t = tempfile::tempdir().unwrap();
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    let smoke = smoke.to_str().unwrap();
    let out = t.path().join("out");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["run", smoke, "--keep=onfailure", "--out", out],
            "is not a keep mode; valid: on-failure, always",
        ),
        (
            &["run", smoke, "--pause-on-failure", "--out", out],
            "--pause-on-failure waits for you at a terminal",
        ),
        (
            &[
                "matrix",
                "../scenarios/disks.toml",
                "--keep-running",
                "2",
                "--out",
                out,
            ],
            "--keep",
        ),
    ];
    for (args, says) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
            .args(args)
            .env("SNO_HARNESS_STATE_DIR", t.path().join("state"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
        assert!(!Path::new(out).exists(), "{args:?} made {out}");
    }
}
