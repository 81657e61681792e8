//! A libvirt NAT network for a real single-node cluster on a real host: a bridge with dnsmasq
//! handing the node its reserved address and answering the names OpenShift needs.
//!
//! A NAT network puts its guests on a bridge in libvirtd's network namespace; on the harness's
//! own machines that may only be a namespace a test made (docs/host-facts.md), so the tests
//! run a private libvirtd in one (tests/libvirt_nat.rs), and the fixture's usual runs use
//! user-mode networking with loopback forwards (`domain.rs`). This is for a host where the
//! cluster should be a real machine on a real (virtual) LAN: the API and the routes reachable
//! by name from the host, the node getting its address from DHCP as on metal. The addresses
//! are laid out by `hw::nat`.
//!
//! The network carries the run id in its name, its bridge's name and its metadata (the same
//! `<sno:run>` element as the domain), so `gc` can find and remove what a killed run left.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::domain::Metadata;
pub use crate::hw::nat::{Ipv4Subnet, Ipv6Subnet};
use crate::vm::start::RunMeta;

/// Namespace of libvirt's dnsmasq passthrough options.
pub const DNSMASQ_XMLNS: &str = "http://libvirt.org/schemas/network/dnsmasq/1.0";
/// Linux interface names are at most 15 bytes (IFNAMSIZ less the terminating NUL).
pub const MAX_BRIDGE_NAME: usize = 15;
/// Prefix of the bridge name; the rest is a hash of the run id.
pub const BRIDGE_PREFIX: &str = "sno";

/// What the network needs to know about the run, the cluster and the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatNetwork {
    /// The libvirt name: `sno-` and what makes it unique on the host while the run lives (the
    /// domain's name does the same).
    pub name: String,
    pub run: RunMeta,
    /// `metadata.name` of the install-config.
    pub cluster_name: String,
    /// `baseDomain` of the install-config.
    pub base_domain: String,
    /// None on a single-stack IPv6 network.
    pub ipv4: Option<Ipv4Subnet>,
    /// IPv6 (dual stack, or single stack without `ipv4`).
    pub ipv6: Option<Ipv6Subnet>,
    pub node: NodeReservation,
    /// A PXE boot: the network's dnsmasq serves this directory over TFTP on the IPv4 host
    /// address and names the boot file in its DHCP answers (`<tftp>`, `<bootp>`). IPv4 only:
    /// validation refuses a network boot on a single-stack IPv6 network.
    pub tftp: Option<NetTftp>,
}

/// The TFTP side of a network boot on the run's network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetTftp {
    pub root: std::path::PathBuf,
    pub bootfile: String,
}

/// The node's fixed addresses: given by DHCP (by MAC for IPv4, by host name for DHCPv6, which
/// does not identify clients by MAC) and the target of every cluster name in DNS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReservation {
    /// The MAC of the domain's interface on this network, `52:54:00:...`.
    pub mac: String,
    pub hostname: String,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
}

impl NodeReservation {
    /// Where the harness reaches the node: IPv4 when the network has it, else IPv6
    /// (`NatLayout::node_address`).
    pub fn address(&self) -> IpAddr {
        match (self.ipv4, self.ipv6) {
            (Some(v4), _) => v4.into(),
            (None, Some(v6)) => v6.into(),
            (None, None) => unreachable!("a NAT network reserves at least one address"),
        }
    }
}

impl NatNetwork {
    /// `CLUSTER.DOMAIN`.
    pub fn cluster_domain(&self) -> String {
        format!("{}.{}", self.cluster_name, self.base_domain)
    }

    /// The names OpenShift needs to resolve to the node (`hw::nat::cluster_names`).
    pub fn node_hostnames(&self) -> Vec<String> {
        crate::hw::nat::cluster_names(&self.cluster_name, &self.base_domain)
    }
}

