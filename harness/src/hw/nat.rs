//! The address layout of a run's NAT network, laid out in the scenario's machine network: the
//! host (gateway and DNS) at the first address, the node at the tenth, a DHCP pool for
//! anything else from the hundredth to the two-hundredth. IPv4 needs a prefix of /24 or wider;
//! an IPv6 CIDR (dual stack) gets the same layout in hex (::1, ::10, ::100 to ::200) and needs
//! /120 or wider. Validating a scenario and creating the libvirt network read the same layout.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The host's address on the bridge (the guests' gateway and DNS server), the prefix, and the
/// DHCP pool for anything other than the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Subnet {
    pub host: Ipv4Addr,
    pub prefix: u8,
    pub dhcp_start: Ipv4Addr,
    pub dhcp_end: Ipv4Addr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Subnet {
    pub host: Ipv6Addr,
    pub prefix: u8,
    pub dhcp_start: Ipv6Addr,
    pub dhcp_end: Ipv6Addr,
}

/// Where everything sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatLayout {
    pub ipv4: Ipv4Subnet,
    /// Dual stack when set.
    pub ipv6: Option<Ipv6Subnet>,
    /// The node's reserved addresses.
    pub node_ipv4: Ipv4Addr,
    pub node_ipv6: Option<Ipv6Addr>,
}

