//! Every shipped scenario as a test case (libtest-mimic, so nextest can filter and shard them):
//! `scenarios/smoke.toml` must pass, and each `scenarios/faults/*.toml` must end as its
//! `[expect]` section says, by running the real flow on minisno under QEMU.
//!
//! After each run `sno-harness analyze` judges the run directory and the log bundles it
//! gathered, which must agree with the run (`sno_e2e::analyze`).
//!
//! `scenarios/assisted.toml` (the harness runs coreos-installer itself) must pass too, and
//! `scenarios/assisted-stale-metadata.toml` (the same onto a disk with old LVM and MD metadata,
//! which the harness wipes first).
//!
//! `scenarios/multipath.toml` (the installation disk over two paths) must pass with the
//! installed root on the multipath map and both paths active, as result.json records it; so
//! must `fault::multipath-path-lost`, whose timeline must show the path taken away and given
//! back with the write going on meanwhile.
//!
//! The smoke, assisted and multipath scenarios and two fault scenarios run on the libvirt
//! backend too, as `libvirt::smoke`, `libvirt::assisted`, `libvirt::multipath`,
//! `libvirt::fault::install-fail` and `libvirt::fault::disk-boot-panic` (a running libvirtd on
//! `qemu:///system` is required: `.ci/run` starts one).
//!
//! Every permutation of every shipped matrix (`scenarios/*.toml` with axes) is a test case too,
//! named `<matrix>::<permutation id>` (`disks::nvme.4k.uefi.by-path.2-second`). They are
//! ignored by default, being long (PXE's two `install-to-disk` permutations of `boot` also run
//! on local libvirt, as `libvirt::boot::pxe.bios.install-to-disk` and its `uefi` twin): `cargo nextest run -p sno-e2e --test scenarios
//! --run-ignored only -E 'test(/nvme/)'` selects some, `--partition hash:1/3` shards them.

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use sno_harness::run::{check_expectation, run_scenario, RunOptions};
use sno_harness::scenario;
use sno_harness::vm::Backend;

/// The scenarios that also run on libvirt: the smoke test, a failure inside the guest's flow
/// and a guest crash (which libvirt reports through its own event).
const ON_LIBVIRT: &[&str] = &[
    "smoke",
    "assisted",
    "multipath",
    "fault::install-fail",
    "fault::disk-boot-panic",
];

/// The matrix permutations that also run on local libvirt (ignored like every permutation):
/// the network boot, whose TFTP libvirt's QEMU reads as its own user.
const PERMUTATIONS_ON_LIBVIRT: &[&str] = &[
    "boot::pxe.bios.install-to-disk",
    "boot::pxe.uefi.install-to-disk",
];

