//! What a PATH is, from what it holds (never from its name alone): a run directory, a log
//! bundle (a gzip-compressed tar), a journal in one of journalctl's formats, or a serial
//! console log; a single gzip-compressed file is read through (the harness's raw journals are
//! `journal-<n>-<boot>.json.gz`).

use std::io::Read;
use std::path::Path;

use super::limits::{size, Limits};
use super::{journal, AnalyzeError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory with events.jsonl.
    RunDir,
    /// A gzip-compressed tar: an installer's log bundle.
    Bundle,
    /// `journalctl -o json`.
    JournalJson,
    /// `journalctl -o export`.
    JournalExport,
    /// `journalctl -o short` or `short-precise`, of the unit its file is named after.
    JournalShort,
    /// A serial console log, the run's own (with times) or raw.
    Serial,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::RunDir => "a run directory",
            Kind::Bundle => "an installer's log bundle",
            Kind::JournalJson => "a journal (journalctl -o json)",
            Kind::JournalExport => "a journal (journalctl -o export)",
            Kind::JournalShort => "a journal of one unit (journalctl -o short)",
            Kind::Serial => "a serial console log",
        }
    }
}

const GZIP: [u8; 2] = [0x1f, 0x8b];

/// The kind of the evidence at `path`.
pub fn detect(path: &Path) -> Result<Kind, AnalyzeError> {
    let meta = std::fs::metadata(path).map_err(|e| AnalyzeError::unreadable(path, e))?;
    if meta.is_dir() {
        if path.join("events.jsonl").is_file() {
            return Ok(Kind::RunDir);
        }
        return Err(AnalyzeError::UnknownKind {
            path: path.to_path_buf(),
            reason: "a directory without events.jsonl is no run directory".into(),
        });
    }
    if !meta.is_file() {
        return Err(AnalyzeError::UnknownKind {
            path: path.to_path_buf(),
            reason: "neither a regular file nor a directory".into(),
        });
    }
    let head = head(path)?;
    if head.starts_with(&GZIP) {
        let inner = gunzip_head(path)?;
        if inner.len() > 262 && &inner[257..262] == b"ustar" {
            return Ok(Kind::Bundle);
        }
        return text_kind(path, &inner);
    }
    text_kind(path, &head)
}

/// The first bytes of a file.
fn head(path: &Path) -> Result<Vec<u8>, AnalyzeError> {
    let mut f = std::fs::File::open(path).map_err(|e| AnalyzeError::unreadable(path, e))?;
    let mut buf = Vec::new();
    (&mut f)
        .take(8192)
        .read_to_end(&mut buf)
        .map_err(|e| AnalyzeError::unreadable(path, e))?;
    Ok(buf)
}

/// The first decompressed bytes of a gzip file.
fn gunzip_head(path: &Path) -> Result<Vec<u8>, AnalyzeError> {
    let f = std::fs::File::open(path).map_err(|e| AnalyzeError::unreadable(path, e))?;
    let mut buf = Vec::new();
    flate2::read::MultiGzDecoder::new(f)
        .take(8192)
        .read_to_end(&mut buf)
        .map_err(|e| AnalyzeError::malformed(path, format!("not readable gzip: {e}")))?;
    Ok(buf)
}

/// A text file's kind from its first lines.
fn text_kind(path: &Path, head: &[u8]) -> Result<Kind, AnalyzeError> {
    let text = String::from_utf8_lossy(head);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.starts_with('{') {
        let keys = ["\"__REALTIME_TIMESTAMP\"", "\"__CURSOR\"", "\"MESSAGE\""];
        if keys.iter().any(|k| first.contains(k)) {
            return Ok(Kind::JournalJson);
        }
        if first.contains("\"t_ms\"") && first.contains("\"kind\"") {
            let dir = path.parent().unwrap_or(Path::new("."));
            return Err(AnalyzeError::UnknownKind {
                path: path.to_path_buf(),
                reason: format!(
                    "a run's events.jsonl is analysed with its run directory: give {}",
                    dir.display()
                ),
            });
        }
    }
    let export_field = |l: &str| {
        l.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        })
    };
    if export_field(first) && text.contains("__REALTIME_TIMESTAMP=") {
        return Ok(Kind::JournalExport);
    }
    let entry = text
        .lines()
        .find(|l| !l.starts_with("-- ") && !l.trim().is_empty());
    if entry.is_some_and(journal::is_short_line) {
        return Ok(Kind::JournalShort);
    }
    if head.contains(&0) {
        return Err(AnalyzeError::UnknownKind {
            path: path.to_path_buf(),
            reason: "binary data that is none of them".into(),
        });
    }
    Ok(Kind::Serial)
}

