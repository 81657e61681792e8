//! Logging in to the remote libvirt host as `ssh` would for the libvirt URI: the host key
//! checked against known_hosts (unless `no_verify`), then the URI's key file, ssh-agent's
//! keys or the default key files. The first login finds what works; each forwarded
//! connection's own login repeats exactly that.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use ssh2::{CheckResult, KnownHostFileKind, MethodType, Session};

use super::{TunnelError, TunnelOptions, IO_TIMEOUT};
use crate::vm::libvirt::remote::RemoteTarget;

/// Host key algorithms in OpenSSH's order of preference (without the SHA-1 `ssh-rsa`, which
/// OpenSSH no longer offers). libssh2 prefers ECDSA over Ed25519; a known_hosts that OpenSSH
/// wrote usually has the Ed25519 key only, so libssh2's own order would find no entry.
const HOST_KEY_ALGORITHMS: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
    "rsa-sha2-256",
];

/// How to log in again for each connection: what the first login found to work.
pub(super) struct Login {
    target: RemoteTarget,
    /// `[user@]host[:port]`, for messages.
    pub(super) display: String,
    user: String,
    addr: SocketAddr,
    /// `None` when the URI says `no_verify`.
    known_hosts: Option<KnownHosts>,
    /// The host key algorithm whose key known_hosts has; pinned for later logins.
    host_key_algorithm: Option<String>,
    credential: Credential,
}

struct KnownHosts {
    path: PathBuf,
    text: String,
}

enum Credential {
    File {
        private: PathBuf,
        public: Option<PathBuf>,
    },
    /// The agent's key with this public blob.
    Agent { blob: Vec<u8> },
}

enum Verdict {
    Match,
    NotFound,
    Mismatch,
}

