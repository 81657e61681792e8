//! Fake API servers on 127.0.0.1 that misbehave, and kubeconfigs for them (with real
//! certificates). Each serves a bounded number of connections for a bounded time and stops by
//! itself. Each test binary uses a different subset, hence the allowance.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The name the kubeconfig's `tls-server-name` asks the certificate for.
pub const API_NAME: &str = "api.sno.example.test";
/// How long a fake server keeps a connection, at most.
const SERVER_LIFE: Duration = Duration::from_secs(90);
/// The most an endless body sends before it gives up (the client should stop far earlier).
pub const ENDLESS_MAX: u64 = 256 << 20;

/// A CA, with what it signs.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    /// A certificate for `name` (a serving one, or a client one), and its key.
    pub fn sign(&self, name: &str, client: bool) -> (CertificateDer<'static>, String, KeyPair) {
        let mut params = CertificateParams::new(vec![name.into()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.der().clone(), cert.pem(), key)
    }

    fn roots(&self) -> Arc<rustls::RootCertStore> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.issuer.der().clone()).unwrap();
        Arc::new(roots)
    }

    /// A TLS server for the API's name, signed by this CA; with `clients`, it asks for a client
    /// certificate and takes only those that CA signed.
    pub fn server(&self, clients: Option<&Ca>) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (cert, _, key) = self.sign(API_NAME, false);
        let key = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match clients {
            None => builder.with_no_client_auth(),
            Some(ca) => builder.with_client_cert_verifier(
                rustls::server::WebPkiClientVerifier::builder_with_provider(ca.roots(), provider)
                    .build()
                    .unwrap(),
            ),
        };
        Arc::new(builder.with_single_cert(vec![cert], key).unwrap())
    }
}

/// A kubeconfig in `dir` for `server`, trusting `ca`, with an admin certificate it signed; with
/// `exec`, the user's credentials come from that command instead.
pub fn kubeconfig(dir: &Path, server: &str, ca: &Ca, exec: Option<&Path>) -> PathBuf {
    let (_, cert, key) = ca.sign("system:admin", true);
    std::fs::write(dir.join("ca.crt"), ca.issuer.pem()).unwrap();
    std::fs::write(dir.join("admin.crt"), cert).unwrap();
    std::fs::write(dir.join("admin.key"), key.serialize_pem()).unwrap();
    let d = dir.display();
    let user = match exec {
        None => format!("    client-certificate: {d}/admin.crt\n    client-key: {d}/admin.key\n"),
        Some(cmd) => format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
            cmd.display()
        ),
    };
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority: {d}/ca.crt\n    tls-server-name: {API_NAME}\nusers:\n- name: u\n  user:\n{user}contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// How a fake server treats a connection.
#[derive(Clone, Copy)]
pub enum Behaviour {
    /// Accepts, reads, never writes a byte.
    Silent,
    /// Completes the TLS handshake, then says nothing.
    TlsThenSilent,
    /// Answers 200 and sends its body a byte every 200 ms.
    Trickle,
    /// Answers 200 with a chunked body that does not end (until [`ENDLESS_MAX`]).
    Endless,
    /// Completes (or fails) the handshake and answers `ok`; for certificate cases.
    Ok,
}

pub struct FakeApi {
    pub url: String,
    /// Body bytes written to clients, all connections together.
    sent: Arc<AtomicU64>,
}

impl FakeApi {
    pub fn start(behaviour: Behaviour, tls: Option<Arc<rustls::ServerConfig>>) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let sent = Arc::new(AtomicU64::new(0));
        let counted = sent.clone();
        thread::spawn(move || {
            // A bounded number of connections: a check makes a few.
            for tcp in listener.incoming().take(32).flatten() {
                let (tls, counted) = (tls.clone(), counted.clone());
                thread::spawn(move || serve(tcp, behaviour, tls, &counted));
            }
        });
        FakeApi { url, sent }
    }

    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

fn serve(
    tcp: TcpStream,
    behaviour: Behaviour,
    tls: Option<Arc<rustls::ServerConfig>>,
    sent: &AtomicU64,
) {
    let until = Instant::now() + SERVER_LIFE;
    tcp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let config = match (behaviour, tls) {
        (Behaviour::Silent, _) | (_, None) => return hold(tcp, until),
        (_, Some(config)) => config,
    };
    let conn = rustls::ServerConnection::new(config).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") && Instant::now() < until {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            // A read timeout: the handshake (or the request) is still awaited.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            // Closed, or a refused handshake.
            _ => return,
        }
    }
    let _ = match behaviour {
        Behaviour::TlsThenSilent => {
            while Instant::now() < until && !matches!(s.read(&mut byte), Ok(0)) {}
            Ok(())
        }
        Behaviour::Ok => s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        Behaviour::Trickle => trickle(&mut s, until, sent),
        _ => endless(&mut s, until, sent),
    };
}

/// Holds a connection open, answering nothing, until the client goes.
fn hold(mut tcp: TcpStream, until: Instant) {
    let mut buf = [0u8; 4096];
    while Instant::now() < until {
        if matches!(tcp.read(&mut buf), Ok(0)) {
            return;
        }
    }
}

fn trickle(s: &mut impl Write, until: Instant, sent: &AtomicU64) -> std::io::Result<()> {
    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")?;
    while Instant::now() < until {
        s.write_all(b"o")?;
        s.flush()?;
        sent.fetch_add(1, Ordering::SeqCst);
        thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

fn endless(s: &mut impl Write, until: Instant, sent: &AtomicU64) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )?;
    let chunk = vec![b' '; 64 << 10];
    let mut total = 0;
    while total < ENDLESS_MAX && Instant::now() < until {
        write!(s, "{:x}\r\n", chunk.len())?;
        s.write_all(&chunk)?;
        s.write_all(b"\r\n")?;
        total += chunk.len() as u64;
        sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
    }
    s.write_all(b"0\r\n\r\n")
}
