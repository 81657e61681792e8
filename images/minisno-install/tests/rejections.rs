//! What `create single-node-ignition-config` refuses, with the real tool's exit codes and
//! exact stderr lines: install-config errors exit 3 from the first target that loads the
//! config; the three bootstrap-in-place checks exit 1 once the earlier targets are written.

mod common;

use common::*;

const CONFIG_ERROR: &str = "level=error msg=failed to fetch Kubeconfig Admin Client: failed to load asset \"Install Config\": failed to create install config: ";
const BIP_ERROR: &str = "level=fatal msg=failed to fetch Single node bootstrap In Place Ignition Config: failed to generate asset \"Single node bootstrap In Place Ignition Config\": ";

/// Runs create on `text`; expects exit 3, `expected` as the error line's end, nothing written.
fn expect_config_error(text: &str, expected: &str) -> String {
    let dir = with_config(text);
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "stderr: {err}");
    let line = format!("{CONFIG_ERROR}{expected}");
    assert!(
        err.lines().any(|l| l == line),
        "expected the line\n{line}\nin\n{err}"
    );
    assert!(!err.contains(SECRET_TOKEN), "{err}");
    assert!(dir.path().join("install-config.yaml").exists());
    for out in [
        "bootstrap-in-place-for-live-iso.ign",
        "auth",
        "metadata.json",
        "worker.ign",
        ".openshift_install_state.json",
    ] {
        assert!(!dir.path().join(out).exists(), "{out} written");
    }
    let log = std::fs::read_to_string(dir.path().join(".openshift_install.log")).unwrap();
    assert!(log.contains("level=error"), "{log}");
    err
}

fn invalid_file(field_errors: &str) -> String {
    format!("invalid \"install-config.yaml\" file: {field_errors}")
}

#[test]
fn openshift_sdn() {
    expect_config_error(
        &valid().replace("OVNKubernetes", "OpenShiftSDN"),
        &invalid_file("networking.networkType: Invalid value: \"OpenShiftSDN\": networkType OpenShiftSDN is not supported, please use OVNKubernetes"),
    );
}

#[test]
fn kuryr() {
    expect_config_error(
        &valid().replace("OVNKubernetes", "Kuryr"),
        &invalid_file("networking.networkType: Invalid value: \"Kuryr\": networkType Kuryr is not supported on OpenShift later than 4.14"),
    );
}

#[test]
fn ipv6_first_in_one_list() {
    expect_config_error(
        &dual_stack().replace(
            "  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n",
            "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n",
        ),
        &invalid_file("networking.machineNetwork: Invalid value: \"fd00:1::/64, 192.168.126.0/24\": IPv4 addresses must be listed before IPv6 addresses"),
    );
}

#[test]
fn ipv6_first_in_every_list_is_aggregated_in_go_map_order() {
    let text = dual_stack()
        .replace("  - cidr: 192.168.126.0/24\n  - cidr: fd00:1::/64\n", "  - cidr: fd00:1::/64\n  - cidr: 192.168.126.0/24\n")
        .replace("  - cidr: 10.128.0.0/14\n    hostPrefix: 23\n  - cidr: fd01::/48\n    hostPrefix: 64\n", "  - cidr: fd01::/48\n    hostPrefix: 64\n  - cidr: 10.128.0.0/14\n    hostPrefix: 23\n")
        .replace("  - 172.30.0.0/16\n  - fd02::/112\n", "  - fd02::/112\n  - 172.30.0.0/16\n");
    let dir = with_config(&text);
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let line = err.lines().find(|l| l.starts_with(CONFIG_ERROR)).unwrap();
    let list = line
        .strip_prefix(CONFIG_ERROR)
        .unwrap()
        .strip_prefix("invalid \"install-config.yaml\" file: [")
        .unwrap()
        .strip_suffix(']')
        .unwrap();
    let mut items: Vec<&str> = list
        .split(", networking.")
        .map(|i| i.trim_start_matches("networking."))
        .collect();
    items.sort();
    let reason = "IPv4 addresses must be listed before IPv6 addresses";
    assert_eq!(items.len(), 3, "{line}");
    for (item, field) in items
        .iter()
        .zip(["clusterNetwork", "machineNetwork", "serviceNetwork"])
    {
        assert!(item.starts_with(field) && item.ends_with(reason), "{item}");
    }
}

#[test]
fn fips_is_refused_on_a_host_without_fips() {
    if host_in_fips_mode() {
        eprintln!("this host is in FIPS mode: skipped");
        return;
    }
    let text = format!("{}fips: true\n", valid()).replace(
        "sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host",
        &format!("sshKey: {}", ecdsa_ssh_key()),
    );
    let err = expect_config_error(&text, &invalid_file(
        "fips: Forbidden: target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9 on a host with FIPS enabled.",
    ));
    // The message's second line is a record of its own on stderr, as the real tool writes it.
    assert!(err.lines().any(|l| l == "level=error msg=To obtain a suitable binary, download the openshift-install-rhel9 archive from the client mirror, or extract the openshift-install-fips command from the release payload."), "{err}");
}

