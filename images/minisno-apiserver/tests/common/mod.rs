//! Shared test fixture: a CA and client certificates made with rcgen, a server started
//! in-process on 127.0.0.1:0 with the fast schedule compressed tenfold, kube clients.

#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use minisno_apiserver::config::{ClusterDns, Release, Resolver};
use minisno_apiserver::pod_dns::stub::StubDns;
use minisno_apiserver::{Config, Running, Schedule};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// Compressed schedule: everything converges within ~1.6 s.
pub const SCALE: f64 = 0.1;
pub const SERVER_NAME: &str = "api.sno.example.test";

pub const INSTALL_CONFIG: &str = r#"apiVersion: v1
baseDomain: example.test
metadata:
  name: sno
networking:
  networkType: OVNKubernetes
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  machineNetwork:
  - cidr: 192.168.126.0/24
  serviceNetwork:
  - 172.30.0.0/16
controlPlane:
  name: master
  replicas: 1
compute:
- name: worker
  replicas: 0
platform:
  none: {}
capabilities:
  baselineCapabilitySet: None
  additionalEnabledCapabilities:
  - Ingress
proxy:
  httpProxy: http://proxy.example.test:3128
  noProxy: .example.test
additionalTrustBundle: |
  -----BEGIN CERTIFICATE-----
  MIIBfake
  -----END CERTIFICATE-----
bootstrapInPlace:
  installationDisk: /dev/vda
"#;

/// A CA plus an admin client certificate, written as PEM files in `dir`.
pub struct Pki {
    pub dir: PathBuf,
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
}

pub fn make_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A client certificate (CN, O, EKU clientAuth) from `ca`: (cert PEM, key PEM).
pub fn client_cert(ca: &CertifiedIssuer<'_, KeyPair>, cn: &str, org: &str) -> (String, String) {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, cn);
    params
        .distinguished_name
        .push(DnType::OrganizationName, org);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    (cert.pem(), key.serialize_pem())
}

pub fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

impl Pki {
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let ca = make_ca("minisno test CA");
        let (cert, key) = client_cert(&ca, "system:admin", "system:masters");
        let pki = Pki {
            dir: dir.to_owned(),
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
        };
        write(&pki.ca_cert, &ca.pem());
        write(&pki.ca_key, &ca.key().serialize_pem());
        write(&pki.admin_cert, &cert);
        write(&pki.admin_key, &key);
        pki
    }
}

/// The hosts file the simulated kubelet resolves api-int with: with the name, or without it
/// (a node without DNS for its API).
pub fn write_hosts(dir: &Path, with_api_int: bool) {
    let mut text = "127.0.0.1 localhost\n".to_string();
    if with_api_int {
        text.push_str("127.0.0.1 api.sno.example.test api-int.sno.example.test\n");
    }
    write(&dir.join("hosts"), &text);
}

/// The route hosts the operators check, as the node's DNS (dnsmasq, on a real single node)
/// answers them.
pub const ROUTE_HOSTS: [&str; 3] = [
    "oauth-openshift.apps.sno.example.test",
    "console-openshift-console.apps.sno.example.test",
    "canary-openshift-ingress-canary.apps.sno.example.test",
];

/// One DNS server for the whole test process that knows the cluster's route hosts, where the
/// servers' pods' DNS forwards.
pub fn cluster_dns() -> ClusterDns {
    static DNS: std::sync::OnceLock<StubDns> = std::sync::OnceLock::new();
    let dns = DNS.get_or_init(|| {
        let names: Vec<(&str, std::net::Ipv4Addr)> = ROUTE_HOSTS
            .iter()
            .map(|h| (*h, std::net::Ipv4Addr::LOCALHOST))
            .collect();
        StubDns::start(&names).unwrap()
    });
    ClusterDns::Servers(vec![dns.addr])
}

pub fn config(dir: &Path, pki: &Pki, faults: &[&str]) -> Config {
    if !dir.join("hosts").exists() {
        write_hosts(dir, true);
    }
    Config {
        cluster_name: "sno".into(),
        base_domain: "example.test".into(),
        listen: "127.0.0.1:0".into(),
        ca_cert: pki.ca_cert.clone(),
        ca_key: pki.ca_key.clone(),
        extra_sans: vec!["api.extra.example.test".into()],
        state_dir: dir.join("state"),
        node_name: Some("minisno".into()),
        release: Release {
            version: "4.17.0-minisno".into(),
            image: "quay.io/minisno/release:4.17.0-minisno".into(),
        },
        schedule: Schedule::fast().scaled(SCALE),
        faults: faults.iter().map(|s| s.to_string()).collect(),
        install_config_yaml: INSTALL_CONFIG.into(),
        resolver: Resolver::HostsFile(dir.join("hosts")),
        cluster_dns: cluster_dns(),
    }
}

