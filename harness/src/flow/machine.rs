//! The bootstrap-in-place state machine: events in, phases out. It is pure (time comes in with
//! the events and ticks), so every rule is unit-tested with synthetic timelines.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::badness::{AllowList, Findings, Policy as BadnessPolicy};
pub use super::disk_write::{
    installer_progress_percent, AdaptiveDeadline, DiskWriteStats, Projection,
};
use super::event::{ApiCheck, AssistedStep, Event, GuestStatus, Served, Signal, Source};
use super::phase::Phase;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Running,
    Pass,
    Fail,
    Timeout,
    /// Ran in another run: the one whose saved state this run resumed.
    Skipped,
}

impl Status {
    /// As result.json, events.jsonl and the progress lines spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Timeout => "timeout",
            Status::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct PhaseState {
    pub status: Status,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub timeout: Duration,
    pub detail: String,
}

/// The outcome of a run: the system under test passed or failed, or the harness/host failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub failed_phase: Option<Phase>,
    pub reason: String,
}

/// What the runner should do after an event or a tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    PhaseStarted(Phase),
    PhaseEnded(Phase, Status),
    Finished(Outcome),
}

pub struct Config {
    pub timeouts: BTreeMap<Phase, Duration>,
    /// No growth of the install disk's write counter for this long while coreos-installer runs
    /// is a failure.
    pub write_stall: Duration,
    /// bootkube.service restarts that count as a failed bootstrap (`[timeouts]
    /// bootkube-restarts`); `None`: as the real unit, restarts never end it, its deadline does.
    pub bootkube_max_restarts: Option<u32>,
    /// `None`: install-to-disk keeps its nominal timeout.
    pub adaptive_install: Option<AdaptiveDeadline>,
}

/// QEMU reports one reboot as several RESET events within milliseconds; later ones within
/// this window are the same reset.
const RESET_BURST_MS: u64 = 1_000;

/// Why the VM reset, in words, from QMP's RESET `reason` (QEMU's ShutdownCause).
fn reset_cause(data: &serde_json::Value) -> String {
    match data["reason"].as_str() {
        Some("guest-reset") => "guest reboot".into(),
        Some("guest-panic") => "guest panic".into(),
        Some("host-qmp-system-reset") => "the harness (QMP system_reset)".into(),
        Some("watchdog") => "watchdog".into(),
        Some(other) => other.into(),
        // libvirt's reboot event comes of the guest's own reset (the libvirt backend).
        None if data["libvirt_event"] == "reboot" => "guest reboot (libvirt's reboot event)".into(),
        None => "unknown (no reason in the RESET event)".into(),
    }
}