impl Login {
    /// Resolves, connects, finds a host key algorithm known_hosts vouches for and a
    /// credential the server accepts.
    pub(super) fn first(
        target: &RemoteTarget,
        options: &TunnelOptions,
    ) -> Result<(Login, Session), TunnelError> {
        let display = target.to_string();
        let user = match &target.user {
            Some(u) => u.clone(),
            None => passwd_entry()
                .map(|(name, _)| name)
                .ok_or_else(|| TunnelError::NoUser {
                    host: display.clone(),
                })?,
        };
        let port = target.port_or_default();
        let addrs: Vec<SocketAddr> = (target.host.as_str(), port)
            .to_socket_addrs()
            .map_err(|source| TunnelError::Resolve {
                target: display.clone(),
                source,
            })?
            .collect();
        let known_hosts = if target.known_hosts_verify {
            let path = options
                .known_hosts
                .clone()
                .unwrap_or_else(|| ssh_dir().join("known_hosts"));
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
                Err(source) => return Err(TunnelError::KnownHosts { path, source }),
            };
            Some(KnownHosts { path, text })
        } else {
            None
        };
        let mut login = Login {
            target: target.clone(),
            display,
            user,
            addr: addrs.first().copied().ok_or_else(|| TunnelError::Resolve {
                target: target.to_string(),
                source: io::Error::new(io::ErrorKind::NotFound, "no address"),
            })?,
            known_hosts,
            host_key_algorithm: None,
            // Replaced by what `find_credential` finds, below.
            credential: Credential::Agent { blob: Vec::new() },
        };
        let mut last_err = None;
        let mut session = None;
        for addr in &addrs {
            login.addr = *addr;
            match login.handshake(&HOST_KEY_ALGORITHMS.join(",")) {
                Ok((s, _)) => {
                    session = Some(s);
                    break;
                }
                Err(e) => last_err = Some(e),
            }
        }
        let Some(session) = session else {
            return Err(last_err.unwrap_or_else(|| TunnelError::Resolve {
                target: login.display.clone(),
                source: io::Error::new(io::ErrorKind::NotFound, "no address"),
            }));
        };
        let session = login.find_known_host_key(session)?;
        login.credential = login.find_credential(&session)?;
        Ok((login, session))
    }

    /// A logged-in session (and its socket), as the first login found it works.
    pub(super) fn again(&self) -> Result<(Session, RawFd), TunnelError> {
        let prefs = self
            .host_key_algorithm
            .clone()
            .unwrap_or_else(|| HOST_KEY_ALGORITHMS.join(","));
        let (session, fd) = self.handshake(&prefs)?;
        if self.known_hosts.is_some() {
            match self.check_host_key(&session)? {
                Verdict::Match => {}
                Verdict::Mismatch => return Err(self.host_key_error(&session, true)),
                Verdict::NotFound => return Err(self.host_key_error(&session, false)),
            }
        }
        let ssh = |stage, source| TunnelError::Ssh {
            target: self.display.clone(),
            stage,
            source,
        };
        match &self.credential {
            Credential::File { private, public } => session
                .userauth_pubkey_file(&self.user, public.as_deref(), private, None)
                .map_err(|e| ssh("authentication", e))?,
            Credential::Agent { blob } => {
                let mut agent = session.agent().map_err(|e| ssh("ssh-agent", e))?;
                agent.connect().map_err(|e| ssh("ssh-agent", e))?;
                agent.list_identities().map_err(|e| ssh("ssh-agent", e))?;
                let identity = agent
                    .identities()
                    .map_err(|e| ssh("ssh-agent", e))?
                    .into_iter()
                    .find(|i| i.blob() == blob.as_slice())
                    .ok_or_else(|| TunnelError::Auth {
                        user: self.user.clone(),
                        host: self.host_port(),
                        tried: "the ssh-agent key of the first login (no longer in the agent)"
                            .into(),
                    })?;
                agent
                    .userauth(&self.user, &identity)
                    .map_err(|e| ssh("authentication", e))?;
                let _ = agent.disconnect();
            }
        }
        Ok((session, fd))
    }

    /// TCP connection and SSH handshake offering the host key algorithms `prefs`, blocking
    /// with `IO_TIMEOUT`.
    fn handshake(&self, prefs: &str) -> Result<(Session, RawFd), TunnelError> {
        let tcp = TcpStream::connect_timeout(&self.addr, IO_TIMEOUT).map_err(|source| {
            TunnelError::Connect {
                target: self.display.clone(),
                source,
            }
        })?;
        let _ = tcp.set_nodelay(true);
        let fd = tcp.as_raw_fd();
        let ssh = |stage, source| TunnelError::Ssh {
            target: self.display.clone(),
            stage,
            source,
        };
        let mut session = Session::new().map_err(|e| ssh("session", e))?;
        session.set_tcp_stream(tcp);
        session.set_timeout(IO_TIMEOUT.as_millis() as u32);
        session
            .method_pref(MethodType::HostKey, prefs)
            .map_err(|e| ssh("host key algorithms", e))?;
        session.handshake().map_err(|e| ssh("handshake", e))?;
        Ok((session, fd))
    }

    /// Makes sure known_hosts vouches for the server (unless `no_verify`). When it has not
    /// the key negotiated, tries the server's other key types one by one, as OpenSSH prefers
    /// the types it has keys for: libssh2 cannot be told which ones those are (hashed entries
    /// do not say which host they are for). ssh2 checks keys whatever their type, so a host
    /// known by another type of key gives a mismatch here, not "not found": only when no
    /// type matches is a mismatch reported.
    fn find_known_host_key(&mut self, session: Session) -> Result<Session, TunnelError> {
        if self.known_hosts.is_none() {
            return Ok(session);
        }
        let negotiated = session.methods(MethodType::HostKey).map(str::to_string);
        let mut mismatch = match self.check_host_key(&session)? {
            Verdict::Match => {
                self.host_key_algorithm = negotiated;
                return Ok(session);
            }
            Verdict::Mismatch => true,
            Verdict::NotFound => false,
        };
        for alg in HOST_KEY_ALGORITHMS {
            if negotiated.as_deref() == Some(alg) {
                continue;
            }
            // A server without a key of this type refuses the handshake: next type.
            let Ok((other, _)) = self.handshake(alg) else {
                continue;
            };
            match self.check_host_key(&other)? {
                Verdict::Match => {
                    close_session(session);
                    self.host_key_algorithm = Some(alg.to_string());
                    return Ok(other);
                }
                Verdict::Mismatch => mismatch = true,
                Verdict::NotFound => {}
            }
            close_session(other);
        }
        Err(self.host_key_error(&session, mismatch))
    }

    fn check_host_key(&self, session: &Session) -> Result<Verdict, TunnelError> {
        let Some(known) = &self.known_hosts else {
            return Ok(Verdict::Match);
        };
        let ssh = |stage, source| TunnelError::Ssh {
            target: self.display.clone(),
            stage,
            source,
        };
        let mut hosts = session.known_hosts().map_err(|e| ssh("known hosts", e))?;
        // Line by line: libssh2 gives up on the whole file at the first line it cannot
        // parse (an @cert-authority line, a key type it does not know).
        for line in known.text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Err(e) = hosts.read_str(line, KnownHostFileKind::OpenSSH) {
                tracing::debug!(
                    "{}: skipping a line libssh2 cannot read: {e}",
                    known.path.display()
                );
            }
        }
        let (key, _) = session
            .host_key()
            .ok_or_else(|| ssh("host key", ssh2::Error::unknown()))?;
        // OpenSSH writes port 22 entries as the bare host name, others as [host]:port.
        let result = match self.target.port_or_default() {
            22 => hosts.check(&self.target.host, key),
            port => hosts.check_port(&self.target.host, port, key),
        };
        Ok(match result {
            CheckResult::Match => Verdict::Match,
            CheckResult::Mismatch => Verdict::Mismatch,
            CheckResult::NotFound | CheckResult::Failure => Verdict::NotFound,
        })
    }

    fn host_key_error(&self, session: &Session, mismatch: bool) -> TunnelError {
        let (key_type, fingerprint) = describe_host_key(session);
        let known_hosts = self
            .known_hosts
            .as_ref()
            .map(|k| k.path.clone())
            .unwrap_or_default();
        let port = self.target.port_or_default();
        let known_hosts_name = match port {
            22 => self.target.host.clone(),
            p => format!("[{}]:{p}", self.target.host),
        };
        if mismatch {
            return TunnelError::HostKeyMismatch {
                host: self.display.clone(),
                key: format!("{key_type} {fingerprint}"),
                known_hosts,
                known_hosts_name,
            };
        }
        let port_flag = |flag: &str| match port {
            22 => String::new(),
            p => format!("{flag} {p} "),
        };
        let host = &self.target.host;
        let fix = format!(
            "Check the fingerprint and accept the key once with `ssh {}{}@{host} true` (or add \
             the host's keys with `ssh-keyscan {}{host} >> {}`), or add no_verify=1 to the \
             libvirt URI to skip the check",
            port_flag("-p"),
            self.user,
            port_flag("-p"),
            known_hosts.display()
        );
        TunnelError::UnknownHostKey {
            host: self.display.clone(),
            key: format!("{key_type} {fingerprint}"),
            known_hosts,
            fix,
        }
    }

    /// The URI's key file if it names one; else ssh-agent's keys, else the default key
    /// files: the first the server accepts.
    fn find_credential(&self, session: &Session) -> Result<Credential, TunnelError> {
        let mut tried = Vec::new();
        if let Some(private) = &self.target.keyfile {
            let public = public_key_of(private);
            match session.userauth_pubkey_file(&self.user, public.as_deref(), private, None) {
                Ok(()) => {
                    return Ok(Credential::File {
                        private: private.clone(),
                        public,
                    })
                }
                Err(e) => tried.push(format!(
                    "the key file {} ({})",
                    private.display(),
                    e.message()
                )),
            }
            return Err(self.auth_error(tried));
        }
        if let Some(blob) = self.try_agent(session, &mut tried) {
            return Ok(Credential::Agent { blob });
        }
        let dir = ssh_dir();
        let mut any = false;
        for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
            let private = dir.join(name);
            if !private.exists() {
                continue;
            }
            any = true;
            let public = public_key_of(&private);
            match session.userauth_pubkey_file(&self.user, public.as_deref(), &private, None) {
                Ok(()) => return Ok(Credential::File { private, public }),
                Err(e) => tried.push(format!("{} ({})", private.display(), e.message())),
            }
        }
        if !any {
            tried.push(format!(
                "{}/id_ed25519, id_ecdsa, id_rsa (none exists)",
                dir.display()
            ));
        }
        Err(self.auth_error(tried))
    }

    /// The blob of the first agent key the server accepts; notes what failed in `tried`.
    fn try_agent(&self, session: &Session, tried: &mut Vec<String>) -> Option<Vec<u8>> {
        if std::env::var_os("SSH_AUTH_SOCK").is_none() {
            tried.push("ssh-agent (SSH_AUTH_SOCK is not set)".into());
            return None;
        }
        let mut agent = match session.agent().and_then(|mut a| a.connect().map(|()| a)) {
            Ok(a) => a,
            Err(e) => {
                tried.push(format!("ssh-agent ({})", e.message()));
                return None;
            }
        };
        let identities = match agent.list_identities().and_then(|()| agent.identities()) {
            Ok(ids) => ids,
            Err(e) => {
                tried.push(format!("ssh-agent ({})", e.message()));
                return None;
            }
        };
        if identities.is_empty() {
            tried.push("ssh-agent (no keys)".into());
        }
        for identity in identities {
            match agent.userauth(&self.user, &identity) {
                Ok(()) => {
                    let _ = agent.disconnect();
                    return Some(identity.blob().to_vec());
                }
                Err(e) => tried.push(format!(
                    "ssh-agent key {:?} ({})",
                    identity.comment(),
                    e.message()
                )),
            }
        }
        let _ = agent.disconnect();
        None
    }

    fn auth_error(&self, tried: Vec<String>) -> TunnelError {
        TunnelError::Auth {
            user: self.user.clone(),
            host: self.host_port(),
            tried: tried.join("; "),
        }
    }

    /// `host[:port]`, without the user.
    fn host_port(&self) -> String {
        RemoteTarget {
            user: None,
            ..self.target.clone()
        }
        .to_string()
    }
}

