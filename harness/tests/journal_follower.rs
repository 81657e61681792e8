//! The journal follower across lost sessions, against a private sshd on 127.0.0.1 whose
//! sessions find a stand-in `journalctl` (entries from a file, `--after-cursor` honoured,
//! following it like `-f`) and `sudo`: the follower's session is cut (its sshd process
//! killed), then frozen (stopped, the TCP connection left open, as a guest that went away
//! behind QEMU's user networking leaves it), and each time the follower reconnects and
//! resumes from its cursor: every entry arrives once, in order.

mod private_sshd;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use private_sshd::Sshd;
use sno_harness::flow::event::{Signal, Source};
use sno_harness::guest::follow::Followers;
use sno_harness::guest::ssh::{SshKeyPair, SshTarget};

fn script(dir: &Path, name: &str, text: &str) {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Appends entries `from..=to` (cursor `c=N`, message `entry N`) of this host's boot.
fn append(entries: &Path, boot: &str, from: u32, to: u32) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(entries)
        .unwrap();
    for n in from..=to {
        let e = serde_json::json!({
            "__CURSOR": format!("c={n}"),
            "__REALTIME_TIMESTAMP": (1_700_000_000_000_000u64 + u64::from(n)).to_string(),
            "_BOOT_ID": boot,
            "_SYSTEMD_UNIT": "bootkube.service",
            "SYSLOG_IDENTIFIER": "bootkube.sh",
            "MESSAGE": format!("entry {n}"),
        });
        writeln!(f, "{e}").unwrap();
    }
}

/// The journal messages received until there are `n` of them (or the deadline).
fn messages(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(Source, Signal)>,
    got: &mut Vec<String>,
    n: usize,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    while got.len() < n && Instant::now() < deadline {
        match rx.try_recv() {
            Ok((Source::Journal, Signal::Journal { message, .. })) => got.push(message),
            Ok(_) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn signal_sessions(sshd: &Sshd, sig: i32) -> usize {
    let pids = sshd.sessions();
    for pid in &pids {
        // SAFETY: kill(2) of a process this test's sshd started.
        unsafe { libc::kill(*pid as libc::pid_t, sig) };
    }
    pids.len()
}

#[test]
fn a_cut_or_frozen_session_is_resumed_from_the_cursor_without_a_loss_or_a_repeat() {
    let tools = tempfile::tempdir().unwrap();
    let entries = tools.path().join("entries.jsonl");
    std::fs::write(&entries, "").unwrap();
    script(
        tools.path(),
        "sudo",
        "#!/bin/sh\n[ \"$1\" = -n ] && shift\nexec \"$@\"\n",
    );
    script(
        tools.path(),
        "journalctl",
        &format!(
            r#"#!/bin/bash
after=0
for a in "$@"; do case "$a" in --after-cursor=c=*) after=${{a#--after-cursor=c=}} ;; esac; done
n=0
while true; do
    total=$(wc -l < {e})
    while [ "$n" -lt "$total" ]; do
        n=$((n + 1))
        [ "$n" -gt "$after" ] && sed -n "${{n}}p" {e}
    done
    sleep 0.2
done
"#,
            e = entries.display()
        ),
    );
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", tools.path().display());
    let sshd = Sshd::start_with(&format!("SetEnv PATH={path}\n"));
    let key = SshKeyPair::generate("journal-follower-test").unwrap();
    std::fs::write(sshd.path("authorized_keys"), &key.public_openssh).unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .replace('-', "");
    let target = SshTarget {
        addr: ([127, 0, 0, 1], sshd.port).into(),
        user: "root".into(),
        key,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let raw = tempfile::tempdir().unwrap();
    let mut followers = Followers::start(
        target,
        tx,
        Duration::from_secs(3600),
        Some(raw.path().to_path_buf()),
    );
    let mut got = Vec::new();

    append(&entries, &boot, 1, 5);
    messages(&mut rx, &mut got, 5, Duration::from_secs(60));
    assert_eq!(got.len(), 5, "before any cut: {got:?}\n{}", sshd.log());

    // Cut: the sessions' processes are killed, the connection closes.
    assert!(signal_sessions(&sshd, libc::SIGKILL) > 0);
    append(&entries, &boot, 6, 10);
    messages(&mut rx, &mut got, 10, Duration::from_secs(60));
    assert_eq!(got.len(), 10, "after the cut: {got:?}");

    // Frozen: the sessions stop answering, their TCP connections stay open.
    std::thread::sleep(Duration::from_secs(1));
    let frozen = sshd.sessions();
    assert!(signal_sessions(&sshd, libc::SIGSTOP) > 0);
    let since = Instant::now();
    append(&entries, &boot, 11, 15);
    messages(&mut rx, &mut got, 15, Duration::from_secs(90));
    let resumed_after = since.elapsed();
    for pid in frozen {
        // SAFETY: as above; a stopped process takes SIGKILL.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    followers.stop();
    let want: Vec<String> = (1..=15).map(|n| format!("entry {n}")).collect();
    assert_eq!(got, want, "every entry once, in order");
    // The raw journal of the boot has every entry once too, in order, as journalctl gave it.
    let gz = raw.path().join(format!("journal-1-{boot}.json.gz"));
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut text,
    )
    .unwrap();
    assert_eq!(text, std::fs::read_to_string(&entries).unwrap());
    eprintln!("a frozen session was left and its entries resumed in {resumed_after:?}");
}
