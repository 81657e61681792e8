//! `create single-node-ignition-config`: the real file set of docs/bip-contract.md §2, made in
//! the real tool's order. Its targets are fetched one after the other, and each is written as
//! soon as it is made: the admin kubeconfig (whose loading of the install-config is where an
//! install-config error shows), the kubeadmin password, the worker config, then the
//! bootstrap-in-place config (whose generation makes the three BiP checks), then
//! `metadata.json`. So when a BiP check fails, `auth/`, `worker.ign` and the state are already
//! there and `install-config.yaml` is consumed, as with the real tool.
//!
//! After `create manifests` the install-config comes from the state, and the master
//! MachineConfigs of `manifests/` and `openshift/` go into the installed system's config; the
//! manifests are consumed at the end, as the real tool purges them.

pub mod files;
pub mod kubeconfig;
pub mod outputs;
pub mod small;
pub mod source;
pub mod state;

use std::path::Path;

use serde_json::{json, Value};

use crate::bip::{self, BipInputs, FixtureOptions};
use crate::install_config::{self, InstallConfig};
use crate::log::Logger;
use crate::pki::{self, Pki};
use crate::validate::{self, Host};
use crate::Failure;
use outputs::{
    created_message, existing_outputs, no_compute_replicas, KUBEADMIN_PASSWORD, KUBECONFIG,
    LIVE_IGN, METADATA, SCHEDULABLE_WARNING, WORKER_IGN,
};
use source::{Loaded, Origin};
use state::{ClusterIds, State};

/// The assets of the command, as the real tool names them in its messages.
pub const ADMIN_CLIENT_ASSET: &str = "Kubeconfig Admin Client";
pub const TARGET: &str = "Single node bootstrap In Place Ignition Config";

fn fatal_in(asset: &str, msg: impl std::fmt::Display) -> Failure {
    Failure::Fatal(format!("failed to fetch {asset}: {msg}"))
}

fn to_json(v: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON values serialize")
}

/// A directory that was used already is refused and left untouched.
fn refuse_regeneration(dir: &Path, state: Option<&State>, asset: &str) -> Result<(), Failure> {
    let existing = existing_outputs(dir, state);
    if existing.is_empty() {
        return Ok(());
    }
    Err(fatal_in(asset, format!(
        "the target directory {} already holds generated assets ({}); minisno-install, like openshift-install, does not regenerate them: use a fresh directory",
        dir.display(),
        existing.join(", ")
    )))
}

/// The fixture's options, checked before anything is written.
fn fixture_options(log: &mut Logger) -> Result<FixtureOptions, Failure> {
    let options = FixtureOptions::from_env().map_err(|e| {
        fatal_in(TARGET, format!(
            "invalid minisno fixture options in the environment (MINISNO_FAULTS, MINISNO_SCHEDULE, MINISNO_REBOOT_DELAY_MIN, MINISNO_VERSION): {e}"
        ))
    })?;
    if !options.faults.is_empty() {
        let names: Vec<String> = options.faults.iter().map(|f| f.name()).collect();
        log.warn(&format!(
            "minisno fixture faults injected: {}",
            names.join(", ")
        ));
    }
    if std::env::var_os(crate::release::IMAGE_OVERRIDE_ENV).is_some() {
        log.warn(&format!(
            "Found override for release image ({}). Please be warned, this is not advised",
            options.release_image()
        ));
    }
    Ok(options)
}

/// Everything made along the way that later targets need.
struct Run<'a> {
    dir: &'a Path,
    config: InstallConfig,
    origin: Origin,
    options: FixtureOptions,
    state: State,
    ids: ClusterIds,
    pki: Pki,
}

impl Run<'_> {
    fn save_state(&self) -> Result<(), Failure> {
        self.state.save(self.dir).map_err(|e| fatal_in(TARGET, e))
    }

    fn write(&mut self, asset: &str, key: &str, rel: &str, data: &[u8]) -> Result<(), Failure> {
        files::write_new(self.dir, rel, data).map_err(|e| {
            fatal_in(
                asset,
                format!("failed to write asset ({asset}) to disk: {e}"),
            )
        })?;
        self.state.set_file(key, rel);
        self.save_state()
    }
}

