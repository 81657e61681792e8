//! A small HTTP/1.1 file server on hyper for what a guest fetches while it boots: GET and HEAD
//! of the files it was given, each under a path that starts with a per-run random token (so
//! that no other guest and no local user can name them), 404 for any other path, 405 for any
//! other method. A file is streamed from disk in chunks, so that a request's time is the
//! guest's pace, not a copy into memory; each request for one of its files ends as one
//! [`Served`] report. Requests for other paths are only counted. A header timeout and a limit
//! on connections (`guard`) keep it serving the guest under a flood; a listener can answer one
//! peer address only (the node's, on a NAT network); a secret can be served once.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::io::InspectReader;

mod guard;
pub use guard::Load;
use guard::{Guard, Refusal, Slot, SlotState, MAX_CONNECTIONS};

/// How much of a file one body frame carries.
const CHUNK: usize = 256 * 1024;

/// A fault the server plays on every file it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerFault {
    /// Every path answers 404, as a server without the file would.
    NotFound,
    /// The byte in the middle of each file is inverted: the length is right, the content not.
    Corrupt,
}

/// One request, once its answer was sent (or the guest went away).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub method: String,
    pub path: String,
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// From the request's arrival to its last byte.
    pub took: Duration,
}

/// Who a listener answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peers {
    /// Anyone who reaches it (QEMU's user network: the guest's connections come from the
    /// host's loopback, as anyone's would; the per-run paths keep others out).
    Any,
    /// This address only (the node's on a NAT network, where the guest has its own address).
    Only(IpAddr),
}

/// What the server hands the run: each request for one of its files, and, at most once a
/// second, the refusals of a server under strain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Served(Served),
    Strained(Load),
}

/// A file the server offers under the run's path.
#[derive(Debug, Clone)]
struct Offer {
    file: PathBuf,
    /// Refused once it was sent whole (a secret the guest fetches once).
    once: bool,
    /// A GET of a once-only file is under way: a second one is refused meanwhile.
    in_flight: bool,
}

struct Shared {
    /// The per-run first component of every path it answers (128 random bits): another
    /// guest, or a local user, cannot name its files.
    token: String,
    files: Mutex<BTreeMap<String, Offer>>,
    fault: Option<ServerFault>,
    tx: mpsc::UnboundedSender<Report>,
    guard: Arc<Guard>,
}

pub struct FileServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    reports: Option<mpsc::UnboundedReceiver<Report>>,
    /// One accept loop per address it listens on.
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl FileServer {
    /// Binds `addr` (port 0 for any), answering `peers`, and serves nothing until
    /// [`FileServer::serve`] names files.
    pub async fn start(
        addr: SocketAddr,
        fault: Option<ServerFault>,
        peers: Peers,
    ) -> io::Result<FileServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (tx, reports) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            token: random_token(),
            files: Mutex::default(),
            fault,
            tx,
            guard: Guard::new(MAX_CONNECTIONS),
        });
        let task = tokio::spawn(accept(listener, shared.clone(), peers));
        Ok(FileServer {
            addr,
            shared,
            reports: Some(reports),
            tasks: vec![task],
        })
    }

    /// The first address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Listens on `ip` too, at the same port, answering `peers`, serving the same files with
    /// the same fault and reports: for an address that exists only once the server runs (a NAT
    /// network's host address on its bridge, made after the URL the guest is given).
    pub async fn listen_also(&mut self, ip: IpAddr, peers: Peers) -> io::Result<SocketAddr> {
        let listener = TcpListener::bind((ip, self.addr.port())).await?;
        let addr = listener.local_addr()?;
        self.tasks
            .push(tokio::spawn(accept(listener, self.shared.clone(), peers)));
        Ok(addr)
    }

    /// The URL path of `name` (`rootfs.img`): the run's token, then the name.
    pub fn path_of(&self, name: &str) -> String {
        format!("/{}/{}", self.shared.token, name.trim_start_matches('/'))
    }

    /// `path` with the run's token taken out, as the reports show it.
    pub fn shown(&self, path: &str) -> String {
        path.replace(&format!("/{}", self.shared.token), "")
    }

    /// Serves `file` at [`FileServer::path_of`] `name` from now on.
    pub fn serve(&self, name: &str, file: PathBuf) {
        self.offer(name, file, false);
    }

    /// Serves `file` until it was sent whole once, then refuses it (404): for a secret the
    /// guest fetches once (a network boot's Ignition on a NAT network).
    pub fn serve_once(&self, name: &str, file: PathBuf) {
        self.offer(name, file, true);
    }

    fn offer(&self, name: &str, file: PathBuf, once: bool) {
        let offer = Offer {
            file,
            once,
            in_flight: false,
        };
        lock(&self.shared.files).insert(name.trim_start_matches('/').to_string(), offer);
    }

    /// The finished requests for its files, in order, and its strain, for whoever watches them
    /// (once).
    pub fn take_reports(&mut self) -> Option<mpsc::UnboundedReceiver<Report>> {
        self.reports.take()
    }

    /// What it refused so far.
    pub fn load(&self) -> Load {
        self.shared.guard.load()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut b);
    hex::encode(b)
}

