//! `[network]` as written (how the node's NetworkManager is set up, as a bare-metal site sets
//! it up in the live ISO with keyfiles) and the validated network.

use std::net::IpAddr;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use super::syntax::spanned_choice;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    #[serde(default = "default_mode", deserialize_with = "spanned_choice")]
    pub mode: Spanned<NetworkMode>,
    pub ipv4: Option<Spanned<AddressSection>>,
    pub ipv6: Option<Spanned<AddressSection>>,
    pub dns: Option<Spanned<Vec<Spanned<String>>>>,
    pub bond: Option<Spanned<BondSection>>,
}

fn default_mode() -> Spanned<NetworkMode> {
    Spanned::new(0..0, NetworkMode::Dhcp)
}

/// How the node gets its addresses (`[network] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// From the network's DHCP (and router advertisements), as the live system does by default.
    #[default]
    Dhcp,
    /// The addresses, gateways and DNS servers of the table, as keyfiles with `method=manual`.
    Static,
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Dhcp => "dhcp",
            NetworkMode::Static => "static",
        }
    }
}

/// `ipv4 = { address = "192.168.126.10/24", gateway = "192.168.126.1" }`, as written: both
/// strings, read by the validation (which names the line of a bad one).
#[derive(Debug)]
pub struct AddressSection {
    pub address: Spanned<String>,
    pub gateway: Spanned<String>,
}

const ADDRESS_USAGE: &str =
    "a table such as { address = \"192.168.126.10/24\", gateway = \"192.168.126.1\" }";

// By hand around derived fields: for a value that is not a table, serde's error would say
// "expected struct AddressSection".
impl<'de> Deserialize<'de> for AddressSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            address: Spanned<String>,
            gateway: Spanned<String>,
        }
        let x: Fields = table(d, ADDRESS_USAGE)?;
        Ok(AddressSection {
            address: x.address,
            gateway: x.gateway,
        })
    }
}

/// `bond = { mode = "active-backup", interfaces = 2 }`, as written: both values are checked by
/// the validation, so that a refused mode or count is told why, not only what would do.
#[derive(Debug)]
pub struct BondSection {
    pub mode: Spanned<String>,
    /// Any value (default 2): serde's own error for a wrong one would name a Rust type.
    pub interfaces: Spanned<toml::Value>,
}

const BOND_USAGE: &str = "a table such as { mode = \"active-backup\", interfaces = 2 }";

impl<'de> Deserialize<'de> for BondSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            mode: Spanned<String>,
            #[serde(default = "two")]
            interfaces: Spanned<toml::Value>,
        }
        let x: Fields = table(d, BOND_USAGE)?;
        Ok(BondSection {
            mode: x.mode,
            interfaces: x.interfaces,
        })
    }
}

fn two() -> Spanned<toml::Value> {
    Spanned::new(0..0, toml::Value::Integer(2))
}

/// An inline table read as `T`, whose error for a value that is not a table says `usage`.
fn table<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    usage: &'static str,
) -> Result<T, D::Error> {
    struct V<T>(&'static str, std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(self.0)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(V(usage, std::marker::PhantomData))
}

/// The validated `[network]`: what the keyfiles say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkSpec {
    pub mode: NetworkMode,
    /// Static only.
    pub ipv4: Option<StaticAddress>,
    /// Static only.
    pub ipv6: Option<StaticAddress>,
    /// Static only: the DNS servers, in the order given.
    pub dns: Vec<IpAddr>,
    pub bond: Option<BondSpec>,
}

/// One family's static address: `address/prefix` on the node, and the default gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StaticAddress {
    pub address: IpAddr,
    pub prefix: u8,
    pub gateway: IpAddr,
}

impl NetworkSpec {
    /// The static addresses the node is given (none under DHCP).
    pub fn static_addresses(&self) -> Vec<IpAddr> {
        [self.ipv4, self.ipv6]
            .into_iter()
            .flatten()
            .map(|a| a.address)
            .collect()
    }
}

impl std::fmt::Display for StaticAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} via {}", self.address, self.prefix, self.gateway)
    }
}

/// A bond of the VM's NICs carrying the addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BondSpec {
    pub mode: BondMode,
    /// The ports: the VM's NICs 0 to `interfaces - 1` (`hw::guest_net::NIC_MACS`).
    pub interfaces: usize,
}

/// The bonding modes the harness can give (kernel bonding's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BondMode {
    /// One port carries the traffic, the other waits (mode 1): needs nothing of the switch.
    ActiveBackup,
}

impl BondMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BondMode::ActiveBackup => "active-backup",
        }
    }
}

impl NetworkSpec {
    /// The network in one line, as `plan` shows it: `static: 192.168.126.10/24 via
    /// 192.168.126.1, DNS 192.168.126.1, on an active-backup bond of 2 NICs`.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = [self.ipv4, self.ipv6]
            .iter()
            .flatten()
            .map(|a| a.to_string())
            .collect();
        if !self.dns.is_empty() {
            let dns: Vec<String> = self.dns.iter().map(|d| d.to_string()).collect();
            parts.push(format!("DNS {}", dns.join(" ")));
        }
        let mut s = self.mode.as_str().to_string();
        if !parts.is_empty() {
            s.push_str(": ");
            s.push_str(&parts.join(", "));
        }
        if let Some(b) = &self.bond {
            s.push_str(&format!(
                ", on an {} bond of {} NICs",
                b.mode.as_str(),
                b.interfaces
            ));
        }
        s
    }
}
