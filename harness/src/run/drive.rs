//! One run between its start and its verdict, as named steps: open the timeline, begin the
//! first phase, make the assets (or take a saved state's), start the VM session, watch it to a
//! verdict, tear it down. A step that cannot go on returns a [`RunError`], which ends the run
//! in the state machine; what the steps made is released on every way out.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::artifacts::RunFiles;
use super::context::{BootServer, ReverseForward, Run};
use super::error::RunError;
use super::installer::installer_for;
use super::lifecycle::Lifecycle;
use super::progress::Progress;
use super::session::Session;
use super::RunOptions;
use crate::assets::{self, Assets, AssetsRequest};
use crate::flow::event::{EventLog, Signal, Source};
use crate::flow::machine::Machine;
use crate::flow::phase::Phase;
use crate::guest::ssh::SshKeyPair;
use crate::hw::Accel;
use crate::netboot::FileServer;
use crate::result::{AssetsUsed, HostContext};
use crate::scenario::Scenario;

/// What [`drive`] leaves: the machine holding the outcome, the remote host the VM ran on, if
/// any, and the installer and ISO it used, once the assets were made.
pub struct Driven {
    pub machine: Machine,
    pub vm_host: Option<HostContext>,
    pub assets: Option<AssetsUsed>,
    /// QEMU's pid when the run left its VM running (a passing `--keep` run).
    pub vm_left_running: Option<u32>,
    pub rootfs_url: Option<String>,
}

/// Everything between the start and the verdict.
pub async fn drive(
    s: &Scenario,
    opts: &RunOptions,
    mut machine: Machine,
    (started, accel): (Instant, Accel),
    artifacts: &mut BTreeMap<String, String>,
    ui: &mut Progress,
) -> Driven {
    // Declared first so that it goes last, after the VM, on every way out of here.
    let mut files = RunFiles {
        dir: opts.dir.clone(),
        keep: opts.keep,
        registration: None,
        vm_left_running: None,
    };
    // Owner-only before anything is in it: QEMU's sockets, the disks and the live ISO get
    // their protection from it (see util::private).
    let access = opts.backend.dir_access();
    if let Err(e) = crate::util::private::set_mode(&opts.dir, access.mode()) {
        let why = format!("chmod {:o} {}: {e}", access.mode(), opts.dir.display());
        RunError::Harness(why).record(&mut machine, 0);
        return Driven::before_assets(machine);
    }
    let log = match EventLog::create(&opts.dir.join("events.jsonl"), started) {
        Ok(l) => l,
        Err(e) => {
            RunError::Harness(format!("creating events.jsonl: {e}")).record(&mut machine, 0);
            return Driven::before_assets(machine);
        }
    };
    artifacts.insert("events".into(), "events.jsonl".into());
    let mut run = Run {
        s,
        opts,
        machine,
        log,
        ui,
        artifacts,
        started,
        accel,
        pending: Vec::new(),
        vm_host: None,
        assets_used: None,
        boot_server: None,
    };
    if let Err(e) = run.until_verdict(&mut files).await {
        let now = run.now();
        e.record(&mut run.machine, now);
    }
    let driven = Driven {
        machine: run.machine,
        vm_host: run.vm_host,
        assets: run.assets_used,
        vm_left_running: files.vm_left_running,
        rootfs_url: run.boot_server.as_ref().map(BootServer::rootfs_url),
    };
    drop(files);
    driven
}

impl Driven {
    fn before_assets(machine: Machine) -> Driven {
        Driven {
            machine,
            vm_host: None,
            assets: None,
            vm_left_running: None,
            rootfs_url: None,
        }
    }
}

/// result.json's record of what the assets phase used.
fn assets_used(a: &Assets) -> AssetsUsed {
    let v = &a.installer_version;
    AssetsUsed {
        installer: a.installer.display().to_string(),
        installer_version: v.first_line.clone(),
        installer_commit: v.commit.clone(),
        release_image: a
            .release_override
            .clone()
            .or_else(|| v.release_image.clone()),
        iso: a.iso_source.clone(),
        iso_sha256: a.iso_sha256.clone(),
    }
}

