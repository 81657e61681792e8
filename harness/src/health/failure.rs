//! What went wrong with a request that got no usable answer, told apart by the errors in its
//! cause chain (kube's own text stops at "client error (Connect)"): which timeout ran out, the
//! body cap, and on TLS which side's certificate was refused.

use std::error::Error as StdError;
use std::time::Duration;

use http_body_util::LengthLimitError;
use rustls::AlertDescription;

use super::client::Limits;
use super::HealthError;

/// Where a request went: the server's URL, and the name its certificate must carry.
#[derive(Debug, Clone)]
pub struct Peer {
    pub server: String,
    pub tls_name: String,
}

/// How a request failed short of an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Transport {
    #[error("the TCP connection and TLS handshake did not finish within {}", human(*.0))]
    Connect(Duration),
    #[error("nothing was received for {} (the read timeout)", human(*.0))]
    Read(Duration),
    #[error("the whole answer did not come within {}", human(*.0))]
    Request(Duration),
    #[error("the response body was longer than the {} MiB the harness reads of one answer", .0 >> 20)]
    TooLarge(usize),
    #[error("the connection failed: {0}")]
    Failed(String),
}

/// A duration as people write it (10s, 300ms).
pub fn human(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

/// The error of `what` (e.g. `GET /readyz`) sent to `peer` within `limits`.
pub fn classify(e: kube::Error, what: &str, peer: &Peer, limits: &Limits) -> HealthError {
    let transport = |problem| HealthError::Transport {
        what: what.into(),
        server: peer.server.clone(),
        problem,
    };
    let e = match e {
        kube::Error::Api(s) => {
            return HealthError::Api {
                what: what.into(),
                message: s.message,
                code: s.code,
            }
        }
        other => other,
    };
    let chain: Vec<&(dyn StdError + 'static)> = causes(&e).collect();
    if chain.iter().any(|c| c.is::<LengthLimitError>()) {
        return transport(Transport::TooLarge(limits.body));
    }
    if let Some(tls) = chain.iter().find_map(|c| c.downcast_ref::<rustls::Error>()) {
        return of_tls(tls, peer).unwrap_or_else(|| transport(Transport::Failed(text(&chain))));
    }
    if chain.iter().any(|c| timed_out(*c)) {
        let connecting = chain.iter().any(|c| {
            c.downcast_ref::<hyper_util::client::legacy::Error>()
                .is_some_and(hyper_util::client::legacy::Error::is_connect)
        });
        return transport(match connecting {
            true => Transport::Connect(limits.connect),
            false => Transport::Read(limits.read),
        });
    }
    transport(Transport::Failed(text(&chain)))
}

/// A refused certificate, by whose it is; None for other TLS failures.
fn of_tls(e: &rustls::Error, peer: &Peer) -> Option<HealthError> {
    match e {
        rustls::Error::InvalidCertificate(why) => Some(HealthError::ServerCertificate {
            server: peer.server.clone(),
            name: peer.tls_name.clone(),
            why: why.to_string(),
        }),
        // The alerts a server sends when it does not take the client's certificate (Go's TLS
        // stack, the API server's, sends bad_certificate).
        rustls::Error::AlertReceived(
            alert @ (AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateRequired),
        ) => Some(HealthError::ClientCertificate {
            server: peer.server.clone(),
            alert: format!("{alert:?}"),
        }),
        _ => None,
    }
}

fn timed_out(e: &(dyn StdError + 'static)) -> bool {
    e.is::<tokio::time::error::Elapsed>()
        || e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
}

/// `e` and its causes. An io::Error's `source` is its inner error's source, skipping the inner
/// error itself (where hyper-rustls keeps rustls's error): it is visited here.
fn causes<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e| {
        match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        }
    })
}

/// The chain in words, without kube's wrapper and without repeats (an io::Error shows its
/// inner error's text as its own).
fn text(chain: &[&(dyn StdError + 'static)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in chain.iter().skip(usize::from(chain.len() > 1)) {
        let t = c.to_string();
        if parts.last() != Some(&t) {
            parts.push(t);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> Peer {
        Peer {
            server: "https://127.0.0.1:6443".into(),
            tls_name: "api.sno.example.test".into(),
        }
    }

    fn service(e: impl StdError + Send + Sync + 'static) -> kube::Error {
        kube::Error::Service(Box::new(e))
    }

    #[test]
    fn a_server_certificate_that_does_not_verify_names_the_server_not_the_client() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let e = service(std::io::Error::new(std::io::ErrorKind::InvalidData, tls));
        let text = classify(e, "GET /readyz", &peer(), &Limits::DEFAULT).to_string();
        assert!(text.contains("https://127.0.0.1:6443"), "{text}");
        assert!(text.contains("serving certificate"), "{text}");
        assert!(text.contains("api.sno.example.test"), "{text}");
        assert!(text.contains("UnknownIssuer"), "{text}");
        assert!(text.contains("not the admin client certificate"), "{text}");
    }

    #[test]
    fn a_refused_client_certificate_says_so() {
        let tls = rustls::Error::AlertReceived(AlertDescription::BadCertificate);
        let e = service(std::io::Error::other(tls));
        let text = classify(e, "GET /readyz", &peer(), &Limits::DEFAULT).to_string();
        assert!(
            text.contains("did not accept the kubeconfig's client certificate"),
            "{text}"
        );
        assert!(text.contains("BadCertificate"), "{text}");
    }

    /// The error Limited gives a body over its cap.
    fn over_the_cap() -> tower::BoxError {
        use http_body_util::{BodyExt, Full, Limited};
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = Limited::new(Full::new(bytes::Bytes::from_static(b"too long")), 3);
        rt.block_on(body.collect()).unwrap_err()
    }

    #[test]
    fn the_body_cap_and_a_read_timeout_are_named_with_their_bounds() {
        let e = kube::Error::Service(over_the_cap());
        let text = classify(e, "LIST nodes", &peer(), &Limits::DEFAULT).to_string();
        assert_eq!(
            text,
            "LIST nodes at https://127.0.0.1:6443: the response body was longer than the 32 MiB the harness reads of one answer"
        );
        let e = service(std::io::Error::from(std::io::ErrorKind::TimedOut));
        let text = classify(e, "GET /readyz", &peer(), &Limits::DEFAULT).to_string();
        assert_eq!(
            text,
            "GET /readyz at https://127.0.0.1:6443: nothing was received for 20s (the read timeout)"
        );
    }
}
