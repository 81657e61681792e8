//! `sno-harness status`: the runs in progress (and kept ones) as the registry and their
//! timelines tell, for a second terminal: each run's phase and for how long, its age and its
//! last signal. Nothing is asked of the runs themselves; their `events.jsonl` is read from its
//! two ends, with a size limit, so a huge or growing timeline costs little.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;

use super::{entries, named, Entry};

/// The schema `status --json` names.
pub const SCHEMA: &str = "sno-harness/status/v1";

/// How much of a timeline's end is read for its phase and last signal.
const TAIL_BYTES: u64 = 256 * 1024;
/// How much of its start is read for the run's first event.
const HEAD_BYTES: u64 = 4 * 1024;
/// A last signal is said in at most this many characters.
const SIGNAL_CHARS: usize = 200;

/// One registered run, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunStatus {
    pub id: String,
    pub dir: String,
    pub backend: String,
    /// `running` (its harness process is alive), `kept` (ended, its VM or disks left with
    /// `--keep`) or `dead` (ended without cleaning up: `gc` removes it).
    pub state: &'static str,
    /// The phase started last and not ended, when the timeline has one.
    pub phase: Option<String>,
    pub phase_for_s: Option<u64>,
    /// Since the run's first event.
    pub elapsed_s: Option<u64>,
    pub last_signal: Option<String>,
    pub last_signal_ago_s: Option<u64>,
}

