//! The VM's session: started with its disks and network, watched by its observers until the
//! state machine has a verdict, then torn down (observers first, then the evidence, then the
//! VM).

use std::fs;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::mpsc::{self, UnboundedReceiver};

use super::artifacts::{keep_instructions, RunFiles, FORWARDED_KUBECONFIG};
use super::assisted::{self, AssistedInstall};
use super::context::Run;
use super::error::RunError;
use super::instead::Instead;
use super::lifecycle::Lifecycle;
use super::observers::{JournalFiles, Observers};
use super::plan::vm_plan;
use super::ports::free_port;
use super::registration::{name_domain, record_qemu};
use super::shown::reason_suffix;
use super::state::SaveInputs;
use super::way_in::{kept_vm_instructions, written_kubeconfig, KeptVm, LeftVm, WayIn};
use crate::assets::Assets;
use crate::flow::event::{Served, Signal, SignalTx, Source};
use crate::flow::machine::{Action, Verdict};
use crate::flow::phase::Phase;
use crate::guest::ssh::{SshKeyPair, SshTarget};
use crate::health::checks::Inputs;
use crate::health::ApiEndpoint;
use crate::netboot::Report;
use crate::registry;
use crate::scenario::InstallMode;
use crate::vm::backend::Owned;
use crate::vm::libvirt::nat_network_xml;
use crate::vm::libvirt::network::{bridge_name, NatNetwork};
use crate::vm::running::{Liveness, RunningVm};
use crate::vm::start::{RunMeta, StartOptions};
use crate::vm::VmSpec;

pub struct Session {
    vm: RunningVm,
    spec: VmSpec,
    ssh_port: u16,
    target: SshTarget,
    observers: Observers,
    signals: UnboundedReceiver<(Source, Signal)>,
    /// What background work of the run's own (not an observer) found fatal.
    harness_failures: UnboundedReceiver<String>,
    journal: JournalFiles,
    /// The serial console, watched for a stream that ends while the VM runs.
    console: crate::guest::console::Console,
    /// The API, for the gather.
    endpoint: ApiEndpoint,
    /// Into `signals`, for the run's own guest work (the assisted install).
    signal_tx: SignalTx,
    /// Whether the run has said how to log in: once, when SSH first answers.
    said_login: bool,
    /// What stands in for the VM's own signals the backend lacks.
    instead: Instead,
}

/// The boot server's answers and its strain become timeline events.
fn forward_served(run: &mut Run<'_>, tx: &mpsc::UnboundedSender<(Source, Signal)>) {
    let Some(mut reports) = run
        .boot_server
        .as_mut()
        .and_then(|b| b.server.take_reports())
    else {
        return;
    };
    let tx = tx.clone();
    tokio::spawn(async move {
        while let Some(r) = reports.recv().await {
            let signal = match r {
                Report::Served(r) => Signal::Served(Served {
                    method: r.method,
                    path: r.path,
                    status: r.status,
                    bytes: r.bytes,
                    ms: r.took.as_millis() as u64,
                }),
                Report::Strained(load) => Signal::BootServerStrained {
                    detail: load.sentence(),
                },
            };
            if tx.send((Source::Harness, signal)).is_err() {
                return;
            }
        }
    });
}

/// Where the harness reaches the guest's SSH and API.
struct Reach {
    ssh: SocketAddr,
    api: SocketAddr,
}

