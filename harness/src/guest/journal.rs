//! The journal follower: the guest's whole journal over SSH, each boot from its first entry,
//! resumed from the last cursor after a lost session, and the entries `journalctl -f` stepped
//! past fetched again (see [`Reader::fill_gap`]). Every entry goes to the raw journal; the BiP
//! units' entries and badness also go out as signals.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::ssh::{SshSession, SshTarget};
use crate::flow::event::{Signal, SignalTx, Source};
use crate::util::wait::sleep_unless_stopped;

/// The units whose journal the follower streams (docs/bip-contract.md §5, §6).
pub const BIP_UNITS: &[&str] = &[
    "release-image.service",
    "kubelet.service",
    "bootkube.service",
    "install-to-disk.service",
    "progress.service",
    "approve-csr.service",
];

/// The most entries one gap may miss for the follower to fetch them again; a bigger jump is
/// reported and left.
const MAX_GAP: u64 = 5000;

/// How many entries past the gap's size the query for it reads: the missing entries come
/// among the first after the cursor, interleaved with a few of the other files'.
const GAP_SLACK: u64 = 200;

/// An entry as a signal, or None for an entry without a message.
pub fn signal_of(v: &Value) -> Option<Signal> {
    let message = match &v["MESSAGE"] {
        Value::String(s) => s.clone(),
        // Non-UTF-8 messages come as byte arrays.
        Value::Array(bytes) => {
            let b: Vec<u8> = bytes
                .iter()
                .filter_map(|x| x.as_u64().map(|n| n as u8))
                .collect();
            String::from_utf8_lossy(&b).into_owned()
        }
        _ => return None,
    };
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    // systemd's own lines about a unit ("kubelet.service: Main process exited, code=dumped")
    // come from init.scope and name their subject in UNIT, as `journalctl -u` shows them.
    let unit = match (s("_SYSTEMD_UNIT"), s("UNIT")) {
        (own, subject) if own == "init.scope" && !subject.is_empty() => subject,
        (own, _) => own,
    };
    Some(Signal::Journal {
        unit,
        identifier: s("SYSLOG_IDENTIFIER"),
        message,
        guest_usec: s("__REALTIME_TIMESTAMP").parse().unwrap_or(0),
        boot_id: s("_BOOT_ID"),
    })
}

/// The sequence number journald gave an entry, from its cursor's `i=` (hex). journald counts
/// a boot's entries with one counter across all its files (the system's and each user's), so
/// consecutive entries of a boot have consecutive numbers.
pub fn seqnum(cursor: &str) -> Option<u64> {
    cursor
        .split(';')
        .find_map(|kv| kv.strip_prefix("i="))
        .and_then(|i| u64::from_str_radix(i, 16).ok())
}

/// Whether a cursor the guest gave can go inside single quotes on its shell: journald's
/// cursors are `key=hex` pairs joined by `;`, and anything else is not used.
fn quotable(cursor: &str) -> bool {
    !cursor.is_empty()
        && cursor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'=' || b == b';')
}

/// Entries `journalctl -u` would show for a bootstrap unit (its own lines, and systemd's lines
/// about it, which carry the unit in `UNIT`), plus any entry that is badness.
pub fn worth_sending(sig: &Signal, v: &Value) -> bool {
    let Signal::Journal { unit, message, .. } = sig else {
        return false;
    };
    if BIP_UNITS.contains(&unit.as_str()) || crate::flow::badness::scan(message).is_some() {
        return true;
    }
    // The profiles NetworkManager activates: a static node's keyfiles must be among them.
    if unit == "NetworkManager.service"
        && crate::flow::machine::network::activated_profile(message).is_some()
    {
        return true;
    }
    ["UNIT", "OBJECT_SYSTEMD_UNIT"]
        .iter()
        .any(|k| v[*k].as_str().is_some_and(|u| BIP_UNITS.contains(&u)))
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

/// Where the follower is in the guest's journal, kept across sessions of one boot.
#[derive(Default)]
struct Place {
    boot: String,
    cursor: Option<String>,
    seqnum: Option<u64>,
    /// Entries taken by a gap's query, ahead of the stream: when the stream brings one of
    /// them after all, it is not taken twice.
    filled: std::collections::BTreeSet<u64>,
}

/// Takes the entries of one boot's journal, in the order of their sequence numbers.
struct Reader<'a> {
    tx: &'a SignalTx,
    raw: Option<&'a Mutex<RawJournal>>,
    place: Place,
}

