//! `[access] authorized_keys` on a real run: a key the test makes with ssh-keygen, named in the
//! scenario, logs in as `core` (OpenSSH's client, with that key only, not the run's) to the live
//! system during bootkube and to the installed system after the reboot, and the run passes
//! with the key's fingerprint in result.json. The smoke scenario on minisno's normal schedule:
//! its live system stays up a minute after the install (the reboot's delay) and its installed
//! one several minutes before the cluster is ready, time enough to log in under TCG. The
//! phases after the API are given the time that schedule takes (the defaults are the fast
//! one's): its operators alone take some 4 minutes to settle.

mod run_watch;
use run_watch::{
    private_dir_of, slow_smoke, wait_for_bootkube, wait_for_events, what_the_run_left,
};

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a login may take to succeed: sshd starts late in each boot under TCG.
const LOGIN_WAIT: Duration = Duration::from_secs(240);

fn ssh_keygen(args: &[&str]) -> String {
    let out = Command::new("ssh-keygen").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `id -un` and which system answered, over SSH with `key` alone as `core` at `address`
/// (the run's `core@127.0.0.1:PORT`); None while the node does not let it in.
fn login(key: &Path, address: &str) -> Option<(String, String)> {
    let (_, address) = address.trim().rsplit_once('@')?;
    let (host, port) = address.rsplit_once(':')?;
    let out = Command::new("ssh")
        .args(["-F", "/dev/null", "-i"])
        .arg(key)
        .args(["-p", port])
        .args(["-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"])
        .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=20"])
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "LogLevel=ERROR"])
        .arg(format!("core@{host}"))
        .arg("id -un; if test -e /run/ostree-live; then echo live; else echo installed; fi")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    match (out.status.success(), lines.next(), lines.next()) {
        (true, Some(user), Some(system)) => Some((user.to_string(), system.to_string())),
        _ => None,
    }
}

/// Logs in until the `system` (live or installed) answers, while the run goes on.
fn log_in_to(system: &str, child: &mut Child, key: &Path, private: &Path, events: &Path) {
    let start = Instant::now();
    loop {
        let address = std::fs::read_to_string(private.join("ssh-address")).unwrap_or_default();
        match login(key, &address) {
            Some((user, answered)) if answered == system => {
                assert_eq!(user, "core", "{system}");
                eprintln!(
                    "logged in to the {system} system after {:?}",
                    start.elapsed()
                );
                return;
            }
            _ => {}
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before the {system} system let the key in\n{}",
                what_the_run_left(events)
            );
        }
        assert!(
            start.elapsed() < LOGIN_WAIT,
            "the {system} system did not let the key in within {LOGIN_WAIT:?}\n{}",
            what_the_run_left(events)
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

#[test]
fn the_users_own_key_logs_in_to_the_live_and_the_installed_system() {
    let out = tempfile::Builder::new()
        .prefix("sno-own-key-")
        .tempdir()
        .unwrap();
    let state = tempfile::Builder::new()
        .prefix("sno-own-key-state-")
        .tempdir()
        .unwrap();
    let key = out.path().join("me");
    ssh_keygen(&[
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "me@test",
        "-f",
        key.to_str().unwrap(),
    ]);
    let fingerprint = ssh_keygen(&[
        "-l",
        "-E",
        "sha256",
        "-f",
        &format!("{}.pub", key.display()),
    ])
    .split_whitespace()
    .nth(1)
    .unwrap()
    .to_string();
    let scenario = slow_smoke(out.path());
    let mut text = std::fs::read_to_string(&scenario).unwrap();
    text.push_str("\n[access]\nauthorized_keys = [\"me.pub\"]\n");
    text.push_str("\n[timeouts]\nbootstrap-complete = \"10m\"\ncluster-ready = \"12m\"\n");
    std::fs::write(&scenario, text).unwrap();

    let stderr = std::fs::File::create(out.path().join("harness.stderr")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(out.path().join("runs"))
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let dir = out.path().join("runs/smoke");
    let events = dir.join("events.jsonl");

    wait_for_bootkube(&mut child, &events);
    let private = private_dir_of(state.path(), "smoke").expect("the run's private directory");
    log_in_to("live", &mut child, &key, &private, &events);
    // The installed system is up once the API answers on it.
    wait_for_events(&mut child, &events, &["\"phase\":\"api-ready\""]);
    log_in_to("installed", &mut child, &key, &private, &events);

    let status = child.wait().unwrap();
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["verdict"], "pass", "{}", what_the_run_left(&events));
    assert_eq!(status.code(), Some(0));
    assert_eq!(result["authorized_keys"], serde_json::json!([fingerprint]));
    let install_config = std::fs::read_to_string(dir.join("install-config.yaml")).unwrap();
    let public = std::fs::read_to_string(format!("{}.pub", key.display())).unwrap();
    assert!(install_config.contains(public.trim()), "{install_config}");
}