#[test]
fn fips_with_an_ed25519_key_is_refused_even_when_the_host_check_is_skipped() {
    let dir = with_config(&format!("{}fips: true\n", valid()));
    let out = create_with(
        dir.path(),
        "single-node-ignition-config",
        &[("OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION", "1")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let line = format!("{CONFIG_ERROR}{}", invalid_file("sshKey: Invalid value: \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests test@host\": Fatal error trying to parse configured public key: ssh: no key found"));
    assert!(err.lines().any(|l| l == line), "{err}");
}

#[test]
fn trust_bundle_policy() {
    expect_config_error(
        &format!("{}additionalTrustBundlePolicy: Sometimes\n", valid()),
        &invalid_file("additionalTrustBundlePolicy: Invalid value: \"Sometimes\": supported values \"Proxyonly\", \"Always\""),
    );
}

#[test]
fn the_genuine_install_config_checks_stay() {
    expect_config_error(
        &valid().replace("apiVersion: v1\n", ""),
        &invalid_file("apiVersion: Required value: install-config version required"),
    );
    expect_config_error(
        &valid().replace("  name: sno\n", "  name: Sno\n"),
        &invalid_file("metadata.name: Invalid value: \"Sno\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    );
    expect_config_error(
        &valid().replace("baseDomain: example.test\n", "baseDomain: example_test\n"),
        &invalid_file("baseDomain: Invalid value: \"example_test\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    );
    let err = expect_config_error(
        &valid().replace("\"auths\"", "\"notauths\""),
        &invalid_file("pullSecret: Invalid value: \"<redacted>\": auths required"),
    );
    assert!(!err.contains("notauths"), "{err}");
    expect_config_error(
        &valid().replace("192.168.126.0/24", "192.168.126.0"),
        "failed to unmarshal install-config.yaml: error unmarshaling JSON: while decoding JSON: failed to Parse cidr string to net.IPNet: invalid CIDR address: 192.168.126.0",
    );
}

#[test]
fn several_errors_are_aggregated() {
    expect_config_error(
        &valid().replace("  name: sno\n", "  name: Sno\n").replace("OVNKubernetes", "OpenShiftSDN").replace("\"auths\"", "\"notauths\""),
        "invalid \"install-config.yaml\" file: [metadata.name: Invalid value: \"Sno\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), networking.networkType: Invalid value: \"OpenShiftSDN\": networkType OpenShiftSDN is not supported, please use OVNKubernetes, pullSecret: Invalid value: \"<redacted>\": auths required]",
    );
}

#[test]
fn yaml_errors_report_their_position() {
    let text = valid().replace("  name: sno\n", "  name: sno\n   bogus: [\n");
    let dir = with_config(&text);
    let out = create_in(dir.path());
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains(&format!("{CONFIG_ERROR}failed to unmarshal install-config.yaml: install-config.yaml: line 5, column")), "{}", stderr(&out));
    let dir = with_config(&valid().replace("  replicas: 1\n", "  replicas: one\n"));
    let out = create_in(dir.path());
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("install-config.yaml: line 7, column 13"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_missing_install_config_is_fatal_since_the_real_tool_would_ask_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("level=fatal msg=failed to fetch Kubeconfig Admin Client: install-config.yaml not found in "), "{err}");
}

/// Runs create on `text`; expects exit 1 with the BiP error `expected`, and the files of the
/// targets before it written, as the real tool leaves them.
fn expect_bip_error(text: &str, expected: &str) {
    let dir = with_config(text);
    let out = create_in(dir.path());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert_eq!(
        err.lines().last().unwrap(),
        format!("{BIP_ERROR}{expected}"),
        "{err}"
    );
    assert!(
        err.contains("level=info msg=Consuming Install Config from target directory\n"),
        "{err}"
    );
    for written in [
        "auth/kubeconfig",
        "auth/kubeadmin-password",
        "worker.ign",
        ".openshift_install_state.json",
    ] {
        assert!(
            dir.path().join(written).exists(),
            "{written} not written: {err}"
        );
    }
    for absent in [
        "install-config.yaml",
        "bootstrap-in-place-for-live-iso.ign",
        "metadata.json",
    ] {
        assert!(!dir.path().join(absent).exists(), "{absent} exists: {err}");
    }
    // The directory has been used: a second run refuses it.
    std::fs::write(dir.path().join("install-config.yaml"), valid()).unwrap();
    assert_eq!(create_in(dir.path()).status.code(), Some(1));
}

#[test]
fn three_replicas() {
    expect_bip_error(
        &valid().replace("  replicas: 1\n", "  replicas: 3\n"),
        "controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica",
    );
}

#[test]
fn omitted_replicas_mean_three() {
    expect_bip_error(
        &valid().replace("  replicas: 1\n", ""),
        "controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica",
    );
}

#[test]
fn no_bootstrap_in_place() {
    expect_bip_error(
        &valid().replace("bootstrapInPlace:\n  installationDisk: /dev/disk/by-id/virtio-sno-disk\n", ""),
        "bootstrapInPlace: Required value: bootstrapInPlace is required when creating a single node bootstrap-in-place ignition",
    );
}

#[test]
fn empty_installation_disk() {
    expect_bip_error(
        &valid().replace("installationDisk: /dev/disk/by-id/virtio-sno-disk", "installationDisk: ''"),
        "bootstrapInPlace.installationDisk: Required value: installationDisk must be set the target disk drive for the installation",
    );
}

#[test]
fn bip_errors_are_aggregated() {
    expect_bip_error(
        &valid().replace("  replicas: 1\n", "  replicas: 3\n").replace("bootstrapInPlace:\n  installationDisk: /dev/disk/by-id/virtio-sno-disk\n", ""),
        "[controlPlane.replicas: Invalid value: 3: bootstrap in place requires a single ControlPlane replica, bootstrapInPlace: Required value: bootstrapInPlace is required when creating a single node bootstrap-in-place ignition]",
    );
}

#[test]
fn what_the_real_command_does_not_check_is_accepted() {
    for text in [
        valid().replace("  replicas: 0\n", "  replicas: 2\n"),
        valid().replace("OVNKubernetes", "Calico"),
        valid().replace("  none: {}\n", "  baremetal: {}\n"),
    ] {
        let dir = with_config(&text);
        let out = create_in(dir.path());
        assert_eq!(out.status.code(), Some(0), "{}\n{text}", stderr(&out));
    }
}
