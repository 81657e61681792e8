//! A small HTTP/1.1 file server on hyper: GET and HEAD of the files it was given, 404 for any
//! other path, 405 for any other method. A file is streamed from disk in chunks, so that a
//! request's time is the guest's pace, not a copy into memory; each request ends as one
//! [`Served`] report.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

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

type Files = Arc<Mutex<BTreeMap<String, PathBuf>>>;

pub struct FileServer {
    addr: SocketAddr,
    files: Files,
    fault: Option<ServerFault>,
    tx: mpsc::UnboundedSender<Served>,
    reports: Option<mpsc::UnboundedReceiver<Served>>,
    /// One accept loop per address it listens on.
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl FileServer {
    /// Binds `addr` (port 0 for any) and serves nothing until [`FileServer::serve`] names files.
    pub async fn start(addr: SocketAddr, fault: Option<ServerFault>) -> io::Result<FileServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let files: Files = Arc::default();
        let (tx, reports) = mpsc::unbounded_channel();
        let task = tokio::spawn(accept(listener, files.clone(), fault, tx.clone()));
        Ok(FileServer {
            addr,
            files,
            fault,
            tx,
            reports: Some(reports),
            tasks: vec![task],
        })
    }

    /// The first address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Listens on `ip` too, at the same port, serving the same files with the same fault and
    /// reports: for an address that exists only once the server runs (a NAT network's host
    /// address on its bridge, made after the URL the guest is given).
    pub async fn listen_also(&mut self, ip: std::net::IpAddr) -> io::Result<SocketAddr> {
        let listener = TcpListener::bind((ip, self.addr.port())).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(accept(
            listener,
            self.files.clone(),
            self.fault,
            self.tx.clone(),
        ));
        self.tasks.push(task);
        Ok(addr)
    }

    /// Serves `file` at `path` (`/rootfs.img`) from now on.
    pub fn serve(&self, path: &str, file: PathBuf) {
        self.files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path.to_string(), file);
    }

    /// The finished requests, in order, for whoever watches them (once).
    pub fn take_reports(&mut self) -> Option<mpsc::UnboundedReceiver<Served>> {
        self.reports.take()
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn accept(
    listener: TcpListener,
    files: Files,
    fault: Option<ServerFault>,
    tx: mpsc::UnboundedSender<Served>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // EMFILE and the like: a moment, then on (the guest retries).
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let (files, tx) = (files.clone(), tx.clone());
        let service = hyper::service::service_fn(move |req| {
            let (files, tx) = (files.clone(), tx.clone());
            async move { Ok::<_, Infallible>(answer(req, &files, fault, tx).await) }
        });
        connections.spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        while connections.try_join_next().is_some() {}
    }
}

type Answer = Response<BoxBody<Bytes, io::Error>>;

async fn answer(
    req: Request<Incoming>,
    files: &Files,
    fault: Option<ServerFault>,
    tx: mpsc::UnboundedSender<Served>,
) -> Answer {
    let report = Report {
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        arrived: Instant::now(),
        tx,
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return report.empty(StatusCode::METHOD_NOT_ALLOWED);
    }
    let file = files
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&report.path)
        .cloned();
    let Some(file) = file.filter(|_| fault != Some(ServerFault::NotFound)) else {
        return report.empty(StatusCode::NOT_FOUND);
    };
    let opened = match tokio::fs::File::open(&file).await {
        Ok(f) => f,
        Err(_) => return report.empty(StatusCode::INTERNAL_SERVER_ERROR),
    };
    let len = match opened.metadata().await {
        Ok(m) => m.len(),
        Err(_) => return report.empty(StatusCode::INTERNAL_SERVER_ERROR),
    };
    let head = req.method() == Method::HEAD;
    let body = if head {
        report.done(200, 0);
        Empty::new().map_err(|never| match never {}).boxed()
    } else {
        let flip = (fault == Some(ServerFault::Corrupt)).then_some(len / 2);
        ChannelBody::stream(opened, flip, report).boxed()
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(hyper::header::CONTENT_LENGTH, len)
        .header(hyper::header::CONTENT_TYPE, "application/octet-stream")
        .body(body)
        .expect("a response of fixed parts")
}

/// What becomes a request's [`Served`].
struct Report {
    method: String,
    path: String,
    arrived: Instant,
    tx: mpsc::UnboundedSender<Served>,
}

impl Report {
    fn done(&self, status: u16, bytes: u64) {
        let _ = self.tx.send(Served {
            method: self.method.clone(),
            path: self.path.clone(),
            status,
            bytes,
            took: self.arrived.elapsed(),
        });
    }

    fn empty(self, status: StatusCode) -> Answer {
        self.done(status.as_u16(), 0);
        Response::builder()
            .status(status)
            .body(Empty::new().map_err(|never| match never {}).boxed())
            .expect("a response of fixed parts")
    }
}

/// A file's body: a task reads it chunk by chunk into a channel of two, so that reading keeps
/// the guest's pace. The body reports the request when hyper has taken its last chunk, or when
/// it is dropped before (the guest went away).
struct ChannelBody {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    taken: u64,
    report: Option<Report>,
}

impl ChannelBody {
    fn stream(mut file: tokio::fs::File, flip: Option<u64>, report: Report) -> ChannelBody {
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
        }
    }

    fn finish(&mut self) {
        if let Some(r) = self.report.take() {
            r.done(200, self.taken);
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
