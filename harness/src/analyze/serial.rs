//! A serial console log as evidence: each line a console line, as the harness's console
//! follower sends it (escapes and control bytes dropped, `guest::console::clean_line`). A run's
//! own serial.log starts each line with the host's time (RFC 3339, milliseconds), which is
//! then the line's time; a log captured elsewhere has no clock, and its lines keep their order.

use super::limits::{cut, Limits};
use crate::guest::console::clean_line;

/// One console line and its time, if the log gives one (microseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub usec: Option<u64>,
    pub text: String,
}

/// The lines of a console log, and how many were cut at the line limit.
pub fn parse(bytes: &[u8], limits: &Limits) -> (Vec<Line>, usize) {
    let mut cuts = 0;
    let lines = bytes
        .split(|b| *b == b'\n')
        .take(limits.records)
        .map(|raw| {
            let text = clean_line(raw);
            let (usec, rest) = match stamped(&text) {
                Some((usec, rest)) => (Some(usec), rest.to_string()),
                None => (None, text),
            };
            let (kept, was_cut) = cut(&rest, limits.line_bytes);
            cuts += usize::from(was_cut);
            Line {
                usec,
                text: kept.to_string(),
            }
        })
        .collect::<Vec<_>>();
    // The split leaves an empty line after the last newline.
    let lines = match lines.split_last() {
        Some((last, rest)) if last.text.is_empty() && last.usec.is_none() => rest.to_vec(),
        _ => lines,
    };
    (lines, cuts)
}

/// `2026-11-30T09:43:08.669Z rest`: the time and the rest.
fn stamped(line: &str) -> Option<(u64, &str)> {
    let (stamp, rest) = line.split_once(' ')?;
    if stamp.len() < 20 || !stamp.ends_with('Z') || stamp.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    let at = humantime::parse_rfc3339(stamp).ok()?;
    let usec = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros() as u64;
    Some((usec, rest))
}

/// Whether most of the first lines carry the run's own time stamps.
pub fn is_stamped(head: &str) -> bool {
    let lines: Vec<&str> = head.lines().take(20).filter(|l| !l.is_empty()).collect();
    !lines.is_empty() && lines.iter().filter(|l| stamped(l).is_some()).count() * 2 > lines.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_serial_log_gives_each_line_its_time_and_a_raw_one_none() {
        // Written from the format of the harness's serial.log (console.rs), not recorded.
        let log = b"2026-11-30T09:43:08.669Z [    0.000000] Linux version 6.1.0\n2026-11-30T09:43:08.670Z \x1b[0;32m  OK  \x1b[0m ready\r\n";
        let (lines, cuts) = parse(log, &Limits::default());
        assert_eq!(cuts, 0);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].text, "[    0.000000] Linux version 6.1.0");
        assert_eq!(lines[1].text, "  OK   ready");
        let t0 = lines[0].usec.unwrap();
        assert_eq!(lines[1].usec.unwrap() - t0, 1000);
        let raw = b"[    0.000000] Linux version 6.1.0\nlogin: \n";
        let (lines, _) = parse(raw, &Limits::default());
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.usec.is_none()));
        assert!(is_stamped(std::str::from_utf8(log).unwrap()));
        assert!(!is_stamped(std::str::from_utf8(raw).unwrap()));
    }

    #[test]
    fn long_lines_are_cut_and_counted() {
        let limits = Limits {
            line_bytes: 8,
            ..Limits::default()
        };
        let (lines, cuts) = parse(b"0123456789abcdef\nshort\n", &limits);
        assert_eq!(cuts, 1);
        assert_eq!(lines[0].text, "01234567");
        assert_eq!(lines[1].text, "short");
    }
}
