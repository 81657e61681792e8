//! Logging in the real tool's logrus text styles. On stderr the real tool turns quoting and
//! timestamps off and writes each line of a message as a line of its own:
//! `level=info msg=Consuming Install Config from target directory`. The log file
//! `<dir>/.openshift_install.log` keeps logrus's defaults: a `time="..."` prefix and quoted
//! messages, one record per call.
//!
//! Callers must never pass secrets (pull secret, private keys, passwords) to it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The log file the real tool keeps in its asset directory.
pub const LOG_FILE: &str = ".openshift_install.log";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
    Fatal,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Fatal => "fatal",
        }
    }

    /// Parses a `--log-level` value as the real tool accepts them.
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "trace" | "debug" => Level::Debug,
            "info" => Level::Info,
            "warn" | "warning" => Level::Warning,
            "error" => Level::Error,
            "fatal" | "panic" => Level::Fatal,
            _ => return None,
        })
    }
}

/// Quotes a value as logrus does: bare when it only holds "safe" characters, else a Go-style
/// double-quoted string.
pub fn quote(value: &str) -> String {
    let safe = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._/@^+".contains(c));
    if safe {
        value.to_string()
    } else {
        serde_json::to_string(value).unwrap_or_else(|_| format!("{value:?}"))
    }
}

/// The stderr form: no timestamp, no quoting, and a message of several lines split into one
/// record per line (what the real tool's stderr hook does).
pub fn stderr_lines(level: Level, msg: &str) -> Vec<String> {
    msg.split('\n')
        .map(|line| format!("level={} msg={line}", level.as_str()))
        .collect()
}

/// The log file's form, without its timestamp: the whole message, quoted when it must be.
pub fn file_record(level: Level, msg: &str) -> String {
    format!("level={} msg={}", level.as_str(), quote(msg))
}

/// The current UTC time as RFC 3339 with seconds (`2026-11-30T00:00:00Z`).
pub fn now_rfc3339() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

/// Formats a time as RFC 3339 UTC with whole seconds.
pub fn rfc3339(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The logger of one command run.
pub struct Logger {
    file: Option<File>,
    stderr_level: Level,
    /// Lines written to stderr, kept for tests.
    echo: Option<Vec<String>>,
}

impl Logger {
    /// A logger to stderr only.
    pub fn stderr(stderr_level: Level) -> Logger {
        Logger {
            file: None,
            stderr_level,
            echo: None,
        }
    }

    /// A logger to stderr and `<dir>/.openshift_install.log` (created 0600 when missing). If
    /// the file cannot be opened, a warning goes to stderr and logging continues without it.
    pub fn with_file(dir: &Path, stderr_level: Level) -> Logger {
        let mut logger = Logger::stderr(stderr_level);
        match OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(dir.join(LOG_FILE))
        {
            Ok(f) => logger.file = Some(f),
            Err(e) => logger.warn(&format!(
                "cannot open {}: {e}",
                dir.join(LOG_FILE).display()
            )),
        }
        logger
    }

    /// A logger that records stderr lines instead of printing them (for tests).
    pub fn capture() -> Logger {
        Logger {
            file: None,
            stderr_level: Level::Debug,
            echo: Some(Vec::new()),
        }
    }

    pub fn captured(&self) -> &[String] {
        self.echo.as_deref().unwrap_or(&[])
    }

    pub fn log(&mut self, level: Level, msg: &str) {
        if let Some(f) = self.file.as_mut() {
            // A failing log write must not fail the command.
            let _ = writeln!(f, "time=\"{}\" {}", now_rfc3339(), file_record(level, msg));
        }
        if level >= self.stderr_level || level >= Level::Error {
            for line in stderr_lines(level, msg) {
                match self.echo.as_mut() {
                    Some(echo) => echo.push(line),
                    None => eprintln!("{line}"),
                }
            }
        }
    }

    pub fn debug(&mut self, msg: &str) {
        self.log(Level::Debug, msg)
    }

    pub fn info(&mut self, msg: &str) {
        self.log(Level::Info, msg)
    }

    pub fn warn(&mut self, msg: &str) {
        self.log(Level::Warning, msg)
    }

    pub fn error(&mut self, msg: &str) {
        self.log(Level::Error, msg)
    }

    pub fn fatal(&mut self, msg: &str) {
        self.log(Level::Fatal, msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_logrus() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("two words"), "\"two words\"");
        assert_eq!(
            quote("load \"Install Config\""),
            "\"load \\\"Install Config\\\"\""
        );
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn stderr_is_unquoted_and_split_at_newlines() {
        assert_eq!(
            stderr_lines(
                Level::Info,
                "Consuming Install Config from target directory"
            ),
            ["level=info msg=Consuming Install Config from target directory"]
        );
        assert_eq!(
            stderr_lines(Level::Error, "load \"Install Config\": first\nsecond"),
            [
                "level=error msg=load \"Install Config\": first",
                "level=error msg=second"
            ]
        );
    }

    #[test]
    fn the_file_keeps_quoting_and_whole_messages() {
        assert_eq!(
            file_record(Level::Info, "two words"),
            "level=info msg=\"two words\""
        );
        assert_eq!(
            file_record(Level::Error, "a\nb"),
            "level=error msg=\"a\\nb\""
        );
    }

    #[test]
    fn captured_lines_are_the_stderr_form() {
        let mut l = Logger::capture();
        l.fatal("failed to fetch X: boom\nsecond line");
        assert_eq!(
            l.captured(),
            [
                "level=fatal msg=failed to fetch X: boom",
                "level=fatal msg=second line"
            ]
        );
    }

    #[test]
    fn levels_parse() {
        assert_eq!(Level::parse("warn"), Some(Level::Warning));
        assert_eq!(Level::parse("DEBUG"), Some(Level::Debug));
        assert_eq!(Level::parse("loud"), None);
    }

    #[test]
    fn rfc3339_shape() {
        let t = time::OffsetDateTime::from_unix_timestamp(0).unwrap();
        assert_eq!(rfc3339(t), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn file_gets_timestamped_lines_and_debug() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Logger::with_file(dir.path(), Level::Error);
        l.debug("hello there");
        drop(l);
        let text = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
        assert!(text.starts_with("time=\""), "{text}");
        assert!(text.contains("level=debug msg=\"hello there\""), "{text}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(LOG_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
