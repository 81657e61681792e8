//! A DNS server for tests (of this crate and of a harness against it): on 127.0.0.1, it
//! answers A questions for the names it holds, NOERROR without data for their other types,
//! and NXDOMAIN for every other name; or, made `silent`, never answers. It stops when dropped.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record, RecordType};

pub struct StubDns {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StubDns {
    /// A server answering `names` (lowercase, without the final dot).
    pub fn start(names: &[(&str, Ipv4Addr)]) -> std::io::Result<StubDns> {
        let names: Vec<(String, Ipv4Addr)> =
            names.iter().map(|(n, a)| (n.to_string(), *a)).collect();
        StubDns::spawn(Some(names))
    }

    /// A server that reads every question and answers none.
    pub fn silent() -> std::io::Result<StubDns> {
        StubDns::spawn(None)
    }

    fn spawn(names: Option<Vec<(String, Ipv4Addr)>>) -> std::io::Result<StubDns> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_read_timeout(Some(Duration::from_millis(50)))?;
        let addr = socket.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                let (Some(names), Ok(q)) = (&names, Message::from_vec(&buf[..n])) else {
                    continue;
                };
                if let Ok(bytes) = reply(&q, names).to_vec() {
                    let _ = socket.send_to(&bytes, from);
                }
            }
        });
        Ok(StubDns {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

fn reply(q: &Message, names: &[(String, Ipv4Addr)]) -> Message {
    let mut r = Message::response(q.metadata.id, q.metadata.op_code);
    r.metadata.message_type = MessageType::Response;
    r.metadata.recursion_desired = q.metadata.recursion_desired;
    r.metadata.recursion_available = true;
    let Some(question) = q.queries.first() else {
        r.metadata.response_code = ResponseCode::FormErr;
        return r;
    };
    r.add_query(question.clone());
    let asked = question
        .name()
        .to_ascii()
        .trim_end_matches('.')
        .to_lowercase();
    let held: Vec<Ipv4Addr> = names
        .iter()
        .filter(|(n, _)| *n == asked)
        .map(|(_, a)| *a)
        .collect();
    if held.is_empty() {
        r.metadata.response_code = ResponseCode::NXDomain;
    } else if question.query_type() == RecordType::A {
        for a in held {
            r.add_answer(Record::from_rdata(
                question.name().clone(),
                30,
                RData::A(A(a)),
            ));
        }
    }
    r
}

impl Drop for StubDns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