pub struct Machine {
    cfg: Config,
    phases: BTreeMap<Phase, PhaseState>,
    current: Option<Phase>,
    outcome: Option<Outcome>,
    /// Reboots and resets of the VM, each counted once (QEMU reports one reboot as a burst
    /// of RESET events), with their causes in order.
    pub resets: u32,
    pub reset_causes: Vec<String>,
    last_reset_ms: Option<u64>,
    pub disk: DiskWriteStats,
    live_boot_id: Option<String>,
    last_signals: VecDeque<(u64, Source, String)>,
    /// Latest outcome of each API check.
    api: BTreeMap<ApiCheckKey, (bool, String)>,
    /// Evidence that the post-reboot bootkube.service failed, kept for bootstrap-cleanup.
    post_reboot_failure: Option<String>,
    last_bootkube_error: Option<String>,
    /// The most restarts of the live system's bootkube.service seen.
    pub bootkube_restarts: u32,
    last_install_error: Option<String>,
    /// When the console showed systemd (or the kernel) rebooting in order during
    /// install-to-disk: the reboot install-to-disk.sh asks for, with the disks synced.
    orderly_reboot_ms: Option<u64>,
    /// How often the post-reboot script said `Approving csrs ...`: it loops on it while the
    /// node has not registered.
    csr_approvals: u32,
    /// Whether bootstrap-complete waits for etcd's condition, and why.
    pub etcd_rule: Option<(bool, String)>,
    badness: Findings,
    badness_allow: AllowList,
    badness_policy: BadnessPolicy,
    /// The run ends, passed, once this phase passes (a run that saves its state there).
    stop_after: Option<Phase>,
    /// The SSH host key each boot first answered with: within a boot it cannot change, so a
    /// change means another machine answers at the guest's address.
    host_keys: BTreeMap<String, String>,
    /// What the guest fetched from the harness's boot server, in order, with when each
    /// answer ended.
    pub served: Vec<(u64, Served)>,
    /// What the harness's boot server last said it refused under strain, if it was.
    boot_server_strain: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ApiCheckKey(u8);

/// A boot id as one key, however it was written: /proc's has dashes, journald's `_BOOT_ID`
/// none.
pub fn boot_key(id: &str) -> String {
    id.chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase()
}

fn key(c: ApiCheck) -> ApiCheckKey {
    ApiCheckKey(c as u8)
}

impl Machine {
    pub fn new(cfg: Config) -> Machine {
        let phases = Phase::ALL
            .iter()
            .map(|p| {
                (
                    *p,
                    PhaseState {
                        status: Status::Pending,
                        start_ms: None,
                        end_ms: None,
                        timeout: cfg
                            .timeouts
                            .get(p)
                            .copied()
                            .unwrap_or(Duration::from_secs(600)),
                        detail: String::new(),
                    },
                )
            })
            .collect();
        Machine {
            cfg,
            phases,
            current: None,
            outcome: None,
            resets: 0,
            reset_causes: Vec::new(),
            last_reset_ms: None,
            disk: DiskWriteStats::default(),
            live_boot_id: None,
            last_signals: VecDeque::new(),
            api: BTreeMap::new(),
            post_reboot_failure: None,
            last_bootkube_error: None,
            bootkube_restarts: 0,
            last_install_error: None,
            orderly_reboot_ms: None,
            csr_approvals: 0,
            etcd_rule: None,
            badness: Findings::default(),
            badness_allow: AllowList::default(),
            badness_policy: BadnessPolicy::default(),
            stop_after: None,
            host_keys: BTreeMap::new(),
            served: Vec::new(),
            boot_server_strain: None,
        }
    }

    /// Ends the run, passed, once `p` passes, instead of going on to the next phase.
    pub fn stop_after(&mut self, p: Phase) {
        self.stop_after = Some(p);
    }

    /// Starts at `p` instead of the first phase: the run resumes a saved state in which the
    /// phases before `p` already passed (they are `Skipped` here, with `why`).
    pub fn start_at(&mut self, p: Phase, now_ms: u64, why: &str) -> Vec<Action> {
        let mut out = Vec::new();
        for earlier in Phase::ALL.iter().take_while(|e| **e != p) {
            let st = self
                .phases
                .get_mut(earlier)
                .expect("every phase has a state");
            st.status = Status::Skipped;
            st.detail = why.to_string();
        }
        self.begin(p, now_ms, &mut out);
        out
    }

    /// Turns a passed outcome into a harness error: the phases passed, but what the harness
    /// had to do afterwards (save the VM's state) failed.
    pub fn error_after_pass(&mut self, reason: String) {
        if let Some(o) = &mut self.outcome {
            if o.verdict == Verdict::Pass {
                o.verdict = Verdict::Error;
                o.reason = reason;
            }
        }
    }

    pub fn phase(&self, p: Phase) -> &PhaseState {
        &self.phases[&p]
    }

    pub fn current(&self) -> Option<Phase> {
        self.current
    }

    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// The last error line bootkube.service wrote, if any.
    pub fn last_bootkube_error(&self) -> Option<&str> {
        self.last_bootkube_error.as_deref()
    }

    /// The last signals seen, oldest first, as (ms since start, summary).
    pub fn last_signals(&self) -> impl Iterator<Item = &(u64, Source, String)> {
        self.last_signals.iter()
    }

    /// The first phase starts at the run's start.
    pub fn start(&mut self, now_ms: u64) -> Vec<Action> {
        let mut out = Vec::new();
        self.begin(Phase::Assets, now_ms, &mut out);
        out
    }

    fn begin(&mut self, p: Phase, now_ms: u64, out: &mut Vec<Action>) {
        let st = self.phases.get_mut(&p).expect("every phase has a state");
        st.status = Status::Running;
        st.start_ms = Some(now_ms);
        self.current = Some(p);
        out.push(Action::PhaseStarted(p));
    }

