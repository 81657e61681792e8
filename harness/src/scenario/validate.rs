//! Validation of a scenario file's sections into a [`Scenario`], section by section, each
//! error naming the file, the line and what would be valid. Needs no backend: the hardware
//! facts (slots, disk names, the NAT layout) come from `hw`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::error::{Ctx, ScenarioError};
use super::files;
use super::model::*;
use super::names::check_name;
use super::units::{parse_duration, parse_size, DURATION_FORMS};
use crate::flow::phase::Phase;
use crate::hw::slots::disk_place;
use crate::hw::{naming, AioMode, Bus, Disk, DiskIo, Firmware, Sector, Throttle};

/// The QEMU ids the harness gives its own devices (`vm/qemu/argv.rs`), which no disk may take.
const HARNESS_QEMU_IDS: &[(&str, &str)] = &[
    ("cdrom0", "live ISO's drive"),
    ("net0", "network"),
    ("serial0", "serial console"),
    ("qmp0", "QMP socket"),
    ("rng0", "random number source"),
    ("scsi0", "SCSI controller"),
];
/// More memory than any host this runs on has is a typo; admission control would refuse it
/// only after the run directory exists.
const MAX_MEMORY: u64 = 16 << 40;
/// The largest image `qemu-img create -f qcow2` makes with its default 64 KiB clusters
/// (2 PiB); beyond it the disk would fail to be created, after the run started.
const MAX_DISK_SIZE: u64 = 2048 << 40;
/// A phase timeout of zero fails the phase before it starts; more than a week is a typo, and
/// scaling a huge one by --timeout-scale overflows.
const MIN_TIMEOUT: Duration = Duration::from_secs(1);
const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// QEMU's largest I/O throttling limit (`THROTTLE_VALUE_MAX`): it refuses to start with a
/// larger one.
const MAX_THROTTLE: u64 = 1_000_000_000_000_000;

/// The scenario of a parsed file, or its first error.
pub(super) fn validate(cx: &Ctx, f: ScenarioFile) -> Result<Scenario, ScenarioError> {
    check_name(cx, "name", &f.name)?;
    let (vcpus, memory_mib) = vm_size(cx, &f.vm)?;
    let firmware = *f.vm.firmware.get_ref();
    let disks = disks(cx, &f.disks)?;
    let (installation_disk, install_disk_id) = installation_disk(cx, &f, &disks)?;
    check_bootable(cx, &f, &disks, install_disk_id.as_ref(), firmware)?;
    check_slots(cx, &f, &disks)?;
    let profile = *f.profile.get_ref();
    let pull_secret = pull_secret(cx, &f, profile)?;
    let limits = timeouts(cx, &f.timeouts)?;
    let fixture = fixture_section(cx, &f, profile)?;
    let openshift = openshift_section(cx, &f, profile)?;
    check_expect(cx, &f.expect)?;
    check_nat(cx, &f)?;
    check_boot(cx, &f)?;
    check_install_mode(cx, &f)?;
    let badness_allow = badness_allow(cx, &f.badness)?;
    let additional_trust_bundle = trust_bundle(cx, &f.install)?;
    let inst = &f.install;
    Ok(Scenario {
        name: f.name.into_inner(),
        path: cx.file.to_path_buf(),
        profile,
        description: f.description,
        vm: VmConfig {
            vcpus,
            memory_mib,
            firmware,
            accel: f.vm.accel,
            boot_order: f.vm.boot_order,
            network: *f.vm.network.get_ref(),
        },
        disks,
        boot_source: *f.boot.source.get_ref(),
        install: InstallSpec {
            cluster: inst.cluster.clone(),
            base_domain: inst.base_domain.clone(),
            installation_disk,
            install_disk_id,
            network_type: inst.network_type.clone(),
            machine_network: inst.machine_network.clone(),
            cluster_network: inst.cluster_network.clone(),
            service_network: inst.service_network.clone(),
            control_plane_replicas: inst.control_plane_replicas,
            bootstrap_in_place: inst.bootstrap_in_place,
            pull_secret,
            // An empty section means none: how a matrix value says "without".
            proxy: inst.proxy.clone().filter(|p| {
                p.http_proxy.is_some() || p.https_proxy.is_some() || p.no_proxy.is_some()
            }),
            additional_trust_bundle,
            trust_bundle_policy: inst.trust_bundle_policy,
            fips: inst.fips,
            skip_hostcrypt_validation: inst.skip_hostcrypt_validation,
            capabilities: inst.capabilities.clone(),
            mode: *inst.mode.get_ref(),
            assisted: inst
                .assisted
                .as_ref()
                .map(|a| a.get_ref().clone())
                .unwrap_or_default(),
        },
        timeouts: limits.phases,
        disk_write_stall: limits.disk_write_stall,
        bootkube_max_restarts: limits.bootkube_restarts,
        fixture,
        openshift,
        expect: f.expect.map(Spanned::into_inner),
        etcd_check: f.checks.etcd_bootstrap_member_removed,
        process_crashes_fatal: f.badness.process_crashes.map(|c| c == CrashSeverity::Fatal),
        badness_allow,
    })
}