/// `KEY.pub` next to the private key, when there is one (libssh2 otherwise derives it).
fn public_key_of(private: &Path) -> Option<PathBuf> {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    let public = PathBuf::from(name);
    public.exists().then_some(public)
}

/// The server's host key as OpenSSH shows it: type and `SHA256:` fingerprint.
fn describe_host_key(session: &Session) -> (String, String) {
    let parsed = session
        .host_key()
        .and_then(|(blob, _)| ssh_key::PublicKey::from_bytes(blob).ok());
    match parsed {
        Some(key) => (
            key.algorithm().as_str().to_string(),
            key.fingerprint(ssh_key::HashAlg::Sha256).to_string(),
        ),
        None => (
            "unknown".into(),
            session
                .host_key_hash(ssh2::HashType::Sha256)
                .map(|h| format!("SHA256 (hex) {}", hex::encode(h)))
                .unwrap_or_default(),
        ),
    }
}

/// Ends a session politely (the server's per-connection process exits at once), in bounded
/// time. Blocking again first: in non-blocking mode libssh2 may give up freeing the session.
pub(super) fn close_session(session: Session) {
    session.set_blocking(true);
    session.set_timeout(2_000);
    let _ = session.disconnect(None, "tunnel closed", None);
}

/// `~/.ssh` of this process's user: `$HOME`, else the passwd entry.
fn ssh_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| passwd_entry().map(|(_, home)| home))
        .unwrap_or_else(|| PathBuf::from("/"))
        .join(".ssh")
}

/// This process's user name and home directory from the passwd database (`ssh` logs in as
/// this user when the URI names none).
fn passwd_entry() -> Option<(String, PathBuf)> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid out-parameter; getpwuid_r writes only into `pwd`
    // and `buf` (of the length given) and sets `result` to null or to `&pwd`.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        let name = CStr::from_ptr(pwd.pw_name).to_str().ok()?.to_string();
        let home = std::ffi::OsStr::from_bytes(CStr::from_ptr(pwd.pw_dir).to_bytes());
        Some((name, PathBuf::from(home)))
    }
}
