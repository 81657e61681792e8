//! The HTTP client of the BMC: one HTTP/1.1 connection per request (a BMC's answers are few and
//! its keep-alive is often broken), over TLS on https. The BMC is a network peer like any
//! other and may be hostile: every request has a deadline (its connection one of its own),
//! every answer a size limit, redirects are followed a few times and only on the same BMC (the
//! credentials go nowhere else), and nothing of the Authorization header is ever shown.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::credentials::Credentials;
use super::endpoint::Endpoint;
use super::error::{clip, human, refusal_message, Problem, RequestError};

/// How long and how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The TCP connection and TLS handshake.
    pub connect: Duration,
    /// A request, from its connection to the last byte of its answer (redirects included).
    pub request: Duration,
    /// An insertion of virtual media, task included: a BMC may fetch the whole image before
    /// it answers (the emulator does).
    pub insert: Duration,
    /// The largest answer read.
    pub body: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(30),
            insert: Duration::from_secs(15 * 60),
            // Redfish resources are a few KiB; a collection of hundreds of members fits.
            body: 1 << 20,
        }
    }
}

/// The most redirects one request follows.
pub const MAX_REDIRECTS: usize = 5;

/// The largest header section read of an answer.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// An answer, whole.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The way to one BMC.
pub struct Transport {
    endpoint: Endpoint,
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    authorization: HeaderValue,
    pub limits: Limits,
}

impl Transport {
    pub fn new(
        endpoint: Endpoint,
        tls: Option<Arc<rustls::ClientConfig>>,
        credentials: &Credentials,
        limits: Limits,
    ) -> Result<Transport, String> {
        let tls = match tls {
            Some(config) => {
                let name = ServerName::try_from(endpoint.host.clone())
                    .map_err(|_| format!("{} is no host name TLS can check", endpoint.host))?;
                Some((config, name))
            }
            None => None,
        };
        Ok(Transport {
            endpoint,
            tls,
            authorization: credentials.authorization(),
            limits,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// An error of the request `what`.
    pub fn error(&self, what: &str, problem: Problem) -> Box<RequestError> {
        Box::new(RequestError {
            what: what.into(),
            bmc: self.endpoint.origin(),
            problem,
        })
    }

    /// `method path` with `body` as JSON, within `deadline`; a 2xx answer, or the refusal as an
    /// error quoting the BMC.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(header::HeaderName, HeaderValue)],
        deadline: Duration,
    ) -> Result<Answer, Box<RequestError>> {
        let what = format!("{method} {path}");
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(deadline, self.follow(method, path, body, headers))
            .await
            .map_err(|_| Problem::Deadline(deadline))
            .and_then(|r| r)
            .map_err(|p| self.error(&what, p))?;
        // The request and its status only: never a header (the credentials) nor a body.
        let took = started.elapsed();
        tracing::debug!(bmc = %self.endpoint.origin(), %what, status = %answer.status, ?took, "redfish");
        match answer.status {
            s if s.is_success() => Ok(answer),
            StatusCode::UNAUTHORIZED => {
                let said = refusal_message(answer.status, &answer.body);
                Err(self.error(&what, Problem::Unauthorized(Some(said))))
            }
            s => Err(self.error(
                &what,
                Problem::Refused {
                    status: s.as_u16(),
                    message: refusal_message(s, &answer.body),
                },
            )),
        }
    }

    /// GET `path` as JSON, within the request deadline.
    pub async fn get_json(&self, path: &str) -> Result<Value, Box<RequestError>> {
        let answer = self
            .call(Method::GET, path, None, &[], self.limits.request)
            .await?;
        json_of(&answer.body).map_err(|p| self.error(&format!("GET {path}"), p))
    }

    /// The request, following redirects on this BMC.
    async fn follow(
        &self,
        mut method: Method,
        path: &str,
        mut body: Option<&Value>,
        headers: &[(header::HeaderName, HeaderValue)],
    ) -> Result<Answer, Problem> {
        let mut path = path.to_string();
        for _ in 0..=MAX_REDIRECTS {
            let answer = self.once(&method, &path, body, headers).await?;
            if !answer.status.is_redirection() || answer.status == StatusCode::NOT_MODIFIED {
                return Ok(answer);
            }
            let location = answer
                .headers
                .get(header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| {
                    Problem::BadAnswer(format!("{} without a Location", answer.status))
                })?;
            path = self
                .endpoint
                .path_on_this_bmc(location)
                .ok_or_else(|| Problem::ForeignRedirect(clip(location)))?;
            if answer.status == StatusCode::SEE_OTHER {
                (method, body) = (Method::GET, None);
            }
        }
        Err(Problem::TooManyRedirects {
            limit: MAX_REDIRECTS,
            to: path,
        })
    }

    /// One request on a connection of its own.
    async fn once(
        &self,
        method: &Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(header::HeaderName, HeaderValue)],
    ) -> Result<Answer, Problem> {
        let request = self.request(method, path, body, headers)?;
        let connect = self.limits.connect;
        let tcp = tokio::time::timeout(connect, self.connect())
            .await
            .map_err(|_| Problem::Connect(format!("no connection within {}", human(connect))))??;
        match &self.tls {
            None => exchange(tcp, request, self.limits.body).await,
            Some((config, name)) => {
                let tls = tokio_rustls::TlsConnector::from(config.clone());
                let stream = tokio::time::timeout(connect, tls.connect(name.clone(), tcp))
                    .await
                    .map_err(|_| Problem::Tls(format!("no handshake within {}", human(connect))))?
                    .map_err(|e| Problem::Tls(tls_failure(&e)))?;
                exchange(stream, request, self.limits.body).await
            }
        }
    }

    async fn connect(&self) -> Result<TcpStream, Problem> {
        TcpStream::connect((self.endpoint.host.as_str(), self.endpoint.port))
            .await
            .map_err(|e| Problem::Connect(e.to_string()))
    }

    fn request(
        &self,
        method: &Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(header::HeaderName, HeaderValue)],
    ) -> Result<Request<Full<Bytes>>, Problem> {
        let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::HOST, self.endpoint.authority())
            .header(header::AUTHORIZATION, self.authorization.clone())
            .header(header::ACCEPT, "application/json")
            .header("OData-Version", "4.0")
            .header(header::CONNECTION, "close");
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(bytes))
            .map_err(|_| Problem::BadAnswer(format!("{} is no request path", clip(path))))
    }
}

