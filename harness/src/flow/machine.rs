//! The bootstrap-in-place state machine: events in, phases out. It is pure (time comes in with
//! the events and ticks), so every rule is unit-tested with synthetic timelines.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::badness::{AllowList, Findings};
use super::event::{ApiCheck, Event, GuestStatus, Signal};
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

#[derive(Debug, Clone)]
pub struct PhaseState {
    pub status: Status,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub timeout: Duration,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    Error,
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

/// The disk write of install-to-disk, from QMP block stats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskWriteStats {
    /// Bytes written when coreos-installer started (the write counter's baseline).
    pub base_bytes: Option<u64>,
    pub last_bytes: u64,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    /// When the written byte count last grew.
    pub last_growth_ms: u64,
    /// How far coreos-installer says it is through the image, in percent, from its own
    /// progress lines ("Read disk 43.0 MiB/86.8 MiB (49%)"), which the real installer prints
    /// into install-to-disk's journal too.
    pub image_percent: Option<f64>,
    /// When `image_percent` last changed: the projection's basis.
    pub image_percent_ms: Option<u64>,
}

impl DiskWriteStats {
    pub fn written(&self) -> u64 {
        self.base_bytes
            .map(|b| self.last_bytes.saturating_sub(b))
            .unwrap_or(0)
    }

    pub fn duration_ms(&self) -> Option<u64> {
        Some(self.end_ms?.saturating_sub(self.start_ms?))
    }

    pub fn mib_per_s(&self) -> Option<f64> {
        let ms = self.duration_ms()?;
        (ms > 0).then(|| self.written() as f64 / 1048576.0 / (ms as f64 / 1000.0))
    }

    /// Throughput so far, while the write runs (or over the whole write once it ended).
    pub fn rate_mib_per_s(&self, now_ms: u64) -> Option<f64> {
        let start = self.start_ms?;
        let ms = self.end_ms.unwrap_or(now_ms).saturating_sub(start);
        (ms >= 1000).then(|| self.written() as f64 / 1048576.0 / (ms as f64 / 1000.0))
    }

    /// One line for heartbeats and the live status: percent of the image, bytes, throughput.
    pub fn describe(&self, now_ms: u64) -> Option<String> {
        self.start_ms?;
        let mut parts = Vec::new();
        if let Some(p) = self.image_percent {
            parts.push(format!("{p:.0}% of the image"));
        }
        parts.push(format!(
            "{:.0} MiB written",
            self.written() as f64 / 1048576.0
        ));
        if let Some(r) = self.rate_mib_per_s(now_ms) {
            parts.push(format!("{r:.1} MiB/s"));
        }
        Some(parts.join(", "))
    }
}

/// How the install-to-disk deadline follows the disk write: once coreos-installer has reported
/// some progress, the end of the write is projected from it, and the deadline becomes that
/// projection stretched by `margin`, plus `slack` for what the installer does after the last
/// byte, kept between `min` and `max` after the phase started. A slow disk (writes of 30
/// minutes and more on real hardware) gets the time it needs, up to `max`; a fast write that
/// then hangs fails long before the nominal timeout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveDeadline {
    pub min: Duration,
    pub max: Duration,
    pub margin: f64,
    pub slack: Duration,
}

impl AdaptiveDeadline {
    /// For a nominal install-to-disk timeout: at least 2 minutes, at most six times the
    /// nominal, the write's projected length times 1.5, plus 2 minutes.
    pub fn around(nominal: Duration) -> AdaptiveDeadline {
        AdaptiveDeadline {
            min: Duration::from_secs(120).min(nominal),
            max: nominal * 6,
            margin: 1.5,
            slack: Duration::from_secs(120),
        }
    }
}

/// The write's projected end and the deadline it gives, in the machine's milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    /// When the last byte of the image should be written.
    pub write_end_ms: u64,
    /// The phase's deadline now.
    pub deadline_ms: u64,
    /// The deadline the scenario's timeout alone gives.
    pub nominal_deadline_ms: u64,
}

/// The percentage in a coreos-installer progress line: `Read disk 43.0 MiB/86.8 MiB (49%)`, as
/// it appears in a journal (on a terminal the line starts with `> ` and ends with `\r`).
pub fn installer_progress_percent(message: &str) -> Option<f64> {
    let m = message.trim().trim_start_matches("> ");
    if !m.starts_with("Read ") || !m.ends_with("%)") {
        return None;
    }
    let open = m.rfind('(')?;
    let p: f64 = m[open + 1..m.len() - 2].trim().parse().ok()?;
    (0.0..=100.0).contains(&p).then_some(p)
}

pub struct Config {
    pub timeouts: BTreeMap<Phase, Duration>,
    /// No growth of the install disk's write counter for this long while coreos-installer runs
    /// is a failure.
    pub write_stall: Duration,
    /// bootkube.service restarts that count as a failed bootstrap, not a transient error.
    pub bootkube_max_restarts: u32,
    /// `None`: install-to-disk keeps its nominal timeout.
    pub adaptive_install: Option<AdaptiveDeadline>,
}

