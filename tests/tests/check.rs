//! `sno-harness check` against minisno's API server (started here, on 127.0.0.1, with its fast
//! schedule compressed tenfold), healthy and in each fault that shows after the pivot: every
//! check's verdict names what fails, as a run's own checks do, and the command's exit codes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use minisno_apiserver::config::{ClusterDns, Release, Resolver};
use minisno_apiserver::pod_dns::stub::StubDns;
use minisno_apiserver::{Config, Running, Schedule};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use sno_harness::health::check::{check_cluster, Deadline, Report};
use sno_harness::health::checks::Inputs;
use sno_harness::health::watch::Watch;
use sno_harness::health::ApiEndpoint;
use sno_harness::scenario::model::EtcdCheck;

/// The user's install-config: the networks but the machine network left to the installer.
const INSTALL_CONFIG: &str = "apiVersion: v1\nbaseDomain: example.test\nmetadata:\n  name: sno\nnetworking:\n  machineNetwork:\n  - cidr: 10.0.2.0/24\ncontrolPlane:\n  name: master\n  replicas: 1\ncompute:\n- name: worker\n  replicas: 0\nplatform:\n  none: {}\nbootstrapInPlace:\n  installationDisk: /dev/vda\n";

/// The copy the cluster stores (configmap kube-system/cluster-config-v1): the user's with the
/// installer's defaults filled in, as openshift/installer's SetInstallConfigDefaults and
/// minisno-install do.
const STORED_INSTALL_CONFIG: &str = "apiVersion: v1\nbaseDomain: example.test\nmetadata:\n  name: sno\nnetworking:\n  networkType: OVNKubernetes\n  clusterNetwork:\n  - cidr: 10.128.0.0/14\n    hostPrefix: 23\n  machineNetwork:\n  - cidr: 10.0.2.0/24\n  serviceNetwork:\n  - 172.30.0.0/16\ncontrolPlane:\n  name: master\n  replicas: 1\n  hyperthreading: Enabled\ncompute:\n- name: worker\n  replicas: 0\n  hyperthreading: Enabled\nplatform:\n  none: {}\npublish: External\nadditionalTrustBundlePolicy: Proxyonly\nbootstrapInPlace:\n  installationDisk: /dev/vda\n";

