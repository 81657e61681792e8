//! The node's InternalIPs, chosen as an installed OpenShift node chooses its kubelet's
//! `--node-ip`. On RHCOS the machine-config operator's `nodeip-configuration.service` runs
//! before the kubelet (openshift/machine-config-operator's templates, running
//! openshift/baremetal-runtimecfg's `node-ip set`): without VIPs or a hint it takes the
//! interface that carries the default route and gives the kubelet that interface's address,
//! one per IP family the cluster has, the cluster's primary family first. So a single-stack
//! IPv6 node registers with its IPv6 address only, and a dual-stack node with both.
//!
//! Here the cluster's families and their order are those of the install-config's
//! `networking.machineNetwork` (the installer requires the node's address inside it); on an
//! interface with several addresses of a family, one inside the machine network is preferred.
//! Without a default route in a family the first global address of that family stands in (the
//! real service would retry until a route comes; the API must still name some address).

use std::net::IpAddr;

/// An IP family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    fn of(ip: &IpAddr) -> Family {
        if ip.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }
}

/// A machine network CIDR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = s.split_once('/')?;
        let addr: IpAddr = a.trim().parse().ok()?;
        let prefix: u8 = p.trim().parse().ok()?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= bits).then_some(Cidr { addr, prefix })
    }

    fn contains(&self, ip: &IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(*a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(*a) & mask
            }
            _ => false,
        }
    }
}

/// The install-config's machine network CIDRs, in its order.
pub fn machine_networks(install_config: &serde_json::Value) -> Vec<Cidr> {
    install_config["networking"]["machineNetwork"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["cidr"].as_str().and_then(Cidr::parse))
        .collect()
}

/// The families of `machine`, in the order they first appear.
fn families(machine: &[Cidr]) -> Vec<Family> {
    let mut out = Vec::new();
    for c in machine {
        let f = Family::of(&c.addr);
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// Interfaces with an IPv4 default route in `/proc/net/route`'s text (destination and mask
/// 0, the route up).
pub fn ipv4_default_interfaces(proc_net_route: &str) -> Vec<String> {
    const RTF_UP: u32 = 0x1;
    proc_net_route
        .lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let flags = u32::from_str_radix(w.get(3)?, 16).ok()?;
            (w.get(1) == Some(&"00000000") && w.get(7) == Some(&"00000000") && flags & RTF_UP != 0)
                .then(|| w[0].to_string())
        })
        .collect()
}

/// Interfaces with an IPv6 default route in `/proc/net/ipv6_route`'s text (destination ::/0,
/// up, not the kernel's reject route on `lo`).
pub fn ipv6_default_interfaces(proc_net_ipv6_route: &str) -> Vec<String> {
    const RTF_UP: u32 = 0x1;
    const RTF_REJECT: u32 = 0x200;
    proc_net_ipv6_route
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 10 {
                return None;
            }
            let flags = u32::from_str_radix(w[8], 16).ok()?;
            let default = w[0].bytes().all(|b| b == b'0') && w[1] == "00";
            (default && flags & RTF_UP != 0 && flags & RTF_REJECT == 0 && w[9] != "lo")
                .then(|| w[9].to_string())
        })
        .collect()
}

/// Neither loopback nor link-local: an address another host can reach the node at.
fn global(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => !a.is_loopback() && !a.is_link_local() && !a.is_unspecified(),
        IpAddr::V6(a) => {
            !a.is_loopback() && !a.is_unspecified() && (a.segments()[0] & 0xffc0) != 0xfe80
        }
    }
}

/// What the choice reads from the host.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// Every (interface, address).
    pub addresses: Vec<(String, IpAddr)>,
    pub ipv4_default: Vec<String>,
    pub ipv6_default: Vec<String>,
}

impl Host {
    /// This host, now.
    pub fn read() -> Host {
        let addresses = if_addrs::get_if_addrs()
            .map(|ifs| ifs.into_iter().map(|i| (i.name.clone(), i.ip())).collect())
            .unwrap_or_default();
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Host {
            addresses,
            ipv4_default: ipv4_default_interfaces(&read("/proc/net/route")),
            ipv6_default: ipv6_default_interfaces(&read("/proc/net/ipv6_route")),
        }
    }

    /// One address of `family`: on a default-route interface (inside the machine network
    /// preferred), else the first global address of the family.
    fn address(&self, family: Family, machine: &[Cidr]) -> Option<IpAddr> {
        let defaults = match family {
            Family::V4 => &self.ipv4_default,
            Family::V6 => &self.ipv6_default,
        };
        let of_family: Vec<&(String, IpAddr)> = self
            .addresses
            .iter()
            .filter(|(_, ip)| Family::of(ip) == family && global(ip))
            .collect();
        let on_default: Vec<IpAddr> = of_family
            .iter()
            .filter(|(i, _)| defaults.contains(i))
            .map(|(_, ip)| *ip)
            .collect();
        on_default
            .iter()
            .find(|ip| machine.iter().any(|c| c.contains(ip)))
            .or(on_default.first())
            .copied()
            .or_else(|| of_family.first().map(|(_, ip)| *ip))
    }

