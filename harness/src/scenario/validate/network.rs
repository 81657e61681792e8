//! `[network]`: the node's static addressing, checked against what the VM's network gives.
//!
//! Each address must be one the run can use, not only a well-formed one: inside the machine
//! network (the installer requires the node's address there), its gateway on the link, and on
//! the VM's network the address the harness reaches the node at, with that network's gateway
//! and DNS server. QEMU's user network is slirp's 10.0.2.0/24 (its IPv6, fec0::/64, is routed
//! nowhere), reached through loopback forwards to 10.0.2.15; a NAT network is laid out by
//! `hw::nat`, whose DNS names the cluster at the node's reserved address.

use std::net::IpAddr;

use toml::Spanned;

use super::{Ctx, ScenarioError};
use crate::hw::guest_net::{user_net, NIC_MACS};
use crate::hw::nat::{self, NatLayout};
use crate::scenario::model::*;

/// The validated `[network]`, or None without the table.
pub(super) fn network(cx: &Ctx, f: &ScenarioFile) -> Result<Option<NetworkSpec>, ScenarioError> {
    let Some(section) = &f.network else {
        return Ok(None);
    };
    let n = section.get_ref();
    let bond = n.bond.as_ref().map(|b| bond(cx, b)).transpose()?;
    let spec = match *n.mode.get_ref() {
        NetworkMode::Dhcp => dhcp(cx, n, bond)?,
        NetworkMode::Static => {
            let net = Net::of(f);
            let ipv4 = n
                .ipv4
                .as_ref()
                .map(|a| family(cx, &net, a, Family::V4))
                .transpose()?;
            let ipv6 = n
                .ipv6
                .as_ref()
                .map(|a| family(cx, &net, a, Family::V6))
                .transpose()?;
            if ipv4.is_none() && ipv6.is_none() {
                return Err(cx.at(&n.mode, "network: mode = \"static\" needs an address: ipv4 = { address = \"192.168.126.10/24\", gateway = \"192.168.126.1\" } and/or ipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }"));
            }
            let families = (ipv4.is_some(), ipv6.is_some());
            let dns = dns(cx, &net, n, section, families)?;
            NetworkSpec {
                mode: NetworkMode::Static,
                ipv4,
                ipv6,
                dns,
                bond,
            }
        }
    };
    Ok(Some(spec))
}

