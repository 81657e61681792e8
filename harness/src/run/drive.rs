//! One run between its start and its verdict, as named steps: open the timeline, begin the
//! first phase, make the assets (or take a saved state's), start the VM session, watch it to a
//! verdict, tear it down. A step that cannot go on returns a [`RunError`], which ends the run
//! in the state machine; what the steps made is released on every way out.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::artifacts::{RunFiles, SSH_KEY_FILE};
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
use crate::netboot::{FileServer, Peers};
use crate::registry::private_dir::PrivateDir;
use crate::result::{AssetsUsed, HostContext};
use crate::scenario::Scenario;

/// What [`drive`] leaves: the machine holding the outcome, the remote host the VM ran on, if
/// any, and the installer and ISO it used, once the assets were made.
pub struct Driven {
    pub machine: Machine,
    pub vm_host: Option<HostContext>,
    pub assets: Option<AssetsUsed>,
    /// QEMU's pid when the run left its VM running (`--keep`).
    pub vm_left_running: Option<crate::vm::running::LeftRunning>,
    /// How long the run was paused at its failure (`--pause-on-failure`).
    pub paused: std::time::Duration,
    pub rootfs_url: Option<String>,
    /// Where the run's private directory was, and whether it stays.
    pub private: Option<crate::result::PrivateRecord>,
    /// What the boot server refused, in words, when it refused anything.
    pub boot_server_refused: Option<String>,
    /// The run's secrets, to make sure none reached the run directory.
    pub secrets: crate::secrets::Secrets,
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
    // The run directory is published whole, but while the run lives its lines name the boot
    // server's per-run paths: the owner's alone until then.
    if let Err(e) = crate::util::private::set_mode(&opts.dir, crate::util::private::PRIVATE_DIR) {
        let why = format!("chmod 700 {}: {e}", opts.dir.display());
        let _ = RunError::Harness(why).record(&mut machine, 0);
        return Driven::before_assets(machine);
    }
    // The secrets and the VM's files, outside the run directory; declared first so that it
    // goes last, after the VM, on every way out of here.
    let private = match PrivateDir::create(&opts.id, opts.backend.dir_access()) {
        Ok(p) => p,
        Err(e) => {
            let _ = RunError::from(e).record(&mut machine, 0);
            return Driven::before_assets(machine);
        }
    };
    let private_path = private.path().to_path_buf();
    let mut files = RunFiles {
        private: Some(private),
        keep: opts.keep.when.may_keep(),
        registration: None,
        vm_left_running: None,
        paused: Default::default(),
    };
    let log = match EventLog::create(&opts.dir.join("events.jsonl"), started) {
        Ok(l) => l,
        Err(e) => {
            let _ =
                RunError::Harness(format!("creating events.jsonl: {e}")).record(&mut machine, 0);
            return Driven::before_assets(machine);
        }
    };
    artifacts.insert("events".into(), "events.jsonl".into());
    let mut run = Run {
        s,
        opts,
        private: private_path,
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
        // Ended before a session showed it (the installer refused the install-config), or
        // by the harness: the timeline records the phases' starts and ends all the same.
        let now = run.now();
        let actions = e.record(&mut run.machine, now);
        run.pending.extend(actions);
        run.show_pending();
    }
    // What stays is what the verdict asks to keep (`--keep on-failure` keeps a failure's).
    let passed = run
        .machine
        .outcome()
        .is_some_and(|o| o.verdict == crate::flow::machine::Verdict::Pass);
    files.keep = opts.keep.when.applies(passed);
    let kept = files.keep || files.vm_left_running.is_some();
    // What the published files must not hold, read before the private directory goes.
    let mut secrets = crate::secrets::Secrets::default();
    if let Some(p) = crate::assets::pull_secret_text(s) {
        secrets.add_pull_secret(&p);
    }
    if let Some(p) = given_pull_secret(&opts.state) {
        secrets.add_pull_secret(&p);
    }
    secrets.add_private_dir(&run.private);
    if let Some(p) = opts.backend.bmc().and_then(crate::vm::bmc_boot::password) {
        secrets.add("the BMC's password", &p);
    }
    let driven = Driven {
        machine: run.machine,
        vm_host: run.vm_host,
        assets: run.assets_used,
        vm_left_running: files.vm_left_running,
        paused: files.paused,
        rootfs_url: run.boot_server.as_ref().map(BootServer::rootfs_url_shown),
        private: Some(crate::result::PrivateRecord {
            dir: run.private.display().to_string(),
            kept,
        }),
        boot_server_refused: run
            .boot_server
            .as_ref()
            .map(|b| b.server.load())
            .filter(|l| !l.is_zero())
            .map(|l| l.sentence()),
        secrets,
    };
    drop(files);
    driven
}

/// The pull secret of an observed install's install-config, when it has one.
fn given_pull_secret(state: &super::state::StateMode) -> Option<String> {
    match state {
        super::state::StateMode::Observe(given) => given.pull_secret(),
        _ => None,
    }
}

impl Driven {
    fn before_assets(machine: Machine) -> Driven {
        Driven {
            machine,
            vm_host: None,
            assets: None,
            vm_left_running: None,
            paused: Default::default(),
            rootfs_url: None,
            private: None,
            boot_server_refused: None,
            secrets: Default::default(),
        }
    }
}

