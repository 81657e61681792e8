//! `.openshift_install_state.json`: the assets made so far, by the real tool's type names. The
//! fixture keeps no secret in it (no keys, no pull secret, no password): the install-config is
//! stored redacted, and the pull secret is read back from the manifest that carries it.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::install_config::InstallConfig;

pub const FILE: &str = ".openshift_install_state.json";

pub const INSTALL_CONFIG: &str = "*installconfig.InstallConfig";
pub const CLUSTER_ID: &str = "*installconfig.ClusterID";
pub const ADMIN_CLIENT: &str = "*kubeconfig.AdminClient";
pub const MANIFESTS: &str = "*manifests.Manifests";
pub const OPENSHIFT: &str = "*manifests.Openshift";

/// The state file's assets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State(pub Map<String, Value>);

impl State {
    /// The state in `dir`, `None` when there is none.
    pub fn load(dir: &Path) -> Result<Option<State>, String> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(|m| Some(State(m)))
                .map_err(|e| format!("failed to unmarshal state file \"{}\": {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("failed to read {}: {e}", path.display())),
        }
    }

    /// Writes the whole state (0600), replacing the file.
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(FILE);
        let tmp = dir.join(format!("{FILE}.tmp"));
        let text = serde_json::to_vec_pretty(&self.0).expect("JSON values serialize");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| format!("failed to save state: {e}"))?;
        std::io::Write::write_all(&mut f, &text)
            .map_err(|e| format!("failed to save state: {e}"))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("failed to save state: {e}"))
    }

    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    pub fn set(&mut self, key: &str, value: Value) {
        self.0.insert(key.to_string(), value);
    }

    /// An asset that is one file: `{"File": {"Filename": name}}`.
    pub fn set_file(&mut self, key: &str, name: &str) {
        self.set(key, json!({"File": {"Filename": name}}));
    }

    /// An asset of several files.
    pub fn set_files(&mut self, key: &str, names: &[String]) {
        let list: Vec<Value> = names.iter().map(|n| json!({"Filename": n})).collect();
        self.set(key, json!({"FileList": list}));
    }

    /// The install-config, stored without its pull secret.
    pub fn set_install_config(&mut self, config: &InstallConfig) {
        self.set(INSTALL_CONFIG, json!({"config": config.redacted()}));
    }

    /// The install-config saved by `create manifests` (no pull secret).
    pub fn install_config(&self) -> Option<InstallConfig> {
        serde_json::from_value(self.0.get(INSTALL_CONFIG)?.get("config")?.clone()).ok()
    }

    pub fn set_cluster_id(&mut self, ids: &ClusterIds) {
        self.set(
            CLUSTER_ID,
            json!({"UUID": ids.cluster_id, "InfraID": ids.infra_id}),
        );
    }

    pub fn cluster_id(&self) -> Option<ClusterIds> {
        let v = self.0.get(CLUSTER_ID)?;
        Some(ClusterIds {
            cluster_id: v["UUID"].as_str()?.to_string(),
            infra_id: v["InfraID"].as_str()?.to_string(),
        })
    }
}

/// The cluster's UUID and infrastructure name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIds {
    pub cluster_id: String,
    pub infra_id: String,
}

impl ClusterIds {
    pub fn new(cluster_name: &str) -> ClusterIds {
        ClusterIds {
            cluster_id: uuid::Uuid::new_v4().to_string(),
            infra_id: super::small::infra_id(cluster_name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(State::load(dir.path()).unwrap(), None);
        let mut s = State::default();
        let config = InstallConfig {
            pull_secret: Some("{\"auths\":{}}".into()),
            base_domain: "example.test".into(),
            ..Default::default()
        };
        s.set_install_config(&config);
        let ids = ClusterIds::new("sno");
        s.set_cluster_id(&ids);
        s.set_file(ADMIN_CLIENT, "auth/kubeconfig");
        s.save(dir.path()).unwrap();
        let back = State::load(dir.path()).unwrap().unwrap();
        assert_eq!(back, s);
        assert_eq!(back.install_config().unwrap().pull_secret, None);
        assert_eq!(back.install_config().unwrap().base_domain, "example.test");
        assert_eq!(back.cluster_id().unwrap(), ids);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
