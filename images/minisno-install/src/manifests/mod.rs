//! `create manifests`: the real command's first half of an install. It loads and validates the
//! install-config as `create single-node-ignition-config` does (an error is reported by its
//! first target, Master Machines), consumes `install-config.yaml` (keeping the config in the
//! state), and writes `manifests/` and `openshift/`, which the user may then add to. A later
//! `create single-node-ignition-config` in the directory works from the state, takes the
//! master MachineConfigs of both directories into the installed system's config, and consumes
//! the manifests.

pub mod machine_config;
pub mod render;

use std::path::Path;

use crate::assets::outputs::{self, SCHEDULABLE_WARNING};
use crate::assets::state::{self, ClusterIds, State};
use crate::assets::{files, source};
use crate::install_config;
use crate::log::Logger;
use crate::validate::Host;
use crate::Failure;

/// The first target of the real command: where its install-config errors are reported.
pub const FIRST_TARGET: &str = "Master Machines";

fn fatal(msg: impl std::fmt::Display) -> Failure {
    Failure::Fatal(format!("failed to fetch {FIRST_TARGET}: {msg}"))
}

/// Runs `create manifests` in `dir`.
pub fn create(dir: &Path, log: &mut Logger) -> Result<(), Failure> {
    log.debug(&format!("Fetching {FIRST_TARGET}..."));
    let existing = State::load(dir).map_err(fatal)?;
    let used: Vec<&str> = outputs::existing_outputs(dir, existing.as_ref())
        .into_iter()
        .chain(existing.as_ref().map(|_| state::FILE))
        .collect();
    if !used.is_empty() {
        return Err(fatal(format!(
            "the target directory {} already holds generated assets ({}); minisno-install, like openshift-install, does not regenerate them: use a fresh directory",
            dir.display(),
            used.join(", ")
        )));
    }
    let loaded = source::load(dir, log, &Host::current(), FIRST_TARGET, None)?;
    let config = loaded.config;
    let ids = ClusterIds::new(&config.metadata.name);
    let manifests = render::manifests(&config, &ids.infra_id, crate::RELEASE).map_err(fatal)?;
    let mut st = State::default();
    st.set_install_config(&config);
    st.set_cluster_id(&ids);
    st.save(dir).map_err(fatal)?;
    log.info("Consuming Install Config from target directory");
    files::remove_consumed(dir, install_config::FILE)
        .map_err(|e| fatal(format!("failed to purge asset: {e}")))?;
    if outputs::no_compute_replicas(&config) {
        log.warn(SCHEDULABLE_WARNING);
    }
    for (rel, text) in &manifests {
        files::write_new(dir, rel, text.as_bytes()).map_err(fatal)?;
    }
    let names = |sub: &str| -> Vec<String> {
        manifests
            .iter()
            .filter(|(r, _)| r.starts_with(sub))
            .map(|(r, _)| r.clone())
            .collect()
    };
    st.set_files(state::MANIFESTS, &names("manifests/"));
    st.set_files(state::OPENSHIFT, &names("openshift/"));
    st.save(dir).map_err(fatal)?;
    let rels: Vec<&str> = manifests.iter().map(|(r, _)| r.as_str()).collect();
    log.info(&outputs::created_message("Manifests", dir, &rels));
    Ok(())
}

/// What the real tool purges after `create single-node-ignition-config` read the manifests:
/// every manifest file of both directories (and the directories once empty).
pub fn consume(dir: &Path, log: &mut Logger) -> Result<(), String> {
    let common = files::list(dir, "manifests", machine_config::EXTENSIONS)?;
    let openshift = files::list(dir, "openshift", machine_config::EXTENSIONS)?;
    let named = |pattern: &str| openshift.iter().any(|f| f.contains(pattern));
    let assets = [
        ("Common Manifests", !common.is_empty()),
        ("Openshift Manifests", !openshift.is_empty()),
        ("Master Machines", named("master-user-data-secret")),
        ("Worker Machines", named("worker-user-data-secret")),
    ];
    for (asset, present) in assets {
        if present {
            log.info(&format!("Consuming {asset} from target directory"));
        }
    }
    for rel in common.iter().chain(&openshift) {
        files::remove_consumed(dir, rel)?;
    }
    Ok(())
}
