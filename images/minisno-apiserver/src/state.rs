//! What survives a restart: the first start time, configmaps created through the API and CSR
//! approvals. Stored as one JSON file in `state_dir`, replaced atomically on every change.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const STATE_FILE: &str = "state.json";

/// A decision recorded through `PUT .../certificatesigningrequests/<name>/approval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CsrDecision {
    /// `Approved` or `Denied`.
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    pub at_unix_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Wall-clock time of the very first start, in milliseconds since the epoch.
    pub first_start_unix_ms: i64,
    /// The same, human-readable (informational).
    #[serde(default)]
    pub first_start: String,
    /// Bumped on every write through the API.
    #[serde(default)]
    pub resource_version: u64,
    /// ConfigMaps by `namespace/name`, stored as the JSON the API serves.
    #[serde(default)]
    pub configmaps: BTreeMap<String, serde_json::Value>,
    /// CSR decisions by CSR name.
    #[serde(default)]
    pub csr_decisions: BTreeMap<String, Vec<CsrDecision>>,
    /// Seconds after the first start at which api-int first resolved on the node.
    #[serde(default)]
    pub api_int_resolved_at_s: Option<f64>,
    /// Seconds after the first start at which configmap kube-system/bootstrap first said
    /// `status: complete`.
    #[serde(default)]
    pub bootstrap_complete_at_s: Option<f64>,
    /// Seconds after the first start at which each route-checking operator's route first
    /// resolved through the pods' DNS, by operator name.
    #[serde(default)]
    pub routes_resolved_at_s: BTreeMap<String, f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid state file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> StateError + 'a {
    move |source| StateError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

pub fn now_unix_ms() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

pub fn rfc3339_ms(unix_ms: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_millisecond(unix_ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

impl State {
    pub fn new(first_start_unix_ms: i64) -> State {
        State {
            first_start_unix_ms,
            first_start: rfc3339_ms(first_start_unix_ms),
            resource_version: 1,
            configmaps: BTreeMap::new(),
            csr_decisions: BTreeMap::new(),
            api_int_resolved_at_s: None,
            bootstrap_complete_at_s: None,
            routes_resolved_at_s: BTreeMap::new(),
        }
    }

    /// Loads `state_dir/state.json`, or starts a new state (first start = now) and writes it.
    /// Returns the state and whether it was new.
    pub fn load_or_init(state_dir: &Path) -> Result<(State, bool), StateError> {
        std::fs::create_dir_all(state_dir).map_err(io_err("creating", state_dir))?;
        let path = state_dir.join(STATE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let state = serde_json::from_slice(&bytes)
                    .map_err(|source| StateError::Parse { path, source })?;
                Ok((state, false))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let state = State::new(now_unix_ms());
                state.save(state_dir)?;
                Ok((state, true))
            }
            Err(e) => Err(io_err("reading", &path)(e)),
        }
    }

    /// Writes the state atomically: temporary file, fsync, rename, fsync of the directory.
    pub fn save(&self, state_dir: &Path) -> Result<(), StateError> {
        let path = state_dir.join(STATE_FILE);
        let tmp = state_dir.join(format!(".{STATE_FILE}.tmp"));
        let bytes = serde_json::to_vec_pretty(self).expect("state serializes");
        {
            let mut f = std::fs::File::create(&tmp).map_err(io_err("creating", &tmp))?;
            f.write_all(&bytes).map_err(io_err("writing", &tmp))?;
            f.sync_all().map_err(io_err("syncing", &tmp))?;
        }
        std::fs::rename(&tmp, &path).map_err(io_err("renaming to", &path))?;
        if let Ok(dir) = std::fs::File::open(state_dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    pub fn next_resource_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_keeps_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, new) = State::load_or_init(dir.path()).unwrap();
        assert!(new);
        s.configmaps
            .insert("a/b".into(), serde_json::json!({"kind": "ConfigMap"}));
        s.save(dir.path()).unwrap();
        let (s2, new) = State::load_or_init(dir.path()).unwrap();
        assert!(!new);
        assert_eq!(s, s2);
        assert!(s2.first_start.ends_with('Z'));
    }
}
