use super::*;
use crate::install_config::{parse, tests::VALID};

fn no_fips_host() -> Host {
    Host {
        fips_enabled: None,
        skip_hostcrypt: false,
    }
}

fn errors(text: &str) -> Vec<String> {
    validate(&parse(text).unwrap().with_defaults(), &no_fips_host()).errors
}

fn one_error(text: &str) -> String {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    errs[0].clone()
}

fn dual_stack() -> String {
    VALID
        .replace(
            "  - cidr: 192.168.126.0/24\n",
            "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
        )
        .replace(
            "    hostPrefix: 23\n",
            "    hostPrefix: 23\n  - cidr: fd01::/48\n    hostPrefix: 64\n",
        )
        .replace("  - 172.30.0.0/16\n", "  - 172.30.0.0/16\n  - fd02::/112\n")
}

#[test]
fn the_sno_shape_and_dual_stack_ipv4_first_pass() {
    assert_eq!(errors(VALID), Vec::<String>::new());
    assert_eq!(errors(&dual_stack()), Vec::<String>::new());
    // Single-stack IPv6 is fine on platform none.
    let v6 = VALID
        .replace("192.168.126.0/24", "fd00:1::/64")
        .replace(
            "10.128.0.0/14\n    hostPrefix: 23",
            "fd01::/48\n    hostPrefix: 64",
        )
        .replace("172.30.0.0/16", "fd02::/112");
    assert_eq!(errors(&v6), Vec::<String>::new());
}

#[test]
fn what_the_real_command_does_not_refuse_passes() {
    // Compute replicas, other network types, other platforms: not this asset's business.
    assert_eq!(
        errors(&VALID.replace("  replicas: 0\n", "  replicas: 2\n")),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(&VALID.replace("OVNKubernetes", "Calico")),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(&VALID.replace("  none: {}\n", "  baremetal: {}\n")),
        Vec::<String>::new()
    );
    // The BiP checks are not install-config checks.
    assert_eq!(
        errors(&VALID.replace("  replicas: 1\n", "  replicas: 3\n")),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(&VALID.replace("bootstrapInPlace:\n  installationDisk: /dev/vda\n", "")),
        Vec::<String>::new()
    );
}

#[test]
fn network_types() {
    assert_eq!(
        one_error(&VALID.replace("OVNKubernetes", "OpenShiftSDN")),
        "networking.networkType: Invalid value: \"OpenShiftSDN\": networkType OpenShiftSDN is not supported, please use OVNKubernetes"
    );
    assert_eq!(
        one_error(&VALID.replace("OVNKubernetes", "Kuryr")),
        "networking.networkType: Invalid value: \"Kuryr\": networkType Kuryr is not supported on OpenShift later than 4.14"
    );
}

#[test]
fn ipv6_first_is_one_error_per_list_in_any_order() {
    let t = dual_stack()
        .replace(
            "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
            "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n",
        )
        .replace(
            "  - 172.30.0.0/16\n  - fd02::/112\n",
            "  - fd02::/112\n  - 172.30.0.0/16\n",
        );
    let mut errs = errors(&t);
    errs.sort();
    assert_eq!(
        errs,
        [
            "networking.machineNetwork: Invalid value: \"fd00:1::/64, 192.168.126.0/24\": IPv4 addresses must be listed before IPv6 addresses",
            "networking.serviceNetwork: Invalid value: \"fd02::/112, 172.30.0.0/16\": IPv4 addresses must be listed before IPv6 addresses",
        ]
    );
    // Only dual-stack service networks make the cluster dual stack.
    let machine_only = VALID.replace(
        "  - cidr: 192.168.126.0/24\n",
        "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n",
    );
    assert_eq!(errors(&machine_only), Vec::<String>::new());
}

#[test]
fn the_order_of_dual_stack_errors_varies_like_go_map_order() {
    let t = dual_stack()
        .replace(
            "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
            "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n",
        )
        .replace(
            "  - 172.30.0.0/16\n  - fd02::/112\n",
            "  - fd02::/112\n  - 172.30.0.0/16\n",
        );
    let orders: std::collections::HashSet<Vec<String>> = (0..64).map(|_| errors(&t)).collect();
    assert_eq!(orders.len(), 2, "{orders:#?}");
}

#[test]
fn dual_stack_needs_both_families_in_every_list() {
    let t = dual_stack().replace("  - cidr: fd00:1::/64\n", "");
    assert_eq!(
        one_error(&t),
        "networking.machineNetwork: Invalid value: \"192.168.126.0/24\": dual-stack IPv4/IPv6 requires an IPv6 network in this list"
    );
}

#[test]
fn subnets_and_host_prefixes() {
    assert_eq!(
        one_error(&VALID.replace("192.168.126.0/24", "192.168.126.1/24")),
        "networking.machineNetwork[0]: Invalid value: \"192.168.126.1/24\": invalid network address. got 192.168.126.1/24, expecting 192.168.126.0/24"
    );
    assert_eq!(
        one_error(&VALID.replace("hostPrefix: 23", "hostPrefix: 8")),
        "networking.clusterNetwork[0].hostPrefix: Invalid value: 8: cluster network host subnetwork prefix must not be larger size than CIDR 10.128.0.0/14"
    );
    assert_eq!(
        one_error(&VALID.replace("172.30.0.0/16", "172.0.0.0/8")),
        "networking.serviceNetwork[0]: Invalid value: \"172.0.0.0/8\": subnet size for IPv4 service network must be /12 or greater (/16 is recommended)"
    );
}

