//! One run between its start and its verdict, as named steps: open the timeline, begin the
//! first phase, make the assets (or take a saved state's), start the VM session, watch it to a
//! verdict, tear it down. A step that cannot go on returns a [`RunError`], which ends the run
//! in the state machine; what the steps made is released on every way out.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::artifacts::RunFiles;
use super::error::RunError;
use super::installer::installer_for;
use super::lifecycle::Lifecycle;
use super::progress::Progress;
use super::session::Session;
use super::RunOptions;
use crate::assets::{self, Assets, AssetsRequest};
use crate::flow::event::{EventLog, Signal, Source};
use crate::flow::machine::{Action, Machine};
use crate::guest::ssh::SshKeyPair;
use crate::hw::Accel;
use crate::result::HostContext;
use crate::scenario::Scenario;

/// What every step works on.
pub struct Run<'a> {
    pub s: &'a Scenario,
    pub opts: &'a RunOptions,
    pub machine: Machine,
    pub log: EventLog,
    pub ui: &'a mut Progress,
    /// Artifact name -> file in the run directory, for result.json.
    pub artifacts: &'a mut BTreeMap<String, String>,
    pub started: Instant,
    pub accel: Accel,
    /// What the machine did and the session has not shown yet.
    pub pending: Vec<Action>,
    /// The host the VM ran on, when not this one (a remote libvirtd).
    pub vm_host: Option<HostContext>,
}

impl Run<'_> {
    /// Milliseconds since the run started: the timeline's clock.
    pub fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Records a signal in the timeline and feeds it to the state machine.
    pub fn handle(&mut self, source: Source, signal: Signal) {
        let actions = match self.log.record(source, signal) {
            Ok(ev) => self.machine.on_event(&ev),
            Err(e) => self.machine.error(0, format!("writing events.jsonl: {e}")),
        };
        self.pending.extend(actions);
    }
}

/// Everything between the start and the verdict. Returns the machine holding the outcome,
/// and the remote host the VM ran on, if any.
pub async fn drive(
    s: &Scenario,
    opts: &RunOptions,
    mut machine: Machine,
    (started, accel): (Instant, Accel),
    artifacts: &mut BTreeMap<String, String>,
    ui: &mut Progress,
) -> (Machine, Option<HostContext>) {
    // Declared first so that it goes last, after the VM, on every way out of here.
    let mut files = RunFiles {
        dir: opts.dir.clone(),
        keep: opts.keep,
        registration: None,
    };
    // Owner-only before anything is in it: QEMU's sockets, the disks and the live ISO get
    // their protection from it (see util::private).
    let access = opts.backend.dir_access();
    if let Err(e) = crate::util::private::set_mode(&opts.dir, access.mode()) {
        let why = format!("chmod {:o} {}: {e}", access.mode(), opts.dir.display());
        RunError::Harness(why).record(&mut machine, 0);
        return (machine, None);
    }
    let log = match EventLog::create(&opts.dir.join("events.jsonl"), started) {
        Ok(l) => l,
        Err(e) => {
            RunError::Harness(format!("creating events.jsonl: {e}")).record(&mut machine, 0);
            return (machine, None);
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
    };
    if let Err(e) = run.until_verdict(&mut files).await {
        let now = run.now();
        e.record(&mut run.machine, now);
    }
    let (machine, vm_host) = (run.machine, run.vm_host);
    drop(files);
    (machine, vm_host)
}

impl Run<'_> {
    async fn until_verdict(&mut self, files: &mut RunFiles) -> Result<(), RunError> {
        let life = Lifecycle::new(&self.opts.state, self.accel)?;
        let now = self.now();
        self.pending = life.begin(&mut self.machine, now);
        let text = format!("run {} started", self.opts.id);
        let _ = self.log.record(Source::Harness, Signal::Note { text });
        let (key, assets) = match life.saved_assets() {
            Some(saved) => saved?,
            None => self.make_assets(&life).await?,
        };
        let mut session = Session::start(self, &life, (&key, &assets), files).await?;
        session.watch(self).await;
        session.tear_down(self, &life, &key, &assets).await;
        Ok(())
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
        let task = tokio::task::spawn_blocking(move || -> Result<Assets, (bool, String)> {
            let (installer, env) = installer_for(&s).map_err(|e| (false, e))?;
            assets::prepare(&AssetsRequest {
                scenario: &s,
                run_dir: &dir,
                installer: &installer,
                installer_env: env,
                ssh_public_key: &key2.public_openssh,
                cache_dir: &cache,
                hold_install,
            })
            .map_err(|e| (e.is_rejection(), e.to_string()))
        });
        let made = self.unless_interrupted(task).await?;
        self.artifacts
            .insert("install-config".into(), "install-config.yaml".into());
        self.artifacts
            .insert("installer-log".into(), "assets/installer.log".into());
        let assets = match made {
            Ok(Ok(a)) => a,
            Ok(Err((true, reason))) => return Err(RunError::Rejected(reason)),
            Ok(Err((false, reason))) => return Err(RunError::Harness(format!("assets: {reason}"))),
            Err(e) => return Err(RunError::Harness(format!("assets: {e}"))),
        };
        self.handle(Source::Harness, Signal::AssetsReady);
        Ok((key, assets))
    }

    /// Waits for blocking work, or for the interrupt. The CLI kills the helpers as it signals
    /// the interrupt, so the work may end first, failed: that is still an interrupted run, not
    /// a failed build.
    async fn unless_interrupted<T>(
        &self,
        task: tokio::task::JoinHandle<T>,
    ) -> Result<Result<T, tokio::task::JoinError>, RunError> {
        let mut interrupt = self.opts.interrupt.clone();
        tokio::pin!(task);
        tokio::select! {
            r = &mut task => {
                if *self.opts.interrupt.borrow() {
                    return Err(RunError::Interrupted);
                }
                Ok(r)
            }
            _ = super::until_interrupted(&mut interrupt) => {
                // The blocking work cannot be cancelled, but what it waits for can be killed
                // (a fixture build, the installer); then it returns promptly.
                crate::util::children::kill_all();
                let _ = tokio::time::timeout(Duration::from_secs(5), &mut task).await;
                Err(RunError::Interrupted)
            }
        }
    }
}
