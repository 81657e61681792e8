//! `[fixture]`: its faults (known to the fixture, each once; those the harness's boot server
//! plays with the boot they need), its schedule and the release it reports.

use std::collections::HashSet;

use toml::Spanned;

use super::{Ctx, ScenarioError};
use crate::scenario::model::*;

pub(super) fn fixture_section(
    cx: &Ctx,
    f: &ScenarioFile,
    profile: Profile,
) -> Result<Option<FixtureSpec>, ScenarioError> {
    Ok(match (&f.fixture, profile) {
        (Some(s), Profile::Openshift) => {
            return Err(cx.at(
                s,
                "a [fixture] section only applies to profile = \"fixture\"",
            ))
        }
        (Some(s), Profile::Fixture) => {
            let sec = s.get_ref();
            check_faults(cx, s, &sec.faults)?;
            if !["fast", "normal"].contains(&sec.schedule.as_str()) {
                return Err(cx.at(
                    s,
                    format!(
                        "fixture.schedule = {:?}: use \"fast\" or \"normal\"",
                        sec.schedule
                    ),
                ));
            }
            Some(FixtureSpec {
                faults: sec.faults.iter().map(|f| f.get_ref().clone()).collect(),
                schedule: sec.schedule.clone(),
                version: fixture_version(cx, sec.version.as_ref())?,
            })
        }
        (None, Profile::Fixture) => Some(FixtureSpec {
            faults: vec![],
            schedule: "fast".into(),
            version: None,
        }),
        (None, Profile::Openshift) => None,
    })
}

/// `fixture.version`: a release such as `4.14.3` or `4.16.0-rc.1`.
fn fixture_version(cx: &Ctx, v: Option<&Spanned<String>>) -> Result<Option<String>, ScenarioError> {
    let Some(v) = v else { return Ok(None) };
    let text = v.get_ref();
    let (release, suffix) = text.split_once('-').unwrap_or((text, ""));
    let numbers: Vec<&str> = release.split('.').collect();
    let ok = numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.len() <= 4 && n.bytes().all(|b| b.is_ascii_digit()))
        && suffix.len() <= 40
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.');
    if ok {
        Ok(Some(text.clone()))
    } else {
        Err(cx.at(
            v,
            format!("fixture.version = {text:?}: a release such as \"4.14.3\" or \"4.16.0-rc.1\""),
        ))
    }
}

/// The most faults a scenario names: the fixture takes them in one environment variable,
/// and no fault needs repeating.
const MAX_FAULTS: usize = 32;