fn vm_size(cx: &Ctx, vm: &VmSection) -> Result<(u32, u64), ScenarioError> {
    // The range is checked as the file is read (`vcpu_count`), in the same words.
    let vcpus = *vm.vcpus.get_ref();
    if !(1..=MAX_VCPUS).contains(&vcpus) {
        return Err(cx.at(
            &vm.vcpus,
            format!("vm.vcpus: expected an integer from 1 to {MAX_VCPUS}, got {vcpus}"),
        ));
    }
    let memory = parse_size(vm.memory.get_ref())
        .map_err(|m| cx.at(&vm.memory, format!("vm.memory: {m}")))?;
    let memory_mib = memory / (1 << 20);
    if memory_mib < 512 {
        return Err(cx.at(&vm.memory, "vm.memory: at least 512MiB"));
    }
    if memory > MAX_MEMORY {
        return Err(cx.at(&vm.memory, "vm.memory: at most 16TiB"));
    }
    Ok((vcpus, memory_mib))
}

fn disks(cx: &Ctx, sections: &[Spanned<DiskSection>]) -> Result<Vec<Disk>, ScenarioError> {
    if sections.is_empty() {
        return Err(cx.err(None, "no [[disks]]: a scenario needs at least the installation disk, e.g.\n[[disks]]\nid = \"install\"\nsize = \"8GiB\""));
    }
    let mut disks = Vec::new();
    let mut seen = HashSet::new();
    let mut serials = HashSet::new();
    for sd in sections {
        let d = sd.get_ref();
        // It becomes a QEMU id (`-drive id=`): a letter first.
        let id_ok = d.id.starts_with(|c: char| c.is_ascii_lowercase())
            && d.id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !id_ok {
            return Err(cx.at(
                sd,
                format!(
                    "disk id {:?}: a lowercase letter, then lowercase letters, digits and '-'",
                    d.id
                ),
            ));
        }
        if let Some(what) = HARNESS_QEMU_IDS
            .iter()
            .find_map(|(id, what)| (*id == d.id).then_some(what))
        {
            return Err(cx.at(
                sd,
                format!(
                    "disk id {:?} is the harness's own QEMU id of the {what}: choose another",
                    d.id
                ),
            ));
        }
        if !seen.insert(d.id.clone()) {
            return Err(cx.at(sd, format!("disk id {:?} is used twice", d.id)));
        }
        let size_bytes =
            parse_size(d.size.get_ref()).map_err(|m| cx.at(&d.size, format!("disks.size: {m}")))?;
        if size_bytes < (64 << 20) {
            return Err(cx.at(&d.size, "disks.size: at least 64MiB"));
        }
        if size_bytes > MAX_DISK_SIZE {
            return Err(cx.at(
                &d.size,
                "disks.size: at most 2048TiB (the largest qcow2 image qemu-img creates)",
            ));
        }
        let serial = d.serial.clone().unwrap_or_else(|| format!("sno-{}", d.id));
        if serial.is_empty()
            || serial.len() > 20
            || !serial
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            // Without a serial the message must still point at something the file says.
            let whose = if d.serial.is_none() {
                format!(
                    " (the default for disk id {:?}: give it a shorter id or a serial)",
                    d.id
                )
            } else {
                String::new()
            };
            return Err(cx.at(sd, format!("disk serial {serial:?}{whose}: 1 to 20 characters of letters, digits, '-' or '_' (the limit of virtio, NVMe and ATA serials)")));
        }
        if !serials.insert(serial.clone()) {
            return Err(cx.at(sd, format!("disk serial {serial:?} is used twice: the guest's /dev/disk/by-id links would clash; give each disk its own serial")));
        }
        if d.bus == Bus::Sata && d.sector == Sector::S4k {
            return Err(cx.at(sd, format!("disk {:?}: SATA disks cannot have 4096-byte logical sectors in QEMU; use sector = \"512\" or \"512e\", or another bus", d.id)));
        }
        let io = disk_io(cx, d)?;
        disks.push(Disk {
            id: d.id.clone(),
            size_bytes,
            bus: d.bus,
            sector: d.sector,
            serial,
            io,
        });
    }
    Ok(disks)
}