impl Session {
    /// Makes the VM's files, starts it on the run's backend and its observers.
    pub async fn start(
        run: &mut Run<'_>,
        life: &Lifecycle,
        (key, assets): (&SshKeyPair, &Assets),
        files: &mut RunFiles,
    ) -> Result<Session, RunError> {
        let (Ok(ssh_port), Ok(api_port)) = (free_port(), free_port()) else {
            return Err(RunError::Harness("no free port on 127.0.0.1".into()));
        };
        let dir = run.opts.dir.as_path();
        let meta =
            RunMeta::for_this_process(run.opts.id.clone(), crate::util::lexical_absolute(dir));
        let (spec, network) = vm_plan(
            run.s,
            &run.private,
            &assets.live_iso,
            run.accel,
            (ssh_port, api_port),
            (&run.opts.id, &meta),
        )?;
        name_domain(run, files, &spec);
        make_vm_files(run, life, &spec, network.as_ref())?;
        let reach = match &network {
            // IPv4 when the network has it, else (single-stack IPv6) the node's IPv6 address.
            Some(n) => Reach {
                ssh: (n.node.address(), 22).into(),
                api: (n.node.address(), 6443).into(),
            },
            None => Reach {
                ssh: ([127, 0, 0, 1], ssh_port).into(),
                api: ([127, 0, 0, 1], api_port).into(),
            },
        };
        let (tx, signals) = mpsc::unbounded_channel::<(Source, Signal)>();
        forward_served(run, &tx);
        let (vm, console, reach) =
            start_vm(run, life, &spec, network.as_ref(), &meta, reach, &tx).await?;
        if let Some(n) = &network {
            listen_on_the_network(run, n).await?;
        }
        record_qemu(run, files, &vm);
        let address = run.private.join(super::artifacts::SSH_ADDRESS_FILE);
        // USER@ADDRESS: a machine the harness did not boot may log in as another user.
        let login = format!("{}@{}", run.opts.backend.ssh_user(), reach.ssh);
        if let Err(e) = crate::assets::write_private(&address, login.as_bytes()) {
            run.ui.line(&format!(
                "warning: cannot record where SSH answers ({e}): `sno-harness ssh` cannot reach this run"
            ));
        }
        run.handle(
            Source::Harness,
            Signal::VmStarted {
                pid: vm.pid().unwrap_or(0),
            },
        );
        run.ui.line(&format!(
            "VM started ({}): SSH on {}, API on {}{}",
            run.opts.backend.name(),
            reach.ssh,
            reach.api,
            network
                .as_ref()
                .map(|n| format!(" (network {}, bridge {})", n.name, bridge_name(&n.name)))
                .unwrap_or_default()
        ));
        let target = SshTarget {
            addr: reach.ssh,
            user: run.opts.backend.ssh_user().into(),
            key: key.clone(),
        };
        let endpoint = ApiEndpoint {
            kubeconfig: assets.kubeconfig.clone(),
            server: Some(format!("https://{}", reach.api)),
        };
        let mut drive = super::multipath::InstallDrive::of(run.s, &spec);
        if !run.opts.backend.can().block_stats {
            // Its writes are read from coreos-installer's progress lines instead (`instead`).
            drive.id = None;
        }
        let observers = Observers::start(
            &vm,
            &console,
            drive,
            (&target, run.opts.dir.as_path()),
            endpoint.clone(),
            Inputs {
                install_config: Some(assets.install_config.clone()),
                etcd: run.s.etcd_check,
                operators: run.s.operators_rule,
                api_int: Some(format!(
                    "api-int.{}.{}",
                    run.s.install.cluster, run.s.install.base_domain
                )),
                node_name: Some(crate::hw::nat::node_hostname(&run.s.install.cluster)),
                static_addresses: run
                    .s
                    .network
                    .as_ref()
                    .map(|n| n.static_addresses())
                    .unwrap_or_default(),
            },
            &tx,
        );
        let (failure_tx, harness_failures) = mpsc::unbounded_channel::<String>();
        life.on_guest(&target, &tx, failure_tx);
        run.artifacts
            .insert("journal-live".into(), "journal-live.txt".into());
        run.artifacts
            .insert("journal-disk".into(), "journal-disk.txt".into());
        Ok(Session {
            vm,
            spec,
            ssh_port,
            target,
            observers,
            signals,
            harness_failures,
            journal: JournalFiles::new(dir),
            console,
            endpoint,
            signal_tx: tx,
            said_login: false,
            instead: Instead::for_backend(&run.opts.backend.can()),
        })
    }

