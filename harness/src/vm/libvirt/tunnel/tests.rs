//! Against a private sshd on 127.0.0.1 (openssh-server's binary, never the system
//! service), with keys generated per test.

use super::*;
use std::io::{Read, Write};
use std::process::Command;
use std::time::Instant;

use rand_core::RngCore;

#[path = "../../../../tests/private_sshd/mod.rs"]
mod private_sshd;
use private_sshd::{free_port, keygen, read, Sshd};

/// `port` on the far side's loopback.
fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Logging in to `sshd` with its authorized key, checking host keys or not.
fn target(sshd: &Sshd, known_hosts_verify: bool) -> RemoteTarget {
    RemoteTarget {
        user: None,
        host: "127.0.0.1".into(),
        port: Some(sshd.port),
        keyfile: Some(sshd.path("client")),
        known_hosts_verify,
    }
}

/// Echoes every connection on 127.0.0.1 back to its sender; stops on drop.
struct Echo {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Echo {
    fn start() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        let thread = std::thread::spawn(move || {
            while !thread_stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        conn.set_nonblocking(false).unwrap();
                        std::thread::spawn(move || {
                            let mut reader = conn.try_clone().unwrap();
                            let mut writer = conn;
                            let _ = io::copy(&mut reader, &mut writer);
                            let _ = writer.shutdown(std::net::Shutdown::Write);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Echo {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends `data` through `port` and returns what came back, writing and reading at once.
fn round_trip(port: u16, data: Vec<u8>) -> Vec<u8> {
    let conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut writer = conn.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        for chunk in data.chunks(7_919) {
            writer.write_all(chunk).unwrap();
        }
        writer.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut back = Vec::new();
    (&conn).read_to_end(&mut back).unwrap();
    sender.join().unwrap();
    back
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn connections_are_forwarded_intact_and_everything_stops_on_drop() {
    let sshd = Sshd::start();
    let echo = Echo::start();
    // No .pub beside the key: ssh needs none.
    std::fs::remove_file(sshd.path("client.pub")).unwrap();
    // Nothing listens on `dead` on the far side.
    let dead = free_port();
    let tunnel = Tunnel::open(
        &target(&sshd, false),
        &[loopback(echo.port), loopback(echo.port), loopback(dead)],
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", sshd.log()));
    let local = tunnel
        .local_port(loopback(echo.port))
        .expect("a local port for the echo port");
    assert_ne!(local, echo.port);
    assert_eq!(tunnel.local_port(loopback(echo.port + 1)), None);

    // A connection to a closed remote port is closed here too, not left hanging.
    let mut to_dead =
        TcpStream::connect(("127.0.0.1", tunnel.local_port(loopback(dead)).unwrap())).unwrap();
    to_dead
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut nothing = Vec::new();
    match to_dead.read_to_end(&mut nothing) {
        Ok(n) => assert_eq!(n, 0),
        Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}"),
    }

    // A connection that stays open across the drop.
    let mut held = TcpStream::connect(("127.0.0.1", local)).unwrap();
    held.write_all(b"ping").unwrap();
    let mut pong = [0u8; 4];
    held.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    held.read_exact(&mut pong).unwrap();
    assert_eq!(&pong, b"ping");

    let senders: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut data = vec![0u8; 300 * 1024 + i * 1_001];
                rand_core::OsRng.fill_bytes(&mut data);
                let back = round_trip(local, data.clone());
                assert_eq!(back.len(), data.len(), "connection {i}: length");
                assert!(back == data, "connection {i}: the bytes differ");
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    assert!(
        !sshd.sessions().is_empty(),
        "the held connection has a session"
    );

    let dropping = Instant::now();
    drop(tunnel);
    assert!(
        dropping.elapsed() < Duration::from_secs(5),
        "drop took {:?}",
        dropping.elapsed()
    );
    let refused = TcpStream::connect(("127.0.0.1", local)).unwrap_err();
    assert_eq!(
        refused.kind(),
        io::ErrorKind::ConnectionRefused,
        "{refused}"
    );
    // The held connection was closed, not left hanging.
    let mut rest = Vec::new();
    match held.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) => assert!(
            !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "the held connection is still open: {e}"
        ),
    }
    wait_until(
        "sshd's session processes to exit",
        Duration::from_secs(10),
        || sshd.sessions().is_empty(),
    );
}

#[test]
fn a_wrong_key_is_an_authentication_error_naming_user_and_host() {
    let sshd = Sshd::start();
    keygen(&sshd.path("stranger"), "ed25519");
    let mut target = target(&sshd, false);
    target.user = Some("nobody-here".into());
    target.keyfile = Some(sshd.path("stranger"));
    let err = Tunnel::open(&target, &[loopback(1)])
        .err()
        .expect("a stranger's key is refused");
    eprintln!("{err}");
    assert!(matches!(err, TunnelError::Auth { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("refused; tried as nobody-here, with the key"),
        "{text}"
    );
    assert!(text.contains("Permission denied"), "{text}");
    assert!(
        text.contains(&sshd.path("stranger").display().to_string()),
        "{text}"
    );
}

#[test]
fn host_keys_are_checked_against_known_hosts() {
    let sshd = Sshd::start();
    let echo = Echo::start();
    let target = target(&sshd, true);
    let entry = |key: &str| {
        let public = read(&sshd.path(&format!("{key}.pub")));
        let mut fields = public.split_whitespace();
        let (kind, blob) = (fields.next().unwrap(), fields.next().unwrap());
        format!("[127.0.0.1]:{} {kind} {blob}\n", sshd.port)
    };
    let open = |known_hosts: &str| {
        let path = sshd.path("known_hosts");
        std::fs::write(&path, known_hosts).unwrap();
        let options = TunnelOptions {
            known_hosts: Some(path),
        };
        Tunnel::open_with(&target, &[loopback(echo.port)], &options)
    };

    // Unknown: the error says how to accept the key, or to skip the check.
    let err = open("").err().expect("an unknown host key is refused");
    eprintln!("{err}");
    assert!(matches!(err, TunnelError::UnknownHostKey { .. }), "{err}");
    let text = err.to_string();
    let known_hosts = sshd.path("known_hosts").display().to_string();
    for needle in [
        "is not in",
        known_hosts.as_str(),
        &format!("ssh -p {} ", sshd.port),
        "ssh-keyscan",
        "no_verify=1",
    ] {
        assert!(text.contains(needle), "{needle:?} missing: {text}");
    }

    // Known, with a line of another kind (and a broken key) before it.
    let bad_line = "@cert-authority *.example.com ssh-ed25519 AAAA\n";
    open(&format!("{bad_line}{}", entry("host_ed25519"))).unwrap();
    // Only the ECDSA key known: ssh asks the server for that type.
    let tunnel = open(&entry("host_ecdsa")).unwrap();
    let port = tunnel.local_port(loopback(echo.port)).unwrap();
    assert_eq!(round_trip(port, b"verified".to_vec()), b"verified");
    drop(tunnel);
    // Hashed entries, as `HashKnownHosts yes` writes them.
    std::fs::write(sshd.path("known_hosts"), entry("host_ed25519")).unwrap();
    let out = Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(sshd.path("known_hosts"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let hashed = read(&sshd.path("known_hosts"));
    assert!(hashed.starts_with("|1|"), "{hashed}");
    open(&hashed).unwrap();

    // Another key for the same host and type: a mismatch, with the fix.
    keygen(&sshd.path("impostor"), "ed25519");
    let err = open(&entry("impostor"))
        .err()
        .expect("a changed host key is refused");
    eprintln!("{err}");
    assert!(matches!(err, TunnelError::HostKeyChanged { .. }), "{err}");
    assert!(err.to_string().contains("ssh-keygen -R"), "{err}");
}

#[test]
fn only_old_directories_without_a_listening_control_socket_are_stale() {
    use std::os::unix::net::UnixListener;
    let base = tempfile::tempdir().unwrap();
    // A directory under `base` whose `files` are made first (each would touch its mtime).
    let make = |name: &str, age: Duration, socket: bool| {
        let dir = base.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let listener = socket.then(|| UnixListener::bind(dir.join("control")).unwrap());
        let t = std::time::SystemTime::now() - age;
        std::fs::File::open(&dir).unwrap().set_modified(t).unwrap();
        (dir, listener)
    };
    let old = Duration::from_secs(600);
    // A killed harness's: the socket file is there, nothing listens on it.
    let (dead, listener) = make("sno-ssh-dead", old, true);
    drop(listener);
    // One whose login never finished: no socket at all.
    let (never, _) = make("sno-ssh-never", old, false);
    // A live tunnel's.
    let (_live, _listening) = make("sno-ssh-live", old, true);
    // One coming up now, and someone else's directory.
    make("sno-ssh-young", Duration::ZERO, false);
    make("other", old, false);
    let mut stale = stale_control_dirs(base.path());
    stale.sort();
    assert_eq!(stale, [dead, never]);
}

#[test]
fn a_reverse_forward_carries_the_remote_sides_connections_here_until_the_tunnel_closes() {
    let sshd = Sshd::start();
    let echo = Echo::start();
    // No forward out: a tunnel only for the way back, as a boot server's.
    let tunnel =
        Tunnel::open(&target(&sshd, false), &[]).unwrap_or_else(|e| panic!("{e}\n{}", sshd.log()));
    let remote = tunnel
        .reverse(echo.port)
        .unwrap_or_else(|e| panic!("{e}\n{}", sshd.log()));
    assert_ne!(remote, echo.port, "sshd's own port on the far side");
    // The far side is this host here: its loopback port reaches the echo server through sshd.
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(round_trip(remote, data.clone()), data);
    // The same request again is the same forward (the control connection keeps one).
    assert_eq!(tunnel.reverse(echo.port).unwrap(), remote);
    drop(tunnel);
    wait_until("the remote port closed", Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", remote)).is_err()
    });
}

#[test]
fn a_reverse_forward_the_server_refuses_is_an_error_saying_so() {
    // sshd takes a keyword's first value, so not AllowTcpForwarding, which the config sets.
    let sshd = Sshd::start_with("DisableForwarding yes\n");
    let tunnel =
        Tunnel::open(&target(&sshd, false), &[]).unwrap_or_else(|e| panic!("{e}\n{}", sshd.log()));
    let e = tunnel
        .reverse(9)
        .expect_err("remote forwarding is off")
        .to_string();
    assert!(e.contains("127.0.0.1:9"), "{e}");
}