/// The bridge of network `network`: `sno` and the first 12 hex digits of the name's SHA-256,
/// 15 characters. A prefix of the name would not do: names of parallel runs can share their
/// start (a date), and two networks cannot have the same bridge.
pub fn bridge_name(network: &str) -> String {
    let hash = hex::encode(Sha256::digest(network.as_bytes()));
    let name = format!(
        "{BRIDGE_PREFIX}{}",
        &hash[..MAX_BRIDGE_NAME - BRIDGE_PREFIX.len()]
    );
    debug_assert!(name.len() <= MAX_BRIDGE_NAME);
    name
}

/// The network XML, indented, without an XML declaration.
pub fn nat_network_xml(n: &NatNetwork) -> String {
    let network = Network::new(n);
    let mut out = String::new();
    let mut ser = quick_xml::se::Serializer::new(&mut out);
    ser.indent(' ', 2);
    network
        .serialize(ser)
        .expect("the network structs serialise: every element and attribute name is valid XML");
    out.push('\n');
    out
}

#[derive(Serialize)]
#[serde(rename = "network")]
struct Network {
    #[serde(rename = "@xmlns:dnsmasq")]
    xmlns_dnsmasq: &'static str,
    name: String,
    metadata: Metadata,
    forward: Forward,
    bridge: Bridge,
    /// The cluster's domain is answered here and never forwarded to the host's resolvers.
    domain: DnsDomain,
    dns: Dns,
    ip: Vec<Ip>,
    #[serde(rename = "dnsmasq:options")]
    dnsmasq_options: DnsmasqOptions,
}

#[derive(Serialize)]
struct Forward {
    #[serde(rename = "@mode")]
    mode: &'static str,
}

#[derive(Serialize)]
struct Bridge {
    #[serde(rename = "@name")]
    name: String,
    /// One guest, no loops: spanning tree would only delay the link by its forward delay.
    #[serde(rename = "@stp")]
    stp: &'static str,
    #[serde(rename = "@delay")]
    delay: u32,
}

#[derive(Serialize)]
struct DnsDomain {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@localOnly")]
    local_only: &'static str,
}

#[derive(Serialize)]
struct Dns {
    /// `no`: names without a dot are answered here or not at all, never forwarded. The node
    /// looks its own host name up (sudo does), and when the host's upstream resolver cannot be
    /// reached, a forwarded plain name hangs until the client gives up.
    #[serde(rename = "@forwardPlainNames")]
    forward_plain_names: &'static str,
    host: Vec<DnsHost>,
}

#[derive(Serialize)]
struct DnsHost {
    #[serde(rename = "@ip")]
    ip: String,
    hostname: Vec<String>,
}

#[derive(Serialize)]
struct Ip {
    #[serde(rename = "@family", skip_serializing_if = "Option::is_none")]
    family: Option<&'static str>,
    #[serde(rename = "@address")]
    address: String,
    #[serde(rename = "@prefix")]
    prefix: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    tftp: Option<TftpRoot>,
    dhcp: Dhcp,
}

#[derive(Serialize)]
struct TftpRoot {
    #[serde(rename = "@root")]
    root: String,
}

#[derive(Serialize)]
struct Dhcp {
    range: DhcpRange,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<DhcpHost>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bootp: Option<Bootp>,
}

#[derive(Serialize)]
struct Bootp {
    #[serde(rename = "@file")]
    file: String,
}

#[derive(Serialize)]
struct DhcpRange {
    #[serde(rename = "@start")]
    start: String,
    #[serde(rename = "@end")]
    end: String,
}

#[derive(Serialize)]
struct DhcpHost {
    /// IPv4 only: libvirt refuses a MAC in an IPv6 host entry.
    #[serde(rename = "@mac", skip_serializing_if = "Option::is_none")]
    mac: Option<String>,
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@ip")]
    ip: String,
}

/// Options passed to dnsmasq as they are.
#[derive(Serialize)]
struct DnsmasqOptions {
    #[serde(rename = "dnsmasq:option")]
    option: Vec<DnsmasqOption>,
}

#[derive(Serialize)]
struct DnsmasqOption {
    #[serde(rename = "@value")]
    value: String,
}

