//! How a pod resolves a name outside the cluster, as the operators that check their routes do
//! (authentication, console, the ingress canary): through the cluster's DNS, CoreDNS, which
//! OpenShift's DNS operator configures to forward every such name to the nameservers of the
//! node's /etc/resolv.conf, one after the other (cluster-dns-operator's Corefile: `forward .
//! /etc/resolv.conf { policy sequential }`, and no `hosts` plugin). So the node's /etc/hosts
//! never answers a pod, nor does getaddrinfo: only real DNS questions to those servers do.
//!
//! CoreDNS's sequential policy moves to the next server only when one does not answer; the
//! first answer is the answer. When none answers, CoreDNS says SERVFAIL. A pod's Go program
//! reports the outcome against the cluster DNS service it asked (the tenth address of the
//! service network): `lookup HOST on 172.30.0.10:53: no such host` for NXDOMAIN or an empty
//! answer, `... server misbehaving` for anything else.

pub mod query;
pub mod resolv_conf;
pub mod stub;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::config::ClusterDns;
use query::Answer;

/// How long a pod's DNS waits for one upstream server.
pub const SERVER_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a name did not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    /// NXDOMAIN or no address (Go's "no such host"); else "server misbehaving".
    pub not_found: bool,
    /// What each of the node's nameservers did, in order (for the logs: the pod's error does
    /// not say it).
    pub trail: Vec<String>,
}

impl LookupError {
    /// The error as a pod's Go program words it, `service` being the cluster DNS it asked.
    pub fn go_error(&self, host: &str, service: SocketAddr) -> String {
        let why = if self.not_found {
            "no such host"
        } else {
            "server misbehaving"
        };
        format!("lookup {host} on {service}: {why}")
    }
}

/// The pods' view of DNS.
#[derive(Debug, Clone)]
pub struct PodDns {
    pub upstreams: ClusterDns,
    pub timeout: Duration,
}

impl PodDns {
    pub fn new(upstreams: ClusterDns) -> PodDns {
        PodDns {
            upstreams,
            timeout: SERVER_TIMEOUT,
        }
    }

    /// The addresses of `host`, as CoreDNS forwards the question (see the module's text).
    pub fn lookup(&self, host: &str) -> Result<Vec<IpAddr>, LookupError> {
        let (servers, mut trail) = match &self.upstreams {
            ClusterDns::ResolvConf(path) => {
                let u = resolv_conf::read(path);
                (u.reachable, u.unusable)
            }
            ClusterDns::Servers(s) => (s.clone(), Vec::new()),
        };
        for server in servers {
            match query::ask(server, host, self.timeout) {
                Ok(Answer::Addresses(a)) => return Ok(a),
                Ok(Answer::NoSuchHost) => {
                    trail.push(format!("{server} answered that {host} does not exist"));
                    return Err(LookupError {
                        not_found: true,
                        trail,
                    });
                }
                Ok(Answer::Failed(code)) => {
                    trail.push(format!("{server} answered {code}"));
                    return Err(LookupError {
                        not_found: false,
                        trail,
                    });
                }
                Err(e) => trail.push(e),
            }
        }
        Err(LookupError {
            not_found: false,
            trail,
        })
    }
}

/// The cluster DNS service's address: the tenth of the first service network (the DNS
/// operator's `dns-default` service), port 53; 172.30.0.10:53 when the install-config has
/// none that parses.
pub fn cluster_dns_service(install_config: &serde_json::Value) -> SocketAddr {
    let cidr = install_config["networking"]["serviceNetwork"][0]
        .as_str()
        .unwrap_or_default();
    let ip = cidr
        .split('/')
        .next()
        .and_then(|a| a.parse::<IpAddr>().ok())
        .map(|ip| match ip {
            IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4).wrapping_add(10))),
            IpAddr::V6(v6) => IpAddr::V6(u128::from(v6).wrapping_add(10).into()),
        })
        .unwrap_or(IpAddr::V4(Ipv4Addr::new(172, 30, 0, 10)));
    SocketAddr::new(ip, 53)
}

#[cfg(test)]
mod tests;