    fn end(
        &mut self,
        p: Phase,
        status: Status,
        now_ms: u64,
        detail: String,
        out: &mut Vec<Action>,
    ) {
        let st = self.phases.get_mut(&p).expect("every phase has a state");
        st.status = status;
        st.end_ms = Some(now_ms);
        st.detail = detail;
        out.push(Action::PhaseEnded(p, status));
        if status == Status::Pass && p == Phase::Assets {
            // live-boot begins when the VM starts (VmStarted), not when the assets are ready.
            self.current = None;
        } else if status == Status::Pass && self.stop_after == Some(p) {
            self.finish(Verdict::Pass, None, String::new(), out);
        } else if status == Status::Pass {
            match p.next() {
                Some(n) => self.begin(n, now_ms, out),
                None => self.finish(Verdict::Pass, None, String::new(), out),
            }
        } else {
            self.current = None;
        }
    }

    fn finish(
        &mut self,
        verdict: Verdict,
        phase: Option<Phase>,
        reason: String,
        out: &mut Vec<Action>,
    ) {
        if self.outcome.is_some() {
            return;
        }
        let (verdict, reason) = self.blame_a_strained_boot_server(verdict, phase, reason);
        let o = Outcome {
            verdict,
            failed_phase: phase,
            reason,
        };
        self.outcome = Some(o.clone());
        self.current = None;
        out.push(Action::Finished(o));
    }

    /// A live boot that failed while the harness's own boot server was refusing connections at
    /// its limits cannot be blamed on the system: the guest may have been starved of its files.
    /// It is the host's error, naming the server and what it refused.
    fn blame_a_strained_boot_server(
        &self,
        verdict: Verdict,
        phase: Option<Phase>,
        reason: String,
    ) -> (Verdict, String) {
        match (&self.boot_server_strain, verdict, phase) {
            (Some(strain), Verdict::Fail, Some(Phase::LiveBoot)) => (
                Verdict::Error,
                format!(
                    "{reason} (while the harness's boot server was under strain: {strain}; the guest may have been starved of its files by others' traffic, so this is the host's failure, not the system's)"
                ),
            ),
            _ => (verdict, reason),
        }
    }

    /// Fails the current phase with evidence.
    fn fail(&mut self, now_ms: u64, reason: String, out: &mut Vec<Action>) {
        if let Some(p) = self.current {
            self.end(p, Status::Fail, now_ms, reason.clone(), out);
            self.finish(Verdict::Fail, Some(p), format!("{p}: {reason}"), out);
        }
    }

    /// Fails the current phase with `reason` (evidence the runner found itself, such as the
    /// installer rejecting the install-config).
    pub fn fail_now(&mut self, now_ms: u64, reason: String) -> Vec<Action> {
        let mut out = Vec::new();
        self.fail(now_ms, reason, &mut out);
        out
    }

    /// Ends the run as a harness or host error (not the system under test's fault).
    pub fn error(&mut self, now_ms: u64, reason: String) -> Vec<Action> {
        let mut out = Vec::new();
        let phase = self.current;
        if let Some(p) = phase {
            let st = self.phases.get_mut(&p).expect("state");
            st.status = Status::Fail;
            st.end_ms = Some(now_ms);
            st.detail = reason.clone();
            out.push(Action::PhaseEnded(p, Status::Fail));
        }
        self.finish(Verdict::Error, phase, reason, &mut out);
        out
    }

    fn remember(&mut self, ev: &Event) {
        if matches!(
            ev.signal,
            Signal::DiskWrite { .. } | Signal::Api { ok: false, .. }
        ) {
            // Counters and repeated polls would push out the informative lines.
            if let Some(last) = self.last_signals.back() {
                if last.2 == ev.signal.summary() {
                    return;
                }
            }
        }
        self.last_signals
            .push_back((ev.t_ms, ev.source, ev.signal.summary()));
        while self.last_signals.len() > 12 {
            self.last_signals.pop_front();
        }
    }

