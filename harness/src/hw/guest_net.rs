//! The guest's network hardware as the scenario, both backends and the NetworkManager keyfiles
//! see it: the MAC addresses of its NICs, and the addresses QEMU's user network (slirp) gives.
//!
//! The VM has NIC 0, and NIC 1 when the scenario's `[network]` has a bond (its second port:
//! `VmSpec::second_nic`, on QEMU's hub with NIC 0 on the user network, a second interface
//! on a libvirt network). Each MAC is fixed, so that a
//! keyfile can match its NIC by MAC (`[ethernet] mac-address=`) whatever name the guest's
//! kernel gives it, and so that a libvirt NAT network can reserve the node's address for it.

use std::net::Ipv4Addr;

/// The MACs of NIC 0 and NIC 1: locally administered `52:54:00:...` addresses, QEMU's own
/// defaults for a machine's first and second NIC (`52:54:00:12:34:56`, then the last byte
/// counted up), so that the QEMU backend's guest sees what it always saw and libvirt's does
/// too (libvirt would pick random ones).
pub const NIC_MACS: [&str; 2] = ["52:54:00:12:34:56", "52:54:00:12:34:57"];

/// QEMU's user network (slirp), as its defaults lay it out (`-netdev user` without `net=`,
/// `host=`, `dns=` or `dhcpstart=`).
pub mod user_net {
    use super::Ipv4Addr;

    /// The network, `10.0.2.0/24`.
    pub const NETWORK: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 0);
    pub const PREFIX: u8 = 24;
    /// The host as the guest sees it: the gateway, and where the harness's boot server is
    /// reached.
    pub const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
    /// slirp's DNS forwarder.
    pub const DNS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);
    /// The first address slirp's DHCP hands out, and where a `hostfwd` without a guest address
    /// (the harness's loopback forwards) delivers: the node must sit here to be reached.
    pub const NODE: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_macs_are_distinct_locally_administered_unicast_addresses() {
        assert_ne!(NIC_MACS[0], NIC_MACS[1]);
        for mac in NIC_MACS {
            let bytes: Vec<u8> = mac
                .split(':')
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect();
            assert_eq!(bytes.len(), 6, "{mac}");
            assert_eq!(bytes[0] & 0b01, 0, "{mac}: multicast");
            assert_eq!(bytes[0] & 0b10, 0b10, "{mac}: not locally administered");
            assert!(mac.starts_with("52:54:00:"), "{mac}");
        }
    }

    #[test]
    fn the_user_network_addresses_are_inside_its_subnet() {
        let mask = u32::MAX << (32 - user_net::PREFIX);
        let net = u32::from(user_net::NETWORK);
        for a in [user_net::GATEWAY, user_net::DNS, user_net::NODE] {
            assert_eq!(u32::from(a) & mask, net, "{a}");
        }
    }
}
