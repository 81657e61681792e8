//! The networking checks of the install-config asset: network type, the subnets themselves,
//! host prefixes, and the IP families of dual stack. The overlap checks between networks are
//! not reproduced.

use rand::seq::SliceRandom;

use super::field::{self, Value};
use crate::cidr::Cidr;
use crate::install_config::Networking;

/// The network plug-in whose cluster networks need a host prefix.
const OVN: &str = "OVNKubernetes";

fn parsed(cidrs: &[&str]) -> Vec<Cidr> {
    // Unparseable entries were refused when the file was read.
    cidrs.iter().filter_map(|c| Cidr::parse(c).ok()).collect()
}

/// Go's `validate.SubnetCIDR`.
fn subnet_error(c: &Cidr) -> Option<String> {
    if c.addr.is_unspecified() {
        return Some("address must be specified".into());
    }
    (c.network() != c.addr)
        .then(|| format!("invalid network address. got {c}, expecting {}", c.masked()))
}

/// Go's `validate.ServiceSubnetCIDR`.
fn service_subnet_error(c: &Cidr) -> Option<String> {
    subnet_error(c).or_else(|| match (c.bits(), c.prefix) {
        (32, p) if p < 12 => Some(
            "subnet size for IPv4 service network must be /12 or greater (/16 is recommended)"
                .into(),
        ),
        (128, p) if p < 108 => Some("subnet size for IPv6 service network should be /112".into()),
        _ => None,
    })
}

fn network_type_errors(n: &Networking) -> Vec<String> {
    let t = n.network_type.as_deref().unwrap_or_default();
    let path = "networking.networkType";
    let mut errs = Vec::new();
    if t.eq_ignore_ascii_case("Kuryr") {
        errs.push(field::invalid(
            path,
            Value::Str(t),
            "networkType Kuryr is not supported on OpenShift later than 4.14",
        ));
    }
    if t.eq_ignore_ascii_case("OpenShiftSDN") {
        errs.push(field::invalid(
            path,
            Value::Str(t),
            "networkType OpenShiftSDN is not supported, please use OVNKubernetes",
        ));
    }
    errs
}

fn cluster_network_errors(n: &Networking) -> Vec<String> {
    let mut errs = Vec::new();
    let uses_host_prefix = n.network_type.as_deref() == Some(OVN);
    let mut earlier: Vec<(Cidr, u32)> = Vec::new();
    for (i, entry) in n.cluster_network.iter().enumerate() {
        let Ok(c) = Cidr::parse(&entry.cidr) else {
            continue;
        };
        let path = format!("networking.clusterNetwork[{i}]");
        if let Some(e) = subnet_error(&c) {
            errs.push(field::invalid(
                &format!("{path}.cidr"),
                Value::Str(&c.to_string()),
                &e,
            ));
            continue;
        }
        let hp = entry.host_prefix.unwrap_or(0);
        if uses_host_prefix || hp != 0 {
            let reason = host_prefix_error(&c, hp, &earlier);
            if let Some(reason) = reason {
                errs.push(field::invalid(
                    &format!("{path}.hostPrefix"),
                    Value::Int(hp.into()),
                    &reason,
                ));
            }
        }
        earlier.push((c, hp));
    }
    errs
}

fn host_prefix_error(c: &Cidr, hp: u32, earlier: &[(Cidr, u32)]) -> Option<String> {
    if hp < u32::from(c.prefix) {
        return Some(format!(
            "cluster network host subnetwork prefix must not be larger size than CIDR {c}"
        ));
    }
    if c.bits() == 32 {
        return earlier
            .iter()
            .any(|(e, ehp)| !e.is_ipv6() && *ehp != hp)
            .then(|| {
                "cluster network host subnetwork prefix must be the same value for IPv4 networks"
                    .into()
            });
    }
    (hp != 64).then(|| "cluster network host subnetwork prefix must be 64 for IPv6 networks".into())
}

/// `validateNetworking`: the type and each subnet.
fn subnet_errors(n: &Networking) -> Vec<String> {
    let mut errs = network_type_errors(n);
    for (i, m) in n.machine_network.iter().enumerate() {
        if let Some(c) = parsed(&[&m.cidr]).first() {
            if let Some(e) = subnet_error(c) {
                errs.push(field::invalid(
                    &format!("networking.machineNetwork[{i}]"),
                    Value::Str(&c.to_string()),
                    &e,
                ));
            }
        }
    }
    for (i, s) in n.service_network.iter().enumerate() {
        if let Some(c) = parsed(&[s]).first() {
            if let Some(e) = service_subnet_error(c) {
                errs.push(field::invalid(
                    &format!("networking.serviceNetwork[{i}]"),
                    Value::Str(&c.to_string()),
                    &e,
                ));
            }
        }
    }
    errs.extend(cluster_network_errors(n));
    errs
}

