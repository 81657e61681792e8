//! SSH into the guest as `core` with a key the harness generated (ssh2, blocking: call it from
//! a thread of its own or `spawn_blocking`).

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ssh_key::{Algorithm, LineEnding, PrivateKey};

use crate::util::wait::{wait_until_succeeds, WaitTimeout};

/// An ed25519 key pair in OpenSSH formats.
#[derive(Clone, PartialEq, Eq)]
pub struct SshKeyPair {
    pub private_openssh: String,
    pub public_openssh: String,
}

impl std::fmt::Debug for SshKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the private half.
        f.debug_struct("SshKeyPair")
            .field("public_openssh", &self.public_openssh)
            .finish_non_exhaustive()
    }
}

impl SshKeyPair {
    pub fn generate(comment: &str) -> Result<SshKeyPair, SshError> {
        SshKeyPair::generate_with(comment, Algorithm::Ed25519)
    }

    /// A key a FIPS cluster accepts: the installer refuses an ed25519 `sshKey` when `fips` is
    /// on (RSA or ECDSA only), so the run's key is ECDSA P-256 then.
    pub fn generate_for_fips(comment: &str) -> Result<SshKeyPair, SshError> {
        SshKeyPair::generate_with(
            comment,
            Algorithm::Ecdsa {
                curve: ssh_key::EcdsaCurve::NistP256,
            },
        )
    }

    /// A key someone gave (`observe --key`): an unencrypted private key in OpenSSH's format,
    /// its public half derived from it.
    pub fn from_private_openssh(text: &str) -> Result<SshKeyPair, SshError> {
        let key = PrivateKey::from_openssh(text.trim()).map_err(|e| {
            SshError::GivenKey(format!(
                "not a private key in OpenSSH's format ({e}); `ssh-keygen -p -f KEY` rewrites one in it"
            ))
        })?;
        if key.is_encrypted() {
            return Err(SshError::GivenKey(
                "the key is encrypted with a passphrase, which the harness cannot ask for: give an unencrypted copy (owner-only)".into(),
            ));
        }
        let public_openssh = key
            .public_key()
            .to_openssh()
            .map_err(|e| SshError::Key(e.to_string()))?;
        Ok(SshKeyPair {
            private_openssh: format!("{}\n", text.trim()),
            public_openssh,
        })
    }

