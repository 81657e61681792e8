//! `[network]` through the parser: what a valid table becomes, and every refusal's words,
//! line and column.

use std::net::IpAddr;
use std::path::Path;

use crate::scenario::model::{BondMode, NetworkMode, StaticAddress};
use crate::scenario::{parse_str, Scenario, ScenarioError};

/// A fixture scenario on QEMU's user network, its machine network the default 10.0.2.0/24.
const USER: &str = r#"name = "n"
profile = "fixture"

[[disks]]
id = "install"
size = "8GiB"

[install]
installation_disk = { by = "id", disk = "install" }
"#;

/// The same on a NAT network in 192.168.126.0/24.
const NAT: &str = r#"name = "n"
profile = "fixture"

[vm]
network = "nat"

[[disks]]
id = "install"
size = "8GiB"

[install]
installation_disk = { by = "id", disk = "install" }
machine_network = ["192.168.126.0/24"]
"#;

/// `base` with its `[network]` table made of `lines`.
fn text(base: &str, lines: &str) -> String {
    format!("{base}\n[network]\n{lines}\n")
}

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    parse_str(Path::new("s.toml"), text)
}

fn dual(base: &str) -> String {
    base.replace(
        "[\"192.168.126.0/24\"]",
        "[\"192.168.126.0/24\", \"fd00:1::/64\"]",
    )
}

/// 1-based line and column of the first `needle` in `text`.
fn at(text: &str, needle: &str) -> (usize, usize) {
    let i = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} in {text}"));
    let line = text[..i].matches('\n').count() + 1;
    let col = i - text[..i].rfind('\n').map_or(0, |n| n + 1) + 1;
    (line, col)
}

