//! The journal follower across lost sessions, against a private sshd on 127.0.0.1 whose
//! sessions find a stand-in `journalctl` (entries from a file, `--after-cursor` honoured,
//! following it like `-f`) and `sudo`: the follower's session is cut (its sshd process
//! killed), then frozen (stopped, the TCP connection left open, as a guest that went away
//! behind QEMU's user networking leaves it), and each time the follower reconnects and
//! resumes from its cursor: every entry arrives once, in order. And an entry the follow
//! stream steps past (as the real `journalctl -f` can when it interleaves a boot's files) is
//! fetched again by its sequence number.

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

/// Appends entries `from..=to` (sequence number N in the cursor, message `entry N`) of this
/// host's boot.
fn append(entries: &Path, boot: &str, from: u32, to: u32) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(entries)
        .unwrap();
    for n in from..=to {
        let e = serde_json::json!({
            "__CURSOR": format!("s=5e9;i={n:x};b={boot}"),
            "__REALTIME_TIMESTAMP": (1_700_000_000_000_000u64 + u64::from(n)).to_string(),
            "_BOOT_ID": boot,
            "_SYSTEMD_UNIT": "bootkube.service",
            "SYSLOG_IDENTIFIER": "bootkube.sh",
            "MESSAGE": format!("entry {n}"),
        });
        writeln!(f, "{e}").unwrap();
    }
}

/// What the followers sent: the journal's messages, and every other signal as a line, for
/// the failure message (a gap query that failed says why in a note; SSH going down and up).
#[derive(Default)]
struct Received {
    messages: Vec<String>,
    others: Vec<String>,
}