    pub fn on_event(&mut self, ev: &Event) -> Vec<Action> {
        let mut out = Vec::new();
        if self.outcome.is_some() {
            return out;
        }
        self.remember(ev);
        let now = ev.t_ms;
        let cur = self.current;
        match &ev.signal {
            Signal::AssetsReady if cur == Some(Phase::Assets) => {
                self.end(
                    Phase::Assets,
                    Status::Pass,
                    now,
                    "assets ready".into(),
                    &mut out,
                );
            }
            Signal::VmStarted { .. } => {
                if self.phases[&Phase::LiveBoot].status == Status::Pending {
                    self.begin(Phase::LiveBoot, now, &mut out);
                }
            }
            Signal::Qmp { name, data } => self.on_qmp(name, data, now, &mut out),
            Signal::VmExited { status } => {
                self.fail(
                    now,
                    format!("the VM exited unexpectedly ({status})"),
                    &mut out,
                );
            }
            Signal::InstrumentLost { instrument, detail } => {
                let reason = format!(
                    "lost the {instrument} while the VM runs ({detail}); the harness cannot judge the run without it"
                );
                out.extend(self.error(now, reason));
            }
            Signal::Console { line } => {
                self.scan_for_badness(("serial console", None), line, now, &mut out);
                self.note_orderly_reboot(line, now);
            }
            Signal::Journal {
                unit,
                message,
                boot_id,
                ..
            } => {
                let source = if unit.is_empty() {
                    "journal".to_string()
                } else {
                    format!("journal of {unit}")
                };
                let unit_name = (!unit.is_empty()).then_some(unit.as_str());
                self.scan_for_badness((&source, unit_name), message, now, &mut out);
                self.on_journal(unit, message, now, &mut out);
                if self.live_boot_id.is_none()
                    && self.phases[&Phase::LiveBoot].status == Status::Pass
                {
                    // The live boot ended on the journal's evidence: its boot is this one.
                    self.live_boot_id = Some(boot_key(boot_id));
                }
            }
            Signal::GuestStatus(s) => match self.host_key_changed(s) {
                Some(reason) => out.extend(self.error(now, reason)),
                None => self.on_guest(s, now, &mut out),
            },
            Signal::DiskWrite { bytes } => self.on_disk_write(*bytes, now, &mut out),
            Signal::Api { check, ok, detail } => {
                self.api.insert(key(*check), (*ok, detail.clone()));
                self.advance_api(now, &mut out);
            }
            Signal::EtcdRule { required, why } => {
                self.etcd_rule = Some((*required, why.clone()));
            }
            Signal::Served(r) => self.served.push((now, r.clone())),
            Signal::BootServerStrained { detail } => {
                self.boot_server_strain = Some(detail.clone());
            }
            Signal::Assisted(step) => self.on_assisted(step, now, &mut out),
            Signal::Ssh { .. }
            | Signal::Note { .. }
            | Signal::AssetsReady
            | Signal::PhaseStarted { .. }
            | Signal::PhaseEnded { .. } => {}
        }
        out
    }

    fn on_qmp(&mut self, name: &str, data: &serde_json::Value, now: u64, out: &mut Vec<Action>) {
        match name {
            "RESET" => {
                if self
                    .last_reset_ms
                    .is_some_and(|t| now.saturating_sub(t) < RESET_BURST_MS)
                {
                    return;
                }
                self.last_reset_ms = Some(now);
                self.resets += 1;
                self.reset_causes.push(reset_cause(data));
                if self.current == Some(Phase::InstallToDisk) {
                    self.reset_during_install(now, out);
                }
                if self.current == Some(Phase::Reboot) {
                    self.end(
                        Phase::Reboot,
                        Status::Pass,
                        now,
                        format!("VM reset ({data})"),
                        out,
                    );
                }
            }
            "GUEST_PANICKED" => {
                self.fail(
                    now,
                    format!("the guest kernel panicked (QMP GUEST_PANICKED {data})"),
                    out,
                );
            }
            "SHUTDOWN" if data["guest"] == true && data["reason"] != "guest-reset" => {
                self.fail(
                    now,
                    format!("the guest shut down instead of rebooting (QMP SHUTDOWN {data})"),
                    out,
                );
            }
            "BLOCK_IO_ERROR" => {
                self.fail(
                    now,
                    format!("a disk I/O error reached the VM (QMP BLOCK_IO_ERROR {data})"),
                    out,
                );
            }
            _ => {}
        }
    }

