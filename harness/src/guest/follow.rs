//! Following the guest over SSH across reboots: a status poller (live or installed system,
//! markers, the BiP units' states, bootstrap files) and a journal follower that streams the BiP
//! units' entries. Each runs on its own thread with its own session, reconnects whenever the
//! guest goes away (the host key changes with the system), and sends what it sees as signals.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::ssh::{SshSession, SshTarget};
use crate::flow::event::{GuestStatus, Signal, SignalTx, Source};

/// The units whose journal the follower streams (docs/bip-contract.md §5, §6).
pub const BIP_UNITS: &[&str] = &[
    "release-image.service",
    "kubelet.service",
    "bootkube.service",
    "install-to-disk.service",
    "progress.service",
    "approve-csr.service",
];

/// One shell command that reports everything the state machine needs, `|`-separated.
const STATUS_SCRIPT: &str = r#"b=$(cat /proc/sys/kernel/random/boot_id); l=0; [ -e /run/ostree-live ] && l=1
bd=0; [ -e /opt/openshift/.bootkube.done ] && bd=1; id=0; [ -e /opt/openshift/.install-to-disk.done ] && id=1
cd=0; [ -e /opt/openshift/coreos-installer.done ] && cd=1
en=$(systemctl is-enabled bootkube.service 2>/dev/null)
st=$(systemctl show -p ActiveState --value bootkube.service)/$(systemctl show -p Result --value bootkube.service)
nr=$(systemctl show -p NRestarts --value bootkube.service); ir=$(systemctl show -p NRestarts --value install-to-disk.service)
files=$(ls -d /etc/kubernetes/bootstrap-secrets /etc/kubernetes/bootstrap-configs /usr/local/bin/installer-gather.sh /usr/local/bin/installer-masters-gather.sh /var/log/log-bundle-bootstrap.tar.gz /opt/openshift 2>/dev/null | tr '\n' ' ')
echo "$b|$l|$bd|$id|$en|$st|$nr|$ir|$files|$cd|$(date +%s%N)""#;

/// Parses the status line (and the session's host key) into a `GuestStatus`.
pub fn parse_status(line: &str, host_key: &str) -> Option<GuestStatus> {
    let f: Vec<&str> = line.trim().split('|').collect();
    if f.len() != 11 || f[0].is_empty() {
        return None;
    }
    Some(GuestStatus {
        boot_id: f[0].to_string(),
        live: f[1] == "1",
        host_key: host_key.to_string(),
        bootkube_done: f[2] == "1",
        install_to_disk_done: f[3] == "1",
        bootkube_enabled: f[4].to_string(),
        bootkube_state: f[5].to_string(),
        bootkube_restarts: f[6].parse().unwrap_or(0),
        install_restarts: f[7].parse().unwrap_or(0),
        bootstrap_files: f[8].split_whitespace().map(str::to_string).collect(),
        coreos_installer_done: f[9] == "1",
        guest_time_ns: f[10].trim().parse().unwrap_or(0),
    })
}

/// A journal entry of `journalctl -o json` as a signal, or None for entries without a message.
pub fn parse_journal(line: &str) -> Option<(Signal, String)> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let message = match &v["MESSAGE"] {
        serde_json::Value::String(s) => s.clone(),
        // Non-UTF-8 messages come as byte arrays.
        serde_json::Value::Array(bytes) => {
            let b: Vec<u8> = bytes
                .iter()
                .filter_map(|x| x.as_u64().map(|n| n as u8))
                .collect();
            String::from_utf8_lossy(&b).into_owned()
        }
        _ => return None,
    };
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let cursor = s("__CURSOR");
    // systemd's own lines about a unit ("kubelet.service: Main process exited, code=dumped")
    // come from init.scope and name their subject in UNIT, as `journalctl -u` shows them.
    let unit = match (s("_SYSTEMD_UNIT"), s("UNIT")) {
        (own, subject) if own == "init.scope" && !subject.is_empty() => subject,
        (own, _) => own,
    };
    Some((
        Signal::Journal {
            unit,
            identifier: s("SYSLOG_IDENTIFIER"),
            message,
            guest_usec: s("__REALTIME_TIMESTAMP").parse().unwrap_or(0),
            boot_id: s("_BOOT_ID"),
        },
        cursor,
    ))
}