/// Why a machine network cannot hold a NAT network's layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NatError {
    #[error("machine network {0:?} is not a CIDR")]
    NotCidr(String),
    #[error("machine network {0:?}: bad address")]
    BadAddress(String),
    #[error("machine network {0:?}: bad prefix")]
    BadPrefix(String),
    #[error("a NAT network needs an IPv4 machine network")]
    NoIpv4,
    #[error("machine network {addr}/{prefix}: a NAT network needs a prefix from /8 to /24 (the node is at .10, DHCP at .100-.200)")]
    Ipv4Prefix { addr: Ipv4Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: a NAT network needs unicast addresses (not 0/8, 127/8, 224/4 or 240/4)")]
    Ipv4NotUnicast { addr: Ipv4Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: a NAT network needs unicast addresses (not ::, ::1 or ff00::/8)")]
    Ipv6NotUnicast { addr: Ipv6Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: a NAT network needs a prefix from /16 to /120")]
    Ipv6Prefix { addr: Ipv6Addr, prefix: u8 },
}

fn parse_cidr(c: &str) -> Result<(IpAddr, u8), NatError> {
    let (addr, prefix) = c
        .split_once('/')
        .ok_or_else(|| NatError::NotCidr(c.into()))?;
    let addr = addr.parse().map_err(|_| NatError::BadAddress(c.into()))?;
    let prefix = prefix.parse().map_err(|_| NatError::BadPrefix(c.into()))?;
    Ok((addr, prefix))
}

/// The layout in `machine_network` (the install-config's CIDRs), or why it cannot hold one.
pub fn layout(machine_network: &[String]) -> Result<NatLayout, NatError> {
    let nets: Vec<(IpAddr, u8)> = machine_network
        .iter()
        .map(|c| parse_cidr(c))
        .collect::<Result<_, _>>()?;
    let (v4, p4) = nets
        .iter()
        .find_map(|(a, p)| match a {
            IpAddr::V4(a) => Some((*a, *p)),
            _ => None,
        })
        .ok_or(NatError::NoIpv4)?;
    if !(8..=24).contains(&p4) {
        return Err(NatError::Ipv4Prefix {
            addr: v4,
            prefix: p4,
        });
    }
    if v4.is_loopback() || v4.is_multicast() || v4.octets()[0] == 0 || v4.octets()[0] >= 240 {
        return Err(NatError::Ipv4NotUnicast {
            addr: v4,
            prefix: p4,
        });
    }
    // A /0 keeps no bit of the address (a shift by 32 would overflow).
    let base4 = u32::from(v4) & u32::MAX.checked_shl(32 - u32::from(p4)).unwrap_or(0);
    let at4 = |n: u32| Ipv4Addr::from(base4 + n);
    let v6 = nets.iter().find_map(|(a, p)| match a {
        IpAddr::V6(a) => Some((*a, *p)),
        _ => None,
    });
    let ipv6 = match v6 {
        Some((addr, prefix))
            if addr.is_multicast() || addr.is_loopback() || addr.is_unspecified() =>
        {
            return Err(NatError::Ipv6NotUnicast { addr, prefix })
        }
        Some((a, p)) if (16..=120).contains(&p) => {
            let base = u128::from(a) & u128::MAX.checked_shl(128 - u32::from(p)).unwrap_or(0);
            let at = |n: u128| Ipv6Addr::from(base + n);
            Some((
                Ipv6Subnet {
                    host: at(1),
                    prefix: p,
                    dhcp_start: at(0x100),
                    dhcp_end: at(0x200),
                },
                at(0x10),
            ))
        }
        Some((addr, prefix)) => return Err(NatError::Ipv6Prefix { addr, prefix }),
        None => None,
    };
    Ok(NatLayout {
        ipv4: Ipv4Subnet {
            host: at4(1),
            prefix: p4,
            dhcp_start: at4(100),
            dhcp_end: at4(200),
        },
        ipv6: ipv6.map(|(s, _)| s),
        node_ipv4: at4(10),
        node_ipv6: ipv6.map(|(_, n)| n),
    })
}

/// The hostname the harness's DHCP gives the node, on every network (the user network's
/// slirp and a NAT network's dnsmasq): the name a site's DHCP gives a master, and the one the
/// kubelet registers the node under (docs/real-openshift.md, "The node's name").
pub fn node_hostname(cluster: &str) -> String {
    format!("{cluster}-master-0")
}

/// The names a single-node cluster needs to resolve to its node: the API from outside and
/// inside (`api-int`: the installed node's kubelet registers through it), and the routes the
/// install waits on (console, OAuth, the ingress canary) under `*.apps`.
pub fn cluster_names(cluster: &str, base_domain: &str) -> Vec<String> {
    let c = format!("{cluster}.{base_domain}");
    vec![
        format!("api.{c}"),
        format!("api-int.{c}"),
        format!("console-openshift-console.apps.{c}"),
        format!("oauth-openshift.apps.{c}"),
        format!("canary-openshift-ingress-canary.apps.{c}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_layout_sits_at_fixed_offsets_of_the_network() {
        let l = layout(&nets(&["10.0.2.0/24", "fd00:2::/64"])).unwrap();
        assert_eq!(l.ipv4.host, Ipv4Addr::new(10, 0, 2, 1));
        assert_eq!(l.node_ipv4, Ipv4Addr::new(10, 0, 2, 10));
        assert_eq!(l.ipv4.dhcp_end, Ipv4Addr::new(10, 0, 2, 200));
        assert_eq!(l.node_ipv6, Some("fd00:2::10".parse().unwrap()));
        let wide = layout(&nets(&["172.16.5.7/12"])).unwrap();
        assert_eq!(wide.ipv4.host, Ipv4Addr::new(172, 16, 0, 1));
    }

    #[test]
    fn networks_that_make_nonsense_addresses_are_refused_with_the_valid_range() {
        for (c, says) in [
            ("0.0.0.0/0", "from /8 to /24"),
            ("10.0.0.0/7", "from /8 to /24"),
            ("10.0.0.0/25", "from /8 to /24"),
            ("127.0.0.0/8", "unicast"),
            ("0.1.0.0/16", "unicast"),
            ("224.0.0.0/8", "unicast"),
            ("250.0.0.0/8", "unicast"),
        ] {
            let e = layout(&nets(&[c])).unwrap_err().to_string();
            assert!(e.contains(c) && e.contains(says), "{c}: {e}");
        }
        for (c, says) in [
            ("::/0", "unicast"),
            ("fd00::/8", "from /16 to /120"),
            ("fd00::/121", "from /16 to /120"),
            ("ff02::/16", "unicast"),
        ] {
            let e = layout(&nets(&["10.0.2.0/24", c])).unwrap_err().to_string();
            assert!(e.contains(says), "{c}: {e}");
        }
    }
}
