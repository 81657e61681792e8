//! The live ISO named by stream metadata or the scenario: a file URL or an http(s) download,
//! verified against its sha256 and kept in a cache by digest.

use std::fs::{self, File};
use std::io::{BufReader, ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Who named the ISO and its digest: it decides the words of an error about them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The installer's `coreos print-stream-json`.
    Stream,
    /// The scenario's `[openshift] iso` and `iso_sha256`.
    Scenario,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Stream => "the installer's stream metadata",
            Origin::Scenario => "the scenario's [openshift] iso_sha256",
        })
    }
}

impl Origin {
    fn missing_remedy(self) -> &'static str {
        match self {
            Origin::Stream => {
                "the installer's stream metadata names it there: put the ISO in place, or use an \
                 installer whose metadata points at it"
            }
            Origin::Scenario => "the scenario's [openshift] iso names it: fix the path or the URL",
        }
    }

    fn digest_remedy(self) -> &'static str {
        match self {
            Origin::Stream => {
                "replace it with the one the installer names, or use the installer that matches it"
            }
            Origin::Scenario => "give the ISO that iso_sha256 names, or the digest of this one",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IsoError {
    #[error("the ISO at {location} is missing: {source}; {}", origin.missing_remedy())]
    Missing {
        location: String,
        origin: Origin,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin} gives {digest:?} as the ISO's sha256, which is not 64 hex digits")]
    BadSha256 { digest: String, origin: Origin },
    #[error(
        "the ISO at {location} has sha256 {actual}, but {origin} says {expected}: a damaged or \
         different build; {}", origin.digest_remedy()
    )]
    Digest {
        location: String,
        origin: Origin,
        expected: String,
        actual: String,
    },
    /// `status` is the HTTP status when the server answered with an error.
    #[error("downloading {location}: {message}")]
    Download {
        location: String,
        status: Option<u16>,
        message: String,
    },
    /// The assets phase's deadline came first ([`fetch_iso_within`]).
    #[error("downloading {location} ({done} bytes{of}) was still running at the assets phase's deadline")]
    Late {
        location: String,
        done: u64,
        /// " of N" when the size is known.
        of: String,
    },
    #[error("unsupported ISO location {0:?} (file://, http:// or https:// URLs)")]
    Scheme(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> IsoError {
    move |source| IsoError::Io { what, source }
}

use crate::util::digest::sha256_of;

/// Percent-decoding of a file URL's path.
pub(super) fn file_url_path(url: &str) -> Option<PathBuf> {
    let bytes = url.strip_prefix("file://")?.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

/// Returns a local, verified copy of the ISO at `location`. File URLs are used in place (their
/// verification is remembered by size and modification time); downloads land in
/// `cache/<sha256>.iso`.
pub fn fetch_iso(location: &str, sha256: &str, cache: &Path) -> Result<PathBuf, IsoError> {
    fetch_with(&agent_config().build().new_agent(), location, sha256, cache)
}

/// [`fetch_iso`] that gives up on a download still running `within` from now (what is left of
/// the assets phase's time).
pub fn fetch_iso_within(
    location: &str,
    sha256: &str,
    origin: Origin,
    cache: &Path,
    within: Duration,
) -> Result<PathBuf, IsoError> {
    let agent = agent_config()
        .timeout_global(Some(within.max(Duration::from_millis(1))))
        .build()
        .new_agent();
    fetch_with(&agent, location, sha256, cache).map_err(|e| e.named_by(origin))
}

impl IsoError {
    /// The error as `origin` named the ISO (the functions below speak of the stream metadata).
    fn named_by(mut self, by: Origin) -> IsoError {
        if let IsoError::Missing { origin, .. }
        | IsoError::BadSha256 { origin, .. }
        | IsoError::Digest { origin, .. } = &mut self
        {
            *origin = by;
        }
        self
    }
}

/// The HTTP client: ureq's rustls with the webpki roots, and the proxy from the environment.
/// A mirror that never answers or stops sending fails the run instead of hanging it; there is
/// no limit on the whole transfer, since an ISO's size over the link's speed is unknown.
fn agent_config() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
}

fn fetch_with(
    agent: &ureq::Agent,
    location: &str,
    sha256: &str,
    cache: &Path,
) -> Result<PathBuf, IsoError> {
    // The digest names files in the cache, so it must be nothing but a digest.
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(IsoError::BadSha256 {
            digest: sha256.into(),
            origin: Origin::Stream,
        });
    }
    let sha256 = &sha256.to_ascii_lowercase();
    let path = file_url_path(location);
    if path.is_none() && !(location.starts_with("http://") || location.starts_with("https://")) {
        return Err(IsoError::Scheme(crate::util::url::redacted(location)));
    }
    fs::create_dir_all(cache).map_err(io(format!("creating {}", cache.display())))?;
    match path {
        Some(path) => verify_file(location, path, sha256, cache),
        None => download_cached(agent, location, sha256, cache),
    }
}

