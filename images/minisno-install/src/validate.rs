//! Validation of an install-config for single-node bootstrap-in-place, with the real tool's
//! texts (docs/bip-contract.md §3) in its `field.path: Invalid value: ...: reason` shape. The first
//! error is reported (the real tool aggregates them).

use std::net::IpAddr;

use crate::install_config::InstallConfig;

/// A parsed `addr/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn is_ipv6(&self) -> bool {
        self.addr.is_ipv6()
    }
}

/// Parses `addr/prefix` like Go's `net.ParseCIDR`, with its error text.
pub fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let err = || format!("invalid CIDR address: {s}");
    let (addr, prefix) = s.split_once('/').ok_or_else(err)?;
    let addr: IpAddr = addr.parse().map_err(|_| err())?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) || prefix.len() > 3 {
        return Err(err());
    }
    let prefix: u8 = prefix.parse().map_err(|_| err())?;
    let max = if addr.is_ipv6() { 128 } else { 32 };
    if prefix > max {
        return Err(err());
    }
    Ok(Cidr { addr, prefix })
}

fn invalid(path: &str, value: &str, reason: &str) -> String {
    format!("{path}: Invalid value: {}: {reason}", go_quote(value))
}

fn required(path: &str, reason: &str) -> String {
    format!("{path}: Required value: {reason}")
}

fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// Whether `s` is a lowercase RFC 1123 subdomain.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

const DNS_REASON: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// Checks one list of networks: each entry a CIDR, and in dual stack IPv4 first.
fn check_networks(path: &str, cidrs: &[&str]) -> Result<(), String> {
    let parsed = cidrs
        .iter()
        .enumerate()
        .map(|(i, c)| parse_cidr(c).map_err(|e| invalid(&format!("{path}[{i}]"), c, &e)))
        .collect::<Result<Vec<_>, _>>()?;
    if let (Some(first), true) = (
        parsed.first(),
        parsed.iter().any(|c| c.is_ipv6()) && parsed.iter().any(|c| !c.is_ipv6()),
    ) {
        if first.is_ipv6() {
            return Err(invalid(
                path,
                &cidrs.join(", "),
                "IPv4 addresses must be listed before IPv6 addresses",
            ));
        }
    }
    Ok(())
}

/// Validates `config` as given (before defaults). `Err` holds the first error's text.
pub fn validate(config: &InstallConfig) -> Result<(), String> {
    match config.api_version.as_deref() {
        None | Some("") => return Err(required("apiVersion", "install-config version required")),
        Some("v1") => {}
        Some(other) => {
            return Err(invalid(
                "apiVersion",
                other,
                "install-config version must be \"v1\"",
            ))
        }
    }
    if config.metadata.name.is_empty() {
        return Err(required("metadata.name", "cluster name required"));
    }
    if !is_dns_subdomain(&config.metadata.name) {
        return Err(invalid("metadata.name", &config.metadata.name, DNS_REASON));
    }
    if config.base_domain.is_empty() {
        return Err(required("baseDomain", "base domain required"));
    }
    if !is_dns_subdomain(&config.base_domain) {
        return Err(invalid("baseDomain", &config.base_domain, DNS_REASON));
    }
    validate_pull_secret(config.pull_secret.as_deref())?;
    validate_networking(config)?;
    validate_platform(config)?;
    validate_bootstrap_in_place(config)
}

fn validate_pull_secret(pull_secret: Option<&str>) -> Result<(), String> {
    const REDACTED: &str = "<redacted>";
    let ps = match pull_secret {
        None => return Err(required("pullSecret", "the pull secret is required")),
        Some(ps) if ps.trim().is_empty() => {
            return Err(required("pullSecret", "the pull secret is required"))
        }
        Some(ps) => ps,
    };
    // serde_json's messages name positions, never the input, so they are safe to show.
    let value: serde_json::Value = serde_json::from_str(ps).map_err(|e| {
        invalid(
            "pullSecret",
            REDACTED,
            &format!("failed to parse pull secret: {e}"),
        )
    })?;
    if !value.get("auths").is_some_and(serde_json::Value::is_object) {
        return Err(invalid("pullSecret", REDACTED, "auths required"));
    }
    Ok(())
}

