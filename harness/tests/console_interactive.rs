//! `sno-harness console RUN --interactive` on a pseudo-terminal, without a run's VM: against a
//! console this test serves as a run's harness does (its guest a socket the test holds), and
//! against a QEMU of the test's whose harness is gone (a kernel of a few bytes that echoes its
//! serial port, tests/serial_echo_kernel). What is typed reaches the guest, the guest's output
//! shows without the sequences that act on the terminal, the escape key ends the session with
//! exit 0, and the terminal is restored after it, after a signal, and is never touched when
//! stdin is no terminal.

mod serial_echo_kernel;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
use rustix::termios::{tcgetattr, LocalModes};
use sno_harness::guest::console::Console;
use sno_harness::guest::console_input;
use sno_harness::registry::{self, Entry, ProcessId, Registration};

const BIN: &str = env!("CARGO_BIN_EXE_sno-harness");
const PATIENCE: Duration = Duration::from_secs(30);
const CTRL_RIGHT_BRACKET: u8 = 0x1d;

/// A pseudo-terminal with the binary on its terminal end; what the binary writes is collected.
struct Session {
    controller: File,
    child: Child,
    shown: Arc<Mutex<Vec<u8>>>,
    /// The reader has seen the terminal end close.
    drained: Arc<std::sync::atomic::AtomicBool>,
}