    fn on_journal(&mut self, unit: &str, message: &str, now: u64, out: &mut Vec<Action>) {
        let cur = self.current;
        let unit = unit.trim_end_matches(".service");
        if unit == "bootkube" && (message.starts_with("Error") || message.contains("error")) {
            self.last_bootkube_error = Some(message.to_string());
        }
        if message.starts_with("Approving csrs") {
            self.csr_approvals += 1;
        }
        if unit == "bootkube" && cur == Some(Phase::LiveBoot) && self.live_boot_id.is_none() {
            // Only the live system runs bootkube before the install: it is up and answering.
            self.catch_up(
                Phase::Bootkube,
                now,
                "the live system's bootkube.service runs (its journal is read over SSH)",
                out,
            );
        }
        let cur = self.current;
        if unit == "bootkube"
            && message.contains("bootkube.service complete")
            && cur == Some(Phase::Bootkube)
        {
            self.end(Phase::Bootkube, Status::Pass, now, message.into(), out);
            return;
        }
        if unit != "install-to-disk" {
            return;
        }
        if message.starts_with("Executing coreos-installer")
            || message.contains("Install complete.")
        {
            self.catch_up(
                Phase::InstallToDisk,
                now,
                "install-to-disk runs coreos-installer, which it does only once bootkube is done",
                out,
            );
        }
        let cur = self.current;
        if message.starts_with("Executing coreos-installer") {
            self.installer_started(now);
        } else if self.installer_output(message, now) {
            if cur == Some(Phase::InstallToDisk) || cur == Some(Phase::Bootkube) {
                // install-to-disk restarts every 5 s and fails the same way forever: the
                // evidence is already here.
                let reason = format!("coreos-installer failed: {message:?} (install-to-disk.service restarts every 5 s with the same error)");
                if cur == Some(Phase::Bootkube) {
                    // The install ran before bootkube was seen complete: still its failure.
                    self.end(
                        Phase::Bootkube,
                        Status::Pass,
                        now,
                        "bootkube done (install-to-disk ran)".into(),
                        out,
                    );
                }
                self.fail(now, reason, out);
            }
        } else if message.contains("Install complete.") && cur == Some(Phase::InstallToDisk) {
            self.install_done(now, message.into(), out);
        }
    }

    /// Pins each boot's SSH host key at its first answer; a later answer of the same boot
    /// with another key is what the harness cannot trust.
    fn host_key_changed(&mut self, s: &GuestStatus) -> Option<String> {
        if s.host_key.is_empty() {
            return None;
        }
        let boot = boot_key(&s.boot_id);
        let pinned = self
            .host_keys
            .entry(boot.clone())
            .or_insert_with(|| s.host_key.clone());
        (*pinned != s.host_key).then(|| {
            let short = |k: &str| k.chars().take(16).collect::<String>();
            format!(
                "the guest's SSH host key changed within boot {boot} (SHA-256 {}... pinned, now {}...): another machine answers at the guest's address, and what it reports cannot be trusted",
                short(pinned),
                short(&s.host_key)
            )
        })
    }

    fn on_guest(&mut self, s: &GuestStatus, now: u64, out: &mut Vec<Action>) {
        match self.current {
            Some(Phase::LiveBoot) if s.live => {
                self.live_boot_id = Some(boot_key(&s.boot_id));
                self.end(
                    Phase::LiveBoot,
                    Status::Pass,
                    now,
                    "SSH works and /run/ostree-live exists".into(),
                    out,
                );
            }
            Some(Phase::LiveBoot) => {
                self.fail(now, "the system that answered SSH is not the live ISO (/run/ostree-live is absent): the disk booted before the install".into(), out);
            }
            Some(Phase::InstallToDisk)
                if s.live && (s.coreos_installer_done || s.install_to_disk_done) =>
            {
                let marker = if s.coreos_installer_done {
                    "/opt/openshift/coreos-installer.done"
                } else {
                    "/opt/openshift/.install-to-disk.done"
                };
                self.install_done(now, marker.into(), out);
            }
            Some(Phase::Bootkube) => {
                if s.live {
                    self.bootkube_restarts = self.bootkube_restarts.max(s.bootkube_restarts);
                }
                if s.bootkube_done {
                    self.end(
                        Phase::Bootkube,
                        Status::Pass,
                        now,
                        "/opt/openshift/.bootkube.done".into(),
                        out,
                    );
                } else if self
                    .cfg
                    .bootkube_max_restarts
                    .is_some_and(|limit| s.bootkube_restarts >= limit)
                {
                    let why = format!(
                        "bootkube.service restarted {} times, the scenario's limit ([timeouts] bootkube-restarts = {}){}",
                        s.bootkube_restarts,
                        self.cfg.bootkube_max_restarts.unwrap_or_default(),
                        self.restart_evidence()
                    );
                    self.fail(now, why, out);
                }
            }
            Some(Phase::DiskBoot) if Some(boot_key(&s.boot_id)) != self.live_boot_id => {
                if s.live {
                    self.fail(now, "the live ISO booted again after the install (/run/ostree-live exists after the reset): the bootstrap would loop; check the boot order".into(), out);
                } else {
                    self.end(
                        Phase::DiskBoot,
                        Status::Pass,
                        now,
                        "SSH works and /run/ostree-live is absent".into(),
                        out,
                    );
                }
            }
            Some(Phase::BootstrapCleanup) => self.judge_cleanup(s, now, out),
            _ => {}
        }
        if !s.live
            && s.bootkube_state.starts_with("failed")
            && self.live_boot_id != Some(boot_key(&s.boot_id))
        {
            self.post_reboot_failure = Some(format!(
                "the post-reboot bootkube.service failed ({}); bootstrap files remain: {}",
                s.bootkube_state,
                s.bootstrap_files.join(", ")
            ));
        }
        if self.current == Some(Phase::BootstrapCleanup) {
            self.judge_cleanup(s, now, out);
        }
    }

