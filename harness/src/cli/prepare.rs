//! `sno-harness prepare`: a scenario's install assets, made as `run` makes them, for a machine
//! booted by other means (then followed with `observe`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use sno_harness::assets::{self, AssetsError, AssetsRequest};
use sno_harness::flow::phase::Phase;
use sno_harness::guest::ssh::SshKeyPair;
use sno_harness::scenario::{self, Scenario};

use super::error::{bad, harness, CliError, Outcome};

/// The key the install-config authorizes for `core`, in DIR.
const KEY_FILE: &str = "ssh-key";

/// Make a scenario's install assets without booting anything, for a machine booted by other
/// means and then followed with `observe`. DIR (new, owner-only) gets `live.iso` (the live ISO
/// with the installer's Ignition embedded and the serial console), `assets/` (the installer's
/// asset directory: auth/kubeconfig, the Ignition configs), `install-config.yaml` (as given to
/// the installer, its pull secret in it) and `ssh-key` (the key the install-config authorizes
/// for core; `ssh-key.pub` beside it). Exit 0 made, 1 the installer refused the
/// install-config, 2 bad input, 4 anything else failed (DIR is then removed).
#[derive(clap::Args)]
pub struct PrepareArgs {
    /// The scenario file (docs/scenario-format.md); its boot is the full live ISO's.
    scenario: PathBuf,
    /// Where the assets go: a directory that does not exist yet.
    #[arg(long, value_name = "DIR")]
    assets: PathBuf,
    /// Change a scenario key without editing the file, as `run` takes it.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<scenario::overrides::Override>,
}

pub fn prepare(a: PrepareArgs) -> Outcome {
    let s = scenario::overrides::load_with(&a.scenario, &a.set).map_err(bad)?;
    if s.boot_source.fetches_rootfs() {
        return Err(bad(format!(
            "{}: boot.source = {:?} fetches its root filesystem from the harness's boot server, which lives with a run; `prepare` makes the full live ISO only",
            s.path.display(),
            s.boot_source.as_str()
        )));
    }
    if a.assets.exists() {
        return Err(bad(format!(
            "--assets {}: it exists; the assets go into a new directory",
            a.assets.display()
        )));
    }
    sno_harness::util::private::create_dir_with_mode(
        &a.assets,
        sno_harness::util::private::PRIVATE_DIR,
    )
    .map_err(|e| harness(format!("creating {}: {e}", a.assets.display())))?;
    // Nothing half-made stays: a failure removes the directory.
    let made = match make(&s, &a.assets) {
        Ok(Ok(made)) => made,
        failed => {
            let _ = std::fs::remove_dir_all(&a.assets);
            let rejected = failed?.err().unwrap_or_default();
            errln!("sno-harness prepare: {rejected}");
            return Ok(sno_harness::exit::SCENARIO_FAILED);
        }
    };
    outln!("sno-harness prepare: {}", made.display());
    for line in [
        "  live.iso             the live ISO to boot (the installer's Ignition embedded)",
        "  assets/              the installer's asset directory (auth/kubeconfig)",
        "  install-config.yaml  the install-config given to the installer",
        "  ssh-key              the key the install-config authorizes for core",
    ] {
        outln!("{line}");
    }
    Ok(sno_harness::exit::OK)
}

/// Makes the assets in `dir`: the directory made, or the installer's refusal of the
/// install-config (`Ok(Err)`), or what else failed.
fn make(s: &Scenario, dir: &Path) -> Result<Result<PathBuf, String>, CliError> {
    let comment = format!("sno-harness prepare {}", s.name);
    let key = if s.install.fips {
        SshKeyPair::generate_for_fips(&comment)
    } else {
        SshKeyPair::generate(&comment)
    }
    .map_err(harness)?;
    let write = |name: &str, text: &str| {
        assets::write_private(&dir.join(name), text.as_bytes()).map_err(|e| harness(e.to_string()))
    };
    write(KEY_FILE, &key.private_openssh)?;
    write(
        &format!("{KEY_FILE}.pub"),
        &format!("{}\n", key.public_openssh),
    )?;
    let (installer, env) = sno_harness::run::installer_for(s).map_err(harness)?;
    // The redacted copies a run publishes are not wanted here: made aside and removed.
    let published = tempfile::Builder::new()
        .prefix(".published")
        .tempdir_in(dir)
        .map_err(|e| harness(format!("a scratch directory in {}: {e}", dir.display())))?;
    let timeouts = sno_harness::run::phase_timeouts(s, sno_harness::hw::Accel::Kvm, 1.0);
    let req = AssetsRequest {
        scenario: s,
        run_dir: published.path(),
        private_dir: dir,
        installer: &installer,
        installer_env: env,
        ssh_public_key: &key.public_openssh,
        cache_dir: &sno_harness::fixture::default_cache_dir(),
        hold_install: false,
        deadline: Instant::now() + timeouts[&Phase::Assets],
        rootfs_url: None,
    };
    match assets::prepare(&req) {
        Ok(_) => {}
        Err(e @ AssetsError::Rejected { .. }) => return Ok(Err(e.to_string())),
        Err(e) => return Err(harness(e)),
    }
    let (ic, _) = assets::render_install_config(s, &key.public_openssh).map_err(harness)?;
    write("install-config.yaml", &ic.to_yaml())?;
    Ok(Ok(sno_harness::util::lexical_absolute(dir)))
}