    fn generate_with(comment: &str, algorithm: Algorithm) -> Result<SshKeyPair, SshError> {
        let mut key = PrivateKey::random(&mut rand_core::OsRng, algorithm)
            .map_err(|e| SshError::Key(e.to_string()))?;
        key.set_comment(comment);
        let private_openssh = key
            .to_openssh(LineEnding::LF)
            .map_err(|e| SshError::Key(e.to_string()))?
            .to_string();
        let public_openssh = key
            .public_key()
            .to_openssh()
            .map_err(|e| SshError::Key(e.to_string()))?;
        Ok(SshKeyPair {
            private_openssh,
            public_openssh,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("generating an SSH key: {0}")]
    Key(String),
    /// A key given to the harness that it cannot use.
    #[error("{0}")]
    GivenKey(String),
    #[error("connecting to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("SSH {stage} with {addr}: {source}")]
    Protocol {
        addr: SocketAddr,
        stage: &'static str,
        #[source]
        source: ssh2::Error,
    },
    #[error("reading the output of `{command}`: {source}")]
    Read {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` exited with {status}; stderr: {stderr}")]
    CommandFailed {
        command: String,
        status: i32,
        stdout: String,
        stderr: String,
    },
}

#[derive(Debug, Clone)]
pub struct CommandOutput {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A command's output with stdout as bytes, at most the cap asked for.
#[derive(Debug, Clone)]
pub struct BytesOutput {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// stdout reached the cap and the rest was not read.
    pub truncated: bool,
}

/// Where and as whom to log in.
#[derive(Debug, Clone)]
pub struct SshTarget {
    pub addr: SocketAddr,
    pub user: String,
    pub key: SshKeyPair,
}

pub struct SshSession {
    session: ssh2::Session,
    addr: SocketAddr,
    /// SHA-256 of the server's host key, hex: changes when the guest is a different system.
    pub host_key_sha256: String,
}

/// How long one short command (a status poll, a boot id's read, a probe) may take on a guest
/// that answered SSH: a loaded guest under TCG can take tens of seconds, a lost one never ends.
pub const COMMAND_IO_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection attempt waits for the server's first bytes. Through QEMU's user
/// networking the TCP connect to the forwarded port succeeds at once whatever the guest's
/// state; while the guest has no address yet, nothing ever answers, and a handshake that waits
/// its full I/O timeout would delay noticing the guest by that much. sshd sends its version
/// line as soon as it accepts, so a short wait for it tells a live server from a dead end.
const BANNER_TIMEOUT: Duration = Duration::from_secs(3);

/// Waits up to `timeout` for the server to send something, without consuming it.
fn wait_for_banner(tcp: &TcpStream, timeout: Duration) -> std::io::Result<()> {
    tcp.set_read_timeout(Some(timeout))?;
    let mut first = [0u8; 4];
    let n = tcp.peek(&mut first)?;
    tcp.set_read_timeout(None)?;
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "closed before the SSH version line",
        ));
    }
    Ok(())
}

impl SshTarget {
    /// One connection attempt: TCP, handshake, public-key authentication.
    pub fn connect(&self, io_timeout: Duration) -> Result<SshSession, SshError> {
        let addr = self.addr;
        let tcp = TcpStream::connect_timeout(&addr, io_timeout)
            .map_err(|source| SshError::Connect { addr, source })?;
        wait_for_banner(&tcp, io_timeout.min(BANNER_TIMEOUT))
            .map_err(|source| SshError::Connect { addr, source })?;
        let mut session = ssh2::Session::new().map_err(|source| SshError::Protocol {
            addr,
            stage: "session",
            source,
        })?;
        session.set_tcp_stream(tcp);
        session.set_timeout(io_timeout.as_millis() as u32);
        session.handshake().map_err(|source| SshError::Protocol {
            addr,
            stage: "handshake",
            source,
        })?;
        let host_key_sha256 = session
            .host_key_hash(ssh2::HashType::Sha256)
            .map(hex::encode)
            .unwrap_or_default();
        session
            .userauth_pubkey_memory(
                &self.user,
                Some(&self.key.public_openssh),
                &self.key.private_openssh,
                None,
            )
            .map_err(|source| SshError::Protocol {
                addr,
                stage: "authentication",
                source,
            })?;
        Ok(SshSession {
            session,
            addr,
            host_key_sha256,
        })
    }

    /// Retries `connect` until it works or `timeout` passes; the error carries the last reason.
    pub fn wait_for_ssh(
        &self,
        timeout: Duration,
    ) -> Result<SshSession, Box<WaitTimeout<SshError>>> {
        wait_until_succeeds(
            format!("SSH login as {} on {}", self.user, self.addr),
            timeout,
            Duration::from_millis(500),
            || self.connect(Duration::from_secs(10)),
        )
        .map_err(Box::new)
    }
}

impl SshSession {
    /// Runs a command through `sh -c` on the guest and collects its output.
    /// How long a read or write on the session may block before it fails.
    pub fn set_io_timeout(&self, timeout: Duration) {
        self.session.set_timeout(timeout.as_millis() as u32);
    }

    /// Runs `f` with the session's I/O timeout set to `timeout`, then puts the old one back:
    /// a probe on a stream's session may wait longer than the stream's reads do.
    pub fn with_io_timeout<T>(&self, timeout: Duration, f: impl FnOnce(&Self) -> T) -> T {
        let before = self.session.timeout();
        self.set_io_timeout(timeout);
        let out = f(self);
        self.session.set_timeout(before);
        out
    }

    pub fn exec(&self, command: &str) -> Result<CommandOutput, SshError> {
        let out = self.exec_bytes(command, u64::MAX)?;
        Ok(CommandOutput {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: out.stderr,
        })
    }

    /// Runs a command and keeps at most `max_stdout` bytes of its stdout, as bytes (a tarball,
    /// a journal with invalid UTF-8). Past the cap the channel is closed: the command sees a
    /// broken pipe.
    pub fn exec_bytes(&self, command: &str, max_stdout: u64) -> Result<BytesOutput, SshError> {
        let proto = |stage, source| SshError::Protocol {
            addr: self.addr,
            stage,
            source,
        };
        let mut ch = self
            .session
            .channel_session()
            .map_err(|e| proto("channel", e))?;
        ch.exec(command).map_err(|e| proto("exec", e))?;
        let read_err = |source| SshError::Read {
            command: command.into(),
            source,
        };
        let mut stdout = Vec::new();
        (&mut ch)
            .take(max_stdout)
            .read_to_end(&mut stdout)
            .map_err(read_err)?;
        let truncated = stdout.len() as u64 >= max_stdout;
        if truncated {
            let _ = ch.close();
        }
        let mut stderr = String::new();
        ch.stderr()
            .take(1 << 20)
            .read_to_string(&mut stderr)
            .map_err(read_err)?;
        ch.wait_close().map_err(|e| proto("close", e))?;
        let status = ch.exit_status().map_err(|e| proto("exit status", e))?;
        Ok(BytesOutput {
            status,
            stdout,
            stderr,
            truncated,
        })
    }

    /// Starts a long-running command and returns its channel to read stdout from. Reads time
    /// out after the session's I/O timeout; see `alive`.
    pub fn stream(&self, command: &str) -> Result<ssh2::Channel, SshError> {
        let mut ch = self
            .session
            .channel_session()
            .map_err(|source| SshError::Protocol {
                addr: self.addr,
                stage: "channel",
                source,
            })?;
        ch.exec(command).map_err(|source| SshError::Protocol {
            addr: self.addr,
            stage: "exec",
            source,
        })?;
        Ok(ch)
    }

    /// Whether the guest still answers on this session, and is still in boot `boot_id`: a
    /// command run on it within the session's timeout. A keepalive proves nothing here: it is
    /// only sent, and under QEMU's user networking the TCP peer is QEMU itself, which takes it
    /// whether the guest is alive, rebooted or gone.
    pub fn answers_in_boot(&self, boot_id: &str) -> bool {
        self.succeed("cat /proc/sys/kernel/random/boot_id")
            .is_ok_and(|b| b.trim() == boot_id)
    }

    /// Runs a command that must succeed; returns its stdout.
    pub fn succeed(&self, command: &str) -> Result<String, SshError> {
        let out = self.exec(command)?;
        if out.status == 0 {
            Ok(out.stdout)
        } else {
            Err(SshError::CommandFailed {
                command: command.into(),
                status: out.status,
                stdout: out.stdout,
                stderr: out.stderr.trim().to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips_keys_are_ecdsa_p256() {
        let k = SshKeyPair::generate_for_fips("sno-harness test").unwrap();
        assert!(
            k.public_openssh.starts_with("ecdsa-sha2-nistp256 "),
            "{}",
            k.public_openssh
        );
    }

    #[test]
    fn generated_keys_are_ed25519_and_debug_hides_the_private_half() {
        let k = SshKeyPair::generate("sno-harness test").unwrap();
        assert!(k.public_openssh.starts_with("ssh-ed25519 "));
        assert!(k.public_openssh.ends_with(" sno-harness test"));
        assert!(k.private_openssh.contains("BEGIN OPENSSH PRIVATE KEY"));
        assert!(!format!("{k:?}").contains("PRIVATE"));
    }

    fn target(addr: SocketAddr) -> SshTarget {
        SshTarget {
            addr,
            user: "core".into(),
            key: SshKeyPair::generate("t").unwrap(),
        }
    }

    #[test]
    fn a_silent_peer_is_given_up_on_after_the_banner_timeout_not_the_io_timeout() {
        // What QEMU's hostfwd looks like while the guest has no address: accepted, then silence.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hold = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            std::thread::sleep(BANNER_TIMEOUT + Duration::from_secs(1));
            drop(conn);
        });
        let start = std::time::Instant::now();
        let err = target(addr).connect(Duration::from_secs(30)).err().unwrap();
        let took = start.elapsed();
        assert!(matches!(err, SshError::Connect { .. }), "{err}");
        // Well under the 30 s I/O timeout, whatever the load on the machine running the test.
        assert!(
            took >= BANNER_TIMEOUT && took < Duration::from_secs(15),
            "{took:?}"
        );
        hold.join().unwrap();
    }

    #[test]
    fn a_peer_that_closes_at_once_is_a_connect_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let close = std::thread::spawn(move || drop(listener.accept().unwrap()));
        let err = target(addr).connect(Duration::from_secs(30)).err().unwrap();
        assert!(matches!(err, SshError::Connect { .. }), "{err}");
        close.join().unwrap();
    }
}
