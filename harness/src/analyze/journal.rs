//! Journals as evidence: `journalctl -o json` (one object a line, as the harness's own raw
//! journals are), `journalctl -o export` (systemd's export format: `FIELD=value` lines, binary
//! fields as the name, a 64-bit little-endian length and the bytes, entries separated by an
//! empty line), and `journalctl -o short` / `short-precise` (what installer-gather.sh writes
//! into a log bundle's `bootstrap/journals/<unit>.log`). Each entry becomes the signal the
//! harness's journal follower sends (`guest::journal::signal_of`), kept only when the follower
//! would have sent it (`guest::journal::worth_sending`): the bootstrap units, systemd's lines
//! about them, NetworkManager's activations and badness.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::limits::{cut, Limits};
use super::AnalyzeError;
use crate::flow::event::Signal;
use crate::guest::journal::{signal_of, worth_sending};

/// One journal entry as evidence: its time on the guest's clock and its signal.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Microseconds since the epoch.
    pub usec: u64,
    pub signal: Signal,
}

/// What a journal file gave: its entries, and what was cut or left.
#[derive(Debug, Default)]
pub struct Read {
    pub entries: Vec<Entry>,
    /// Lines or fields cut at the line limit.
    pub cut: usize,
    /// The file ends inside an entry (left out).
    pub cut_short: bool,
}

/// An entry as the follower sends it, if it would.
fn entry_of(v: &Value) -> Option<Entry> {
    let signal = signal_of(v)?;
    if !worth_sending(&signal, v) {
        return None;
    }
    let Signal::Journal { guest_usec, .. } = &signal else {
        return None;
    };
    Some(Entry {
        usec: *guest_usec,
        signal,
    })
}

/// `journalctl -o json`: a JSON object a line (empty lines skipped).
pub fn parse_json(path: &Path, text: &str, limits: &Limits) -> Result<Read, AnalyzeError> {
    let mut out = Read::default();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if i >= limits.records {
            return Err(too_many(path, limits));
        }
        let parsed = serde_json::from_str::<Value>(line);
        if parsed.is_err() && i + 1 == lines.len() && !text.ends_with('\n') {
            // The file was cut while this entry was written.
            out.cut_short = true;
            continue;
        }
        let v: Value = parsed.map_err(|e| {
            AnalyzeError::malformed(
                path,
                format!(
                    "line {}: not a journal entry of `journalctl -o json`: {e}",
                    i + 1
                ),
            )
        })?;
        if !v.is_object() {
            return Err(AnalyzeError::malformed(
                path,
                format!(
                    "line {}: a JSON {} where an entry object belongs",
                    i + 1,
                    kind_of(&v)
                ),
            ));
        }
        let v = cut_message(v, limits, &mut out.cut);
        out.entries.extend(entry_of(&v));
    }
    Ok(out)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

fn too_many(path: &Path, limits: &Limits) -> AnalyzeError {
    AnalyzeError::malformed(
        path,
        format!("more than {} records, the limit", limits.records),
    )
}

/// A message longer than the line limit, cut (and counted).
fn cut_message(mut v: Value, limits: &Limits, cuts: &mut usize) -> Value {
    if let Some(Value::String(m)) = v.get_mut("MESSAGE") {
        let (kept, was_cut) = cut(m, limits.line_bytes);
        if was_cut {
            *m = format!("{kept} [cut at {} bytes]", limits.line_bytes);
            *cuts += 1;
        }
    }
    v
}

/// `journalctl -o export`: entries of fields, separated by an empty line.
pub fn parse_export(path: &Path, bytes: &[u8], limits: &Limits) -> Result<Read, AnalyzeError> {
    let mut out = Read::default();
    let mut fields = Map::new();
    let mut at = 0usize;
    let mut count = 0usize;
    while at < bytes.len() {
        let nl = bytes[at..].iter().position(|b| *b == b'\n');
        let line_end = nl.map_or(bytes.len(), |n| at + n);
        let line = &bytes[at..line_end];
        if line.is_empty() {
            count += 1;
            if count > limits.records {
                return Err(too_many(path, limits));
            }
            let entry = Value::Object(std::mem::take(&mut fields));
            out.entries
                .extend(entry_of(&cut_message(entry, limits, &mut out.cut)));
            at = line_end + 1;
            continue;
        }
        let (name, value, next) = match line.iter().position(|b| *b == b'=') {
            Some(eq) => (&line[..eq], line[eq + 1..].to_vec(), line_end + 1),
            None => binary_field(path, bytes, at, line_end)?,
        };
        let name = std::str::from_utf8(name)
            .ok()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            .ok_or_else(|| {
                AnalyzeError::malformed(
                    path,
                    format!("byte {at}: a field name of the export format is letters, digits and `_`, then `=` or a newline"),
                )
            })?;
        fields.insert(name.to_string(), field_value(name, value));
        at = next;
    }
    if !fields.is_empty() {
        let entry = Value::Object(fields);
        out.entries
            .extend(entry_of(&cut_message(entry, limits, &mut out.cut)));
    }
    Ok(out)
}

/// A binary field: the name's line, then a little-endian u64 length, the bytes and a newline.
fn binary_field<'a>(
    path: &Path,
    bytes: &'a [u8],
    at: usize,
    line_end: usize,
) -> Result<(&'a [u8], Vec<u8>, usize), AnalyzeError> {
    let name = &bytes[at..line_end];
    let bad = |what: &str| {
        AnalyzeError::malformed(
            path,
            format!(
                "byte {at}: binary field {:?}: {what}",
                String::from_utf8_lossy(name)
            ),
        )
    };
    let len_at = line_end + 1;
    let len_bytes: [u8; 8] = bytes
        .get(len_at..len_at + 8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("the file ends inside its 8-byte length"))?;
    let len = u64::from_le_bytes(len_bytes);
    let data_at = len_at + 8;
    let data_end = usize::try_from(len)
        .ok()
        .and_then(|l| data_at.checked_add(l))
        .filter(|end| *end < bytes.len() + 1)
        .ok_or_else(|| bad(&format!("its length {len} runs past the file's end")))?;
    if bytes.get(data_end).is_some_and(|b| *b != b'\n') {
        return Err(bad("its bytes are not followed by a newline"));
    }
    Ok((name, bytes[data_at..data_end].to_vec(), data_end + 1))
}

