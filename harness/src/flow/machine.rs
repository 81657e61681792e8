//! The bootstrap-in-place state machine: events in, phases out. It is pure (time comes in with
//! the events and ticks), so every rule is unit-tested with synthetic timelines.
//!
//! Here: the machine's state, the phases' bookkeeping and the dispatch of each event. The
//! handlers are in `machine/`: the VM's own events (`vm_events`), the guest's journal and
//! status (`guest`), install-to-disk (`install`), the API checks after the pivot (`api`), the
//! post-reboot script's wait loops and the installed system's bootstrap leftovers (`script`),
//! and deadlines and timeouts (`deadlines`).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::badness::{AllowList, Findings, Kind, Policy as BadnessPolicy};
pub use super::disk_write::{
    installer_progress_percent, AdaptiveDeadline, DiskWriteStats, Projection,
};
use super::event::{ApiCheck, AssistedStep, Event, GuestStatus, NodeSeen, Served, Signal, Source};
use super::phase::Phase;
use super::post_reboot::Tracker as PostRebootTracker;

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
    /// The assisted install's failed coreos-installer attempts before the current one, each
    /// as its exit code and last error line, quoted when the last attempt fails too.
    install_attempts: Vec<String>,
    /// When the console showed systemd (or the kernel) rebooting in order during
    /// install-to-disk: the reboot install-to-disk.sh asks for, with the disks synced.
    orderly_reboot_ms: Option<u64>,
    /// Which of its wait loops the post-reboot script is in, from its journal lines.
    post_reboot: PostRebootTracker,
    /// The installed system's latest status: bootkube.service's state and the bootstrap files
    /// left, which a timeout after the pivot quotes.
    installed: Option<GuestStatus>,
    /// Whether bootstrap-complete waits for etcd's condition, and why.
    pub etcd_rule: Option<(bool, String)>,
    /// The cluster's release, once ClusterVersion named it: the release-gated rules follow it.
    pub release: Option<String>,
    /// The node as it registered, once the API listed it.
    pub node: Option<NodeSeen>,
    /// The operators unavailable or degraded that the `installer` rule reports, as the API
    /// last listed them before cluster-ready ended (then they are what the install completed,
    /// or failed, with).
    pub operator_warnings: Vec<String>,
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
    /// The scenario's keyfile profiles, which NetworkManager must bring the NICs up with.
    network_profiles: Vec<String>,
    /// An emergency line's failure, held while the emergency shell may still dump its cause.
    emergency: Option<emergency::Pending>,
    /// The install's end and the reboot's start: the reboot command, its scheduled delay, the
    /// assisted install's log collection.
    reboot: reboot::Evidence,
    /// Each system must report Secure Boot on (`vm.firmware = "uefi-secure"`).
    secure_boot_required: bool,
    /// What each system reported of Secure Boot.
    secure_boot: SecureBootSeen,
    /// A multipath installation disk's paths and the installed system's root on them.
    multipath: Option<multipath::MultipathState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ApiCheckKey(u8);

/// Where the serial console's lines are said to come from, in hits and reasons.
const CONSOLE: &str = "serial console";

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
            install_attempts: Vec::new(),
            orderly_reboot_ms: None,
            post_reboot: PostRebootTracker::default(),
            installed: None,
            etcd_rule: None,
            release: None,
            node: None,
            operator_warnings: Vec::new(),
            badness: Findings::default(),
            badness_allow: AllowList::default(),
            badness_policy: BadnessPolicy::default(),
            stop_after: None,
            host_keys: BTreeMap::new(),
            served: Vec::new(),
            boot_server_strain: None,
            network_profiles: Vec::new(),
            emergency: None,
            reboot: reboot::Evidence::default(),
            secure_boot_required: false,
            secure_boot: SecureBootSeen::default(),
            multipath: None,
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

    /// The first phase that has not begun starts at `now_ms`: what ends the run between two
    /// phases (the assets made, the VM refused by its backend) is the next phase's, not the
    /// first one's.
    pub fn begin_next_pending(&mut self, now_ms: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let next = Phase::ALL
            .iter()
            .copied()
            .find(|p| self.phases[p].status == Status::Pending);
        if let Some(p) = next {
            self.begin(p, now_ms, &mut out);
        }
        out
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
                self.emergency_console(line, now, &mut out);
                self.scan_for_badness((CONSOLE, None), line, now, &mut out);
                self.note_orderly_reboot(line, now);
            }
            Signal::Journal {
                unit,
                identifier,
                message,
                boot_id,
                guest_usec,
                ..
            } => {
                let source = if unit.is_empty() {
                    "journal".to_string()
                } else {
                    format!("journal of {unit}")
                };
                let unit_name = (!unit.is_empty()).then_some(unit.as_str());
                self.scan_for_badness((&source, unit_name), message, now, &mut out);
                self.on_journal(unit, message, *guest_usec, now, &mut out);
                self.on_script_line((unit, identifier, boot_id), message, now);
                self.on_network_manager((unit, message, boot_id), now, &mut out);
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
            Signal::BootChanged { from, to } => self.on_boot_changed((from, to), now, &mut out),
            Signal::Api { check, ok, detail } => {
                self.api.insert(key(*check), (*ok, detail.clone()));
                self.advance_api(now, &mut out);
            }
            Signal::EtcdRule { required, why } => {
                self.etcd_rule = Some((*required, why.clone()));
            }
            Signal::Release { version } => self.release = Some(version.clone()),
            Signal::OperatorWarnings { warnings } => {
                if self.phases[&Phase::ClusterReady].end_ms.is_none() {
                    self.operator_warnings = warnings.clone();
                }
            }
            Signal::NodeSeen(n) => {
                self.node = Some(n.clone());
                self.advance_api(now, &mut out);
            }
            Signal::Served(r) => self.served.push((now, r.clone())),
            Signal::BootServerStrained { detail } => {
                self.boot_server_strain = Some(detail.clone());
            }
            Signal::Assisted(step) => self.on_assisted(step, now, &mut out),
            Signal::Multipath(step) => self.on_multipath(step, now, &mut out),
            Signal::Ssh { .. }
            | Signal::Note { .. }
            | Signal::AssetsReady
            | Signal::PhaseStarted { .. }
            | Signal::PhaseEnded { .. } => {}
        }
        out
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
            .map(|h| (h.describe(), h.kind));
        match failing {
            // The console's emergency shell dumps its cause after its own lines (emergency.rs).
            Some((reason, Kind::EmergencyShell | Kind::DracutFatal)) if source == CONSOLE => {
                self.hold_emergency(now, reason)
            }
            Some((reason, _)) => self.fail(now, reason, out),
            None => {}
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

    /// Every badness line seen, failing or allowed.
    pub fn badness(&self) -> &Findings {
        &self.badness
    }
}

mod api;
mod deadlines;
mod emergency;
mod guest;
mod implied;
mod install;
pub mod multipath;
pub mod network;
mod reboot;
mod script;
mod secure_boot;
pub use secure_boot::SecureBootSeen;
#[cfg(test)]
mod tests;
mod vm_events;