/// `mode = "dhcp"`: the network gives the addresses, so the table names none.
fn dhcp(
    cx: &Ctx,
    n: &NetworkSection,
    bond: Option<BondSpec>,
) -> Result<NetworkSpec, ScenarioError> {
    let given = [
        ("ipv4", n.ipv4.as_ref().map(|a| a.span())),
        ("ipv6", n.ipv6.as_ref().map(|a| a.span())),
        ("dns", n.dns.as_ref().map(|d| d.span())),
    ];
    if let Some((key, Some(span))) = given.into_iter().find(|(_, s)| s.is_some()) {
        return Err(cx.err(
            Some(span),
            format!("network.{key}: addresses are for mode = \"static\"; with mode = \"dhcp\" (the default) the node takes them from the network's DHCP: set mode = \"static\", or remove {key}"),
        ));
    }
    if let Some(b) = &n.bond {
        // The bond takes the MAC of whichever NIC joins it first, and DHCP answers by MAC (the
        // NAT network reserves the node's address for NIC 0's): only static addresses are
        // sure to land on the node.
        return Err(cx.at(b, "network.bond: a bond carries static addresses (mode = \"static\"): under DHCP its MAC is whichever NIC joins first, which the network's DHCP reservation does not follow; set mode = \"static\" with ipv4/ipv6 and dns, or remove the bond"));
    }
    Ok(NetworkSpec {
        mode: NetworkMode::Dhcp,
        ipv4: None,
        ipv6: None,
        dns: Vec::new(),
        bond,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

impl Family {
    fn key(self) -> &'static str {
        match self {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        }
    }
    fn of(a: IpAddr) -> Family {
        match a {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
    fn bits(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
    fn example(self) -> (&'static str, &'static str) {
        match self {
            Family::V4 => ("192.168.126.10/24", "192.168.126.1"),
            Family::V6 => ("fd00:1::10/64", "fd00:1::1"),
        }
    }
}

/// The VM's network as static addressing sees it: the machine network's CIDRs, and the
/// addresses the node, its gateway and its DNS server must have there.
struct Net {
    machine_network: Vec<String>,
    kind: NetKind,
}

enum NetKind {
    User,
    /// `None` when the machine network holds no layout (refused by `check_nat` first).
    Nat(Option<NatLayout>),
}

/// What the VM's network expects of one family: the node's address and prefix, the gateway.
struct Expected {
    address: IpAddr,
    prefix: u8,
    gateway: IpAddr,
    why: &'static str,
}

impl Net {
    fn of(f: &ScenarioFile) -> Net {
        let machine_network = f.install.machine_network.clone();
        let kind = match f.vm.network.get_ref() {
            GuestNetwork::User => NetKind::User,
            GuestNetwork::Nat => NetKind::Nat(nat::layout(&machine_network).ok()),
        };
        Net {
            machine_network,
            kind,
        }
    }

    fn machine_network_text(&self) -> String {
        let quoted: Vec<String> = self
            .machine_network
            .iter()
            .map(|c| format!("{c:?}"))
            .collect();
        format!("install.machine_network = [{}]", quoted.join(", "))
    }

    /// Why `family` cannot be addressed statically on this network, if it cannot.
    fn refuses(&self, family: Family) -> Option<String> {
        match (&self.kind, family) {
            (NetKind::User, Family::V6) => Some(
                "vm.network = \"user\" (QEMU's user network) is IPv4-only for static addressing: its IPv6 is slirp's fec0::/64, which nothing routes; for static IPv6 use vm.network = \"nat\" (--backend libvirt) with an IPv6 CIDR in install.machine_network (e.g. [\"192.168.126.0/24\", \"fd00:1::/64\"])".into(),
            ),
            (NetKind::Nat(Some(l)), Family::V6) if l.ipv6.is_none() => Some(format!(
                "this scenario's machine network has no IPv6 CIDR ({}), so its NAT network carries no IPv6; add one (e.g. \"fd00:1::/64\") or remove ipv6",
                self.machine_network_text()
            )),
            (NetKind::Nat(Some(l)), Family::V4) if l.ipv4.is_none() => Some(format!(
                "this scenario's machine network has no IPv4 CIDR ({}), so its NAT network carries no IPv4 (single-stack IPv6); add one (e.g. \"192.168.126.0/24\") or remove ipv4",
                self.machine_network_text()
            )),
            _ => None,
        }
    }

    /// The address, prefix and gateway this network gives the node in `family`.
    fn expected(&self, family: Family) -> Option<Expected> {
        match (&self.kind, family) {
            (NetKind::User, Family::V4) => Some(Expected {
                address: user_net::NODE.into(),
                prefix: user_net::PREFIX,
                gateway: user_net::GATEWAY.into(),
                why: "on vm.network = \"user\" (QEMU's user network, 10.0.2.0/24) the harness's loopback forwards reach 10.0.2.15 only, and slirp's gateway is 10.0.2.2",
            }),
            (NetKind::Nat(Some(l)), Family::V4) => {
                let (v4, node) = (l.ipv4?, l.node_ipv4?);
                Some(Expected {
                address: node.into(),
                prefix: v4.prefix,
                gateway: v4.host.into(),
                why: "on vm.network = \"nat\" the network's DNS names the cluster at the node's reserved address (the machine network's tenth) and the host at the first is the only gateway",
            })
            }
            (NetKind::Nat(Some(l)), Family::V6) => {
                let (v6, node) = (l.ipv6?, l.node_ipv6?);
                Some(Expected {
                    address: node.into(),
                    prefix: v6.prefix,
                    gateway: v6.host.into(),
                    why: "on vm.network = \"nat\" the network's DNS names the cluster at the node's reserved address (the machine network's ::10) and the host at ::1 is the only gateway",
                })
            }
            _ => None,
        }
    }

    /// The DNS servers this network has, and why only they will do.
    fn dns_servers(&self) -> Option<(Vec<IpAddr>, &'static str)> {
        match &self.kind {
            NetKind::User => Some((
                vec![user_net::DNS.into()],
                "on vm.network = \"user\" the DNS server is slirp's forwarder, 10.0.2.3",
            )),
            NetKind::Nat(Some(l)) => {
                let servers: Vec<IpAddr> = l
                    .ipv4
                    .map(|v4| IpAddr::from(v4.host))
                    .into_iter()
                    .chain(l.ipv6.map(|v6| IpAddr::from(v6.host)))
                    .collect();
                Some((
                    servers,
                    "on vm.network = \"nat\" the network's own DNS (at the host's address) is the one that answers the cluster's names",
                ))
            }
            NetKind::Nat(None) => None,
        }
    }
}

/// One family's `{ address, gateway }`: available on this network, well formed, the gateway
/// on the link, inside the machine network, and what the network gives the node.
fn family(
    cx: &Ctx,
    net: &Net,
    a: &Spanned<AddressSection>,
    family: Family,
) -> Result<StaticAddress, ScenarioError> {
    let key = family.key();
    if let Some(why) = net.refuses(family) {
        return Err(cx.at(a, format!("network.{key}: {why}")));
    }
    let sec = a.get_ref();
    let (address, prefix) = parse_cidr(cx, key, &sec.address, family)?;
    let gateway = parse_gateway(cx, key, &sec.gateway, family)?;
    check_on_link(cx, key, sec, (address, prefix), gateway)?;
    check_in_machine_network(cx, net, key, &sec.address, address)?;
    if let Some(want) = net.expected(family) {
        if (address, prefix) != (want.address, want.prefix) {
            return Err(cx.at(
                &sec.address,
                format!(
                    "network.{key}.address: {address}/{prefix} is not the node's address here, {}/{}: {}",
                    want.address, want.prefix, want.why
                ),
            ));
        }
        if gateway != want.gateway {
            return Err(cx.at(
                &sec.gateway,
                format!(
                    "network.{key}.gateway: {gateway} is not this network's gateway, {}: {}",
                    want.gateway, want.why
                ),
            ));
        }
    }
    Ok(StaticAddress {
        address,
        prefix,
        gateway,
    })
}

/// `ADDRESS/PREFIX` of `family`.
fn parse_cidr(
    cx: &Ctx,
    key: &str,
    s: &Spanned<String>,
    family: Family,
) -> Result<(IpAddr, u8), ScenarioError> {
    let (example, _) = family.example();
    let text = s.get_ref();
    let bad = |what: String| {
        cx.at(
            s,
            format!(
                "network.{key}.address: {text:?} {what}; write ADDRESS/PREFIX, e.g. {example:?}"
            ),
        )
    };
    let Some((addr, prefix)) = text.split_once('/') else {
        return Err(bad("has no prefix".into()));
    };
    let addr: IpAddr = addr
        .parse()
        .map_err(|_| bad(format!("is not an {} address", key_family(family))))?;
    if Family::of(addr) != family {
        return Err(cx.at(
            s,
            format!(
                "network.{key}.address: {text:?} is an {} address; it goes in {} = {{ ... }}",
                key_family(Family::of(addr)),
                Family::of(addr).key()
            ),
        ));
    }
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| (1..=family.bits()).contains(p))
        .ok_or_else(|| bad(format!("has no prefix from /1 to /{}", family.bits())))?;
    Ok((addr, prefix))
}

fn key_family(family: Family) -> &'static str {
    match family {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// A gateway: one address of `family`, without a prefix.
fn parse_gateway(
    cx: &Ctx,
    key: &str,
    s: &Spanned<String>,
    family: Family,
) -> Result<IpAddr, ScenarioError> {
    let (_, example) = family.example();
    let text = s.get_ref();
    match text.parse::<IpAddr>() {
        Ok(a) if Family::of(a) == family => Ok(a),
        _ => Err(cx.at(
            s,
            format!(
                "network.{key}.gateway: {text:?} is not an {} address (a gateway has no prefix), e.g. {example:?}",
                key_family(family)
            ),
        )),
    }
}

/// The node reaches its gateway on the link: inside the address's subnet, and neither the
/// node itself nor (for the address) the subnet's own address or IPv4 broadcast.
fn check_on_link(
    cx: &Ctx,
    key: &str,
    sec: &AddressSection,
    (address, prefix): (IpAddr, u8),
    gateway: IpAddr,
) -> Result<(), ScenarioError> {
    let subnet = Subnet::of(address, prefix);
    if subnet.reserved(address) {
        return Err(cx.at(
            &sec.address,
            format!("network.{key}.address: {address} is the subnet {subnet}'s own address or its broadcast, not a host's"),
        ));
    }
    if !subnet.contains(gateway) {
        return Err(cx.at(
            &sec.gateway,
            format!("network.{key}.gateway: {gateway} is outside the address's subnet {subnet}: the node reaches its gateway on the link, so it must be an address in {subnet}"),
        ));
    }
    if gateway == address {
        return Err(cx.at(
            &sec.gateway,
            format!("network.{key}.gateway: {gateway} is the node's own address; the gateway is another host in {subnet}"),
        ));
    }
    Ok(())
}

/// The installer requires the node's address inside `networking.machineNetwork`.
fn check_in_machine_network(
    cx: &Ctx,
    net: &Net,
    key: &str,
    s: &Spanned<String>,
    address: IpAddr,
) -> Result<(), ScenarioError> {
    let inside = net
        .machine_network
        .iter()
        .filter_map(|c| Subnet::parse(c))
        .any(|m| m.contains(address));
    if inside {
        return Ok(());
    }
    Err(cx.at(
        s,
        format!(
            "network.{key}.address: {address} is outside the machine network ({}): the installer requires the node's address inside it; use an address there, or change install.machine_network",
            net.machine_network_text()
        ),
    ))
}

/// `dns = [...]`: required with static addresses (no DHCP gives any), each an address of a
/// family the node has (NetworkManager takes each family's servers in its own setting, unused
/// when the family is disabled), and on the VM's network the DNS server it has.
fn dns(
    cx: &Ctx,
    net: &Net,
    n: &NetworkSection,
    section: &Spanned<NetworkSection>,
    (has_v4, has_v6): (bool, bool),
) -> Result<Vec<IpAddr>, ScenarioError> {
    const NEED: &str = "network.dns: mode = \"static\" needs the DNS servers, e.g. dns = [\"192.168.126.1\"]: with static addresses no DHCP gives the node any";
    let Some(list) = &n.dns else {
        return Err(cx.at(section, NEED));
    };
    if list.get_ref().is_empty() {
        return Err(cx.at(list, NEED));
    }
    let mut out: Vec<IpAddr> = Vec::new();
    for s in list.get_ref() {
        let a: IpAddr = s.get_ref().parse().map_err(|_| {
            cx.at(
                s,
                format!(
                    "network.dns: {:?} is not an IP address (such as \"192.168.126.1\" or \"fd00:1::1\", no prefix)",
                    s.get_ref()
                ),
            )
        })?;
        if out.contains(&a) {
            return Err(cx.at(s, format!("network.dns: {a} is given twice")));
        }
        let family = Family::of(a);
        if !(if family == Family::V4 { has_v4 } else { has_v6 }) {
            return Err(cx.at(
                s,
                format!(
                    "network.dns: {a} is an {} server, and the node has no {} address ({} = {{ ... }}): it would never be asked",
                    key_family(family),
                    key_family(family),
                    family.key()
                ),
            ));
        }
        if let Some((servers, why)) = net.dns_servers() {
            if !servers.contains(&a) {
                let names: Vec<String> = servers.iter().map(IpAddr::to_string).collect();
                return Err(cx.at(
                    s,
                    format!(
                        "network.dns: {a} is not a DNS server of this network ({}): {why}",
                        names.join(" or ")
                    ),
                ));
            }
        }
        out.push(a);
    }
    Ok(out)
}

/// `[network] bond`: active-backup over the VM's two NICs.
fn bond(cx: &Ctx, b: &Spanned<BondSection>) -> Result<BondSpec, ScenarioError> {
    let sec = b.get_ref();
    let mode = match sec.mode.get_ref().as_str() {
        "active-backup" => BondMode::ActiveBackup,
        other => {
            return Err(cx.at(
                &sec.mode,
                format!("network.bond.mode = {other:?}: only \"active-backup\" is supported (one NIC carries the traffic, the other takes over when it fails), which needs no switch support: 802.3ad needs a switch speaking LACP, which the VM's networks are not, and the load-balancing modes are not planned"),
            ))
        }
    };
    let nics = NIC_MACS.len();
    match sec.interfaces.get_ref() {
        toml::Value::Integer(n) if usize::try_from(*n) == Ok(nics) => {}
        other => {
            return Err(cx.at(
                &sec.interfaces,
                format!("network.bond.interfaces: {nics} (the VM's {nics} NICs, both in the bond), got {other}"),
            ))
        }
    }
    Ok(BondSpec {
        mode,
        interfaces: nics,
    })
}

/// An IPv4 or IPv6 subnet: its first address and prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Subnet {
    base: IpAddr,
    prefix: u8,
}

impl Subnet {
    fn of(a: IpAddr, prefix: u8) -> Subnet {
        let base = match a {
            IpAddr::V4(v) => IpAddr::V4((u32::from(v) & mask(32, prefix) as u32).into()),
            IpAddr::V6(v) => IpAddr::V6((u128::from(v) & mask(128, prefix)).into()),
        };
        Subnet { base, prefix }
    }

    /// A machine network's CIDR; None for one that is not (the installer refuses it).
    fn parse(cidr: &str) -> Option<Subnet> {
        let (a, p) = cidr.split_once('/')?;
        let a: IpAddr = a.parse().ok()?;
        let p: u8 = p.parse().ok()?;
        (p <= Family::of(a).bits()).then(|| Subnet::of(a, p))
    }

    fn contains(&self, a: IpAddr) -> bool {
        Family::of(a) == Family::of(self.base) && Subnet::of(a, self.prefix) == *self
    }

    /// The subnet's own address, and IPv4's broadcast: no host's, on subnets that have others.
    fn reserved(&self, a: IpAddr) -> bool {
        let bits = Family::of(a).bits();
        if self.prefix + 1 >= bits {
            return false;
        }
        let hosts = !mask(bits, self.prefix) & (u128::MAX >> (128 - u32::from(bits)));
        let host = match a {
            IpAddr::V4(v) => u128::from(u32::from(v)),
            IpAddr::V6(v) => u128::from(v),
        } & hosts;
        host == 0 || (bits == 32 && host == hosts)
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

/// The network mask of `prefix` in an address of `bits` bits, as the low `bits` of a u128.
fn mask(bits: u8, prefix: u8) -> u128 {
    let width = u128::MAX >> (128 - u32::from(bits));
    let host_bits = u32::from(bits - prefix.min(bits));
    width & !(u128::MAX.checked_shr(128 - host_bits).unwrap_or(0) & width)
}

#[cfg(test)]
mod tests;
