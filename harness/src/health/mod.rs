//! Control-plane health through the Kubernetes API after the pivot: the checks that
//! `openshift-install wait-for bootstrap-complete` and `install-complete` make
//! (docs/bip-contract.md §7), on the admin kubeconfig pointed at a forwarded port.

pub mod applied;
pub mod check;
pub mod checks;
pub mod client;
pub mod failure;
pub mod install_config_defaults;
pub mod judge;
pub mod watch;

use std::future::Future;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use kube::Client;

use crate::util::input_file;
use client::Limits;
use failure::{Peer, Transport};
use watch::Watch;

/// The largest kubeconfig read.
const KUBECONFIG: input_file::Cap = input_file::Cap {
    what: "a kubeconfig",
    bytes: 1 << 20,
};

pub use judge::{Condition, Judgement};

#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("reading the kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("building the API client: {0}")]
    Client(String),
    /// No answer: refused, dropped, timed out, or too large to read.
    #[error("{what} at {server}: {problem}")]
    Transport {
        what: String,
        server: String,
        problem: Transport,
    },
    #[error(
        "the API server at {server} presented a serving certificate that does not verify against the kubeconfig's certificate-authority for the name {name} ({why}): it is the server's certificate that failed, not the admin client certificate"
    )]
    ServerCertificate {
        server: String,
        name: String,
        why: String,
    },
    #[error(
        "the API server at {server} did not accept the kubeconfig's client certificate (TLS alert {alert})"
    )]
    ClientCertificate { server: String, alert: String },
    #[error("{what}: {message} ({code})")]
    Api {
        what: String,
        message: String,
        code: u16,
    },
}

impl HealthError {
    /// The API was not reached, or gave nothing usable: not an answer, not even a 503.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            HealthError::Transport { .. }
                | HealthError::ServerCertificate { .. }
                | HealthError::ClientCertificate { .. }
        )
    }
}

/// Where the API is reached: the admin kubeconfig, with its server replaced by the forwarded
/// port and the TLS server name kept as the API host name (so the serving certificate matches).
#[derive(Debug, Clone)]
pub struct ApiEndpoint {
    pub kubeconfig: std::path::PathBuf,
    /// e.g. `https://127.0.0.1:40123`; None keeps the kubeconfig's server.
    pub server: Option<String>,
}