fn validate_networking(config: &InstallConfig) -> Result<(), String> {
    let Some(n) = &config.networking else {
        return Ok(());
    };
    if let Some(t) = n.network_type.as_deref() {
        if t == "OpenShiftSDN" {
            return Err(invalid(
                "networking.networkType",
                t,
                "networkType OpenShiftSDN is not supported, please use OVNKubernetes",
            ));
        }
        if t != "OVNKubernetes" {
            return Err(invalid(
                "networking.networkType",
                t,
                "networkType must be OVNKubernetes for single-node bootstrap-in-place",
            ));
        }
    }
    let machine: Vec<&str> = n.machine_network.iter().map(|m| m.cidr.as_str()).collect();
    check_networks("networking.machineNetwork", &machine)?;
    let cluster: Vec<&str> = n.cluster_network.iter().map(|m| m.cidr.as_str()).collect();
    check_networks("networking.clusterNetwork", &cluster)?;
    for (i, entry) in n.cluster_network.iter().enumerate() {
        if let (Some(hp), Ok(c)) = (entry.host_prefix, parse_cidr(&entry.cidr)) {
            let max = if c.is_ipv6() { 128 } else { 32 };
            if u32::from(c.prefix) > hp || hp > max {
                return Err(invalid(
                    &format!("networking.clusterNetwork[{i}].hostPrefix"),
                    &hp.to_string(),
                    "cluster network host subnetwork prefix must not be larger size than CIDR",
                ));
            }
        }
    }
    let service: Vec<&str> = n.service_network.iter().map(String::as_str).collect();
    check_networks("networking.serviceNetwork", &service)
}

fn validate_platform(config: &InstallConfig) -> Result<(), String> {
    let keys: Vec<&str> = config.platform.keys().map(String::as_str).collect();
    match keys.as_slice() {
        [] => Err(required(
            "platform",
            "must specify one of the platforms (none for bootstrap-in-place)",
        )),
        ["none"] => Ok(()),
        [one] => Err(invalid(
            "platform",
            one,
            "only platform none is supported for bootstrap-in-place",
        )),
        many => Err(invalid(
            "platform",
            &many.join(", "),
            "must only specify a single type of platform",
        )),
    }
}

