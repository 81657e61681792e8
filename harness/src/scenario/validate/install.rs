//! `[install]`: the installation disk as the installer gets it, the pull secret and the trust
//! bundle (read now, so that `plan` refuses what a run would), and the install mode.

use std::path::PathBuf;

use super::{Ctx, ScenarioError};
use crate::hw::{naming, Bus, Disk};
use crate::scenario::files;
use crate::scenario::model::*;

/// `install.installation_disk` as the installer gets it (a by-id link of the first disk by
/// default), and the disk it names when it names one of the scenario's.
pub(super) fn installation_disk(
    cx: &Ctx,
    f: &ScenarioFile,
    disks: &[Disk],
) -> Result<(String, Option<String>), ScenarioError> {
    Ok(match &f.install.installation_disk {
        None => {
            let first = &disks[0];
            (naming::by_id(first), Some(first.id.clone()))
        }
        Some(spec) => match spec.get_ref() {
            InstallationDiskSpec::Literal(s) => (s.clone(), None),
            InstallationDiskSpec::Ref { by, disk } => {
                let Some(i) = disks.iter().position(|d| &d.id == disk) else {
                    let ids: Vec<&str> = disks.iter().map(|d| d.id.as_str()).collect();
                    return Err(cx.at(spec, format!("install.installation_disk names disk {disk:?}, which is not among the [[disks]] ({})", ids.join(", "))));
                };
                let value = match by {
                    DiskNaming::Id => naming::by_id(&disks[i]),
                    DiskNaming::Name => naming::kernel_name(disks, i)
                        .map_err(|m| cx.at(spec, format!("install.installation_disk: {m}")))?,
                    DiskNaming::Path if disks[i].multipath => {
                        return Err(cx.at(spec, format!("install.installation_disk: disk {disk:?} is multipath, and a by-path link names one of its two paths, not the disk; name it by = \"name\" ({}) or by = \"id\" ({})", crate::hw::multipath::MAP, naming::by_id(&disks[i]))));
                    }
                    DiskNaming::Path => {
                        let buses: Vec<Bus> = disks.iter().map(|d| d.bus).collect();
                        naming::by_path(&buses, i).map_err(|m| {
                            cx.at(spec, format!("install.installation_disk: disk {disk:?} has no by-path link: {m}; use fewer disks of its kind"))
                        })?
                    }
                };
                (value, Some(disk.clone()))
            }
        },
    })
}

pub(super) fn pull_secret(
    cx: &Ctx,
    f: &ScenarioFile,
    profile: Profile,
) -> Result<Option<SecretSource>, ScenarioError> {
    let Some(s) = &f.install.pull_secret else {
        if profile == Profile::Openshift {
            return Err(cx.at(&f.profile, "install.pull_secret is required for profile \"openshift\": { file = \"PATH\" } or { env = \"VARIABLE\" }"));
        }
        return Ok(None);
    };
    Ok(Some(match s.get_ref() {
        SecretSource::Env(v) if v.is_empty() => {
            return Err(cx.at(s, "install.pull_secret: env needs a variable name"))
        }
        SecretSource::Env(v) => SecretSource::Env(v.clone()),
        // Read now, so that `plan` refuses what a run would; a variable is read by the run
        // (it may be set only where the run happens).
        SecretSource::File(named) => {
            let path = files::resolve(cx.file, named);
            files::read_pull_secret(&path).map_err(|e| {
                cx.at(
                    s,
                    format!("install.pull_secret: {e} (the path is relative to the scenario file, or absolute; or use {{ env = \"VARIABLE\" }})"),
                )
            })?;
            SecretSource::File(path)
        }
    }))
}

/// `install.additional_trust_bundle`, resolved and read now: a run puts it into
/// install-config.yaml, and `plan` prints it.
pub(super) fn trust_bundle(
    cx: &Ctx,
    inst: &InstallSection,
) -> Result<Option<PathBuf>, ScenarioError> {
    Ok(match &inst.additional_trust_bundle {
        Some(p) if !p.get_ref().as_os_str().is_empty() => {
            let path = files::resolve(cx.file, p.get_ref());
            files::read_trust_bundle(&path).map_err(|e| {
                cx.at(
                    p,
                    format!("install.additional_trust_bundle: {e} (the path is relative to the scenario file, or absolute; \"\" for none)"),
                )
            })?;
            Some(path)
        }
        // An empty path means none: how a matrix value says "without".
        _ => None,
    })
}

/// `[install.assisted]` goes with `mode = "assisted"`, and each karg is one `key[=value]` word.
pub(super) fn check_install_mode(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let inst = &f.install;
    let Some(assisted) = &inst.assisted else {
        return Ok(());
    };
    if *inst.mode.get_ref() != InstallMode::Assisted {
        return Err(cx.at(
            assisted,
            format!(
                "[install.assisted] is for install.mode = \"assisted\" (this scenario's mode is {:?}); remove the section or set the mode",
                inst.mode.get_ref().as_str()
            ),
        ));
    }
    for karg in &assisted.get_ref().append_kargs {
        let bad = karg.is_empty()
            || karg.starts_with('-')
            || karg
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '\'' || c == '"');
        if bad {
            return Err(cx.at(
                assisted,
                format!("install.assisted.append_kargs: {karg:?} is not one kernel argument (a key or key=value, no spaces, quotes or leading '-')"),
            ));
        }
    }
    Ok(())
}

/// `[install.assisted]`, with `--copy-network` whenever the node has static addresses: the
/// assisted installer adds it for a host with a static network configuration
/// (assisted-service's installer arguments), so that the keyfiles the live system came up with
/// reach the installed system; and, before the scenario's own, the multipath kernel arguments
/// of a multipath installation disk, which assisted-service appends for such a disk
/// (internal/host/hostcommands/install_cmd.go). Its host Ignition is resolved against the
/// scenario file and checked now, so that `plan` refuses a bad one and no run is begun with it.
pub(super) fn assisted_section(
    cx: &Ctx,
    inst: &InstallSection,
    network: Option<&NetworkSpec>,
    multipath_kargs: &[String],
) -> Result<AssistedSection, ScenarioError> {
    let mut a = inst
        .assisted
        .as_ref()
        .map(|a| a.get_ref().clone())
        .unwrap_or_default();
    if network.is_some_and(|n| n.mode == NetworkMode::Static) {
        a.copy_network = true;
    }
    if *inst.mode.get_ref() == InstallMode::Assisted {
        let own = std::mem::take(&mut a.append_kargs);
        a.append_kargs = multipath_kargs.to_vec();
        a.append_kargs.extend(own);
    }
    a.host_ignition = match a.host_ignition.take() {
        // An empty path means none: how a matrix value says "without".
        Some(p) if p.as_os_str().is_empty() => None,
        Some(p) => {
            let path = files::resolve(cx.file, &p);
            files::host_ignition::read_host_ignition(&path).map_err(|e| {
                cx.at(
                    inst.assisted.as_ref().expect("the section holds the key"),
                    format!("install.assisted.host_ignition: {e} (the path is relative to the scenario file, or absolute)"),
                )
            })?;
            Some(path)
        }
        None => None,
    };
    Ok(a)
}