impl ApiEndpoint {
    /// The admin kubeconfig as the harness uses it: every cluster's server replaced by the
    /// forwarded one, with the API's host name kept for TLS; and the server it names.
    fn pointed(&self) -> Result<(Kubeconfig, String), HealthError> {
        let path = self.kubeconfig.display().to_string();
        // kube reads the file whole and blocks on a FIFO: refused first unless it is a regular
        // file of at most 1 MiB (a kubeconfig is a few KiB, even with its certificates inline).
        input_file::read_bytes(&self.kubeconfig, KUBECONFIG).map_err(|e| {
            HealthError::Kubeconfig {
                path: path.clone(),
                message: e.problem.to_string(),
            }
        })?;
        let mut kc = Kubeconfig::read_from(Path::new(&self.kubeconfig)).map_err(|e| {
            HealthError::Kubeconfig {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        let mut server = String::new();
        for named in &mut kc.clusters {
            if let Some(c) = named.cluster.as_mut() {
                let original = c.server.clone().unwrap_or_default();
                if let Some(s) = &self.server {
                    if c.tls_server_name.is_none() {
                        c.tls_server_name = host_of(&original);
                    }
                    c.server = Some(s.clone());
                }
                server = c.server.clone().unwrap_or_default();
            }
        }
        Ok((kc, server))
    }

    /// The kubeconfig a person or a later CI step uses to reach the cluster from this host as
    /// the harness did (kubectl and oc honour `tls-server-name`), as YAML.
    pub fn kubeconfig_for_hand_on(&self) -> Result<String, HealthError> {
        let (kc, _) = self.pointed()?;
        serde_saphyr::to_string(&kc).map_err(|e| HealthError::Kubeconfig {
            path: self.kubeconfig.display().to_string(),
            message: format!("writing it again: {e}"),
        })
    }
}

pub struct ClusterApi {
    client: Client,
    peer: Peer,
    limits: Limits,
    watch: Watch,
}

impl ClusterApi {
    /// The client of the kubeconfig, with the harness's [`Limits`].
    pub async fn connect(ep: &ApiEndpoint) -> Result<ClusterApi, HealthError> {
        Self::connect_with(ep, Limits::DEFAULT, Watch::default()).await
    }

    /// The client within `limits`, its requests shown in `watch` while they wait.
    pub async fn connect_with(
        ep: &ApiEndpoint,
        limits: Limits,
        watch: Watch,
    ) -> Result<ClusterApi, HealthError> {
        let path = ep.kubeconfig.display().to_string();
        let (kc, server) = ep.pointed()?;
        watch.set_server(&server);
        let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|e| HealthError::Kubeconfig {
                path,
                message: e.to_string(),
            })?;
        // The harness polls on its own schedule; kube's built-in retries would turn a 503 from
        // a not-yet-ready API into a call that hangs for minutes.
        config.default_retry = false;
        // The server and name kube itself uses (the current context's cluster).
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        watch.set_server(&server);
        let tls_name = config
            .tls_server_name
            .clone()
            .or_else(|| config.cluster_url.host().map(str::to_string))
            .unwrap_or_default();
        let client =
            client::build(config, &limits).map_err(|e| HealthError::Client(e.to_string()))?;
        Ok(ClusterApi {
            client,
            peer: Peer { server, tls_name },
            limits,
            watch,
        })
    }

    /// The server it talks to.
    pub fn server(&self) -> &str {
        &self.peer.server
    }

    /// `request`, shown in the watch while it waits, bounded as a whole by the request limit
    /// (the connect and read timeouts of the client bound its parts), its failure in words.
    async fn call<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, HealthError> {
        let _waiting = self.watch.begin(format!("{what} at {}", self.peer.server));
        match tokio::time::timeout(self.limits.request, request).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(failure::classify(e, what, &self.peer, &self.limits)),
            Err(_) => Err(HealthError::Transport {
                what: what.into(),
                server: self.peer.server.clone(),
                problem: Transport::Request(self.limits.request),
            }),
        }
    }

    /// GET `path`'s body as text.
    async fn text(&self, what: &str, path: &str) -> Result<String, HealthError> {
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| HealthError::Client(e.to_string()))?;
        self.call(what, self.client.request_text(req)).await
    }

