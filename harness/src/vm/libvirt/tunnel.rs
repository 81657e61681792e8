//! Local port forwards over SSH to a remote libvirt host's loopback.
//!
//! With `qemu+ssh://` the guest's QEMU `hostfwd` ports (SSH, the API server) bind on the
//! remote host's 127.0.0.1, out of the harness's reach. A `Tunnel` listens on 127.0.0.1 here,
//! one port per remote port, and carries every accepted connection to the remote port.
//!
//! It runs OpenSSH's `ssh`, as libvirt's own `qemu+ssh` transport does, so that a host libvirt
//! reaches is reached the same way: `~/.ssh/config` (host aliases, `User`, `Port`,
//! `IdentityFile`, `ProxyJump`), ssh-agent, known_hosts. One control connection per tunnel
//! (`ssh -N -o ControlMaster=yes`) logs in once; each accepted connection is handed to it by an
//! `ssh -S CONTROL -W HOST:PORT` whose stdin and stdout are the accepted socket itself, so no
//! byte passes through this process and no second login is made. The listeners stay this
//! process's own (port 0, no race for a free port with anyone).
//!
//! The `ssh` processes are started by the tunnel's own thread, which lives as long as the
//! tunnel: each dies with it (`PR_SET_PDEATHSIG`), and each is in a process group of its own,
//! so that a Ctrl-C on the terminal reaches the harness, which then closes the tunnel in order.

mod argv;
mod refusal;

use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::remote::RemoteTarget;

/// How long the control connection may take to log in (every hop of a `ProxyJump` included).
const UP_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the tunnel's thread looks at the stop flag and its children.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How long `ssh` gets to close its connection after SIGTERM, before SIGKILL.
const SSH_GRACE: Duration = Duration::from_secs(3);
const SSH_BINARY: &str = "ssh";

#[derive(Debug, thiserror::Error)]
pub enum TunnelError {
    #[error("starting `{SSH_BINARY}` for the SSH forwards: {source} (OpenSSH's client, package openssh-client, is needed for qemu+ssh:// hosts)")]
    Spawn {
        #[source]
        source: io::Error,
    },
    #[error("the SSH host key of {host} is not in {known_hosts} (ssh: {said}). {fix}")]
    UnknownHostKey {
        host: String,
        said: String,
        known_hosts: String,
        /// The commands that accept the key, or the URI parameter that skips the check.
        fix: String,
    },
    #[error("the SSH host key of {host} does NOT match the one known (ssh: {said}): {fix}")]
    HostKeyChanged {
        host: String,
        said: String,
        fix: String,
    },
    #[error("SSH login to {host} refused; tried {offered} (ssh: {said})")]
    Auth {
        host: String,
        offered: String,
        said: String,
    },
    #[error("SSH connection to {host} failed ({status}): {said}")]
    Refused {
        host: String,
        status: String,
        said: String,
    },
    #[error("no SSH connection to {host} within {}s (ssh so far: {said})", UP_TIMEOUT.as_secs())]
    Timeout { host: String, said: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "a forward from the remote host's loopback back to 127.0.0.1:{local_port} here: {said}"
    )]
    Reverse { local_port: u16, said: String },
    #[error("listening on 127.0.0.1 for {remote} on the remote side: {source}")]
    Listen {
        remote: SocketAddr,
        #[source]
        source: io::Error,
    },
}

/// What `Tunnel::open` reads from the environment, overridable (for tests).
#[derive(Debug, Clone, Default)]
pub struct TunnelOptions {
    /// A known_hosts file in place of the user's (and the system's); `None`: what the user's
    /// OpenSSH configuration says.
    pub known_hosts: Option<PathBuf>,
}

/// Listeners on 127.0.0.1 forwarding to the remote host's loopback. Dropping it closes the
/// listeners, ends every forwarded connection and the control connection, and joins its thread.
pub struct Tunnel {
    /// (address on the remote side, local port).
    ports: Vec<(SocketAddr, u16)>,
    /// For the requests made after it is up (`reverse`).
    plan: Plan,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    /// The control socket and the `ssh` logs; removed last.
    _dir: tempfile::TempDir,
}

/// What the tunnel's `ssh` processes are given.
#[derive(Clone)]
struct Plan {
    target: RemoteTarget,
    options: TunnelOptions,
    dir: PathBuf,
}

