//! `status`, `ssh` and `console` without a VM: what they say of the registry as it is, their
//! exit codes, and a console log read with the guest's control characters replaced. (Their runs
//! on a VM are in docs/measurements.md, "CI's time and the first hands-on commands".)

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
    for cmd in ["ssh", "console"] {
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
        qemu: None,
        private: None,
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
