//! The serial console: read from QEMU's socket by a thread, cleaned of terminal escapes,
//! written to serial.log with host timestamps, and searchable by waiters; typed into through
//! the run's console input socket (`console_input`) while a user is attached.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::console_input::{InputRelay, OutputTap};

type LineHook = Box<dyn Fn(&str) + Send>;

#[derive(Default)]
struct Shared {
    lines: Vec<String>,
    closed: bool,
    /// The first failure to write serial.log (a full disk): lines are being lost from it.
    log_error: Option<String>,
    /// Called with every new line (the run's event timeline listens here).
    hooks: Vec<LineHook>,
    /// The console input socket, while it listens: it goes when the console closes.
    relay: Option<InputRelay>,
}

#[derive(Clone)]
pub struct Console {
    shared: Arc<(Mutex<Shared>, Condvar)>,
    /// The console's stream, for writing into the guest.
    input: Arc<UnixStream>,
    /// Where the reader offers the raw output to an attached user.
    tap: OutputTap,
}

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("the console did not show {pattern:?} within {secs:.0} s; last lines:\n{tail}")]
    Timeout {
        pattern: String,
        secs: f64,
        tail: String,
    },
    #[error("the console closed (QEMU exited) before showing {pattern:?}; last lines:\n{tail}")]
    Closed { pattern: String, tail: String },
}

impl Console {
    pub fn attach(stream: UnixStream, log_path: &Path) -> std::io::Result<Console> {
        let input = Arc::new(stream.try_clone()?);
        let log = BufWriter::new(File::create(log_path)?);
        let shared = Arc::new((Mutex::new(Shared::default()), Condvar::new()));
        let reader_shared = shared.clone();
        let tap = OutputTap::default();
        let reader_tap = tap.clone();
        std::thread::Builder::new()
            .name("serial-console".into())
            .spawn(move || read_loop(stream, log, reader_shared, reader_tap))?;
        Ok(Console { shared, input, tap })
    }

    /// Listens on `path` for one user at a time to type into the guest and see its output raw
    /// (`sno-harness console RUN --interactive`), until the console closes; the socket goes
    /// then. The console's own reading and serial.log are as without it.
    pub fn serve_input(&self, path: &Path) -> std::io::Result<()> {
        let relay = InputRelay::listen(path, self.input.try_clone()?, self.tap.clone())?;
        let mut g = self.shared.0.lock().expect("console lock");
        if g.closed {
            // Too late: nothing to type into. The relay goes outside the lock.
            drop(g);
            drop(relay);
            return Ok(());
        }
        g.relay = Some(relay);
        Ok(())
    }

    /// Waits for a console line containing `pattern` (after `from_line`) and returns it with
    /// its index.
    pub fn wait_for_text_from(
        &self,
        pattern: &str,
        from_line: usize,
        timeout: Duration,
    ) -> Result<(usize, String), ConsoleError> {
        let (lock, cv) = &*self.shared;
        let start = Instant::now();
        let mut g = lock.lock().expect("console lock");
        loop {
            if let Some((i, l)) = g
                .lines
                .iter()
                .enumerate()
                .skip(from_line)
                .find(|(_, l)| l.contains(pattern))
            {
                return Ok((i, l.clone()));
            }
            if g.closed {
                return Err(ConsoleError::Closed {
                    pattern: pattern.into(),
                    tail: tail(&g.lines),
                });
            }
            let elapsed = start.elapsed();
            if elapsed >= timeout {
                return Err(ConsoleError::Timeout {
                    pattern: pattern.into(),
                    secs: elapsed.as_secs_f64(),
                    tail: tail(&g.lines),
                });
            }
            g = cv
                .wait_timeout(g, timeout - elapsed)
                .expect("console lock")
                .0;
        }
    }

    pub fn wait_for_text(&self, pattern: &str, timeout: Duration) -> Result<String, ConsoleError> {
        self.wait_for_text_from(pattern, 0, timeout).map(|(_, l)| l)
    }

    /// Number of complete lines so far; a mark for `wait_for_text_from`.
    pub fn line_count(&self) -> usize {
        self.shared.0.lock().expect("console lock").lines.len()
    }

    /// Calls `hook` with every line from now on.
    pub fn on_line(&self, hook: impl Fn(&str) + Send + 'static) {
        self.shared
            .0
            .lock()
            .expect("console lock")
            .hooks
            .push(Box::new(hook));
    }