/// Verifies a local ISO in place. Hashing a GiB on every run is slow, so a memo records the
/// path, size and modification time that were last found to match.
/// What a verification memo holds: the file's path, size and time when it was hashed.
fn memo_stamp(path: &Path, meta: &fs::Metadata) -> String {
    format!("{}\n{}", path.display(), crate::util::digest::stamp(meta))
}

/// The SHA-256 of a local ISO given without a digest, remembered in `cache` as a
/// verification, so that the fetch that follows does not read the GiB again.
pub fn digest_of_file(path: &Path, cache: &Path) -> Result<String, IsoError> {
    let what = || format!("hashing {}", path.display());
    let meta = fs::metadata(path).map_err(io(what()))?;
    let f = File::open(path).map_err(io(what()))?;
    let sha256 = sha256_of(BufReader::new(f)).map_err(io(what()))?;
    fs::create_dir_all(cache).map_err(io(format!("creating {}", cache.display())))?;
    // Only an optimisation, as in verify_file.
    let _ = fs::write(
        cache.join(format!("{sha256}.verified")),
        memo_stamp(path, &meta),
    );
    Ok(sha256)
}

fn verify_file(
    location: &str,
    path: PathBuf,
    sha256: &str,
    cache: &Path,
) -> Result<PathBuf, IsoError> {
    let missing = |source| IsoError::Missing {
        location: crate::util::url::redacted(location),
        origin: Origin::Stream,
        source,
    };
    let meta = fs::metadata(&path).map_err(missing)?;
    let stamp = memo_stamp(&path, &meta);
    let memo = cache.join(format!("{sha256}.verified"));
    if fs::read_to_string(&memo).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(path);
    }
    let f = File::open(&path).map_err(missing)?;
    let actual = sha256_of(BufReader::new(f)).map_err(io(format!("reading {}", path.display())))?;
    if actual != sha256 {
        return Err(IsoError::Digest {
            location: crate::util::url::redacted(location),
            origin: Origin::Stream,
            expected: sha256.into(),
            actual,
        });
    }
    // Only an optimisation: without the memo the next run hashes again.
    let _ = fs::write(&memo, stamp);
    Ok(path)
}