/// Entries `journalctl -u` would show for a bootstrap unit (its own lines, and systemd's lines
/// about it, which carry the unit in `UNIT`), plus any entry that is badness.
fn worth_sending(sig: &Signal, raw: &[u8]) -> bool {
    let Signal::Journal { unit, message, .. } = sig else {
        return false;
    };
    if BIP_UNITS.contains(&unit.as_str()) || crate::flow::badness::scan(message).is_some() {
        return true;
    }
    let v: serde_json::Value = serde_json::from_slice(raw).unwrap_or_default();
    ["UNIT", "OBJECT_SYSTEMD_UNIT"]
        .iter()
        .any(|k| v[*k].as_str().is_some_and(|u| BIP_UNITS.contains(&u)))
}

/// How long one status poll may take on a guest that answered SSH.
const STATUS_TIMEOUT: Duration = Duration::from_secs(30);

/// How long `Followers::stop` waits for its threads.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// Owns the follower threads; stops them on drop.
pub struct Followers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Closed by `stop` itself: the journal thread may still be in a blocking read then.
    raw: Option<Arc<std::sync::Mutex<RawJournal>>>,
}

impl Followers {
    /// Starts both followers; `raw_dir` gets each boot's whole journal, compressed
    /// ([`RawJournal`]).
    pub fn start(
        target: SshTarget,
        tx: SignalTx,
        poll: Duration,
        raw_dir: Option<std::path::PathBuf>,
    ) -> Followers {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        {
            let (target, tx, stop) = (target.clone(), tx.clone(), stop.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("guest-status".into())
                    .spawn(move || status_loop(&target, &tx, &stop, poll))
                    .expect("spawn"),
            );
        }
        let raw = raw_dir.map(|d| Arc::new(std::sync::Mutex::new(RawJournal::new(d))));
        {
            let (stop2, raw2) = (stop.clone(), raw.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("guest-journal".into())
                    .spawn(move || journal_loop(&target, &tx, &stop2, raw2.as_deref()))
                    .expect("spawn"),
            );
        }
        Followers { stop, threads, raw }
    }

    /// Tells the threads to stop and waits up to [`STOP_WAIT`] for them. A thread inside a
    /// blocking SSH call (a connect or an exec to a guest that is busy or going down can take
    /// several of its 5-second timeouts) is left to finish on its own: it holds nothing of the
    /// run's but a connection, and what it may still send is never read.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while self.threads.iter().any(|t| !t.is_finished()) && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        for t in self.threads.drain(..) {
            if t.is_finished() {
                let _ = t.join();
            }
        }
        if let Some(raw) = &self.raw {
            raw.lock().unwrap_or_else(|e| e.into_inner()).close();
        }
    }
}

impl Drop for Followers {
    fn drop(&mut self) {
        self.stop();
    }
}

fn sleep_unless_stopped(stop: &AtomicBool, d: Duration) {
    let step = Duration::from_millis(100);
    let mut left = d;
    while !stop.load(Ordering::SeqCst) && !left.is_zero() {
        let s = step.min(left);
        std::thread::sleep(s);
        left -= s;
    }
}

/// The guest stopped answering SSH (a reboot, a crash, a network loss): one event with why.
fn ssh_down(tx: &SignalTx, e: &impl std::fmt::Display) {
    let _ = tx.send((
        Source::Guest,
        Signal::Ssh {
            up: false,
            detail: e.to_string(),
        },
    ));
}