fn scenario_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        root.join("smoke.toml"),
        root.join("assisted.toml"),
        root.join("assisted-stale-metadata.toml"),
        root.join("multipath.toml"),
    ];
    let mut faults: Vec<PathBuf> = std::fs::read_dir(root.join("faults"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    faults.sort();
    files.extend(faults);
    files
}

fn run_file(path: &Path, backend: Backend) -> Result<(), Failed> {
    let s = scenario::load(path).map_err(|e| Failed::from(e.to_string()))?;
    let suffix = backend.replay_flags();
    let replay = format!("sno-harness run {} --keep{suffix}", path.display());
    run_one(&s, Default::default(), replay, backend)
}

fn run_one(
    s: &scenario::Scenario,
    params: std::collections::BTreeMap<String, String>,
    replay: String,
    backend: Backend,
) -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt;
    let out = tempfile::Builder::new()
        .prefix(&format!("sno-scenario-{}-", s.name))
        .tempdir()
        .map_err(|e| Failed::from(e.to_string()))?;
    // libvirt's QEMU runs as its own user and must reach the run's disks and ISO.
    std::fs::set_permissions(out.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Failed::from(e.to_string()))?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| Failed::from(e.to_string()))?;
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let result = rt.block_on(run_scenario(
        s,
        RunOptions {
            dir: out.path().to_path_buf(),
            id: s.name.clone(),
            params,
            keep: sno_harness::run::keeping::Keep::never(),
            pause_on_failure: false,
            timeout_scale: 1.0,
            cache_dir: sno_harness::fixture::default_cache_dir(),
            replay,
            backend,
            interrupt: rx,
            // Test output is captured: plain lines, with heartbeats.
            progress: sno_harness::run::progress::Display::Plain,
            state: Default::default(),
            junit: Default::default(),
            gather: sno_harness::gather::Settings {
                when: sno_harness::gather::When::OnFailure,
                limit: GATHER_LIMIT,
            },
            kubeconfig_to: Vec::new(),
        },
    ));
    let checked = check_expectation(s, &result).and_then(|m| {
        nothing_secret_published(out.path())?;
        let m = format!(
            "{m}; {}",
            sno_e2e::analyze::check(out.path(), &faults_of(s), &result)?
        );
        check_boot_served(s, &result)?;
        check_assisted(s, out.path(), &result)?;
        check_secure_boot(s, &result)?;
        let m = match check_multipath(s, out.path(), &result)? {
            Some(said) => format!("{m}; {said}"),
            None => m,
        };
        if result.verdict == sno_harness::flow::machine::Verdict::Pass {
            check_timeline(out.path(), &result)?;
            check_assets_named(&result)?;
            if s.name == "fault-journal-cut" {
                let resumed = check_journal_resumed(out.path())?;
                return Ok(format!("{m}; {resumed}"));
            }
            Ok(m)
        } else {
            let gathered = check_gather(out.path(), &s.name, &result)?;
            Ok(format!("{m}; {gathered}"))
        }
    });
    match checked {
        Ok(m) => {
            eprintln!(
                "{}: {m} ({:.0} s)",
                s.name,
                result.duration_ms as f64 / 1000.0
            );
            Ok(())
        }
        Err(m) => {
            // Keep the evidence of a failure.
            let kept = out.keep();
            Err(Failed::from(format!(
                "{m}\nrun directory: {}",
                kept.display()
            )))
        }
    }
}

/// A passing run on Secure Boot firmware read the SecureBoot EFI variable as 1 in the live and
/// the installed system (result.json `secure_boot`); a passing UEFI run without it recorded
/// what each system read, never 1; a SeaBIOS run records nothing.
fn check_secure_boot(
    s: &scenario::Scenario,
    r: &sno_harness::result::RunResult,
) -> Result<(), String> {
    use sno_harness::flow::event::SecureBootState::On;
    let seen = r.secure_boot.as_ref();
    let passed = r.verdict == sno_harness::flow::machine::Verdict::Pass;
    let ok = match (s.vm.firmware.is_uefi(), s.vm.firmware.secure_boot(), seen) {
        (false, _, None) => true,
        (true, true, Some(b)) => !passed || (b.live == Some(On) && b.installed == Some(On)),
        (true, false, Some(b)) => {
            let off = |x: Option<_>| x.is_some() && x != Some(On);
            !passed || (off(b.live) && off(b.installed))
        }
        _ => false,
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "result.json's secure_boot is {seen:?} for vm.firmware = {:?} ({})",
            s.vm.firmware.as_str(),
            r.verdict
        )),
    }
}

