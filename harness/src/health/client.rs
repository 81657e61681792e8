//! kube's client as every API request of the harness uses it (`check`, a run's API poller,
//! gather): connect and read timeouts on its connections, and a cap on every response body.
//! kube buffers whole responses (and `read_timeout` is off by default), so without these a
//! server that never answers holds a request forever and an endless body fills memory.

use std::time::Duration;

use http_body_util::Limited;
use kube::client::{ClientBuilder, DynBody};
use kube::Client;
use tower::util::MapResponseLayer;

/// The bounds of each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The TCP connection and the TLS handshake together (kube's connector times the TLS
    /// connector it wraps, so the handshake is inside).
    pub connect: Duration,
    /// Silence on a connection while an answer is awaited: no byte of it for this long.
    pub read: Duration,
    /// One request from start to its whole body, however the bytes trickle in.
    pub request: Duration,
    /// The most bytes of one response body that are read.
    pub body: usize,
}

impl Limits {
    /// The harness's: a forwarded port answers in milliseconds and the API's answers take a
    /// second at most; the cap is some 16 times a real cluster's largest list the harness asks
    /// for (its ClusterOperators are 1-2 MB, a failed install's events a few MB).
    pub const DEFAULT: Limits = Limits {
        connect: Duration::from_secs(10),
        read: Duration::from_secs(20),
        request: Duration::from_secs(30),
        body: 32 << 20,
    };
}

/// The client for `config`, within `limits`.
pub fn build(mut config: kube::Config, limits: &Limits) -> Result<Client, kube::Error> {
    config.connect_timeout = Some(limits.connect);
    config.read_timeout = Some(limits.read);
    config.write_timeout = Some(limits.read);
    // The read timeout then counts from the request, not from when its pooled connection went
    // idle (the API poller's connection waits between passes).
    config.reset_reader_on_write = true;
    let cap = limits.body;
    let builder = ClientBuilder::try_from(config)?;
    // kube collects a body whole; Limited fails it once more than `cap` bytes have come (or at
    // once, when its Content-Length says so), with LengthLimitError, which failure.rs names.
    let capped = MapResponseLayer::new(move |r: http::Response<Box<DynBody>>| {
        r.map(|body| Limited::new(body, cap))
    });
    Ok(builder.with_layer(&capped).build())
}
