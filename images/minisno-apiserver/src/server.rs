//! The HTTPS listener: TLS with mandatory client certificates, HTTP/1.1 via hyper, one
//! [`router::route`] call per request, and a task that logs milestones as they are reached.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::app::App;
use crate::config::Config;
use crate::log::log;
use crate::{router, schedule, tls};

const MAX_BODY: usize = 4 << 20;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A started server.
pub struct Running {
    pub local_addr: SocketAddr,
    pub app: Arc<App>,
    /// The serving certificate's SANs.
    pub sans: Vec<String>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops accepting, drops open connections and waits for the tasks to end.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    App(#[from] crate::app::AppError),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
}

/// Loads state, makes the serving certificate, binds `config.listen` and starts serving.
pub async fn start(config: Config) -> Result<Running, StartError> {
    let host_ips = tls::host_ips();
    let host = crate::node_ip::Host::read();
    let app = Arc::new(App::new(config, Some(&host))?);
    let cert = tls::make_serving_cert(&app.config, &host_ips)?;
    let tls_config = tls::server_config(&cert)?;
    let listener = TcpListener::bind(&app.config.listen)
        .await
        .map_err(|source| StartError::Listen {
            addr: app.config.listen.clone(),
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| StartError::Listen {
        addr: app.config.listen.clone(),
        source,
    })?;

    log(format!(
        "a test fixture imitating an OpenShift {} API (kube {}), listening on https://{local_addr}",
        app.config.release.version,
        crate::resources::health::KUBE_VERSION
    ));
    log(format!(
        "{} first start {} ({:.1}s ago); state in {}",
        if app.fresh {
            "this is the"
        } else {
            "restarted; the"
        },
        crate::state::rfc3339_ms(app.first_start_ms),
        app.elapsed(),
        app.config.state_dir.display()
    ));
    log(format!(
        "serving certificate SANs: {}",
        cert.sans.join(", ")
    ));
    log(format!(
        "the node is {} ({})",
        app.node_name,
        if app.config.node_name.is_some() {
            "as configured"
        } else {
            "the hostname at the kubelet's start"
        }
    ));
    if !app.faults.0.is_empty() {
        log(format!("faults: {:?}", app.faults.0));
    }
    if !app.ignored_faults.is_empty() {
        log(format!(
            "faults for other components, ignored here: {}",
            app.ignored_faults.join(", ")
        ));
    }

    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(serve(
        listener,
        TlsAcceptor::from(tls_config),
        app.clone(),
        stop_rx,
    ));
    Ok(Running {
        local_addr,
        app,
        sans: cert.sans,
        stop,
        task,
    })
}

async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    conns.spawn(milestones(app.clone()));
    conns.spawn(route_checks(app.clone()));
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        log(format!("accept failed: {e}"));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                conns.spawn(connection(tcp, peer, acceptor.clone(), app.clone()));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.shutdown().await;
}

async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    app: Arc<App>,
) {
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            log(format!("TLS handshake with {peer} refused: {e}"));
            return;
        }
        Err(_) => {
            log(format!("TLS handshake with {peer} timed out"));
            return;
        }
    };
    let service = hyper::service::service_fn(move |req| handle(app.clone(), req));
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await
    {
        if !e.is_incomplete_message() {
            log(format!("connection from {peer}: {e}"));
        }
    }
}

async fn handle(
    app: Arc<App>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req
        .uri()
        .query()
        .filter(|q| !q.is_empty())
        .map(str::to_string);
    let accept = req
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let reply = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => router::route_negotiated(
            &app,
            &method,
            &path,
            query.as_deref(),
            accept.as_deref(),
            &body.to_bytes(),
        ),
        Err(e) => crate::resources::Reply::status(
            413,
            "RequestEntityTooLarge",
            format!("reading the request body: {e}"),
        ),
    };
    log(format!(
        "{method} {path}{}{} {} ({:.1}s)",
        if query.is_some() { "?" } else { "" },
        query.as_deref().unwrap_or(""),
        reply.code,
        app.elapsed()
    ));
    let response = Response::builder()
        .status(reply.code)
        .header(hyper::header::CONTENT_TYPE, reply.content_type)
        .header("X-Minisno", "a test fixture")
        .body(Full::new(Bytes::from(reply.body)))
        .expect("valid response");
    Ok(response)
}

/// Logs each milestone once per process, when it is reached (or at start if it already was).
/// It is also where the simulated kubelet looks api-int up (twice a second while the name does
/// not resolve), so the node registers within a second of the name resolving.
async fn milestones(app: Arc<App>) {
    let mut logged: Vec<&'static str> = Vec::new();
    loop {
        let elapsed = app.elapsed();
        let lookup = app.clone();
        if tokio::task::spawn_blocking(move || lookup.look_up_api_int())
            .await
            .is_err()
        {
            return;
        }
        let timeline = app.timeline();
        for (name, at) in timeline.milestones(elapsed, &app.faults) {
            if !logged.contains(&name) {
                logged.push(name);
                log(format!("{name} (at {at:.1}s since first start)"));
            }
        }
        if logged.len() >= schedule::MILESTONES {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The operators' route checks (crate::route_checks): a round at most every two seconds until
/// every route's host has resolved through the pods' DNS.
async fn route_checks(app: Arc<App>) {
    loop {
        let a = app.clone();
        if tokio::task::spawn_blocking(move || a.check_routes())
            .await
            .is_err()
        {
            return;
        }
        if app.facts().routes.resolved_at.iter().all(Option::is_some) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