/// Every registered run of this user, or those whose id or directory is `only`.
pub fn statuses(registry: &Path, only: Option<&str>, now: SystemTime) -> Vec<RunStatus> {
    let runs: Vec<Entry> = match only {
        Some(run) => named(registry, run),
        None => entries(registry)
            .into_iter()
            .filter_map(|(_, e)| e.ok())
            .collect(),
    };
    let mut out: Vec<RunStatus> = runs.iter().map(|e| status_of(e, now)).collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn status_of(e: &Entry, now: SystemTime) -> RunStatus {
    let events = e.dir.join("events.jsonl");
    let first = read_end(&events, false).and_then(|t| t.lines().next().and_then(parse));
    let tail = read_end(&events, true).unwrap_or_default();
    let lines: Vec<serde_json::Value> = tail.lines().filter_map(parse).collect();
    let ago = |v: &serde_json::Value| {
        let t = humantime::parse_rfc3339(v["time"].as_str()?).ok()?;
        Some(now.duration_since(t).ok()?.as_secs())
    };
    let (phase, phase_start) = open_phase(&lines).unzip();
    let last = lines.last();
    RunStatus {
        id: e.id.clone(),
        dir: e.dir.display().to_string(),
        backend: e.backend.clone(),
        state: match (e.owner_alive(), e.keep) {
            (true, _) if e.paused => "paused",
            (true, _) => "running",
            (false, true) => "kept",
            (false, false) => "dead",
        },
        phase,
        phase_for_s: phase_start.and_then(ago),
        elapsed_s: first.as_ref().and_then(ago),
        last_signal: last.map(say),
        last_signal_ago_s: last.and_then(ago),
    }
}

/// The phase started last whose end is not in `lines`, with its start event.
fn open_phase(lines: &[serde_json::Value]) -> Option<(String, &serde_json::Value)> {
    let mut open = None;
    for l in lines {
        match l["kind"].as_str() {
            Some("phase-started") => open = l["phase"].as_str().map(|p| (p.to_string(), l)),
            Some("phase-ended")
                if open.as_ref().map(|(p, _)| p.as_str()) == l["phase"].as_str() =>
            {
                open = None
            }
            _ => {}
        }
    }
    open
}

/// One event in words: its kind and its fields but the clock's, shortened.
fn say(v: &serde_json::Value) -> String {
    let mut parts = vec![v["kind"].as_str().unwrap_or("event").to_string()];
    if let Some(o) = v.as_object() {
        for (k, val) in o {
            if ["time", "t_ms", "source", "kind", "guest_usec", "boot_id"].contains(&k.as_str()) {
                continue;
            }
            match val {
                serde_json::Value::String(s) => parts.push(format!("{k}={s}")),
                other => parts.push(format!("{k}={other}")),
            }
        }
    }
    // A console line may carry a terminal's control characters: never to the user's terminal.
    let text: String = parts
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match text.char_indices().nth(SIGNAL_CHARS) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

fn parse(line: &str) -> Option<serde_json::Value> {
    serde_json::from_str(line).ok()
}

/// The last `TAIL_BYTES` of `path` from its first whole line (`tail`), or its first
/// `HEAD_BYTES`; None when it cannot be read (not there yet).
fn read_end(path: &Path, tail: bool) -> Option<String> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut buf = Vec::new();
    if tail {
        let from = len.saturating_sub(TAIL_BYTES);
        f.seek(SeekFrom::Start(from)).ok()?;
        f.take(TAIL_BYTES).read_to_end(&mut buf).ok()?;
        if from > 0 {
            let cut = buf
                .iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |i| i + 1);
            buf.drain(..cut);
        }
    } else {
        f.take(HEAD_BYTES).read_to_end(&mut buf).ok()?;
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The table `status` prints: one line a run.
pub fn table(runs: &[RunStatus]) -> String {
    if runs.is_empty() {
        return "no run is registered (runs in progress and kept ones are)\n".to_string();
    }
    let secs = |s: Option<u64>| s.map_or("-".to_string(), |s| format!("{s} s"));
    let mut out = String::from("ID  STATE  PHASE (FOR)  ELAPSED  LAST SIGNAL (AGO)\n");
    for r in runs {
        out += &format!(
            "{}  {}  {} ({})  {}  {} ({})\n  {}\n",
            r.id,
            r.state,
            r.phase.as_deref().unwrap_or("-"),
            secs(r.phase_for_s),
            secs(r.elapsed_s),
            r.last_signal.as_deref().unwrap_or("-"),
            secs(r.last_signal_ago_s),
            r.dir
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{register, ProcessId};

    fn event(time: &str, rest: &str) -> String {
        format!("{{\"time\":\"{time}\",\"t_ms\":0,\"source\":\"harness\",{rest}}}\n")
    }

    #[test]
    fn a_running_run_shows_its_open_phase_its_age_and_its_last_signal() {
        let t = tempfile::tempdir().unwrap();
        let (registry, run) = (t.path().join("runs"), t.path().join("smoke"));
        std::fs::create_dir_all(&run).unwrap();
        let timeline = [
            event("2026-12-06T18:00:00Z", "\"kind\":\"note\",\"text\":\"run smoke started\""),
            event("2026-12-06T18:00:01Z", "\"kind\":\"phase-started\",\"phase\":\"live-boot\",\"timeout_s\":240"),
            event("2026-12-06T18:00:40Z", "\"kind\":\"phase-ended\",\"phase\":\"live-boot\",\"status\":\"pass\""),
            event("2026-12-06T18:00:40Z", "\"kind\":\"phase-started\",\"phase\":\"bootkube\",\"timeout_s\":180"),
            event("2026-12-06T18:00:55Z", "\"kind\":\"journal\",\"unit\":\"bootkube.service\",\"message\":\"Starting\\r\\u001b[2Ketcd\",\"guest_usec\":1"),
        ]
        .concat();
        std::fs::write(run.join("events.jsonl"), timeline).unwrap();
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
        let _reg = register(&registry, entry).unwrap();
        let now = humantime::parse_rfc3339("2026-12-06T18:01:00Z").unwrap();
        let all = statuses(&registry, None, now);
        assert_eq!(all.len(), 1);
        let s = &all[0];
        assert_eq!(s.state, "running");
        assert_eq!(s.phase.as_deref(), Some("bootkube"));
        assert_eq!(
            (s.phase_for_s, s.elapsed_s, s.last_signal_ago_s),
            (Some(20), Some(60), Some(5))
        );
        assert_eq!(
            s.last_signal.as_deref(),
            Some("journal message=Starting  [2Ketcd unit=bootkube.service")
        );
        assert!(table(&all).contains("smoke  running  bootkube (20 s)  60 s"));
        assert!(statuses(&registry, Some("other"), now).is_empty());
        assert_eq!(
            statuses(&registry, Some(run.to_str().unwrap()), now).len(),
            1
        );
    }

    #[test]
    fn a_timeline_larger_than_the_tail_is_read_from_a_whole_line() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("events.jsonl");
        let filler = event("2026-12-06T18:00:00Z", "\"kind\":\"note\",\"text\":\"x\"");
        let mut text = filler.repeat((TAIL_BYTES as usize / filler.len()) + 10);
        text += &event(
            "2026-12-06T18:00:09Z",
            "\"kind\":\"note\",\"text\":\"last\"",
        );
        std::fs::write(&path, text).unwrap();
        let tail = read_end(&path, true).unwrap();
        assert!(tail.lines().all(|l| parse(l).is_some()), "every line whole");
        assert!(tail.ends_with("\"text\":\"last\"}\n"));
    }
}