/// The configmap the post-reboot script creates once the bootstrap is complete.
pub const BOOTSTRAP_COMPLETE: &[u8] =
    br#"{"metadata":{"name":"bootstrap"},"data":{"status":"complete"}}"#;

/// A running server with its own temporary directory.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub pki: Pki,
    pub running: Running,
}

impl Fixture {
    /// A server whose node resolves api-int; nobody has said the bootstrap is complete.
    pub async fn start(faults: &[&str]) -> Fixture {
        Fixture::start_with(faults, |_| {}).await
    }

    /// A server whose config `change` adjusts first.
    pub async fn start_with(faults: &[&str], change: impl FnOnce(&mut Config)) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(&dir.path().join("pki"));
        let mut cfg = config(dir.path(), &pki, faults);
        change(&mut cfg);
        let running = minisno_apiserver::start(cfg).await.unwrap();
        Fixture { dir, pki, running }
    }

    /// A server without DNS for api-int on the node (the name can be added later with
    /// [`write_hosts`]).
    pub async fn start_without_dns(faults: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        write_hosts(dir.path(), false);
        let pki = Pki::new(&dir.path().join("pki"));
        let running = minisno_apiserver::start(config(dir.path(), &pki, faults))
            .await
            .unwrap();
        Fixture { dir, pki, running }
    }

    /// A server whose bootstrap the post-reboot script has signalled complete, as in an
    /// install that gets that far.
    pub async fn start_bootstrapped(faults: &[&str]) -> Fixture {
        let fx = Fixture::start(faults).await;
        fx.complete_bootstrap();
        fx
    }

    /// Creates configmap kube-system/bootstrap with `status: complete`.
    pub fn complete_bootstrap(&self) {
        let r = minisno_apiserver::router::route(
            &self.running.app,
            "POST",
            "/api/v1/namespaces/kube-system/configmaps",
            None,
            BOOTSTRAP_COMPLETE,
        );
        assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.body));
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.running.local_addr.port())
    }

    /// The admin kubeconfig, as kubectl and kube read it.
    pub fn kubeconfig(&self) -> String {
        kubeconfig(
            &self.url(),
            &self.pki.ca_cert,
            Some((&self.pki.admin_cert, &self.pki.admin_key)),
            Some(SERVER_NAME),
        )
    }

    pub fn kubeconfig_file(&self) -> PathBuf {
        let path = self.dir.path().join("kubeconfig");
        write(&path, &self.kubeconfig());
        path
    }

    pub async fn client(&self) -> kube::Client {
        client_from_yaml(&self.kubeconfig()).await.unwrap()
    }
}

pub fn kubeconfig(
    server: &str,
    ca: &Path,
    user: Option<(&Path, &Path)>,
    server_name: Option<&str>,
) -> String {
    let mut cluster = format!(
        "    server: {server}\n    certificate-authority: {}\n",
        ca.display()
    );
    if let Some(name) = server_name {
        cluster.push_str(&format!("    tls-server-name: {name}\n"));
    }
    let user = match user {
        Some((cert, key)) => format!(
            "    client-certificate: {}\n    client-key: {}\n",
            cert.display(),
            key.display()
        ),
        None => "    {}\n".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sno\n  cluster:\n{cluster}users:\n- name: admin\n  user:\n{user}contexts:\n- name: admin\n  context:\n    cluster: sno\n    user: admin\ncurrent-context: admin\n"
    )
}

pub async fn client_from_yaml(yaml: &str) -> Result<kube::Client, String> {
    let kc = kube::config::Kubeconfig::from_yaml(yaml).map_err(|e| e.to_string())?;
    let mut cfg =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| e.to_string())?;
    // kube 5 retries 429/503 with backoff by default, which turns "readyz answers 503" into a
    // request that takes tens of seconds; the tests poll themselves instead
    cfg.default_retry = false;
    kube::Client::try_from(cfg).map_err(|e| e.to_string())
}

/// Polls `f` every 50 ms until it gives `Some`, failing the test after `timeout`.
pub async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub const DEADLINE: Duration = Duration::from_secs(10);

/// The status of condition `type_` in a JSON object's `status.conditions`.
pub fn condition(obj: &serde_json::Value, type_: &str) -> Option<serde_json::Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

pub fn condition_status(obj: &serde_json::Value, type_: &str) -> String {
    condition(obj, type_)
        .and_then(|c| c["status"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// GET `path` through the kube client, as JSON.
pub async fn get_json(client: &kube::Client, path: &str) -> Result<serde_json::Value, kube::Error> {
    let text = client
        .request_text(http::Request::get(path).body(Vec::new()).unwrap())
        .await?;
    Ok(serde_json::from_str(&text).expect("JSON body"))
}
