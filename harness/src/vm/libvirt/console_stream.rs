//! The serial console through libvirt (`virDomainOpenConsole`), for a libvirtd on another
//! host: there the domain's serial port cannot be a unix socket in the run directory, but
//! libvirt hands its pty to a client as a stream over the connection.
//!
//! The stream is bridged to one end of a socket pair whose other end goes to
//! [`Console::attach`], so waiters, hooks and serial.log work as with the local socket. A pump
//! thread copies the guest's output to the console and what is written into
//! [`ConsolePump::input`] to the guest, until the stream ends (the domain stopped; the
//! console then closes, as when QEMU exits) or the pump is dropped.
//!
//! The stream is non-blocking and polled: a blocking `virStreamRecv` cannot be interrupted to
//! stop the pump, and the virt crate's stream callbacks keep a pointer to the `Stream` value
//! that moving it would leave dangling. A 20 ms poll costs nothing a console would notice.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use virt::connect::Connect;
use virt::domain::Domain;
use virt::stream::Stream;
use virt_sys as sys;

use super::error::{other as err, LibvirtError};
use crate::guest::console::Console;

/// How long the pump sleeps when neither side has anything.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// Guest output buffered before the pump stops reading the stream (the console's reader is
/// slow only if serial.log's disk is).
const BUFFER_CAP: usize = 1 << 20;

/// The thread between libvirt's console stream and the `Console`. Dropping it stops the
/// thread (aborting the stream) and waits for it; the console then closes.
pub struct ConsolePump {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The console's end of the socket pair: what is written here reaches the guest.
    input: UnixStream,
}

impl ConsolePump {
    /// A writer typing into the guest's serial port.
    pub fn input(&self) -> io::Result<UnixStream> {
        self.input.try_clone()
    }

