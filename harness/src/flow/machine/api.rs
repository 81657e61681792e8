//! The phases after the pivot, judged on the API checks (the poller sends each check's latest
//! outcome), and the evidence a timed-out phase quotes.

use super::*;

impl Machine {
    pub(super) fn advance_api(&mut self, now: u64, out: &mut Vec<Action>) {
        // Several phases may complete on the same evidence; walk forward while they do.
        loop {
            let Some(cur) = self.current else { return };
            let done = match cur {
                Phase::ApiReady => self.api_ok(ApiCheck::Readyz),
                Phase::BootstrapComplete => {
                    self.api_ok(ApiCheck::BootstrapConfigmap)
                        && self.api_ok(ApiCheck::EtcdBootstrapMemberRemoved)
                }
                Phase::NodeReady => {
                    // A node registered under no hostname will not come right by waiting.
                    if let Some(problem) = self.node_problem() {
                        self.fail(now, problem, out);
                        return;
                    }
                    self.api_ok(ApiCheck::NodeReady)
                }
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

    /// What is wrong with the name or the addresses the node registered with, as a reason
    /// naming them: neither comes right by waiting.
    fn node_problem(&self) -> Option<String> {
        let n = self.node.as_ref()?;
        if let Some(problem) = &n.name_problem {
            return Some(format!("the node registered as {:?}: {problem}", n.name));
        }
        let problem = n.address_problem.as_ref()?;
        Some(format!("the node {:?} registered {problem}", n.name))
    }

    pub(super) fn api_ok(&self, c: ApiCheck) -> bool {
        self.api.get(&key(c)).map(|(ok, _)| *ok).unwrap_or(false)
    }

    /// The restarts of bootkube.service and its last error, for a reason.
    pub(super) fn restart_evidence(&self) -> String {
        let last = self
            .last_bootkube_error
            .as_ref()
            .map(|e| format!("; last error: {e:?}"))
            .unwrap_or_default();
        format!(" (each resumes from its stage markers){last}")
    }

    /// What the phase is still waiting for, from the latest API answers and what the guest
    /// said.
    pub(super) fn pending_evidence(&self, p: Phase, now_ms: u64) -> String {
        let api = self.pending_api(p);
        let extra = match p {
            Phase::Bootkube if self.bootkube_restarts > 0 => format!(
                "; bootkube.service restarted {} times{}",
                self.bootkube_restarts,
                self.restart_evidence()
            ),
            Phase::DiskBoot => self.multipath_evidence(),
            Phase::BootstrapComplete if !self.api_ok(ApiCheck::EtcdBootstrapMemberRemoved) => {
                match self.phases[&Phase::NodeReady].end_ms {
                    Some(ready) => format!(
                        ", {} s after the node became Ready",
                        now_ms.saturating_sub(ready) / 1000
                    ),
                    None => String::new(),
                }
            }
            _ => String::new(),
        };
        api + &extra + &self.script_evidence(p, now_ms)
    }

    /// The failing API checks of a phase, quoted.
    pub(super) fn pending_api(&self, p: Phase) -> String {
        let checks = match p {
            Phase::InstallToDisk => {
                return self
                    .last_install_error
                    .as_ref()
                    .map(|e| format!("; last coreos-installer error: {e:?}"))
                    .unwrap_or_default()
            }
            p => p.api_checks(),
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
}