    /// Feeds every signal, tick, failure and interrupt to the state machine until it has an
    /// outcome.
    pub async fn watch(&mut self, run: &mut Run<'_>) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut interrupt = run.opts.interrupt.clone();
        loop {
            self.show(run);
            if run.machine.outcome().is_some() {
                return;
            }
            tokio::select! {
                Some((source, signal)) = self.signals.recv() => self.on_signal(run, source, signal),
                _ = tick.tick() => {
                    self.check_instruments(run);
                    let now = run.now();
                    let actions = run.machine.tick(now);
                    run.pending.extend(actions);
                    run.ui.status(&run.machine, now);
                }
                Some(reason) = self.harness_failures.recv() => {
                    let now = run.now();
                    let actions = run.machine.error(now, reason);
                    run.pending.extend(actions);
                }
                _ = interrupt.changed() => {
                    let _ = run.log.record(Source::Harness, Signal::Note { text: "interrupted".into() });
                    let now = run.now();
                    let actions = run.machine.error(now, "interrupted".into());
                    run.pending.extend(actions);
                }
            }
        }
    }

    /// Whether the VM still runs, and whether the harness can still see it: the VM's end is
    /// the system's outcome; a lost libvirt connection or console is the harness's (QMP's
    /// loss is its event stream's end, see vm::running).
    fn check_instruments(&mut self, run: &mut Run<'_>) {
        let lost = match self.vm.liveness() {
            Liveness::Running => self.console_lost(),
            Liveness::Gone => {
                let status = format!("the {} VM is gone", run.opts.backend.name());
                run.handle(Source::Harness, Signal::VmExited { status });
                None
            }
            Liveness::Lost { instrument, detail } => Some((instrument.to_string(), detail)),
        };
        if let Some((instrument, detail)) = lost {
            run.handle(
                Source::Harness,
                Signal::InstrumentLost { instrument, detail },
            );
        }
    }

    /// The console as an instrument of a running VM: its log refusing lines, or its stream
    /// closed; the instrument and what happened.
    fn console_lost(&self) -> Option<(String, String)> {
        if let Some(why) = self.console.log_error() {
            let detail = format!("writing serial.log: {why}; console lines are being lost");
            return Some(("serial console's log".into(), detail));
        }
        self.console.is_closed().then(|| {
            let detail = "the console's stream closed while the VM runs";
            ("serial console".to_string(), detail.to_string())
        })
    }

    /// Prints and records what the machine did, and starts what its phases need.
    fn show(&mut self, run: &mut Run<'_>) {
        for a in std::mem::take(&mut run.pending) {
            run.show_action(&a);
            match a {
                Action::PhaseStarted(p) => {
                    self.observers.on_phase_started(p);
                    if p == Phase::InstallToDisk && run.s.install.mode == InstallMode::Assisted {
                        self.start_assisted_install(run);
                    }
                }
                Action::PhaseEnded(Phase::InstallToDisk, crate::flow::machine::Status::Pass) => {
                    self.vm.install_on_disk();
                }
                _ => {}
            }
        }
    }

    /// The harness runs coreos-installer itself, as the assisted installer's agent does.
    fn start_assisted_install(&self, run: &mut Run<'_>) {
        for (name, file) in [
            ("assisted-journal", assisted::JOURNAL_FILE),
            ("assisted-var-log", assisted::VAR_LOG_FILE),
        ] {
            run.artifacts
                .insert(name.into(), format!("{}/{file}", assisted::LOGS_DIR));
        }
        AssistedInstall {
            target: self.target.clone(),
            disk: run.s.install.installation_disk.clone(),
            section: run.s.install.assisted.clone(),
            uefi: run.s.vm.firmware.is_uefi(),
            run_dir: run.opts.dir.clone(),
        }
        .spawn(self.signal_tx.clone());
    }

