//! `sno-harness console RUN --interactive`: the user's terminal, raw, on the guest's serial
//! console. While the run's harness lives, through the console input socket it serves
//! (guest::console_input); once it has gone and left its VM running (`--keep`: the harness's
//! QEMU, or a local libvirt domain's), through that QEMU's own serial socket, which takes the
//! next client once the harness's connection closed.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use sno_harness::exit;
use sno_harness::guest::console_input::{self, ConnectError};
use sno_harness::registry::Entry;
use sno_harness::util::raw_terminal::RawTerminal;
use sno_harness::util::socket_path::Reachable;

use super::console_text::{EscapeKey, GuestText};
use super::error::{bad, harness, CliError, Outcome};

/// The lock a session on a kept VM's serial socket holds, in the run's private directory:
/// QEMU queues a second client silently until the first leaves, so a second session is
/// refused here instead.
const DIRECT_LOCK: &str = "console.lock";
/// How long a write of typed keys to the console may block.
const TYPING_LIMIT: Duration = Duration::from_secs(10);
/// How long the signal handlers may take to be in place.
const SIGNALS_LIMIT: Duration = Duration::from_secs(5);

/// Whether stdin is a terminal (checked before anything else is done).
pub fn stdin_is_terminal() -> bool {
    rustix::termios::isatty(io::stdin())
}

/// The interactive session on `entry`'s console until the escape key, the console's end or a
/// signal; the terminal is raw meanwhile and restored on every way out.
pub fn interactive(entry: &Entry, escape: EscapeKey) -> Outcome {
    let (console, _lock) = open(entry)?;
    console
        .set_write_timeout(Some(TYPING_LIMIT))
        .map_err(harness)?;
    let signals = Signals::catch()?;
    outln!(
        "escape: {escape} (the serial console of run {}; keys go to the guest)",
        entry.id
    );
    let end = {
        let _raw = RawTerminal::enter(io::stdin().as_fd())
            .map_err(|e| harness(format!("cannot put the terminal into raw mode: {e}")))?;
        relay(&console, escape, &signals)
    };
    if rustix::termios::isatty(io::stdout()) {
        // Colours the guest left on are not the user's shell's. (Not `out!`, which shows
        // control characters as text.)
        let mut stdout = io::stdout().lock();
        let _ = stdout.write_all(b"\x1b[0m").and_then(|_| stdout.flush());
    }
    match end {
        End::Escape => {
            outln!("\nleft the console of run {}", entry.id);
            Ok(exit::OK)
        }
        End::Closed => {
            outln!(
                "\nthe console of run {} closed (its run ended or its VM stopped)",
                entry.id
            );
            Ok(exit::OK)
        }
        End::StdinClosed => Ok(exit::OK),
        End::Signal(n) => Ok(128 + n),
        End::Failed(why) => Err(harness(format!("the console of run {}: {why}", entry.id))),
    }
}

/// The stream to the run's console, and the lock that makes the session the only one when it
/// goes straight to the VM's serial socket.
fn open(entry: &Entry) -> Result<(UnixStream, Option<File>), CliError> {
    let private = entry.private.as_deref().ok_or_else(|| {
        bad(format!(
            "run {} has no private directory: its console's sockets are gone",
            entry.id
        ))
    })?;
    if !private.is_dir() {
        return Err(bad(format!(
            "run {}: its private directory {} is gone, and its console's sockets with it",
            entry.id,
            private.display()
        )));
    }
    if entry.owner_alive() {
        return through_the_harness(entry, private).map(|s| (s, None));
    }
    // A kept VM: the harness's QEMU, or a local domain's (libvirt's QEMU listens on the
    // same socket, its harness's connection gone; a remote host's has none here).
    let kept_qemu = entry.qemu.is_some_and(|q| q.alive());
    if kept_qemu || entry.domain.is_some() {
        let lock = lock_direct(private, &entry.id)?;
        let serial = private.join("serial.sock");
        return match Reachable::new(&serial).and_then(|r| UnixStream::connect(r.path())) {
            Ok(s) => Ok((s, Some(lock))),
            Err(e) if kept_qemu => Err(bad(format!(
                "run {}: cannot connect to its QEMU's serial console {}: {e}",
                entry.id,
                serial.display()
            ))),
            Err(e) => Err(bad(gone(entry, &format!("{}: {e}", serial.display())))),
        };
    }
    Err(bad(gone(entry, "")))
}

/// The console input the run's harness serves.
fn through_the_harness(entry: &Entry, private: &Path) -> Result<UnixStream, CliError> {
    let path = private.join(console_input::SOCKET);
    match console_input::connect(&path) {
        Ok(s) => Ok(s),
        Err(ConnectError::Unreachable { source, .. })
            if source.kind() == io::ErrorKind::NotFound =>
        {
            Err(bad(format!(
                "run {}: its console takes no input (no {}): its VM has not started, or has \
                 stopped",
                entry.id,
                path.display()
            )))
        }
        Err(e) => Err(bad(format!("run {}: {e}", entry.id))),
    }
}