    /// Why serial.log stopped taking lines, if it did.
    pub fn log_error(&self) -> Option<String> {
        self.shared
            .0
            .lock()
            .expect("console lock")
            .log_error
            .clone()
    }

    /// Whether the console's stream has ended (QEMU closed it, or it broke).
    pub fn is_closed(&self) -> bool {
        self.shared.0.lock().expect("console lock").closed
    }

    pub fn lines(&self) -> Vec<String> {
        self.shared.0.lock().expect("console lock").lines.clone()
    }
}

fn tail(lines: &[String]) -> String {
    let start = lines.len().saturating_sub(15);
    lines[start..].join("\n")
}

/// Notes the first failure to write the log; the lines stay in memory either way.
fn note_log_error(shared: &(Mutex<Shared>, Condvar), r: std::io::Result<()>) {
    if let Err(e) = r {
        let mut g = shared.0.lock().expect("console lock");
        g.log_error.get_or_insert_with(|| e.to_string());
    }
}

fn read_loop(
    mut stream: UnixStream,
    mut log: BufWriter<File>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    tap: OutputTap,
) {
    let mut buf = [0u8; 4096];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match stream.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tap.offer(&buf[..n]);
        pending.extend_from_slice(&buf[..n]);
        let mut new_lines = Vec::new();
        while let Some(pos) = pending.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = pending.drain(..=pos).collect();
            let line = clean_line(&raw);
            note_log_error(&shared, writeln!(log, "{} {}", timestamp(), line));
            new_lines.push(line);
        }
        note_log_error(&shared, log.flush());
        if !new_lines.is_empty() {
            let (lock, cv) = &*shared;
            let mut g = lock.lock().expect("console lock");
            for l in &new_lines {
                for h in &g.hooks {
                    h(l);
                }
            }
            g.lines.extend(new_lines);
            cv.notify_all();
        }
    }
    if !pending.is_empty() {
        let line = clean_line(&pending);
        let _ = writeln!(log, "{} {}", timestamp(), line);
        shared.0.lock().expect("console lock").lines.push(line);
    }
    let _ = log.flush();
    let (lock, cv) = &*shared;
    let relay = {
        let mut g = lock.lock().expect("console lock");
        g.closed = true;
        g.relay.take()
    };
    cv.notify_all();
    // Ends an attached user's session (it sees the console close) and removes the socket.
    drop(relay);
}

fn timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Drops ANSI escape sequences, carriage returns and other control bytes.
pub fn clean_line(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ params final-byte; other escapes: ESC + one char.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c2 in chars.by_ref() {
                        if ('@'..='~').contains(&c2) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\n' | '\r' => {}
            c if c.is_control() && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_carriage_returns_are_removed() {
        let raw = b"[\x1b[0;32m  OK  \x1b[0m] Started \x1b[0;1;39mssh.service\x1b[0m.\r\n";
        assert_eq!(clean_line(raw), "[  OK  ] Started ssh.service.");
    }

    #[test]
    fn waiters_see_lines_written_to_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let (mut a, b) = UnixStream::pair().unwrap();
        let console = Console::attach(b, &dir.path().join("serial.log")).unwrap();
        a.write_all(b"first line\nminisno: live system up\n")
            .unwrap();
        let line = console
            .wait_for_text("system up", Duration::from_secs(5))
            .unwrap();
        assert_eq!(line, "minisno: live system up");
        drop(a);
        let err = console
            .wait_for_text("never printed", Duration::from_secs(5))
            .unwrap_err();
        assert!(matches!(err, ConsoleError::Closed { .. }), "{err}");
        let log = std::fs::read_to_string(dir.path().join("serial.log")).unwrap();
        assert!(log
            .lines()
            .nth(1)
            .unwrap()
            .ends_with(" minisno: live system up"));
    }

    #[test]
    fn a_log_that_cannot_be_written_is_said_and_the_lines_are_still_seen() {
        // /dev/full: every write fails with ENOSPC, as on a full disk.
        let (mut a, b) = UnixStream::pair().unwrap();
        let console = Console::attach(b, Path::new("/dev/full")).unwrap();
        a.write_all(b"a line the log cannot take\n").unwrap();
        console
            .wait_for_text("cannot take", Duration::from_secs(5))
            .unwrap();
        drop(a);
        let _ = console.wait_for_text("never", Duration::from_secs(5));
        let e = console.log_error().expect("the failure is kept");
        assert!(e.contains("No space left on device"), "{e}");
        assert!(console.is_closed());
    }
}