/// Nothing under the run's `--out` holds the fixture's pull secret or any private key, whatever
/// the run's verdict and whatever it gathered (the run searched itself for its own secrets
/// before it ended, and would have ended as `error`; this is the test's own look).
fn nothing_secret_published(out: &Path) -> Result<(), String> {
    let mut secrets = sno_harness::secrets::Secrets::default();
    secrets.add_pull_secret(sno_harness::assets::FIXTURE_PULL_SECRET);
    let leaks = secrets.scan(out);
    match leaks.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "secrets under --out: {}",
            leaks
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// A passed run names the installer it ran (the fixture's says it stands in for
/// openshift-install, with its commit and release image) and the ISO with its digest.
fn check_assets_named(r: &sno_harness::result::RunResult) -> Result<(), String> {
    let a = r
        .assets
        .as_ref()
        .ok_or("result.json names no installer and ISO")?;
    let hex64 = a.iso_sha256.len() == 64 && a.iso_sha256.bytes().all(|b| b.is_ascii_hexdigit());
    let named = a.installer_version.starts_with("minisno-install ")
        && a.installer_commit.is_some()
        && a.release_image.is_some()
        && !a.iso.is_empty();
    if !(hex64 && named) {
        return Err(format!("result.json's assets are incomplete: {a:?}"));
    }
    Ok(())
}

/// What a minimal-ISO run's record must say of the harness's boot server: a passing run
/// fetched the whole root filesystem once and live-boot's time is split around the fetch; under
/// `rootfs-404` every request was answered 404; under `rootfs-corrupt` the whole image went out
/// (the guest's digests, not the length, caught it).
fn check_boot_served(
    s: &scenario::Scenario,
    r: &sno_harness::result::RunResult,
) -> Result<(), String> {
    if !s.boot_source.fetches_rootfs() {
        return match &r.boot {
            None => Ok(()),
            Some(b) => Err(format!("a live-ISO run has a boot record: {b:?}")),
        };
    }
    let b = r
        .boot
        .as_ref()
        .ok_or("a network-booted run has no boot record")?;
    let url_ok = b
        .rootfs_url
        .as_deref()
        .is_some_and(|u| u.starts_with("http://10.0.2.2:") && u.ends_with("/rootfs.img"));
    let gets: Vec<_> = b.served.iter().filter(|x| x.method == "GET").collect();
    let faults = faults_of(s);
    let ok = if faults.iter().any(|f| f == "rootfs-404") {
        !b.served.is_empty() && b.served.iter().all(|x| x.status == 404 && x.bytes == 0)
    } else {
        // One whole image (the fixture's rootfs.img is some 80 MiB), beside the probes that
        // check the server first.
        let whole = gets
            .iter()
            .filter(|x| x.status == 200 && x.bytes > 32 << 20)
            .count()
            == 1;
        let split = b.live_boot_fetch_ms.is_some_and(|f| f > 0)
            && b.live_boot_rest_ms.is_some_and(|r| r > 0);
        let passed = r.verdict == sno_harness::flow::machine::Verdict::Pass;
        whole && (split || !passed)
    };
    if !(url_ok && ok) {
        return Err(format!(
            "the boot record does not show the expected fetch: {b:?}"
        ));
    }
    if s.boot_source.is_pxe() {
        check_pxe_fetches(&gets, s.vm.network == scenario::GuestNetwork::Nat)?;
    }
    Ok(())
}

/// A PXE boot's iPXE fetched the initramfs and the kernel once each, whole, before the live
/// system fetched its root filesystem. The wrapped Ignition came by the user network's own
/// TFTP (never over HTTP, where a local user could ask for it), or on a NAT network once over
/// HTTP, to the node alone.
fn check_pxe_fetches(gets: &[&sno_harness::result::Served], nat: bool) -> Result<(), String> {
    let at = |path: &str| -> Result<u64, String> {
        match gets.iter().filter(|x| x.path == path).collect::<Vec<_>>()[..] {
            [one] if one.status == 200 && one.bytes > 0 => Ok(one.t_ms),
            ref other => Err(format!(
                "PXE: expected one whole GET of {path}, saw {other:?}"
            )),
        }
    };
    let mut boot_files = vec![at("/initrd.img")?, at("/vmlinuz")?];
    match nat {
        true => boot_files.push(at("/ignition.img")?),
        false if gets.iter().any(|x| x.path == "/ignition.img") => {
            return Err(format!(
                "PXE: the Ignition went over HTTP on the user network: {gets:?}"
            ))
        }
        false => {}
    }
    let rootfs = gets
        .iter()
        .filter(|x| x.path == "/rootfs.img" && x.status == 200)
        .map(|x| x.t_ms)
        .max()
        .ok_or("PXE: no GET of /rootfs.img")?;
    if boot_files.iter().any(|t| *t > rootfs) {
        return Err(format!(
            "PXE: the root filesystem ({rootfs} ms) came before the boot files ({boot_files:?} ms)"
        ));
    }
    Ok(())
}

/// The run's events.jsonl, a record a line.
fn read_events(dir: &Path) -> Result<Vec<serde_json::Value>, String> {
    let events = std::fs::read_to_string(dir.join("events.jsonl"))
        .map_err(|e| format!("events.jsonl: {e}"))?;
    Ok(events
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// The assisted steps `step` among the run's records.
fn steps<'a>(
    records: &'a [serde_json::Value],
    step: &'a str,
) -> impl Iterator<Item = &'a serde_json::Value> + 'a {
    records
        .iter()
        .filter(move |e| e["kind"] == "assisted" && e["step"] == step)
}

/// A run with a multipath installation disk: result.json's `multipath` record has the kernel
/// arguments the install passed (none under `multipath-no-kargs`); a passed run's installed
/// root is on the map with both paths active; under `multipath-path-lost` the path was taken
/// away, then given back, with the write going on meanwhile, and events.jsonl has both steps.
fn check_multipath(
    s: &scenario::Scenario,
    dir: &Path,
    r: &sno_harness::result::RunResult,
) -> Result<Option<String>, String> {
    if !s.disks.iter().any(|d| d.multipath) {
        return Ok(None);
    }
    let m = r
        .multipath
        .as_ref()
        .ok_or("a multipath run's result.json has no multipath record")?;
    let faults = faults_of(s);
    let withheld = faults.iter().any(|f| f == "multipath-no-kargs");
    let want: Vec<String> = match withheld {
        true => Vec::new(),
        false => sno_harness::hw::multipath::DAY1_KARGS
            .iter()
            .map(|k| k.to_string())
            .collect(),
    };
    if m.kargs != want {
        return Err(format!(
            "the install's multipath kernel arguments: {:?}, expected {want:?}",
            m.kargs
        ));
    }
    let root = m
        .root
        .as_ref()
        .ok_or("result.json's multipath record has no root: the installed system was never read")?;
    if r.verdict == sno_harness::flow::machine::Verdict::Pass {
        let active = root
            .paths
            .iter()
            .filter(|p| p.ends_with(" active/ready"))
            .count();
        if !root.on_multipath || active != 2 {
            return Err(format!("a passed multipath run's root: {}", root.summary));
        }
    }
    if !faults.iter().any(|f| f == "multipath-path-lost") {
        return Ok(Some(root.summary.clone()));
    }
    let steps: Vec<&str> = m.path_events.iter().map(|e| e.step.as_str()).collect();
    if steps != ["path-lost", "path-restored"] {
        return Err(format!(
            "the path fault's events: {steps:?}, expected the path lost, then restored"
        ));
    }
    let records = read_events(dir)?;
    let restored = records
        .iter()
        .find(|e| e["kind"] == "multipath" && e["step"] == "path-restored")
        .ok_or("events.jsonl has no path-restored record")?;
    let written = restored["written_while_lost"].as_u64().unwrap_or(0);
    if written == 0 {
        return Err("nothing was written while the path was gone".into());
    }
    Ok(Some(format!(
        "{}; path lost and restored, {:.0} MiB written meanwhile",
        root.summary,
        written as f64 / 1048576.0
    )))
}

fn faults_of(s: &scenario::Scenario) -> Vec<String> {
    s.fixture
        .as_ref()
        .map(|f| f.faults.clone())
        .unwrap_or_default()
}

/// On a disk the stale-metadata fault left LVM and MD RAID metadata on, the agent's steps
/// removed both for real (lvm2 and mdadm on the live system) before the install, and on UEFI
/// set the boot entry with efibootmgr.
fn check_old_metadata_removed(
    s: &scenario::Scenario,
    records: &[serde_json::Value],
) -> Result<(), String> {
    let said = |step: &str| -> String {
        steps(records, step)
            .filter_map(|e| e["detail"].as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let (lvm, raid) = (said("lvm-cleaned"), said("raid-cleaned"));
    if !lvm.contains("deactivated and removed") || !raid.contains("stopped") {
        return Err(format!(
            "the old metadata was not removed: LVM {lvm:?}, MD RAID {raid:?}"
        ));
    }
    if s.vm.firmware.is_uefi() && steps(records, "boot-entry-set").next().is_none() {
        return Err("no EFI boot entry was set on UEFI firmware".into());
    }
    Ok(())
}

/// What an assisted install must show: install-to-disk.service never ran (it is masked), the
/// harness's own coreos-installer did, with the scenario's arguments, and ended the phase; a
/// passing run collected the live system's logs. A run of the other mode shows none of it.
fn check_assisted(
    s: &scenario::Scenario,
    dir: &Path,
    r: &sno_harness::result::RunResult,
) -> Result<(), String> {
    let records = read_events(dir)?;
    let started: Vec<&str> = records
        .iter()
        .filter(|e| e["kind"] == "assisted" && e["step"] == "started")
        .filter_map(|e| e["command"].as_str())
        .collect();
    let unit_ran = records
        .iter()
        .any(|e| e["kind"] == "journal" && e["unit"] == "install-to-disk.service");
    if s.install.mode != scenario::InstallMode::Assisted {
        return match started.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "a run of install.mode {:?} ran the harness's coreos-installer",
                s.install.mode.as_str()
            )),
        };
    }
    // The agent tries coreos-installer up to 3 times, each the same command, with a retry
    // between two attempts; and installs to the kernel's name of the device the link names.
    let retries = steps(&records, "retrying").count();
    let Some(&command) = started.first() else {
        return Err("an assisted run starts coreos-installer at least once, not 0".into());
    };
    if started.len() > 3 || started.iter().any(|c| *c != command) || retries + 1 != started.len() {
        return Err(format!(
            "an assisted run starts the same coreos-installer 1 to 3 times, with a retry between two: {} starts, {retries} retries: {started:?}",
            started.len()
        ));
    }
    let device = steps(&records, "device-resolved")
        .filter_map(|e| e["device"].as_str())
        .last()
        .unwrap_or(&s.install.installation_disk)
        .to_string();
    let wanted = sno_harness::run::assisted::command_line(
        &sno_harness::run::assisted::installer_args(&device, &s.install.assisted),
    );
    if command != wanted || unit_ran {
        return Err(format!("the assisted install ran {command:?} (wanted {wanted:?}); install-to-disk.service's journal has entries: {unit_ran}"));
    }
    if faults_of(s).iter().any(|f| f == "stale-metadata") {
        check_old_metadata_removed(s, &records)?;
    }
    let install = r.phases.iter().find(|p| p.name == "install-to-disk");
    let by_harness = install.is_some_and(|p| {
        p.detail
            .contains("run by the harness over SSH (assisted install)")
    });
    if !by_harness {
        return Err(format!(
            "install-to-disk was not ended by the harness's coreos-installer: {install:?}"
        ));
    }
    if s.install.assisted.copy_network {
        let copied = records.iter().any(|e| {
            e["kind"] == "assisted"
                && e["line"]
                    .as_str()
                    .is_some_and(|l| l.contains("networking configuration"))
        });
        if !copied {
            return Err(
                "--copy-network left no line of coreos-installer's about the network configuration"
                    .into(),
            );
        }
    }
    if r.verdict == sno_harness::flow::machine::Verdict::Pass {
        let logs = dir.join(sno_harness::run::assisted::LOGS_DIR);
        for f in [
            sno_harness::run::assisted::JOURNAL_FILE,
            sno_harness::run::assisted::VAR_LOG_FILE,
        ] {
            let len = std::fs::metadata(logs.join(f))
                .map(|m| m.len())
                .unwrap_or(0);
            if len < 1024 {
                return Err(format!(
                    "the live system's logs were not collected: {}/{f} has {len} bytes",
                    logs.display()
                ));
            }
        }
    }
    Ok(())
}

/// What a passed run's record must say of its timeline: one reset (QEMU's burst of RESET
/// events for the reboot counted once), caused by the guest's reboot, every `last_signals`
/// entry with its source, and events.jsonl with a `phase-started` and a `phase-ended` record for
/// every phase the run went through after the VM started.
fn check_timeline(dir: &Path, r: &sno_harness::result::RunResult) -> Result<(), String> {
    let by_guest = r.reset_causes.len() == 1 && r.reset_causes[0].starts_with("guest reboot");
    if r.resets != 1 || !by_guest {
        return Err(format!(
            "a passed run resets once, by the guest's reboot: resets {}, causes {:?}",
            r.resets, r.reset_causes
        ));
    }
    if let Some(l) = r.last_signals.iter().find(|l| l.source.is_empty()) {
        return Err(format!("a last signal without its source: {}", l.summary));
    }
    let records = read_events(dir)?;
    let has = |kind: &str, phase: &str| {
        records
            .iter()
            .any(|e| e["kind"] == kind && e["phase"] == phase)
    };
    for p in r
        .phases
        .iter()
        .filter(|p| p.name != "assets" && p.start_ms.is_some())
    {
        if !has("phase-started", &p.name) || !has("phase-ended", &p.name) {
            return Err(format!(
                "events.jsonl lacks the phase-started or phase-ended record of {}",
                p.name
            ));
        }
    }
    Ok(())
}

/// Each gather collector's limit in these runs: shorter than the default, so that the
/// gather-hang scenario's hung collector costs half a minute.
const GATHER_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What the journal-cut scenario must show: the live boot's raw journal has every entry of the
/// boot once and in order (journald's sequence numbers, one counter for all of a boot's journal
/// files, run 1..N without a gap or a repeat), including the line the fault wrote after it cut
/// the follower's connection, and entries after it.
fn check_journal_resumed(dir: &Path) -> Result<String, String> {
    let raw = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("journal-1-") && n.ends_with(".json.gz")
        })
        .ok_or("no journal-1-<boot id>.json.gz")?;
    let mut text = String::new();
    let file = std::fs::File::open(&raw).map_err(|e| e.to_string())?;
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text)
        .map_err(|e| format!("{}: {e}", raw.display()))?;
    let entries: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}: {l}", raw.display())))
        .collect::<Result<_, _>>()?;
    for (n, e) in entries.iter().enumerate() {
        let cursor = e["__CURSOR"].as_str().unwrap_or("");
        let seqnum = cursor
            .split(';')
            .find_map(|kv| kv.strip_prefix("i="))
            .and_then(|i| u64::from_str_radix(i, 16).ok());
        if seqnum != Some(n as u64 + 1) {
            return Err(format!(
                "entry {} of the live boot has sequence number {seqnum:?}: an entry lost or repeated ({cursor})",
                n + 1
            ));
        }
    }
    let cut = entries
        .iter()
        .position(|e| {
            e["MESSAGE"]
                .as_str()
                .is_some_and(|m| m.starts_with("minisno fault journal-cut: killed the SSH session"))
        })
        .ok_or("the fault's line after the cut is not in the live boot's journal")?;
    if cut + 1 == entries.len() {
        return Err("nothing after the cut was read".into());
    }
    Ok(format!(
        "the live boot's {} entries once and in order, the cut at entry {}",
        entries.len(),
        cut + 1
    ))
}

