//! The small assets of the command: the kubeadmin password, the cluster's ids, `metadata.json`
//! and the worker pointer config.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use rand::Rng;
use serde_json::{json, Value};

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWER_ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

fn random_from(charset: &[u8], n: usize) -> String {
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|_| charset[rng.gen_range(0..charset.len())] as char)
        .collect()
}

/// A kubeadmin password like the real one: four groups of 5 alphanumerics joined by `-`.
pub fn kubeadmin_password() -> String {
    (0..4)
        .map(|_| random_from(ALNUM, 5))
        .collect::<Vec<_>>()
        .join("-")
}

/// `<name>-<5 random lowercase alphanumerics>`, the name cut to 27 characters as the real tool.
pub fn infra_id(cluster_name: &str) -> String {
    let base: String = cluster_name.chars().take(27).collect();
    let base = base.trim_end_matches(['-', '.']);
    format!("{base}-{}", random_from(LOWER_ALNUM, 5))
}

pub fn metadata_json(cluster_name: &str, cluster_id: &str, infra_id: &str) -> Value {
    json!({
        "clusterName": cluster_name,
        "clusterID": cluster_id,
        "infraID": infra_id,
        "none": {},
    })
}

/// The worker pointer config: merge from the machine-config server on api-int.
pub fn worker_ign(cluster_name: &str, base_domain: &str, ca_cert_pem: &str) -> Value {
    json!({
        "ignition": {
            "config": {"merge": [{
                "source": format!("https://api-int.{cluster_name}.{base_domain}:22623/config/worker")
            }]},
            "security": {"tls": {"certificateAuthorities": [{
                "source": format!("data:text/plain;charset=utf-8;base64,{}", B64.encode(ca_cert_pem))
            }]}},
            "version": "3.2.0"
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_shape() {
        for _ in 0..50 {
            let p = kubeadmin_password();
            assert_eq!(p.len(), 23, "{p}");
            let groups: Vec<&str> = p.split('-').collect();
            assert_eq!(groups.len(), 4);
            assert!(groups
                .iter()
                .all(|g| g.len() == 5 && g.bytes().all(|b| b.is_ascii_alphanumeric())));
        }
    }

    #[test]
    fn infra_id_shape() {
        let id = infra_id("sno");
        assert!(id.starts_with("sno-") && id.len() == 9, "{id}");
        assert!(id[4..]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        let long = infra_id(&"a".repeat(40));
        assert_eq!(long.len(), 27 + 6);
    }

    #[test]
    fn worker_ign_shape() {
        let w = worker_ign("sno", "example.test", "PEM");
        assert_eq!(w["ignition"]["version"], "3.2.0");
        assert_eq!(
            w["ignition"]["config"]["merge"][0]["source"],
            "https://api-int.sno.example.test:22623/config/worker"
        );
        assert_eq!(
            w["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"],
            format!("data:text/plain;charset=utf-8;base64,{}", B64.encode("PEM"))
        );
    }
}