/// Receives until there are `n` journal messages (or the deadline).
fn messages(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(Source, Signal)>,
    got: &mut Received,
    n: usize,
    within: Duration,
) {
    let started = Instant::now();
    while got.messages.len() < n && started.elapsed() < within {
        match rx.try_recv() {
            Ok((Source::Journal, Signal::Journal { message, .. })) => got.messages.push(message),
            Ok((source, signal)) => got.others.push(format!(
                "{:.1}s {source:?} {signal:?}",
                started.elapsed().as_secs_f64()
            )),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

impl Received {
    /// The failure's evidence: what came, the other signals, the end of the sshd's log.
    fn evidence(&self, sshd: &Sshd) -> String {
        let log = sshd.log();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        format!(
            "messages {:?}\nother signals:\n{}\nsshd log (last 40 lines):\n{}",
            self.messages,
            self.others.join("\n"),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
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

/// A private sshd whose sessions find a stand-in `sudo` and `journalctl`. The journalctl
/// prints the entries of `entries.jsonl` after `--after-cursor` and, with `-f`, keeps
/// following the file, leaving out the entries whose line numbers `hidden` lists.
struct Guest {
    tools: tempfile::TempDir,
    sshd: Sshd,
    boot: String,
    raw: tempfile::TempDir,
}

impl Guest {
    fn start() -> Guest {
        Guest::start_slowed(0)
    }

    /// A guest as a loaded host (or a loaded TCG guest) shows it: every `cat` takes `seconds`,
    /// and so does `journalctl` before its first line. With 2 seconds a command over SSH takes
    /// longer than the follow stream's 5-second read timeout (the status poll took 20 s here):
    /// the sessions' own start-up runs `cat` too.
    fn start_slowed(seconds: u32) -> Guest {
        let tools = tempfile::tempdir().unwrap();
        let entries = tools.path().join("entries.jsonl");
        let hidden = tools.path().join("hidden");
        std::fs::write(&entries, "").unwrap();
        std::fs::write(&hidden, "").unwrap();
        script(
            tools.path(),
            "sudo",
            "#!/bin/sh\n[ \"$1\" = -n ] && shift\nexec \"$@\"\n",
        );
        script(
            tools.path(),
            "cat",
            &format!("#!/bin/sh\nsleep {seconds}\nexec /bin/cat \"$@\"\n"),
        );
        script(
            tools.path(),
            "journalctl",
            &format!(
                r#"#!/bin/bash
sleep {seconds}
after=0 follow=0
for a in "$@"; do case "$a" in
    --after-cursor=*) c=${{a#*;i=}}; after=$((16#${{c%%;*}})) ;;
    -f) follow=1 ;;
esac; done
n=0
while true; do
    total=$(wc -l < {e})
    while [ "$n" -lt "$total" ]; do
        n=$((n + 1))
        [ "$follow" = 1 ] && grep -qx "$n" {h} && continue
        [ "$n" -gt "$after" ] && sed -n "${{n}}p" {e}
    done
    [ "$follow" = 1 ] || exit 0
    sleep 0.2
done
"#,
                e = entries.display(),
                h = hidden.display(),
                seconds = seconds,
            ),
        );
        let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", tools.path().display());
        let sshd = Sshd::start_with(&format!("SetEnv PATH={path}\n"));
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .unwrap()
            .trim()
            .replace('-', "");
        let raw = tempfile::tempdir().unwrap();
        Guest {
            tools,
            sshd,
            boot,
            raw,
        }
    }

    fn entries(&self) -> std::path::PathBuf {
        self.tools.path().join("entries.jsonl")
    }

    fn follow(
        &self,
    ) -> (
        Followers,
        tokio::sync::mpsc::UnboundedReceiver<(Source, Signal)>,
    ) {
        let key = SshKeyPair::generate("journal-follower-test").unwrap();
        std::fs::write(self.sshd.path("authorized_keys"), &key.public_openssh).unwrap();
        let target = SshTarget {
            addr: ([127, 0, 0, 1], self.sshd.port).into(),
            user: "root".into(),
            key,
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let followers = Followers::start(
            target,
            tx,
            Duration::from_secs(3600),
            Some(self.raw.path().to_path_buf()),
        );
        (followers, rx)
    }

    /// The boot's raw journal as the follower wrote it.
    fn raw_journal(&self) -> String {
        let gz = self
            .raw
            .path()
            .join(format!("journal-1-{}.json.gz", self.boot));
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()),
            &mut text,
        )
        .unwrap();
        text
    }
}

#[test]
fn a_cut_or_frozen_session_is_resumed_from_the_cursor_without_a_loss_or_a_repeat() {
    let guest = Guest::start();
    let (entries, boot, sshd) = (guest.entries(), guest.boot.clone(), &guest.sshd);
    let (mut followers, mut rx) = guest.follow();
    let mut got = Received::default();

    append(&entries, &boot, 1, 5);
    messages(&mut rx, &mut got, 5, Duration::from_secs(60));
    assert_eq!(
        got.messages.len(),
        5,
        "before any cut: {}",
        got.evidence(sshd)
    );

    // Cut: the sessions' processes are killed, the connection closes.
    assert!(signal_sessions(sshd, libc::SIGKILL) > 0);
    append(&entries, &boot, 6, 10);
    messages(&mut rx, &mut got, 10, Duration::from_secs(60));
    assert_eq!(
        got.messages.len(),
        10,
        "after the cut: {}",
        got.evidence(sshd)
    );

    // Frozen: the sessions stop answering, their TCP connections stay open.
    std::thread::sleep(Duration::from_secs(1));
    let frozen = sshd.sessions();
    assert!(signal_sessions(sshd, libc::SIGSTOP) > 0);
    let since = Instant::now();
    append(&entries, &boot, 11, 15);
    messages(&mut rx, &mut got, 15, Duration::from_secs(90));
    let resumed_after = since.elapsed();
    let evidence = got.evidence(sshd);
    for pid in frozen {
        // SAFETY: as above; a stopped process takes SIGKILL.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    followers.stop();
    let want: Vec<String> = (1..=15).map(|n| format!("entry {n}")).collect();
    assert_eq!(got.messages, want, "every entry once, in order: {evidence}");
    // The raw journal of the boot has every entry once too, in order, as journalctl gave it.
    assert_eq!(
        guest.raw_journal(),
        std::fs::read_to_string(&entries).unwrap()
    );
    eprintln!("a frozen session was left and its entries resumed in {resumed_after:?}");
}

#[test]
fn an_entry_the_follow_stream_steps_past_is_fetched_again_and_kept_in_its_place() {
    let guest = Guest::start();
    // Entries 4 and 7 never come through `-f`; 9 has no message (raw journal only).
    std::fs::write(guest.tools.path().join("hidden"), "4\n7\n").unwrap();
    append(&guest.entries(), &guest.boot, 1, 8);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(guest.entries())
        .unwrap();
    let quiet = serde_json::json!({"__CURSOR": format!("s=5e9;i=9;b={}", guest.boot), "_BOOT_ID": guest.boot});
    writeln!(f, "{quiet}").unwrap();
    append(&guest.entries(), &guest.boot, 10, 10);
    let (mut followers, mut rx) = guest.follow();
    let mut got = Received::default();
    messages(&mut rx, &mut got, 9, Duration::from_secs(60));
    followers.stop();
    let evidence = got.evidence(&guest.sshd);
    let want: Vec<String> = [1, 2, 3, 4, 5, 6, 7, 8, 10]
        .iter()
        .map(|n| format!("entry {n}"))
        .collect();
    assert_eq!(
        got.messages, want,
        "the skipped entries in their places: {evidence}"
    );
    assert_eq!(
        guest.raw_journal(),
        std::fs::read_to_string(guest.entries()).unwrap(),
        "the raw journal: every entry, the one without a message too, in order"
    );
}

/// A guest whose commands take longer than the stream's read timeout (CI saw a loaded host
/// starve the follower for a minute: each quiet read gave up the session, and each new session
/// had to start again at the same cost) is waited for: the entries arrive, once each.
#[test]
fn a_guest_slower_than_the_streams_read_timeout_is_waited_for_not_given_up() {
    let guest = Guest::start_slowed(2);
    append(&guest.entries(), &guest.boot, 1, 3);
    let (mut followers, mut rx) = guest.follow();
    let mut got = Received::default();
    messages(&mut rx, &mut got, 3, Duration::from_secs(60));
    followers.stop();
    let want: Vec<String> = (1..=3).map(|n| format!("entry {n}")).collect();
    assert_eq!(got.messages, want, "{}", got.evidence(&guest.sshd));
}