/// result.json's record of what the assets phase used.
fn assets_used(a: &Assets, inherited: &[(String, String)]) -> AssetsUsed {
    let v = &a.installer_version;
    AssetsUsed {
        inherited_env: inherited
            .iter()
            .map(|(k, v)| super::installer::recorded(k, v))
            .collect(),
        installer: a.installer.display().to_string(),
        installer_version: v.first_line.clone(),
        installer_commit: v.commit.clone(),
        release_image: a
            .release_override
            .clone()
            .or_else(|| v.release_image.clone()),
        iso: crate::util::url::redacted(&a.iso_source),
        iso_sha256: a.iso_sha256.clone(),
    }
}

impl Run<'_> {
    async fn until_verdict(&mut self, files: &mut RunFiles) -> Result<(), RunError> {
        let life = Lifecycle::new(&self.opts.state, self.accel, self.s)?;
        let now = self.now();
        self.pending = life.begin(&mut self.machine, now);
        let text = format!("run {} started", self.opts.id);
        let _ = self.log.record(Source::Harness, Signal::Note { text });
        files.registration = super::registration::register(self);
        let lacks = self.opts.backend.can().lacks();
        if !lacks.is_empty() {
            let text = format!("{}: {}", self.opts.backend.name(), lacks.join("; "));
            let _ = self.log.record(Source::Harness, Signal::Note { text });
        }
        let (key, assets) = match life.saved_assets(&self.private) {
            Some(saved) => saved?,
            None => {
                self.boot_server = self.start_boot_server().await?;
                self.make_assets(&life).await?
            }
        };
        if let (Some(b), Some(rootfs)) = (&self.boot_server, &assets.rootfs) {
            b.server.serve(crate::netboot::ROOTFS_NAME, rootfs.clone());
        }
        if let (Some(b), Some(pxe)) = (&self.boot_server, &assets.pxe) {
            for (name, file, once) in pxe.boot_files() {
                match once {
                    true => b.server.serve_once(name, file),
                    false => b.server.serve(name, file),
                }
            }
        }
        if !life.assets_are_given() {
            let inherited = super::installer::inherited_installer_env(self.s, std::env::vars());
            self.assets_used = Some(assets_used(&assets, &inherited));
        }
        let mut session = Session::start(self, &life, (&key, &assets), files).await?;
        session.watch(self).await;
        // Only a registered VM is left running: gc must be able to find it.
        let torn = session
            .tear_down(self, (&life, files.registration.as_mut()), &key, &assets)
            .await;
        files.vm_left_running = torn.left_running;
        files.paused = torn.paused;
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
        let (guest_sees_host_at, peers) = match self.s.vm.network {
            crate::scenario::GuestNetwork::Nat => {
                let nat = crate::hw::nat::layout(&self.s.install.machine_network)
                    .map_err(|e| RunError::Harness(e.to_string()))?;
                // The server and its URLs are IPv4's: validation refuses a boot that fetches
                // its root filesystem on a single-stack IPv6 network.
                let (Some(net4), Some(node4)) = (nat.ipv4, nat.node_ipv4) else {
                    return Err(RunError::Harness(
                        "the boot server serves IPv4 only, and this NAT network has no IPv4".into(),
                    ));
                };
                (net4.host, Peers::Only(node4.into()))
            }
            _ => (crate::netboot::USER_NETWORK_HOST, Peers::Any),
        };
        let fault = self
            .s
            .fixture
            .as_ref()
            .and_then(|f| crate::netboot::fault_of(&f.faults));
        let server = FileServer::start((std::net::Ipv4Addr::LOCALHOST, 0).into(), fault, peers)
            .await
            .map_err(|e| {
                RunError::Harness(format!("starting the boot server on 127.0.0.1: {e}"))
            })?;
        let boot = BootServer {
            reverse: self.reverse_forward(server.addr().port()).await?,
            server,
            guest_sees_host_at,
            peers,
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
            boot.rootfs_url_shown()
        ));
        Ok(Some(boot))
    }

    /// On a remote libvirt host the guest's user network reaches that host's loopback, not
    /// this one's: an SSH connection there forwards a port of its loopback back to the boot
    /// server's. `None` here, on QEMU and on a local libvirtd.
    async fn reverse_forward(&self, local_port: u16) -> Result<Option<ReverseForward>, RunError> {
        let Some(target) = self.opts.backend.remote_target() else {
            return Ok(None);
        };
        let uri = self.opts.backend.uri().unwrap_or_default().to_string();
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
        // Saved now, so that a developer can log in while the run goes on.
        let key_path = self.private.join(SSH_KEY_FILE);
        crate::assets::write_private(&key_path, key.private_openssh.as_bytes())
            .map_err(|e| RunError::Harness(format!("saving the run's SSH key: {e}")))?;
        let (s, dirs, key2, cache) = (
            self.s.clone(),
            (self.opts.dir.clone(), self.private.clone()),
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
                run_dir: &dirs.0,
                private_dir: &dirs.1,
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
        let (start, timeout) = self
            .machine
            .deadline_window(p)
            .unwrap_or_else(|| (self.now(), self.machine.phase(p).timeout));
        self.started + Duration::from_millis(start) + timeout
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
