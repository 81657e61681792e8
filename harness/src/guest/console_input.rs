//! Typing into the guest's serial console while a run holds it: the run listens on a Unix
//! socket in its private directory (`console-in.sock`, 0600 in a 0700 directory) that
//! `sno-harness console RUN --interactive` connects to. The run's console owns the one
//! connection to the guest's serial port (QEMU's chardev, libvirt's socket or stream); this
//! relay writes into it what a client sends, and hands the client the guest's output raw as it
//! arrives (serial.log has whole lines only, without the carriage returns and backspaces a
//! shell's line editing needs, and never a prompt that ends no line).
//!
//! The protocol: the relay's first line to a client is [`READY`] (the session is the
//! client's) or [`BUSY`] (another client is attached; the connection then closes). After
//! `READY`, the client's bytes go to the guest (read at most [`INPUT_CHUNK`] at a time) and the
//! guest's come back. A client that does not keep up loses output, never the run: the console's
//! reader only offers it (serial.log keeps everything).

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::util::socket_path::Reachable;

/// The socket's name in the run's private directory.
pub const SOCKET: &str = "console-in.sock";
/// The relay's first line to the client that has the session.
pub const READY: &str = "ready";
/// The relay's first line to a client refused because another one is attached.
pub const BUSY: &str = "busy";
/// The most the relay reads from a client at a time.
pub const INPUT_CHUNK: usize = 4096;

/// Chunks of guest output (at most 4 KiB each as the console reads them) waiting for a slow
/// client: some 1 MiB.
const OUTPUT_BACKLOG: usize = 256;
/// How often the relay's threads look at their stop flag.
const TICK: Duration = Duration::from_millis(200);
/// How long a write to the guest or to the client may block before the session ends (a guest
/// that reads no input, a client that reads no output).
const WRITE_LIMIT: Duration = Duration::from_secs(10);
/// How long a client waits for the relay's first line.
const HELLO_LIMIT: Duration = Duration::from_secs(10);
/// How long a new client waits for a session whose client has just left to wind up, before it
/// is told the console is taken.
const HANDOVER: Duration = Duration::from_secs(1);

/// Where the console's reader offers the guest's raw output: the attached client's queue, if
/// a client is attached.
#[derive(Clone, Default)]
pub struct OutputTap(Arc<Mutex<Option<SyncSender<Vec<u8>>>>>);