    /// Whether the stream is still open (false once the domain stopped or the pump failed).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for ConsolePump {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens `dom`'s first console (taking it from any other client: `VIR_DOMAIN_CONSOLE_FORCE`)
/// and attaches a `Console` logging to `log`. Open it before the guest runs (start the domain
/// paused) to see its first line: the pty drops what nobody reads.
pub fn console_over_stream(
    conn: &Connect,
    dom: &Domain,
    log: &Path,
) -> Result<(Console, ConsolePump), LibvirtError> {
    let stream = Stream::new(conn, sys::VIR_STREAM_NONBLOCK)
        .map_err(|e| err("opening a stream for the console", e))?;
    dom.open_console(None, &stream, sys::VIR_DOMAIN_CONSOLE_FORCE)
        .map_err(|e| err("virDomainOpenConsole", e))?;
    let attach = || -> io::Result<(UnixStream, UnixStream, Console)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let input = theirs.try_clone()?;
        let console = Console::attach(theirs, log)?;
        Ok((ours, input, console))
    };
    let (ours, input, console) = match attach() {
        Ok(parts) => parts,
        Err(e) => {
            let _ = stream.abort();
            return Err(err("attaching the serial console", e));
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = stop.clone();
    // On failure the closure, and the stream and socket it owns, are dropped: the console
    // closes at once.
    let thread = std::thread::Builder::new()
        .name("libvirt-console".into())
        .spawn(move || pump(stream, ours, &thread_stop))
        .map_err(|e| err("starting the console thread", e))?;
    Ok((
        console,
        ConsolePump {
            stop,
            thread: Some(thread),
            input,
        },
    ))
}

/// Copies stream -> socket and socket -> stream until the stream ends, either side fails, or
/// `stop`. Finishes the stream when it ended, aborts it otherwise.
fn pump(stream: Stream, mut socket: UnixStream, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut to_console: Vec<u8> = Vec::new();
    let mut to_guest: Vec<u8> = Vec::new();
    // False once every writer of the socket's other end is gone: nothing more to type.
    let mut typing = true;
    let ended = loop {
        if stop.load(Ordering::SeqCst) {
            break false;
        }
        let mut progress = false;
        if to_console.len() < BUFFER_CAP {
            // `recv` returns -2 (not an error) when a non-blocking stream has nothing.
            match stream.recv(&mut buf) {
                Ok(0) => break true,
                Ok(n) if n > 0 => {
                    to_console.extend_from_slice(&buf[..n as usize]);
                    progress = true;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("the console stream failed: {e}");
                    break false;
                }
            }
        }
        if !to_console.is_empty() {
            match socket.write(&to_console) {
                Ok(n) => {
                    to_console.drain(..n);
                    progress |= n > 0;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The console's reader is gone: nobody to copy for.
                Err(_) => break false,
            }
        }
        if typing && to_guest.is_empty() {
            match socket.read(&mut buf) {
                Ok(0) => typing = false,
                Ok(n) => {
                    to_guest.extend_from_slice(&buf[..n]);
                    progress = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => typing = false,
            }
        }
        if !to_guest.is_empty() {
            match stream.send(&to_guest) {
                Ok(n) if n > 0 => {
                    to_guest.drain(..n as usize);
                    progress = true;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("typing into the console stream: {e}");
                    break false;
                }
            }
        }
        if !progress {
            // A negative fd is skipped: a plain sleep when there is nothing to read (a closed
            // peer would report POLLHUP at once, forever).
            let mut fds = [libc::pollfd {
                fd: if typing && to_guest.is_empty() {
                    socket.as_raw_fd()
                } else {
                    -1
                },
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(fds.as_mut_ptr(), 1, IDLE_POLL.as_millis() as libc::c_int) };
        }
    };
    // What the guest said last still goes to the console.
    if ended && !to_console.is_empty() {
        let _ = socket.set_nonblocking(false);
        let _ = socket.write_all(&to_console);
    }
    let _ = if ended {
        stream.finish()
    } else {
        stream.abort()
    };
}

#[cfg(test)]
#[path = "../../../tests/serial_echo_kernel/mod.rs"]
mod serial_echo_kernel;

#[cfg(test)]
mod tests {
    //! A real domain on the host's libvirtd (TCG) whose serial port runs a kernel of a few
    //! bytes: this host has no Linux kernel image to boot, and nothing else writes to the
    //! serial port early (SeaBIOS prints to its debug port).

    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{SystemTime, UNIX_EPOCH};

    use crate::guest::console::ConsoleError;
    use crate::vm::libvirt::runtime::connect;
    use crate::vm::libvirt::DEFAULT_URI;

    use super::serial_echo_kernel::{test_kernel, BANNER};

    /// Destroys the domain on every path.
    struct Guard(Domain);

    impl Drop for Guard {
        fn drop(&mut self) {
            if self.0.is_active().unwrap_or(false) {
                let _ = self.0.destroy();
            }
            // libvirt keeps the log of a transient domain's QEMU: not this test's to leave.
            if let Ok(name) = self.0.name() {
                let _ = std::fs::remove_file(
                    Path::new(crate::vm::libvirt::runtime::QEMU_LOG_DIR)
                        .join(format!("{name}.log")),
                );
            }
        }
    }

    fn domain_xml(name: &str, kernel: &Path) -> String {
        format!(
            "<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{}</kernel>
  </os>
  <features><acpi/></features>
  <devices>
    <serial type='pty'><target port='0'/></serial>
    <console type='pty'><target type='serial' port='0'/></console>
    <memballoon model='none'/>
  </devices>
</domain>",
            kernel.display()
        )
    }

    #[test]
    fn the_console_stream_carries_output_and_typing_and_closes_with_the_domain() {
        let conn = connect(DEFAULT_URI)
            .unwrap_or_else(|e| panic!("this test needs the host's libvirtd: {e}"));
        let dir = tempfile::tempdir().unwrap();
        // libvirt's QEMU user reads the kernel.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let kernel = dir.path().join("kernel.bin");
        std::fs::write(&kernel, test_kernel()).unwrap();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("harness-console-test-{}-{nanos}", std::process::id());
        let dom = conn
            .create_domain_xml(
                &domain_xml(&name, &kernel),
                sys::VIR_DOMAIN_START_PAUSED | sys::VIR_DOMAIN_START_AUTODESTROY,
            )
            .unwrap();
        let guard = Guard(dom);
        let dom = &guard.0;

        // Opened while paused: the first line is there.
        let log = dir.path().join("serial.log");
        let (console, pump) = console_over_stream(&conn, dom, &log).unwrap();
        dom.resume().unwrap();
        console
            .wait_for_text(BANNER, Duration::from_secs(60))
            .unwrap();
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(logged.lines().any(|l| l.ends_with(BANNER)), "{logged}");
        pump.input()
            .unwrap()
            .write_all(b"typed through libvirt\n")
            .unwrap();
        console
            .wait_for_text("typed through libvirt", Duration::from_secs(30))
            .unwrap();

        // Dropping the pump closes the console; the domain runs on.
        assert!(pump.is_running());
        drop(pump);
        let err = console
            .wait_for_text("never printed", Duration::from_secs(10))
            .unwrap_err();
        assert!(matches!(err, ConsoleError::Closed { .. }), "{err}");
        assert!(dom.is_active().unwrap());

        // A second client gets the console again; the domain's end closes it.
        let log2 = dir.path().join("serial2.log");
        let (console, pump) = console_over_stream(&conn, dom, &log2).unwrap();
        pump.input().unwrap().write_all(b"second client\n").unwrap();
        console
            .wait_for_text("second client", Duration::from_secs(30))
            .unwrap();
        dom.destroy().unwrap();
        let err = console
            .wait_for_text("never printed", Duration::from_secs(30))
            .unwrap_err();
        assert!(matches!(err, ConsoleError::Closed { .. }), "{err}");
        let started = std::time::Instant::now();
        while pump.is_running() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the pump outlived the domain"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(pump);
        drop(guard);
    }
}