/// Why a run whose harness has gone has no console to type into; `tried` is the socket tried
/// and its error, if one was.
fn gone(entry: &Entry, tried: &str) -> String {
    let tried = match tried {
        "" => String::new(),
        t => format!(" ({t})"),
    };
    match &entry.domain {
        Some(domain) => format!(
            "run {}: its harness has ended and its domain {domain}'s serial console does not \
             answer here{tried}: the domain does not run, or runs on another host; \
             `virsh{} console {domain}` reaches a running domain's console",
            entry.id,
            entry
                .uri
                .as_deref()
                .map(|u| format!(" -c {u}"))
                .unwrap_or_default()
        ),
        None => format!(
            "run {}: its harness has ended and its VM does not run: there is nothing to type \
             into (`sno-harness console {}` shows what its console said)",
            entry.id, entry.id
        ),
    }
}

/// Holds `DIRECT_LOCK` in `private`, or says another session holds it.
fn lock_direct(private: &Path, id: &str) -> Result<File, CliError> {
    use rustix::fs::{flock, FlockOperation};
    let path = private.join(DIRECT_LOCK);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| bad(format!("run {id}: {}: {e}", path.display())))?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(bad(format!(
            "run {id}: another interactive console is attached to this run; one at a time"
        ))),
        Err(e) => Err(harness(format!("locking {}: {e}", path.display()))),
    }
}

/// How a session ended.
enum End {
    Escape,
    /// The console's other end closed it.
    Closed,
    StdinClosed,
    Signal(i32),
    Failed(String),
}

/// Copies the terminal's keys to the console and the console's output, filtered, to the
/// terminal, until one of them ends, the escape key or a signal.
fn relay(console: &UnixStream, escape: EscapeKey, signals: &Signals) -> End {
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    let mut text = GuestText::default();
    let mut buf = vec![0u8; 64 * 1024];
    // A bound on each wait, so that a signal is seen even should its wake-up be lost.
    let tick = Timespec::try_from(Duration::from_secs(1)).ok();
    loop {
        let mut fds = [
            PollFd::new(&stdin, PollFlags::IN),
            PollFd::new(console, PollFlags::IN),
            PollFd::new(&signals.wake, PollFlags::IN),
        ];
        match poll(&mut fds, tick.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return End::Failed(format!("waiting for input: {e}")),
        }
        let ready = |fd: &PollFd<'_>| !fd.revents().is_empty();
        let (keys, output) = (ready(&fds[0]), ready(&fds[1]));
        if let Some(n) = signals.caught() {
            return End::Signal(n);
        }
        if output {
            match rustix::io::read(console, &mut buf[..]) {
                Ok(0) => return End::Closed,
                Ok(n) => {
                    let shown = text.filter(&buf[..n]);
                    if stdout
                        .write_all(&shown)
                        .and_then(|_| stdout.flush())
                        .is_err()
                    {
                        return End::Failed("the terminal took no more output".into());
                    }
                }
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(e) => return End::Failed(format!("reading the console: {e}")),
            }
        }
        if keys {
            match rustix::io::read(&stdin, &mut buf[..console_input::INPUT_CHUNK]) {
                Ok(0) => return End::StdinClosed,
                Ok(n) => {
                    let typed = &buf[..n];
                    let at = typed.iter().position(|b| *b == escape.byte());
                    let send = &typed[..at.unwrap_or(n)];
                    let mut to_guest = console;
                    if let Err(e) = to_guest.write_all(send) {
                        return End::Failed(format!("typing into the console: {e}"));
                    }
                    if at.is_some() {
                        return End::Escape;
                    }
                }
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(e) => return End::Failed(format!("reading the terminal: {e}")),
            }
        }
    }
}

/// SIGINT, SIGTERM and SIGHUP caught (a tokio thread of their own): the session ends and the
/// terminal is restored instead of the process dying raw. In raw mode Ctrl-C is a key for the
/// guest; these come from elsewhere (`kill`, a closed terminal window).
struct Signals {
    /// Readable once a signal came.
    wake: UnixStream,
    caught: Arc<AtomicI32>,
}

impl Signals {
    fn catch() -> Result<Signals, CliError> {
        let (wake, mut waker) = UnixStream::pair().map_err(harness)?;
        let caught = Arc::new(AtomicI32::new(0));
        let record = caught.clone();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(harness)?;
        std::thread::Builder::new()
            .name("console-signals".into())
            .spawn(move || {
                runtime.block_on(async move {
                    use tokio::signal::unix::{signal, SignalKind};
                    let streams = (
                        signal(SignalKind::interrupt()),
                        signal(SignalKind::terminate()),
                        signal(SignalKind::hangup()),
                    );
                    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = streams else {
                        let _ = ready_tx.send(false);
                        return;
                    };
                    let _ = ready_tx.send(true);
                    let n = tokio::select! {
                        _ = int.recv() => libc::SIGINT,
                        _ = term.recv() => libc::SIGTERM,
                        _ = hup.recv() => libc::SIGHUP,
                    };
                    record.store(n, Ordering::SeqCst);
                    let _ = waker.write_all(b"!");
                })
            })
            .map_err(harness)?;
        match ready.recv_timeout(SIGNALS_LIMIT) {
            Ok(true) => Ok(Signals { wake, caught }),
            _ => Err(harness("cannot catch SIGINT, SIGTERM and SIGHUP")),
        }
    }

    fn caught(&self) -> Option<i32> {
        match self.caught.load(Ordering::SeqCst) {
            0 => None,
            n => Some(n),
        }
    }
}
