//! The keyfiles' exact text, read back as INI, and how they are written.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::scenario::model::BondMode;

/// A keyfile read back as INI: section -> key -> value, refusing what NetworkManager's GLib
/// key-file reader would not take (a pair outside a section, a section or key twice).
fn ini(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            assert!(!out.contains_key(name), "[{name}] twice in:\n{text}");
            out.insert(name.to_string(), BTreeMap::new());
            current = Some(name.to_string());
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{line:?} is no key=value:\n{text}"));
        let section = current
            .as_ref()
            .unwrap_or_else(|| panic!("{line:?} before any section"));
        let keys = out.get_mut(section).unwrap();
        assert!(
            keys.insert(k.to_string(), v.to_string()).is_none(),
            "{k} twice"
        );
    }
    out
}

fn get<'a>(
    f: &'a BTreeMap<String, BTreeMap<String, String>>,
    section: &str,
    key: &str,
) -> Option<&'a str> {
    f.get(section)?.get(key).map(String::as_str)
}

fn addr(a: &str, prefix: u8, g: &str) -> StaticAddress {
    StaticAddress {
        address: a.parse().unwrap(),
        prefix,
        gateway: g.parse().unwrap(),
    }
}

fn static_v4() -> NetworkSpec {
    NetworkSpec {
        mode: NetworkMode::Static,
        ipv4: Some(addr("192.168.126.10", 24, "192.168.126.1")),
        ipv6: None,
        dns: vec!["192.168.126.1".parse().unwrap()],
        bond: None,
    }
}

fn dual_bonded() -> NetworkSpec {
    NetworkSpec {
        mode: NetworkMode::Static,
        ipv4: Some(addr("192.168.126.10", 24, "192.168.126.1")),
        ipv6: Some(addr("fd00:1::10", 64, "fd00:1::1")),
        dns: vec![
            "fd00:1::1".parse().unwrap(),
            "192.168.126.1".parse().unwrap(),
        ],
        bond: Some(BondSpec {
            mode: BondMode::ActiveBackup,
            interfaces: 2,
        }),
    }
}

#[test]
fn plain_dhcp_needs_no_keyfile() {
    let n = NetworkSpec {
        mode: NetworkMode::Dhcp,
        ipv4: None,
        ipv6: None,
        dns: Vec::new(),
        bond: None,
    };
    assert!(keyfiles(&n).is_empty());
}

#[test]
fn a_static_ipv4_node_is_one_profile_matching_nic_0_by_mac_with_ipv6_disabled() {
    let files = keyfiles(&static_v4());
    assert_eq!(files.len(), 1);
    let k = &files[0];
    assert_eq!(k.file_name(), "nic0.nmconnection");
    assert_eq!(
        k.text,
        format!(
            "[connection]\nid=nic0\nuuid={}\ntype=ethernet\n\n\
             [ethernet]\nmac-address=52:54:00:12:34:56\n\n\
             [ipv4]\naddress1=192.168.126.10/24,192.168.126.1\ndns=192.168.126.1;\n\
             ignore-auto-dns=true\nmay-fail=false\nmethod=manual\n\n\
             [ipv6]\nmethod=disabled\n",
            uuid_of("nic0")
        )
    );
    let f = ini(&k.text);
    assert_eq!(
        f.keys().collect::<Vec<_>>(),
        ["connection", "ethernet", "ipv4", "ipv6"]
    );
    assert_eq!(get(&f, "connection", "id"), Some("nic0"));
    assert_eq!(get(&f, "connection", "interface-name"), None);
    assert_eq!(get(&f, "ethernet", "mac-address"), Some(NIC_MACS[0]));
    assert_eq!(get(&f, "ipv4", "method"), Some("manual"));
    assert_eq!(get(&f, "ipv6", "method"), Some("disabled"));
    assert_eq!(f["ipv6"].len(), 1);
}