/// The refusal of `lines` on `base`: its message holds `says`, and it points at `needle`.
fn refused(base: &str, lines: &str, says: &str, needle: &str) -> ScenarioError {
    let t = text(base, lines);
    let e = parse(&t).expect_err(&t);
    assert!(e.message.contains(says), "wanted {says:?} in: {e}\n{t}");
    let (line, col) = at(&t, needle);
    assert_eq!(e.line, Some(line), "{e}\n{t}");
    assert_eq!(e.column, Some(col), "{e}\n{t}");
    assert!(
        e.to_string().starts_with(&format!("s.toml:{line}:{col}: ")),
        "{e}"
    );
    e
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

const USER_STATIC: &str = r#"mode = "static"
ipv4 = { address = "10.0.2.15/24", gateway = "10.0.2.2" }
dns = ["10.0.2.3"]"#;

const NAT_STATIC: &str = r#"mode = "static"
ipv4 = { address = "192.168.126.10/24", gateway = "192.168.126.1" }
dns = ["192.168.126.1"]"#;

#[test]
fn without_the_table_there_is_no_network_and_the_json_is_as_before() {
    let s = parse(USER).unwrap();
    assert_eq!(s.network, None);
    let v = serde_json::to_value(&s).unwrap();
    assert!(v.get("network").is_none(), "{v}");
}

#[test]
fn an_empty_table_is_dhcp_with_nothing_else() {
    let s = parse(&text(USER, "")).unwrap();
    let n = s.network.unwrap();
    assert_eq!(n.mode, NetworkMode::Dhcp);
    assert_eq!((n.ipv4, n.ipv6, n.bond), (None, None, None));
    assert!(n.dns.is_empty());
    assert_eq!(n.summary(), "dhcp");
}

#[test]
fn static_ipv4_on_the_user_network_is_slirps_layout() {
    let n = parse(&text(USER, USER_STATIC)).unwrap().network.unwrap();
    assert_eq!(n.mode, NetworkMode::Static);
    assert_eq!(
        n.ipv4,
        Some(StaticAddress {
            address: ip("10.0.2.15"),
            prefix: 24,
            gateway: ip("10.0.2.2"),
        })
    );
    assert_eq!(n.dns, [ip("10.0.2.3")]);
    assert_eq!(
        n.summary(),
        "static: 10.0.2.15/24 via 10.0.2.2, DNS 10.0.2.3"
    );
}

#[test]
fn dual_stack_on_a_nat_network_with_a_bond() {
    let lines = r#"mode = "static"
ipv4 = { address = "192.168.126.10/24", gateway = "192.168.126.1" }
ipv6 = { address = "fd00:1::10/64", gateway = "fd00:1::1" }
dns = ["192.168.126.1", "fd00:1::1"]
bond = { mode = "active-backup", interfaces = 2 }"#;
    let n = parse(&text(&dual(NAT), lines)).unwrap().network.unwrap();
    assert_eq!(n.ipv6.unwrap().address, ip("fd00:1::10"));
    assert_eq!(n.ipv6.unwrap().prefix, 64);
    assert_eq!(n.dns, [ip("192.168.126.1"), ip("fd00:1::1")]);
    let b = n.bond.unwrap();
    assert_eq!((b.mode, b.interfaces), (BondMode::ActiveBackup, 2));
    assert_eq!(
        n.summary(),
        "static: 192.168.126.10/24 via 192.168.126.1, fd00:1::10/64 via fd00:1::1, DNS 192.168.126.1 fd00:1::1, on an active-backup bond of 2 NICs"
    );
    // interfaces is 2 by default.
    let lines = format!("{NAT_STATIC}\nbond = {{ mode = \"active-backup\" }}");
    let n = parse(&text(NAT, &lines)).unwrap().network.unwrap();
    assert_eq!(n.bond.unwrap().interfaces, 2);
}

#[test]
fn dhcp_takes_no_addresses_and_no_bond() {
    refused(
        USER,
        "ipv4 = { address = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }",
        "network.ipv4: addresses are for mode = \"static\"",
        "{ address",
    );
    refused(
        USER,
        "mode = \"dhcp\"\ndns = [\"10.0.2.3\"]",
        "network.dns: addresses are for mode = \"static\"",
        "[\"10.0.2.3\"]",
    );
    refused(
        NAT,
        "bond = { mode = \"active-backup\" }",
        "network.bond: a bond carries static addresses",
        "{ mode",
    );
}

#[test]
fn static_needs_an_address_and_dns() {
    refused(
        USER,
        "mode = \"static\"\ndns = [\"10.0.2.3\"]",
        "mode = \"static\" needs an address: ipv4 = {",
        "\"static\"",
    );
    let no_dns = "mode = \"static\"\nipv4 = { address = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }";
    let e = parse(&text(USER, no_dns)).unwrap_err();
    assert!(
        e.message
            .contains("network.dns: mode = \"static\" needs the DNS servers"),
        "{e}"
    );
    assert!(e.line.is_some(), "{e}");
    refused(
        USER,
        &format!("{no_dns}\ndns = []"),
        "needs the DNS servers",
        "[]",
    );
}

#[test]
fn malformed_addresses_say_what_to_write() {
    let cases = [
        (
            "\"10.0.2.15\"",
            "\"10.0.2.15\" has no prefix; write ADDRESS/PREFIX, e.g. \"192.168.126.10/24\"",
        ),
        ("\"10.0.2.x/24\"", "is not an IPv4 address"),
        ("\"10.0.2.15/33\"", "has no prefix from /1 to /32"),
        ("\"10.0.2.15/0\"", "has no prefix from /1 to /32"),
        (
            "\"fd00::10/64\"",
            "\"fd00::10/64\" is an IPv6 address; it goes in ipv6 = { ... }",
        ),
    ];
    for (address, says) in cases {
        refused(
            USER,
            &format!("mode = \"static\"\nipv4 = {{ address = {address}, gateway = \"10.0.2.2\" }}\ndns = [\"10.0.2.3\"]"),
            says,
            address,
        );
    }
    for gateway in ["\"10.0.2.2/24\"", "\"fd00::1\"", "\"gw\""] {
        refused(
            USER,
            &format!("mode = \"static\"\nipv4 = {{ address = \"10.0.2.15/24\", gateway = {gateway} }}\ndns = [\"10.0.2.3\"]"),
            "network.ipv4.gateway: ",
            gateway,
        );
    }
    refused(
        USER,
        "mode = \"static\"\nipv4 = \"10.0.2.15/24\"",
        "expected a table such as { address = \"192.168.126.10/24\", gateway = \"192.168.126.1\" }",
        "\"10.0.2.15/24\"",
    );
}

#[test]
fn the_gateway_is_on_the_link_and_the_address_a_hosts() {
    let addr = |a: &str, g: &str| {
        format!("mode = \"static\"\nipv4 = {{ address = \"{a}\", gateway = \"{g}\" }}\ndns = [\"192.168.126.1\"]")
    };
    refused(
        NAT,
        &addr("192.168.126.10/24", "192.168.127.1"),
        "network.ipv4.gateway: 192.168.127.1 is outside the address's subnet 192.168.126.0/24",
        "\"192.168.127.1\"",
    );
    refused(
        NAT,
        &addr("192.168.126.10/24", "192.168.126.10"),
        "is the node's own address",
        "\"192.168.126.10\"",
    );
    refused(
        NAT,
        &addr("192.168.126.0/24", "192.168.126.1"),
        "192.168.126.0 is the subnet 192.168.126.0/24's own address or its broadcast",
        "\"192.168.126.0/24\", gateway",
    );
    refused(
        NAT,
        &addr("192.168.126.255/24", "192.168.126.1"),
        "its broadcast",
        "\"192.168.126.255/24\"",
    );
}

#[test]
fn an_address_outside_the_machine_network_is_refused_naming_it() {
    refused(
        NAT,
        "mode = \"static\"\nipv4 = { address = \"192.168.127.10/24\", gateway = \"192.168.127.1\" }\ndns = [\"192.168.126.1\"]",
        "network.ipv4.address: 192.168.127.10 is outside the machine network (install.machine_network = [\"192.168.126.0/24\"])",
        "\"192.168.127.10/24\"",
    );
    refused(
        &dual(NAT),
        "mode = \"static\"\nipv6 = { address = \"fd00:2::10/64\", gateway = \"fd00:2::1\" }\ndns = [\"fd00:1::1\"]",
        "fd00:2::10 is outside the machine network",
        "\"fd00:2::10/64\"",
    );
}

#[test]
fn on_a_nat_network_the_node_has_its_reserved_address_gateway_and_dns() {
    refused(
        NAT,
        "mode = \"static\"\nipv4 = { address = \"192.168.126.20/24\", gateway = \"192.168.126.1\" }\ndns = [\"192.168.126.1\"]",
        "192.168.126.20/24 is not the node's address here, 192.168.126.10/24",
        "\"192.168.126.20/24\"",
    );
    refused(
        NAT,
        "mode = \"static\"\nipv4 = { address = \"192.168.126.10/16\", gateway = \"192.168.126.1\" }\ndns = [\"192.168.126.1\"]",
        "is not the node's address here, 192.168.126.10/24",
        "\"192.168.126.10/16\"",
    );
    refused(
        NAT,
        "mode = \"static\"\nipv4 = { address = \"192.168.126.10/24\", gateway = \"192.168.126.254\" }\ndns = [\"192.168.126.1\"]",
        "192.168.126.254 is not this network's gateway, 192.168.126.1",
        "\"192.168.126.254\"",
    );
    refused(
        NAT,
        "mode = \"static\"\nipv4 = { address = \"192.168.126.10/24\", gateway = \"192.168.126.1\" }\ndns = [\"8.8.8.8\"]",
        "network.dns: 8.8.8.8 is not a DNS server of this network (192.168.126.1)",
        "\"8.8.8.8\"",
    );
}

#[test]
fn ipv6_needs_a_network_that_has_it() {
    let v6 = "mode = \"static\"\nipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }\ndns = [\"fd00:1::1\"]";
    let e = refused(
        USER,
        v6,
        "vm.network = \"user\" (QEMU's user network) is IPv4-only for static addressing",
        "{ address",
    );
    assert!(
        e.message.contains("use vm.network = \"nat\"")
            && e.message
                .contains("an IPv6 CIDR in install.machine_network"),
        "{e}"
    );
    refused(
        NAT,
        v6,
        "network.ipv6: this scenario's machine network has no IPv6 CIDR (install.machine_network = [\"192.168.126.0/24\"])",
        "{ address",
    );
    assert!(parse(&text(&dual(NAT), v6)).is_ok());
}

#[test]
fn on_the_user_network_only_slirps_addresses_will_do() {
    let with = |a: &str, g: &str, d: &str| {
        format!(
            "mode = \"static\"\nipv4 = {{ address = \"{a}\", gateway = \"{g}\" }}\ndns = [\"{d}\"]"
        )
    };
    let e = refused(
        USER,
        &with("10.0.2.20/24", "10.0.2.2", "10.0.2.3"),
        "10.0.2.20/24 is not the node's address here, 10.0.2.15/24",
        "\"10.0.2.20/24\"",
    );
    assert!(
        e.message.contains("loopback forwards reach 10.0.2.15 only"),
        "{e}"
    );
    refused(
        USER,
        &with("10.0.2.15/24", "10.0.2.1", "10.0.2.3"),
        "10.0.2.1 is not this network's gateway, 10.0.2.2",
        "\"10.0.2.1\"",
    );
    refused(
        USER,
        &with("10.0.2.15/24", "10.0.2.2", "10.0.2.1"),
        "10.0.2.1 is not a DNS server of this network (10.0.2.3)",
        "\"10.0.2.1\"]",
    );
    refused(
        USER,
        &with("192.168.1.15/24", "192.168.1.1", "10.0.2.3"),
        "outside the machine network (install.machine_network = [\"10.0.2.0/24\"])",
        "\"192.168.1.15/24\"",
    );
}

#[test]
fn dns_entries_are_addresses_each_once() {
    let lines = |d: &str| {
        format!("mode = \"static\"\nipv4 = {{ address = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }}\ndns = [{d}]")
    };
    refused(
        USER,
        &lines("\"10.0.2.3/32\""),
        "network.dns: \"10.0.2.3/32\" is not an IP address",
        "\"10.0.2.3/32\"",
    );
    let t = text(USER, &lines("\"10.0.2.3\", \"10.0.2.3\""));
    let e = parse(&t).unwrap_err();
    assert!(e.message.contains("10.0.2.3 is given twice"), "{e}");
    assert_eq!(e.column, Some(at(&t, ", \"10.0.2.3\"").1 + 2), "{e}");
}

#[test]
fn a_dns_server_needs_an_address_of_its_family() {
    let e = refused(
        &dual(NAT),
        "mode = \"static\"\nipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }\ndns = [\"fd00:1::1\", \"192.168.126.1\"]",
        "network.dns: 192.168.126.1 is an IPv4 server, and the node has no IPv4 address (ipv4 = { ... })",
        "\"192.168.126.1\"",
    );
    assert!(e.message.contains("never be asked"), "{e}");
}

#[test]
fn only_an_active_backup_bond_of_two_nics() {
    let e = refused(
        NAT,
        &format!("{NAT_STATIC}\nbond = {{ mode = \"802.3ad\" }}"),
        "network.bond.mode = \"802.3ad\": only \"active-backup\" is supported",
        "\"802.3ad\"",
    );
    assert!(e.message.contains("LACP"), "{e}");
    for n in ["3", "1", "\"two\""] {
        refused(
            NAT,
            &format!("{NAT_STATIC}\nbond = {{ mode = \"active-backup\", interfaces = {n} }}"),
            &format!("network.bond.interfaces: 2 (the VM's 2 NICs, both in the bond), got {n}"),
            &format!("= {n} }}")[2..],
        );
    }
    refused(
        NAT,
        &format!("{NAT_STATIC}\nbond = true"),
        "expected a table such as { mode = \"active-backup\", interfaces = 2 }",
        "true",
    );
}

#[test]
fn unknown_keys_and_words_are_refused_with_the_valid_ones() {
    refused(
        USER,
        "mod = \"static\"",
        "[network]: unknown field `mod`, expected one of `mode`, `ipv4`, `ipv6`, `dns`, `bond`; did you mean `mode`?",
        "mod =",
    );
    refused(
        USER,
        "mode = \"manual\"",
        "unknown variant `manual`, expected `dhcp` or `static`",
        "\"manual\"",
    );
    refused(
        USER,
        "mode = \"static\"\nipv4 = { adress = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }",
        "unknown field `adress`, expected `address` or `gateway`",
        "adress",
    );
    refused(
        NAT,
        &format!("{NAT_STATIC}\nbond = {{ mode = \"active-backup\", miimon = 100 }}"),
        "unknown field `miimon`, expected `mode` or `interfaces`",
        "miimon",
    );
}

/// `NAT` with a single-stack IPv6 machine network.
fn ipv6_only(base: &str) -> String {
    base.replace("[\"192.168.126.0/24\"]", "[\"fd00:1::/64\"]")
}

const STATIC_V6: &str = "mode = \"static\"\nipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }\ndns = [\"fd00:1::1\"]";

#[test]
fn single_stack_ipv6_on_a_nat_network_takes_the_nodes_static_ipv6() {
    let s = parse(&text(&ipv6_only(NAT), STATIC_V6)).unwrap();
    let n = s.network.unwrap();
    assert_eq!(n.ipv4, None);
    let v6 = n.ipv6.unwrap();
    assert_eq!(
        (v6.address, v6.prefix, v6.gateway),
        (ip("fd00:1::10"), 64, ip("fd00:1::1"))
    );
    assert_eq!(n.dns, [ip("fd00:1::1")]);
    // No IPv4 on the network: an IPv4 address, or a DNS server of IPv4, has nowhere to go.
    refused(
        &ipv6_only(NAT),
        "mode = \"static\"\nipv4 = { address = \"192.168.126.10/24\", gateway = \"192.168.126.1\" }\nipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }\ndns = [\"fd00:1::1\"]",
        "network.ipv4: this scenario's machine network has no IPv4 CIDR (install.machine_network = [\"fd00:1::/64\"]), so its NAT network carries no IPv4 (single-stack IPv6)",
        "{ address = \"192",
    );
    refused(
        &ipv6_only(NAT),
        "mode = \"static\"\nipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }\ndns = [\"fd00:1::53\"]",
        "network.dns: fd00:1::53 is not a DNS server of this network (fd00:1::1)",
        "\"fd00:1::53\"",
    );
    refused(
        &ipv6_only(NAT),
        "mode = \"static\"\nipv6 = { address = \"fd00:1::20/64\", gateway = \"fd00:1::1\" }\ndns = [\"fd00:1::1\"]",
        "fd00:1::20/64 is not the node's address here, fd00:1::10/64",
        "\"fd00:1::20/64\"",
    );
}

#[test]
fn single_stack_ipv6_on_a_nat_network_needs_the_address_static_and_the_boot_from_media() {
    const NEEDS: &str = "vm.network = \"nat\" on a single-stack IPv6 machine network (install.machine_network = [\"fd00:1::/64\"]) needs the node's IPv6 address given statically: [network] mode = \"static\", ipv6 = { address = \"fd00:1::10/64\", gateway = \"fd00:1::1\" }, dns = [\"fd00:1::1\"]";
    // Without the table: at vm.network.
    let t = ipv6_only(NAT);
    let e = parse(&t).unwrap_err();
    assert!(e.message.contains(NEEDS), "{e}");
    assert!(
        e.message
            .contains("DHCPv6 tells clients apart by their DUID"),
        "{e}"
    );
    assert_eq!(e.line, Some(at(&t, "network = \"nat\"").0), "{e}");
    // DHCP named: at the mode.
    refused(&ipv6_only(NAT), "mode = \"dhcp\"", NEEDS, "\"dhcp\"");
    // A boot that fetches its root filesystem: at boot.source.
    for source in ["minimal-iso", "pxe"] {
        let t = format!(
            "{}\n[boot]\nsource = \"{source}\"\n",
            text(&ipv6_only(NAT), STATIC_V6)
        );
        let e = parse(&t).unwrap_err();
        assert!(
            e.message.contains(&format!(
                "boot.source = \"{source}\" on a single-stack IPv6 NAT network"
            )) && e.message.contains(
                "the harness's boot server listens on the network's IPv4 host address only"
            ),
            "{e}"
        );
        assert_eq!(e.line, Some(at(&t, "source =").0), "{e}");
    }
    // Dual stack keeps DHCP and the boot server (reached over IPv4).
    assert!(parse(&dual(NAT)).is_ok());
}