/// What gather-hang's gather must show: the collector reading the service records (one of
/// them a FIFO) was cut at its limit, kept what it read before, and every other collector of
/// the live system still ran and succeeded.
fn check_gather_hang(entries: &[serde_json::Value]) -> Result<(), String> {
    let hung = entries
        .iter()
        .find(|c| c["name"] == "live/service-records.txt")
        .ok_or("no live/service-records.txt collector")?;
    let reason = hung["reason"].as_str().unwrap_or("");
    if hung["status"] != "timed-out" || !reason.contains("cut at its limit") {
        return Err(format!(
            "the hung collector was not cut at its limit: {hung}"
        ));
    }
    let ms = hung["ms"].as_u64().unwrap_or(u64::MAX);
    // The guest cuts the command at the limit; the login before it may take up to 20 s.
    if ms > GATHER_LIMIT.as_millis() as u64 + 35_000 {
        return Err(format!(
            "the hung collector took {ms} ms, past its limit: {hung}"
        ));
    }
    let live_ok = entries
        .iter()
        .filter(|c| c["name"].as_str().unwrap_or("").starts_with("live/") && c["status"] == "ok")
        .count();
    if live_ok < 10 {
        return Err(format!(
            "only {live_ok} of the live system's collectors succeeded beside the hung one"
        ));
    }
    Ok(())
}

