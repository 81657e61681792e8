//! Local port forwards over SSH to a remote libvirt host's loopback.
//!
//! With `qemu+ssh://` the guest's QEMU `hostfwd` ports (SSH, the API server) bind on the
//! remote host's 127.0.0.1, out of the harness's reach. A `Tunnel` listens on 127.0.0.1 here,
//! one port per remote port, and carries every accepted connection to the remote port through
//! an SSH `direct-tcpip` channel, as `ssh -L` does.
//!
//! It logs in the way `ssh` does for the libvirt URI, so that it works wherever libvirt's own
//! ssh transport works: the URI's `keyfile` if given, else the keys of ssh-agent, else
//! `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`; the host key is checked against
//! `~/.ssh/known_hosts` unless the URI says `no_verify=1` (libvirt then runs `ssh` with
//! `StrictHostKeyChecking=no`). Not read: `~/.ssh/config` (host aliases, `User`, `Port`,
//! `IdentityFile`, `ProxyJump`): give those in the URI.
//!
//! One SSH session per accepted connection, each driven by its own thread in non-blocking
//! mode. ssh2's `Session` serialises every call behind one lock, so a blocking read on one
//! channel would stall every other channel of that session (and the writes that the read
//! waits for); sharing a session would need one thread multiplexing all channels, re-opening
//! channels whose non-blocking open must be retried with the same arguments, and reconnecting
//! everything when the session dies. A session per connection costs a handshake and a login
//! per connection (the harness makes few, and a failed one fails alone), and each pump stays
//! a simple loop over two sockets.

mod login;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ssh2::{BlockDirections, Session};

use self::login::{close_session, Login};
use super::remote::RemoteTarget;

/// Bound on each blocking SSH step (connect, handshake, login, channel open): a thread stuck
/// on a dead host gives up after this. `Drop` waits for a connection that is logging in.
const IO_TIMEOUT: Duration = Duration::from_secs(15);
/// How often idle threads look at the stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Bytes buffered per direction of a connection before its reader pauses.
const BUFFER_CAP: usize = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TunnelError {
    #[error("resolving {target}: {source}")]
    Resolve {
        target: String,
        #[source]
        source: io::Error,
    },
    #[error("connecting to {target} over SSH: {source}")]
    Connect {
        target: String,
        #[source]
        source: io::Error,
    },
    #[error("SSH {stage} with {target}: {source}")]
    Ssh {
        target: String,
        stage: &'static str,
        #[source]
        source: ssh2::Error,
    },
    #[error("the SSH host key of {host} ({key}) is not in {known_hosts}. {fix}")]
    UnknownHostKey {
        host: String,
        /// Type and `SHA256:` fingerprint, as OpenSSH shows them.
        key: String,
        known_hosts: PathBuf,
        /// The commands that accept the key, or the URI parameter that skips the check.
        fix: String,
    },
    #[error("the SSH host key of {host} ({key}) does NOT match the one in {known_hosts}: the host was reinstalled, or someone is in the middle. If the change is expected, remove the old key with `ssh-keygen -R '{known_hosts_name}' -f {known_hosts}` and accept the new one")]
    HostKeyMismatch {
        host: String,
        key: String,
        known_hosts: PathBuf,
        known_hosts_name: String,
    },
    #[error("reading the known hosts {path}: {source}")]
    KnownHosts {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no user name for the SSH login to {host}: put one in the libvirt URI (qemu+ssh://USER@host/system)")]
    NoUser { host: String },
    #[error("SSH authentication as {user} on {host} failed; tried: {tried}")]
    Auth {
        user: String,
        host: String,
        tried: String,
    },
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
    /// The OpenSSH known_hosts file; `None`: `~/.ssh/known_hosts`.
    pub known_hosts: Option<PathBuf>,
}

/// Listeners on 127.0.0.1 forwarding to the remote host's loopback. Dropping it closes the
/// listeners and every forwarded connection, and joins all its threads.
pub struct Tunnel {
    /// (address on the remote side, local port).
    ports: Vec<(SocketAddr, u16)>,
    stop: Arc<AtomicBool>,
    listeners: Vec<JoinHandle<()>>,
}

impl Tunnel {
    /// Logs in once (to fail here, not on the first connection, when the host key or the
    /// credentials are wrong) and starts forwarding `remote_ports`.
    /// `remotes` are addresses as the remote host reaches them: its loopback (a QEMU
    /// `hostfwd`) or a guest on one of its networks.
    pub fn open(target: &RemoteTarget, remotes: &[SocketAddr]) -> Result<Tunnel, TunnelError> {
        Tunnel::open_with(target, remotes, &TunnelOptions::default())
    }

    pub fn open_with(
        target: &RemoteTarget,
        remotes: &[SocketAddr],
        options: &TunnelOptions,
    ) -> Result<Tunnel, TunnelError> {
        let (login, session) = Login::first(target, options)?;
        close_session(session);
        let login = Arc::new(login);
        let stop = Arc::new(AtomicBool::new(false));
        let mut tunnel = Tunnel {
            ports: Vec::new(),
            stop: stop.clone(),
            listeners: Vec::new(),
        };
        for &remote in remotes {
            if tunnel.local_port(remote).is_some() {
                continue;
            }
            // On error `tunnel` drops here, stopping the listeners already started.
            let listen = |source| TunnelError::Listen { remote, source };
            let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(listen)?;
            listener.set_nonblocking(true).map_err(listen)?;
            let local = listener.local_addr().map_err(listen)?.port();
            let (login, stop) = (login.clone(), stop.clone());
            let handle = std::thread::Builder::new()
                .name(format!("ssh-tunnel-{remote}"))
                .spawn(move || serve(listener, remote, &login, &stop))
                .map_err(listen)?;
            tunnel.listeners.push(handle);
            tunnel.ports.push((remote, local));
        }
        Ok(tunnel)
    }

    /// The port on 127.0.0.1 that reaches `remote` from the remote host.
    pub fn local_port(&self, remote: SocketAddr) -> Option<u16> {
        self.ports
            .iter()
            .find(|(r, _)| *r == remote)
            .map(|(_, l)| *l)
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for handle in self.listeners.drain(..) {
            let _ = handle.join();
        }
    }
}
/// Waits until `fds` are ready for their events or `POLL_INTERVAL` passes.
fn wait(fds: &mut [libc::pollfd]) {
    // SAFETY: `fds` is a valid slice of pollfd for its length.
    unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            POLL_INTERVAL.as_millis() as libc::c_int,
        );
    }
}