#[test]
fn names_and_api_version() {
    assert_eq!(
        one_error(&VALID.replace("  name: sno\n", "")),
        "metadata.name: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    assert!(one_error(&VALID.replace("baseDomain: example.test\n", ""))
        .starts_with("baseDomain: Invalid value: \"\": a lowercase RFC 1123"));
    assert_eq!(
        one_error(&VALID.replace("apiVersion: v1", "apiVersion: v2")),
        "apiVersion: Invalid value: \"v2\": install-config version must be \"v1\""
    );
    assert_eq!(
        one_error(&VALID.replace("apiVersion: v1\n", "")),
        "apiVersion: Required value: install-config version required"
    );
}

#[test]
fn errors_are_all_reported() {
    let t = VALID
        .replace("  name: sno\n", "  name: Sno\n")
        .replace("OVNKubernetes", "OpenShiftSDN");
    let errs = errors(&t);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].starts_with("metadata.name") && errs[1].starts_with("networking.networkType"));
    let text = Outcome {
        errors: errs,
        hostcrypt_bypassed: None,
    }
    .error_text()
    .unwrap();
    assert!(
        text.starts_with("[metadata.name: ") && text.ends_with("please use OVNKubernetes]"),
        "{text}"
    );
}

#[test]
fn pull_secret_shape_is_checked_without_showing_it() {
    assert_eq!(
        one_error(&VALID.replace("\"auths\"", "\"authz\"")),
        "pullSecret: Invalid value: \"<redacted>\": auths required"
    );
    assert_eq!(
        one_error(&VALID.replace("\"auth\":", "\"token\":")),
        "pullSecret: Invalid value: \"<redacted>\": \"quay.io\" requires either auth or credsStore"
    );
    let e = one_error(&VALID.replace("'{\"auths\"", "'{{\"auths\""));
    assert!(
        e.starts_with("pullSecret: Invalid value: \"<redacted>\""),
        "{e}"
    );
    assert!(!e.contains("c2VjcmV0"), "{e}");
}

#[test]
fn platform_proxy_policy_and_replicas() {
    assert_eq!(
        one_error(&VALID.replace("platform:\n  none: {}\n", "")),
        "platform: Invalid value: \"\": must specify one of the platforms (aws, azure, baremetal, external, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere)"
    );
    assert_eq!(
        one_error(&format!("{VALID}proxy:\n  noProxy: .example.test\n")),
        "proxy: Required value: must include httpProxy or httpsProxy"
    );
    assert_eq!(
        one_error(&format!("{VALID}additionalTrustBundlePolicy: Sometimes\n")),
        "additionalTrustBundlePolicy: Invalid value: \"Sometimes\": supported values \"Proxyonly\", \"Always\""
    );
    assert_eq!(
        errors(&format!("{VALID}additionalTrustBundlePolicy: Always\n")),
        Vec::<String>::new()
    );
    assert_eq!(
        one_error(&VALID.replace("  replicas: 1\n", "  replicas: 0\n")),
        "controlPlane.replicas: Invalid value: 0: number of control plane replicas must be positive"
    );
}

#[test]
fn fips_on_this_kind_of_host() {
    let t = format!("{VALID}fips: true\n").replace(
        "sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host",
        &format!("sshKey: {}", sshkey::tests::ED25519),
    );
    let config = parse(&t).unwrap().with_defaults();
    let out = validate(&config, &no_fips_host());
    assert_eq!(out.errors.len(), 2, "{:#?}", out.errors);
    assert!(out.errors[0].contains("SSH key type ssh-ed25519 unavailable when FIPS is enabled"));
    assert!(out.errors[1].starts_with("fips: Forbidden: target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9 on a host with FIPS enabled.\n"));
    let skip = Host {
        fips_enabled: None,
        skip_hostcrypt: true,
    };
    let out = validate(&config, &skip);
    assert_eq!(out.errors.len(), 1);
    assert!(out.hostcrypt_bypassed.is_some());
}

#[test]
fn bootstrap_in_place_checks() {
    use bootstrap_in_place::verify;
    let check = |t: &str| verify(&parse(t).unwrap().with_defaults());
    check(VALID).unwrap();
    assert_eq!(
        check(&VALID.replace("  replicas: 1\n", "")).unwrap_err(),
        "controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica"
    );
    assert_eq!(
        check(&VALID.replace("installationDisk: /dev/vda", "installationDisk: ''")).unwrap_err(),
        "bootstrapInPlace.installationDisk: Required value: installationDisk must be set the target disk drive for the installation"
    );
    assert_eq!(
        check(&VALID.replace("  replicas: 1\n", "  replicas: 2\n").replace("bootstrapInPlace:\n  installationDisk: /dev/vda\n", "")).unwrap_err(),
        "[controlPlane.replicas: Invalid value: 2: bootstrap in place requires a single ControlPlane replica, bootstrapInPlace: Required value: bootstrapInPlace is required when creating a single node bootstrap-in-place ignition]"
    );
    // No format check, as in the real tool.
    check(&VALID.replace("/dev/vda", "/dev/vda --extra")).unwrap();
}