impl OutputTap {
    /// Offers `bytes` to the attached client, dropping them if its queue is full.
    pub fn offer(&self, bytes: &[u8]) {
        if let Some(tx) = self.slot().as_ref() {
            let _ = tx.try_send(bytes.to_vec());
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<SyncSender<Vec<u8>>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The listening relay. Dropping it ends the session, stops its threads and removes the
/// socket.
pub struct InputRelay {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl InputRelay {
    /// Listens on `path` (made 0600), writing what a client sends into `guest` and handing it
    /// what `tap` is offered.
    pub fn listen(path: &Path, guest: UnixStream, tap: OutputTap) -> io::Result<InputRelay> {
        let reachable = Reachable::new(path)?;
        // A socket left by nothing that runs (this path is the run's own).
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(reachable.path())?;
        // Bound under the umask; the directory (0700) keeps others out in the meantime.
        let ready = crate::util::private::set_mode(path, crate::util::private::PRIVATE_FILE)
            .and_then(|_| listener.set_nonblocking(true))
            .and_then(|_| guest.set_write_timeout(Some(WRITE_LIMIT)));
        if let Err(e) = ready {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let relay = Relay {
            guest,
            tap,
            stop: stop.clone(),
            session: None,
        };
        let thread = std::thread::Builder::new()
            .name("console-input".into())
            .spawn(move || relay.run(listener));
        match thread {
            Ok(t) => Ok(InputRelay {
                stop,
                thread: Some(t),
                path: path.to_path_buf(),
            }),
            Err(e) => {
                let _ = std::fs::remove_file(path);
                Err(e)
            }
        }
    }
}

impl Drop for InputRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The listener's thread: accepts clients, one session at a time.
struct Relay {
    guest: UnixStream,
    tap: OutputTap,
    stop: Arc<AtomicBool>,
    /// The session's thread, and what says it ended (its sender goes with the thread).
    session: Option<(JoinHandle<()>, Receiver<()>)>,
}

impl Relay {
    fn run(mut self, listener: UnixListener) {
        while !self.stop.load(Ordering::SeqCst) {
            if !readable(&listener, TICK) {
                continue;
            }
            match listener.accept() {
                Ok((client, _)) => self.admit(client),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    tracing::warn!("the console input socket stopped accepting: {e}");
                    break;
                }
            }
        }
        if let Some((s, _)) = self.session.take() {
            let _ = s.join();
        }
    }

    /// Whether no session runs, waiting `HANDOVER` for one whose client has left.
    fn free(&mut self) -> bool {
        if let Some((_, ended)) = &self.session {
            if let Err(RecvTimeoutError::Timeout) = ended.recv_timeout(HANDOVER) {
                return false;
            }
        }
        if let Some((s, _)) = self.session.take() {
            let _ = s.join();
        }
        true
    }

    /// Gives `client` the session, or tells it the session is taken.
    fn admit(&mut self, mut client: UnixStream) {
        // The accepted socket must not inherit the listener's non-blocking mode.
        let _ = client.set_nonblocking(false);
        let _ = client.set_write_timeout(Some(WRITE_LIMIT));
        if !self.free() {
            let _ = writeln!(client, "{BUSY}");
            return;
        }
        let guest = match self.guest.try_clone() {
            Ok(g) => g,
            Err(e) => {
                tracing::warn!("console input: cannot share the console: {e}");
                return;
            }
        };
        let (tx, rx) = mpsc::sync_channel(OUTPUT_BACKLOG);
        *self.tap.slot() = Some(tx);
        if writeln!(client, "{READY}").is_err() {
            *self.tap.slot() = None;
            return;
        }
        let (ended_tx, ended) = mpsc::channel();
        let session = Session {
            client,
            guest,
            tap: self.tap.clone(),
            stop: self.stop.clone(),
            _ended: ended_tx,
        };
        match std::thread::Builder::new()
            .name("console-session".into())
            .spawn(move || session.run(rx))
        {
            Ok(t) => self.session = Some((t, ended)),
            Err(e) => {
                *self.tap.slot() = None;
                tracing::warn!("console input: cannot start a session: {e}");
            }
        }
    }
}

/// One client's session: its bytes to the guest on this thread, the guest's output to it on a
/// second one.
struct Session {
    client: UnixStream,
    guest: UnixStream,
    tap: OutputTap,
    stop: Arc<AtomicBool>,
    /// Dropped with the session: the relay's sign that it ended.
    _ended: mpsc::Sender<()>,
}

impl Session {
    fn run(mut self, output: Receiver<Vec<u8>>) {
        let done = Arc::new(AtomicBool::new(false));
        let shown = self.client.try_clone().map(|c| {
            let (stop, done) = (self.stop.clone(), done.clone());
            std::thread::spawn(move || show(c, output, &stop, &done))
        });
        if shown.is_ok() {
            self.type_in();
        }
        done.store(true, Ordering::SeqCst);
        // Its sender gone, the output thread wakes at once.
        *self.tap.slot() = None;
        let _ = self.client.shutdown(std::net::Shutdown::Both);
        if let Ok(t) = shown {
            let _ = t.join();
        }
    }

    /// Copies the client's bytes to the guest until the client leaves, a write stalls, or the
    /// relay stops.
    fn type_in(&mut self) {
        if self.client.set_read_timeout(Some(TICK)).is_err() {
            return;
        }
        let mut buf = [0u8; INPUT_CHUNK];
        while !self.stop.load(Ordering::SeqCst) {
            match self.client.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if let Err(e) = self.guest.write_all(&buf[..n]) {
                        tracing::debug!("console input: writing to the guest: {e}");
                        return;
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(_) => return,
            }
        }
    }
}

/// Copies the guest's output to the client until the session is done.
fn show(mut client: UnixStream, output: Receiver<Vec<u8>>, stop: &AtomicBool, done: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) && !done.load(Ordering::SeqCst) {
        match output.recv_timeout(TICK) {
            Ok(bytes) => {
                if client.write_all(&bytes).is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Whether `listener` has a client waiting, within `wait`.
fn readable(listener: &UnixListener, wait: Duration) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(listener, PollFlags::IN)];
    let timeout = Timespec::try_from(wait).ok();
    matches!(poll(&mut fds, timeout.as_ref()), Ok(n) if n > 0)
}

/// Why a client got no session.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot connect to {}: {source}", .path.display())]
    Unreachable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("another interactive console is attached to this run; one at a time")]
    Busy,
    #[error("{} did not answer as the run's console does ({answer})", .path.display())]
    Unexpected { path: PathBuf, answer: String },
}

/// Connects to the relay at `path` and takes the session: the stream then carries typing to the
/// guest and the guest's output back.
pub fn connect(path: &Path) -> Result<UnixStream, ConnectError> {
    let unreachable = |source| ConnectError::Unreachable {
        path: path.to_path_buf(),
        source,
    };
    let reachable = Reachable::new(path).map_err(unreachable)?;
    let mut s = UnixStream::connect(reachable.path()).map_err(unreachable)?;
    s.set_read_timeout(Some(HELLO_LIMIT)).map_err(unreachable)?;
    let line = first_line(&mut s).map_err(unreachable)?;
    s.set_read_timeout(None).map_err(unreachable)?;
    match line.as_str() {
        READY => Ok(s),
        BUSY => Err(ConnectError::Busy),
        _ => Err(ConnectError::Unexpected {
            path: path.to_path_buf(),
            answer: format!("{line:?}"),
        }),
    }
}

/// The first line the relay sends, read a byte at a time so that no output after it is taken;
/// at most 64 bytes.
fn first_line(s: &mut UnixStream) -> io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 64 {
        match s.read(&mut byte)? {
            0 => break,
            _ if byte[0] == b'\n' => break,
            _ => line.push(byte[0]),
        }
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Instant;

    fn relay_in(dir: &Path) -> (InputRelay, UnixStream, OutputTap, PathBuf) {
        let (guest_side, ours) = UnixStream::pair().unwrap();
        let tap = OutputTap::default();
        let path = dir.join(SOCKET);
        let relay = InputRelay::listen(&path, ours, tap.clone()).unwrap();
        (relay, guest_side, tap, path)
    }

    fn read_for(s: &mut UnixStream, want: &[u8]) -> Vec<u8> {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while !got.windows(want.len()).any(|w| w == want) {
            let n = s.read(&mut buf).expect("the bytes arrive within 10 s");
            assert!(n > 0, "closed after {got:?}");
            got.extend_from_slice(&buf[..n]);
        }
        got
    }

    #[test]
    fn a_client_types_into_the_guest_and_sees_its_output_raw() {
        let dir = tempfile::tempdir().unwrap();
        let (relay, mut guest, tap, path) = relay_in(dir.path());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let mut client = connect(&path).unwrap();
        client.write_all(b"echo hi\r").unwrap();
        read_for(&mut guest, b"echo hi\r");
        tap.offer(b"\x1b[1mprompt\x08# ");
        read_for(&mut client, b"\x1b[1mprompt\x08# ");
        drop(relay);
        assert!(!path.exists(), "the socket is removed with the relay");
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).unwrap();
    }

    #[test]
    fn a_second_client_is_refused_at_once_and_the_next_one_after_the_first_left_is_let_in() {
        let dir = tempfile::tempdir().unwrap();
        let (_relay, mut guest, _tap, path) = relay_in(dir.path());
        let first = connect(&path).unwrap();
        let started = Instant::now();
        let second = connect(&path);
        assert!(matches!(second, Err(ConnectError::Busy)), "{second:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(first);
        // The first session ends within a tick or two of its client's leaving.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut third = loop {
            match connect(&path) {
                Ok(s) => break s,
                Err(ConnectError::Busy) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("{e}"),
            }
        };
        third.write_all(b"third\n").unwrap();
        read_for(&mut guest, b"third\n");
    }

    #[test]
    fn what_a_client_types_past_one_chunk_reaches_the_guest_whole_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (_relay, mut guest, _tap, path) = relay_in(dir.path());
        let mut client = connect(&path).unwrap();
        let mut typed: Vec<u8> = (0..3 * INPUT_CHUNK + 17)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        typed.extend_from_slice(b"0123 the end");
        client.write_all(&typed).unwrap();
        let got = read_for(&mut guest, b"0123 the end");
        assert_eq!(got, typed);
    }
}
