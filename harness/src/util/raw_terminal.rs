//! A terminal in raw mode (no line editing, no echo, no signals from keys: every key goes to
//! whoever reads it, as a serial console's user needs), put back as it was when the guard is
//! dropped, and also on a panic (a hook, should the panic not unwind to the guard). Signals
//! are the caller's: it must catch SIGINT, SIGTERM and SIGHUP and let the guard drop.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, Once};

use rustix::termios::{tcgetattr, tcsetattr, OptionalActions, Termios};

/// The terminal's settings before raw mode, while it is raw.
struct Saved {
    fd: OwnedFd,
    termios: Termios,
}

static SAVED: Mutex<Option<Saved>> = Mutex::new(None);
static PANIC_HOOK: Once = Once::new();

/// Raw mode on a terminal while this lives.
pub struct RawTerminal(());

impl RawTerminal {
    /// Puts the terminal `fd` is into raw mode. Fails on what is no terminal, and while another
    /// guard holds a terminal raw.
    pub fn enter(fd: BorrowedFd<'_>) -> io::Result<RawTerminal> {
        let termios = tcgetattr(fd)?;
        let mut raw = termios.clone();
        raw.make_raw();
        {
            let mut saved = saved();
            if saved.is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "a terminal is already in raw mode",
                ));
            }
            *saved = Some(Saved {
                fd: fd.try_clone_to_owned()?,
                termios,
            });
        }
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        if let Err(e) = tcsetattr(fd, OptionalActions::Now, &raw) {
            *saved() = None;
            return Err(e.into());
        }
        Ok(RawTerminal(()))
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        restore();
    }
}

fn saved() -> std::sync::MutexGuard<'static, Option<Saved>> {
    SAVED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Puts the terminal back, once. `Now`, not after the output drains: a terminal whose output
/// is stopped (Ctrl-S) would hold the way out.
fn restore() {
    if let Some(s) = saved().take() {
        let _ = tcsetattr(s.fd.as_fd(), OptionalActions::Now, &s.termios);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    use rustix::termios::LocalModes;

    /// A pseudo-terminal: its controller and the terminal end a program would have.
    fn pty() -> (OwnedFd, std::fs::File) {
        let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&controller).unwrap();
        unlockpt(&controller).unwrap();
        let name = ptsname(&controller, Vec::new()).unwrap();
        let terminal = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        (controller, terminal)
    }

    fn canonical(fd: BorrowedFd<'_>) -> bool {
        let t = tcgetattr(fd).unwrap();
        t.local_modes
            .contains(LocalModes::ICANON | LocalModes::ECHO)
    }

    #[test]
    fn raw_mode_is_left_on_drop_and_on_a_panic_and_refused_on_no_terminal() {
        let (_controller, terminal) = pty();
        assert!(canonical(terminal.as_fd()));
        let raw = RawTerminal::enter(terminal.as_fd()).unwrap();
        assert!(!canonical(terminal.as_fd()));
        assert!(
            RawTerminal::enter(terminal.as_fd()).is_err(),
            "one at a time"
        );
        drop(raw);
        assert!(canonical(terminal.as_fd()));

        let fd = terminal.as_fd();
        let panicked = std::panic::catch_unwind(|| {
            let _raw = RawTerminal::enter(fd).unwrap();
            assert!(!canonical(fd));
            panic!("on purpose");
        });
        assert!(panicked.is_err());
        assert!(canonical(terminal.as_fd()));

        let file = tempfile::tempfile().unwrap();
        assert!(RawTerminal::enter(file.as_fd()).is_err());
        assert!(saved().is_none(), "nothing held after a refusal");
    }
}