impl Reader<'_> {
    /// Moves to boot `boot`: the same boot keeps its place, another one starts afresh.
    fn enter(&mut self, boot: &str) {
        if self.place.boot != boot {
            self.place = Place {
                boot: boot.to_string(),
                ..Place::default()
            };
        }
    }

    /// The `--after-cursor` option that resumes where this boot was left, if anywhere.
    fn resume_option(&self) -> String {
        match &self.place.cursor {
            Some(c) if quotable(c) => format!(" --after-cursor='{c}'"),
            _ => String::new(),
        }
    }

    /// One line of the follow stream (with its newline).
    fn take(&mut self, session: &SshSession, line: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let Some(now) = v["__CURSOR"].as_str().and_then(seqnum) else {
            return self.keep(line, &v);
        };
        if self.place.filled.remove(&now) {
            return;
        }
        // A number lower than the last is left alone: a counter that starts again (journald's
        // files removed under it) is not a gap.
        if let Some(last) = self.place.seqnum.filter(|&last| now > last + 1) {
            self.fill_gap(session, last, now);
        }
        self.keep(line, &v);
    }

    /// Records an entry: the raw journal, the place, and a signal when it is worth one.
    fn keep(&mut self, line: &[u8], v: &Value) {
        if let Some(c) = v["__CURSOR"].as_str() {
            self.place.cursor = Some(c.to_string());
            self.place.seqnum = seqnum(c).or(self.place.seqnum);
        }
        if let Some(r) = self.raw {
            r.lock()
                .unwrap_or_else(|e| e.into_inner())
                .line(&self.place.boot, line);
        }
        if let Some(sig) = signal_of(v) {
            if worth_sending(&sig, v) {
                let _ = self.tx.send((Source::Journal, sig));
            }
        }
    }

    /// The entries numbered between `last` and `now`, which the follow stream skipped.
    /// `journalctl -f` interleaves the boot's files and can step past an entry that reached
    /// one file (user-1000.journal: sudo's lines) after it had read a later entry from another
    /// (system.journal). Seen at the live system's shutdown: seqnum 828 missing between two of
    /// systemd's lines. A query from the last cursor reads the files afresh and has it.
    fn fill_gap(&mut self, session: &SshSession, last: u64, now: u64) {
        let want = now - last - 1;
        let after = self.resume_option();
        if want > MAX_GAP || after.is_empty() {
            return self.note(format!(
                "journal: {want} entries (seqnums {}..{}) were not in the follow stream; not fetched",
                last + 1,
                now - 1
            ));
        }
        let cmd = format!(
            "sudo -n journalctl -b -o json --no-pager{after} | head -n {}",
            want + GAP_SLACK
        );
        // Once more on a failure: the query is a second channel beside the stream's, and one
        // lost channel must not lose the entries for good.
        let out = session.with_io_timeout(PROBE_TIMEOUT, |s| {
            s.exec_bytes(&cmd, 64 << 20)
                .or_else(|_| s.exec_bytes(&cmd, 64 << 20))
        });
        let (stdout, failed) = match out {
            Ok(out) => (out.stdout, String::new()),
            Err(e) => (Vec::new(), format!(" (the query failed twice: {e})")),
        };
        let mut found: Vec<(u64, Vec<u8>, Value)> = stdout
            .split(|&b| b == b'\n')
            .filter_map(|l| {
                let v: Value = serde_json::from_slice(l).ok()?;
                let n = seqnum(v["__CURSOR"].as_str()?)?;
                (last < n && n < now).then(|| (n, [l, b"\n"].concat(), v))
            })
            .collect();
        found.sort_by_key(|(n, ..)| *n);
        found.dedup_by_key(|(n, ..)| *n);
        let got = found.len() as u64;
        for (n, line, v) in found {
            self.keep(&line, &v);
            self.place.filled.insert(n);
        }
        let missing = if got == want {
            String::new()
        } else {
            format!("; {} not found{failed}", want - got)
        };
        self.note(format!(
            "journal: {got} of {want} entries (seqnums {}..{}) the follow stream skipped were fetched again{missing}",
            last + 1,
            now - 1
        ));
    }

    fn note(&self, text: String) {
        tracing::info!("{text}");
        let _ = self.tx.send((Source::Journal, Signal::Note { text }));
    }
}

/// How long a read of the follow stream waits before the guest is probed: a quiet journal
/// and a lost guest look the same until then.
const STREAM_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the probe of a quiet stream's guest (and the boot id's read) may take before the
/// session is given up: as long as a status poll may, since both run commands on the same
/// guest under the same load.
const PROBE_TIMEOUT: Duration = super::ssh::COMMAND_IO_TIMEOUT;