/// Downloads into `cache/<sha256>.iso` unless it is there. The file is only ever renamed into
/// place after its digest matched, but a cache can be damaged afterwards (a full disk, a
/// hand-made copy): a cached ISO is verified like a local one (hashed again only when its
/// size or time changed), and one that does not match is removed and downloaded again.
fn download_cached(
    agent: &ureq::Agent,
    location: &str,
    sha256: &str,
    cache: &Path,
) -> Result<PathBuf, IsoError> {
    let dest = cache.join(format!("{sha256}.iso"));
    if dest.is_file() {
        match verify_file(location, dest.clone(), sha256, cache) {
            Ok(p) => return Ok(p),
            Err(IsoError::Digest { actual, .. }) => {
                tracing::warn!(
                    "the cached ISO {} has sha256 {actual}, not {sha256}: removed, downloading it again",
                    dest.display()
                );
                fs::remove_file(&dest).map_err(io(format!("removing {}", dest.display())))?;
            }
            Err(e) => return Err(e),
        }
    }
    // One download per digest at a time, across threads and processes: a waiter finds the file
    // its holder made instead of downloading a GiB again, and a partial download seen under
    // the lock can only be a dead process's. The empty lock file stays, since removing it would
    // let a newcomer lock a fresh inode while a waiter holds the old one.
    let lock_path = cache.join(format!(".{sha256}.lock"));
    let lock = File::create(&lock_path).map_err(io(format!("creating {}", lock_path.display())))?;
    lock.lock()
        .map_err(io(format!("locking {}", lock_path.display())))?;
    if dest.is_file() {
        return Ok(dest);
    }
    let prefix = format!(".{sha256}.iso.");
    remove_stale_partials(cache, &prefix);
    // Dropped (and so removed) on every error below; the ISO is public, hence 0644.
    let mut partial = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".partial")
        .permissions(fs::Permissions::from_mode(0o644))
        .tempfile_in(cache)
        .map_err(io(format!("creating a download in {}", cache.display())))?;
    let actual = download(agent, location, &mut partial)?;
    if actual != sha256 {
        return Err(IsoError::Digest {
            location: crate::util::url::redacted(location),
            origin: Origin::Stream,
            expected: sha256.into(),
            actual,
        });
    }
    partial
        .persist(&dest)
        .map_err(|e| io(format!("moving the download to {}", dest.display()))(e.error))?;
    // Makes the rename durable; a failure only costs a download after a crash.
    let _ = File::open(cache).and_then(|d| d.sync_all());
    Ok(dest)
}

/// Partial downloads of this digest left by a process that died mid-download. Called under the
/// lock, so none of them is being written.
fn remove_stale_partials(cache: &Path, prefix: &str) {
    for entry in fs::read_dir(cache).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(prefix) && name.ends_with(".partial") {
            tracing::info!(
                "removing a stale partial download {}",
                entry.path().display()
            );
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Streams `location` into `partial`, hashing as it writes, logging each tenth when the size
/// is known, and syncing at the end; returns the sha256 of what was written.
fn download(
    agent: &ureq::Agent,
    location: &str,
    partial: &mut tempfile::NamedTempFile,
) -> Result<String, IsoError> {
    let err = |status, message| IsoError::Download {
        location: crate::util::url::redacted(location),
        status,
        message,
    };
    let late = |done, of: String| IsoError::Late {
        location: crate::util::url::redacted(location),
        done,
        of,
    };
    let mut resp = agent.get(location).call().map_err(|e| match e {
        ureq::Error::StatusCode(code) => err(Some(code), format!("the server answered {code}")),
        ureq::Error::Timeout(ureq::Timeout::Global) => late(0, String::new()),
        e => err(None, e.to_string()),
    })?;
    let total = resp.body().content_length().filter(|&n| n > 0);
    match total {
        Some(n) => tracing::info!(
            "downloading {} ({} MiB)",
            crate::util::url::redacted(location),
            n >> 20
        ),
        None => tracing::info!(
            "downloading {} (size unknown)",
            crate::util::url::redacted(location)
        ),
    }
    let what = format!("writing {}", partial.path().display());
    let out = partial.as_file_mut();
    let mut reader = resp.body_mut().as_reader();
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let (mut done, mut tenths) = (0u64, 0u64);
    loop {
        // A body cut short of its Content-Length is a read error here, from ureq.
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
                if is_global_timeout(&e) {
                    return Err(late(done, of));
                }
                return Err(err(None, format!("{e} after {done}{of} bytes")));
            }
        };
        h.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io(what.clone()))?;
        done += n as u64;
        if let Some(total) = total {
            let now = done.saturating_mul(10) / total;
            if now > tenths {
                tenths = now;
                tracing::info!(
                    "downloading {}: {}%",
                    crate::util::url::redacted(location),
                    now * 10
                );
            }
        }
    }
    out.sync_all().map_err(io(what))?;
    Ok(hex::encode(h.finalize()))
}