fn status_loop(target: &SshTarget, tx: &SignalTx, stop: &AtomicBool, poll: Duration) {
    let mut session: Option<SshSession> = None;
    let mut up = false;
    while !stop.load(Ordering::SeqCst) {
        if session.is_none() {
            match target.connect(Duration::from_secs(5)) {
                Ok(s) => {
                    // The status script runs a dozen commands; a loaded TCG guest can take
                    // well over the connect's few seconds to answer, which must not read as
                    // SSH being down.
                    s.set_io_timeout(STATUS_TIMEOUT);
                    let _ = tx.send((
                        Source::Guest,
                        Signal::Ssh {
                            up: true,
                            detail: format!(
                                "host key {}",
                                &s.host_key_sha256[..16.min(s.host_key_sha256.len())]
                            ),
                        },
                    ));
                    up = true;
                    session = Some(s);
                }
                Err(e) => {
                    if up {
                        ssh_down(tx, &e);
                        up = false;
                    }
                    sleep_unless_stopped(stop, Duration::from_secs(1));
                    continue;
                }
            }
        }
        let s = session.as_ref().expect("connected above");
        match s.exec(&format!(
            "sudo -n sh -c '{}'",
            STATUS_SCRIPT.replace('\'', r"'\''")
        )) {
            Ok(out) => {
                if let Some(st) = out
                    .stdout
                    .lines()
                    .last()
                    .and_then(|l| parse_status(l, &s.host_key_sha256))
                {
                    let _ = tx.send((Source::Guest, Signal::GuestStatus(st)));
                }
            }
            Err(e) => {
                ssh_down(tx, &e);
                up = false;
                session = None;
                continue;
            }
        }
        sleep_unless_stopped(stop, poll);
    }
}

/// Every entry of every boot, as journalctl gave it, into `journal-<n>-<boot id>.json.gz`
/// (n counting the boots the follower met; kola keeps `journal-raw.txt.gz`): what the files by
/// system leave out is still there for a postmortem. Gzip, so that a run killed mid-boot
/// leaves a file whose complete members still read (`zcat` reads up to the cut).
pub struct RawJournal {
    dir: std::path::PathBuf,
    boots: u32,
    current: Option<(String, flate2::write::GzEncoder<std::fs::File>)>,
    closed: bool,
}

impl RawJournal {
    pub fn new(dir: std::path::PathBuf) -> RawJournal {
        RawJournal {
            dir,
            boots: 0,
            current: None,
            closed: false,
        }
    }

    /// One entry (a line with its newline) of boot `boot` (its id as /proc gives it).
    pub fn line(&mut self, boot: &str, line: &[u8]) {
        use std::io::Write;
        if self.closed {
            return;
        }
        let key = crate::flow::machine::boot_key(boot);
        if self.current.as_ref().is_none_or(|(b, _)| *b != key) {
            self.finish();
            self.boots += 1;
            let path = self
                .dir
                .join(format!("journal-{}-{key}.json.gz", self.boots));
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path);
            let Ok(file) = file else {
                return;
            };
            let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
            self.current = Some((key, gz));
        }
        if let Some((_, gz)) = self.current.as_mut() {
            let _ = gz.write_all(line);
        }
    }

    /// Ends the current boot's file.
    fn finish(&mut self) {
        if let Some((_, gz)) = self.current.take() {
            let _ = gz.finish();
        }
    }

    /// Ends the current file and takes no more lines (the run is over).
    pub fn close(&mut self) {
        self.finish();
        self.closed = true;
    }
}

