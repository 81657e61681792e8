//! Running one scenario: assets, VM, observers, the state machine, artifacts and the result.
//! Every resource the run creates is owned here and released on every path.

pub mod admission;
mod api_poller;
pub mod backing;
pub mod board;
pub mod gc;
pub mod job;
pub mod matrix_runner;
mod outcome;
pub mod perf_runner;
pub mod preflight;
pub mod progress;
pub mod registry;
pub mod state;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use crate::assets::{self, AssetsRequest};
use crate::fixture::{self, BuildOptions};
use crate::flow::badness::AllowList;
use crate::flow::event::{EventLog, Signal, Source};
use crate::flow::machine::{
    Action, AdaptiveDeadline, Config as MachineConfig, Machine, Outcome, Verdict,
};
use crate::flow::phase::{fixture_default_timeout, openshift_default_timeout, Phase};
use crate::guest::follow::Followers;
use crate::guest::ssh::{SshKeyPair, SshTarget};
use crate::health::ApiEndpoint;
use crate::hw::{Firmware, OVMF_VARS};
use crate::result::RunResult;
use crate::scenario::{BootOrder, GuestNetwork, Profile, Scenario};
use crate::vm::accel::{self, Accel};
use crate::vm::libvirt::network::{bridge_name, from_machine_network};
use crate::vm::libvirt::runtime::StartOptions;
use crate::vm::libvirt::{nat_network_xml, RunMeta};
use crate::vm::running::{Backend, RunningVm};
use crate::vm::{disk, CdromSpec, DiskSpec, Nic, PortForward, VmSpec};
use state::{guest_command_task, save_vm_state, Manifest, SaveInputs, StateMode};

pub use outcome::build_result;

pub struct RunOptions {
    /// This run's directory (result.json and the artifacts go here).
    pub dir: PathBuf,
    pub id: String,
    pub params: BTreeMap<String, String>,
    pub keep: bool,
    pub timeout_scale: f64,
    pub cache_dir: PathBuf,
    pub replay: String,
    /// QEMU directly, or libvirt (`--backend libvirt [--connect URI]`).
    pub backend: Backend,
    /// Resolves when the run must stop (Ctrl-C, SIGTERM).
    pub interrupt: tokio::sync::watch::Receiver<bool>,
    /// A live status line on a terminal, or plain lines; in a matrix, the matrix's board.
    pub progress: progress::Display,
    /// The whole flow, or save the VM once bootkube is done, or resume a saved VM for
    /// install-to-disk alone.
    pub state: state::StateMode,
}

/// The phase timeouts of a scenario: the profile's defaults, the scenario's overrides, times
/// the TCG factor (real OpenShift defaults assume KVM) and `--timeout-scale`.
pub fn phase_timeouts(s: &Scenario, accel: Accel, scale: f64) -> BTreeMap<Phase, Duration> {
    let tcg = match (s.profile, accel) {
        (Profile::Openshift, Accel::Tcg) => 4.0,
        _ => 1.0,
    };
    Phase::ALL
        .iter()
        .map(|p| {
            let base = s
                .timeouts
                .get(p)
                .copied()
                .unwrap_or_else(|| match s.profile {
                    Profile::Fixture => fixture_default_timeout(*p),
                    Profile::Openshift => openshift_default_timeout(*p),
                });
            (*p, base.mul_f64(tcg * scale))
        })
        .collect()
}

/// The installer binary and its environment, from the profile.
pub fn installer_for(s: &Scenario) -> Result<(PathBuf, Vec<(String, String)>), String> {
    match s.profile {
        Profile::Fixture => {
            let a = fixture::build(&BuildOptions::default()).map_err(|e| e.to_string())?;
            let f = s
                .fixture
                .as_ref()
                .expect("fixture scenarios have a fixture section");
            let env = vec![
                ("MINISNO_SCHEDULE".to_string(), f.schedule.clone()),
                ("MINISNO_FAULTS".to_string(), f.faults.join(",")),
            ];
            Ok((
                a.installer.ok_or("the fixture build has no installer")?,
                env,
            ))
        }
        Profile::Openshift => {
            let o = s
                .openshift
                .as_ref()
                .expect("openshift scenarios have an openshift section");
            let path = match &o.installer {
                Some(p) => p.clone(),
                None => crate::util::which("openshift-install").ok_or(
                    "openshift-install is not on PATH; set [openshift] installer = \"PATH\"",
                )?,
            };
            let env = o
                .release_image
                .iter()
                .map(|r| {
                    (
                        "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE".to_string(),
                        r.clone(),
                    )
                })
                .collect();
            Ok((path, env))
        }
    }
}