/// Whether a body read failed because the agent's whole-transfer limit passed.
fn is_global_timeout(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|u| matches!(u, ureq::Error::Timeout(ureq::Timeout::Global)))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier, Mutex};
    use std::thread;

    /// Three MiB: several reads, so progress has steps to log.
    fn iso_bytes() -> Vec<u8> {
        (0..3u32 << 20).map(|i| (i % 251) as u8).collect()
    }

    fn iso_sha256() -> String {
        sha256_of(&iso_bytes()[..]).unwrap()
    }

    /// A tiny HTTP/1.1 server on 127.0.0.1, one thread per connection, that counts requests
    /// and answers by path: `/live.iso` the ISO, `/truncated.iso` a Content-Length larger
    /// than the body it sends, `/stalled.iso` half the body and then silence, `/error.iso`
    /// 500, and 404 for anything else. With `tls`, it speaks https.
    struct Server {
        base: String,
        requests: Arc<AtomicUsize>,
    }

    impl Server {
        fn start(tls: Option<Arc<rustls::ServerConfig>>) -> Server {
            // Bound before the thread starts, so connections queue without waiting for it.
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let scheme = if tls.is_some() { "https" } else { "http" };
            let base = format!("{scheme}://{}", listener.local_addr().unwrap());
            let requests = Arc::new(AtomicUsize::new(0));
            let count = requests.clone();
            thread::spawn(move || {
                for tcp in listener.incoming().flatten() {
                    let (count, tls) = (count.clone(), tls.clone());
                    thread::spawn(move || match tls {
                        None => answer(tcp, &count),
                        Some(config) => {
                            let conn = rustls::ServerConnection::new(config).unwrap();
                            answer(rustls::StreamOwned::new(conn, tcp), &count)
                        }
                    });
                }
            });
            Server { base, requests }
        }

        fn url(&self, path: &str) -> String {
            format!("{}{path}", self.base)
        }

        fn requests(&self) -> usize {
            self.requests.load(Ordering::SeqCst)
        }
    }

    fn answer(mut s: impl Read + Write, count: &AtomicUsize) {
        let mut head = Vec::new();
        let mut byte = [0u8];
        while !head.ends_with(b"\r\n\r\n") {
            // Also where a refused TLS handshake ends up.
            if !matches!(s.read(&mut byte), Ok(1)) {
                return;
            }
            head.push(byte[0]);
        }
        count.fetch_add(1, Ordering::SeqCst);
        let head = String::from_utf8_lossy(&head);
        let path = head.split(' ').nth(1).unwrap_or_default();
        let body = iso_bytes();
        let ok = |len: usize| format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
        let _ = match path {
            "/live.iso" => write!(s, "{}", ok(body.len())).and_then(|()| s.write_all(&body)),
            "/truncated.iso" => {
                write!(s, "{}", ok(body.len() + 1000)).and_then(|()| s.write_all(&body))
            }
            "/stalled.iso" => write!(s, "{}", ok(body.len()))
                .and_then(|()| s.write_all(&body[..body.len() / 2]))
                .and_then(|()| s.flush())
                // Silent until the client gives up and closes.
                .and_then(|()| s.read(&mut byte).map(drop)),
            "/error.iso" => write!(
                s,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"
            ),
            _ => write!(s, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
        };
        let _ = s.flush();
    }

    /// The production client, but direct: a proxy in the environment cannot reach loopback.
    fn agent() -> ureq::Agent {
        agent_config().proxy(None).build().new_agent()
    }

    /// Everything in the cache but the (empty) lock files.
    /// The cache's ISOs and partial downloads: not its locks, nor the memos of verifications
    /// (a fetch that finds the ISO already there verifies it, and so writes one, depending on
    /// when it came).
    fn cached(cache: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".lock") && !n.ends_with(".verified"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_damaged_cached_iso_is_found_and_downloaded_again() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let (url, digest) = (server.url("/live.iso"), iso_sha256());
        let path = fetch_with(&agent(), &url, &digest, d.path()).unwrap();
        // Truncated in the cache after the download (a full disk, a hand-made copy).
        let bytes = iso_bytes();
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let again = fetch_with(&agent(), &url, &digest, d.path()).unwrap();
        assert_eq!(again, path);
        assert!(fs::read(&path).unwrap() == bytes);
        assert_eq!(server.requests(), 2);
        // Sound again: served from the cache.
        fetch_with(&agent(), &url, &digest, d.path()).unwrap();
        assert_eq!(server.requests(), 2);
    }

    #[test]
    fn http_downloads_are_verified_and_then_served_from_the_cache() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let url = server.url("/live.iso");
        let digest = iso_sha256();

        let path = fetch_with(&agent(), &url, &digest, d.path()).unwrap();
        assert_eq!(path, d.path().join(format!("{digest}.iso")));
        assert!(fs::read(&path).unwrap() == iso_bytes());
        assert_eq!(cached(d.path()), [format!("{digest}.iso")]);
        assert_eq!(server.requests(), 1);

        // The digest is the cache key, however the metadata spells it and wherever it points.
        let again = fetch_with(&agent(), &url, &digest.to_uppercase(), d.path()).unwrap();
        assert_eq!(again, path);
        let elsewhere = server.url("/moved.iso");
        assert_eq!(
            fetch_with(&agent(), &elsewhere, &digest, d.path()).unwrap(),
            path
        );
        assert_eq!(server.requests(), 1);
    }

    #[test]
    fn a_digest_mismatch_names_both_digests_and_leaves_nothing() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let url = server.url("/live.iso");
        let wrong = "ab".repeat(32);
        match fetch_with(&agent(), &url, &wrong, d.path()).unwrap_err() {
            IsoError::Digest {
                location,
                expected,
                actual,
                ..
            } => {
                assert_eq!(location, url);
                assert_eq!(expected, wrong);
                assert_eq!(actual, iso_sha256());
            }
            e => panic!("{e}"),
        }
        assert_eq!(cached(d.path()), Vec::<String>::new());
    }

    #[test]
    fn http_error_statuses_are_download_errors_naming_status_and_url() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        for (path, code) in [("/missing.iso", 404), ("/error.iso", 500)] {
            let url = server.url(path);
            let e = fetch_with(&agent(), &url, &iso_sha256(), d.path()).unwrap_err();
            let text = e.to_string();
            match e {
                IsoError::Download {
                    location, status, ..
                } => {
                    assert_eq!(location, url);
                    assert_eq!(status, Some(code));
                    assert!(
                        text.contains(&url) && text.contains(&code.to_string()),
                        "{text}"
                    );
                }
                e => panic!("{e}"),
            }
        }
        assert_eq!(cached(d.path()), Vec::<String>::new());
    }

    #[test]
    fn a_body_shorter_than_its_content_length_is_an_error_and_leaves_nothing() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let url = server.url("/truncated.iso");
        // The right digest of what is sent: only the length tells the body is cut short.
        let e = fetch_with(&agent(), &url, &iso_sha256(), d.path()).unwrap_err();
        assert!(
            matches!(&e, IsoError::Download { location, status: None, .. } if *location == url),
            "{e}"
        );
        assert_eq!(cached(d.path()), Vec::<String>::new());
    }

    #[test]
    fn a_stalled_download_times_out_and_leaves_nothing() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let impatient = agent_config()
            .proxy(None)
            .timeout_per_read(Some(Duration::from_millis(300)))
            .build()
            .new_agent();
        let url = server.url("/stalled.iso");
        let e = fetch_with(&impatient, &url, &iso_sha256(), d.path()).unwrap_err();
        assert!(matches!(e, IsoError::Download { status: None, .. }), "{e}");
        assert_eq!(cached(d.path()), Vec::<String>::new());
    }

    #[test]
    fn a_refused_connection_is_a_download_error() {
        // A port that was just free; nothing listens on it once the listener is dropped.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
        let d = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{port}/live.iso");
        let e = fetch_with(&agent(), &url, &iso_sha256(), d.path()).unwrap_err();
        assert!(matches!(e, IsoError::Download { status: None, .. }), "{e}");
        assert_eq!(cached(d.path()), Vec::<String>::new());
    }

    #[test]
    fn concurrent_fetches_of_one_digest_download_once() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let url = server.url("/live.iso");
        let start = Barrier::new(2);
        let paths: Vec<PathBuf> = thread::scope(|s| {
            let fetch = || {
                start.wait();
                fetch_with(&agent(), &url, &iso_sha256(), d.path()).unwrap()
            };
            let threads = [s.spawn(fetch), s.spawn(fetch)];
            threads.map(|t| t.join().unwrap()).into()
        });
        assert_eq!(paths[0], paths[1]);
        assert!(fs::read(&paths[0]).unwrap() == iso_bytes());
        assert_eq!(cached(d.path()), [format!("{}.iso", iso_sha256())]);
        assert_eq!(server.requests(), 1);
    }

    #[test]
    fn partial_downloads_of_a_dead_process_are_removed() {
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        let digest = iso_sha256();
        let stale = d.path().join(format!(".{digest}.iso.x7Kq2z.partial"));
        let other = d
            .path()
            .join(format!(".{}.iso.x7Kq2z.partial", "0".repeat(64)));
        fs::write(&stale, b"half an ISO").unwrap();
        fs::write(&other, b"another digest's download").unwrap();
        fetch_with(&agent(), &server.url("/live.iso"), &digest, d.path()).unwrap();
        assert!(!stale.exists());
        assert!(other.exists());
    }

    #[test]
    fn download_progress_is_logged_per_tenth() {
        #[derive(Clone, Default)]
        struct Capture(Arc<Mutex<Vec<u8>>>);
        impl Write for Capture {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let log = Capture::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let server = Server::start(None);
        let d = tempfile::tempdir().unwrap();
        tracing::subscriber::with_default(subscriber, || {
            fetch_with(&agent(), &server.url("/live.iso"), &iso_sha256(), d.path()).unwrap()
        });
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        let percents: Vec<u64> = text
            .lines()
            .filter_map(|l| l.strip_suffix('%')?.rsplit(' ').next()?.parse().ok())
            .collect();
        assert!(text.contains("(3 MiB)"), "{text}");
        assert_eq!(percents.last(), Some(&100), "{text}");
        assert!(percents.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(percents.iter().all(|p| p % 10 == 0), "{text}");
    }

    /// A server certificate for 127.0.0.1, signed by nobody anyone trusts.
    fn self_signed() -> (
        rustls::pki_types::CertificateDer<'static>,
        Arc<rustls::ServerConfig>,
    ) {
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let cert = ck.cert.der().clone();
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key.into())
            .unwrap();
        (cert, Arc::new(config))
    }

    #[test]
    fn https_verifies_the_server_against_the_webpki_roots() {
        let (_, config) = self_signed();
        let server = Server::start(Some(config));
        let d = tempfile::tempdir().unwrap();
        let url = server.url("/live.iso");
        let e = fetch_with(&agent(), &url, &iso_sha256(), d.path()).unwrap_err();
        assert!(matches!(e, IsoError::Download { status: None, .. }), "{e}");
        assert!(e.to_string().contains("UnknownIssuer"), "{e}");
        assert_eq!(server.requests(), 0);
        assert_eq!(cached(d.path()), Vec::<String>::new());
    }

    #[test]
    fn https_downloads_from_a_trusted_server() {
        let (cert, config) = self_signed();
        let server = Server::start(Some(config));
        let d = tempfile::tempdir().unwrap();
        let roots = ureq::tls::RootCerts::new_with_certs(&[ureq::tls::Certificate::from_der(
            cert.as_ref(),
        )
        .to_owned()]);
        let trusting = agent_config()
            .proxy(None)
            .tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build())
            .build()
            .new_agent();
        let path = fetch_with(&trusting, &server.url("/live.iso"), &iso_sha256(), d.path());
        assert!(fs::read(path.unwrap()).unwrap() == iso_bytes());
        assert_eq!(server.requests(), 1);
    }

    #[test]
    fn digests_that_are_not_sha256_hex_are_refused_before_anything_is_touched() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("cache");
        for bad in ["../../etc/passwd", "", &"g".repeat(64), &"a".repeat(63)] {
            let e = fetch_iso("http://127.0.0.1:9/live.iso", bad, &cache).unwrap_err();
            assert!(matches!(e, IsoError::BadSha256 { .. }), "{e}");
        }
        assert!(!cache.exists());
    }

    #[test]
    fn file_urls_are_verified_and_the_verification_remembered() {
        let d = tempfile::tempdir().unwrap();
        let iso = d.path().join("my iso.iso");
        fs::write(&iso, b"not really an ISO").unwrap();
        let digest = sha256_of(&b"not really an ISO"[..]).unwrap();
        let url = format!("file://{}", iso.display()).replace(' ', "%20");
        let cache = d.path().join("cache");
        assert_eq!(fetch_iso(&url, &digest, &cache).unwrap(), iso);
        assert!(cache.join(format!("{digest}.verified")).is_file());
        assert_eq!(fetch_iso(&url, &digest, &cache).unwrap(), iso);

        let e = fetch_iso(&url, &"0".repeat(64), &cache).unwrap_err();
        assert!(matches!(e, IsoError::Digest { .. }), "{e}");
        let e = fetch_iso("file:///nonexistent.iso", &digest, &cache).unwrap_err();
        assert!(matches!(e, IsoError::Missing { .. }), "{e}");
        assert!(matches!(
            fetch_iso("ftp://x/y.iso", &digest, &cache),
            Err(IsoError::Scheme(_))
        ));
    }

    #[test]
    fn a_changed_file_is_verified_again() {
        let d = tempfile::tempdir().unwrap();
        let iso = d.path().join("live.iso");
        fs::write(&iso, b"the good ISO").unwrap();
        let digest = sha256_of(&b"the good ISO"[..]).unwrap();
        let url = format!("file://{}", iso.display());
        fetch_iso(&url, &digest, d.path()).unwrap();

        // Same size, so only the modification time tells; set it, not to depend on the clock.
        fs::write(&iso, b"the bad  ISO").unwrap();
        let f = File::options().write(true).open(&iso).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1))
            .unwrap();
        let e = fetch_iso(&url, &digest, d.path()).unwrap_err();
        assert!(matches!(e, IsoError::Digest { .. }), "{e}");
    }

    #[test]
    fn file_url_paths_are_percent_decoded() {
        let p = |u: &str| file_url_path(u).map(|p| p.display().to_string());
        assert_eq!(
            p("file:///a%20b/c%2Fd.iso").as_deref(),
            Some("/a b/c/d.iso")
        );
        assert_eq!(p("file:///100%25.iso").as_deref(), Some("/100%.iso"));
        // Not an escape: left as it is.
        assert_eq!(p("file:///a%zz%+5%").as_deref(), Some("/a%zz%+5%"));
        assert_eq!(p("file:///caf%C3%A9").as_deref(), Some("/café"));
        assert_eq!(p("file:///bad%FF"), None);
        assert_eq!(p("https://x/y.iso"), None);
    }

    #[test]
    fn an_iso_the_scenario_names_is_blamed_on_the_scenario_not_the_installer() {
        let d = tempfile::tempdir().unwrap();
        let iso = d.path().join("own.iso");
        std::fs::write(&iso, b"not the ISO the digest names").unwrap();
        let url = format!("file://{}", iso.display());
        let wrong = "cd".repeat(32);
        let within = Duration::from_secs(5);
        let e = fetch_iso_within(&url, &wrong, Origin::Scenario, d.path(), within).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("the scenario's [openshift] iso_sha256 says"),
            "{text}"
        );
        assert!(!text.contains("installer"), "{text}");
        let e = fetch_iso_within(&url, &wrong, Origin::Stream, d.path(), within).unwrap_err();
        assert!(
            e.to_string()
                .contains("the installer's stream metadata says"),
            "{e}"
        );
    }
}