    fn on_signal(&mut self, run: &mut Run<'_>, source: Source, signal: Signal) {
        if matches!(signal, Signal::Ssh { up: true, .. }) && !self.said_login {
            // The key is in the private directory from the start: a developer can follow the
            // live system (`journalctl -f -u bootkube`) while the run goes on.
            self.said_login = true;
            let line = super::artifacts::login_line_as(
                &run.private,
                (&self.target.user, self.target.addr),
                "SSH answers; to log in while the run goes on (the live system now, the installed one after the reboot):",
            );
            run.ui.line(&line);
        }
        if let Signal::GuestStatus(st) = &signal {
            self.journal.learn(&st.boot_id, st.live);
        }
        if let Signal::Journal { .. } = &signal {
            self.journal.write(&signal);
        }
        // Before the signal itself: a reboot seen in a status precedes what the status says.
        for (source, stand_for) in self.instead.signals_for(&signal) {
            run.handle(source, stand_for);
        }
        run.handle(source, signal);
    }

    /// Observers first; a failed run paused for the user (`--pause-on-failure`); then the
    /// evidence (a failed run's gather, a saving run's state), then the VM. A passing run leaves
    /// the kubeconfig it reached the API with in the private directory, a failed one too when
    /// the API answered and it is kept or paused. A kept run (`--keep`, as its verdict asks)
    /// whose backend can leaves its VM running when it gets a running slot (QEMU's pid is
    /// returned) and the user is told how to get in and how to stop it; else it prints how to
    /// boot the disks again.
    pub async fn tear_down(
        mut self,
        run: &mut Run<'_>,
        (life, registration): (&Lifecycle, Option<&mut registry::Registration>),
        key: &SshKeyPair,
        assets: &Assets,
    ) -> TornDown {
        self.observers.stop();
        self.journal.finish();
        let passed = run
            .machine
            .outcome()
            .is_some_and(|o| o.verdict == Verdict::Pass);
        let keeps = life.keeps_disks(run.opts.keep.when.applies(passed));
        // The user who stopped the run wants it stopped: no pause, no VM left running.
        let interrupted = *run.opts.interrupt.borrow();
        if !passed && (keeps || run.opts.pause_on_failure) && !interrupted {
            self.kubeconfig_if_the_api_answered(run);
        }
        let registered = registration.is_some();
        let paused = match run.opts.pause_on_failure && !passed && !interrupted {
            true => self.pause(run, registration).await,
            false => Duration::ZERO,
        };
        let reach = super::gather_step::Reach {
            vm: &self.vm,
            guest: &self.target,
            api: &self.endpoint,
        };
        super::gather_step::gather(run, reach, passed).await;
        if passed {
            self.after_pass(run, life, key, assets).await;
        }
        let leave = keeps
            && !interrupted
            && registered
            && run.opts.backend.can().leave_running
            && run.opts.keep.takes_running_slot(passed);
        let runs_on = match leave.then(|| self.vm.detach()) {
            Some(Ok(left)) => Some(left),
            Some(Err(why)) => {
                run.ui.line(&format!("--keep: the VM is stopped: {why}"));
                None
            }
            None => None,
        };
        if runs_on.is_none() {
            self.vm.keep_disks(keeps);
            self.vm.stop();
        }
        if keeps {
            run.ui.finish();
            let text = match runs_on {
                Some(left) => self.kept_vm_text(run, left, passed),
                None => keep_instructions(&run.private, &self.spec, self.ssh_port),
            };
            run.ui.print(&text);
        }
        TornDown {
            left_running: runs_on,
            paused,
        }
    }

    /// Writes the admin kubeconfig of a failed run into the private directory when the API
    /// answered during the run: a way in for the user of a kept or paused VM.
    fn kubeconfig_if_the_api_answered(&self, run: &mut Run<'_>) {
        if run.machine.phase(Phase::ApiReady).status != crate::flow::machine::Status::Pass {
            return;
        }
        if let Err(e) = write_forwarded_kubeconfig(&run.private, &self.endpoint) {
            run.ui.line(&format!("warning: {e}"));
        }
    }

    fn way_in<'a>(&self, run: &'a Run<'_>) -> WayIn<'a> {
        WayIn {
            run_id: &run.opts.id,
            private: &run.private,
            ssh_at: self.target.addr,
            kubeconfig: written_kubeconfig(&run.private),
        }
    }

