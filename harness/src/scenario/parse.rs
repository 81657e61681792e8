//! Parsing and validating a scenario file. Every error names the file, the line and what would
//! be valid; nothing is started before a scenario is valid.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::model::*;
use super::units::{parse_duration, parse_size};
use crate::flow::phase::Phase;
use crate::hw::slots::disk_place;
use crate::hw::{naming, AioMode, Bus, Disk, DiskIo, Firmware, Sector, Throttle};

/// Names become directory names (and parts of permutation ids): well under the 255 bytes a
/// file name may have.
pub(crate) const MAX_NAME_LEN: usize = 100;
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

/// A bad scenario: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// 1-based; None when the error is about the file as a whole.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file.display(), self.message),
            (Some(l), None) => write!(f, "{}:{l}: {}", self.file.display(), self.message),
            _ => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

struct Ctx<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Option<Range<usize>>, message: impl Into<String>) -> ScenarioError {
        let (line, column) = match span.filter(|s| s.end > 0 || s.start > 0) {
            Some(s) => {
                let (line, column) = line_column(self.text.as_bytes(), s.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        ScenarioError {
            file: self.file.to_path_buf(),
            line,
            column,
            message: shorten_long_words(&message.into()),
        }
    }

    fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        self.err(Some(s.span()), message)
    }
}

/// 1-based line and column (in bytes) of byte `at`.
fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let upto = &bytes[..at.min(bytes.len())];
    let line_start = upto.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
    (line, upto.len() - line_start + 1)
}

/// Messages quote what the file says; one pathological token (a megabyte-long key or value)
/// would bury what the message says around it.
pub(crate) fn shorten_long_words(message: &str) -> String {
    const LONG: usize = 120;
    if message.split(' ').all(|w| w.len() <= LONG) {
        return message.to_string();
    }
    message
        .split(' ')
        .map(|w| {
            if w.len() <= LONG {
                return w.to_string();
            }
            let mut head = 60;
            while !w.is_char_boundary(head) {
                head -= 1;
            }
            let mut tail = w.len() - 20;
            while !w.is_char_boundary(tail) {
                tail += 1;
            }
            format!("{}...({} bytes)...{}", &w[..head], w.len(), &w[tail..])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let whole_file = |message: String| ScenarioError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        message,
    };
    // A device or FIFO would be read forever, or block: only a regular file is a scenario.
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            return Err(whole_file(
                "cannot read the scenario: not a regular file; a scenario is a TOML file".into(),
            ))
        }
        Err(e) => return Err(whole_file(format!("cannot read the scenario: {e}"))),
        Ok(_) => {}
    }
    let bytes =
        std::fs::read(path).map_err(|e| whole_file(format!("cannot read the scenario: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, column) = line_column(e.as_bytes(), at);
        ScenarioError {
            file: path.to_path_buf(),
            line: Some(line),
            column: Some(column),
            message: format!(
                "byte 0x{:02x} is not UTF-8: a scenario is a TOML file, which is UTF-8 text",
                e.as_bytes()[at]
            ),
        }
    })?;
    parse_str(path, &text)
}

pub fn parse_str(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let cx = Ctx { file: path, text };
    // TOML forbids control characters anyway; saying so beats the parser's guess at a key.
    if let Some(at) = text.find('\0') {
        return Err(cx.err(
            Some(at..at + 1),
            "a NUL byte: this is not a text file; a scenario is a TOML text file (name = ..., profile = ..., [[disks]] ...)",
        ));
    }
    let file: ScenarioFile = toml::from_str(text)
        .map_err(|e| cx.err(e.span(), e.message().trim().replace('\n', "; ")))?;
    validate(&cx, file)
}

fn check_name(cx: &Ctx, what: &str, s: &Spanned<String>) -> Result<(), ScenarioError> {
    let ok = !s.get_ref().is_empty()
        && s.get_ref().len() <= MAX_NAME_LEN
        && s.get_ref().chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' || c == '_'
        });
    if ok {
        Ok(())
    } else {
        Err(cx.at(
            s,
            format!(
                "{what} {:?} must be 1 to {MAX_NAME_LEN} lowercase letters, digits, '-', '.' or '_'",
                s.get_ref()
            ),
        ))
    }
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