/// Resolves once the run must stop; never when the sender is gone without asking.
async fn until_interrupted(rx: &mut tokio::sync::watch::Receiver<bool>) {
    loop {
        let stop = *rx.borrow_and_update();
        if stop {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A VM name made of the run id (characters any backend accepts) and a number unique on the
/// host while the VM runs.
pub fn vm_name(run_id: &str, unique: u16) -> String {
    let id: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    format!("sno-{id}-{unique}")
}

/// The VM of a scenario: disks (qemu-img, in `dir/disks`), boot order, firmware, forwards.
pub fn vm_spec(
    s: &Scenario,
    dir: &Path,
    iso: &Path,
    accel: Accel,
    ssh_port: u16,
    api_port: u16,
) -> VmSpec {
    let install = s.install.install_disk_id.clone();
    let (disk_index, cd_index) = match s.vm.boot_order {
        BootOrder::DiskFirst => (1, 2),
        BootOrder::CdromFirst => (2, 1),
    };
    let disks = s
        .disks
        .iter()
        .map(|d| DiskSpec {
            id: d.id.clone(),
            path: dir.join("disks").join(format!("{}.qcow2", d.id)),
            format: "qcow2".into(),
            bus: d.bus,
            sector: d.sector,
            serial: Some(d.serial.clone()),
            bootindex: (Some(&d.id) == install.as_ref()
                || (install.is_none() && d.id == s.disks[0].id))
                .then_some(disk_index),
            io: d.io,
        })
        .collect();
    VmSpec {
        name: format!("sno-{}", s.name),
        vcpus: s.vm.vcpus,
        memory_mib: s.vm.memory_mib,
        firmware: s.vm.firmware,
        accel,
        disks,
        cdrom: Some(CdromSpec {
            path: iso.to_path_buf(),
            bootindex: Some(cd_index),
        }),
        uefi_vars: (s.vm.firmware == Firmware::Uefi).then(|| dir.join("OVMF_VARS.fd")),
        serial_socket: dir.join("serial.sock"),
        qmp_socket: Some(dir.join("qmp.sock")),
        forwards: vec![
            PortForward {
                host_port: ssh_port,
                guest_port: 22,
            },
            PortForward {
                host_port: api_port,
                guest_port: 6443,
            },
        ],
        nic: Nic::User,
    }
}

/// Whether a result is what the scenario's `[expect]` section says (a pass, without one).
pub fn check_expectation(s: &Scenario, r: &RunResult) -> Result<String, String> {
    let Some(e) = &s.expect else {
        return if r.verdict == crate::result::Verdict::Pass {
            Ok("passed".into())
        } else {
            Err(format!(
                "{} at {}: {}",
                r.verdict.as_str(),
                r.failed_phase.as_deref().unwrap_or("-"),
                r.reason
            ))
        };
    };
    let verdict_ok = e.verdict == r.verdict.as_str();
    let phase_ok = e.failed_phase.is_none() || e.failed_phase == r.failed_phase;
    let reason_ok = e
        .reason_contains
        .as_ref()
        .is_none_or(|x| r.reason.contains(x.as_str()));
    let warning_ok = e.warning_contains.as_ref().is_none_or(|x| {
        r.badness
            .iter()
            .any(|b| b.allowed_by.is_some() && b.line.contains(x.as_str()))
    });
    let mut expected = format!(
        "{} at {} with a reason containing {:?}",
        e.verdict,
        e.failed_phase.as_deref().unwrap_or("-"),
        e.reason_contains.as_deref().unwrap_or("")
    );
    if let Some(w) = &e.warning_contains {
        expected.push_str(&format!(" and an allowed badness line containing {w:?}"));
    }
    if verdict_ok && phase_ok && reason_ok && warning_ok {
        Ok(format!("as expected: {expected}"))
    } else {
        Err(format!(
            "expected {expected}, got {} at {}: {}",
            r.verdict.as_str(),
            r.failed_phase.as_deref().unwrap_or("-"),
            r.reason
        ))
    }
}

/// A free port on 127.0.0.1 that no other run of this process was given. The kernel can hand
/// the same ephemeral port to two probes once the first probe's socket is closed, and the
/// QEMU of a parallel run binds it only later; ports are therefore never given out twice.
fn free_port() -> std::io::Result<u16> {
    static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    for _ in 0..64 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut taken = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if taken.insert(port) {
            return Ok(port);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        "no port on 127.0.0.1 that this process has not used already",
    ))
}

/// What the state machine and the observers produced, for the result.
pub struct RunRecord {
    pub machine: Machine,
    pub started_at: SystemTime,
    pub duration: Duration,
    pub accel: Accel,
    pub accel_reason: String,
    pub artifacts: BTreeMap<String, String>,
    pub install_disk: Option<String>,
    /// The host the VM ran on, when not this one (a remote libvirtd).
    pub vm_host: Option<crate::result::HostContext>,
}

/// Runs a scenario to its verdict and writes result.json. Never panics on the guest's or the
/// host's account: failures become the verdict.
pub async fn run_scenario(s: &Scenario, opts: RunOptions) -> RunResult {
    let started = Instant::now();
    let started_at = SystemTime::now();
    // Lines carry the run's id: a matrix interleaves several runs' lines.
    let mut ui = progress::Progress::new(started, &opts.progress, &opts.id);
    let mut artifacts = BTreeMap::new();
    // Timeouts depend on the accelerator, so the machine is made once it is known.
    let new_machine = |accel: Accel| {
        let timeouts = phase_timeouts(s, accel, opts.timeout_scale);
        let adaptive_install = timeouts
            .get(&Phase::InstallToDisk)
            .map(|nominal| AdaptiveDeadline::around(*nominal));
        let mut m = Machine::new(MachineConfig {
            timeouts,
            write_stall: s
                .disk_write_stall
                .unwrap_or(crate::scenario::DEFAULT_DISK_WRITE_STALL)
                .mul_f64(opts.timeout_scale),
            bootkube_max_restarts: 3,
            adaptive_install,
        });
        // Validated when the scenario was read.
        m.allow_badness(AllowList::new(&s.badness_allow).unwrap_or_default());
        match opts.state {
            StateMode::Fresh => {}
            StateMode::SaveAfterBootkube(_) => m.stop_after(Phase::Bootkube),
            StateMode::ResumeInstall(_) => m.stop_after(Phase::InstallToDisk),
        }
        m
    };
    let accel = accel::decide(s.vm.accel);
    let (accel, accel_reason) = match accel {
        Ok(d) => (d.accel, d.reason),
        Err(e) => {
            let mut machine = new_machine(Accel::Kvm);
            machine.start(0);
            machine.error(0, e.to_string());
            return finish(
                s,
                &opts,
                RunRecord {
                    machine,
                    started_at,
                    duration: started.elapsed(),
                    accel: Accel::Kvm,
                    accel_reason: e.to_string(),
                    artifacts,
                    install_disk: None,
                    vm_host: None,
                },
            );
        }
    };
    let machine = new_machine(accel);
    ui.line(&format!("accelerator {accel:?} ({accel_reason})"));
    let mut vm_host = None;
    let machine = drive(
        s,
        &opts,
        machine,
        (started, accel),
        &mut artifacts,
        &mut vm_host,
        &mut ui,
    )
    .await;
    ui.finish();
    finish(
        s,
        &opts,
        RunRecord {
            machine,
            started_at,
            duration: started.elapsed(),
            accel,
            accel_reason,
            artifacts,
            install_disk: s.install.install_disk_id.clone(),
            vm_host,
        },
    )
}

fn finish(s: &Scenario, opts: &RunOptions, rec: RunRecord) -> RunResult {
    let result = build_result(s, opts, &rec);
    if let Err(e) = result.write(&opts.dir) {
        eprintln!(
            "sno-harness: writing {}/result.json: {e}",
            opts.dir.display()
        );
    }
    let _ = crate::report::junit::write_junit(
        &opts.dir.join("junit.xml"),
        std::slice::from_ref(&result),
        &result.id,
    );
    let _ = fs::write(
        opts.dir.join("summary.md"),
        crate::report::summary::summary_markdown(std::slice::from_ref(&result)),
    );
    result
}

/// Everything between the start and the verdict. Returns the machine holding the outcome.
async fn drive(
    s: &Scenario,
    opts: &RunOptions,
    mut machine: Machine,
    (started, accel): (Instant, Accel),
    artifacts: &mut BTreeMap<String, String>,
    vm_host: &mut Option<crate::result::HostContext>,
    ui: &mut progress::Progress,
) -> Machine {
    let dir = opts.dir.as_path();
    // Declared first so that it goes last, after the VM, on every way out of here.
    let mut files = RunFiles {
        dir: dir.to_path_buf(),
        keep: opts.keep,
        registration: None,
    };
    let now = || started.elapsed().as_millis() as u64;
    let mut log = match EventLog::create(&dir.join("events.jsonl"), started) {
        Ok(l) => l,
        Err(e) => {
            machine.start(0);
            machine.error(0, format!("creating events.jsonl: {e}"));
            return machine;
        }
    };
    artifacts.insert("events".into(), "events.jsonl".into());
    let (tx, mut rx) = mpsc::unbounded_channel::<(Source, Signal)>();
    let resume = match &opts.state {
        StateMode::ResumeInstall(d) => match Manifest::read(d) {
            Ok(m) if m.accel == format!("{accel:?}").to_lowercase() => Some((d.clone(), m)),
            Ok(m) => {
                machine.start(0);
                machine.error(
                    0,
                    format!(
                        "{}: the state was saved under {} and cannot load under {accel:?}",
                        d.display(),
                        m.accel
                    ),
                );
                return machine;
            }
            Err(e) => {
                machine.start(0);
                machine.error(0, e.to_string());
                return machine;
            }
        },
        _ => None,
    };
    let mut pending = match &resume {
        Some((d, _)) => machine.start_at(
            Phase::InstallToDisk,
            now(),
            &format!("ran in the run that saved {}", d.display()),
        ),
        None => machine.start(now()),
    };
    let _ = log.record(
        Source::Harness,
        Signal::Note {
            text: format!("run {} started", opts.id),
        },
    );

    // --- assets: made now, or those of the saved state being resumed
    let (key, assets) = if let Some((state_dir, _)) = &resume {
        match state::resumed_assets(state_dir) {
            Ok(x) => x,
            Err(e) => {
                machine.error(now(), e.to_string());
                return machine;
            }
        }
    } else {
        ui.line("assets: install-config, installer, live ISO");
        let key = match SshKeyPair::generate(&format!("sno-harness {}", opts.id)) {
            Ok(k) => k,
            Err(e) => {
                machine.error(now(), e.to_string());
                return machine;
            }
        };
        let assets = {
            let (s2, dir2, key2, cache) = (
                s.clone(),
                dir.to_path_buf(),
                key.clone(),
                opts.cache_dir.clone(),
            );
            let hold_install = matches!(opts.state, StateMode::SaveAfterBootkube(_));
            let task =
                tokio::task::spawn_blocking(move || -> Result<assets::Assets, (bool, String)> {
                    let (installer, env) = installer_for(&s2).map_err(|e| (false, e))?;
                    assets::prepare(&AssetsRequest {
                        scenario: &s2,
                        run_dir: &dir2,
                        installer: &installer,
                        installer_env: env,
                        ssh_public_key: &key2.public_openssh,
                        cache_dir: &cache,
                        hold_install,
                    })
                    .map_err(|e| (e.is_rejection(), e.to_string()))
                });
            let mut interrupt = opts.interrupt.clone();
            tokio::pin!(task);
            tokio::select! {
                // The CLI kills the helpers as it signals the interrupt, so the work may end first,
                // failed: that is still an interrupted run, not a failed build.
                r = &mut task => {
                    if *opts.interrupt.borrow() {
                        machine.error(now(), "interrupted".into());
                        return machine;
                    }
                    r
                }
                _ = until_interrupted(&mut interrupt) => {
                    // The blocking work cannot be cancelled, but what it waits for can be killed
                    // (a fixture build, the installer); then it returns promptly.
                    crate::util::children::kill_all();
                    let _ = tokio::time::timeout(Duration::from_secs(5), &mut task).await;
                    machine.error(now(), "interrupted".into());
                    return machine;
                }
            }
        };
        artifacts.insert("install-config".into(), "install-config.yaml".into());
        artifacts.insert("installer-log".into(), "assets/installer.log".into());
        let assets = match assets {
            Ok(Ok(a)) => a,
            Ok(Err((rejected, reason))) => {
                if rejected {
                    machine.fail_now(now(), reason);
                } else {
                    machine.error(now(), format!("assets: {reason}"));
                }
                return machine;
            }
            Err(e) => {
                machine.error(now(), format!("assets: {e}"));
                return machine;
            }
        };
        pending.extend(handle(
            &mut machine,
            &mut log,
            Source::Harness,
            Signal::AssetsReady,
        ));
        (key, assets)
    };

    // --- VM
    let ports = (free_port(), free_port());
    let (Ok(ssh_port), Ok(api_port)) = ports else {
        machine.error(now(), "no free port on 127.0.0.1".into());
        return machine;
    };
    let mut spec = vm_spec(s, dir, &assets.live_iso, accel, ssh_port, api_port);
    // Unique on the host while it runs (libvirt refuses a second domain of the same name): the
    // run id, and the SSH port, which nothing else holds while this VM does.
    spec.name = vm_name(&opts.id, ssh_port);
    let registry_dir = registry::dir();
    files.registration = match registry::register(
        &registry_dir,
        registry::Entry {
            id: opts.id.clone(),
            pid: 0,
            pid_start: 0,
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            backend: opts.backend.name().into(),
            uri: match &opts.backend {
                Backend::Libvirt { uri } => Some(uri.clone()),
                Backend::Qemu => None,
            },
            domain: matches!(opts.backend, Backend::Libvirt { .. }).then(|| spec.name.clone()),
            keep: opts.keep,
        },
    ) {
        Ok(r) => Some(r),
        Err(e) => {
            ui.line(&format!(
                "warning: cannot register the run in {} ({e}): if the harness is killed, `sno-harness gc` will not find its leftovers",
                registry_dir.display()
            ));
            None
        }
    };
    if let Err(e) = fs::create_dir_all(dir.join("disks")) {
        machine.error(now(), format!("creating disks/: {e}"));
        return machine;
    }
    for (d, sd) in spec.disks.iter().zip(&s.disks) {
        // A resumed VM gets its disks as they were saved, through overlays that keep the
        // saved images unwritten for the next resume.
        let made = match &resume {
            Some((state_dir, m)) => match m.disk(state_dir, &d.id) {
                Some(saved) => disk::create_overlay(&d.path, &saved).map_err(|e| e.to_string()),
                None => Err(format!(
                    "{}: the saved state has no disk {:?}; it was saved from another scenario",
                    state_dir.display(),
                    d.id
                )),
            },
            None => disk::create_qcow2(&d.path, sd.size_bytes).map_err(|e| e.to_string()),
        };
        if let Err(e) = made {
            machine.error(now(), e);
            return machine;
        }
    }
    if let Some(vars) = &spec.uefi_vars {
        let from = match &resume {
            Some((state_dir, _)) => state_dir.join(state::UEFI_VARS_FILE),
            None => PathBuf::from(OVMF_VARS),
        };
        if let Err(e) = fs::copy(&from, vars) {
            machine.error(now(), format!("copying {}: {e}", from.display()));
            return machine;
        }
    }
    // Started on this thread, not on a blocking-pool thread: QEMU's parent-death signal fires
    // when the thread that forked it exits, and pool threads exit when idle.
    let meta = RunMeta::for_this_process(
        opts.id.clone(),
        std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
    );
    // `network = "nat"`: the run's own libvirt network, named like the domain (unique while
    // the run lives); the harness then reaches the node at its reserved address.
    let network = match s.vm.network {
        GuestNetwork::User => None,
        GuestNetwork::Nat => match from_machine_network(
            &s.install.machine_network,
            &s.install.cluster,
            &s.install.base_domain,
            meta.clone(),
            spec.name.clone(),
        ) {
            Ok(n) => Some(n),
            Err(e) => {
                machine.error(now(), format!("vm.network = \"nat\": {e}"));
                return machine;
            }
        },
    };
    if let Some(n) = &network {
        spec.nic = Nic::LibvirtNetwork {
            network: n.name.clone(),
        };
        let _ = fs::write(dir.join("network.xml"), nat_network_xml(n));
        artifacts.insert("network".into(), "network.xml".into());
    }
    let (ssh_addr, api_addr): (std::net::SocketAddr, std::net::SocketAddr) = match &network {
        Some(n) => ((n.node.ipv4, 22).into(), (n.node.ipv4, 6443).into()),
        None => (
            ([127, 0, 0, 1], ssh_port).into(),
            ([127, 0, 0, 1], api_port).into(),
        ),
    };
    let (mut vm, console) = match RunningVm::start(
        &opts.backend,
        &spec,
        StartOptions {
            network: network.as_ref(),
            reach: &[ssh_addr, api_addr],
            keep_disks: opts.keep,
            incoming: resume.is_some(),
        },
        &meta,
        dir,
        &tx,
    )
    .await
    {
        Ok(x) => x,
        Err(e) => {
            machine.error(now(), e);
            return machine;
        }
    };
    // On a remote libvirt host, the guest is reached through SSH forwards, and the numbers
    // are that host's.
    let (ssh_addr, api_addr) = (vm.local_addr(ssh_addr), vm.local_addr(api_addr));
    *vm_host = vm.remote_host_context();
    let _ = fs::write(dir.join("vm.txt"), vm.describe() + "\n");
    artifacts.insert("vm".into(), "vm.txt".into());
    artifacts.insert("serial".into(), "serial.log".into());
    match &opts.backend {
        Backend::Qemu => {
            artifacts.insert("qemu-stderr".into(), "qemu.stderr".into());
        }
        // libvirt's log of the domain's QEMU, taken into the run directory when the domain
        // ends (a local libvirtd only).
        Backend::Libvirt { uri } if !uri.contains("+ssh") => {
            artifacts.insert("qemu-log".into(), "qemu.log".into());
        }
        Backend::Libvirt { .. } => {}
    }
    if let Some((state_dir, _)) = &resume {
        let path = state_dir.join(state::STATE_FILE);
        match vm.load_state(&path, state::STATE_TIMEOUT).await {
            Ok(took) => {
                let text = format!(
                    "VM state loaded from {} in {:.1} s",
                    path.display(),
                    took.as_secs_f64()
                );
                ui.line(&text);
                let _ = log.record(Source::Harness, Signal::Note { text });
            }
            Err(e) => {
                vm.stop();
                machine.error(now(), format!("loading the saved VM state: {e}"));
                return machine;
            }
        }
    }
    pending.extend(handle(
        &mut machine,
        &mut log,
        Source::Harness,
        Signal::VmStarted {
            pid: vm.pid().unwrap_or(0),
        },
    ));
    ui.line(&format!(
        "VM started ({}): SSH on {ssh_addr}, API on {api_addr}{}",
        opts.backend.name(),
        network
            .as_ref()
            .map(|n| format!(" (network {}, bridge {})", n.name, bridge_name(&n.name)))
            .unwrap_or_default()
    ));
    {
        let tx = tx.clone();
        console.on_line(move |l| {
            let _ = tx.send((
                Source::Serial,
                Signal::Console {
                    line: l.to_string(),
                },
            ));
        });
    }

    // The install disk's write counter, from QEMU's block stats.
    let install_drive = s.install.install_disk_id.clone();
    let blockstats = install_drive.clone().map(|drive| {
        let (tx2, vm) = (tx.clone(), vm.handle());
        tokio::spawn(async move {
            let mut last = None;
            loop {
                if let Ok(Some(bytes)) = vm.disk_written_bytes(&drive).await {
                    if last != Some(bytes) {
                        last = Some(bytes);
                        let _ = tx2.send((Source::Disk, Signal::DiskWrite { bytes }));
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    });

    let target = SshTarget {
        addr: ssh_addr,
        user: "core".into(),
        key: key.clone(),
    };
    let mut followers = Followers::start(target.clone(), tx.clone(), Duration::from_secs(2));
    // Resuming: install-to-disk is released from its hold (see run/state.rs) as soon as SSH
    // answers; a failure ends the run through `harness_failures`.
    let (failure_tx, mut harness_failures) = mpsc::unbounded_channel::<String>();
    if resume.is_some() {
        guest_command_task(
            target.clone(),
            state::release_command(),
            "install-to-disk.service released from the saved state's hold",
            tx.clone(),
            failure_tx,
        );
    }
    let mut api_task: Option<tokio::task::JoinHandle<()>> = None;
    let endpoint = ApiEndpoint {
        kubeconfig: assets.kubeconfig.clone(),
        server: Some(format!("https://{api_addr}")),
    };

    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut interrupt = opts.interrupt.clone();
    let mut journal_files = JournalFiles::new(dir);
    artifacts.insert("journal-live".into(), "journal-live.txt".into());
    artifacts.insert("journal-disk".into(), "journal-disk.txt".into());
    let mut live_boot: Option<String> = None;

    loop {
        for a in pending.drain(..) {
            match a {
                Action::PhaseStarted(p) => {
                    ui.line(&format!("phase {p} started"));
                    if p == Phase::ApiReady && api_task.is_none() {
                        api_task = Some(tokio::spawn(api_poller::poll(
                            endpoint.clone(),
                            assets.install_config.clone(),
                            tx.clone(),
                            Duration::from_secs(2),
                        )));
                    }
                }
                Action::PhaseEnded(p, st) => ui.line(&format!("phase {p} ended: {st:?}")),
                Action::Finished(o) => {
                    ui.line(&format!("verdict {:?}{}", o.verdict, reason_suffix(&o)))
                }
            }
        }
        if machine.outcome().is_some() {
            break;
        }
        tokio::select! {
            Some((source, signal)) = rx.recv() => {
                if let Signal::GuestStatus(st) = &signal {
                    if st.live && live_boot.is_none() {
                        live_boot = Some(st.boot_id.clone());
                    }
                }
                if let Signal::Journal { .. } = &signal {
                    journal_files.write(&signal, live_boot.as_deref());
                }
                pending.extend(handle(&mut machine, &mut log, source, signal));
            }
            _ = tick.tick() => {
                if !vm.is_running() {
                    pending.extend(handle(&mut machine, &mut log, Source::Harness, Signal::VmExited { status: format!("the {} VM is gone", opts.backend.name()) }));
                }
                pending.extend(machine.tick(now()));
                ui.status(&machine, now());
            }
            Some(reason) = harness_failures.recv() => {
                pending.extend(machine.error(now(), reason));
            }
            _ = interrupt.changed() => {
                let _ = log.record(Source::Harness, Signal::Note { text: "interrupted".into() });
                pending.extend(machine.error(now(), "interrupted".into()));
            }
        }
    }

    // --- tear down: observers first, then evidence, then the VM.
    if let Some(t) = api_task {
        t.abort();
    }
    if let Some(t) = blockstats {
        t.abort();
    }
    followers.stop();
    let failed = machine
        .outcome()
        .map(|o| o.verdict != Verdict::Pass)
        .unwrap_or(true);
    if failed {
        let png = dir.join("screenshot-final.png");
        if tokio::time::timeout(Duration::from_secs(5), vm.screenshot(&png))
            .await
            .map(|r| r.is_ok())
            .unwrap_or(false)
        {
            artifacts.insert("screenshot".into(), "screenshot-final.png".into());
        }
    }
    if let StateMode::SaveAfterBootkube(state_dir) = &opts.state {
        if machine
            .outcome()
            .is_some_and(|o| o.verdict == Verdict::Pass)
        {
            let saved = save_vm_state(
                state_dir,
                SaveInputs {
                    vm: &mut vm,
                    machine: &machine,
                    guest: &target,
                    spec: &spec,
                    key: &key,
                    assets: &assets,
                    run_id: &opts.id,
                    scenario: s,
                    accel,
                },
            )
            .await;
            match saved {
                Ok(m) => {
                    let text = format!(
                        "VM state saved in {} ({:.0} MiB in {:.1} s)",
                        state_dir.display(),
                        m.state_bytes as f64 / 1048576.0,
                        m.save_ms as f64 / 1000.0
                    );
                    ui.line(&text);
                    let _ = log.record(Source::Harness, Signal::Note { text });
                    ui.line(&format!(
                        "resume it (as often as wanted): sno-harness run {} --resume-state {}",
                        s.path.display(),
                        state_dir.display()
                    ));
                }
                Err(e) => {
                    // Nothing half-saved stays behind.
                    let _ = fs::remove_dir_all(state_dir);
                    let _ = log.record(Source::Harness, Signal::Note { text: e.clone() });
                    machine.error_after_pass(e);
                }
            }
        }
    }
    vm.stop();
    // A saving run's disks went into the state directory: what it keeps is the saved VM.
    if opts.keep && !matches!(opts.state, StateMode::SaveAfterBootkube(_)) {
        ui.finish();
        ui.print(&keep_instructions(dir, &spec, &key, ssh_port));
    }
    drop(files);
    machine
}

/// What a run makes in its directory for the VM's sake only: the disks and the live ISO copy
/// (unless `--keep`) and QEMU's sockets, removed on every way out of `drive` (an error before
/// or while the VM starts included), and only then the run's registration, so that `gc` still
/// finds anything a killed harness left.
struct RunFiles {
    dir: PathBuf,
    keep: bool,
    registration: Option<registry::Registration>,
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(self.dir.join("disks"));
            let _ = fs::remove_file(self.dir.join("live.iso"));
        }
        let _ = fs::remove_file(self.dir.join("serial.sock"));
        let _ = fs::remove_file(self.dir.join("qmp.sock"));
        drop(self.registration.take());
    }
}

/// What `--keep` leaves and how to use it: the command that boots the kept disks with the
/// console on the terminal, and how to log in (the run's key, saved 0600 under assets/).
fn keep_instructions(dir: &Path, spec: &VmSpec, key: &SshKeyPair, ssh_port: u16) -> String {
    let key_path = dir.join("assets").join("ssh-key");
    let login = match assets::write_private(&key_path, key.private_openssh.as_bytes()) {
        Ok(()) => format!(
            "log in, once it is up:\n  ssh -i {} -p {ssh_port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null core@127.0.0.1",
            key_path.display()
        ),
        Err(e) => format!("(the SSH key could not be saved: {e})"),
    };
    format!(
        "sno-harness: --keep: the VM's disks are in {}.\nTo boot them again (serial console on this terminal; Ctrl-a x quits QEMU):\n{}\n{login}",
        dir.join("disks").display(),
        crate::vm::qemu::argv::shell_command_line(&crate::vm::qemu::argv::interactive_argv(spec)),
    )
}

fn reason_suffix(o: &Outcome) -> String {
    if o.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", o.reason)
    }
}

fn handle(
    machine: &mut Machine,
    log: &mut EventLog,
    source: Source,
    signal: Signal,
) -> Vec<Action> {
    match log.record(source, signal) {
        Ok(ev) => machine.on_event(&ev),
        Err(e) => machine.error(0, format!("writing events.jsonl: {e}")),
    }
}

/// journal-live.txt and journal-disk.txt: the BiP units' entries of each system, as they come.
struct JournalFiles {
    live: Option<fs::File>,
    disk: Option<fs::File>,
}

impl JournalFiles {
    fn new(dir: &Path) -> JournalFiles {
        JournalFiles {
            live: fs::File::create(dir.join("journal-live.txt")).ok(),
            disk: fs::File::create(dir.join("journal-disk.txt")).ok(),
        }
    }

    fn write(&mut self, signal: &Signal, live_boot: Option<&str>) {
        if let Signal::Journal {
            unit,
            identifier,
            message,
            guest_usec,
            boot_id,
        } = signal
        {
            let f = if Some(boot_id.as_str()) == live_boot {
                &mut self.live
            } else {
                &mut self.disk
            };
            if let Some(f) = f {
                let t = humantime::format_rfc3339_micros(
                    std::time::UNIX_EPOCH + Duration::from_micros(*guest_usec),
                );
                let _ = writeln!(f, "{t} {unit} {identifier}: {message}");
            }
        }
    }
}

#[cfg(test)]
mod port_tests {
    #[test]
    fn ports_are_never_handed_out_twice_in_a_process() {
        let ports: Vec<u16> = (0..300).map(|_| super::free_port().unwrap()).collect();
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert_eq!(distinct.len(), ports.len());
    }
}