    fn kept_vm_text(
        &self,
        run: &Run<'_>,
        left: crate::vm::running::LeftRunning,
        passed: bool,
    ) -> String {
        let domain = self.vm.domain_name();
        let vm = match (left, domain.as_deref()) {
            (crate::vm::running::LeftRunning::PoweredOn, _) => LeftVm::PoweredOn,
            (crate::vm::running::LeftRunning::Qemu(pid), Some(name)) => {
                LeftVm::Domain { name, pid }
            }
            (crate::vm::running::LeftRunning::Qemu(pid), None) => LeftVm::Qemu { pid },
        };
        kept_vm_instructions(&KeptVm {
            way_in: self.way_in(run),
            vm,
            failed: (!passed).then(|| failure_words(&run.machine)),
            install: &run.s.install,
        })
    }

    /// Holds the failed run at its verdict with the VM alive until the user resumes it.
    async fn pause(
        &mut self,
        run: &mut Run<'_>,
        registration: Option<&mut registry::Registration>,
    ) -> Duration {
        let way_in = self.way_in(run).lines();
        let failure = failure_words(&run.machine);
        super::pause::hold(run, (&failure, way_in), registration, &mut self.vm).await
    }

    /// What a passing run does before its VM stops: the hand-on kubeconfig, and the saving
    /// strategy's state.
    async fn after_pass(
        &mut self,
        run: &mut Run<'_>,
        life: &Lifecycle,
        key: &SshKeyPair,
        assets: &Assets,
    ) {
        match write_forwarded_kubeconfig(&run.private, &self.endpoint) {
            Ok(text) => match super::hand_on::hand_on(&run.opts.kubeconfig_to, text.as_bytes()) {
                Ok(lines) => lines.iter().for_each(|l| run.ui.line(l)),
                Err(e) => run.machine.error_after_pass(e),
            },
            Err(e) if run.opts.kubeconfig_to.is_empty() => run.ui.line(&format!("warning: {e}")),
            Err(e) => run.machine.error_after_pass(e),
        }
        let saved = life
            .after_pass(
                SaveInputs {
                    vm: &mut self.vm,
                    machine: &run.machine,
                    guest: &self.target,
                    spec: &self.spec,
                    key,
                    assets,
                    run_id: &run.opts.id,
                    scenario: run.s,
                    accel: run.accel,
                },
                run.ui,
                &mut run.log,
            )
            .await;
        if let Err(e) = saved {
            run.machine.error_after_pass(e.to_string());
        }
    }
}

/// The admin kubeconfig pointed where the harness reached the API, written 0600 into the
/// private directory's assets/ (`FORWARDED_KUBECONFIG`): what `--kubeconfig-out` and
/// `$SHARED_DIR` hand on, and what a kept cluster is used with.
fn write_forwarded_kubeconfig(
    private: &std::path::Path,
    ep: &ApiEndpoint,
) -> Result<String, String> {
    let text = ep
        .kubeconfig_for_hand_on()
        .map_err(|e| format!("no hand-on kubeconfig: {e}"))?;
    let path = private.join(FORWARDED_KUBECONFIG);
    crate::assets::write_private(&path, text.as_bytes())
        .map_err(|e| format!("no hand-on kubeconfig: {e}"))?;
    Ok(text)
}

/// What a run left running is: its QEMU's pid, and how long it was paused at its failure.
pub struct TornDown {
    pub left_running: Option<crate::vm::running::LeftRunning>,
    pub paused: Duration,
}

/// `install-to-disk: coreos-installer exited 1`: the failed phase and the reason.
fn failure_words(m: &crate::flow::machine::Machine) -> String {
    match m.outcome() {
        Some(o) => format!(
            "{}{}",
            o.failed_phase.map_or("the run", |p| p.name()),
            reason_suffix(o)
        ),
        None => "no verdict".into(),
    }
}