/// Follows the journal until `stop`, reconnecting whenever the session is lost.
pub fn journal_loop(
    target: &SshTarget,
    tx: &SignalTx,
    stop: &AtomicBool,
    raw: Option<&Mutex<RawJournal>>,
) {
    let mut reader = Reader {
        tx,
        raw,
        place: Place::default(),
    };
    while !stop.load(Ordering::SeqCst) {
        let session = match target.connect(STREAM_READ_TIMEOUT) {
            Ok(s) => s,
            Err(_) => {
                sleep_unless_stopped(stop, Duration::from_secs(1));
                continue;
            }
        };
        // Without the boot's id the place cannot be kept (an empty id would start the boot
        // afresh and send its entries again): this session is given up instead.
        let boot = session.with_io_timeout(PROBE_TIMEOUT, |s| {
            s.succeed("cat /proc/sys/kernel/random/boot_id")
                .map(|b| b.trim().to_string())
        });
        let Some(boot) = boot.ok().filter(|b| !b.is_empty()) else {
            sleep_unless_stopped(stop, Duration::from_secs(1));
            continue;
        };
        reader.enter(&boot);
        follow_session(&session, &mut reader, stop);
        sleep_unless_stopped(stop, Duration::from_millis(500));
    }
}

/// Streams one session's `journalctl -f` into the reader until the session ends, is lost, or
/// `stop` is set.
fn follow_session(session: &SshSession, reader: &mut Reader, stop: &AtomicBool) {
    // The whole journal: the bootstrap units' entries are the flow's evidence, and any
    // other entry is read for badness (an OOM kill, a segfault, an ordering cycle).
    // `--no-tail`: from the boot's first entry (or the cursor), not the last ten lines
    // `-f` alone would show, so a follower that joins late loses nothing.
    let cmd = format!(
        "sudo -n journalctl -b -f --no-tail -o json --no-pager{}",
        reader.resume_option()
    );
    let Ok(mut ch) = session.stream(&cmd) else {
        return;
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 16384];
    while !stop.load(Ordering::SeqCst) {
        match ch.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                while let Some(pos) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=pos).collect();
                    reader.take(session, &line);
                }
            }
            // The session's read timeout fires while the journal is quiet: then the guest
            // is asked whether it still answers in this boot (a reboot or a cut session
            // is found within one timeout and a probe), and the follower reconnects and
            // resumes from the cursor when it does not.
            // The probe gets longer than a read: on a loaded host (or guest) a command can take
            // more than the stream's few seconds, and a session given up for that is started
            // again at the same cost, over and over (CI saw a follower get nothing for a minute).
            Err(_)
                if !ch.eof()
                    && session.with_io_timeout(PROBE_TIMEOUT, |s| {
                        s.answers_in_boot(&reader.place.boot)
                    }) =>
            {
                continue
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Option<Signal> {
        signal_of(&serde_json::from_str(line).ok()?)
    }

    #[test]
    fn journal_entries_parse_including_byte_messages() {
        let sig = parse(r#"{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1700000000000000","_BOOT_ID":"b","_SYSTEMD_UNIT":"bootkube.service","SYSLOG_IDENTIFIER":"bootkube.sh","MESSAGE":"Rendering MCO manifests..."}"#).unwrap();
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
        let sig = parse(r#"{"MESSAGE":[104,105]}"#).unwrap();
        assert!(matches!(sig, Signal::Journal { message, .. } if message == "hi"));
        assert!(parse("not json").is_none());
    }

    #[test]
    fn only_bootstrap_unit_entries_and_badness_are_sent() {
        let send = |raw: &str| {
            let sig = parse(raw).unwrap();
            worth_sending(&sig, &serde_json::from_str(raw).unwrap())
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

    #[test]
    fn the_sequence_number_is_the_cursors_hex_i() {
        assert_eq!(
            seqnum("s=554de8;i=33d;b=4672;m=8eb;t=661;x=aaad"),
            Some(0x33d)
        );
        assert_eq!(seqnum("s=554de8;b=4672"), None);
        assert_eq!(seqnum("s=1;i=zz"), None);
    }

    #[test]
    fn only_a_cursor_of_key_hex_pairs_goes_on_the_guests_command_line() {
        assert!(quotable("s=554de8;i=33d;b=4672;m=8eb;t=661;x=aaad"));
        assert!(!quotable("s=1';reboot;'"));
        assert!(!quotable(""));
    }
}