    fn judge_cleanup(&mut self, s: &GuestStatus, now: u64, out: &mut Vec<Action>) {
        if self.current != Some(Phase::BootstrapCleanup) || s.live {
            return;
        }
        if let Some(reason) = self.post_reboot_failure.clone() {
            self.fail(now, reason, out);
        } else if s.bootkube_enabled == "disabled" && s.bootstrap_files.is_empty() {
            self.end(
                Phase::BootstrapCleanup,
                Status::Pass,
                now,
                "bootkube.service finished and disabled; bootstrap files gone".into(),
                out,
            );
        }
    }

    /// A line that means trouble fails the current phase at once, quoting it, unless the
    /// scenario's allow-list makes it a warning.
    fn scan_for_badness(
        &mut self,
        (source, unit): (&str, Option<&str>),
        line: &str,
        now: u64,
        out: &mut Vec<Action>,
    ) {
        let failing = self
            .badness
            .observe(
                (&self.badness_allow, self.badness_policy),
                (source, unit),
                line,
                now,
            )
            .filter(|h| h.is_fatal())
            .map(|h| h.describe());
        if let Some(reason) = failing {
            self.fail(now, reason, out);
        }
    }

    /// The scenario's allow-list: matching badness lines become warnings.
    pub fn allow_badness(&mut self, allow: AllowList) {
        self.badness_allow = allow;
    }

    /// How hits are scoped (the profile's or scenario's view of crashes, the accelerator).
    pub fn scope_badness(&mut self, policy: BadnessPolicy) {
        self.badness_policy = policy;
    }

    /// live-boot's time split into fetching the root filesystem from the harness (its GETs
    /// that ended within the phase) and the rest: `(fetch_ms, rest_ms)`, once the phase ended
    /// and when the guest fetched anything.
    pub fn live_boot_split(&self) -> Option<(u64, u64)> {
        let st = self.phase(Phase::LiveBoot);
        let (start, end) = (st.start_ms?, st.end_ms?);
        let fetches: Vec<&Served> = self
            .served
            .iter()
            .filter(|(t, r)| r.method == "GET" && (start..=end).contains(t))
            .map(|(_, r)| r)
            .collect();
        if fetches.is_empty() {
            return None;
        }
        let fetch: u64 = fetches.iter().map(|r| r.ms).sum();
        let fetch = fetch.min(end - start);
        Some((fetch, end - start - fetch))
    }

    /// The part of live-boot's deadline that is not the scenario's timeout: the time the
    /// harness's boot server spent answering the guest's GETs since the phase began (kernel,
    /// initramfs and root filesystem of a network boot). A real rootfs is about 1 GiB, so on a
    /// slow link the transfer alone would eat the timeout meant for a hung boot; a stalled
    /// transfer still times out, as only finished answers count. At most the timeout itself.
    fn fetch_credit_ms(&self, phase: Phase, start: u64) -> u64 {
        if phase != Phase::LiveBoot {
            return 0;
        }
        let sent: u64 = self
            .served
            .iter()
            .filter(|(t, r)| r.method == "GET" && *t >= start)
            .map(|(_, r)| r.ms)
            .sum();
        sent.min(self.phases[&phase].timeout.as_millis() as u64)
    }