/// A CA, an admin client certificate, and a kubeconfig that names the server as the real
/// one does (`tls-server-name`), in `dir`.
fn pki(dir: &Path) -> (PathBuf, PathBuf) {
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, "check test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let mut user = CertificateParams::default();
    user.distinguished_name
        .push(DnType::CommonName, "system:admin");
    user.distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    user.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = user.signed_by(&key, &ca).unwrap();
    for (name, text) in [
        ("ca.crt", ca.pem()),
        ("ca.key", ca.key().serialize_pem()),
        ("admin.crt", cert.pem()),
        ("admin.key", key.serialize_pem()),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    (dir.join("ca.crt"), dir.join("ca.key"))
}

fn kubeconfig(dir: &Path, port: u16) -> PathBuf {
    let d = dir.display();
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sno\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {d}/ca.crt\n    tls-server-name: api.sno.example.test\nusers:\n- name: admin\n  user:\n    client-certificate: {d}/admin.crt\n    client-key: {d}/admin.key\ncontexts:\n- name: admin\n  context:\n    cluster: sno\n    user: admin\ncurrent-context: admin\n"
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The DNS the cluster's pods forward to (one server for the whole test process): it knows the
/// route hosts the operators check.
fn cluster_dns() -> ClusterDns {
    static DNS: std::sync::OnceLock<StubDns> = std::sync::OnceLock::new();
    let dns = DNS.get_or_init(|| {
        let names: Vec<(String, std::net::Ipv4Addr)> = [
            "oauth-openshift",
            "console-openshift-console",
            "canary-openshift-ingress-canary",
        ]
        .iter()
        .map(|r| {
            (
                format!("{r}.apps.sno.example.test"),
                std::net::Ipv4Addr::LOCALHOST,
            )
        })
        .collect();
        let names: Vec<(&str, std::net::Ipv4Addr)> =
            names.iter().map(|(n, a)| (n.as_str(), *a)).collect();
        StubDns::start(&names).unwrap()
    });
    ClusterDns::Servers(vec![dns.addr])
}

/// A cluster after the pivot: the API server, and (unless `dns` is false) api-int resolving
/// on its node. The bootstrap configmap is completed as the post-reboot script does.
struct Cluster {
    dir: tempfile::TempDir,
    running: Running,
}

impl Cluster {
    async fn start(faults: &[&str], version: &str, dns: bool) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let (ca_cert, ca_key) = pki(dir.path());
        let hosts = if dns {
            "127.0.0.1 localhost\n127.0.0.1 api.sno.example.test api-int.sno.example.test\n"
        } else {
            "127.0.0.1 localhost\n"
        };
        std::fs::write(dir.path().join("hosts"), hosts).unwrap();
        let config = Config {
            cluster_name: "sno".into(),
            base_domain: "example.test".into(),
            listen: "127.0.0.1:0".into(),
            ca_cert,
            ca_key,
            extra_sans: vec![],
            state_dir: dir.path().join("state"),
            node_name: Some("minisno".into()),
            release: Release {
                version: version.into(),
                image: format!("quay.io/minisno/release:{version}"),
            },
            schedule: Schedule::fast().scaled(0.1),
            faults: faults.iter().map(|f| f.to_string()).collect(),
            install_config_yaml: STORED_INSTALL_CONFIG.into(),
            resolver: Resolver::HostsFile(dir.path().join("hosts")),
            cluster_dns: cluster_dns(),
        };
        let running = minisno_apiserver::start(config).await.unwrap();
        // The kubelet's first lookup of api-int, now rather than on the server's next tick, so
        // that the timeline below is final.
        running.app.look_up_api_int();
        running.app.check_routes();
        // The post-reboot script creates the configmap only from 4.12 (docs/bip-contract.md
        // §7, "Release history").
        let creates = Release {
            version: version.into(),
            image: String::new(),
        }
        .creates_bootstrap_configmap();
        if creates && !faults.contains(&"api-never-ready") {
            let r = minisno_apiserver::router::route(
                &running.app,
                "POST",
                "/api/v1/namespaces/kube-system/configmaps",
                None,
                br#"{"metadata":{"name":"bootstrap"},"data":{"status":"complete"}}"#,
            );
            assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
        }
        Cluster { dir, running }
    }

    /// Waits until the fixture's timeline has reached every milestone it will reach with these
    /// faults: what a check sees from then on no longer changes (but for the operators' 30 s
    /// stability window, which the fault cases do not look at).
    async fn settled(&self) {
        let app = &self.running.app;
        let t = app.timeline();
        let last_operator = t.operators.saturating_sub(1) as f64 * t.step;
        let done = [
            t.readyz,
            t.node_registered,
            t.node_ready,
            t.etcd_removed,
            t.operators_available.map(|a| a + last_operator),
            t.cluster_version_due,
            t.operators_settled.map(|a| a + last_operator),
        ]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
        let left = (done - app.elapsed()).max(0.0) + 0.1;
        tokio::time::sleep(Duration::from_secs_f64(left)).await;
    }

    fn kubeconfig(&self) -> PathBuf {
        kubeconfig(self.dir.path(), self.running.local_addr.port())
    }

    /// The checks, again until healthy or `wait` is over (once when it is zero, as without
    /// `--wait`); with the install-config when asked.
    async fn check(&self, wait: Duration, with_install_config: bool) -> Report {
        self.check_with(wait, with_install_config.then_some(INSTALL_CONFIG))
            .await
    }

    /// The checks with the user's install-config `text`, if any.
    async fn check_with(&self, wait: Duration, text: Option<&str>) -> Report {
        let install_config = text.map(|t| serde_saphyr::from_str::<serde_json::Value>(t).unwrap());
        let inputs = Inputs {
            install_config,
            etcd: EtcdCheck::Auto,
            api_int: Some("api-int.sno.example.test".into()),
            node_name: None,
            static_addresses: Vec::new(),
        };
        let endpoint = ApiEndpoint {
            kubeconfig: self.kubeconfig(),
            server: None,
        };
        let deadline = match wait.is_zero() {
            true => Deadline::one_attempt(),
            false => Deadline::wait(wait, &format!("{}s", wait.as_secs())),
        };
        check_cluster(&endpoint, &inputs, &deadline, &Watch::default())
            .await
            .unwrap()
    }
}

fn failing(r: &Report) -> Vec<(&'static str, String)> {
    r.phases
        .iter()
        .filter(|p| !p.ok())
        .map(|p| (p.phase.name(), p.detail()))
        .collect()
}

/// Long enough for the compressed schedule to converge, with room for a loaded machine.
const CONVERGE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn a_healthy_cluster_passes_every_check() {
    let c = Cluster::start(&[], "4.17.0-minisno", true).await;
    let r = c.check(CONVERGE, true).await;
    assert!(r.healthy(), "{:?}", failing(&r));
    assert_eq!(r.version.as_deref(), Some("4.17.0-minisno"));
    let rule = r.etcd_rule.clone().unwrap();
    assert!(rule.required, "{}", rule.why);
    let j = r.to_json();
    assert_eq!(j["healthy"], true);
    assert_eq!(j["checks"].as_array().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_fault_fails_its_check_naming_the_object() {
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["node-not-ready"],
            "node-ready",
            "node minisno Ready=False (KubeletNotReady",
        ),
        (
            &["etcd-member-not-removed"],
            "bootstrap-complete",
            "EtcdBootstrapMemberRemoved is still absent",
        ),
        (&["api-never-ready"], "api-ready", "/readyz not ready (503)"),
        (&["operator-degraded:ingress"], "cluster-ready", "ingress"),
        (
            &["network-type-drift"],
            "cluster-ready",
            "status.networkType: asked \"OVNKubernetes\"",
        ),
    ];
    for (faults, phase, says) in cases {
        let c = Cluster::start(faults, "4.17.0-minisno", true).await;
        c.settled().await;
        let r = c.check(Duration::ZERO, true).await;
        let f = failing(&r);
        assert!(
            f.iter().any(|(p, d)| *p == phase && d.contains(says)),
            "{faults:?}: {f:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_dns_for_api_int_no_node_registers_and_the_check_says_why() {
    let c = Cluster::start(&[], "4.17.0-minisno", false).await;
    c.settled().await;
    let r = c.check(Duration::ZERO, false).await;
    let f = failing(&r);
    assert!(
        f.iter().any(|(p, d)| *p == "node-ready"
            && d.contains("no node has registered yet: the node's kubelet registers through api-int.sno.example.test")),
        "{f:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_older_release_is_not_held_to_the_etcd_condition() {
    for version in ["4.14.3", "4.15.9"] {
        let c = Cluster::start(&["etcd-member-not-removed"], version, true).await;
        c.settled().await;
        let r = c.check(Duration::ZERO, true).await;
        let rule = r.etcd_rule.clone().unwrap();
        assert!(!rule.required, "{version}: {}", rule.why);
        let bootstrap = r
            .phases
            .iter()
            .find(|p| p.phase.name() == "bootstrap-complete")
            .unwrap();
        assert!(bootstrap.ok(), "{version}: {}", bootstrap.detail());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_4_11_cluster_completes_bootstrap_without_the_bootstrap_configmap() {
    let c = Cluster::start(&[], "4.11.0", true).await;
    // A 4.11 installer would fill in OpenShiftSDN, which single-node refuses: a 4.11 user
    // writes OVNKubernetes.
    let ovn = INSTALL_CONFIG.replace(
        "networking:\n",
        "networking:\n  networkType: OVNKubernetes\n",
    );
    let r = c.check_with(CONVERGE, Some(&ovn)).await;
    assert!(r.healthy(), "{:?}", failing(&r));
    let bootstrap = r
        .phases
        .iter()
        .find(|p| p.phase.name() == "bootstrap-complete")
        .unwrap();
    assert!(
        bootstrap.detail().contains(
            "configmap kube-system/bootstrap status absent, not required of release 4.11.0"
        ),
        "{}",
        bootstrap.detail()
    );
    let rules = r.to_json()["release_rules"].clone();
    let applied = |name: &str| {
        rules
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["rule"] == name)
            .unwrap()["applied"]
            .clone()
    };
    for rule in [
        "bootstrap-configmap",
        "opt-openshift-removed",
        "etcd-bootstrap-member-removed",
        "default-network-type-ovn",
    ] {
        assert_eq!(applied(rule), false, "{rule}: {rules}");
    }
    // The same file without a network type asks for the 4.11 installer's default.
    let r = c.check(Duration::ZERO, true).await;
    let f = failing(&r);
    assert!(
        f.iter().any(|(p, d)| *p == "cluster-ready"
            && d.contains(
                "networkType: asked \"OpenShiftSDN\", cluster reports \"OVNKubernetes\""
            )),
        "{f:?}"
    );
}

/// The binary, beside this test's (nextest builds the workspace's binaries first).
fn harness_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("sno-harness");
    assert!(bin.is_file(), "{} is not built", bin.display());
    bin
}

#[tokio::test(flavor = "multi_thread")]
async fn the_command_exits_0_healthy_and_1_naming_what_fails() {
    let c = Cluster::start(&["node-not-ready"], "4.17.0-minisno", true).await;
    c.settled().await;
    let json = c.dir.path().join("check.json");
    let out = tokio::process::Command::new(harness_binary())
        .args(["check", "--kubeconfig"])
        .arg(c.kubeconfig())
        .arg("--json")
        .arg(&json)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  node-ready"), "{stdout}");
    assert!(stdout.contains("not healthy: node-ready"), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["checks"][1]["name"], "node-ready");
    assert_eq!(v["checks"][1]["status"], "fail");
    assert_eq!(v["version"], "4.17.0-minisno");

    let healthy = Cluster::start(&[], "4.17.0-minisno", true).await;
    let out = tokio::process::Command::new(harness_binary())
        .args(["check", "--wait", "60s", "--kubeconfig"])
        .arg(healthy.kubeconfig())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.trim_end().ends_with("healthy"), "{stdout}");
}
