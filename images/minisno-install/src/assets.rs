//! `create single-node-ignition-config`: the real file set of docs/bip-contract.md §2.
//!
//! Everything is generated in memory first, then written (files 0600, `auth/` 0750), then the
//! consumed `install-config.yaml` is deleted, as the real tool does. A directory that already
//! holds any output is refused and left untouched.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use rand::Rng;
use serde::Serialize;
use serde_json::{json, Value};

use crate::bip::{self, BipInputs, FixtureOptions};
use crate::install_config::{self, InstallConfig};
use crate::log::Logger;
use crate::pki::{self, Pki};
use crate::Failure;

pub const LIVE_IGN: &str = "bootstrap-in-place-for-live-iso.ign";
pub const KUBECONFIG: &str = "auth/kubeconfig";
pub const KUBEADMIN_PASSWORD: &str = "auth/kubeadmin-password";
pub const METADATA: &str = "metadata.json";
pub const WORKER_IGN: &str = "worker.ign";
pub const STATE: &str = ".openshift_install_state.json";

/// Every file the command writes besides the log; any of them present means "already generated".
pub const OUTPUTS: &[&str] = &[
    LIVE_IGN,
    KUBECONFIG,
    KUBEADMIN_PASSWORD,
    METADATA,
    WORKER_IGN,
    STATE,
];

/// The asset the command fetches, as the real tool names it in its messages.
pub const TARGET: &str = "Single Node Bootstrap In Place Ignition Config";

// ---------------------------------------------------------------------------------------------
// kubeconfig

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

// ---------------------------------------------------------------------------------------------
// small assets

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

/// `.openshift_install_state.json`: asset names to (non-secret) contents. Never keys, never the
/// pull secret, never the password.
pub fn state_json(
    redacted_config: &InstallConfig,
    cluster_id: &str,
    infra_id: &str,
    ca_cert_pem: &str,
    options: &FixtureOptions,
    log_level: &str,
) -> Value {
    let file = |name: &str| json!({"File": {"Filename": name}});
    json!({
        "*installconfig.InstallConfig": redacted_config,
        "*installconfig.ClusterID": {"UUID": cluster_id, "InfraID": infra_id},
        "*tls.KubeAPIServerLBSignerCertKey": {"Cert": ca_cert_pem},
        "*kubeconfig.AdminClient": file(KUBECONFIG),
        "*password.KubeadminPassword": file(KUBEADMIN_PASSWORD),
        "*cluster.Metadata": file(METADATA),
        "*machine.Worker": file(WORKER_IGN),
        "*bootstrap.SingleNodeBootstrapInPlace": file(LIVE_IGN),
        "*minisno.Fixture": {
            "note": "generated by minisno-install, a test fixture standing in for openshift-install; not OpenShift",
            "version": crate::RELEASE,
            "commit": crate::GIT_COMMIT,
            "releaseImage": crate::release_image(),
            "faults": options.faults.iter().map(|f| f.name()).collect::<Vec<_>>(),
            "schedule": format!("{:?}", options.schedule).to_lowercase(),
            "rebootDelayMin": options.reboot_delay_min,
            "logLevel": log_level,
        },
    })
}

// ---------------------------------------------------------------------------------------------
// the command

