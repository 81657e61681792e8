//! The harness's own log, `harness.log` (docs/architecture.md, "harness.log"): every tracing
//! event at debug level and every line the harness prints (`outln!`/`errln!`, the progress
//! lines), with a timestamp each. The HTTP, TLS and Kubernetes client crates log at debug what
//! nobody reads (and request headers, tokens among them), so they are kept at warn unless the
//! terminal asks for trace.
//!
//! The file exists only once the run directory does: bad input and a host that is not ready
//! are found before anything is created, and nothing half-created may stay behind. What comes
//! before (the scenario's load, the preflight) is collected in memory and written first when
//! the file opens, so the log of a run starts at the harness's start.

use std::fs::{self, File, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use tracing::Level;

/// The file name inside a run directory (or a matrix's `--out`).
pub const HARNESS_LOG_FILE: &str = "harness.log";

/// The crates whose debug output is noise in the log: kube-rs, hyper, h2, rustls, tower and
/// ureq's HTTP stack.
const NOISY: [&str; 7] = [
    "kube",
    "hyper",
    "h2",
    "rustls",
    "tower",
    "ureq",
    "tokio_util",
];

/// What is kept before the file opens; more is dropped (a command that never opens one, as
/// `plan` or `report`, must not grow without bound).
const BUFFER_LIMIT: usize = 4 << 20;

/// Where the log's lines go.
#[derive(Debug)]
enum Sink {
    /// Nowhere: the process did not start a log (library tests, other binaries).
    Off,
    /// In memory, until the run directory exists.
    Buffer(Vec<u8>),
    /// Into harness.log.
    File(File),
}

impl Sink {
    fn append(&mut self, bytes: &[u8]) {
        match self {
            Sink::Off => {}
            Sink::Buffer(b) => {
                if b.len() + bytes.len() <= BUFFER_LIMIT {
                    b.extend_from_slice(bytes);
                }
            }
            Sink::File(f) => {
                // A log that cannot be written (a full disk) stops; the run goes on.
                if f.write_all(bytes).is_err() {
                    *self = Sink::Off;
                }
            }
        }
    }

    /// Sends the log to `file`, what was collected first.
    fn open(&mut self, mut file: File) -> io::Result<()> {
        if let Sink::Buffer(b) = self {
            file.write_all(b)?;
        }
        *self = Sink::File(file);
        Ok(())
    }
}

static SINK: Mutex<Sink> = Mutex::new(Sink::Off);

fn sink() -> MutexGuard<'static, Sink> {
    // Every update is one append or one swap: the data is consistent after a panic.
    SINK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh `path`, never written through a link planted at that name (the run directory may
/// be a reused one), readable like the reports.
fn create_fresh(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
}

/// Opens `dir/harness.log` and sends the log there from now on, what came before included.
/// The error names the file. Without [`init`] first, nothing is logged.
pub fn open_in(dir: &Path) -> io::Result<PathBuf> {
    let path = dir.join(HARNESS_LOG_FILE);
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let file = create_fresh(&path).map_err(named)?;
    let mut s = sink();
    if matches!(*s, Sink::Off) {
        return Ok(path);
    }
    s.open(file).map_err(named)?;
    Ok(path)
}

/// Which stream a printed line went to.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Each line of `text` as the log has it: `TIME PRINT stream: line`, the level column saying
/// that it was printed, not logged.
fn printed_lines(time: SystemTime, stream: Stream, text: &str) -> String {
    let stamp = humantime::format_rfc3339_micros(time);
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(&format!("{stamp} PRINT {}: {line}\n", stream.name()));
    }
    out
}

/// Records a text the harness printed (util::out, the progress lines).
pub fn printed(stream: Stream, text: &str) {
    let mut s = sink();
    if matches!(*s, Sink::Off) {
        return;
    }
    s.append(printed_lines(SystemTime::now(), stream, text).as_bytes());
}

/// What tracing's formatter writes into the log.
struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sink().append(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The filter directives of `level` with the noisy crates at warn at most; none at trace.
fn directives(level: Level) -> String {
    if level == Level::TRACE {
        return "trace".into();
    }
    // More verbose is greater: warn, unless the level itself is quieter (error).
    let noisy = level.min(Level::WARN);
    let mut d = level.as_str().to_ascii_lowercase();
    for crate_name in NOISY {
        d.push_str(&format!(
            ",{crate_name}={}",
            noisy.as_str().to_ascii_lowercase()
        ));
    }
    d
}

/// The terminal's directives: as [`directives`], but the libraries' own lines stay off it
/// below debug. kube-rs logs every refused request as an ERROR, and a real install's API
/// refuses with 503 for up to 20 minutes before it is ready: the harness judges that and says
/// it once in its heartbeat; the libraries' lines are in harness.log.
fn terminal_directives(level: Level) -> String {
    if level >= Level::DEBUG {
        return directives(level);
    }
    let mut d = level.as_str().to_ascii_lowercase();
    for crate_name in NOISY {
        d.push_str(&format!(",{crate_name}=off"));
    }
    d
}

/// Whether stderr gets colours: a terminal, and no `NO_COLOR` (no-color.org: set and not
/// empty).
pub fn colour_on_stderr() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    std::io::stderr().is_terminal() && !no_color
}

/// The terminal's level: `--log-level`, else `-v` counted, else none (`$SNO_HARNESS_LOG`, or
/// info).
pub fn terminal_level(verbose: u8, log_level: Option<Level>) -> Option<Level> {
    log_level.or(match verbose {
        0 => None,
        1 => Some(Level::DEBUG),
        _ => Some(Level::TRACE),
    })
}

/// Installs the process's tracing: on stderr at `terminal` (else as `$SNO_HARNESS_LOG` says,
/// else info), without colours unless stderr is a terminal; into the log at debug (trace when
/// the terminal is at trace), collected until [`open_in`].
pub fn init(terminal: Option<Level>) {
    use tracing_subscriber::prelude::*;
    use tracing_subscriber::{fmt, EnvFilter};

    let terminal_filter = match terminal {
        Some(level) => EnvFilter::new(terminal_directives(level)),
        None => EnvFilter::try_from_env("SNO_HARNESS_LOG")
            .unwrap_or_else(|_| EnvFilter::new(terminal_directives(Level::INFO))),
    };
    let file_level = if terminal == Some(Level::TRACE) {
        Level::TRACE
    } else {
        Level::DEBUG
    };
    *sink() = Sink::Buffer(Vec::new());
    let on_terminal = fmt::layer()
        .with_writer(io::stderr)
        .with_ansi(colour_on_stderr())
        .with_filter(terminal_filter);
    let into_log = fmt::layer()
        .with_writer(|| LogWriter)
        .with_ansi(false)
        .with_filter(EnvFilter::new(directives(file_level)));
    // Already installed (a second call) is no error worth stopping for.
    let _ = tracing_subscriber::registry()
        .with(on_terminal)
        .with(into_log)
        .try_init();
}

/// The levels `--log-level` takes, for its error message.
pub const LEVEL_NAMES: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

/// A `--log-level` that is none of [`LEVEL_NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log level {given:?}: expected one of {}", LEVEL_NAMES.join(", "))]
pub struct UnknownLevel {
    pub given: String,
}

/// `--log-level`: one of [`LEVEL_NAMES`] (tracing's own parser also takes numbers, which the
/// flag does not).
pub fn parse_level(s: &str) -> Result<Level, UnknownLevel> {
    match s {
        "error" => Ok(Level::ERROR),
        "warn" => Ok(Level::WARN),
        "info" => Ok(Level::INFO),
        "debug" => Ok(Level::DEBUG),
        "trace" => Ok(Level::TRACE),
        _ => Err(UnknownLevel { given: s.into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_noisy_crates_stay_at_warn_unless_trace() {
        let debug = directives(Level::DEBUG);
        assert!(debug.starts_with("debug,"), "{debug}");
        for c in [
            "kube=warn",
            "hyper=warn",
            "h2=warn",
            "rustls=warn",
            "tower=warn",
        ] {
            assert!(debug.split(',').any(|d| d == c), "{c} in {debug}");
        }
        assert_eq!(directives(Level::TRACE), "trace");
        // Quieter than warn: the noisy crates are as quiet.
        assert!(directives(Level::ERROR)
            .split(',')
            .skip(1)
            .all(|d| d.ends_with("=error")));
        // The directives are ones tracing-subscriber takes.
        for l in [Level::ERROR, Level::INFO, Level::DEBUG] {
            tracing_subscriber::EnvFilter::try_new(directives(l)).unwrap();
        }
    }

    #[test]
    fn the_libraries_lines_stay_off_the_terminal_below_debug() {
        for l in [Level::ERROR, Level::WARN, Level::INFO] {
            let d = terminal_directives(l);
            assert!(d.split(',').any(|x| x == "kube=off"), "{d}");
            tracing_subscriber::EnvFilter::try_new(&d).unwrap();
        }
        assert_eq!(terminal_directives(Level::DEBUG), directives(Level::DEBUG));
        assert_eq!(terminal_directives(Level::TRACE), "trace");
    }

    #[test]
    fn printed_lines_are_stamped_one_by_one() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1500);
        assert_eq!(
            printed_lines(t, Stream::Stderr, "sno-harness: x error\n  reason: y"),
            "1970-01-01T00:00:01.500000Z PRINT stderr: sno-harness: x error\n\
             1970-01-01T00:00:01.500000Z PRINT stderr:   reason: y\n"
        );
    }

    #[test]
    fn what_came_before_the_file_is_written_first_and_nothing_after_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Sink::Buffer(Vec::new());
        s.append(b"early\n");
        s.append(&vec![b'x'; BUFFER_LIMIT]);
        s.open(create_fresh(&dir.path().join("l")).unwrap())
            .unwrap();
        s.append(b"late\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("l")).unwrap(),
            "early\nlate\n"
        );
    }

    #[test]
    fn the_log_is_never_written_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.path().join(HARNESS_LOG_FILE);
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let mut f = create_fresh(&path).unwrap();
        f.write_all(b"log\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!path.is_symlink());
    }

    #[test]
    fn levels_from_the_flags() {
        assert_eq!(terminal_level(0, None), None);
        assert_eq!(terminal_level(1, None), Some(Level::DEBUG));
        assert_eq!(terminal_level(3, None), Some(Level::TRACE));
        assert_eq!(terminal_level(0, Some(Level::WARN)), Some(Level::WARN));
        assert_eq!(parse_level("debug"), Ok(Level::DEBUG));
        assert_eq!(
            parse_level("5").unwrap_err().to_string(),
            "unknown log level \"5\": expected one of error, warn, info, debug, trace"
        );
        for name in LEVEL_NAMES {
            assert_eq!(
                parse_level(name).map(|l| l.to_string()),
                Ok(name.to_uppercase())
            );
        }
    }
}
