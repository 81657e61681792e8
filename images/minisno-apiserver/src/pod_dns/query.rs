//! One exchange with one DNS server over UDP: the A and AAAA questions for a name, sent
//! together as Go's resolver sends them for a TCP dial, and the answers within a deadline.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};

/// What a server said about a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Addresses (A and AAAA together).
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN, or NOERROR without an address: Go's "no such host".
    NoSuchHost,
    /// Another response code (SERVFAIL, REFUSED, ...): Go's "server misbehaving".
    Failed(ResponseCode),
}

/// Asks `server` for the addresses of `host` (taken as a fully qualified name). `Err` when no
/// answer came: the socket's error, or none within `timeout`.
pub fn ask(server: SocketAddr, host: &str, timeout: Duration) -> Result<Answer, String> {
    let name = Name::from_ascii(format!("{}.", host.trim_end_matches('.')))
        .map_err(|e| format!("{host:?} is not a DNS name: {e}"))?;
    let local: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("an address")
    } else {
        "[::]:0".parse().expect("an address")
    };
    let socket = UdpSocket::bind(local).map_err(|e| format!("dial udp {server}: {e}"))?;
    // Connected, so that an ICMP refusal comes back as an error of the next read.
    socket
        .connect(server)
        .map_err(|e| format!("dial udp {server}: {e}"))?;
    let mut pending = Vec::new();
    for kind in [RecordType::A, RecordType::AAAA] {
        let mut m = Message::query();
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(name.clone(), kind));
        let bytes = m.to_vec().map_err(|e| format!("encoding the query: {e}"))?;
        socket
            .send(&bytes)
            .map_err(|e| format!("write udp {server}: {e}"))?;
        pending.push(m.metadata.id);
    }
    let answers = receive(&socket, server, &mut pending, timeout)?;
    Ok(combine(answers))
}

/// The responses to the `pending` ids until all came or `timeout` passed; an error when none
/// came at all.
fn receive(
    socket: &UdpSocket,
    server: SocketAddr,
    pending: &mut Vec<u16>,
    timeout: Duration,
) -> Result<Vec<Message>, String> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !pending.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        socket
            .set_read_timeout(Some(left))
            .map_err(|e| format!("read udp {server}: {e}"))?;
        let n = match socket.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(e) => return Err(format!("read udp {server}: {e}")),
        };
        // Anything that does not parse or answers another question is ignored, as resolvers do.
        let Ok(m) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        if let Some(i) = pending.iter().position(|id| *id == m.metadata.id) {
            pending.remove(i);
            got.push(m);
        }
    }
    if got.is_empty() {
        return Err(format!(
            "read udp {server}: i/o timeout (no answer within {:.1} s)",
            timeout.as_secs_f64()
        ));
    }
    Ok(got)
}

/// One answer from the responses to the two questions: addresses if either has some; else
/// NXDOMAIN or an empty NOERROR is "no such host"; else the failing code.
fn combine(responses: Vec<Message>) -> Answer {
    let mut addrs = Vec::new();
    let mut failed = None;
    for m in &responses {
        match m.metadata.response_code {
            ResponseCode::NoError | ResponseCode::NXDomain => {}
            other => failed = failed.or(Some(other)),
        }
        addrs.extend(m.answers.iter().filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        }));
    }
    let not_found = responses
        .iter()
        .any(|m| m.metadata.response_code == ResponseCode::NXDomain);
    match (addrs.is_empty(), failed) {
        (false, _) => Answer::Addresses(addrs),
        (true, _) if not_found => Answer::NoSuchHost,
        (true, Some(code)) => Answer::Failed(code),
        (true, None) => Answer::NoSuchHost,
    }
}