/// The VM's disks (empty, or overlays on a saved state's), its UEFI variables, and the NAT
/// network's XML for the record.
fn make_vm_files(
    run: &mut Run<'_>,
    life: &Lifecycle,
    spec: &VmSpec,
    network: Option<&NatNetwork>,
) -> Result<(), RunError> {
    let dir = run.opts.dir.as_path();
    if run.opts.backend.can().owned == Owned::Nothing {
        // A machine the harness did not boot has its own disks and firmware.
        return Ok(());
    }
    // As the private directory: the disks are secrets (see util::private).
    crate::util::private::create_dir_with_mode(
        &run.private.join("disks"),
        run.opts.backend.dir_access().mode(),
    )
    .map_err(|e| format!("creating disks/: {e}"))?;
    for (d, sd) in spec.disks.iter().zip(&run.s.disks) {
        life.make_disk(d, sd.size_bytes)
            .map_err(|e| RunError::Harness(e.to_string()))?;
    }
    if let Some(vars) = &spec.uefi_vars {
        let from = life.uefi_vars_template(spec.firmware);
        // fs::copy gives the copy the template's mode (0644 from the firmware package).
        fs::copy(&from, vars)
            .and_then(|_| crate::util::private::set_mode(vars, crate::util::private::PRIVATE_FILE))
            .map_err(|e| format!("copying {}: {e}", from.display()))?;
    }
    if let Some(n) = network {
        let _ = fs::write(dir.join("network.xml"), nat_network_xml(n));
        run.artifacts.insert("network".into(), "network.xml".into());
    }
    Ok(())
}

/// Starts the VM on the run's backend (on this thread, not a blocking-pool thread: QEMU's
/// parent-death signal fires when the thread that forked it exits, and pool threads exit when
/// idle), records what it is, and lets the strategy load a saved state into it.
/// The boot server listens on the NAT network's host address too, now that the bridge has it
/// (the guest's init waits for the server before it fetches).
async fn listen_on_the_network(run: &mut Run<'_>, n: &NatNetwork) -> Result<(), RunError> {
    let Some(b) = run.boot_server.as_mut() else {
        return Ok(());
    };
    let at = b.guest_sees_host_at;
    let addr = b
        .server
        .listen_also(at.into(), b.peers)
        .await
        .map_err(|e| {
            RunError::Harness(format!(
                "the boot server cannot listen on {at}, network {}'s host address: {e}",
                n.name
            ))
        })?;
    run.ui
        .line(&format!("boot server on {addr} too (network {})", n.name));
    Ok(())
}

async fn start_vm(
    run: &mut Run<'_>,
    life: &Lifecycle,
    spec: &VmSpec,
    network: Option<&NatNetwork>,
    meta: &RunMeta,
    reach: Reach,
    tx: &SignalTx,
) -> Result<(RunningVm, crate::guest::console::Console, Reach), RunError> {
    let dir = run.opts.dir.as_path();
    let (mut vm, console) = RunningVm::start(
        &run.opts.backend,
        spec,
        StartOptions {
            network,
            reach: &[reach.ssh, reach.api],
            keep_disks: run.opts.keep.when.may_keep(),
            incoming: life.incoming(),
            may_outlive: run.opts.keep.may_leave_running() && run.opts.backend.can().leave_running,
        },
        meta,
        dir,
        tx,
    )
    .await?;
    // On a remote libvirt host, the guest is reached through SSH forwards, and the numbers
    // are that host's.
    let reach = Reach {
        ssh: vm.local_addr(reach.ssh),
        api: vm.local_addr(reach.api),
    };
    run.vm_host = vm.remote_host_context();
    let _ = fs::write(dir.join("vm.txt"), vm.describe() + "\n");
    run.artifacts.insert("vm".into(), "vm.txt".into());
    if run.opts.backend.can().console {
        run.artifacts.insert("serial".into(), "serial.log".into());
    }
    // QEMU's stderr, or libvirt's log of the domain's QEMU taken into the run directory when
    // the domain ends (a local libvirtd only).
    if let Some((name, file)) = run.opts.backend.can().vm_log.artifact() {
        run.artifacts.insert(name.into(), file.into());
    }
    life.after_start(&mut vm, run.ui, &mut run.log).await?;
    Ok((vm, console, reach))
}