/// A whole file's bytes, decompressed when gzip, at most `limits.file_bytes`, and whether its
/// compressed stream was cut short (a run stopped while writing its raw journal leaves one:
/// the complete part still reads, as `zcat` reads it).
pub fn read_all(path: &Path, limits: &Limits) -> Result<(Vec<u8>, bool), AnalyzeError> {
    let gz = head(path)?.starts_with(&GZIP);
    let f = std::fs::File::open(path).map_err(|e| AnalyzeError::unreadable(path, e))?;
    let reader: Box<dyn Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else {
        Box::new(f)
    };
    let mut buf = Vec::new();
    let cut_short = match reader.take(limits.file_bytes + 1).read_to_end(&mut buf) {
        Ok(_) => false,
        // read_to_end keeps what it read before the error.
        Err(_) if gz && !buf.is_empty() => true,
        Err(e) => return Err(AnalyzeError::unreadable(path, e)),
    };
    if buf.len() as u64 > limits.file_bytes {
        return Err(AnalyzeError::malformed(
            path,
            format!(
                "it holds more than {}, the limit for one file{}",
                size(limits.file_bytes),
                if gz { " (decompressed)" } else { "" }
            ),
        ));
    }
    Ok((buf, cut_short))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn each_kind_is_told_by_its_content() {
        let d = tempfile::tempdir().unwrap();
        // Written from the formats, not recorded.
        let json = write(
            d.path(),
            "a",
            b"{\"__CURSOR\":\"s=1\",\"MESSAGE\":\"hi\"}\n",
        );
        let export = write(
            d.path(),
            "b",
            b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\nMESSAGE=hi\n\n",
        );
        let short = write(
            d.path(),
            "bootkube.log",
            b"-- Logs begin at Mon 2026-11-30 09:43:01 UTC. --\nNov 30 09:43:08 host bootkube.sh[812]: Rendering MCO manifests...\n",
        );
        let serial = write(
            d.path(),
            "serial.log",
            b"[    0.000000] Linux version 6.1.0\n",
        );
        let events = write(
            d.path(),
            "events.jsonl",
            b"{\"time\":\"x\",\"t_ms\":0,\"source\":\"harness\",\"kind\":\"note\"}\n",
        );
        assert_eq!(detect(&json).unwrap(), Kind::JournalJson);
        assert_eq!(detect(&export).unwrap(), Kind::JournalExport);
        assert_eq!(detect(&short).unwrap(), Kind::JournalShort);
        assert_eq!(detect(&serial).unwrap(), Kind::Serial);
        // The directory holding events.jsonl is a run directory; the file alone is refused.
        assert_eq!(detect(d.path()).unwrap(), Kind::RunDir);
        let e = detect(&events).unwrap_err().to_string();
        assert!(e.contains("analysed with its run directory"), "{e}");
        let bin = write(d.path(), "bin", b"\x7fELF\x00\x00\x01");
        let e = detect(&bin).unwrap_err().to_string();
        assert!(
            e.contains("binary data") && e.contains("analyze reads"),
            "{e}"
        );
        let empty_dir = tempfile::tempdir().unwrap();
        let e = detect(empty_dir.path()).unwrap_err().to_string();
        assert!(e.contains("without events.jsonl"), "{e}");
    }

    #[test]
    fn a_gzipped_journal_is_read_through_and_a_file_past_its_limit_is_refused() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"{\"__REALTIME_TIMESTAMP\":\"1\",\"MESSAGE\":\"hi\"}\n")
            .unwrap();
        let p = write(d.path(), "journal-1-abc.json.gz", &gz.finish().unwrap());
        assert_eq!(detect(&p).unwrap(), Kind::JournalJson);
        assert!(read_all(&p, &Limits::default())
            .unwrap()
            .0
            .starts_with(b"{"));
        let small = Limits {
            file_bytes: 8,
            ..Limits::default()
        };
        let e = read_all(&p, &small).unwrap_err().to_string();
        assert!(
            e.contains("more than 8 bytes") && e.contains("decompressed"),
            "{e}"
        );
    }
}