pub struct Machine {
    cfg: Config,
    phases: BTreeMap<Phase, PhaseState>,
    current: Option<Phase>,
    outcome: Option<Outcome>,
    pub resets: u32,
    pub disk: DiskWriteStats,
    live_boot_id: Option<String>,
    last_signals: VecDeque<(u64, String)>,
    /// Latest outcome of each API check.
    api: BTreeMap<ApiCheckKey, (bool, String)>,
    /// Evidence that the post-reboot bootkube.service failed, kept for bootstrap-cleanup.
    post_reboot_failure: Option<String>,
    last_bootkube_error: Option<String>,
    last_install_error: Option<String>,
    badness: Findings,
    badness_allow: AllowList,
    /// The run ends, passed, once this phase passes (a run that saves its state there).
    stop_after: Option<Phase>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ApiCheckKey(u8);

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
            disk: DiskWriteStats::default(),
            live_boot_id: None,
            last_signals: VecDeque::new(),
            api: BTreeMap::new(),
            post_reboot_failure: None,
            last_bootkube_error: None,
            last_install_error: None,
            badness: Findings::default(),
            badness_allow: AllowList::default(),
            stop_after: None,
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

    /// The last signals seen, oldest first, as (ms since start, summary).
    pub fn last_signals(&self) -> impl Iterator<Item = &(u64, String)> {
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
        let o = Outcome {
            verdict,
            failed_phase: phase,
            reason,
        };
        self.outcome = Some(o.clone());
        self.current = None;
        out.push(Action::Finished(o));
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
                if last.1 == ev.signal.summary() {
                    return;
                }
            }
        }
        self.last_signals.push_back((ev.t_ms, ev.signal.summary()));
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
            Signal::Console { line } => {
                self.scan_for_badness("serial console", line, now, &mut out)
            }
            Signal::Journal { unit, message, .. } => {
                let source = if unit.is_empty() {
                    "journal".to_string()
                } else {
                    format!("journal of {unit}")
                };
                self.scan_for_badness(&source, message, now, &mut out);
                self.on_journal(unit, message, now, &mut out)
            }
            Signal::GuestStatus(s) => self.on_guest(s, now, &mut out),
            Signal::DiskWrite { bytes } => self.on_disk_write(*bytes, now),
            Signal::Api { check, ok, detail } => {
                self.api.insert(key(*check), (*ok, detail.clone()));
                self.advance_api(now, &mut out);
            }
            Signal::Ssh { .. } | Signal::Note { .. } | Signal::AssetsReady => {}
        }
        out
    }

    fn on_qmp(&mut self, name: &str, data: &serde_json::Value, now: u64, out: &mut Vec<Action>) {
        match name {
            "RESET" => {
                self.resets += 1;
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
        if message.starts_with("Executing coreos-installer") {
            if cur == Some(Phase::InstallToDisk) {
                self.phases
                    .get_mut(&Phase::InstallToDisk)
                    .expect("state")
                    .start_ms = Some(now);
            }
            if self.disk.start_ms.is_none() {
                self.disk.start_ms = Some(now);
                self.disk.last_growth_ms = now;
                self.disk.base_bytes = Some(self.disk.last_bytes);
            }
        } else if let Some(p) = installer_progress_percent(message) {
            if self.disk.image_percent != Some(p) {
                self.disk.image_percent = Some(p);
                self.disk.image_percent_ms = Some(now);
            }
        } else if message.starts_with("Error:") || message == "install failed" {
            self.last_install_error = Some(message.to_string());
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
            self.disk.end_ms = Some(now);
            self.end(Phase::InstallToDisk, Status::Pass, now, message.into(), out);
        }
    }

    fn on_disk_write(&mut self, bytes: u64, now: u64) {
        if bytes > self.disk.last_bytes {
            self.disk.last_growth_ms = now;
        }
        self.disk.last_bytes = bytes;
    }

    fn on_guest(&mut self, s: &GuestStatus, now: u64, out: &mut Vec<Action>) {
        match self.current {
            Some(Phase::LiveBoot) if s.live => {
                self.live_boot_id = Some(s.boot_id.clone());
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
            Some(Phase::Bootkube) => {
                if s.bootkube_done {
                    self.end(
                        Phase::Bootkube,
                        Status::Pass,
                        now,
                        "/opt/openshift/.bootkube.done".into(),
                        out,
                    );
                } else if s.bootkube_restarts >= self.cfg.bootkube_max_restarts {
                    let last = self
                        .last_bootkube_error
                        .clone()
                        .unwrap_or_else(|| format!("state {}", s.bootkube_state));
                    self.fail(
                        now,
                        format!(
                            "bootkube.service failed and restarted {} times; last error: {last:?}",
                            s.bootkube_restarts
                        ),
                        out,
                    );
                }
            }
            Some(Phase::DiskBoot) if Some(&s.boot_id) != self.live_boot_id.as_ref() => {
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
            && self.live_boot_id.as_ref() != Some(&s.boot_id)
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
    fn scan_for_badness(&mut self, source: &str, line: &str, now: u64, out: &mut Vec<Action>) {
        let failing = self
            .badness
            .observe(&self.badness_allow, source, line, now)
            .filter(|h| h.allowed_by.is_none())
            .map(|h| h.describe());
        if let Some(reason) = failing {
            self.fail(now, reason, out);
        }
    }

    /// The scenario's allow-list: matching badness lines become warnings.
    pub fn allow_badness(&mut self, allow: AllowList) {
        self.badness_allow = allow;
    }

    /// Every badness line seen, failing or allowed.
    pub fn badness(&self) -> &Findings {
        &self.badness
    }

    fn api_ok(&self, c: ApiCheck) -> bool {
        self.api.get(&key(c)).map(|(ok, _)| *ok).unwrap_or(false)
    }

    fn advance_api(&mut self, now: u64, out: &mut Vec<Action>) {
        // Several phases may complete on the same evidence; walk forward while they do.
        loop {
            let Some(cur) = self.current else { return };
            let done = match cur {
                Phase::ApiReady => self.api_ok(ApiCheck::Readyz),
                Phase::BootstrapComplete => {
                    self.api_ok(ApiCheck::BootstrapConfigmap)
                        && self.api_ok(ApiCheck::EtcdBootstrapMemberRemoved)
                }
                Phase::NodeReady => self.api_ok(ApiCheck::NodeReady),
                Phase::ClusterReady => {
                    let settled = self.api_ok(ApiCheck::ClusterVersion)
                        && self.api_ok(ApiCheck::ClusterOperators);
                    if settled {
                        // Every operator has settled, so what the cluster reports now is what
                        // it was installed with: a difference will not go away by waiting.
                        if let Some((false, detail)) =
                            self.api.get(&key(ApiCheck::InstallConfigApplied)).cloned()
                        {
                            self.fail(now, detail, out);
                            return;
                        }
                    }
                    settled && self.api_ok(ApiCheck::InstallConfigApplied)
                }
                _ => false,
            };
            if !done {
                return;
            }
            self.end(cur, Status::Pass, now, "condition met".into(), out);
            if cur == Phase::ClusterReady {
                if let Some(reason) = self.post_reboot_failure.clone() {
                    self.fail(now, reason, out);
                }
                return;
            }
        }
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
        let deadline = projection.map_or(start + st.timeout.as_millis() as u64, |p| p.deadline_ms);
        if now_ms > deadline {
            let last = self
                .last_signals
                .back()
                .map(|(t, s)| {
                    format!(
                        "; last signal {:.0} s ago: {s}",
                        (now_ms.saturating_sub(*t)) as f64 / 1000.0
                    )
                })
                .unwrap_or_default();
            let evidence = self.pending_evidence(cur);
            let within = Duration::from_secs(deadline.saturating_sub(start).div_ceil(1000));
            let adapted = projection
                .map(|p| {
                    format!(
                        " (the deadline followed the disk write, projected to end {} s into the phase; the scenario's timeout is {})",
                        p.write_end_ms.saturating_sub(start) / 1000,
                        humantime::format_duration(st.timeout)
                    )
                })
                .unwrap_or_default();
            let reason = format!(
                "{cur} did not finish within {}{adapted}{evidence}{last}",
                humantime::format_duration(within)
            );
            let st = self.phases.get_mut(&cur).expect("state");
            st.status = Status::Timeout;
            st.end_ms = Some(now_ms);
            st.detail = reason.clone();
            out.push(Action::PhaseEnded(cur, Status::Timeout));
            self.finish(Verdict::Fail, Some(cur), reason, &mut out);
        }
        out
    }

    /// Where the disk write is heading, once coreos-installer has reported enough progress
    /// (2 %, 5 s into the write) for a projection: its end, and the install-to-disk deadline
    /// that follows from it (`Config::adaptive_install`).
    pub fn install_projection(&self) -> Option<Projection> {
        let bounds = self.cfg.adaptive_install?;
        let st = &self.phases[&Phase::InstallToDisk];
        let phase_start = st.start_ms?;
        let write_start = self.disk.start_ms?;
        let percent = self.disk.image_percent?;
        let at = self.disk.image_percent_ms?;
        let so_far = at.saturating_sub(write_start);
        if percent < 2.0 || so_far < 5_000 {
            return None;
        }
        let write_ms = (so_far as f64 * 100.0 / percent) as u64;
        let write_end_ms = write_start + write_ms;
        let slack = bounds.slack.as_millis() as u64;
        let mut wanted =
            write_end_ms + (write_ms as f64 * (bounds.margin - 1.0).max(0.0)) as u64 + slack;
        // coreos-installer's percent counts the image it has read; a slow (or throttled) disk
        // is still taking what the guest's page cache holds after 100 %. While the write
        // counter grows, the deadline stays at least `slack` past its last growth. Once the
        // write ended, this is the deadline that was in force at its end (what result.json
        // reports): a write that outlived its projection was allowed to by this rule.
        wanted = wanted.max(self.disk.last_growth_ms + slack);
        let deadline_ms = wanted.clamp(
            phase_start + bounds.min.as_millis() as u64,
            phase_start + bounds.max.as_millis() as u64,
        );
        Some(Projection {
            write_end_ms,
            deadline_ms,
            nominal_deadline_ms: phase_start + st.timeout.as_millis() as u64,
        })
    }

    /// What the phase is still waiting for, from the latest API answers.
    fn pending_evidence(&self, p: Phase) -> String {
        let checks: &[ApiCheck] = match p {
            Phase::ApiReady => &[ApiCheck::Readyz],
            Phase::BootstrapComplete => &[
                ApiCheck::BootstrapConfigmap,
                ApiCheck::EtcdBootstrapMemberRemoved,
            ],
            Phase::NodeReady => &[ApiCheck::NodeReady],
            Phase::ClusterReady => &[
                ApiCheck::ClusterVersion,
                ApiCheck::ClusterOperators,
                ApiCheck::InstallConfigApplied,
            ],
            Phase::InstallToDisk => {
                return self
                    .last_install_error
                    .as_ref()
                    .map(|e| format!("; last coreos-installer error: {e:?}"))
                    .unwrap_or_default()
            }
            _ => return String::new(),
        };
        let parts: Vec<String> = checks
            .iter()
            .filter_map(|c| self.api.get(&key(*c)))
            .filter(|(ok, _)| !ok)
            .map(|(_, d)| d.clone())
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("; {}", parts.join("; "))
        }
    }

    /// For heartbeats: the current phase and how long it has run.
    pub fn progress(&self, now_ms: u64) -> Option<(Phase, Duration)> {
        let p = self.current?;
        let start = self.phases[&p].start_ms?;
        Some((p, Duration::from_millis(now_ms.saturating_sub(start))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::event::Source;

    fn machine() -> Machine {
        let timeouts = Phase::ALL
            .iter()
            .map(|p| (*p, Duration::from_secs(100)))
            .collect();
        let mut m = Machine::new(Config {
            timeouts,
            write_stall: Duration::from_secs(20),
            bootkube_max_restarts: 3,
            adaptive_install: None,
        });
        m.start(0);
        m
    }

    fn ev(t_ms: u64, signal: Signal) -> Event {
        Event {
            time: String::new(),
            t_ms,
            source: Source::Harness,
            signal,
        }
    }

    fn journal(unit: &str, msg: &str) -> Signal {
        Signal::Journal {
            unit: unit.into(),
            identifier: String::new(),
            message: msg.into(),
            guest_usec: 0,
            boot_id: String::new(),
        }
    }

    fn guest(boot: &str, live: bool) -> GuestStatus {
        GuestStatus {
            boot_id: boot.into(),
            live,
            bootkube_enabled: "enabled".into(),
            bootstrap_files: vec!["/opt/openshift".into()],
            ..Default::default()
        }
    }

    fn api(check: ApiCheck, ok: bool, detail: &str) -> Signal {
        Signal::Api {
            check,
            ok,
            detail: detail.into(),
        }
    }

    fn feed(m: &mut Machine, events: Vec<(u64, Signal)>) -> Vec<Action> {
        events
            .into_iter()
            .flat_map(|(t, s)| m.on_event(&ev(t, s)))
            .collect()
    }

    #[test]
    fn a_saving_run_passes_once_bootkube_is_done_and_goes_no_further() {
        let mut m = machine();
        m.stop_after(Phase::Bootkube);
        feed(
            &mut m,
            vec![
                (1000, Signal::AssetsReady),
                (1100, Signal::VmStarted { pid: 1 }),
                (20_000, Signal::GuestStatus(guest("live", true))),
                (
                    30_000,
                    journal("bootkube.service", "bootkube.service complete"),
                ),
            ],
        );
        assert_eq!(m.current(), None);
        let o = m.outcome().expect("finished");
        assert_eq!(o.verdict, Verdict::Pass);
        assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
        assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pending);
        // The harness then fails to save: a harness error, the phases as they were.
        m.error_after_pass("saving the VM state: disk full".into());
        let o = m.outcome().unwrap();
        assert_eq!(o.verdict, Verdict::Error);
        assert_eq!(o.reason, "saving the VM state: disk full");
        assert_eq!(m.phase(Phase::Bootkube).status, Status::Pass);
    }

    #[test]
    fn error_after_pass_leaves_a_failure_alone() {
        let mut m = machine();
        m.fail_now(10, "the installer said no".into());
        m.error_after_pass("saving".into());
        assert_eq!(m.outcome().unwrap().verdict, Verdict::Fail);
    }

    #[test]
    fn a_resumed_run_starts_at_install_to_disk_and_ends_after_it() {
        let timeouts = Phase::ALL
            .iter()
            .map(|p| (*p, Duration::from_secs(100)))
            .collect();
        let mut m = Machine::new(Config {
            timeouts,
            write_stall: Duration::from_secs(20),
            bootkube_max_restarts: 3,
            adaptive_install: None,
        });
        m.stop_after(Phase::InstallToDisk);
        let started = m.start_at(Phase::InstallToDisk, 0, "ran in the run that saved /s");
        assert_eq!(started, [Action::PhaseStarted(Phase::InstallToDisk)]);
        for p in [Phase::Assets, Phase::LiveBoot, Phase::Bootkube] {
            assert_eq!(m.phase(p).status, Status::Skipped, "{p}");
            assert_eq!(m.phase(p).detail, "ran in the run that saved /s");
        }
        // The VM starting does not begin live-boot again; the guest answering changes nothing.
        let actions = feed(
            &mut m,
            vec![
                (1000, Signal::VmStarted { pid: 1 }),
                (2000, Signal::GuestStatus(guest("live", true))),
                (3000, Signal::DiskWrite { bytes: 0 }),
            ],
        );
        assert!(actions.is_empty(), "{actions:?}");
        assert_eq!(m.current(), Some(Phase::InstallToDisk));
        let actions = feed(
            &mut m,
            vec![
                (
                    9000,
                    journal(
                        "install-to-disk.service",
                        "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda",
                    ),
                ),
                (20_000, Signal::DiskWrite { bytes: 300 << 20 }),
                (35_000, journal("install-to-disk.service", "Install complete.")),
            ],
        );
        assert!(actions.contains(&Action::Finished(Outcome {
            verdict: Verdict::Pass,
            failed_phase: None,
            reason: String::new(),
        })));
        // Measured from coreos-installer's start, as in a full run.
        assert_eq!(m.phase(Phase::InstallToDisk).start_ms, Some(9000));
        assert_eq!(m.disk.duration_ms(), Some(26_000));
        assert_eq!(m.disk.written(), 300 << 20);
        assert_eq!(m.phase(Phase::Reboot).status, Status::Pending);
    }

    /// A run up to the end of bootkube.
    fn through_bootkube(m: &mut Machine) {
        feed(
            m,
            vec![
                (1000, Signal::AssetsReady),
                (1100, Signal::VmStarted { pid: 1 }),
                (20_000, Signal::GuestStatus(guest("live", true))),
                (
                    25_000,
                    journal("bootkube.service", "Rendering MCO manifests..."),
                ),
                (
                    30_000,
                    journal("bootkube.service", "bootkube.service complete"),
                ),
            ],
        );
        assert_eq!(m.current(), Some(Phase::InstallToDisk));
    }

    #[test]
    fn coreos_installer_progress_lines_give_the_percent_of_the_image() {
        assert_eq!(
            installer_progress_percent("Read disk 43.0 MiB/86.8 MiB (49%)"),
            Some(49.0)
        );
        assert_eq!(
            installer_progress_percent("> Read disk 3.4 GiB/3.5 GiB (97%)\r"),
            Some(97.0)
        );
        assert_eq!(
            installer_progress_percent("Read disk 86.8 MiB/86.8 MiB (100%)"),
            Some(100.0)
        );
        for not_progress in [
            "Copying image from /run/media/iso/images/metal-512.raw.zst",
            "Read disk 1 MiB (140%)",
            "Reading signature from x (5%)",
            "Read disk (abc%)",
        ] {
            assert_eq!(
                installer_progress_percent(not_progress),
                None,
                "{not_progress}"
            );
        }
    }

    #[test]
    fn the_disk_write_is_described_while_it_runs() {
        let mut m = machine();
        through_bootkube(&mut m);
        assert_eq!(
            m.disk.describe(31_000),
            None,
            "nothing before the write starts"
        );
        feed(&mut m, vec![
            (31_000, Signal::DiskWrite { bytes: 5 * 1048576 }),
            (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
            (33_000, journal("install-to-disk.service", "Read disk 12.0 MiB/86.8 MiB (13%)")),
            (36_000, Signal::DiskWrite { bytes: 5 * 1048576 + 80 * 1048576 }),
            (36_500, journal("install-to-disk.service", "Read disk 43.0 MiB/86.8 MiB (49%)")),
        ]);
        assert_eq!(m.disk.image_percent, Some(49.0));
        assert_eq!(
            m.disk.describe(37_000).unwrap(),
            "49% of the image, 80 MiB written, 16.0 MiB/s"
        );
    }

    /// A machine whose install-to-disk deadline follows the write (nominal timeout 100 s).
    fn adaptive_machine() -> Machine {
        let mut m = machine();
        m.cfg.adaptive_install = Some(AdaptiveDeadline::around(Duration::from_secs(100)));
        m
    }

    fn progress_line(t: u64, percent: u32) -> (u64, Signal) {
        (
            t,
            journal(
                "install-to-disk.service",
                &format!("Read disk {percent}.0 MiB/100.0 MiB ({percent}%)"),
            ),
        )
    }

    fn installer_started(m: &mut Machine) {
        through_bootkube(m);
        feed(m, vec![
            (31_000, Signal::DiskWrite { bytes: 0 }),
            (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
        ]);
    }

    #[test]
    fn a_slow_write_gets_past_the_nominal_timeout_up_to_six_times_it() {
        let mut m = adaptive_machine();
        installer_started(&mut m);
        // 5 % in 50 s: a 1000 s write, far past the nominal 100 s.
        feed(&mut m, vec![progress_line(82_000, 5)]);
        let p = m.install_projection().expect("a projection");
        assert_eq!(p.write_end_ms, 32_000 + 1_000_000);
        assert_eq!(p.nominal_deadline_ms, 132_000);
        assert_eq!(p.deadline_ms, 32_000 + 600_000, "capped at 6 x 100 s");
        for t in (90_000..632_000).step_by(10_000) {
            // The write goes on: the stall detector stays quiet.
            feed(&mut m, vec![(t, Signal::DiskWrite { bytes: t * 100 })]);
            assert!(m.tick(t).is_empty(), "no timeout at {t} ms");
        }
        let actions = m.tick(632_001);
        assert!(
            actions.contains(&Action::PhaseEnded(Phase::InstallToDisk, Status::Timeout)),
            "{actions:?}"
        );
        let reason = &m.outcome().unwrap().reason;
        assert!(reason.contains("within 10m"), "{reason}");
        assert!(reason.contains("followed the disk write"), "{reason}");
        assert!(
            reason.contains("the scenario's timeout is 1m 40s"),
            "{reason}"
        );
    }

    #[test]
    fn a_fast_write_that_then_hangs_fails_before_the_nominal_timeout() {
        let mut m = adaptive_machine();
        m.cfg.adaptive_install = Some(AdaptiveDeadline::around(Duration::from_secs(1000)));
        m.phases.get_mut(&Phase::InstallToDisk).unwrap().timeout = Duration::from_secs(1000);
        installer_started(&mut m);
        // Done in 10 s: deadline = 10 s x 1.5 + 120 s = 135 s after the write started.
        feed(
            &mut m,
            vec![
                progress_line(37_000, 50),
                progress_line(42_000, 100),
                (42_000, Signal::DiskWrite { bytes: 100 << 20 }),
            ],
        );
        let p = m.install_projection().unwrap();
        assert_eq!(p.write_end_ms, 42_000);
        assert_eq!(p.deadline_ms, 32_000 + 135_000);
        // The write counter stays put after the write: only the deadline can end this.
        m.cfg.write_stall = Duration::from_secs(3600);
        assert!(m.tick(167_000).is_empty());
        let actions = m.tick(167_001);
        assert!(
            actions.contains(&Action::PhaseEnded(Phase::InstallToDisk, Status::Timeout)),
            "{actions:?}"
        );
        assert!(m.outcome().unwrap().reason.contains("within 2m 15s"));
    }

    /// What a throttled disk looked like: coreos-installer read all of the image in 10 s (100 %
    /// at 42 s), the disk went on taking it until 390 s, without a timeout meanwhile.
    fn page_cache_write() -> Machine {
        let mut m = adaptive_machine();
        installer_started(&mut m);
        feed(
            &mut m,
            vec![progress_line(37_000, 50), progress_line(42_000, 100)],
        );
        for t in (50_000..400_000).step_by(10_000) {
            feed(&mut m, vec![(t, Signal::DiskWrite { bytes: t * 1000 })]);
            assert!(
                m.tick(t).is_empty(),
                "no timeout at {t} ms while the disk writes"
            );
        }
        m
    }

    #[test]
    fn a_disk_still_taking_the_page_cache_after_the_image_is_read_keeps_its_deadline() {
        let mut m = page_cache_write();
        // Then the writes stop: the deadline is 2 minutes after the last one (the stall
        // detector, which would fire first, is set aside here).
        m.cfg.write_stall = Duration::from_secs(3600);
        let p = m.install_projection().unwrap();
        assert_eq!(p.deadline_ms, 390_000 + 120_000);
        assert!(m.tick(510_000).is_empty());
        assert!(!m.tick(510_001).is_empty());
    }

    #[test]
    fn the_reported_deadline_of_a_write_that_outlived_its_projection_is_the_one_in_force() {
        // A write that ends long after coreos-installer's 100 %: what result.json reports is
        // the deadline at the end, past the end, not the projection from the percent alone.
        let mut m = page_cache_write();
        feed(
            &mut m,
            vec![(
                400_500,
                journal("install-to-disk.service", "Install complete."),
            )],
        );
        assert_eq!(m.phase(Phase::InstallToDisk).status, Status::Pass);
        let p = m.install_projection().unwrap();
        assert_eq!(p.deadline_ms, 390_000 + 120_000);
        assert!(p.deadline_ms > 400_500 && p.deadline_ms > p.nominal_deadline_ms);
    }

    #[test]
    fn without_progress_lines_or_with_too_little_the_nominal_timeout_holds() {
        let mut m = adaptive_machine();
        installer_started(&mut m);
        assert_eq!(m.install_projection(), None, "no progress yet");
        // 1 % is too little to project from, and so is progress within 5 s of the start.
        feed(&mut m, vec![progress_line(60_000, 1)]);
        assert_eq!(m.install_projection(), None);
        let mut early = adaptive_machine();
        installer_started(&mut early);
        feed(&mut early, vec![progress_line(35_000, 40)]);
        assert_eq!(early.install_projection(), None);
        // Without the option, never.
        let mut fixed = machine();
        installer_started(&mut fixed);
        feed(&mut fixed, vec![progress_line(82_000, 5)]);
        assert_eq!(fixed.install_projection(), None);
        assert!(!fixed.tick(132_001).is_empty(), "the nominal 100 s");
    }

    #[test]
    fn a_clean_run_passes_every_phase_in_order() {
        let mut m = machine();
        through_bootkube(&mut m);
        let mut done = guest("disk", false);
        feed(&mut m, vec![
            (31_000, Signal::DiskWrite { bytes: 1000 }),
            (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vda")),
            (33_000, Signal::DiskWrite { bytes: 1000 + 100 * 1048576 }),
            (36_000, Signal::DiskWrite { bytes: 1000 + 300 * 1048576 }),
            (37_000, journal("install-to-disk.service", "Install complete.")),
            (38_000, Signal::Qmp { name: "RESET".into(), data: serde_json::json!({"guest": true}) }),
            // The old live system may still answer before the reset takes effect: ignored.
            (38_100, Signal::GuestStatus(guest("live", true))),
            (55_000, Signal::GuestStatus(guest("disk", false))),
            (57_000, api(ApiCheck::Readyz, true, "ok")),
            (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
            (58_500, api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True")),
            (59_000, api(ApiCheck::NodeReady, true, "Ready")),
            (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
            (60_500, api(ApiCheck::InstallConfigApplied, true, "install-config applied")),
            (90_000, api(ApiCheck::ClusterOperators, true, "settled")),
        ]);
        assert_eq!(m.current(), Some(Phase::BootstrapCleanup));
        done.bootkube_enabled = "disabled".into();
        done.bootstrap_files.clear();
        let actions = feed(&mut m, vec![(95_000, Signal::GuestStatus(done))]);
        assert!(matches!(
            actions.last(),
            Some(Action::Finished(Outcome {
                verdict: Verdict::Pass,
                ..
            }))
        ));
        for p in Phase::ALL {
            assert_eq!(m.phase(p).status, Status::Pass, "{p}");
        }
        assert_eq!(m.phase(Phase::InstallToDisk).start_ms, Some(32_000));
        assert_eq!(m.resets, 1);
        assert_eq!(m.disk.written(), 300 * 1048576);
        assert_eq!(m.disk.duration_ms(), Some(5000));
        assert!((m.disk.mib_per_s().unwrap() - 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_coreos_installer_error_fails_install_to_disk_at_once() {
        let mut m = machine();
        through_bootkube(&mut m);
        let a = feed(&mut m, vec![
            (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i /opt/openshift/master.ign /dev/vdz")),
            (32_500, journal("install-to-disk.service", "Error: opening /dev/vdz")),
        ]);
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
        assert!(o.reason.contains("Error: opening /dev/vdz"), "{}", o.reason);
        assert_eq!(m.phase(Phase::Reboot).status, Status::Pending);
    }

    #[test]
    fn the_live_iso_booting_again_fails_disk_boot() {
        let mut m = machine();
        through_bootkube(&mut m);
        feed(
            &mut m,
            vec![
                (
                    32_000,
                    journal("install-to-disk.service", "Install complete."),
                ),
                (
                    38_000,
                    Signal::Qmp {
                        name: "RESET".into(),
                        data: serde_json::json!({}),
                    },
                ),
            ],
        );
        let a = feed(
            &mut m,
            vec![(60_000, Signal::GuestStatus(guest("live-again", true)))],
        );
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.failed_phase, Some(Phase::DiskBoot));
        assert!(o.reason.contains("live ISO booted again"), "{}", o.reason);
    }

    #[test]
    fn a_panic_fails_the_current_phase() {
        let mut m = machine();
        through_bootkube(&mut m);
        let a = feed(
            &mut m,
            vec![(
                31_000,
                Signal::Qmp {
                    name: "GUEST_PANICKED".into(),
                    data: serde_json::json!({"action": "pause"}),
                },
            )],
        );
        assert!(matches!(
            a.last(),
            Some(Action::Finished(Outcome {
                failed_phase: Some(Phase::InstallToDisk),
                ..
            }))
        ));
        let mut m = machine();
        through_bootkube(&mut m);
        let a = feed(
            &mut m,
            vec![(
                31_000,
                Signal::Console {
                    line: "[ 3.1] Kernel panic - not syncing: sysrq triggered crash".into(),
                },
            )],
        );
        let Some(Action::Finished(o)) = a.last() else {
            panic!()
        };
        assert!(o.reason.contains("sysrq triggered crash"), "{}", o.reason);
    }

    #[test]
    fn a_timeout_quotes_the_last_signal_and_what_was_missing() {
        let mut m = machine();
        through_bootkube(&mut m);
        feed(
            &mut m,
            through_reboot_signals()
                .into_iter()
                .chain(vec![(
                    60_000,
                    api(ApiCheck::Readyz, false, "readyz answered 503"),
                )])
                .collect(),
        );
        assert!(m.tick(100_000).is_empty());
        let a = m.tick(155_001);
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.failed_phase, Some(Phase::ApiReady));
        assert_eq!(m.phase(Phase::ApiReady).status, Status::Timeout);
        assert!(o.reason.contains("within 1m 40s"), "{}", o.reason);
        assert!(o.reason.contains("readyz answered 503"), "{}", o.reason);
        assert!(o.reason.contains("s ago"), "{}", o.reason);
    }

    #[test]
    fn a_write_stall_is_a_failure() {
        let mut m = machine();
        through_bootkube(&mut m);
        feed(&mut m, vec![
            (32_000, journal("install-to-disk.service", "Executing coreos-installer with the following options: install -i x /dev/vda")),
            (33_000, Signal::DiskWrite { bytes: 5 << 20 }),
            (40_000, Signal::DiskWrite { bytes: 5 << 20 }),
        ]);
        assert!(m.tick(50_000).is_empty());
        let a = m.tick(53_500);
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert!(
            o.reason.contains("no write to the install disk for 20 s"),
            "{}",
            o.reason
        );
    }

    #[test]
    fn bootkube_failing_repeatedly_fails_fast_with_its_error() {
        let mut m = machine();
        feed(&mut m, vec![
            (1000, Signal::AssetsReady),
            (1100, Signal::VmStarted { pid: 1 }),
            (20_000, Signal::GuestStatus(guest("live", true))),
            (21_000, journal("bootkube.service", "Error: error while checking pod status: timed out waiting for the condition")),
        ]);
        let mut s = guest("live", true);
        s.bootkube_restarts = 3;
        s.bootkube_state = "activating/exit-code".into();
        let a = feed(&mut m, vec![(40_000, Signal::GuestStatus(s))]);
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.failed_phase, Some(Phase::Bootkube));
        assert!(
            o.reason.contains("timed out waiting for the condition"),
            "{}",
            o.reason
        );
    }

    #[test]
    fn a_failed_post_reboot_unit_fails_bootstrap_cleanup() {
        let mut m = machine();
        through_bootkube(&mut m);
        let mut failed = guest("disk", false);
        failed.bootkube_state = "failed/exit-code".into();
        let a = feed(
            &mut m,
            through_reboot_signals()
                .into_iter()
                .chain(vec![
                    (56_000, Signal::GuestStatus(failed)),
                    (57_000, api(ApiCheck::Readyz, true, "ok")),
                    (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
                    (
                        58_500,
                        api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True"),
                    ),
                    (59_000, api(ApiCheck::NodeReady, true, "Ready")),
                    (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
                    (60_500, api(ApiCheck::InstallConfigApplied, true, "applied")),
                    (61_000, api(ApiCheck::ClusterOperators, true, "settled")),
                ])
                .collect(),
        );
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.failed_phase, Some(Phase::BootstrapCleanup));
        assert!(
            o.reason.contains("post-reboot bootkube.service failed"),
            "{}",
            o.reason
        );
    }

    /// The install finishes, the VM resets, the installed system answers.
    fn through_reboot_signals() -> Vec<(u64, Signal)> {
        vec![
            (
                32_000,
                journal("install-to-disk.service", "Install complete."),
            ),
            (
                38_000,
                Signal::Qmp {
                    name: "RESET".into(),
                    data: serde_json::json!({}),
                },
            ),
            (55_000, Signal::GuestStatus(guest("disk", false))),
        ]
    }

    /// Up to cluster-ready with every check but the install-config one passing.
    fn to_a_settled_cluster(m: &mut Machine) {
        through_bootkube(m);
        feed(
            m,
            through_reboot_signals()
                .into_iter()
                .chain(vec![
                    (57_000, api(ApiCheck::Readyz, true, "ok")),
                    (58_000, api(ApiCheck::BootstrapConfigmap, true, "complete")),
                    (
                        58_500,
                        api(ApiCheck::EtcdBootstrapMemberRemoved, true, "True"),
                    ),
                    (59_000, api(ApiCheck::NodeReady, true, "Ready")),
                ])
                .collect(),
        );
        assert_eq!(m.current(), Some(Phase::ClusterReady));
    }

    #[test]
    fn cluster_ready_waits_for_the_install_config_check() {
        let mut m = machine();
        to_a_settled_cluster(&mut m);
        feed(
            &mut m,
            vec![
                (60_000, api(ApiCheck::ClusterVersion, true, "Available")),
                (61_000, api(ApiCheck::ClusterOperators, true, "settled")),
            ],
        );
        assert_eq!(
            m.current(),
            Some(Phase::ClusterReady),
            "no config answer yet"
        );
        feed(
            &mut m,
            vec![(62_000, api(ApiCheck::InstallConfigApplied, true, "applied"))],
        );
        assert_eq!(m.current(), Some(Phase::BootstrapCleanup));
    }

    #[test]
    fn a_config_difference_waits_while_operators_progress_and_fails_once_they_settle() {
        let mut m = machine();
        to_a_settled_cluster(&mut m);
        let differs = "the cluster does not report the install-config: networks.config.openshift.io/cluster status.networkType: asked \"OVNKubernetes\", cluster reports \"OpenShiftSDN\"";
        feed(
            &mut m,
            vec![
                (60_000, api(ApiCheck::InstallConfigApplied, false, differs)),
                (61_000, api(ApiCheck::ClusterVersion, true, "Available")),
            ],
        );
        assert!(
            m.outcome().is_none(),
            "operators are still progressing: keep waiting"
        );
        let a = feed(
            &mut m,
            vec![(62_000, api(ApiCheck::ClusterOperators, true, "settled"))],
        );
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.verdict, Verdict::Fail);
        assert_eq!(o.failed_phase, Some(Phase::ClusterReady));
        assert_eq!(o.reason, format!("cluster-ready: {differs}"));
    }

    #[test]
    fn a_cluster_ready_timeout_quotes_the_config_difference() {
        let mut m = machine();
        to_a_settled_cluster(&mut m);
        feed(
            &mut m,
            vec![
                (
                    60_000,
                    api(
                        ApiCheck::ClusterVersion,
                        false,
                        "ClusterVersion 4.17.0: Available=False",
                    ),
                ),
                (
                    60_500,
                    api(
                        ApiCheck::InstallConfigApplied,
                        false,
                        "the cluster does not report the install-config: fips",
                    ),
                ),
            ],
        );
        let a = m.tick(59_000 + 3_600_000);
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert!(
            o.reason
                .contains("Available=False; the cluster does not report the install-config: fips"),
            "{}",
            o.reason
        );
    }

    #[test]
    fn badness_in_a_journal_fails_the_current_phase_quoting_the_line() {
        let mut m = machine();
        through_bootkube(&mut m);
        let a = feed(
            &mut m,
            vec![(
                31_500,
                journal(
                    "crio.service",
                    "crio.service: A process of this unit has been killed by the OOM killer.",
                ),
            )],
        );
        let Some(Action::Finished(o)) = a.last() else {
            panic!("{a:?}")
        };
        assert_eq!(o.verdict, Verdict::Fail);
        assert_eq!(o.failed_phase, Some(Phase::InstallToDisk));
        assert_eq!(
            o.reason,
            "install-to-disk: OOM kill in the journal of crio.service at 31.5 s: \"crio.service: A process of this unit has been killed by the OOM killer.\""
        );
        assert_eq!(m.badness().hits.len(), 1);
    }

    #[test]
    fn allowed_badness_is_kept_as_a_warning_and_the_run_goes_on() {
        let mut m = machine();
        m.allow_badness(AllowList::new(&[r"Killed process \d+ \(tail\)".into()]).unwrap());
        through_bootkube(&mut m);
        let a = feed(&mut m, vec![(
            31_500,
            Signal::Console { line: "[ 40.2] Memory cgroup out of memory: Killed process 812 (tail) total-vm:40000kB".into() },
        )]);
        assert!(a.is_empty(), "{a:?}");
        assert!(m.outcome().is_none());
        assert_eq!(m.current(), Some(Phase::InstallToDisk));
        let w: Vec<_> = m.badness().warnings().collect();
        assert_eq!(w.len(), 1);
        assert_eq!(
            w[0].allowed_by.as_deref(),
            Some(r"Killed process \d+ \(tail\)")
        );
    }
}