/// Files a failed run's gather must hold, with content, by scenario: what a reader of that
/// failure opens first.
const GATHERED: &[(&str, &[&str])] = &[
    (
        "fault-install-fail",
        &[
            "live/journal/install-to-disk.service.txt",
            "live/journal/bootkube.service.txt",
            "live/opt-openshift.txt",
            "live/master.ign.redacted.json",
            "live/service-records.txt",
            "live/block-devices.txt",
        ],
    ),
    (
        "fault-gather-hang",
        &[
            "live/service-records.txt",
            "live/journal/bootkube.service.txt",
        ],
    ),
    (
        "fault-post-reboot-fail",
        &[
            "installed/log-bundle-bootstrap.tar.gz",
            "installed/journal.txt",
            "installed/kubelet-status.txt",
            "api/clusterversion.json",
            "api/nodes.json",
        ],
    ),
    (
        "fault-operator-degraded",
        &[
            "api/clusteroperators.json",
            "api/events.json",
            "api/pods/openshift-ingress-operator.json",
            "installed/journal.txt",
        ],
    ),
];

/// What a failed run's gather must be: gather/index.json, linked from result.json, listing
/// the VM's collectors (ok) and either the guest's or why the guest did not answer; every
/// collector that did not succeed says why; the files this scenario's failure needs are there
/// and not empty; master.ign is kept without its inline contents. A run that ended before its
/// VM (the installer refusing the install-config) has nothing to gather, and no gather/.
/// Returns the index's summary.
fn check_gather(
    dir: &Path,
    name: &str,
    r: &sno_harness::result::RunResult,
) -> Result<String, String> {
    let vm_ran = r
        .phases
        .iter()
        .any(|p| p.name != "assets" && p.start_ms.is_some());
    if !vm_ran {
        return match dir.join("gather").exists() || r.artifacts.contains_key("gather") {
            true => Err("a run that ended before its VM has a gather".into()),
            false => Ok("no VM ran: nothing to gather".into()),
        };
    }
    if r.artifacts.get("gather").map(String::as_str) != Some("gather/index.json") {
        return Err(format!(
            "result.json links no gather index: {:?}",
            r.artifacts
        ));
    }
    let text = std::fs::read_to_string(dir.join("gather/index.json"))
        .map_err(|e| format!("gather/index.json: {e}"))?;
    let index: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("gather/index.json: {e}"))?;
    let entries = index["collectors"].as_array().cloned().unwrap_or_default();
    let status = |n: &str| {
        entries
            .iter()
            .find(|c| c["name"] == n)
            .map(|c| c["status"].as_str().unwrap_or("").to_string())
    };
    for vm in [
        "vm/screenshot.png",
        "vm/query-status.json",
        "vm/blockstats.json",
        "vm/definition.txt",
    ] {
        if status(vm).as_deref() != Some("ok") {
            return Err(format!("gather: {vm} is {:?}:\n{text}", status(vm)));
        }
    }
    let guest_ran = entries.iter().any(|c| {
        let n = c["name"].as_str().unwrap_or("");
        n.starts_with("live/") || n.starts_with("installed/")
    });
    if !guest_ran && status("guest").is_none() {
        return Err(format!(
            "gather has neither the guest's collectors nor why not:\n{text}"
        ));
    }
    if let Some(c) = entries
        .iter()
        .find(|c| c["status"] != "ok" && c["reason"].is_null())
    {
        return Err(format!(
            "a collector that did not succeed says not why: {c}"
        ));
    }
    if name == "fault-gather-hang" {
        check_gather_hang(&entries)?;
    }
    let wanted = GATHERED
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[][..], |(_, f)| f);
    for f in wanted {
        let len = std::fs::metadata(dir.join("gather").join(f)).map_or(0, |m| m.len());
        if len == 0 {
            return Err(format!("gather/{f} is missing or empty:\n{text}"));
        }
    }
    if let Ok(ign) = std::fs::read_to_string(dir.join("gather/live/master.ign.redacted.json")) {
        if ign.contains("\"data:") || ign.contains("PRIVATE KEY") {
            return Err("gather/live/master.ign.redacted.json keeps inline contents".into());
        }
    }
    let mut slowest: Vec<(u64, &str)> = entries
        .iter()
        .map(|c| {
            (
                c["ms"].as_u64().unwrap_or(0),
                c["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    slowest.sort_by(|a, b| b.cmp(a));
    let slowest: Vec<String> = slowest
        .iter()
        .take(3)
        .map(|(ms, n)| format!("{n} {ms} ms"))
        .collect();
    Ok(format!(
        "gather: {} collectors, {} bytes in {} ms (slowest: {})",
        entries.len(),
        index["bytes"],
        index["ms"],
        slowest.join(", ")
    ))
}

/// The permutations of every shipped matrix, as ignored test cases.
/// The command that runs one permutation again, by hand.
fn replay_of(matrix: &Path, id: &str, extra: &str) -> String {
    format!(
        "sno-harness matrix {} --filter {id} --keep{extra}",
        matrix.display()
    )
}

fn matrix_trials(root: &Path) -> Vec<Trial> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    let mut trials = Vec::new();
    for path in files
        .into_iter()
        .filter(|p| sno_harness::scenario::matrix::is_matrix_file(p))
    {
        let m = match sno_harness::scenario::matrix::load(&path) {
            Ok(m) => m,
            Err(e) => {
                // A broken shipped matrix is a failing test, not a silently missing one.
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                let msg = e.to_string();
                trials.push(Trial::test(
                    format!("{name}::load"),
                    move || Err(msg.into()),
                ));
                continue;
            }
        };
        for p in m.permutations {
            let name = format!("{}::{}", m.name, p.id);
            if PERMUTATIONS_ON_LIBVIRT.contains(&name.as_str()) {
                let (p, replay) = (p.clone(), replay_of(&path, &p.id, " --backend libvirt"));
                trials.push(
                    Trial::test(format!("libvirt::{name}"), move || {
                        let uri = sno_harness::vm::libvirt::DEFAULT_URI.to_string();
                        run_one(
                            &p.scenario,
                            p.values.clone(),
                            replay.clone(),
                            Backend::Libvirt { uri },
                        )
                    })
                    .with_ignored_flag(true),
                );
            }
            let replay = replay_of(&path, &p.id, "");
            trials.push(
                Trial::test(name, move || {
                    run_one(&p.scenario, p.values.clone(), replay.clone(), Backend::Qemu)
                })
                .with_ignored_flag(true),
            );
        }
    }
    trials
}

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut trials: Vec<Trial> = scenario_files(&root)
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let name = if p.parent().is_some_and(|d| d.ends_with("faults")) {
                format!("fault::{name}")
            } else {
                name
            };
            Trial::test(name, move || run_file(&p, Backend::Qemu))
        })
        .collect();
    let on_libvirt: Vec<Trial> = scenario_files(&root)
        .into_iter()
        .filter_map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let name = if p.parent().is_some_and(|d| d.ends_with("faults")) {
                format!("fault::{stem}")
            } else {
                stem
            };
            ON_LIBVIRT.contains(&name.as_str()).then(|| {
                Trial::test(format!("libvirt::{name}"), move || {
                    let uri = sno_harness::vm::libvirt::DEFAULT_URI.to_string();
                    run_file(&p, Backend::Libvirt { uri })
                })
            })
        })
        .collect();
    trials.extend(on_libvirt);
    trials.extend(matrix_trials(&root));
    libtest_mimic::run(&args, trials).exit();
}