impl Run<'_> {
    async fn until_verdict(&mut self, files: &mut RunFiles) -> Result<(), RunError> {
        let life = Lifecycle::new(&self.opts.state, self.accel)?;
        let now = self.now();
        self.pending = life.begin(&mut self.machine, now);
        let text = format!("run {} started", self.opts.id);
        let _ = self.log.record(Source::Harness, Signal::Note { text });
        files.registration = super::session::register(self);
        let (key, assets) = match life.saved_assets() {
            Some(saved) => saved?,
            None => {
                self.boot_server = self.start_boot_server().await?;
                self.make_assets(&life).await?
            }
        };
        if let (Some(b), Some(rootfs)) = (&self.boot_server, &assets.rootfs) {
            b.server.serve(crate::netboot::ROOTFS_PATH, rootfs.clone());
        }
        if let (Some(b), Some(pxe)) = (&self.boot_server, &assets.pxe) {
            for (path, file) in pxe.boot_files() {
                b.server.serve(path, file);
            }
        }
        self.assets_used = Some(assets_used(&assets));
        let mut session = Session::start(self, &life, (&key, &assets), files).await?;
        session.watch(self).await;
        // Only a registered VM is left running: gc must be able to find it.
        let registered = files.registration.is_some();
        files.vm_left_running = session
            .tear_down(self, (&life, registered), &key, &assets)
            .await;
        Ok(())
    }

    /// For a boot that fetches its root filesystem: the harness's server, bound on the
    /// host's loopback, which the guest reaches as its user network's gateway; on a NAT
    /// network, at the network's host address, where the session makes it listen too once the
    /// network exists (the URL goes into the ISO before).
    async fn start_boot_server(&mut self) -> Result<Option<BootServer>, RunError> {
        if !self.s.boot_source.fetches_rootfs() {
            return Ok(None);
        }
        let guest_sees_host_at = match self.s.vm.network {
            crate::scenario::GuestNetwork::Nat => {
                crate::hw::nat::layout(&self.s.install.machine_network)
                    .map_err(RunError::Harness)?
                    .ipv4
                    .host
            }
            _ => crate::netboot::USER_NETWORK_HOST,
        };
        let fault = self
            .s
            .fixture
            .as_ref()
            .and_then(|f| crate::netboot::fault_of(&f.faults));
        let server = FileServer::start((std::net::Ipv4Addr::LOCALHOST, 0).into(), fault)
            .await
            .map_err(|e| {
                RunError::Harness(format!("starting the boot server on 127.0.0.1: {e}"))
            })?;
        let boot = BootServer {
            reverse: self.reverse_forward(server.addr().port()).await?,
            server,
            guest_sees_host_at,
        };
        let via = match &boot.reverse {
            Some(r) => format!(
                " (through an SSH remote forward from the libvirt host's port {})",
                r.port
            ),
            None => String::new(),
        };
        self.ui.line(&format!(
            "boot server on {}: the guest fetches its root filesystem from {}{via}",
            boot.server.addr(),
            boot.rootfs_url()
        ));
        Ok(Some(boot))
    }

    /// On a remote libvirt host the guest's user network reaches that host's loopback, not
    /// this one's: an SSH connection there forwards a port of its loopback back to the boot
    /// server's. `None` here, on QEMU and on a local libvirtd.
    async fn reverse_forward(&self, local_port: u16) -> Result<Option<ReverseForward>, RunError> {
        let crate::vm::running::Backend::Libvirt { uri } = &self.opts.backend else {
            return Ok(None);
        };
        let target = crate::vm::libvirt::remote_target(uri)
            .map_err(|e| RunError::Harness(format!("the libvirt URI {uri}: {e}")))?;
        let Some(target) = target else {
            return Ok(None);
        };
        let forward = tokio::task::spawn_blocking(move || {
            let tunnel = crate::vm::libvirt::Tunnel::open(&target, &[])?;
            let port = tunnel.reverse(local_port)?;
            Ok(ReverseForward {
                _tunnel: tunnel,
                port,
            })
        })
        .await
        .map_err(|e| RunError::Harness(format!("the boot server's SSH forward: {e}")))?
        .map_err(|e: crate::vm::libvirt::TunnelError| {
            RunError::Harness(format!("SSH to {uri} for the boot server: {e}"))
        })?;
        Ok(Some(forward))
    }

    /// The assets phase's work: the run's SSH key, the install-config, the installer's
    /// Ignition and the live ISO, made off the async threads; an interrupt kills what they
    /// wait for.
    async fn make_assets(&mut self, life: &Lifecycle) -> Result<(SshKeyPair, Assets), RunError> {
        self.ui.line("assets: install-config, installer, live ISO");
        let comment = format!("sno-harness {}", self.opts.id);
        let key = if self.s.install.fips {
            SshKeyPair::generate_for_fips(&comment)
        } else {
            SshKeyPair::generate(&comment)
        }
        .map_err(|e| RunError::Harness(e.to_string()))?;
        let (s, dir, key2, cache) = (
            self.s.clone(),
            self.opts.dir.clone(),
            key.clone(),
            self.opts.cache_dir.clone(),
        );
        let hold_install = life.holds_install();
        let deadline = self.phase_deadline(Phase::Assets);
        let rootfs_url = self.boot_server.as_ref().map(BootServer::rootfs_url);
        let task = tokio::task::spawn_blocking(move || -> Result<Assets, AssetsFailure> {
            let (installer, env) = installer_for(&s).map_err(AssetsFailure::Other)?;
            assets::prepare(&AssetsRequest {
                scenario: &s,
                run_dir: &dir,
                installer: &installer,
                installer_env: env,
                ssh_public_key: &key2.public_openssh,
                cache_dir: &cache,
                hold_install,
                deadline,
                rootfs_url,
            })
            .map_err(AssetsFailure::from)
        });
        let made = self.unless_interrupted_or_late(task, deadline).await?;
        self.artifacts
            .insert("install-config".into(), "install-config.yaml".into());
        self.artifacts
            .insert("installer-log".into(), "assets/installer.log".into());
        let assets = match made {
            Ok(Ok(a)) => a,
            Ok(Err(AssetsFailure::Rejected(reason))) => return Err(RunError::Rejected(reason)),
            Ok(Err(AssetsFailure::Late(reason))) => return Err(self.late(&reason)),
            Ok(Err(AssetsFailure::Other(reason))) => {
                return Err(RunError::Harness(format!("assets: {reason}")))
            }
            Err(e) => return Err(RunError::Harness(format!("assets: {e}"))),
        };
        self.handle(Source::Harness, Signal::AssetsReady);
        Ok((key, assets))
    }

    /// When the current phase `p` runs out of time, as an instant for blocking work.
    fn phase_deadline(&self, p: Phase) -> Instant {
        let st = self.machine.phase(p);
        let start = Duration::from_millis(st.start_ms.unwrap_or_else(|| self.now()));
        self.started + start + st.timeout
    }

    /// A helper of blocking work outlived the phase's deadline (and was stopped): the phase
    /// times out, saying what was still running.
    fn late(&mut self, reason: &str) -> RunError {
        let now = self.now();
        let actions = self.machine.late(now, reason);
        self.pending.extend(actions);
        RunError::Decided
    }

    /// Waits for blocking work, or for the interrupt, or for the current phase's deadline
    /// (checked every second, as the session does). The CLI kills the helpers as it signals
    /// the interrupt, so the work may end first, failed: that is still an interrupted run, not
    /// a failed build. Past the deadline the work's helpers stop themselves (they know the
    /// deadline); work that is no helper (hashing a large ISO) is left behind, the run ends.
    async fn unless_interrupted_or_late<T>(
        &mut self,
        task: tokio::task::JoinHandle<T>,
        deadline: Instant,
    ) -> Result<Result<T, tokio::task::JoinError>, RunError> {
        let mut interrupt = self.opts.interrupt.clone();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tokio::pin!(task);
        loop {
            tokio::select! {
                r = &mut task => {
                    if *self.opts.interrupt.borrow() {
                        return Err(RunError::Interrupted);
                    }
                    return Ok(r);
                }
                _ = super::until_interrupted(&mut interrupt) => {
                    // The blocking work cannot be cancelled, but what it waits for can be
                    // killed (a fixture build, the installer); then it returns promptly.
                    crate::util::children::kill_all();
                    let _ = tokio::time::timeout(Duration::from_secs(5), &mut task).await;
                    return Err(RunError::Interrupted);
                }
                _ = tick.tick() => {
                    // The work's helpers stop themselves at the deadline and say which one
                    // was late; only work that is no helper is timed out here, after their
                    // grace to stop.
                    if Instant::now() < deadline + crate::util::children::GRACE + Duration::from_secs(2) {
                        continue;
                    }
                    let now = self.now();
                    let actions = self.machine.tick(now);
                    self.pending.extend(actions);
                    if self.machine.outcome().is_some() {
                        return Err(RunError::Decided);
                    }
                }
            }
        }
    }
}

/// How the assets work failed, as the run ends it.
enum AssetsFailure {
    /// The installer refused the install-config: the phase fails.
    Rejected(String),
    /// A helper ran past the phase's deadline: the phase times out.
    Late(String),
    /// The host or the harness: verdict error.
    Other(String),
}

impl From<assets::AssetsError> for AssetsFailure {
    fn from(e: assets::AssetsError) -> Self {
        match e {
            assets::AssetsError::Rejected { .. } => AssetsFailure::Rejected(e.to_string()),
            assets::AssetsError::Late { .. }
            | assets::AssetsError::Iso(assets::IsoError::Late { .. }) => {
                AssetsFailure::Late(e.to_string())
            }
            e => AssetsFailure::Other(e.to_string()),
        }
    }
}
