//! Deadlines: the ticks that check them and the write-stall detector, the harness's own
//! blocking work running late, and the timeout's reason with its evidence; the time the
//! harness's boot server spent sending files, which live-boot's deadline leaves out.

use super::*;

impl Machine {
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

    /// The part of a phase's deadline that is not the scenario's timeout: live-boot's time
    /// spent fetching from the harness, the reboot's delay that `shutdown` scheduled.
    fn deadline_credit_ms(&self, phase: Phase, start: u64) -> u64 {
        match phase {
            Phase::LiveBoot => self.fetch_credit_ms(start),
            Phase::Reboot => self.scheduled_reboot_credit_ms() + self.seen_at_boot_credit_ms(),
            _ => 0,
        }
    }

    /// live-boot's credit: the time the harness's boot server spent answering the guest's GETs
    /// since the phase began (kernel, initramfs and root filesystem of a network boot). A real
    /// rootfs is about 1 GiB, so on a slow link the transfer alone would eat the timeout meant
    /// for a hung boot; a stalled transfer still times out, as only finished answers count. At
    /// most the timeout itself.
    fn fetch_credit_ms(&self, start: u64) -> u64 {
        let sent: u64 = self
            .served
            .iter()
            .filter(|(t, r)| r.method == "GET" && *t >= start)
            .map(|(_, r)| r.ms)
            .sum();
        sent.min(self.phases[&Phase::LiveBoot].timeout.as_millis() as u64)
    }

    /// When phase `p`'s deadline clock started and how long it runs: its own start and timeout,
    /// except for the phases that share a budget (Phase::budget_phase): node-ready and
    /// bootstrap-complete together get bootstrap-complete's timeout from node-ready's start, as
    /// `wait-for bootstrap-complete` gives its 45 minutes without looking at the node.
    pub fn deadline_window(&self, p: Phase) -> Option<(u64, Duration)> {
        let budget = p.budget_phase();
        let start = Phase::ALL
            .into_iter()
            .filter(|q| q.budget_phase() == budget)
            .filter_map(|q| self.phases[&q].start_ms)
            .min()?;
        Some((start, self.phases[&budget].timeout))
    }

    /// Checks deadlines and the write-stall detector.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(cur) = self.current else { return out };
        if self.outcome.is_some() {
            return out;
        }
        if self.emergency_held() {
            // The emergency decides the run; the phase's deadline would only hide its cause.
            self.emergency_due(now_ms, &mut out);
            return out;
        }
        // Once the disk is written (`Install complete.`) only the reboot command is awaited.
        if cur == Phase::InstallToDisk && self.disk.start_ms.is_some() && self.disk.end_ms.is_none()
        {
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
        let Some((start, timeout)) = self.deadline_window(cur) else {
            return out;
        };
        let projection = (cur == Phase::InstallToDisk)
            .then(|| self.install_projection())
            .flatten();
        let plain = start + timeout.as_millis() as u64 + self.deadline_credit_ms(cur, start);
        let deadline = self.log_collection_deadline(projection.map_or(plain, |p| p.deadline_ms));
        if now_ms > deadline {
            let cause = self.log_collection_running(now_ms);
            self.time_out(
                cur,
                (start, deadline, now_ms),
                projection,
                cause.as_deref(),
                &mut out,
            );
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
        let (start, timeout) = self
            .deadline_window(cur)
            .unwrap_or((now_ms, self.phases[&cur].timeout));
        let deadline = start + timeout.as_millis() as u64 + self.deadline_credit_ms(cur, start);
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
        let timeout = self.phases[&cur.budget_phase()].timeout;
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
        let evidence = self.pending_evidence(cur, now_ms) + &self.warnings_since(start);
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
        let credit = self.deadline_credit_ms(cur, start);
        let at_boot = self.seen_at_boot_credit_ms();
        let adapted = if credit > 0 && cur == Phase::Reboot {
            let scheduled = credit - at_boot;
            let parts: Vec<String> = [
                (scheduled > 0).then(|| {
                    format!("the {:.0} s `shutdown` scheduled the reboot for", scheduled as f64 / 1000.0)
                }),
                (at_boot > 0).then(|| {
                    format!(
                        "disk-boot's {:.0} s, as the reset is seen only when the rebooted system answers SSH (no QMP)",
                        at_boot as f64 / 1000.0
                    )
                }),
            ]
            .into_iter()
            .flatten()
            .collect();
            format!(
                "{adapted} (the deadline added {}; the scenario's timeout is {})",
                parts.join(" and "),
                humantime::format_duration(timeout)
            )
        } else if credit > 0 {
            format!(
                "{adapted} (the deadline left out the {:.1} s the harness's boot server spent sending files; the scenario's timeout is {})",
                credit as f64 / 1000.0,
                humantime::format_duration(timeout)
            )
        } else {
            adapted
        };
        let shared = match cur {
            Phase::NodeReady | Phase::BootstrapComplete => format!(
                " (the budget node-ready and bootstrap-complete share from node-ready's start, as wait-for bootstrap-complete's; {}'s timeout is {})",
                Phase::BootstrapComplete,
                humantime::format_duration(timeout)
            ),
            _ => String::new(),
        };
        let reason = format!(
            "{cur} did not finish within {}{shared}{adapted}{evidence}{last}",
            humantime::format_duration(within)
        );
        let st = self.phases.get_mut(&cur).expect("state");
        st.status = Status::Timeout;
        st.end_ms = Some(now_ms);
        st.detail = reason.clone();
        out.push(Action::PhaseEnded(cur, Status::Timeout));
        self.finish(Verdict::Fail, Some(cur), reason, out);
    }

    /// The guest's warnings (badness the policy or allow-list let pass) since `start`, the
    /// first one quoted: a phase that then times out is most likely their consequence (a soft
    /// lockup under TCG that never ended, seen in CI as a console of kernel traces), and the
    /// last signal alone would be the trace's last line.
    fn warnings_since(&self, start: u64) -> String {
        let mut seen = self
            .badness
            .hits
            .iter()
            .filter(|h| !h.is_fatal() && h.t_ms >= start);
        let Some(first) = seen.next() else {
            return String::new();
        };
        let more = match seen.count() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!("; the guest warned meanwhile: {}{more}", first.describe())
    }

    /// For heartbeats: the current phase and how long it has run.
    pub fn progress(&self, now_ms: u64) -> Option<(Phase, Duration)> {
        let p = self.current?;
        let start = self.phases[&p].start_ms?;
        Some((p, Duration::from_millis(now_ms.saturating_sub(start))))
    }
}
