//! The address layout of a run's NAT network, laid out in the scenario's machine network: the
//! host (gateway and DNS) at the first address, the node at the tenth, a DHCP pool for
//! anything else from the hundredth to the two-hundredth. IPv4 needs a prefix of /24 or wider;
//! IPv6 gets the same layout in hex (::1, ::10, ::100 to ::200) and needs /120 or wider. The
//! machine network may have IPv4 alone, IPv6 alone (single-stack IPv6) or both (dual stack,
//! the first CIDR of each family). Validating a scenario and creating the libvirt network read
//! the same layout.

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

/// Where everything sits. At least one family is there (`layout` refuses a machine network
/// with neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatLayout {
    /// None on a single-stack IPv6 network.
    pub ipv4: Option<Ipv4Subnet>,
    /// None on a single-stack IPv4 network.
    pub ipv6: Option<Ipv6Subnet>,
    /// The node's reserved addresses, one per family the network has.
    pub node_ipv4: Option<Ipv4Addr>,
    pub node_ipv6: Option<Ipv6Addr>,
}

impl NatLayout {
    /// Single-stack IPv6: no IPv4 on the network.
    pub fn ipv6_only(&self) -> bool {
        self.ipv4.is_none()
    }

    /// The address the harness reaches the node at (SSH, the API): its IPv4 one when the
    /// network has IPv4, else its IPv6 one.
    pub fn node_address(&self) -> IpAddr {
        match (self.node_ipv4, self.node_ipv6) {
            (Some(v4), _) => v4.into(),
            (None, Some(v6)) => v6.into(),
            (None, None) => unreachable!("a layout has at least one family"),
        }
    }