fn validate(cx: &Ctx, f: ScenarioFile) -> Result<Scenario, ScenarioError> {
    check_name(cx, "name", &f.name)?;

    // --- vm
    let vcpus = *f.vm.vcpus.get_ref();
    if !(1..=64).contains(&vcpus) {
        return Err(cx.at(&f.vm.vcpus, format!("vm.vcpus = {vcpus}: must be 1 to 64")));
    }
    let memory = parse_size(f.vm.memory.get_ref())
        .map_err(|m| cx.at(&f.vm.memory, format!("vm.memory: {m}")))?;
    let memory_mib = memory / (1 << 20);
    if memory_mib < 512 {
        return Err(cx.at(&f.vm.memory, "vm.memory: at least 512MiB"));
    }
    if memory > MAX_MEMORY {
        return Err(cx.at(&f.vm.memory, "vm.memory: at most 16TiB"));
    }
    let firmware = *f.vm.firmware.get_ref();

    // --- disks
    if f.disks.is_empty() {
        return Err(cx.err(None, "no [[disks]]: a scenario needs at least the installation disk, e.g.\n[[disks]]\nid = \"install\"\nsize = \"8GiB\""));
    }
    let mut disks = Vec::new();
    let mut seen = HashSet::new();
    let mut serials = HashSet::new();
    for sd in &f.disks {
        let d = sd.get_ref();
        let id_ok = !d.id.is_empty()
            && d.id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !id_ok {
            return Err(cx.at(
                sd,
                format!("disk id {:?}: use lowercase letters, digits and '-'", d.id),
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

    // --- install
    let inst = &f.install;
    let (installation_disk, install_disk_id) = match &inst.installation_disk {
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
                    DiskNaming::Name => naming::kernel_name(&disks, i)
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
    };
    if let Some(id) = &install_disk_id {
        let d = disks.iter().find(|d| &d.id == id).expect("resolved above");
        if firmware == Firmware::Bios && d.sector == Sector::S4k {
            let span = inst
                .installation_disk
                .as_ref()
                .map(|s| s.span())
                .unwrap_or(f.vm.firmware.span());
            return Err(cx.err(Some(span), format!("disk {id:?} is 4K-native and vm.firmware is \"bios\": SeaBIOS and GRUB's BIOS boot code cannot boot 4Kn disks (neither can RHCOS); use firmware = \"uefi\" or sector = \"512e\"")));
        }
    }
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
    let pull_secret = inst.pull_secret.as_ref().map(|s| s.get_ref().clone());
    let profile = *f.profile.get_ref();
    if profile == Profile::Openshift && pull_secret.is_none() {
        return Err(cx.at(&f.profile, "install.pull_secret is required for profile \"openshift\": { file = \"PATH\" } or { env = \"VARIABLE\" }"));
    }
    if let Some(s) = &inst.pull_secret {
        if let SecretSource::Env(v) = s.get_ref() {
            if v.is_empty() {
                return Err(cx.at(s, "install.pull_secret: env needs a variable name"));
            }
        }
    }

    // --- timeouts
    let mut timeouts = BTreeMap::new();
    let mut disk_write_stall = None;
    for (k, v) in &f.timeouts {
        let phase = Phase::from_name(k.get_ref());
        if phase.is_none() && k.get_ref() != DISK_WRITE_STALL_KEY {
            return Err(cx.at(
                k,
                format!(
                    "timeouts.{}: unknown key; the keys are the phases ({}) and {DISK_WRITE_STALL_KEY}",
                    k.get_ref(),
                    Phase::names().join(", ")
                ),
            ));
        }
        let d = parse_duration(v.get_ref())
            .map_err(|m| cx.at(v, format!("timeouts.{}: {m}", k.get_ref())))?;
        if !(MIN_TIMEOUT..=MAX_TIMEOUT).contains(&d) {
            return Err(cx.at(
                v,
                format!(
                    "timeouts.{} = {:?}: out of range; use 1s to 7d",
                    k.get_ref(),
                    v.get_ref()
                ),
            ));
        }
        let Some(phase) = phase else {
            disk_write_stall = Some(d);
            continue;
        };
        timeouts.insert(phase, d);
    }

    // --- profile sections
    let fixture = match (&f.fixture, profile) {
        (Some(s), Profile::Openshift) => {
            return Err(cx.at(
                s,
                "a [fixture] section only applies to profile = \"fixture\"",
            ))
        }
        (Some(s), Profile::Fixture) => {
            let sec = s.get_ref();
            for fault in &sec.faults {
                if let Err(e) = sno_fixture_faults::parse(fault.get_ref()) {
                    return Err(cx.at(fault, format!("fixture.faults: {e}")));
                }
            }
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
            })
        }
        (None, Profile::Fixture) => Some(FixtureSpec {
            faults: vec![],
            schedule: "fast".into(),
        }),
        (None, Profile::Openshift) => None,
    };
    let openshift = match (&f.openshift, profile) {
        (Some(s), Profile::Fixture) => {
            return Err(cx.at(
                s,
                "an [openshift] section only applies to profile = \"openshift\"",
            ))
        }
        (Some(s), Profile::Openshift) => Some(OpenshiftSpec {
            installer: s.get_ref().installer.clone(),
            release_image: s.get_ref().release_image.clone(),
        }),
        (None, Profile::Openshift) => Some(OpenshiftSpec {
            installer: None,
            release_image: None,
        }),
        (None, Profile::Fixture) => None,
    };
    if let Some(spanned) = &f.expect {
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

    if *f.vm.network.get_ref() == GuestNetwork::Nat {
        // The network's layout comes from the machine network: refuse one it cannot use now,
        // not when the run creates the network.
        if let Err(why) = crate::hw::nat::layout(&inst.machine_network) {
            return Err(cx.at(
                &f.vm.network,
                format!("vm.network = \"nat\": {why} (set install.machine_network, e.g. [\"192.168.126.0/24\"])"),
            ));
        }
    }

    let mut badness_allow = Vec::new();
    for pattern in &f.badness.allow {
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

    // Relative to the scenario file, like every path a scenario names. Checked now: reading it
    // is the first thing a run does, after making its directory.
    let additional_trust_bundle = match &inst.additional_trust_bundle {
        Some(p) if !p.get_ref().as_os_str().is_empty() => {
            let path = match cx.file.parent() {
                Some(dir) if p.get_ref().is_relative() => dir.join(p.get_ref()),
                _ => p.get_ref().clone(),
            };
            if !path.is_file() {
                return Err(cx.at(
                    p,
                    format!(
                        "install.additional_trust_bundle: {} is not a file; name a PEM file, relative to the scenario file or absolute (\"\" for none)",
                        path.display()
                    ),
                ));
            }
            Some(path)
        }
        // An empty path means none: how a matrix value says "without".
        _ => None,
    };

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
            fips: inst.fips,
            capabilities: inst.capabilities.clone(),
        },
        timeouts,
        disk_write_stall,
        fixture,
        openshift,
        expect: f.expect.map(Spanned::into_inner),
        badness_allow,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::CacheMode;
    use std::time::Duration;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        parse_str(Path::new("s.toml"), text)
    }

    const SMOKE: &str = r#"
name = "smoke"
profile = "fixture"

[vm]
firmware = "bios"

[[disks]]
id = "install"
size = "8GiB"
bus = "virtio"

[install]
installation_disk = { by = "id", disk = "install" }

[timeouts]
bootkube = "5m"
"#;

    #[test]
    fn a_small_scenario_resolves_its_defaults() {
        let s = parse(SMOKE).unwrap();
        assert_eq!(s.vm.vcpus, 2);
        assert_eq!(s.vm.memory_mib, 3072);
        assert_eq!(
            s.install.installation_disk,
            "/dev/disk/by-id/virtio-sno-install"
        );
        assert_eq!(s.install.install_disk_id.as_deref(), Some("install"));
        assert_eq!(s.timeouts[&Phase::Bootkube].as_secs(), 300);
        assert_eq!(s.fixture.unwrap().schedule, "fast");
        assert_eq!(s.disk_write_stall, None);
    }

    #[test]
    fn an_empty_proxy_or_bundle_means_none_and_a_bundle_is_relative_to_the_scenario() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/ca.pem"), "").unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        let with = |extra: &str| {
            parse_str(
                &dir.path().join("s.toml"),
                &SMOKE.replace("[timeouts]", &format!("{extra}\n[timeouts]")),
            )
        };
        // The extra lines land in [install], the section before [timeouts].
        let s = with("proxy = {}\nadditional_trust_bundle = \"\"").unwrap();
        assert_eq!(s.install.proxy, None);
        assert_eq!(s.install.additional_trust_bundle, None);
        let s = with(
            "proxy = { http_proxy = \"http://p:3128\" }\nadditional_trust_bundle = \"data/ca.pem\"",
        )
        .unwrap();
        assert_eq!(
            s.install.proxy.unwrap().http_proxy.as_deref(),
            Some("http://p:3128")
        );
        assert_eq!(
            s.install.additional_trust_bundle,
            Some(dir.path().join("data/ca.pem"))
        );
        let s = with(&format!(
            "additional_trust_bundle = {:?}",
            outside.path().display().to_string()
        ))
        .unwrap();
        assert_eq!(
            s.install.additional_trust_bundle.as_deref(),
            Some(outside.path())
        );
        let e = with("additional_trust_bundle = \"data/none.pem\"").unwrap_err();
        assert_eq!(e.line, Some(16), "{e}");
        assert!(e.message.contains("data/none.pem is not a file"), "{e}");
    }

    #[test]
    fn the_disk_write_stall_is_set_under_timeouts() {
        let s = parse(&SMOKE.replace("bootkube = \"5m\"", "disk-write-stall = \"45s\"")).unwrap();
        assert_eq!(s.disk_write_stall, Some(Duration::from_secs(45)));
        assert!(s.timeouts.is_empty());
        let e = err(&SMOKE.replace("bootkube = \"5m\"", "disk-write-stall = \"soon\""));
        assert_eq!(e.line, Some(17), "{e}");
        assert!(e.message.contains("disk-write-stall"), "{e}");
    }

    fn err(text: &str) -> ScenarioError {
        parse(text).unwrap_err()
    }

    #[test]
    fn errors_name_the_line_and_what_is_valid() {
        let e = err(&SMOKE.replace("bus = \"virtio\"", "bus = \"floppy\""));
        assert_eq!(e.line, Some(11), "{e}");
        assert!(e.message.contains("virtio"), "{e}");

        let e = err(&SMOKE.replace("bootkube = \"5m\"", "bootcamp = \"5m\""));
        assert_eq!(e.line, Some(17), "{e}");
        assert!(e.message.contains("live-boot"), "{e}");
        assert!(e.message.contains("disk-write-stall"), "{e}");

        let e = err(&SMOKE.replace("disk = \"install\"", "disk = \"other\""));
        assert_eq!(e.line, Some(14), "{e}");
        assert!(e.message.contains("(install)"), "{e}");

        let e = err(&SMOKE.replace("[vm]", "[vm]\ncolour = \"red\""));
        assert_eq!(e.line, Some(6), "{e}");
        assert!(e.to_string().starts_with("s.toml:6:"), "{e}");
    }

    #[test]
    fn a_nat_network_needs_a_machine_network_it_can_lay_out() {
        let s = parse(SMOKE).unwrap();
        assert_eq!(s.vm.network, GuestNetwork::User, "user-mode by default");
        let nat = SMOKE.replace("[vm]", "[vm]\nnetwork = \"nat\"");
        assert_eq!(parse(&nat).unwrap().vm.network, GuestNetwork::Nat);

        let narrow = nat.replace(
            "[install]",
            "[install]\nmachine_network = [\"192.168.126.0/25\"]",
        );
        let e = err(&narrow);
        assert_eq!(e.line, Some(6), "the network line: {e}");
        assert!(e.message.contains("/24 or wider"), "{e}");
        assert!(e.message.contains("install.machine_network"), "{e}");
        let v6 = nat.replace("[install]", "[install]\nmachine_network = [\"fd00::/64\"]");
        assert!(err(&v6).message.contains("needs an IPv4"));

        let e = err(&SMOKE.replace("[vm]", "[vm]\nnetwork = \"bridge\""));
        assert_eq!(e.line, Some(6), "{e}");
        assert!(
            e.message.contains("user") && e.message.contains("nat"),
            "{e}"
        );
    }

    #[test]
    fn long_words_in_messages_are_cut_on_character_boundaries() {
        let word = "é".repeat(100);
        let m = shorten_long_words(&format!("unknown field `{word}`, expected `a`"));
        assert!(m.starts_with("unknown field `"), "{m}");
        assert!(m.contains("...(203 bytes)..."), "{m}");
        assert!(m.ends_with("`, expected `a`"), "{m}");
        assert_eq!(shorten_long_words("short words"), "short words");
    }

    #[test]
    fn files_that_are_not_utf8_text_are_refused_at_the_first_bad_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, b"name = \"x\"\nprofile = \"caf\xe9\"\n").unwrap();
        let e = load(&path).unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(15)), "{e}");
        assert!(e.message.contains("byte 0xe9 is not UTF-8"), "{e}");
        let e = load(dir.path()).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{e}");
        let e = parse(&format!("{SMOKE}\0")).unwrap_err();
        assert_eq!(e.line, Some(18), "{e}");
        assert!(e.message.contains("NUL"), "{e}");
    }

    #[test]
    fn impossible_hardware_is_refused() {
        let e = err(&SMOKE.replace("bus = \"virtio\"", "bus = \"sata\"\nsector = \"4k\""));
        assert!(e.message.contains("SATA"), "{e}");
        let e = err(&SMOKE.replace("bus = \"virtio\"", "sector = \"4k\""));
        assert!(e.message.contains("4Kn"), "{e}");
        assert!(parse(
            &SMOKE
                .replace("bus = \"virtio\"", "sector = \"4k\"")
                .replace("firmware = \"bios\"", "firmware = \"uefi\"")
        )
        .is_ok());
    }

    #[test]
    fn faults_are_checked_against_the_fixture() {
        let e = err(&format!(
            "{SMOKE}\n[fixture]\nfaults = [\"bootkube-explode\"]\n"
        ));
        assert_eq!(e.line, Some(20), "{e}");
        assert!(e.message.contains("bootkube-fail"), "{e}");
        assert!(parse(&format!(
            "{SMOKE}\n[fixture]\nfaults = [\"operator-degraded:ingress\"]\n"
        ))
        .is_ok());
    }

    #[test]
    fn literal_installation_disks_are_kept_as_written() {
        let s =
            parse(&SMOKE.replace("{ by = \"id\", disk = \"install\" }", "\"/dev/vdz\"")).unwrap();
        assert_eq!(s.install.installation_disk, "/dev/vdz");
        assert_eq!(s.install.install_disk_id, None);
    }

    #[test]
    fn disk_io_defaults_to_the_fast_ci_settings() {
        let s = parse(SMOKE).unwrap();
        assert_eq!(s.disks[0].io, DiskIo::default());
        assert_eq!(s.disks[0].io.cache, CacheMode::Unsafe);
        assert_eq!(s.disks[0].io.aio, AioMode::Threads);
        assert_eq!(s.disks[0].io.throttle, None);
    }

    /// SMOKE with these lines added to its disk (after `bus`, line 11).
    fn with_disk_lines(lines: &str) -> String {
        SMOKE.replace("bus = \"virtio\"", &format!("bus = \"virtio\"\n{lines}"))
    }

    #[test]
    fn cache_aio_and_throttle_are_read_per_disk() {
        let s = parse(&with_disk_lines(
            "cache = \"none\"\naio = \"native\"\nthrottle = { bytes_per_s = \"20MiB\", iops = 500 }",
        ))
        .unwrap();
        assert_eq!(
            s.disks[0].io,
            DiskIo {
                cache: CacheMode::None,
                aio: AioMode::Native,
                throttle: Some(Throttle {
                    bytes_per_s: Some(20 << 20),
                    iops: Some(500),
                }),
            }
        );
        for (cache, want) in [
            ("unsafe", CacheMode::Unsafe),
            ("writeback", CacheMode::Writeback),
            ("none", CacheMode::None),
            ("directsync", CacheMode::Directsync),
        ] {
            let s = parse(&with_disk_lines(&format!("cache = \"{cache}\""))).unwrap();
            assert_eq!(s.disks[0].io.cache, want);
            assert_eq!(s.disks[0].io.aio, AioMode::Threads);
        }
        let s = parse(&with_disk_lines("aio = \"io_uring\"")).unwrap();
        assert_eq!(s.disks[0].io.aio, AioMode::IoUring);
        assert_eq!(s.disks[0].io.cache, CacheMode::Unsafe);
        let s = parse(&with_disk_lines("cache = \"directsync\"\naio = \"native\"")).unwrap();
        assert_eq!(s.disks[0].io.aio, AioMode::Native);
        // Either limit alone; decimal units too; a sub-table as well as an inline one.
        let s = parse(&with_disk_lines("throttle = { iops = 1 }")).unwrap();
        assert_eq!(
            s.disks[0].io.throttle,
            Some(Throttle {
                bytes_per_s: None,
                iops: Some(1),
            })
        );
        let s = parse(&with_disk_lines("throttle = { bytes_per_s = \"8M\" }")).unwrap();
        assert_eq!(s.disks[0].io.throttle.unwrap().bytes_per_s, Some(8_000_000));
        let s = parse(&with_disk_lines("[disks.throttle]\nbytes_per_s = \"8MiB\"")).unwrap();
        assert_eq!(s.disks[0].io.throttle.unwrap().bytes_per_s, Some(8 << 20));
    }

    #[test]
    fn bad_disk_io_options_name_the_line_and_what_is_valid() {
        let e = err(&with_disk_lines("cache = \"fast\""));
        assert_eq!(e.line, Some(12), "{e}");
        for word in ["unsafe", "writeback", "none", "directsync"] {
            assert!(e.message.contains(word), "{word} missing: {e}");
        }
        let e = err(&with_disk_lines("aio = \"posix\""));
        assert_eq!(e.line, Some(12), "{e}");
        for word in ["threads", "native", "io_uring"] {
            assert!(e.message.contains(word), "{word} missing: {e}");
        }
        let e = err(&with_disk_lines("aio = 1"));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(e.message.contains("io_uring"), "{e}");

        // Native AIO needs O_DIRECT: the aio line is wrong, whether cache is written or not.
        let e = err(&with_disk_lines("aio = \"native\""));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(
            e.message
                .contains("needs cache = \"none\" or \"directsync\"")
                && e.message.contains("O_DIRECT")
                && e.message.contains("\"unsafe\" (the default)"),
            "{e}"
        );
        for cache in ["unsafe", "writeback"] {
            let e = err(&with_disk_lines(&format!(
                "cache = \"{cache}\"\naio = \"native\""
            )));
            assert_eq!(e.line, Some(13), "{e}");
            assert!(e.message.contains(&format!("cache is \"{cache}\";")), "{e}");
            assert!(e.message.contains("\"io_uring\""), "{e}");
        }

        let e = err(&with_disk_lines("throttle = {}"));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(
            e.message.contains("bytes_per_s, iops or both") && e.message.contains("\"20MiB\""),
            "{e}"
        );
        for zero in ["bytes_per_s = \"0\"", "bytes_per_s = \"0MiB\"", "iops = 0"] {
            let e = err(&with_disk_lines(&format!("throttle = {{ {zero} }}")));
            assert_eq!(e.line, Some(12), "{e}");
            assert!(
                e.message.contains("= 0: a limit is more than 0"),
                "{zero}: {e}"
            );
        }
        let e = err(&with_disk_lines("throttle = { bytes_per_s = \"fast\" }"));
        assert!(e.message.contains("disks.throttle.bytes_per_s"), "{e}");
        assert!(e.message.contains("8GiB"), "{e}");
        let e = err(&with_disk_lines("throttle = { bytes_per_s = 100 }"));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(e.message.contains("a size such as"), "{e}");
        for bad in ["-1", "1.5", "\"500\""] {
            let e = err(&with_disk_lines(&format!("throttle = {{ iops = {bad} }}")));
            assert_eq!(e.line, Some(12), "{e}");
            assert!(
                e.message.contains("I/O requests per second, such as 500"),
                "{e}"
            );
        }
        let e = err(&with_disk_lines("throttle = \"8MiB\""));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(
            e.message
                .contains("{ bytes_per_s = \"20MiB\", iops = 500 }"),
            "{e}"
        );
        let e = err(&with_disk_lines("throttle = { iops = 2000000000000000 }"));
        assert!(e.message.contains("QEMU's largest limit"), "{e}");
        let e = err(&with_disk_lines("throttle = { bps = 1 }"));
        assert_eq!(e.line, Some(12), "{e}");
        assert!(
            e.message.contains("bytes_per_s") && e.message.contains("iops"),
            "{e}"
        );
        let e = err(&with_disk_lines("[disks.throttle]\n"));
        assert!(e.message.contains("throttle sets no limit"), "{e}");
    }

    /// The shipped slow-disk scenario: what `sno-harness plan scenarios/slow-disk.toml` reads.
    #[test]
    fn the_shipped_slow_disk_scenario_throttles_its_install_disk() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/slow-disk.toml");
        let s = load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.name, "slow-disk");
        assert_eq!(s.install.install_disk_id.as_deref(), Some("install"));
        let install = &s.disks[0];
        assert_eq!(install.id, "install");
        assert_eq!(
            install.io.throttle,
            Some(Throttle {
                bytes_per_s: Some(8 << 20),
                iops: None,
            })
        );
        // Only the limit differs from the CI default.
        assert_eq!(install.io.cache, CacheMode::Unsafe);
        assert_eq!(install.io.aio, AioMode::Threads);
        assert!(!s.description.is_empty());
    }

    #[test]
    fn openshift_needs_a_pull_secret() {
        let e = err(&SMOKE.replace("profile = \"fixture\"", "profile = \"openshift\""));
        assert!(e.message.contains("pull_secret"), "{e}");
    }

    /// A scenario with `disks` (id, bus) naming the disk `install` with `by`.
    fn scenario(disks: &[(&str, &str)], by: &str) -> String {
        let mut s = format!(
            "name = \"p\"\nprofile = \"fixture\"\n\n[install]\ninstallation_disk = {{ by = \"{by}\", disk = \"install\" }}\n"
        );
        for (id, bus) in disks {
            s.push_str(&format!(
                "\n[[disks]]\nid = \"{id}\"\nsize = \"1GiB\"\nbus = \"{bus}\"\n"
            ));
        }
        s
    }

    #[test]
    fn scenarios_name_the_installation_disk_by_path() {
        let parse = |text: &str| crate::scenario::parse_str(std::path::Path::new("s.toml"), text);
        let s = parse(&scenario(
            &[("data", "virtio"), ("log", "scsi"), ("install", "nvme")],
            "path",
        ))
        .unwrap();
        assert_eq!(
            s.install.installation_disk,
            "/dev/disk/by-path/pci-0000:00:09.0-nvme-1"
        );
        assert_eq!(s.install.install_disk_id.as_deref(), Some("install"));

        let mut five: Vec<(String, &str)> = (0..5).map(|i| (format!("d{i}"), "sata")).collect();
        five.push(("install".into(), "sata"));
        let five: Vec<(&str, &str)> = five.iter().map(|(i, b)| (i.as_str(), *b)).collect();
        let e = parse(&scenario(&five, "path")).unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(
            e.message.contains("\"install\" has no by-path link") && e.message.contains("CD-ROM"),
            "{e}"
        );
        assert_eq!(
            parse(&scenario(&five[1..], "path"))
                .unwrap()
                .install
                .installation_disk,
            "/dev/disk/by-path/pci-0000:00:1f.2-ata-5.0"
        );
    }
}