#[test]
fn a_bond_carries_the_addresses_and_each_nic_is_its_port_by_mac() {
    let files = keyfiles(&dual_bonded());
    let names: Vec<String> = files.iter().map(Keyfile::file_name).collect();
    assert_eq!(
        names,
        [
            "bond0.nmconnection",
            "bond0-port0.nmconnection",
            "bond0-port1.nmconnection"
        ]
    );
    let bond = ini(&files[0].text);
    assert_eq!(get(&bond, "connection", "type"), Some("bond"));
    assert_eq!(get(&bond, "connection", "interface-name"), Some("bond0"));
    assert_eq!(get(&bond, "bond", "mode"), Some("active-backup"));
    assert_eq!(get(&bond, "bond", "miimon"), Some("100"));
    assert!(!bond.contains_key("ethernet"));
    assert_eq!(
        get(&bond, "ipv4", "address1"),
        Some("192.168.126.10/24,192.168.126.1")
    );
    // Each family gets its own DNS servers.
    assert_eq!(get(&bond, "ipv4", "dns"), Some("192.168.126.1;"));
    assert_eq!(get(&bond, "ipv6", "dns"), Some("fd00:1::1;"));
    assert_eq!(
        get(&bond, "ipv6", "address1"),
        Some("fd00:1::10/64,fd00:1::1")
    );
    assert_eq!(get(&bond, "ipv6", "method"), Some("manual"));
    assert_eq!(get(&bond, "ipv6", "ignore-auto-dns"), Some("true"));
    for (i, k) in files[1..].iter().enumerate() {
        let p = ini(&k.text);
        assert_eq!(
            p.keys().collect::<Vec<_>>(),
            ["connection", "ethernet"],
            "a port has no IP settings of its own"
        );
        assert_eq!(get(&p, "connection", "type"), Some("ethernet"));
        assert_eq!(get(&p, "connection", "master"), Some("bond0"));
        assert_eq!(get(&p, "connection", "slave-type"), Some("bond"));
        assert_eq!(get(&p, "ethernet", "mac-address"), Some(NIC_MACS[i]));
        assert_eq!(get(&p, "connection", "interface-name"), None);
    }
}

#[test]
fn an_ipv6_only_node_has_ipv4_disabled() {
    let mut n = dual_bonded();
    n.ipv4 = None;
    n.bond = None;
    n.dns = vec!["fd00:1::1".parse().unwrap()];
    let f = ini(&keyfiles(&n)[0].text);
    assert_eq!(get(&f, "ipv4", "method"), Some("disabled"));
    assert_eq!(f["ipv4"].len(), 1);
    assert_eq!(get(&f, "ipv6", "dns"), Some("fd00:1::1;"));
}

#[test]
fn uuids_are_derived_from_the_id_in_the_uuid_format() {
    assert_eq!(uuid_of("bond0"), uuid_of("bond0"));
    assert_ne!(uuid_of("bond0"), uuid_of("bond0-port0"));
    let ids = ["nic0", "bond0", "bond0-port0", "bond0-port1"];
    let uuids: std::collections::BTreeSet<String> = ids.iter().map(|i| uuid_of(i)).collect();
    assert_eq!(uuids.len(), ids.len());
    for u in uuids {
        let groups: Vec<&str> = u.split('-').collect();
        let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{u}");
        assert!(u
            .chars()
            .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert!(groups[2].starts_with('8'), "version 8: {u}");
        assert!("89ab".contains(&groups[3][..1]), "RFC 9562 variant: {u}");
    }
    // The same network makes the same files, byte for byte.
    assert_eq!(keyfiles(&dual_bonded()), keyfiles(&dual_bonded()));
}

#[test]
fn the_files_are_written_owner_only_whatever_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let files = keyfiles(&dual_bonded());
    // A file of the same name left readable by all is replaced, not kept with its mode.
    let stale = dir.path().join("bond0.nmconnection");
    std::fs::write(&stale, "old").unwrap();
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o644)).unwrap();
    let paths = write_keyfiles(dir.path(), &files).unwrap();
    assert_eq!(paths.len(), 3);
    for (p, k) in paths.iter().zip(&files) {
        assert_eq!(p, &dir.path().join(k.file_name()));
        let meta = std::fs::symlink_metadata(p).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600, "{}", p.display());
        assert_eq!(std::fs::read_to_string(p).unwrap(), k.text);
    }
    let mut listed: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "bond0-port0.nmconnection",
            "bond0-port1.nmconnection",
            "bond0.nmconnection"
        ],
        "nothing else left behind"
    );
}

#[test]
fn writing_into_a_directory_that_is_not_there_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let e = write_keyfiles(&gone, &keyfiles(&static_v4())).unwrap_err();
    assert_eq!(e.path, gone.join("nic0.nmconnection"));
}
