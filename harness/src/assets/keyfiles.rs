//! The NetworkManager keyfiles of a scenario's `[network]`: what a bare-metal site writes for
//! its node's static addressing, one connection profile per file, `NAME.nmconnection`.
//!
//! A site embeds them into the live ISO (`coreos-installer iso network embed -k FILE`, now
//! also `iso customize --network-keyfile`), the live system's NetworkManager brings the node
//! up with them, and `coreos-installer install -n` (`--copy-network`) copies them to the
//! installed system. This module makes and writes them; `node_net` puts them on the node.
//!
//! The format follows nm-settings-keyfile(5) and nm-settings-nmcli(5): an INI file of one
//! section per setting. Ethernet profiles match their NIC by MAC (`[ethernet] mac-address`,
//! `hw::guest_net::NIC_MACS`) rather than by the name the guest's kernel gives it; a bond has
//! its own profile (`type=bond`, `[bond] mode=active-backup`, `miimon=100`, NetworkManager's
//! default link monitor) and one port profile per NIC (`master=`, `slave-type=bond`, no IP
//! settings of their own). A family the node is not given is `method=disabled`, as sites with
//! IPv4-only RHCOS nodes write it. NetworkManager ignores a keyfile that anyone but its owner
//! (root) can read or write, so the files are written 0600.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::hw::guest_net::NIC_MACS;
use crate::scenario::model::{BondSpec, NetworkMode, NetworkSpec, StaticAddress};
use crate::util::private::PRIVATE_FILE;
use crate::util::replace_file::{replace_file, WriteError};

/// The bond's interface name (the kernel's bonding device).
pub const BOND_INTERFACE: &str = "bond0";
/// The file name's ending NetworkManager reads keyfiles by.
pub const EXTENSION: &str = "nmconnection";

/// One connection profile: its `[connection] id` (also the file's name) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyfile {
    pub id: String,
    pub text: String,
}

impl Keyfile {
    /// `ID.nmconnection`.
    pub fn file_name(&self) -> String {
        format!("{}.{EXTENSION}", self.id)
    }
}

/// The profiles of `n`: none for plain DHCP (the live system's NetworkManager does DHCP on
/// every NIC by default, as a site that writes nothing gets), else one for NIC 0, or a bond
/// and its ports.
pub fn keyfiles(n: &NetworkSpec) -> Vec<Keyfile> {
    match &n.bond {
        None if n.mode == NetworkMode::Dhcp => Vec::new(),
        None => vec![addressed("nic0", Kind::Ethernet { mac: NIC_MACS[0] }, n)],
        Some(b) => bonded(b, n),
    }
}

/// A bond carrying the addresses, and one port profile per NIC.
fn bonded(b: &BondSpec, n: &NetworkSpec) -> Vec<Keyfile> {
    let mut out = vec![addressed(BOND_INTERFACE, Kind::Bond(b), n)];
    for (i, mac) in NIC_MACS.iter().take(b.interfaces).enumerate() {
        let id = format!("{BOND_INTERFACE}-port{i}");
        let mut w = Ini::default();
        connection(&mut w, &id, "ethernet", None);
        w.pair("master", BOND_INTERFACE);
        w.pair("slave-type", "bond");
        w.section("ethernet");
        w.pair("mac-address", mac);
        out.push(Keyfile { id, text: w.0 });
    }
    out
}

/// What carries the addresses.
enum Kind<'a> {
    Ethernet { mac: &'static str },
    Bond(&'a BondSpec),
}

/// The profile `id` of `kind` with `n`'s addresses.
fn addressed(id: &str, kind: Kind, n: &NetworkSpec) -> Keyfile {
    let mut w = Ini::default();
    match kind {
        Kind::Ethernet { mac } => {
            // No interface-name: the MAC alone picks the NIC.
            connection(&mut w, id, "ethernet", None);
            w.section("ethernet");
            w.pair("mac-address", mac);
        }
        Kind::Bond(b) => {
            connection(&mut w, id, "bond", Some(BOND_INTERFACE));
            w.section("bond");
            w.pair("miimon", "100");
            w.pair("mode", b.mode.as_str());
        }
    }
    let dns = |v6: bool| -> Vec<IpAddr> {
        n.dns
            .iter()
            .copied()
            .filter(|d| d.is_ipv6() == v6)
            .collect()
    };
    family(&mut w, "ipv4", n.mode, n.ipv4.as_ref(), &dns(false));
    family(&mut w, "ipv6", n.mode, n.ipv6.as_ref(), &dns(true));
    Keyfile {
        id: id.to_string(),
        text: w.0,
    }
}

/// `[connection]`: the id, a uuid derived from it, the type and, for a virtual device, the
/// interface it creates.
fn connection(w: &mut Ini, id: &str, kind: &str, interface: Option<&str>) {
    w.section("connection");
    w.pair("id", id);
    w.pair("uuid", &uuid_of(id));
    w.pair("type", kind);
    if let Some(i) = interface {
        w.pair("interface-name", i);
    }
}

/// `[ipv4]` or `[ipv6]`: DHCP (`auto`), the static address with its gateway and the family's
/// DNS servers, or `disabled` for a family a static node is not given.
fn family(
    w: &mut Ini,
    section: &str,
    mode: NetworkMode,
    address: Option<&StaticAddress>,
    dns: &[IpAddr],
) {
    w.section(section);
    match (mode, address) {
        (NetworkMode::Dhcp, _) => w.pair("method", "auto"),
        (NetworkMode::Static, None) => w.pair("method", "disabled"),
        (NetworkMode::Static, Some(a)) => {
            // `address1=ADDRESS/PREFIX,GATEWAY`: the keyfile form of an address with its
            // gateway (nm-settings-keyfile(5)).
            w.pair(
                "address1",
                &format!("{}/{},{}", a.address, a.prefix, a.gateway),
            );
            if !dns.is_empty() {
                // A keyfile list: each item followed by ';'.
                let list: String = dns.iter().map(|d| format!("{d};")).collect();
                w.pair("dns", &list);
            }
            w.pair("ignore-auto-dns", "true");
            w.pair("may-fail", "false");
            w.pair("method", "manual");
        }
    }
}

/// A UUID derived from the profile's id, so that the same scenario writes the same files:
/// RFC 9562's name-based version 8 from SHA-256 (version 5 would need SHA-1), in
/// the namespace of these keyfiles.
pub fn uuid_of(id: &str) -> String {
    let digest = Sha256::digest(format!("sno-harness/nmconnection/{id}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Writes `files` into `dir`, each `ID.nmconnection`, mode 0600 whatever the umask, and
/// returns their paths. `dir` is the run's private directory (the assets that go into the
/// ISO), never `--out`: the ISO is made from there.
pub fn write_keyfiles(dir: &Path, files: &[Keyfile]) -> Result<Vec<PathBuf>, WriteError> {
    files
        .iter()
        .map(|k| {
            let path = dir.join(k.file_name());
            replace_file(&path, k.text.as_bytes(), PRIVATE_FILE).map(|()| path)
        })
        .collect()
}

/// A keyfile's text, section by section: `[name]`, then `key=value` lines; a blank line
/// between sections.
#[derive(Default)]
struct Ini(String);

impl Ini {
    fn section(&mut self, name: &str) {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        self.0.push_str(&format!("[{name}]\n"));
    }
    fn pair(&mut self, key: &str, value: &str) {
        self.0.push_str(&format!("{key}={value}\n"));
    }
}

#[cfg(test)]
mod tests;