/// Runs `create single-node-ignition-config` in `dir`.
pub fn create(dir: &Path, log: &mut Logger, log_level: &str) -> Result<(), Failure> {
    log.debug(&format!("Fetching {ADMIN_CLIENT_ASSET}..."));
    let state = State::load(dir).map_err(|e| fatal_in(ADMIN_CLIENT_ASSET, e))?;
    refuse_regeneration(dir, state.as_ref(), TARGET)?;
    let loaded = source::load(
        dir,
        log,
        &Host::current(),
        ADMIN_CLIENT_ASSET,
        state.as_ref(),
    )?;
    let options = fixture_options(log)?;
    let mut run = start_run(dir, loaded, state, options)?;
    write_early_targets(&mut run, log)?;
    write_bootstrap_in_place(&mut run, log)?;
    let meta = small::metadata_json(
        &run.config.metadata.name,
        &run.ids.cluster_id,
        &run.ids.infra_id,
    );
    run.write("Metadata", "*cluster.Metadata", METADATA, &to_json(&meta))?;
    run.state
        .set("*minisno.Fixture", fixture_record(&run.options, log_level));
    run.save_state()?;
    if run.origin == Origin::Manifests {
        crate::manifests::consume(dir, log)
            .map_err(|e| fatal_in(TARGET, format!("failed to purge asset: {e}")))?;
    }
    log.info(&created_message(
        "Single-Node-Ignition-Config",
        dir,
        &[
            LIVE_IGN,
            KUBECONFIG,
            KUBEADMIN_PASSWORD,
            METADATA,
            WORKER_IGN,
        ],
    ));
    Ok(())
}

fn start_run<'a>(
    dir: &'a Path,
    loaded: Loaded,
    state: Option<State>,
    options: FixtureOptions,
) -> Result<Run<'a>, Failure> {
    let state = state.unwrap_or_default();
    let ids = state
        .cluster_id()
        .unwrap_or_else(|| ClusterIds::new(&loaded.config.metadata.name));
    let pki = pki::generate().map_err(|e| {
        fatal_in(
            ADMIN_CLIENT_ASSET,
            format!("failed to generate the PKI: {e}"),
        )
    })?;
    Ok(Run {
        dir,
        config: loaded.config,
        origin: loaded.origin,
        options,
        state,
        ids,
        pki,
    })
}

/// The admin kubeconfig, the kubeadmin password and the worker config. The install-config
/// file is consumed with the first of them.
fn write_early_targets(run: &mut Run, log: &mut Logger) -> Result<(), Failure> {
    let name = run.config.metadata.name.clone();
    let domain = run.config.base_domain.clone();
    run.state.set_install_config(&run.config);
    run.state.set_cluster_id(&run.ids);
    run.save_state()?;
    if run.origin == Origin::File {
        log.info("Consuming Install Config from target directory");
        files::remove_consumed(run.dir, install_config::FILE)
            .map_err(|e| fatal_in(ADMIN_CLIENT_ASSET, format!("failed to purge asset: {e}")))?;
    }
    let admin = kubeconfig::kubeconfig(
        &name,
        &format!("https://api.{name}.{domain}:6443"),
        &run.pki,
    )
    .map_err(|e| fatal_in(ADMIN_CLIENT_ASSET, e))?;
    run.write(
        ADMIN_CLIENT_ASSET,
        state::ADMIN_CLIENT,
        KUBECONFIG,
        admin.as_bytes(),
    )?;
    let password = small::kubeadmin_password();
    run.write(
        "Kubeadmin Password",
        "*password.KubeadminPassword",
        KUBEADMIN_PASSWORD,
        password.as_bytes(),
    )?;
    let worker = small::worker_ign(&name, &domain, &run.pki.ca_cert_pem);
    run.write(
        "Worker Ignition Config",
        "*machine.Worker",
        WORKER_IGN,
        &to_json(&worker),
    )
}