/// A field's value as `journalctl -o json` gives it: a string, or an array of bytes when it is
/// not UTF-8 (which `signal_of` reads for MESSAGE).
fn field_value(_name: &str, value: Vec<u8>) -> Value {
    match String::from_utf8(value) {
        Ok(s) => Value::String(s),
        Err(e) => Value::Array(e.into_bytes().into_iter().map(Value::from).collect()),
    }
}

/// A line of `journalctl -o short` or `short-precise`: `Nov 30 09:43:08[.123456] host
/// identifier[pid]: message`.
static SHORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(\.\d{1,6})? \S+ ([^\s\[:]+)(?:\[\d+\])?: ?(.*)$",
    )
    .expect("the pattern is valid")
});

/// `journalctl`'s own lines around the entries: `-- Boot <id> --`, `-- No entries --`,
/// `-- Logs begin at ... --`.
static BOOT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^-- Boot ([0-9a-f]{32}) --$").expect("the pattern is valid"));

/// Whether a line reads as `journalctl -o short`.
pub fn is_short_line(line: &str) -> bool {
    SHORT.is_match(line)
}

/// Where a short-format file's entries come from: the unit its name says (`-u UNIT`), the
/// boot they belong to unless a `-- Boot --` line says another, and the year, which the format
/// leaves out (the file's own time gives it; December to January adds one). The clock is
/// taken as UTC, as RHCOS and minisno keep it.
#[derive(Debug, Clone)]
pub struct ShortContext {
    pub unit: String,
    pub boot_id: String,
    pub year: i32,
}

/// `journalctl -o short(-precise) -u UNIT`: each line an entry of the unit; a line that does
/// not read as one continues the message before it (journalctl indents the rest of a
/// multi-line message).
pub fn parse_short(
    path: &Path,
    text: &str,
    ctx: &ShortContext,
    limits: &Limits,
) -> Result<Read, AnalyzeError> {
    let mut out = Read::default();
    let mut boot = ctx.boot_id.clone();
    let mut year = ctx.year;
    let mut last_month = 0u32;
    for (i, line) in text.lines().enumerate() {
        if i >= limits.records {
            return Err(too_many(path, limits));
        }
        if let Some(c) = BOOT.captures(line) {
            boot = c[1].to_string();
            continue;
        }
        let Some(c) = SHORT.captures(line) else {
            continue_message(&mut out, line, limits);
            continue;
        };
        let month = month_number(&c[1]);
        if last_month == 12 && month == 1 {
            year += 1;
        }
        last_month = month;
        let usec = short_time(year, month, &c).ok_or_else(|| {
            AnalyzeError::malformed(path, format!("line {}: no such date: {line:?}", i + 1))
        })?;
        let (message, was_cut) = cut(&c[8], limits.line_bytes);
        out.cut += usize::from(was_cut);
        let mut v = Map::new();
        v.insert("_SYSTEMD_UNIT".into(), ctx.unit.clone().into());
        v.insert("SYSLOG_IDENTIFIER".into(), c[7].to_string().into());
        v.insert("MESSAGE".into(), message.to_string().into());
        v.insert("__REALTIME_TIMESTAMP".into(), usec.to_string().into());
        v.insert("_BOOT_ID".into(), boot.clone().into());
        out.entries.extend(entry_of(&Value::Object(v)));
    }
    Ok(out)
}

/// A line that is no entry: `journalctl`'s own `-- ... --` lines are left, anything else
/// continues the previous entry's message.
fn continue_message(out: &mut Read, line: &str, limits: &Limits) {
    if line.starts_with("-- ") || line.trim().is_empty() {
        return;
    }
    if let Some(Entry {
        signal: Signal::Journal { message, .. },
        ..
    }) = out.entries.last_mut()
    {
        if message.len() + line.len() < limits.line_bytes {
            message.push('\n');
            message.push_str(line.trim_start());
        }
    }
}

fn month_number(m: &str) -> u32 {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS
        .iter()
        .position(|x| *x == m)
        .map_or(0, |i| i as u32 + 1)
}

/// The entry's time in microseconds since the epoch, UTC.
fn short_time(year: i32, month: u32, c: &regex::Captures<'_>) -> Option<u64> {
    let day: u32 = c[2].parse().ok()?;
    let stamp = format!(
        "{year:04}-{month:02}-{day:02}T{}:{}:{}Z",
        &c[3], &c[4], &c[5]
    );
    let at = humantime::parse_rfc3339(&stamp).ok()?;
    let secs = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros() as u64;
    let frac = c.get(6).map_or(0, |f| {
        let digits = &f.as_str()[1..];
        let n: u64 = digits.parse().unwrap_or(0);
        n * 10u64.pow(6 - digits.len() as u32)
    });
    Some(secs + frac)
}

/// The year (UTC) of a time in seconds since the epoch; the current year for none.
pub fn year_of(secs: u64) -> i32 {
    let t = if secs == 0 {
        std::time::SystemTime::now()
    } else {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)
    };
    let stamp = humantime::format_rfc3339_seconds(t).to_string();
    stamp[..4].parse().unwrap_or(1970)
}

#[cfg(test)]
mod tests;
