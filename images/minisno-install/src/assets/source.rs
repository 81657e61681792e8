//! Where a command gets its install-config, as the real tool's install-config asset does: the
//! file `install-config.yaml` (decoded, defaulted and validated; its errors are exit-3
//! install-config errors), or, when `create manifests` has consumed the file, the config saved
//! in the state (not validated again).

use std::path::Path;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::state::State;
use crate::install_config::{self, InstallConfig};
use crate::log::Logger;
use crate::validate::{self, Host};
use crate::Failure;

/// The annotation by which the real tool records that the FIPS host check was skipped.
pub const HOSTCRYPT_BYPASSED: &str = "install.openshift.io/hostcrypt-check-bypassed";

/// The manifest `create manifests` writes the pull secret into.
pub const PULL_SECRET_MANIFEST: &str = "manifests/openshift-config-secret-pull-secret.yaml";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `install-config.yaml` in the directory.
    File,
    /// The state that `create manifests` left.
    Manifests,
}

/// The install-config a command works from: defaults applied, pull secret included.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: InstallConfig,
    pub origin: Origin,
}

/// The error of the install-config asset, as the first target that loads it reports it.
fn config_error(target: &str, msg: impl std::fmt::Display) -> Failure {
    Failure::InstallConfig(format!(
        "failed to fetch {target}: failed to load asset \"Install Config\": failed to create install config: {msg}"
    ))
}

/// Loads the install-config for the command whose first target is `target`. The state of
/// `create manifests` is used only when `allow_state` and no install-config.yaml is present.
pub fn load(
    dir: &Path,
    log: &mut Logger,
    host: &Host,
    target: &str,
    state: Option<&State>,
) -> Result<Loaded, Failure> {
    log.debug("Loading Install Config...");
    let path = dir.join(install_config::FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => from_file(&text, log, host, target),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match state {
            Some(s) if s.has(super::state::MANIFESTS) => from_manifests_state(dir, s),
            _ => Err(no_file(dir, target)),
        },
        Err(e) => Err(config_error(
            target,
            format!("open {}: {e}", path.display()),
        )),
    }
}

/// Without the file the real tool asks for the settings on a terminal and fails anywhere else:
/// a fatal error, not an install-config error.
fn no_file(dir: &Path, target: &str) -> Failure {
    Failure::Fatal(format!(
        "failed to fetch {target}: {} not found in {}: openshift-install would ask for the settings on a terminal; minisno-install does not ask",
        install_config::FILE,
        dir.display()
    ))
}

fn from_file(text: &str, log: &mut Logger, host: &Host, target: &str) -> Result<Loaded, Failure> {
    let unmarshal = |e: &dyn std::fmt::Display| {
        config_error(
            target,
            format!("failed to unmarshal {}: {e}", install_config::FILE),
        )
    };
    let parsed = install_config::parse(text).map_err(|e| unmarshal(&e))?;
    if let Some(key) = install_config::unknown_top_level_keys(text).first() {
        let [warning, info] = install_config::unknown_field_messages(key);
        log.warn(&warning);
        log.info(&info);
    }
    if let Some(e) = parsed.network_decode_error() {
        return Err(unmarshal(&e));
    }
    let mut config = parsed.with_defaults();
    let outcome = validate::validate(&config, host);
    if let Some(refusal) = &outcome.hostcrypt_bypassed {
        log.warn(refusal);
        config
            .metadata
            .annotations
            .insert(HOSTCRYPT_BYPASSED.into(), "true".into());
    }
    if let Some(errors) = outcome.error_text() {
        return Err(config_error(
            target,
            format!("invalid \"{}\" file: {errors}", install_config::FILE),
        ));
    }
    Ok(Loaded {
        config,
        origin: Origin::File,
    })
}

fn from_manifests_state(dir: &Path, state: &State) -> Result<Loaded, Failure> {
    let mut config = state.install_config().ok_or_else(|| {
        Failure::Fatal("failed to load asset \"Install Config\" from state file: the saved install-config cannot be read".into())
    })?;
    config.pull_secret = Some(pull_secret_from_manifest(dir).map_err(Failure::Fatal)?);
    Ok(Loaded {
        config,
        origin: Origin::Manifests,
    })
}

/// The pull secret out of its manifest (`data[.dockerconfigjson]`, base64).
pub fn pull_secret_from_manifest(dir: &Path) -> Result<String, String> {
    let path = dir.join(PULL_SECRET_MANIFEST);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("failed to read {}: {e}", path.display()))?;
    let secret: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
    let b64 = secret["data"][".dockerconfigjson"]
        .as_str()
        .ok_or_else(|| format!("{} has no data[.dockerconfigjson]", path.display()))?;
    B64.decode(b64)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            format!(
                "{}: data[.dockerconfigjson] is not base64 text",
                path.display()
            )
        })
}