    /// The node's InternalIPs: one per family of the machine network, in its order. Without
    /// a machine network (no install-config), IPv4, or IPv6 when the host has no IPv4.
    pub fn node_ips(&self, machine: &[Cidr]) -> Vec<IpAddr> {
        let fams = families(machine);
        if fams.is_empty() {
            return self
                .address(Family::V4, machine)
                .or_else(|| self.address(Family::V6, machine))
                .into_iter()
                .collect();
        }
        fams.into_iter()
            .filter_map(|f| self.address(f, machine))
            .collect()
    }
}

/// The node's InternalIPs on this host for this install-config.
pub fn node_ips(install_config: &serde_json::Value) -> Vec<IpAddr> {
    Host::read().node_ips(&machine_networks(install_config))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
enp1s0\t00000000\t017EA8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
enp1s0\t007EA8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n";

    const ROUTE6: &str = "\
fd000001000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000064 00000001 00000000 00000001 enp1s0\n\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000001000000000000000000000001 00000064 00000001 00000000 00000003 enp1s0\n\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo\n";

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn cidrs(c: &[&str]) -> Vec<Cidr> {
        c.iter().map(|s| Cidr::parse(s).unwrap()).collect()
    }

    #[test]
    fn default_routes_are_read_from_proc() {
        assert_eq!(ipv4_default_interfaces(ROUTE), vec!["enp1s0"]);
        assert_eq!(ipv6_default_interfaces(ROUTE6), vec!["enp1s0"]);
        assert!(ipv4_default_interfaces("Iface\tDestination\n").is_empty());
    }

    fn dual_host() -> Host {
        Host {
            addresses: vec![
                ("lo".into(), ip("127.0.0.1")),
                ("lo".into(), ip("::1")),
                ("eth9".into(), ip("10.88.0.1")),
                ("enp1s0".into(), ip("fe80::5054:ff:fe00:1")),
                ("enp1s0".into(), ip("fd00:1::10")),
                ("enp1s0".into(), ip("192.168.126.10")),
            ],
            ipv4_default: vec!["enp1s0".into()],
            ipv6_default: vec!["enp1s0".into()],
        }
    }

    #[test]
    fn an_ipv6_only_node_registers_its_ipv6_address_on_the_default_route_interface() {
        let host = Host {
            addresses: vec![
                ("lo".into(), ip("::1")),
                ("enp1s0".into(), ip("fe80::5054:ff:fe00:1")),
                ("enp1s0".into(), ip("fd00:1::10")),
            ],
            ipv4_default: vec![],
            ipv6_default: vec!["enp1s0".into()],
        };
        assert_eq!(
            host.node_ips(&cidrs(&["fd00:1::/64"])),
            vec![ip("fd00:1::10")]
        );
        // No install-config: IPv6 when the host has no IPv4.
        assert_eq!(host.node_ips(&[]), vec![ip("fd00:1::10")]);
    }

    #[test]
    fn a_dual_stack_node_lists_both_families_in_the_machine_networks_order() {
        let host = dual_host();
        assert_eq!(
            host.node_ips(&cidrs(&["192.168.126.0/24", "fd00:1::/64"])),
            vec![ip("192.168.126.10"), ip("fd00:1::10")]
        );
        assert_eq!(
            host.node_ips(&cidrs(&["fd00:1::/64", "192.168.126.0/24"])),
            vec![ip("fd00:1::10"), ip("192.168.126.10")]
        );
        // A single-stack IPv4 cluster on the same host: IPv4 only, from the default route's
        // interface rather than the first interface listed.
        assert_eq!(
            host.node_ips(&cidrs(&["192.168.126.0/24"])),
            vec![ip("192.168.126.10")]
        );
        assert_eq!(host.node_ips(&[]), vec![ip("192.168.126.10")]);
    }

    #[test]
    fn without_a_default_route_the_first_global_address_stands_in() {
        let mut host = dual_host();
        host.ipv4_default.clear();
        assert_eq!(
            host.node_ips(&cidrs(&["10.0.2.0/24"])),
            vec![ip("10.88.0.1")]
        );
    }

    #[test]
    fn machine_networks_come_from_the_install_config() {
        let ic = serde_json::json!({"networking": {"machineNetwork": [{"cidr": "fd00:1::/64"}, {"cidr": "bad"}]}});
        assert_eq!(machine_networks(&ic), cidrs(&["fd00:1::/64"]));
        assert!(machine_networks(&serde_json::Value::Null).is_empty());
    }
}