impl Plan {
    fn control(&self) -> PathBuf {
        self.dir.join("control")
    }
}

impl Tunnel {
    /// Logs in once (to fail here, not on the first connection, when the host key or the
    /// credentials are wrong) and starts forwarding `remotes`: addresses as the remote host
    /// reaches them, its loopback (a QEMU `hostfwd`) or a guest on one of its networks.
    pub fn open(target: &RemoteTarget, remotes: &[SocketAddr]) -> Result<Tunnel, TunnelError> {
        Tunnel::open_with(target, remotes, &TunnelOptions::default())
    }

    pub fn open_with(
        target: &RemoteTarget,
        remotes: &[SocketAddr],
        options: &TunnelOptions,
    ) -> Result<Tunnel, TunnelError> {
        let dir = tempfile::Builder::new()
            .prefix(CONTROL_PREFIX)
            .tempdir_in(CONTROL_BASE)
            .map_err(|source| TunnelError::Io {
                what: "a directory in /tmp for the SSH control socket".into(),
                source,
            })?;
        let mut ports = Vec::new();
        let mut listeners = Vec::new();
        for &remote in remotes {
            if ports.iter().any(|(r, _)| *r == remote) {
                continue;
            }
            let listen = |source| TunnelError::Listen { remote, source };
            let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(listen)?;
            listener.set_nonblocking(true).map_err(listen)?;
            ports.push((remote, listener.local_addr().map_err(listen)?.port()));
            listeners.push((listener, remote));
        }
        let plan = Plan {
            target: target.clone(),
            options: options.clone(),
            dir: dir.path().to_path_buf(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread_stop = stop.clone();
        let worker = std::thread::Builder::new()
            .name(format!("ssh-tunnel-{}", target.host))
            .spawn({
                let plan = plan.clone();
                move || run(plan, listeners, &thread_stop, ready_tx)
            })
            .map_err(|source| TunnelError::Io {
                what: "a thread for the SSH forwards".into(),
                source,
            })?;
        let tunnel = Tunnel {
            ports,
            plan,
            stop,
            worker: Some(worker),
            _dir: dir,
        };
        // On error `tunnel` drops here, joining the thread (which has ended).
        match ready_rx.recv() {
            Ok(up) => up.map(|()| tunnel),
            Err(_) => Err(TunnelError::Io {
                what: "the SSH forwards' thread".into(),
                source: io::Error::other("it ended before it said whether it is up"),
            }),
        }
    }

    /// The port on 127.0.0.1 that reaches `remote` from the remote host.
    pub fn local_port(&self, remote: SocketAddr) -> Option<u16> {
        self.ports
            .iter()
            .find(|(r, _)| *r == remote)
            .map(|(_, l)| *l)
    }

    /// A port on the remote host's loopback that reaches `local_port` on this host's, for as
    /// long as the tunnel is open: how a guest there fetches from a server of the harness.
    pub fn reverse(&self, local_port: u16) -> Result<u16, TunnelError> {
        let p = &self.plan;
        let mut child = ssh_command(argv::reverse(
            &p.target,
            &p.options,
            &p.control(),
            local_port,
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| TunnelError::Spawn { source })?;
        let failed = |said: String| TunnelError::Reverse { local_port, said };
        // The request goes over the logged-in connection: it is answered at once, or never.
        let started = Instant::now();
        while matches!(child.try_wait(), Ok(None)) {
            if started.elapsed() > UP_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "no answer within {}s",
                    UP_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child
            .wait_with_output()
            .map_err(|e| failed(e.to_string()))?;
        let printed = String::from_utf8_lossy(&out.stdout);
        match printed.trim().parse::<u16>() {
            Ok(port) if out.status.success() && port != 0 => Ok(port),
            _ => Err(failed(format!(
                "{} (printed {:?}; {})",
                out.status,
                printed.trim(),
                refusal::said(&String::from_utf8_lossy(&out.stderr))
            ))),
        }
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The tunnel's thread: brings the control connection up, says so, then serves the listeners
/// until stopped. Everything it started ends before it returns.
fn run(
    plan: Plan,
    listeners: Vec<(TcpListener, SocketAddr)>,
    stop: &AtomicBool,
    ready: mpsc::Sender<Result<(), TunnelError>>,
) {
    let mut master = match Master::start(&plan) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if let Err(e) = master.wait_up(&plan) {
        let _ = ready.send(Err(e));
        return;
    }
    let _ = ready.send(Ok(()));
    let mut forwards: Vec<Child> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let mut accepted = false;
        for (listener, remote) in &listeners {
            match listener.accept() {
                Ok((conn, peer)) => {
                    accepted = true;
                    match spawn_forward(&plan, conn, *remote) {
                        Ok(child) => forwards.push(child),
                        Err(e) => tracing::warn!("forwarding {peer} to {remote}: {e}"),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => tracing::warn!("accepting on the tunnel to {remote}: {e}"),
            }
        }
        // Reaps the forwards whose connection ended.
        forwards.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        if !accepted {
            wait_readable(&listeners);
        }
    }
    drop(listeners);
    for mut child in forwards {
        let _ = child.kill();
        let _ = child.wait();
    }
    drop(master);
}

/// Waits until a listener has a connection or `POLL_INTERVAL` passes.
fn wait_readable(listeners: &[(TcpListener, SocketAddr)]) {
    let mut fds: Vec<libc::pollfd> = listeners
        .iter()
        .map(|(l, _)| libc::pollfd {
            fd: l.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a valid slice of pollfd for its length.
    unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            POLL_INTERVAL.as_millis() as libc::c_int,
        );
    }
}

/// An `ssh` of the tunnel: in its own process group, and killed when the thread that
/// started it (the tunnel's) ends.
fn ssh_command(argv: Vec<std::ffi::OsString>) -> Command {
    let mut cmd = Command::new(SSH_BINARY);
    cmd.args(argv);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// `ssh -W` with the accepted connection as its stdin and stdout: the control connection
/// takes both descriptors over, and this process keeps none.
fn spawn_forward(plan: &Plan, conn: TcpStream, remote: SocketAddr) -> io::Result<Child> {
    conn.set_nonblocking(false)?;
    let out = OwnedFd::from(conn.try_clone()?);
    let log = File::options()
        .create(true)
        .append(true)
        .open(plan.dir.join("forwards.log"))?;
    ssh_command(argv::forward(
        &plan.target,
        &plan.options,
        &plan.control(),
        remote,
    ))
    .stdin(Stdio::from(OwnedFd::from(conn)))
    .stdout(Stdio::from(out))
    .stderr(log)
    .spawn()
}

/// The control connection's `ssh`.
struct Master {
    child: Child,
    log: PathBuf,
}

impl Master {
    fn start(plan: &Plan) -> Result<Master, TunnelError> {
        let log = plan.dir.join("control.log");
        let stderr = File::create(&log).map_err(|source| TunnelError::Io {
            what: format!("creating {}", log.display()),
            source,
        })?;
        let child = ssh_command(argv::master(&plan.target, &plan.options, &plan.control()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|source| TunnelError::Spawn { source })?;
        Ok(Master { child, log })
    }

    /// Until the control socket exists (`ssh` makes it once logged in), `ssh` ends, or
    /// `UP_TIMEOUT`.
    fn wait_up(&mut self, plan: &Plan) -> Result<(), TunnelError> {
        let started = Instant::now();
        loop {
            if plan.control().exists() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(refusal::classify(
                    &plan.target,
                    &plan.options,
                    &status.to_string(),
                    &read_log(&self.log),
                ));
            }
            if started.elapsed() > UP_TIMEOUT {
                return Err(TunnelError::Timeout {
                    host: plan.target.to_string(),
                    said: refusal::said(&read_log(&self.log)),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Master {
    /// SIGTERM (ssh closes its channels and the connection), SIGKILL after `SSH_GRACE`.
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // SAFETY: kill(2) of this process's own child, not yet reaped (checked just above).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + SSH_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the tunnels' directories are: a Unix socket's path has at most 107 bytes, too few for
/// a run directory's.
pub const CONTROL_BASE: &str = "/tmp";
const CONTROL_PREFIX: &str = "sno-ssh-";

/// The tunnel directories under `base` that no tunnel uses: older than a control connection
/// may take to come up, and with no control connection listening. A harness killed outright
/// leaves its directory (its `ssh` processes die with it); `gc` removes these.
pub fn stale_control_dirs(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(CONTROL_PREFIX))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|dir| {
            let old = std::fs::metadata(dir)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > UP_TIMEOUT));
            old && std::os::unix::net::UnixStream::connect(dir.join("control")).is_err()
        })
        .collect()
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[cfg(test)]
mod tests;