/// A pollfd for `events` on `fd`; none at all when no event is wanted (poll skips negative
/// fds), else a socket that hung up would be reported ready at once, forever.
fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: if events == 0 { -1 } else { fd },
        events,
        revents: 0,
    }
}

/// The listener's thread: accepts until stopped, one thread per connection, joined before
/// it returns (the listener closes then).
fn serve(listener: TcpListener, remote: SocketAddr, login: &Arc<Login>, stop: &Arc<AtomicBool>) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((local, peer)) => {
                let (login, stop) = (login.clone(), stop.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("ssh-tunnel-{remote}-conn"))
                    .spawn(move || match forward(local, remote, &login, &stop) {
                        Ok(()) => {}
                        // A peer that resets or closes early: the end of a connection.
                        Err(e @ ForwardError::Io(_)) => tracing::debug!(
                            "forwarding {peer} to {remote} on {}: {e}",
                            login.display
                        ),
                        Err(e) => tracing::warn!(
                            "forwarding {peer} to {remote} on {}: {e}",
                            login.display
                        ),
                    });
                match spawned {
                    Ok(handle) => connections.push(handle),
                    Err(e) => tracing::warn!("no thread for a tunnel connection: {e}"),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait(&mut [pollfd(listener.as_raw_fd(), libc::POLLIN)]);
            }
            Err(e) => {
                tracing::warn!("accepting on the tunnel to {remote}: {e}");
                std::thread::sleep(POLL_INTERVAL);
            }
        }
        connections.retain(|h| !h.is_finished());
    }
    drop(listener);
    for handle in connections {
        let _ = handle.join();
    }
}