    /// The host's address in the same family as `node_address`.
    pub fn host_address(&self) -> IpAddr {
        match (self.ipv4, self.ipv6) {
            (Some(v4), _) => v4.host.into(),
            (None, Some(v6)) => v6.host.into(),
            (None, None) => unreachable!("a layout has at least one family"),
        }
    }
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
    #[error("a NAT network needs an IPv4 or IPv6 CIDR in the machine network, and it has none")]
    NoNetwork,
    #[error("machine network {addr}/{prefix}: a NAT network needs a prefix from /8 to /24 (the node is at .10, DHCP at .100-.200)")]
    Ipv4Prefix { addr: Ipv4Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: a NAT network needs unicast addresses (not 0/8, 127/8, 224/4 or 240/4)")]
    Ipv4NotUnicast { addr: Ipv4Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: a NAT network needs unicast addresses (not ::, ::1 or ff00::/8)")]
    Ipv6NotUnicast { addr: Ipv6Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: a NAT network needs a prefix from /16 to /120 (the node is at ::10, DHCP at ::100-::200)")]
    Ipv6Prefix { addr: Ipv6Addr, prefix: u8 },
    #[error("machine network {addr}/{prefix}: link-local addresses (fe80::/10) cannot be a NAT network's: every link has them, and nothing routes them")]
    Ipv6LinkLocal { addr: Ipv6Addr, prefix: u8 },
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
    let v4 = nets.iter().find_map(|(a, p)| match a {
        IpAddr::V4(a) => Some((*a, *p)),
        _ => None,
    });
    let v6 = nets.iter().find_map(|(a, p)| match a {
        IpAddr::V6(a) => Some((*a, *p)),
        _ => None,
    });
    let ipv4 = v4.map(|(a, p)| ipv4_subnet(a, p)).transpose()?;
    let ipv6 = v6.map(|(a, p)| ipv6_subnet(a, p)).transpose()?;
    if ipv4.is_none() && ipv6.is_none() {
        return Err(NatError::NoNetwork);
    }
    Ok(NatLayout {
        ipv4: ipv4.map(|(s, _)| s),
        ipv6: ipv6.map(|(s, _)| s),
        node_ipv4: ipv4.map(|(_, n)| n),
        node_ipv6: ipv6.map(|(_, n)| n),
    })
}

/// The IPv4 subnet of `v4/p4` and the node's address in it.
fn ipv4_subnet(v4: Ipv4Addr, p4: u8) -> Result<(Ipv4Subnet, Ipv4Addr), NatError> {
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
    Ok((
        Ipv4Subnet {
            host: at4(1),
            prefix: p4,
            dhcp_start: at4(100),
            dhcp_end: at4(200),
        },
        at4(10),
    ))
}

/// The IPv6 subnet of `addr/prefix` and the node's address in it.
fn ipv6_subnet(addr: Ipv6Addr, prefix: u8) -> Result<(Ipv6Subnet, Ipv6Addr), NatError> {
    if addr.is_multicast() || addr.is_loopback() || addr.is_unspecified() {
        return Err(NatError::Ipv6NotUnicast { addr, prefix });
    }
    if (addr.segments()[0] & 0xffc0) == 0xfe80 {
        return Err(NatError::Ipv6LinkLocal { addr, prefix });
    }
    if !(16..=120).contains(&prefix) {
        return Err(NatError::Ipv6Prefix { addr, prefix });
    }
    let base = u128::from(addr) & u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    let at = |n: u128| Ipv6Addr::from(base + n);
    Ok((
        Ipv6Subnet {
            host: at(1),
            prefix,
            dhcp_start: at(0x100),
            dhcp_end: at(0x200),
        },
        at(0x10),
    ))
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
        let v4 = l.ipv4.unwrap();
        assert_eq!(v4.host, Ipv4Addr::new(10, 0, 2, 1));
        assert_eq!(l.node_ipv4, Some(Ipv4Addr::new(10, 0, 2, 10)));
        assert_eq!(v4.dhcp_end, Ipv4Addr::new(10, 0, 2, 200));
        assert_eq!(l.node_ipv6, Some("fd00:2::10".parse().unwrap()));
        // Dual stack: the harness reaches the node over IPv4.
        assert_eq!(l.node_address(), IpAddr::from(Ipv4Addr::new(10, 0, 2, 10)));
        assert_eq!(l.host_address(), IpAddr::from(Ipv4Addr::new(10, 0, 2, 1)));
        assert!(!l.ipv6_only());
        let wide = layout(&nets(&["172.16.5.7/12"])).unwrap();
        assert_eq!(wide.ipv4.unwrap().host, Ipv4Addr::new(172, 16, 0, 1));
        assert_eq!((wide.ipv6, wide.node_ipv6), (None, None));
    }

    #[test]
    fn an_ipv6_only_machine_network_lays_out_ipv6_alone() {
        let l = layout(&nets(&["fd00:1::/64"])).unwrap();
        assert!(l.ipv6_only());
        assert_eq!((l.ipv4, l.node_ipv4), (None, None));
        let v6 = l.ipv6.unwrap();
        assert_eq!(v6.host.to_string(), "fd00:1::1");
        assert_eq!(v6.prefix, 64);
        assert_eq!(
            (v6.dhcp_start.to_string(), v6.dhcp_end.to_string()),
            ("fd00:1::100".into(), "fd00:1::200".into())
        );
        assert_eq!(l.node_address().to_string(), "fd00:1::10");
        assert_eq!(l.host_address().to_string(), "fd00:1::1");
        // The host bits of the CIDR are dropped, as for IPv4.
        let l = layout(&nets(&["fd00:7::abcd/112"])).unwrap();
        assert_eq!(l.node_address().to_string(), "fd00:7::10");
    }

    #[test]
    fn a_machine_network_without_any_cidr_has_no_layout() {
        let e = layout(&[]).unwrap_err().to_string();
        assert!(e.contains("needs an IPv4 or IPv6 CIDR"), "{e}");
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
            ("fe80::/64", "link-local"),
        ] {
            let e = layout(&nets(&["10.0.2.0/24", c])).unwrap_err().to_string();
            assert!(e.contains(says), "{c}: {e}");
            // The same alone (single-stack IPv6).
            let e = layout(&nets(&[c])).unwrap_err().to_string();
            assert!(e.contains(says), "{c} alone: {e}");
        }
    }
}