fn journal_loop(
    target: &SshTarget,
    tx: &SignalTx,
    stop: &AtomicBool,
    raw: Option<&std::sync::Mutex<RawJournal>>,
) {
    // The last cursor seen per boot, so a reconnect resumes without repeating entries.
    let mut cursor: Option<(String, String)> = None;
    while !stop.load(Ordering::SeqCst) {
        let session = match target.connect(Duration::from_secs(5)) {
            Ok(s) => s,
            Err(_) => {
                sleep_unless_stopped(stop, Duration::from_secs(1));
                continue;
            }
        };
        let boot = session
            .succeed("cat /proc/sys/kernel/random/boot_id")
            .map(|b| b.trim().to_string())
            .unwrap_or_default();
        let after = match &cursor {
            Some((b, c)) if *b == boot => format!(" --after-cursor='{c}'"),
            _ => String::new(),
        };
        // The whole journal: the bootstrap units' entries are the flow's evidence, and any
        // other entry is read for badness (an OOM kill, a segfault, an ordering cycle).
        // `--no-tail`: from the boot's first entry (or the cursor), not the last ten lines
        // `-f` alone would show, so a follower that joins late loses nothing.
        let cmd = format!("sudo -n journalctl -b -f --no-tail -o json --no-pager{after}");
        let Ok(mut ch) = session.stream(&cmd) else {
            sleep_unless_stopped(stop, Duration::from_secs(1));
            continue;
        };
        let mut pending: Vec<u8> = Vec::new();
        let mut buf = [0u8; 16384];
        loop {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            match ch.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(pos) = pending.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=pos).collect();
                        if let Some((sig, c)) = parse_journal(&String::from_utf8_lossy(&line)) {
                            cursor = Some((boot.clone(), c));
                            if let Some(r) = raw {
                                r.lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .line(&boot, &line);
                            }
                            if worth_sending(&sig, &line) {
                                let _ = tx.send((Source::Journal, sig));
                            }
                        }
                    }
                }
                // The session's read timeout fires while the journal is quiet: then the guest
                // is asked whether it still answers in this boot (a reboot or a cut session
                // is found within one timeout and a probe), and the follower reconnects and
                // resumes from the cursor when it does not.
                Err(_) if !ch.eof() && session.answers_in_boot(&boot) => continue,
                Err(_) => break,
            }
        }
        sleep_unless_stopped(stop, Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let s = parse_status("abc|1|1|0|enabled|active/success|0|2|/opt/openshift /etc/kubernetes/bootstrap-secrets |1|1700000000123456789\n", "hk").unwrap();
        assert!(s.live && s.bootkube_done && !s.install_to_disk_done);
        assert!(s.coreos_installer_done);
        assert_eq!(s.install_restarts, 2);
        assert_eq!(s.guest_time_ns, 1_700_000_000_123_456_789);
        assert_eq!(
            s.bootstrap_files,
            ["/opt/openshift", "/etc/kubernetes/bootstrap-secrets"]
        );
        assert!(parse_status("garbage", "hk").is_none());
    }

    #[test]
    fn journal_entries_parse_including_byte_messages() {
        let (sig, cursor) = parse_journal(r#"{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1700000000000000","_BOOT_ID":"b","_SYSTEMD_UNIT":"bootkube.service","SYSLOG_IDENTIFIER":"bootkube.sh","MESSAGE":"Rendering MCO manifests..."}"#).unwrap();
        assert_eq!(cursor, "s=1");
        let Signal::Journal {
            unit,
            message,
            guest_usec,
            ..
        } = sig
        else {
            panic!()
        };
        assert_eq!(
            (unit.as_str(), message.as_str(), guest_usec),
            (
                "bootkube.service",
                "Rendering MCO manifests...",
                1_700_000_000_000_000
            )
        );
        let (sig, _) = parse_journal(r#"{"MESSAGE":[104,105]}"#).unwrap();
        assert!(matches!(sig, Signal::Journal { message, .. } if message == "hi"));
        assert!(parse_journal("not json").is_none());
    }

    #[test]
    fn only_bootstrap_unit_entries_and_badness_are_sent() {
        let send = |raw: &str| {
            let (sig, _) = parse_journal(raw).unwrap();
            worth_sending(&sig, raw.as_bytes())
        };
        assert!(send(
            r#"{"_SYSTEMD_UNIT":"bootkube.service","MESSAGE":"Starting etcd..."}"#
        ));
        // systemd about a bootstrap unit: its own unit is init.scope, the subject is in UNIT
        assert!(send(
            r#"{"_SYSTEMD_UNIT":"init.scope","UNIT":"install-to-disk.service","MESSAGE":"install-to-disk.service: Scheduled restart job, restart counter is at 3."}"#
        ));
        assert!(!send(
            r#"{"_SYSTEMD_UNIT":"systemd-udevd.service","MESSAGE":"Using default interface naming scheme"}"#
        ));
        assert!(send(
            r#"{"_SYSTEMD_UNIT":"minisno-memory-hog.service","MESSAGE":"minisno-memory-hog.service: A process of this unit has been killed by the OOM killer."}"#
        ));
        assert!(send(
            r#"{"_TRANSPORT":"kernel","MESSAGE":"Memory cgroup out of memory: Killed process 812 (tail)"}"#
        ));
    }
}