/// The bootstrap-in-place config: its checks first, then the live config with the installed
/// system's config inside.
fn write_bootstrap_in_place(run: &mut Run, log: &mut Logger) -> Result<(), Failure> {
    log.debug(&format!("Fetching {TARGET}..."));
    if no_compute_replicas(&run.config) {
        log.warn(SCHEDULABLE_WARNING);
    }
    validate::bootstrap_in_place::verify(&run.config).map_err(|e| {
        fatal_in(
            TARGET,
            format!("failed to generate asset \"{TARGET}\": {e}"),
        )
    })?;
    let master = match run.origin {
        Origin::Manifests => {
            crate::manifests::machine_config::master_config(run.dir).map_err(|e| {
                fatal_in(
                    TARGET,
                    format!("failed to generate asset \"{TARGET}\": {e}"),
                )
            })?
        }
        Origin::File => Default::default(),
    };
    let live = live_ignition(run, &master)?;
    run.write(
        TARGET,
        "*bootstrap.SingleNodeBootstrapInPlace",
        LIVE_IGN,
        &to_json(&live),
    )
}

fn live_ignition(
    run: &Run,
    master: &crate::manifests::machine_config::MasterConfig,
) -> Result<Value, Failure> {
    let generate = |e: String| {
        fatal_in(
            TARGET,
            format!("failed to generate asset \"{TARGET}\": {e}"),
        )
    };
    let c = &run.config;
    let redacted_yaml = c.redacted_yaml().map_err(&generate)?;
    let loopback = kubeconfig::kubeconfig(&c.metadata.name, "https://localhost:6443", &run.pki)
        .map_err(&generate)?;
    let inputs = BipInputs {
        cluster_name: &c.metadata.name,
        base_domain: &c.base_domain,
        installation_disk: c
            .bootstrap_in_place
            .as_ref()
            .map_or("", |b| b.installation_disk.as_str()),
        ssh_key: c.ssh_key.as_deref().unwrap_or(""),
        pull_secret: c.pull_secret.as_deref().unwrap_or(""),
        ca_cert_pem: &run.pki.ca_cert_pem,
        ca_key_pem: &run.pki.ca_key_pem,
        loopback_kubeconfig: &loopback,
        admin_cert_pem: &run.pki.admin_cert_pem,
        admin_key_pem: &run.pki.admin_key_pem,
        install_config_yaml_redacted: &redacted_yaml,
        master_files: &master.files,
        master_units: &master.units,
        options: &run.options,
        ipv6_primary: c
            .networking
            .as_ref()
            .and_then(|n| n.service_network.first())
            .is_some_and(|s| s.contains(':')),
    };
    bip::live_ignition(&inputs).map_err(|e| generate(e.to_string()))
}

/// The fixture's own entry in the state: what it is and how it was asked to behave.
fn fixture_record(options: &FixtureOptions, log_level: &str) -> Value {
    json!({
        "note": "generated by minisno-install, a test fixture standing in for openshift-install; not OpenShift",
        "version": options.version,
        "commit": crate::GIT_COMMIT,
        "releaseImage": options.release_image(),
        "faults": options.faults.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "schedule": format!("{:?}", options.schedule).to_lowercase(),
        "rebootDelayMin": options.reboot_delay_min,
        "logLevel": log_level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_in_lists_directories_like_the_real_tool() {
        let all = [
            LIVE_IGN,
            KUBECONFIG,
            KUBEADMIN_PASSWORD,
            METADATA,
            WORKER_IGN,
        ];
        assert_eq!(
            created_message("Single-Node-Ignition-Config", Path::new("."), &all),
            "Single-Node-Ignition-Config created in: . and auth"
        );
        assert_eq!(
            created_message("Single-Node-Ignition-Config", Path::new("/tmp/x/"), &all),
            "Single-Node-Ignition-Config created in: /tmp/x and /tmp/x/auth"
        );
        assert_eq!(
            created_message(
                "Manifests",
                Path::new("d"),
                &["manifests/a.yaml", "openshift/b.yaml"]
            ),
            "Manifests created in: d/manifests and d/openshift"
        );
        assert_eq!(
            created_message("X", Path::new("d"), &["a/1", "b/1", "c/1", "e/1"]),
            "X created in: d"
        );
    }
}