/// Sends `request` on `io` and reads the answer, at most `limit` bytes of body.
async fn exchange<S>(io: S, request: Request<Full<Bytes>>, limit: usize) -> Result<Answer, Problem>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let broke = |e: &dyn std::fmt::Display| Problem::Connect(format!("the connection broke: {e}"));
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(MAX_HEADER_BYTES.max(8192))
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| broke(&e))?;
    // The connection is driven beside the request and ends with it (dropped: aborted).
    let driver = AbortOnDrop(tokio::spawn(connection));
    let response = sender.send_request(request).await.map_err(|e| {
        match e.is_parse() || e.is_parse_too_large() {
            true => Problem::BadAnswer(format!("no HTTP answer: {e}")),
            false => broke(&e),
        }
    })?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| match e.is::<LengthLimitError>() {
            true => Problem::TooLarge(limit),
            false => broke(&e),
        })?
        .to_bytes();
    drop(driver);
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a failed handshake says: rustls's own error when there is one, with what to do about
/// an unknown issuer.
fn tls_failure(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c)) => format!(
            "the BMC's certificate was refused ({c:?}): trust its CA file or its SHA-256 fingerprint"
        ),
        Some(r) => r.to_string(),
        None => e.to_string(),
    }
}

/// `body` as JSON (an object, as every Redfish resource is).
pub fn json_of(body: &[u8]) -> Result<Value, Problem> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| Problem::BadAnswer(format!("not JSON ({e})")))?;
    match v.is_object() {
        true => Ok(v),
        false => Err(Problem::BadAnswer("JSON, but not an object".into())),
    }
}