    /// GET /readyz: Ok(true) on 200.
    pub async fn readyz(&self) -> Result<bool, HealthError> {
        match self.text("GET /readyz", "/readyz").await {
            Ok(body) => Ok(body.trim() == "ok"),
            Err(HealthError::Api {
                code: 503 | 500, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// GET `path` as the server's text (for gather: objects kept as the API gave them).
    pub async fn get_text(&self, path: &str) -> Result<String, HealthError> {
        self.text(&format!("GET {path}"), path).await
    }

    /// `data.status` of configmap kube-system/bootstrap, None while it does not exist.
    pub async fn bootstrap_status(&self) -> Result<Option<String>, HealthError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), "kube-system");
        let cm = self
            .call(
                "GET configmap kube-system/bootstrap",
                api.get_opt("bootstrap"),
            )
            .await?;
        Ok(cm.and_then(|c| c.data?.get("status").cloned()))
    }

    pub async fn nodes(&self) -> Result<serde_json::Value, HealthError> {
        let api: Api<Node> = Api::all(self.client.clone());
        let list = self
            .call("LIST nodes", api.list(&ListParams::default()))
            .await?;
        serde_json::to_value(list).map_err(|e| HealthError::Client(e.to_string()))
    }

    async fn get_dynamic(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        name: &str,
    ) -> Result<serde_json::Value, HealthError> {
        let ar = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let obj = self
            .call(&format!("GET {plural}/{name}"), api.get(name))
            .await?;
        serde_json::to_value(obj).map_err(|e| HealthError::Client(e.to_string()))
    }

    /// A configmap as JSON, None when it does not exist.
    pub async fn configmap(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, HealthError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let cm = self
            .call(
                &format!("GET configmap {namespace}/{name}"),
                api.get_opt(name),
            )
            .await?;
        cm.map(|c| serde_json::to_value(c).map_err(|e| HealthError::Client(e.to_string())))
            .transpose()
    }

    /// A cluster-scoped config.openshift.io/v1 object, None when it does not exist.
    async fn config_object(
        &self,
        kind: &str,
        plural: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, HealthError> {
        match self
            .get_dynamic("config.openshift.io", "v1", kind, plural, name)
            .await
        {
            Err(HealthError::Api { code: 404, .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Everything [`applied::install_config_applied`] compares the install-config with.
    pub async fn applied_config(&self) -> Result<applied::Observed, HealthError> {
        Ok(applied::Observed {
            cluster_config: self.configmap("kube-system", "cluster-config-v1").await?,
            network: self.config_object("Network", "networks", "cluster").await?,
            proxy: self.config_object("Proxy", "proxies", "cluster").await?,
            user_ca_bundle: self.configmap("openshift-config", "user-ca-bundle").await?,
            cluster_version: self
                .config_object("ClusterVersion", "clusterversions", "version")
                .await?,
        })
    }

    pub async fn etcd(&self) -> Result<serde_json::Value, HealthError> {
        self.get_dynamic("operator.openshift.io", "v1", "Etcd", "etcds", "cluster")
            .await
    }

    pub async fn cluster_version(&self) -> Result<serde_json::Value, HealthError> {
        self.get_dynamic(
            "config.openshift.io",
            "v1",
            "ClusterVersion",
            "clusterversions",
            "version",
        )
        .await
    }

    pub async fn cluster_operators(&self) -> Result<serde_json::Value, HealthError> {
        let ar = ApiResource {
            group: "config.openshift.io".into(),
            version: "v1".into(),
            api_version: "config.openshift.io/v1".into(),
            kind: "ClusterOperator".into(),
            plural: "clusteroperators".into(),
        };
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let list = self
            .call("LIST clusteroperators", api.list(&ListParams::default()))
            .await?;
        serde_json::to_value(list).map_err(|e| HealthError::Client(e.to_string()))
    }
}

/// `api.sno.example.test` from `https://api.sno.example.test:6443`.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split("://").nth(1)?;
    let host = rest.split(['/', ':']).next()?;
    (!host.is_empty()).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_is_taken_from_the_server_url() {
        assert_eq!(
            super::host_of("https://api.sno.example.test:6443").as_deref(),
            Some("api.sno.example.test")
        );
        assert_eq!(super::host_of("nonsense"), None);
    }

    /// The installer's shape: the cluster's CA, the admin's client certificate and key, all
    /// inline (the values here are placeholders, not PEM).
    const INSTALLER_KUBECONFIG: &str = "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: Q0EtREFUQQ==
    server: https://api.sno.example.test:6443
  name: sno
contexts:
- context:
    cluster: sno
    user: admin
  name: admin
current-context: admin
kind: Config
preferences: {}
users:
- name: admin
  user:
    client-certificate-data: Q0VSVC1EQVRB
    client-key-data: S0VZLURBVEEtY2FuYXJ5
";

    #[test]
    fn the_handed_on_kubeconfig_points_at_the_forward_and_keeps_the_tls_name_and_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, INSTALLER_KUBECONFIG).unwrap();
        let ep = super::ApiEndpoint {
            kubeconfig: path,
            server: Some("https://127.0.0.1:40123".into()),
        };
        let text = ep.kubeconfig_for_hand_on().unwrap();
        let back: kube::config::Kubeconfig = serde_saphyr::from_str(&text).unwrap();
        let cluster = back.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:40123"));
        assert_eq!(
            cluster.tls_server_name.as_deref(),
            Some("api.sno.example.test")
        );
        assert_eq!(
            cluster.certificate_authority_data.as_deref(),
            Some("Q0EtREFUQQ==")
        );
        assert_eq!(back.current_context.as_deref(), Some("admin"));
        // The key itself, not a redaction of it: kubectl must be able to use the file.
        assert!(
            text.contains("client-key-data: S0VZLURBVEEtY2FuYXJ5"),
            "{text}"
        );
        assert!(
            text.contains("client-certificate-data: Q0VSVC1EQVRB"),
            "{text}"
        );
        assert!(
            text.contains("tls-server-name: api.sno.example.test"),
            "{text}"
        );
    }
}