/// Each fault one the fixture knows, in its form, once; a parameter a name (it travels in a
/// comma-separated list, and names a Kubernetes object).
fn check_faults<T>(
    cx: &Ctx,
    section: &Spanned<T>,
    faults: &[Spanned<String>],
) -> Result<(), ScenarioError> {
    if faults.len() > MAX_FAULTS {
        return Err(cx.at(
            section,
            format!(
                "fixture.faults: {} faults; at most {MAX_FAULTS}",
                faults.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    for fault in faults {
        let named = sno_fixture_faults::parse(fault.get_ref())
            .map_err(|e| cx.at(fault, format!("fixture.faults: {e}")))?;
        let param_ok = named.parameter.is_none_or(|p| {
            p.len() <= 63
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        });
        if !param_ok {
            return Err(cx.at(
                fault,
                format!(
                    "fixture.faults: {:?}: the parameter is a name: lowercase letters, digits and '-', at most 63",
                    fault.get_ref()
                ),
            ));
        }
        if !seen.insert(fault.get_ref().trim()) {
            return Err(cx.at(
                fault,
                format!("fixture.faults: {:?} is named twice", fault.get_ref()),
            ));
        }
    }
    Ok(())
}

/// The first of the file's faults that is one of `names`, as written (for its line).
fn first_of<'a>(f: &'a ScenarioFile, names: &[&str]) -> Option<&'a Spanned<String>> {
    let fixture = f.fixture.as_ref()?;
    fixture
        .get_ref()
        .faults
        .iter()
        .find(|x| names.contains(&x.get_ref().trim()))
}

/// The multipath faults act on a multipath installation disk.
pub(super) fn check_multipath(
    cx: &Ctx,
    f: &ScenarioFile,
    disks: &[Disk],
) -> Result<(), ScenarioError> {
    let Some(fault) = first_of(f, &[MULTIPATH_PATH_LOST_FAULT, MULTIPATH_NO_KARGS_FAULT]) else {
        return Ok(());
    };
    if disks.iter().any(|d| d.multipath) {
        return Ok(());
    }
    Err(cx.at(
        fault,
        format!(
            "fixture.faults: {:?} acts on a multipath installation disk, and this scenario has none: set multipath = true on the installation disk (bus = \"scsi\")",
            fault.get_ref()
        ),
    ))
}

/// Whether the scenario withholds the multipath kernel arguments from the install.
pub(super) fn withholds_multipath_kargs(f: &ScenarioFile) -> bool {
    first_of(f, &[MULTIPATH_NO_KARGS_FAULT]).is_some()
}

/// The faults the user network's side plays (its DHCP's hostname, the node's own resolver)
/// need the user network: a NAT network's dnsmasq names the node and answers its names itself.
pub(super) fn check_network(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    if *f.vm.network.get_ref() != GuestNetwork::Nat {
        return Ok(());
    }
    match first_of(f, &["apps-dns", "no-hostname"]) {
        Some(fault) => Err(cx.at(
            fault,
            format!(
                "fixture.faults: {:?} is played by the harness on QEMU's user network: it needs vm.network = \"user\" (a NAT network's dnsmasq names the node and answers its names itself)",
                fault.get_ref()
            ),
        )),
        None => Ok(()),
    }
}

/// The fault that leaves the keyfiles out of the install is about static addresses: without
/// them there is nothing for the install to copy, and the fault would change nothing.
pub(super) fn check_static_network(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let Some(fault) = first_of(f, &[COPY_NETWORK_MISSING_FAULT]) else {
        return Ok(());
    };
    let is_static = f
        .network
        .as_ref()
        .is_some_and(|n| *n.get_ref().mode.get_ref() == NetworkMode::Static);
    if is_static {
        return Ok(());
    }
    Err(cx.at(
        fault,
        format!(
            "fixture.faults: {:?} leaves the live system's NetworkManager keyfiles out of the install: it needs [network] mode = \"static\" (e.g. ipv4 = {{ address = \"10.0.2.15/24\", gateway = \"10.0.2.2\" }}, dns = [\"10.0.2.3\"] on the user network), without which the live system has none",
            fault.get_ref()
        ),
    ))
}

/// The fixture fault whose installer names a live ISO with an unsigned EFI boot loader.
pub const UNSIGNED_LOADER_FAULT: &str = "unsigned-loader";

/// The unsigned loader is a fault only where the firmware checks signatures, and its ISO is a
/// live ISO to boot whole (it carries no packed minimal ISO and no root filesystem: under
/// Secure Boot nothing past the loader is read).
pub(super) fn check_unsigned_loader(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let Some(fault) = first_of(f, &[UNSIGNED_LOADER_FAULT]) else {
        return Ok(());
    };
    let firmware = *f.vm.firmware.get_ref();
    let source = *f.boot.source.get_ref();
    let why = if !firmware.secure_boot() {
        format!("it needs vm.firmware = \"uefi-secure\", whose firmware refuses an unsigned loader (this scenario boots {:?}, which would run it)", firmware.as_str())
    } else if source != crate::scenario::BootSource::LiveIso {
        format!("it needs [boot] source = \"live-iso\": the faulty ISO is booted whole (this scenario boots {:?})", source.as_str())
    } else {
        return Ok(());
    };
    Err(cx.at(
        fault,
        format!(
            "fixture.faults: {:?} gives the live ISO an unsigned EFI boot loader: {why}",
            fault.get_ref()
        ),
    ))
}

/// The fixture fault whose install-to-disk runs coreos-installer without `-n`.
pub const COPY_NETWORK_MISSING_FAULT: &str = "copy-network-missing";

/// The faults the harness's boot server plays need the minimal ISO's boot, which fetches only
/// the root filesystem from it.
pub(super) fn check_boot(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let source = *f.boot.source.get_ref();
    let served = [
        crate::netboot::ROOTFS_404_FAULT,
        crate::netboot::ROOTFS_CORRUPT_FAULT,
    ];
    match first_of(f, &served) {
        // Under PXE the same server answers for the kernel and the initramfs first, which iPXE
        // would fail on before the live system's fetch this fault is about.
        Some(fault) if source != crate::scenario::BootSource::MinimalIso => Err(cx.at(
            fault,
            format!(
                "fixture.faults: {:?} is played by the harness's rootfs server: it needs [boot] source = \"minimal-iso\" (this scenario boots {:?})",
                fault.get_ref(),
                source.as_str()
            ),
        )),
        _ => Ok(()),
    }
}