/// One list of networks and the families in it.
struct Family {
    name: &'static str,
    cidrs: Vec<Cidr>,
}

impl Family {
    fn has_v4(&self) -> bool {
        self.cidrs.iter().any(|c| !c.is_ipv6())
    }
    fn has_v6(&self) -> bool {
        self.cidrs.iter().any(Cidr::is_ipv6)
    }
    fn joined(&self) -> String {
        self.cidrs
            .iter()
            .map(Cidr::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn families(n: &Networking) -> Vec<Family> {
    let machine: Vec<&str> = n.machine_network.iter().map(|m| m.cidr.as_str()).collect();
    let cluster: Vec<&str> = n.cluster_network.iter().map(|c| c.cidr.as_str()).collect();
    let service: Vec<&str> = n.service_network.iter().map(String::as_str).collect();
    vec![
        Family {
            name: "machineNetwork",
            cidrs: parsed(&machine),
        },
        Family {
            name: "serviceNetwork",
            cidrs: parsed(&service),
        },
        Family {
            name: "clusterNetwork",
            cidrs: parsed(&cluster),
        },
    ]
}

/// Platforms on which the IPv6 family may come first in dual stack.
const V6_PRIMARY_PLATFORMS: &[&str] = &["baremetal", "vsphere", "openstack"];
/// Platforms with dual stack at all (Azure only behind an experimental switch, not modelled).
const DUAL_STACK_PLATFORMS: &[&str] = &[
    "baremetal",
    "vsphere",
    "openstack",
    "ovirt",
    "nutanix",
    "none",
    "external",
];

/// `validateNetworkingIPVersion`. The service networks decide whether the cluster is dual stack.
/// The real tool walks the three lists in Go map order, which changes from run to run: so does
/// the order of their errors here.
fn ip_version_errors(n: &Networking, platform: &str) -> Vec<String> {
    let mut fams = families(n);
    let service = &fams[1];
    let (v4, v6) = (service.has_v4(), service.has_v6());
    let mut errs = Vec::new();
    if v4 && v6 {
        if service.cidrs.len() != 2 {
            errs.push(field::invalid("networking.serviceNetwork", Value::Str(&service.joined()), "when installing dual-stack IPv4/IPv6 you must provide two service networks, one for each IP address type"));
        }
        if !DUAL_STACK_PLATFORMS.contains(&platform) {
            errs.push(field::invalid("networking", Value::Str("DualStack"), "dual-stack IPv4/IPv6 is not supported for this platform, specify only one type of address"));
        }
        let v6_primary_ok = V6_PRIMARY_PLATFORMS.contains(&platform);
        fams.shuffle(&mut rand::thread_rng());
        for f in &fams {
            errs.extend(family_errors(f, v6_primary_ok));
        }
    } else if v6 && !DUAL_STACK_PLATFORMS.contains(&platform) {
        errs.push(field::invalid(
            "networking",
            Value::Str("IPv6"),
            "single-stack IPv6 is not supported for this platform",
        ));
    } else if v4 && !v6 && service.cidrs.len() > 1 {
        errs.push(field::invalid(
            "networking.serviceNetwork",
            Value::Str(&service.joined()),
            "only one service network can be specified",
        ));
    }
    errs
}

fn family_errors(f: &Family, v6_primary_ok: bool) -> Vec<String> {
    let path = format!("networking.{}", f.name);
    let value = f.joined();
    let mut errs = Vec::new();
    match (f.has_v4(), f.has_v6()) {
        (true, false) => errs.push(field::invalid(
            &path,
            Value::Str(&value),
            "dual-stack IPv4/IPv6 requires an IPv6 network in this list",
        )),
        (false, true) => errs.push(field::invalid(
            &path,
            Value::Str(&value),
            "dual-stack IPv4/IPv6 requires an IPv4 network in this list",
        )),
        _ => {}
    }
    let v6_first = f.cidrs.first().is_some_and(Cidr::is_ipv6);
    if !v6_primary_ok && f.has_v4() && f.has_v6() && v6_first {
        errs.push(field::invalid(
            &path,
            Value::Str(&value),
            "IPv4 addresses must be listed before IPv6 addresses",
        ));
    }
    errs
}

/// Every networking error of a config whose defaults are applied, on `platform`.
pub fn errors(n: &Networking, platform: &str) -> Vec<String> {
    let mut errs = subnet_errors(n);
    errs.extend(ip_version_errors(n, platform));
    errs
}
