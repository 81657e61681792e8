use std::net::Ipv4Addr;
use std::path::PathBuf;

use serde_json::json;

use super::stub::StubDns;
use super::*;

const HOST: &str = "oauth-openshift.apps.sno.example.test";

fn servers(s: &[&StubDns]) -> PodDns {
    let mut dns = PodDns::new(ClusterDns::Servers(s.iter().map(|s| s.addr).collect()));
    dns.timeout = Duration::from_millis(300);
    dns
}

fn resolv_conf(text: &str) -> (tempfile::TempDir, PodDns) {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("resolv.conf");
    std::fs::write(&path, text).unwrap();
    (dir, PodDns::new(ClusterDns::ResolvConf(path)))
}

#[test]
fn a_server_that_knows_the_name_answers_it() {
    let dns = StubDns::start(&[(HOST, Ipv4Addr::new(10, 0, 2, 15))]).unwrap();
    assert_eq!(
        servers(&[&dns]).lookup(HOST).unwrap(),
        [IpAddr::V4(Ipv4Addr::new(10, 0, 2, 15))]
    );
    // Names compare without regard to case, as in DNS.
    assert!(servers(&[&dns]).lookup(&HOST.to_uppercase()).is_ok());
}

#[test]
fn nxdomain_is_no_such_host_and_ends_the_lookup() {
    let knows_nothing = StubDns::start(&[]).unwrap();
    let knows = StubDns::start(&[(HOST, Ipv4Addr::new(10, 0, 2, 15))]).unwrap();
    // The first server's answer is the answer (CoreDNS's sequential policy).
    let e = servers(&[&knows_nothing, &knows]).lookup(HOST).unwrap_err();
    assert!(e.not_found);
    assert_eq!(
        e.go_error(HOST, "172.30.0.10:53".parse().unwrap()),
        format!("lookup {HOST} on 172.30.0.10:53: no such host")
    );
    assert_eq!(
        e.trail,
        [format!(
            "{} answered that {HOST} does not exist",
            knows_nothing.addr
        )]
    );
}

#[test]
fn a_server_that_does_not_answer_is_passed_over_within_the_deadline() {
    let silent = StubDns::silent().unwrap();
    let knows = StubDns::start(&[(HOST, Ipv4Addr::new(10, 0, 2, 15))]).unwrap();
    let started = std::time::Instant::now();
    assert!(servers(&[&silent, &knows]).lookup(HOST).is_ok());
    let e = servers(&[&silent]).lookup(HOST).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(!e.not_found);
    assert!(e.trail[0].contains("i/o timeout"), "{:?}", e.trail);
    assert_eq!(
        e.go_error(HOST, "172.30.0.10:53".parse().unwrap()),
        format!("lookup {HOST} on 172.30.0.10:53: server misbehaving")
    );
}

#[test]
fn nameservers_on_loopback_only_fail_without_a_question() {
    // Even a server there that knows the name: a pod cannot reach the node's loopback.
    let (_dir, dns) = resolv_conf("nameserver 127.0.0.1\nnameserver ::1\n");
    let e = dns.lookup(HOST).unwrap_err();
    assert!(!e.not_found);
    assert_eq!(e.trail.len(), 2);
    assert!(
        e.trail.iter().all(|t| t.contains("loopback")),
        "{:?}",
        e.trail
    );
}

#[test]
fn a_resolv_conf_without_nameserver_fails() {
    let (_dir, dns) = resolv_conf("search sno.example.test\n");
    let e = dns.lookup(HOST).unwrap_err();
    assert!(!e.not_found);
    assert!(e.trail[0].ends_with("names no nameserver"), "{:?}", e.trail);
}

#[test]
fn a_name_in_etc_hosts_but_not_in_dns_does_not_resolve() {
    // Every host's /etc/hosts names localhost, and getaddrinfo finds it there; the pods' DNS
    // asks the server only, which does not know it.
    assert!(crate::config::Resolver::System.resolve("localhost").is_ok());
    let dns = StubDns::start(&[(HOST, Ipv4Addr::new(10, 0, 2, 15))]).unwrap();
    let e = servers(&[&dns]).lookup("localhost").unwrap_err();
    assert!(e.not_found, "{e:?}");
}

#[test]
fn the_cluster_dns_service_is_the_tenth_address_of_the_service_network() {
    let ic = |cidr: &str| json!({"networking": {"serviceNetwork": [cidr]}});
    assert_eq!(
        cluster_dns_service(&ic("172.30.0.0/16")).to_string(),
        "172.30.0.10:53"
    );
    assert_eq!(
        cluster_dns_service(&ic("fd02::/112")).to_string(),
        "[fd02::a]:53"
    );
    assert_eq!(
        cluster_dns_service(&json!(null)).to_string(),
        "172.30.0.10:53"
    );
}