/// The files to write, relative to the asset directory.
pub struct Assets {
    pub files: Vec<(&'static str, Vec<u8>)>,
}

fn fatal(msg: impl std::fmt::Display) -> Failure {
    Failure::Fatal(format!("failed to fetch {TARGET}: {msg}"))
}

fn config_error(msg: impl std::fmt::Display) -> Failure {
    Failure::InstallConfig(format!(
        "failed to fetch {TARGET}: failed to load asset \"Install Config\": {msg}"
    ))
}

fn to_json(v: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON values serialize")
}

/// Generates every asset from a validated config.
pub fn generate(
    config: &InstallConfig,
    options: &FixtureOptions,
    log_level: &str,
) -> Result<Assets, Failure> {
    let name = config.metadata.name.as_str();
    let domain = config.base_domain.as_str();
    let defaulted = config.with_defaults();
    let redacted = defaulted.redacted();
    let redacted_yaml = defaulted
        .redacted_yaml()
        .map_err(|e| fatal(format!("failed to serialize the install-config: {e}")))?;

    let pki = pki::generate().map_err(|e| fatal(format!("failed to generate the PKI: {e}")))?;
    let admin_kubeconfig =
        kubeconfig(name, &format!("https://api.{name}.{domain}:6443"), &pki).map_err(fatal)?;
    let loopback_kubeconfig = kubeconfig(name, "https://localhost:6443", &pki).map_err(fatal)?;

    let inputs = BipInputs {
        cluster_name: name,
        base_domain: domain,
        installation_disk: config
            .bootstrap_in_place
            .as_ref()
            .map_or("", |b| b.installation_disk.as_str()),
        ssh_key: config.ssh_key.as_deref().unwrap_or(""),
        pull_secret: config.pull_secret.as_deref().unwrap_or(""),
        ca_cert_pem: &pki.ca_cert_pem,
        ca_key_pem: &pki.ca_key_pem,
        loopback_kubeconfig: &loopback_kubeconfig,
        admin_cert_pem: &pki.admin_cert_pem,
        admin_key_pem: &pki.admin_key_pem,
        install_config_yaml_redacted: &redacted_yaml,
        options,
    };
    let live = bip::live_ignition(&inputs)
        .map_err(|e| fatal(format!("failed to generate asset \"{TARGET}\": {e}")))?;

    let cluster_id = uuid::Uuid::new_v4().to_string();
    let infra_id = infra_id(name);
    let state = state_json(
        &redacted,
        &cluster_id,
        &infra_id,
        &pki.ca_cert_pem,
        options,
        log_level,
    );

    Ok(Assets {
        files: vec![
            (LIVE_IGN, to_json(&live)),
            (KUBECONFIG, admin_kubeconfig.into_bytes()),
            (KUBEADMIN_PASSWORD, kubeadmin_password().into_bytes()),
            (
                METADATA,
                to_json(&metadata_json(name, &cluster_id, &infra_id)),
            ),
            (
                WORKER_IGN,
                to_json(&worker_ign(name, domain, &pki.ca_cert_pem)),
            ),
            (STATE, to_json(&state)),
        ],
    })
}

/// Writes the assets; each file is created new with mode 0600.
pub fn write(dir: &Path, assets: &Assets) -> Result<(), Failure> {
    for (rel, data) in &assets.files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            if !parent.exists() {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o750)
                    .create(parent)
                    .map_err(|e| fatal(format!("failed to create {}: {e}", parent.display())))?;
            }
        }
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| fatal(format!("failed to write {}: {e}", path.display())))?;
        f.write_all(data)
            .map_err(|e| fatal(format!("failed to write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// The outputs already present in `dir`.
pub fn existing_outputs(dir: &Path) -> Vec<&'static str> {
    OUTPUTS
        .iter()
        .copied()
        .filter(|rel| dir.join(rel).symlink_metadata().is_ok())
        .collect()
}

/// `auth` as the real tool prints it next to the directory (`filepath.Join(dir, "auth")`).
fn auth_dir_display(dir: &Path) -> String {
    if dir == Path::new(".") || dir.as_os_str().is_empty() {
        "auth".into()
    } else {
        dir.join("auth").display().to_string()
    }
}

/// Runs `create single-node-ignition-config` in `dir`.
pub fn create(dir: &Path, log: &mut Logger, log_level: &str) -> Result<(), Failure> {
    log.debug(&format!("Fetching {TARGET}..."));
    let existing = existing_outputs(dir);
    if !existing.is_empty() {
        return Err(fatal(format!(
            "the target directory {} already holds generated assets ({}); minisno-install, like openshift-install, does not regenerate them: use a fresh directory",
            dir.display(),
            existing.join(", ")
        )));
    }

    log.debug("Loading Install Config...");
    let ic_path: PathBuf = dir.join(install_config::FILE);
    let text = match fs::read_to_string(&ic_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(config_error(format!(
                "{} not found in {} (minisno-install does not prompt for one)",
                install_config::FILE,
                dir.display()
            )))
        }
        Err(e) => return Err(fatal(format!("failed to read {}: {e}", ic_path.display()))),
    };
    let config = install_config::parse(&text).map_err(|e| {
        config_error(format!(
            "failed to create install config: failed to unmarshal {}: {e}",
            install_config::FILE
        ))
    })?;
    for key in install_config::unknown_top_level_keys(&text) {
        log.warn(&format!(
            "failed to parse first occurrence of unknown field: failed to unmarshal {}: unknown field \"{key}\"",
            install_config::FILE
        ));
    }
    crate::validate::validate(&config)
        .map_err(|e| config_error(format!("invalid \"{}\" file: {e}", install_config::FILE)))?;

    let options = FixtureOptions::from_env().map_err(|e| {
        fatal(format!(
            "invalid minisno fixture options in the environment (MINISNO_FAULTS, MINISNO_SCHEDULE, MINISNO_REBOOT_DELAY_MIN): {e}"
        ))
    })?;
    if !options.faults.is_empty() {
        let names: Vec<String> = options.faults.iter().map(|f| f.name()).collect();
        log.warn(&format!(
            "minisno fixture faults injected: {}",
            names.join(", ")
        ));
    }
    if std::env::var_os("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE").is_some() {
        log.warn(&format!(
            "Found override for release image ({}). Please be warned, this is not advised",
            crate::release_image()
        ));
    }
    log.info("Consuming Install Config from target directory");
    log.warn("Creating single node bootstrap in place configuration");

    let assets = generate(&config, &options, log_level)?;
    write(dir, &assets)?;
    fs::remove_file(&ic_path)
        .map_err(|e| fatal(format!("failed to remove {}: {e}", ic_path.display())))?;
    log.info(&format!(
        "Single-Node-Ignition-Config created in: {} and {}",
        dir.display(),
        auth_dir_display(dir)
    ));
    Ok(())
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

    #[test]
    fn auth_display() {
        assert_eq!(auth_dir_display(Path::new(".")), "auth");
        assert_eq!(auth_dir_display(Path::new("/tmp/x")), "/tmp/x/auth");
    }
}