#[derive(Debug, thiserror::Error)]
enum ForwardError {
    #[error(transparent)]
    Login(#[from] TunnelError),
    #[error("opening the channel: {0}")]
    Channel(ssh2::Error),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// One forwarded connection: its own session and channel, pumped until both directions have
/// ended, an error, or the stop flag.
fn forward(
    local: TcpStream,
    remote: SocketAddr,
    login: &Login,
    stop: &AtomicBool,
) -> Result<(), ForwardError> {
    let (session, ssh_fd) = login.again()?;
    let result = session
        .channel_direct_tcpip(&remote.ip().to_string(), remote.port(), None)
        .map_err(ForwardError::Channel)
        .and_then(|mut channel| {
            session.set_blocking(false);
            let pumped = pump(&local, &session, ssh_fd, &mut channel, stop);
            session.set_blocking(true);
            session.set_timeout(2_000);
            let _ = channel.close();
            drop(channel);
            pumped.map_err(ForwardError::Io)
        });
    close_session(session);
    result
}

/// Copies bytes both ways, half-closes each direction when its source ends, returns when both
/// have ended (or on the first error, or when stopped).
fn pump(
    local: &TcpStream,
    session: &Session,
    ssh_fd: RawFd,
    channel: &mut ssh2::Channel,
    stop: &AtomicBool,
) -> io::Result<()> {
    local.set_nonblocking(true)?;
    let mut local_r = local;
    let mut local_w = local;
    let mut buf = vec![0u8; 32 * 1024];
    let mut up: Vec<u8> = Vec::new(); // local -> remote
    let mut down: Vec<u8> = Vec::new(); // remote -> local
    let (mut local_eof, mut eof_sent, mut remote_eof, mut local_shut) =
        (false, false, false, false);
    let would_block = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
        )
    };
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut progress = false;
        if !local_eof && up.len() < BUFFER_CAP {
            match local_r.read(&mut buf) {
                Ok(0) => (local_eof, progress) = (true, true),
                Ok(n) => {
                    up.extend_from_slice(&buf[..n]);
                    progress = true;
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
        }
        while !up.is_empty() {
            match channel.write(&up) {
                Ok(0) => break,
                Ok(n) => {
                    up.drain(..n);
                    progress = true;
                }
                Err(e) if would_block(&e) => break,
                Err(e) => return Err(e),
            }
        }
        if local_eof && up.is_empty() && !eof_sent {
            match channel.send_eof().map_err(io::Error::from) {
                Ok(()) => (eof_sent, progress) = (true, true),
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if !remote_eof && down.len() < BUFFER_CAP {
            match channel.read(&mut buf) {
                Ok(0) if channel.eof() => (remote_eof, progress) = (true, true),
                Ok(0) => {}
                Ok(n) => {
                    down.extend_from_slice(&buf[..n]);
                    progress = true;
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
        }
        while !down.is_empty() {
            match local_w.write(&down) {
                Ok(0) => break,
                Ok(n) => {
                    down.drain(..n);
                    progress = true;
                }
                Err(e) if would_block(&e) => break,
                Err(e) => return Err(e),
            }
        }
        if remote_eof && down.is_empty() && !local_shut {
            let _ = local.shutdown(std::net::Shutdown::Write);
            local_shut = true;
            progress = true;
        }
        if eof_sent && local_shut {
            return Ok(());
        }
        if !progress {
            let mut local_events = 0;
            if !local_eof && up.len() < BUFFER_CAP {
                local_events |= libc::POLLIN;
            }
            if !down.is_empty() {
                local_events |= libc::POLLOUT;
            }
            let mut ssh_events = 0;
            if (!remote_eof && down.len() < BUFFER_CAP)
                || !up.is_empty()
                || (local_eof && !eof_sent)
            {
                ssh_events |= libc::POLLIN;
            }
            if matches!(
                session.block_directions(),
                BlockDirections::Outbound | BlockDirections::Both
            ) {
                ssh_events |= libc::POLLOUT;
            }
            wait(&mut [
                pollfd(local.as_raw_fd(), local_events),
                pollfd(ssh_fd, ssh_events),
            ]);
        }
    }
}

#[cfg(test)]
mod tests;