fn validate_bootstrap_in_place(config: &InstallConfig) -> Result<(), String> {
    let replicas = config.control_plane_replicas();
    if replicas != 1 {
        return Err(invalid(
            "controlPlane.replicas",
            &replicas.to_string(),
            "bootstrap in place requires a single ControlPlane replica",
        ));
    }
    let compute = config.compute_replicas();
    if compute != 0 {
        return Err(invalid(
            "compute.replicas",
            &compute.to_string(),
            "Total number of Control Plane and Compute nodes must be exactly 1 for bootstrap in place (compute replicas must be 0; omitted means 3)",
        ));
    }
    let Some(bip) = &config.bootstrap_in_place else {
        return Err(required(
            "bootstrapInPlace",
            "bootstrapInPlace is required when creating a single node bootstrap-in-place ignition",
        ));
    };
    if bip.installation_disk.is_empty() {
        return Err(invalid(
            "bootstrapInPlace.installationDisk",
            "",
            "installationDisk must be set the target disk drive for the installation",
        ));
    }
    // No format check on installationDisk: the real tool has none (docs/bip-contract.md §3).
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install_config::{parse, tests::VALID};

    fn check(text: &str) -> Result<(), String> {
        validate(&parse(text).unwrap())
    }

    fn err(text: &str) -> String {
        check(text).unwrap_err()
    }

    #[test]
    fn cidrs() {
        assert_eq!(
            parse_cidr("10.0.0.0/16").unwrap(),
            Cidr {
                addr: "10.0.0.0".parse().unwrap(),
                prefix: 16
            }
        );
        assert!(parse_cidr("fd00::/64").unwrap().is_ipv6());
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "fd00::/129",
            "nope/8",
            "10.0.0.0/",
            "1.2.3.4/+8",
        ] {
            assert_eq!(
                parse_cidr(bad).unwrap_err(),
                format!("invalid CIDR address: {bad}")
            );
        }
    }

    #[test]
    fn valid_passes() {
        check(VALID).unwrap();
    }

    #[test]
    fn dual_stack_ipv4_first_passes() {
        let t = VALID
            .replace(
                "  - cidr: 192.168.126.0/24\n",
                "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
            )
            .replace(
                "    hostPrefix: 23\n",
                "    hostPrefix: 23\n  - cidr: fd01::/48\n    hostPrefix: 64\n",
            )
            .replace("  - 172.30.0.0/16\n", "  - 172.30.0.0/16\n  - fd02::/112\n");
        check(&t).unwrap();
    }

    #[test]
    fn replicas() {
        let e = err(&VALID.replace("  replicas: 1\n", "  replicas: 3\n"));
        assert!(
            e.contains("bootstrap in place requires a single ControlPlane replica"),
            "{e}"
        );
        let e = err(&VALID.replace("  replicas: 1\n", ""));
        assert!(
            e.contains("bootstrap in place requires a single ControlPlane replica"),
            "{e}"
        );
        let e = err(&VALID.replace("  replicas: 0\n", "  replicas: 2\n"));
        assert!(
            e.contains("Total number of Control Plane and Compute nodes"),
            "{e}"
        );
    }

    #[test]
    fn bootstrap_in_place() {
        let e = err(&VALID.replace("bootstrapInPlace:\n  installationDisk: /dev/vda\n", ""));
        assert!(
            e.contains(
                "bootstrapInPlace is required when creating a single node bootstrap-in-place ignition"
            ),
            "{e}"
        );
        let e = err(&VALID.replace("installationDisk: /dev/vda", "installationDisk: \"\""));
        assert!(
            e.contains("installationDisk must be set the target disk drive for the installation"),
            "{e}"
        );
        // No format check, as in the real tool.
        check(&VALID.replace("/dev/vda", "/dev/vda --extra")).unwrap();
    }

    #[test]
    fn network_type() {
        let e = err(&VALID.replace("OVNKubernetes", "OpenShiftSDN"));
        assert!(
            e.contains("networkType OpenShiftSDN is not supported, please use OVNKubernetes"),
            "{e}"
        );
    }

    #[test]
    fn ipv6_first() {
        let e = err(&VALID.replace(
            "  - cidr: 192.168.126.0/24\n",
            "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n",
        ));
        assert!(
            e.contains("IPv4 addresses must be listed before IPv6 addresses"),
            "{e}"
        );
        assert!(e.starts_with("networking.machineNetwork"), "{e}");
        let e = err(&VALID.replace("  - 172.30.0.0/16\n", "  - fd02::/112\n  - 172.30.0.0/16\n"));
        assert!(e.starts_with("networking.serviceNetwork"), "{e}");
        // Single-stack IPv6 is fine.
        check(&VALID.replace("192.168.126.0/24", "fd00:1::/64")).unwrap();
    }

    #[test]
    fn bad_cidr() {
        let e = err(&VALID.replace("192.168.126.0/24", "192.168.126.0/40"));
        assert!(e.contains("invalid CIDR address: 192.168.126.0/40"), "{e}");
    }

    #[test]
    fn metadata_domain_secret_platform() {
        assert!(err(&VALID.replace("  name: sno\n", "")).contains("metadata.name"));
        assert!(err(&VALID.replace("baseDomain: example.test\n", "")).contains("baseDomain"));
        assert!(err(&VALID.replace("apiVersion: v1", "apiVersion: v2")).contains("apiVersion"));
        let no_secret = VALID
            .lines()
            .filter(|l| !l.starts_with("pullSecret"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(err(&no_secret).contains("pullSecret: Required value"));
        let e = err(&VALID.replace("\"auths\"", "\"authz\""));
        assert_eq!(
            e,
            "pullSecret: Invalid value: \"<redacted>\": auths required"
        );
        let e = err(&VALID.replace("'{\"auths\"", "'{{\"auths\""));
        assert!(
            e.starts_with("pullSecret: Invalid value: \"<redacted>\""),
            "{e}"
        );
        assert!(!e.contains("c2VjcmV0"), "{e}");
        let e = err(&VALID.replace("  none: {}\n", "  baremetal: {}\n"));
        assert!(
            e.contains("only platform none is supported for bootstrap-in-place"),
            "{e}"
        );
    }
}
