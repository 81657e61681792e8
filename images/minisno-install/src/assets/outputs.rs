//! What both `create` commands leave in the directory and say about it: the files of a run of
//! `create single-node-ignition-config` (any of them present means the directory was used),
//! the closing line naming the directories written, the schedulability warning. Apart from
//! the commands (assets/mod.rs, manifests/), which both use them, and one of which calls the
//! other.

use std::path::Path;

use super::state::{self, State};
use crate::install_config::InstallConfig;

pub const LIVE_IGN: &str = "bootstrap-in-place-for-live-iso.ign";
pub const KUBECONFIG: &str = "auth/kubeconfig";
pub const KUBEADMIN_PASSWORD: &str = "auth/kubeadmin-password";
pub const METADATA: &str = "metadata.json";
pub const WORKER_IGN: &str = "worker.ign";
pub const STATE: &str = state::FILE;

/// The files of a finished (or partly finished) run of `create single-node-ignition-config`; any of them present means
/// the directory was used already.
pub const OUTPUTS: &[&str] = &[
    LIVE_IGN,
    KUBECONFIG,
    KUBEADMIN_PASSWORD,
    METADATA,
    WORKER_IGN,
];

/// The real tool's warning for a cluster without compute replicas (every single-node one).
pub const SCHEDULABLE_WARNING: &str =
    "Making control-plane schedulable by setting MastersSchedulable to true for Scheduler cluster settings";

/// The outputs already present in `dir`, the state of an earlier run of this command included.
pub fn existing_outputs(dir: &Path, state: Option<&State>) -> Vec<&'static str> {
    let mut found: Vec<&'static str> = OUTPUTS
        .iter()
        .copied()
        .filter(|rel| dir.join(rel).symlink_metadata().is_ok())
        .collect();
    if state.is_some_and(|s| s.has(state::ADMIN_CLIENT)) {
        found.push(STATE);
    }
    found
}

/// The real tool's closing line: `<Command> created in: <dirs>`, the directories of the files
/// written (`LogCreatedFiles`).
pub fn created_message(title: &str, dir: &Path, files: &[&str]) -> String {
    let base = dir.display().to_string();
    let base = match base.trim_end_matches('/') {
        "" if base.starts_with('/') => "/".to_string(),
        "" => ".".to_string(),
        b => b.to_string(),
    };
    let join = |sub: &str| {
        if base == "." {
            sub.to_string()
        } else {
            format!("{base}/{sub}")
        }
    };
    let mut dirs: Vec<String> = files
        .iter()
        .map(|f| f.split_once('/').map_or(base.clone(), |(sub, _)| join(sub)))
        .collect();
    dirs.sort();
    dirs.dedup();
    let listed = match dirs.as_slice() {
        [one] => one.clone(),
        [init @ .., last] if dirs.len() <= 3 => format!("{} and {last}", init.join(", ")),
        _ => base,
    };
    format!("{title} created in: {listed}")
}

/// Whether the real tool's schedulability warning applies: no compute replicas at all.
pub fn no_compute_replicas(config: &InstallConfig) -> bool {
    config
        .compute
        .iter()
        .flatten()
        .map(|p| p.replicas.unwrap_or(0))
        .sum::<u32>()
        == 0
}
