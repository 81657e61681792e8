//! How the simulated kubelet looks its API server up. The real kubelet of the installed node
//! talks to `api-int.<cluster>.<domain>`; without an answer from the node's own resolver it
//! cannot register the node (docs/bip-contract.md §6). minisno provides no such name itself:
//! a harness must (a MachineConfig writing /etc/hosts, or DNS).

use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;

use crate::config::Resolver;

impl Resolver {
    /// The addresses `host` resolves to, or why it does not.
    pub fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        let found = match self {
            Resolver::System => (host, 0)
                .to_socket_addrs()
                .map_err(|e| e.to_string())?
                .map(|a| a.ip())
                .collect(),
            Resolver::HostsFile(path) => in_hosts_file(path, host)?,
        };
        if found.is_empty() {
            return Err("no address".into());
        }
        Ok(found)
    }
}

/// The addresses a hosts file gives `host` (names compare without regard to case).
fn in_hosts_file(path: &Path, host: &str) -> Result<Vec<IpAddr>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let ip: IpAddr = words.next()?.parse().ok()?;
            words.any(|w| w.eq_ignore_ascii_case(host)).then_some(ip)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "127.0.0.1 localhost\n# 10.0.0.1 api-int.sno.example.test\n10.0.2.15 api.sno.example.test API-INT.sno.example.test # the node\n").unwrap();
        let r = Resolver::HostsFile(path.clone());
        assert_eq!(
            r.resolve("api-int.sno.example.test").unwrap(),
            ["10.0.2.15".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(r.resolve("api-int.other.test").unwrap_err(), "no address");
        std::fs::remove_file(&path).unwrap();
        assert!(r.resolve("api-int.sno.example.test").is_err());
    }

    #[test]
    fn the_system_resolver_knows_localhost() {
        assert!(!Resolver::System.resolve("localhost").unwrap().is_empty());
        assert!(Resolver::System.resolve("api-int.sno.invalid").is_err());
    }
}