/// `install.installation_disk` as the installer gets it (a by-id link of the first disk by
/// default), and the disk it names when it names one of the scenario's.
fn installation_disk(
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

/// SeaBIOS cannot boot a 4Kn installation disk.
fn check_bootable(
    cx: &Ctx,
    f: &ScenarioFile,
    disks: &[Disk],
    install_disk_id: Option<&String>,
    firmware: Firmware,
) -> Result<(), ScenarioError> {
    if let Some(id) = install_disk_id {
        let d = disks.iter().find(|d| &d.id == id).expect("resolved above");
        if firmware == Firmware::Bios && d.sector == Sector::S4k {
            let span = f
                .install
                .installation_disk
                .as_ref()
                .map(|s| s.span())
                .unwrap_or(f.vm.firmware.span());
            return Err(cx.err(Some(span), format!("disk {id:?} is 4K-native and vm.firmware is \"bios\": SeaBIOS and GRUB's BIOS boot code cannot boot 4Kn disks (neither can RHCOS); use firmware = \"uefi\" or sector = \"512e\"")));
        }
    }
    Ok(())
}

fn check_slots(cx: &Ctx, f: &ScenarioFile, disks: &[Disk]) -> Result<(), ScenarioError> {
    // A disk that does not fit the VM's slots gets an address QEMU refuses, after the run
    // directory and the disk images exist. Checked after the installation disk, whose by-path
    // error says more.
    let buses: Vec<Bus> = disks.iter().map(|d| d.bus).collect();
    for (i, sd) in f.disks.iter().enumerate() {
        disk_place(&buses, i).map_err(|m| {
            cx.at(
                sd,
                format!(
                    "disk {:?}: {m}; use fewer disks of its kind, or another bus",
                    disks[i].id
                ),
            )
        })?;
    }
    Ok(())
}

fn pull_secret(
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

/// The phase timeouts, the write-stall limit and the bootkube restart limit.
struct Timeouts {
    phases: BTreeMap<Phase, Duration>,
    disk_write_stall: Option<Duration>,
    bootkube_restarts: Option<u32>,
}

fn timeouts(
    cx: &Ctx,
    entries: &BTreeMap<Spanned<String>, Spanned<TimeoutValue>>,
) -> Result<Timeouts, ScenarioError> {
    let mut t = Timeouts {
        phases: BTreeMap::new(),
        disk_write_stall: None,
        bootkube_restarts: None,
    };
    for (k, v) in entries {
        let key = k.get_ref().as_str();
        if key == BOOTKUBE_RESTARTS_KEY {
            t.bootkube_restarts = Some(restart_limit(cx, v)?);
            continue;
        }
        let phase = Phase::from_name(key);
        if phase.is_none() && key != DISK_WRITE_STALL_KEY {
            return Err(cx.at(
                k,
                format!(
                    "timeouts.{key}: unknown key; the keys are the phases ({}), {DISK_WRITE_STALL_KEY} and {BOOTKUBE_RESTARTS_KEY}",
                    Phase::names().join(", ")
                ),
            ));
        }
        let d = duration_value(cx, key, v)?;
        match phase {
            Some(p) => {
                t.phases.insert(p, d);
            }
            None => t.disk_write_stall = Some(d),
        }
    }
    Ok(t)
}

/// A timeout: a duration of 1 s to 7 days.
fn duration_value(
    cx: &Ctx,
    key: &str,
    v: &Spanned<TimeoutValue>,
) -> Result<Duration, ScenarioError> {
    let refuse = |got: String| {
        cx.at(
            v,
            format!(
                "timeouts.{key}: expected a duration from 1s to 7d, {DURATION_FORMS}; got {got}"
            ),
        )
    };
    let text = match v.get_ref() {
        TimeoutValue::Text(text) => text,
        TimeoutValue::Count(n) => {
            return Err(refuse(format!(
                "the number {n} (a duration is a string, with its unit)"
            )))
        }
    };
    let d = parse_duration(text).map_err(|_| refuse(format!("the string {text:?}")))?;
    if !(MIN_TIMEOUT..=MAX_TIMEOUT).contains(&d) {
        return Err(refuse(format!("{text:?}, which is out of range")));
    }
    Ok(d)
}

/// `bootkube-restarts`: a whole number of restarts, 1 to 1000.
fn restart_limit(cx: &Ctx, v: &Spanned<TimeoutValue>) -> Result<u32, ScenarioError> {
    match v.get_ref() {
        TimeoutValue::Count(n) if (1..=1000).contains(n) => Ok(*n as u32),
        other => Err(cx.at(
            v,
            format!("timeouts.{BOOTKUBE_RESTARTS_KEY} = {other}: a whole number of restarts from 1 to 1000, e.g. {BOOTKUBE_RESTARTS_KEY} = 5 (leave it out for no limit)"),
        )),
    }
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

fn fixture_section(
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

fn openshift_section(
    cx: &Ctx,
    f: &ScenarioFile,
    profile: Profile,
) -> Result<Option<OpenshiftSpec>, ScenarioError> {
    Ok(match (&f.openshift, profile) {
        (Some(s), Profile::Fixture) => {
            return Err(cx.at(
                s,
                "an [openshift] section only applies to profile = \"openshift\"",
            ))
        }
        (Some(s), Profile::Openshift) => Some(OpenshiftSpec {
            // Not checked here: the run's preflight looks for it (exit 3), as `doctor` does.
            installer: s
                .get_ref()
                .installer
                .as_deref()
                .map(|p| files::resolve_program(cx.file, p)),
            release_image: s.get_ref().release_image.clone(),
            iso: own_iso(cx, s.get_ref())?,
        }),
        (None, Profile::Openshift) => Some(OpenshiftSpec {
            installer: None,
            release_image: None,
            iso: None,
        }),
        (None, Profile::Fixture) => None,
    })
}

/// `[openshift] iso` and `iso_sha256`: an http(s) URL with its digest, or a regular file
/// (relative to the scenario) with or without one. The file is not read here: an ISO is a GiB.
fn own_iso(cx: &Ctx, s: &OpenshiftSection) -> Result<Option<OwnIso>, ScenarioError> {
    let sha256 = match &s.iso_sha256 {
        Some(d)
            if d.get_ref().len() == 64 && d.get_ref().bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Some(d.get_ref().to_ascii_lowercase())
        }
        Some(d) => {
            return Err(cx.at(
                d,
                format!(
                    "openshift.iso_sha256 = {:?}: 64 hex digits, as sha256sum prints them",
                    d.get_ref()
                ),
            ))
        }
        None => None,
    };
    let Some(iso) = &s.iso else {
        return match &s.iso_sha256 {
            Some(d) => Err(cx.at(
                d,
                "openshift.iso_sha256 without openshift.iso: name the ISO it is the digest of",
            )),
            None => Ok(None),
        };
    };
    let text = iso.get_ref();
    if text.starts_with("http://") || text.starts_with("https://") {
        let Some(sha256) = sha256 else {
            return Err(cx.at(iso, format!("openshift.iso = {text:?} is a URL: add openshift.iso_sha256, the digest the download must have")));
        };
        return Ok(Some(OwnIso::Url {
            url: text.clone(),
            sha256,
        }));
    }
    if text.is_empty() || text.contains("://") {
        return Err(cx.at(
            iso,
            format!("openshift.iso = {text:?}: a path to the ISO, or an http:// or https:// URL"),
        ));
    }
    let path = files::resolve(cx.file, Path::new(text));
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(Some(OwnIso::File { path, sha256 })),
        Ok(_) => Err(cx.at(
            iso,
            format!("openshift.iso: {} is not a regular file", path.display()),
        )),
        Err(e) => Err(cx.at(
            iso,
            format!(
                "openshift.iso: {}: {e} (the path is relative to the scenario file, or absolute)",
                path.display()
            ),
        )),
    }
}

fn check_expect(cx: &Ctx, expect: &Option<Spanned<ExpectSection>>) -> Result<(), ScenarioError> {
    if let Some(spanned) = expect {
        let e = spanned.get_ref();
        if !["pass", "fail", "error"].contains(&e.verdict.as_str()) {
            return Err(cx.at(
                spanned,
                format!(
                    "expect.verdict = {:?}: use \"pass\", \"fail\" or \"error\"",
                    e.verdict
                ),
            ));
        }
        if let Some(p) = &e.failed_phase {
            if Phase::from_name(p).is_none() {
                return Err(cx.at(
                    spanned,
                    format!(
                        "expect.failed_phase = {p:?}: phases are {}",
                        Phase::names().join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A NAT network's layout comes from the machine network: refuse one it cannot use now, not
/// when the run creates the network.
fn check_nat(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let inst = &f.install;
    if *f.vm.network.get_ref() == GuestNetwork::Nat {
        if let Err(why) = crate::hw::nat::layout(&inst.machine_network) {
            return Err(cx.at(
                &f.vm.network,
                format!("vm.network = \"nat\": {why} (set install.machine_network, e.g. [\"192.168.126.0/24\"])"),
            ));
        }
    }
    Ok(())
}

/// The faults the harness's boot server plays need the minimal ISO's boot, which fetches only
/// the root filesystem from it.
fn check_boot(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
    let source = *f.boot.source.get_ref();
    let Some(fixture) = &f.fixture else {
        return Ok(());
    };
    let served = [
        crate::netboot::ROOTFS_404_FAULT,
        crate::netboot::ROOTFS_CORRUPT_FAULT,
    ];
    match fixture.get_ref().faults.iter().find(|x| served.contains(&x.get_ref().trim())) {
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

fn badness_allow(cx: &Ctx, badness: &BadnessSection) -> Result<Vec<String>, ScenarioError> {
    let mut badness_allow = Vec::new();
    for pattern in &badness.allow {
        if let Err(e) =
            crate::flow::badness::AllowList::new(std::slice::from_ref(pattern.get_ref()))
        {
            return Err(cx.at(
                pattern,
                format!(
                    "badness.allow: {:?} is not a valid regular expression: {}",
                    pattern.get_ref(),
                    e.to_string().lines().last().unwrap_or_default().trim()
                ),
            ));
        }
        badness_allow.push(pattern.get_ref().clone());
    }
    Ok(badness_allow)
}

/// `install.additional_trust_bundle`, resolved and read now: a run puts it into
/// install-config.yaml, and `plan` prints it.
fn trust_bundle(cx: &Ctx, inst: &InstallSection) -> Result<Option<PathBuf>, ScenarioError> {
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

/// A disk's `cache`, `aio` and `throttle`, checked: QEMU refuses native AIO without O_DIRECT,
/// and a throttle of nothing or of zero is a mistake, not a limit.
fn disk_io(cx: &Ctx, d: &DiskSection) -> Result<DiskIo, ScenarioError> {
    let cache = d.cache.as_ref().map(|c| *c.get_ref()).unwrap_or_default();
    let aio = d.aio.as_ref().map(|a| *a.get_ref()).unwrap_or_default();
    if let Some(a) = d.aio.as_ref().filter(|_| aio == AioMode::Native) {
        if !cache.direct() {
            let default = if d.cache.is_none() {
                " (the default)"
            } else {
                ""
            };
            return Err(cx.at(
                a,
                format!(
                    "disk {:?}: aio = \"native\" needs cache = \"none\" or \"directsync\" (QEMU refuses native AIO without O_DIRECT), and cache is {:?}{default}; set one of those, or use aio = \"threads\" or \"io_uring\"",
                    d.id,
                    cache.name()
                ),
            ));
        }
    }
    let throttle = match &d.throttle {
        None => None,
        Some(t) => {
            let sec = t.get_ref();
            if sec.bytes_per_s.is_none() && sec.iops.is_none() {
                return Err(cx.at(
                    t,
                    format!(
                        "disk {:?}: throttle sets no limit; give bytes_per_s, iops or both, e.g. throttle = {{ bytes_per_s = \"20MiB\", iops = 500 }} (leave throttle out for a disk without limits)",
                        d.id
                    ),
                ));
            }
            let bytes_per_s = match &sec.bytes_per_s {
                None => None,
                Some(b) => {
                    let zero = b
                        .get_ref()
                        .trim()
                        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                        .trim()
                        .parse::<f64>()
                        == Ok(0.0);
                    let v = if zero {
                        0
                    } else {
                        parse_size(b.get_ref())
                            .map_err(|m| cx.at(b, format!("disks.throttle.bytes_per_s: {m}")))?
                    };
                    Some(throttle_limit(cx, b, "bytes_per_s", v)?)
                }
            };
            let iops = match &sec.iops {
                None => None,
                Some(i) => Some(throttle_limit(cx, i, "iops", *i.get_ref())?),
            };
            Some(Throttle { bytes_per_s, iops })
        }
    };
    Ok(DiskIo {
        cache,
        aio,
        throttle,
    })
}

/// A throttling limit QEMU takes: more than 0, at most its maximum.
fn throttle_limit<T>(
    cx: &Ctx,
    at: &Spanned<T>,
    key: &str,
    value: u64,
) -> Result<u64, ScenarioError> {
    if value == 0 {
        return Err(cx.at(
            at,
            format!("disks.throttle.{key} = 0: a limit is more than 0; leave {key} out for none"),
        ));
    }
    if value > MAX_THROTTLE {
        return Err(cx.at(
            at,
            format!(
                "disks.throttle.{key}: {value} is more than QEMU's largest limit, {MAX_THROTTLE}"
            ),
        ));
    }
    Ok(value)
}

/// `[install.assisted]` goes with `mode = "assisted"`, and each karg is one `key[=value]` word.
fn check_install_mode(cx: &Ctx, f: &ScenarioFile) -> Result<(), ScenarioError> {
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