async fn accept(listener: TcpListener, shared: Arc<Shared>, peers: Peers) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            // EMFILE and the like: a moment, then on (the guest retries).
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if matches!(peers, Peers::Only(ip) if ip != peer.ip()) {
            shared.guard.count(Refusal::WrongPeer);
            say_strain(&shared);
            continue;
        }
        let Some(slot) = shared.guard.admit() else {
            say_strain(&shared);
            continue;
        };
        say_strain(&shared);
        tokio::spawn(connection(stream, shared.clone(), slot));
    }
}

/// One connection, until it closes, its header times out, or the guard evicts it.
async fn connection(stream: tokio::net::TcpStream, shared: Arc<Shared>, slot: Slot) {
    let state = slot.state.clone();
    let served = shared.clone();
    let service = hyper::service::service_fn(move |req| {
        let (shared, state) = (served.clone(), state.clone());
        async move { Ok::<_, Infallible>(answer(req, &shared, state).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(heard(stream, slot.state.clone())), service);
    tokio::select! {
        r = conn => {
            if r.is_err_and(|e| e.is_timeout()) {
                shared.guard.count(Refusal::HeaderTimeout);
                say_strain(&shared);
            }
        }
        _ = slot.state.evicted() => {}
    }
    drop(slot);
}

/// A connection's stream that tells its place when the peer sends bytes (the guard evicts a
/// half-sent request before a connection that has sent nothing yet).
fn heard(
    stream: tokio::net::TcpStream,
    state: Arc<SlotState>,
) -> InspectReader<tokio::net::TcpStream, impl FnMut(&[u8])> {
    InspectReader::new(stream, move |bytes: &[u8]| {
        if !bytes.is_empty() {
            state.heard();
        }
    })
}

/// How long a connection may take to send a whole request header (the guest's take
/// milliseconds): a half-sent request holds a place no longer.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

fn say_strain(shared: &Shared) {
    if let Some(load) = shared.guard.strain_to_say() {
        let _ = shared.tx.send(Report::Strained(load));
    }
}

type Answer = Response<BoxBody<Bytes, io::Error>>;

async fn answer(req: Request<Incoming>, shared: &Arc<Shared>, slot: Arc<SlotState>) -> Answer {
    let name = req
        .uri()
        .path()
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(shared.token.as_str()))
        .and_then(|p| p.strip_prefix('/'))
        .map(str::to_string);
    let method = req.method().clone();
    let offer = name
        .as_ref()
        .and_then(|n| lock(&shared.files).get(n).cloned());
    let (Some(name), Some(offer)) = (name, offer) else {
        return refuse(shared, StatusCode::NOT_FOUND);
    };
    if method != Method::GET && method != Method::HEAD {
        return refuse(shared, StatusCode::METHOD_NOT_ALLOWED);
    }
    let report = Pending::start(shared, &method, &name);
    if shared.fault == Some(ServerFault::NotFound) {
        return report.empty(StatusCode::NOT_FOUND);
    }
    let head = method == Method::HEAD;
    if offer.once && !head && !claim_once(shared, &name) {
        return report.empty(StatusCode::NOT_FOUND);
    }
    let opened = match open(&offer.file).await {
        Ok(f) => f,
        Err(_) => {
            release_once(shared, &name, offer.once && !head, false);
            return report.empty(StatusCode::INTERNAL_SERVER_ERROR);
        }
    };
    let len = opened.1;
    let body = if head {
        report.done(200, 0);
        Empty::new().map_err(|never| match never {}).boxed()
    } else {
        let flip = (shared.fault == Some(ServerFault::Corrupt)).then_some(len / 2);
        slot.set_busy(true);
        let once = offer.once.then(|| (name.clone(), len));
        ChannelBody::stream(opened.0, flip, report, (slot, once), shared.clone()).boxed()
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(hyper::header::CONTENT_LENGTH, len)
        .header(hyper::header::CONTENT_TYPE, "application/octet-stream")
        .body(body)
        .expect("a response of fixed parts")
}

async fn open(path: &std::path::Path) -> io::Result<(tokio::fs::File, u64)> {
    let f = tokio::fs::File::open(path).await?;
    let len = f.metadata().await?.len();
    Ok((f, len))
}

/// A request for a path the server does not serve (or a method it does not take): counted,
/// never reported one by one (anyone can send thousands).
fn refuse(shared: &Shared, status: StatusCode) -> Answer {
    shared.guard.count(Refusal::UnknownRequest);
    say_strain(shared);
    empty(status)
}

fn empty(status: StatusCode) -> Answer {
    Response::builder()
        .status(status)
        .body(Empty::new().map_err(|never| match never {}).boxed())
        .expect("a response of fixed parts")
}

/// Takes a once-only file for one GET: refused while another is under way.
fn claim_once(shared: &Shared, name: &str) -> bool {
    let mut files = lock(&shared.files);
    match files.get_mut(name) {
        Some(o) if !o.in_flight => {
            o.in_flight = true;
            true
        }
        _ => false,
    }
}

/// Ends a once-only GET: sent whole, the file is no longer offered; else it may be fetched
/// again.
fn release_once(shared: &Shared, name: &str, claimed: bool, whole: bool) {
    if !claimed {
        return;
    }
    let mut files = lock(&shared.files);
    if whole {
        files.remove(name);
    } else if let Some(o) = files.get_mut(name) {
        o.in_flight = false;
    }
}

/// A request for one of the server's files, until it ends as a [`Served`] report.
struct Pending {
    method: String,
    /// As the reports show it: `/rootfs.img`, without the run's token.
    path: String,
    arrived: Instant,
    tx: mpsc::UnboundedSender<Report>,
}

impl Pending {
    fn start(shared: &Shared, method: &Method, name: &str) -> Pending {
        Pending {
            method: method.to_string(),
            path: format!("/{name}"),
            arrived: Instant::now(),
            tx: shared.tx.clone(),
        }
    }

    fn done(&self, status: u16, bytes: u64) {
        let _ = self.tx.send(Report::Served(Served {
            method: self.method.clone(),
            path: self.path.clone(),
            status,
            bytes,
            took: self.arrived.elapsed(),
        }));
    }

    fn empty(self, status: StatusCode) -> Answer {
        self.done(status.as_u16(), 0);
        empty(status)
    }
}

/// What a file's body frees when it ends: the connection's place stops being busy, and a
/// once-only file (its name, its length) goes when it was sent whole.
type BodyEnd = (Arc<SlotState>, Option<(String, u64)>);

/// A file's body: a task reads it chunk by chunk into a channel of two, so that reading keeps
/// the guest's pace. The body reports the request when hyper has taken its last chunk, or when
/// it is dropped before (the guest went away).
struct ChannelBody {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    taken: u64,
    report: Option<Pending>,
    end: Option<BodyEnd>,
    shared: Option<Arc<Shared>>,
}

impl ChannelBody {
    fn stream(
        mut file: tokio::fs::File,
        flip: Option<u64>,
        report: Pending,
        end: BodyEnd,
        shared: Arc<Shared>,
    ) -> ChannelBody {
        let (tx, rx) = mpsc::channel(2);
        tokio::spawn(async move {
            let mut read = 0u64;
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = match file.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        break;
                    }
                };
                let mut chunk = buf[..n].to_vec();
                if let Some(at) = flip.filter(|at| (read..read + n as u64).contains(at)) {
                    chunk[(at - read) as usize] ^= 0xff;
                }
                if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                    break;
                }
                read += n as u64;
            }
        });
        ChannelBody {
            rx,
            taken: 0,
            report: Some(report),
            end: Some(end),
            shared: Some(shared),
        }
    }

    fn finish(&mut self) {
        if let Some(r) = self.report.take() {
            r.done(200, self.taken);
        }
        if let (Some((slot, once)), Some(shared)) = (self.end.take(), self.shared.take()) {
            slot.set_busy(false);
            if let Some((name, len)) = once {
                release_once(&shared, &name, true, self.taken == len);
            }
        }
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let polled = self.rx.poll_recv(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => self.taken += chunk.len() as u64,
            Poll::Ready(None) => self.finish(),
            _ => {}
        }
        polled.map(|chunk| chunk.map(|r| r.map(Frame::data)))
    }
}

impl Drop for ChannelBody {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests;