    /// Every badness line seen, failing or allowed.
    pub fn badness(&self) -> &Findings {
        &self.badness
    }

    /// Checks deadlines and the write-stall detector.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(cur) = self.current else { return out };
        if self.outcome.is_some() {
            return out;
        }
        if cur == Phase::InstallToDisk && self.disk.start_ms.is_some() {
            let idle = now_ms.saturating_sub(self.disk.last_growth_ms);
            if idle > self.cfg.write_stall.as_millis() as u64 {
                self.fail(
                    now_ms,
                    format!(
                        "no write to the install disk for {} s while coreos-installer runs ({:.0} MiB written)",
                        idle / 1000,
                        self.disk.written() as f64 / 1048576.0
                    ),
                    &mut out,
                );
                return out;
            }
        }
        let st = &self.phases[&cur];
        let Some(start) = st.start_ms else { return out };
        let projection = (cur == Phase::InstallToDisk)
            .then(|| self.install_projection())
            .flatten();
        let plain = start + st.timeout.as_millis() as u64 + self.fetch_credit_ms(cur, start);
        let deadline = projection.map_or(plain, |p| p.deadline_ms);
        if now_ms > deadline {
            self.time_out(cur, (start, deadline, now_ms), projection, None, &mut out);
        }
        out
    }

    /// The harness's blocking work for the current phase ran past the phase's deadline, and
    /// `cause` is what was still running: the phase times out saying so.
    pub fn late(&mut self, now_ms: u64, cause: &str) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(cur) = self.current.filter(|_| self.outcome.is_none()) else {
            return out;
        };
        let st = &self.phases[&cur];
        let start = st.start_ms.unwrap_or(now_ms);
        let deadline = start + st.timeout.as_millis() as u64 + self.fetch_credit_ms(cur, start);
        self.time_out(cur, (start, deadline, now_ms), None, Some(cause), &mut out);
        out
    }

    /// Ends the current phase `cur` as a timeout: the reason says how long it had, how its
    /// deadline was set, what was pending, and the last signal or what was still running.
    fn time_out(
        &mut self,
        cur: Phase,
        (start, deadline, now_ms): (u64, u64, u64),
        projection: Option<Projection>,
        cause: Option<&str>,
        out: &mut Vec<Action>,
    ) {
        let timeout = self.phases[&cur].timeout;
        let last = match cause {
            Some(c) => format!(": {c}"),
            None => self
                .last_signals
                .back()
                .map(|(t, _, s)| {
                    format!(
                        "; last signal {:.0} s ago: {s}",
                        (now_ms.saturating_sub(*t)) as f64 / 1000.0
                    )
                })
                .unwrap_or_default(),
        };
        let evidence = self.pending_evidence(cur, now_ms);
        let within = Duration::from_secs(deadline.saturating_sub(start).div_ceil(1000));
        let adapted = projection
            .map(|p| {
                format!(
                    " (the deadline followed the disk write, projected to end {} s into the phase; the scenario's timeout is {})",
                    p.write_end_ms.saturating_sub(start) / 1000,
                    humantime::format_duration(timeout)
                )
            })
            .unwrap_or_default();
        let credit = self.fetch_credit_ms(cur, start);
        let adapted = if credit > 0 {
            format!(
                "{adapted} (the deadline left out the {:.1} s the harness's boot server spent sending files; the scenario's timeout is {})",
                credit as f64 / 1000.0,
                humantime::format_duration(timeout)
            )
        } else {
            adapted
        };
        let reason = format!(
            "{cur} did not finish within {}{adapted}{evidence}{last}",
            humantime::format_duration(within)
        );
        let st = self.phases.get_mut(&cur).expect("state");
        st.status = Status::Timeout;
        st.end_ms = Some(now_ms);
        st.detail = reason.clone();
        out.push(Action::PhaseEnded(cur, Status::Timeout));
        self.finish(Verdict::Fail, Some(cur), reason, out);
    }

    /// For heartbeats: the current phase and how long it has run.
    pub fn progress(&self, now_ms: u64) -> Option<(Phase, Duration)> {
        let p = self.current?;
        let start = self.phases[&p].start_ms?;
        Some((p, Duration::from_millis(now_ms.saturating_sub(start))))
    }
}

mod api;
mod install;
#[cfg(test)]
mod tests;