impl Network {
    fn new(n: &NatNetwork) -> Self {
        let hostnames = n.node_hostnames();
        let mut dns_hosts = Vec::new();
        let mut ips = Vec::new();
        // Every other route of `*.apps` (downloads, monitoring, the user's own) resolves to
        // the node too: libvirt's <dns><host> takes only exact names, dnsmasq takes a domain.
        let apps = format!("apps.{}", n.cluster_domain());
        let mut options = Vec::new();
        if let (Some(net4), Some(node4)) = (&n.ipv4, n.node.ipv4) {
            dns_hosts.push(DnsHost {
                ip: node4.to_string(),
                hostname: hostnames.clone(),
            });
            options.push(DnsmasqOption {
                value: format!("address=/{apps}/{node4}"),
            });
            ips.push(Ip {
                family: None,
                address: net4.host.to_string(),
                prefix: net4.prefix,
                tftp: n.tftp.as_ref().map(|t| TftpRoot {
                    root: t.root.display().to_string(),
                }),
                dhcp: Dhcp {
                    range: DhcpRange {
                        start: net4.dhcp_start.to_string(),
                        end: net4.dhcp_end.to_string(),
                    },
                    host: Some(DhcpHost {
                        mac: Some(n.node.mac.clone()),
                        name: n.node.hostname.clone(),
                        ip: node4.to_string(),
                    }),
                    bootp: n.tftp.as_ref().map(|t| Bootp {
                        file: t.bootfile.clone(),
                    }),
                },
            });
        }
        if let Some(net6) = &n.ipv6 {
            let node6 = n.node.ipv6;
            if let Some(node6) = node6 {
                // AAAA records: dnsmasq answers each family's question from the hosts of
                // that family, so a single-stack IPv6 network has no A record at all.
                dns_hosts.push(DnsHost {
                    ip: node6.to_string(),
                    hostname: hostnames,
                });
                options.push(DnsmasqOption {
                    value: format!("address=/{apps}/{node6}"),
                });
            }
            ips.push(Ip {
                family: Some("ipv6"),
                address: net6.host.to_string(),
                prefix: net6.prefix,
                tftp: None,
                dhcp: Dhcp {
                    range: DhcpRange {
                        start: net6.dhcp_start.to_string(),
                        end: net6.dhcp_end.to_string(),
                    },
                    host: node6.map(|ip| DhcpHost {
                        mac: None,
                        name: n.node.hostname.clone(),
                        ip: ip.to_string(),
                    }),
                    bootp: None,
                },
            });
        }
        Network {
            xmlns_dnsmasq: DNSMASQ_XMLNS,
            name: n.name.clone(),
            metadata: Metadata::of(&n.run),
            forward: Forward { mode: "nat" },
            bridge: Bridge {
                name: bridge_name(&n.name),
                stp: "off",
                delay: 0,
            },
            domain: DnsDomain {
                name: n.cluster_domain(),
                local_only: "yes",
            },
            dns: Dns {
                forward_plain_names: "no",
                host: dns_hosts,
            },
            ip: ips,
            dnsmasq_options: DnsmasqOptions { option: options },
        }
    }
}

/// The run's NAT network, laid out in the scenario's machine network (`hw::nat`).
pub fn from_machine_network(
    machine_network: &[String],
    cluster_name: &str,
    base_domain: &str,
    run: RunMeta,
    name: String,
) -> Result<NatNetwork, String> {
    let layout = crate::hw::nat::layout(machine_network).map_err(|e| e.to_string())?;
    Ok(NatNetwork {
        name,
        run,
        cluster_name: cluster_name.into(),
        base_domain: base_domain.into(),
        ipv4: layout.ipv4,
        ipv6: layout.ipv6,
        node: NodeReservation {
            mac: crate::hw::guest_net::NIC_MACS[0].into(),
            hostname: crate::hw::nat::node_hostname(cluster_name),
            ipv4: layout.node_ipv4,
            ipv6: layout.node_ipv6,
        },
        tftp: None,
    })
}
