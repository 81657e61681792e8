//! The admin kubeconfig (`auth/kubeconfig`) and the loopback one the node's scripts use.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Serialize;

use crate::install_config;
use crate::pki::Pki;

#[derive(Debug, Serialize)]
pub struct Kubeconfig {
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub kind: &'static str,
    pub clusters: Vec<NamedCluster>,
    pub contexts: Vec<NamedContext>,
    #[serde(rename = "current-context")]
    pub current_context: String,
    pub preferences: std::collections::BTreeMap<String, String>,
    pub users: Vec<NamedUser>,
}

#[derive(Debug, Serialize)]
pub struct NamedCluster {
    pub name: String,
    pub cluster: Cluster,
}

#[derive(Debug, Serialize)]
pub struct Cluster {
    #[serde(rename = "certificate-authority-data")]
    pub certificate_authority_data: String,
    pub server: String,
}

#[derive(Debug, Serialize)]
pub struct NamedContext {
    pub name: String,
    pub context: Context,
}

#[derive(Debug, Serialize)]
pub struct Context {
    pub cluster: String,
    pub user: String,
}

#[derive(Debug, Serialize)]
pub struct NamedUser {
    pub name: String,
    pub user: User,
}

#[derive(Debug, Serialize)]
pub struct User {
    #[serde(rename = "client-certificate-data")]
    pub client_certificate_data: String,
    #[serde(rename = "client-key-data")]
    pub client_key_data: String,
}

/// An admin kubeconfig for `server`, trusting the CA and using the admin client certificate.
pub fn kubeconfig(cluster_name: &str, server: &str, pki: &Pki) -> Result<String, String> {
    let kc = Kubeconfig {
        api_version: "v1",
        kind: "Config",
        clusters: vec![NamedCluster {
            name: cluster_name.into(),
            cluster: Cluster {
                certificate_authority_data: B64.encode(&pki.ca_cert_pem),
                server: server.into(),
            },
        }],
        contexts: vec![NamedContext {
            name: "admin".into(),
            context: Context {
                cluster: cluster_name.into(),
                user: "admin".into(),
            },
        }],
        current_context: "admin".into(),
        preferences: Default::default(),
        users: vec![NamedUser {
            name: "admin".into(),
            user: User {
                client_certificate_data: B64.encode(&pki.admin_cert_pem),
                client_key_data: B64.encode(&pki.admin_key_pem),
            },
        }],
    };
    install_config::to_yaml(&kc).map_err(|e| format!("failed to serialize kubeconfig: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki;
    use serde_json::Value;

    #[test]
    fn kubeconfig_parses_back() {
        let pki = pki::generate().unwrap();
        let text = kubeconfig("sno", "https://api.sno.example.test:6443", &pki).unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with("    certificate-authority-data: LS0t")),
            "{text}"
        );
        let v: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "https://api.sno.example.test:6443"
        );
        assert_eq!(v["clusters"][0]["name"], "sno");
        assert_eq!(v["current-context"], "admin");
        assert_eq!(v["contexts"][0]["context"]["user"], "admin");
        let ca = B64
            .decode(
                v["clusters"][0]["cluster"]["certificate-authority-data"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(String::from_utf8(ca).unwrap(), pki.ca_cert_pem);
        let key = B64
            .decode(v["users"][0]["user"]["client-key-data"].as_str().unwrap())
            .unwrap();
        assert_eq!(String::from_utf8(key).unwrap(), pki.admin_key_pem);
    }
}