impl Session {
    fn start(state: &Path, args: &[&str]) -> Session {
        let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&controller).unwrap();
        unlockpt(&controller).unwrap();
        let name = ptsname(&controller, Vec::new()).unwrap();
        let terminal = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        let child = Command::new(BIN)
            .args(args)
            .env("SNO_HARNESS_STATE_DIR", state)
            .env("SNO_HARNESS_LOG", "warn")
            .stdin(terminal.try_clone().unwrap())
            .stdout(terminal.try_clone().unwrap())
            .stderr(terminal)
            .spawn()
            .unwrap();
        let controller = File::from(controller);
        let shown = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (controller.try_clone().unwrap(), shown.clone());
        let drained = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = drained.clone();
        // Until the terminal end closes (EIO once the binary exited).
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        Session {
            controller,
            child,
            shown,
            drained,
        }
    }

    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.shown.lock().unwrap()).into_owned()
    }

    /// Waits until the terminal shows `text`.
    fn wait_shown(&self, text: &str) {
        self.wait_shown_within(text, PATIENCE);
    }

    fn wait_shown_within(&self, text: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.shown().contains(text) {
            assert!(
                Instant::now() < deadline,
                "{text:?} not shown within {limit:?}; shown: {:?}",
                self.shown()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn canonical(&self) -> bool {
        let t = tcgetattr(self.controller.as_fd()).unwrap();
        t.local_modes
            .contains(LocalModes::ICANON | LocalModes::ECHO)
    }

    /// Waits until the binary has put the terminal into raw mode.
    fn wait_raw(&self) {
        let deadline = Instant::now() + PATIENCE;
        while self.canonical() {
            assert!(
                Instant::now() < deadline,
                "the terminal never went raw; shown: {:?}",
                self.shown()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_in(&mut self, bytes: &[u8]) {
        self.controller.write_all(bytes).unwrap();
    }

    /// Until the reader has taken everything the exited binary wrote (its terminal end closed):
    /// on a loaded machine the reader may lag the exit. Bounded by PATIENCE.
    fn wait_drained(&self) {
        let deadline = Instant::now() + PATIENCE;
        while !self.drained.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The exit code, within PATIENCE.
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.wait_drained();
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "still running after {PATIENCE:?}; shown: {:?}",
                    self.shown()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads from the guest's end of the console until `want` came.
fn guest_reads(guest: &mut UnixStream, want: &[u8]) -> Vec<u8> {
    guest.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(want.len()).any(|w| w == want) {
        let n = guest.read(&mut buf).expect("the typed keys arrive");
        assert!(n > 0, "the console closed after {got:?}");
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// A run registered in `state` as this process's, with its run and private directories.
fn register(state: &Path, root: &Path, id: &str) -> (Registration, PathBuf, PathBuf) {
    let (run, private) = (root.join(id), root.join(format!("{id}-private")));
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(&private).unwrap();
    let entry = Entry {
        id: id.into(),
        pid: 0,
        pid_start: 0,
        dir: run.clone(),
        backend: "qemu".into(),
        uri: None,
        domain: None,
        keep: false,
        paused: false,
        qemu: None,
        private: Some(private.clone()),
        bmc: None,
    };
    let registration = registry::register(&state.join("runs"), entry).unwrap();
    (registration, run, private)
}

/// A console served as a run's harness serves it; the test holds the guest's end.
fn served_console(run: &Path, private: &Path) -> (Console, UnixStream) {
    let (guest, ours) = UnixStream::pair().unwrap();
    let console = Console::attach(ours, &run.join("serial.log")).unwrap();
    console
        .serve_input(&private.join(console_input::SOCKET))
        .unwrap();
    (console, guest)
}

/// Writes `bytes` as the guest until the session shows `seen`: the session relays output only
/// once it is attached, and drops what came before.
fn guest_says_until_shown(guest: &mut UnixStream, s: &Session, bytes: &[u8], seen: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !s.shown().contains(seen) {
        assert!(Instant::now() < deadline, "shown: {:?}", s.shown());
        guest.write_all(bytes).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn typed_keys_reach_the_guest_its_output_shows_filtered_and_the_escape_key_ends_with_exit_0() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let (_registration, run, private) = register(&state, t.path(), "smoke");
    let (console, mut guest) = served_console(&run, &private);

    let mut s = Session::start(&state, &["console", "smoke", "-i"]);
    s.wait_shown("escape: Ctrl-]");
    s.wait_raw();
    guest_says_until_shown(&mut guest, &s, b"\x1b]0;owned\x07sh-5.2# ", "sh-5.2# ");
    assert!(!s.shown().contains("owned"), "{:?}", s.shown());

    // Raw: Enter is a carriage return, Ctrl-C a byte for the guest.
    s.type_in(b"echo mark-$((6*7))\r\x03");
    guest_reads(&mut guest, b"echo mark-$((6*7))\r\x03");
    guest.write_all(b"\r\nmark-42\r\n").unwrap();
    s.wait_shown("mark-42");
    console
        .wait_for_text("mark-42", PATIENCE)
        .expect("serial.log and the run's waiters see the output too");

    // One session at a time: a second is refused at once, the first goes on.
    let second = Session::start(&state, &["console", "smoke", "-i"]);
    let mut second = second;
    assert_eq!(second.exit_code(), Some(2), "{}", second.shown());
    assert!(
        second
            .shown()
            .contains("another interactive console is attached to this run"),
        "{}",
        second.shown()
    );

    s.type_in(&[b'x', CTRL_RIGHT_BRACKET, b'y']);
    assert_eq!(s.exit_code(), Some(0), "{}", s.shown());
    let typed = guest_reads(&mut guest, b"x");
    assert!(
        !typed.contains(&b'y'),
        "nothing after the escape key is sent"
    );
    assert!(s.canonical(), "the terminal is restored");
    assert!(s.shown().contains("left the console of run smoke"));
    // The guest's colours are reset as a sequence, never shown as text.
    assert!(s.shown().contains("\x1b[0m"), "{:?}", s.shown());
    assert!(!s.shown().contains("\\x1b"), "{:?}", s.shown());
}

#[test]
fn another_escape_key_ends_the_session_and_the_default_one_is_then_a_key_for_the_guest() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let (_registration, run, private) = register(&state, t.path(), "smoke");
    let (_console, mut guest) = served_console(&run, &private);
    let mut s = Session::start(&state, &["console", "smoke", "-i", "--escape", "^x"]);
    s.wait_shown("escape: Ctrl-X");
    s.wait_raw();
    guest_says_until_shown(&mut guest, &s, b"# ", "# ");
    s.type_in(&[CTRL_RIGHT_BRACKET, b'z']);
    guest_reads(&mut guest, &[CTRL_RIGHT_BRACKET, b'z']);
    s.type_in(&[0x18]);
    assert_eq!(s.exit_code(), Some(0), "{}", s.shown());
    assert!(s.canonical());
}

#[test]
fn a_signal_ends_the_session_with_the_terminal_restored_and_the_consoles_end_ends_it_too() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let (_registration, run, private) = register(&state, t.path(), "smoke");
    let (_console, mut guest) = served_console(&run, &private);
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let mut s = Session::start(&state, &["console", "smoke", "-i"]);
        s.wait_raw();
        guest_says_until_shown(&mut guest, &s, b"# ", "# ");
        let pid = s.child.id().to_string();
        assert!(Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap()
            .success());
        assert_eq!(s.exit_code(), Some(code), "SIG{signal}: {}", s.shown());
        assert!(s.canonical(), "SIG{signal}: the terminal is restored");
    }

    let mut s = Session::start(&state, &["console", "smoke", "-i"]);
    s.wait_raw();
    guest_says_until_shown(&mut guest, &s, b"# ", "# ");
    drop(guest); // the VM stopped: the console closes, and the relay with it
    assert_eq!(s.exit_code(), Some(0), "{}", s.shown());
    assert!(s.shown().contains("the console of run smoke closed"));
    assert!(s.canonical());
    let deadline = Instant::now() + PATIENCE;
    while private.join(console_input::SOCKET).exists() {
        assert!(Instant::now() < deadline, "the socket outlived the console");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn harness(state: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("SNO_HARNESS_STATE_DIR", state)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn without_a_terminal_or_with_a_key_that_is_no_control_key_the_session_is_refused_with_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let (_registration, run, private) = register(&state, t.path(), "smoke");
    let (_console, _guest) = served_console(&run, &private);
    let o = harness(&state, &["console", "smoke", "--interactive"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stdin is not one"), "{err}");
    for (args, said) in [
        (
            &["console", "smoke", "-i", "--escape", "]"][..],
            "^ and a letter",
        ),
        (
            &["console", "smoke", "-i", "--escape", "^M"],
            "the Enter key",
        ),
        (&["console", "smoke", "--escape", "^x"], "--interactive"),
        (
            &["console", "smoke", "-i", "--no-follow"],
            "cannot be used with",
        ),
    ] {
        let o = harness(&state, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

/// QEMU, killed on drop.
struct Qemu(Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Connects to `path` within PATIENCE (QEMU makes the socket as it starts).
fn connect(path: &Path) -> UnixStream {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return s,
            Err(e) => assert!(Instant::now() < deadline, "{}: {e}", path.display()),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_kept_vms_console_is_typed_into_through_its_qemus_socket_once_the_harness_is_gone() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let (mut registration, _run, private) = register(&state, t.path(), "kept");
    let kernel = t.path().join("kernel.bin");
    std::fs::write(&kernel, serial_echo_kernel::test_kernel()).unwrap();
    let serial = private.join("serial.sock");
    // The chardev as the QEMU backend's argv gives it.
    let qemu = Qemu(
        Command::new(sno_harness::vm::qemu::QEMU_BINARY)
            .args(["-machine", "pc", "-accel", "tcg", "-m", "32", "-nodefaults"])
            .args(["-display", "none", "-kernel"])
            .arg(&kernel)
            .arg("-chardev")
            .arg(format!(
                "socket,id=serial0,path={},server=on,wait=on",
                serial.display()
            ))
            .args(["-serial", "chardev:serial0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("QEMU is installed"),
    );
    // The harness's connection, closed as the harness ends.
    let mut harness_side = connect(&serial);
    guest_reads(&mut harness_side, serial_echo_kernel::BANNER.as_bytes());
    drop(harness_side);
    let gone = ProcessId {
        pid: std::process::id(),
        start: 0,
    };
    let qemu_id = ProcessId::of(qemu.0.id()).unwrap();
    registration
        .update(|e| {
            (e.pid, e.pid_start) = (gone.pid, gone.start);
            e.keep = true;
            e.qemu = Some(qemu_id);
        })
        .unwrap();

    let mut s = Session::start(&state, &["console", "kept", "-i"]);
    s.wait_shown("escape: Ctrl-]");
    s.wait_raw();
    // The kernel echoes: what shows came through QEMU (the raw terminal echoes nothing).
    s.type_in(b"through QEMU\r");
    s.wait_shown("through QEMU");

    let mut second = Session::start(&state, &["console", "kept", "-i"]);
    assert_eq!(second.exit_code(), Some(2), "{}", second.shown());
    assert!(
        second.shown().contains("another interactive console"),
        "{}",
        second.shown()
    );

    s.type_in(&[CTRL_RIGHT_BRACKET]);
    assert_eq!(s.exit_code(), Some(0), "{}", s.shown());
    assert!(s.canonical());

    // QEMU takes the next client again; a kept local libvirt domain's QEMU is reached the same
    // way (its registration names the domain, not the process).
    registration
        .update(|e| {
            e.qemu = None;
            e.backend = "libvirt".into();
            e.uri = Some("qemu:///system".into());
            e.domain = Some("sno-kept-40123".into());
        })
        .unwrap();
    let mut again = Session::start(&state, &["console", "kept", "-i"]);
    again.wait_raw();
    again.type_in(b"and again\r");
    again.wait_shown("and again");
    again.type_in(&[CTRL_RIGHT_BRACKET]);
    assert_eq!(again.exit_code(), Some(0), "{}", again.shown());

    // Once the VM is gone, the socket does not answer, and the message says where to look.
    drop(qemu);
    let mut after = Session::start(&state, &["console", "kept", "-i"]);
    assert_eq!(after.exit_code(), Some(2), "{}", after.shown());
    assert!(
        after
            .shown()
            .contains("`virsh -c qemu:///system console sno-kept-40123`"),
        "{}",
        after.shown()
    );
}

#[test]
fn a_run_whose_harness_and_vm_are_gone_has_nothing_to_type_into_and_a_libvirt_one_names_virsh() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    let (mut registration, _run, _private) = register(&state, t.path(), "gone");
    registration.update(|e| e.pid_start = 0).unwrap();
    let mut s = Session::start(&state, &["console", "gone", "-i"]);
    assert_eq!(s.exit_code(), Some(2), "{}", s.shown());
    assert!(s.shown().contains("nothing to type into"), "{}", s.shown());
    assert!(s.canonical());
    registration
        .update(|e| {
            e.backend = "libvirt".into();
            e.uri = Some("qemu:///system".into());
            e.domain = Some("sno-gone-40123".into());
        })
        .unwrap();
    let mut s = Session::start(&state, &["console", "gone", "-i"]);
    assert_eq!(s.exit_code(), Some(2), "{}", s.shown());
    assert!(
        s.shown()
            .contains("`virsh -c qemu:///system console sno-gone-40123`"),
        "{}",
        s.shown()
    );
}

/// A run's QEMU boots the minimal ISO under the `rootfs-404` fault: its live initramfs stops in
/// the emergency shell on the serial console (`exec sh` on /dev/console, the kernel's last
/// `console=ttyS0`). Typed into through the run's own console input while the run holds the
/// console, the shell runs the command: its answer is in the run's serial.log.
#[test]
fn typed_into_a_runs_emergency_shell_the_command_runs_there_and_its_answer_is_in_serial_log() {
    let out = tempfile::Builder::new()
        .prefix("sno-console-")
        .tempdir()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/faults/rootfs-404.toml");
    let stderr = out.path().join("harness.stderr");
    let mut run = Command::new(BIN)
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(out.path())
        .env("SNO_HARNESS_STATE_DIR", state.path())
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let id = "fault-rootfs-404";
    let dir = out.path().join(id);
    let ended = |run: &mut Child| {
        run.try_wait().unwrap().map(|status| {
            format!(
                "the run ended ({status}); its stderr:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            )
        })
    };
    // The console input opens with the VM.
    let deadline = Instant::now() + Duration::from_secs(600);
    while !private_sockets(state.path()).contains(&console_input::SOCKET.to_string()) {
        if let Some(why) = ended(&mut run) {
            panic!("{why}");
        }
        assert!(Instant::now() < deadline, "no console input within 600 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut s = Session::start(state.path(), &["console", id, "-i"]);
    s.wait_raw();
    // Typed once while the initramfs waits before its dump (the console's tty holds the line
    // for the shell to come), and once at the shell's prompt, should the shell not take it.
    s.wait_shown_within("Entering emergency mode", Duration::from_secs(600));
    s.type_in(b"echo mark-$((6*7))\r");
    s.wait_shown_within("Press Enter to continue", Duration::from_secs(120));
    if !s.shown().contains("mark-42") {
        s.type_in(b"echo mark-$((6*7))\r");
    }
    let log = dir.join("serial.log");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .any(|l| l.ends_with(" mark-42"))
    {
        assert!(
            Instant::now() < deadline,
            "mark-42 not in serial.log within 120 s; the session showed: {:?}",
            s.shown()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    s.type_in(&[CTRL_RIGHT_BRACKET]);
    assert_eq!(s.exit_code(), Some(0), "{}", s.shown());
    assert!(s.canonical());
    // The run goes on to its verdict as without the session.
    let deadline = Instant::now() + Duration::from_secs(600);
    let status = loop {
        if let Some(status) = run.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not end within 600 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        status.code(),
        Some(0),
        "the run fails as the scenario expects"
    );
    let result = std::fs::read_to_string(dir.join("result.json")).unwrap();
    assert!(result.contains("404 Not Found"), "{result}");
    assert!(
        !private_sockets(state.path()).contains(&console_input::SOCKET.to_string()),
        "the console input went with the run"
    );
}

/// The names of the sockets in the private directories under `state`.
fn private_sockets(state: &Path) -> Vec<String> {
    use std::os::unix::fs::FileTypeExt;
    let mut names = Vec::new();
    for run in std::fs::read_dir(state.join("private"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(run.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.file_type().is_ok_and(|t| t.is_socket()) {
                names.push(f.file_name().to_string_lossy().into_owned());
            }
        }
    }
    names
}
