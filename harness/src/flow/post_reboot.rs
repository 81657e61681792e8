//! The wait loops of the installed system's post-reboot script, recognised from its journal
//! lines, and where the script stands among them.
//!
//! openshift/installer's
//! data/data/bootstrap/bootstrap-in-place/files/usr/local/bin/bootstrap-in-place-post-reboot.sh.template
//! runs under `set -euoE pipefail`, yet almost every step is an until/while loop that retries
//! without end: when something it needs never comes, the unit does not fail, the script just
//! prints the same line again (docs/bip-contract.md §6.1). So a hang is seen as one line
//! repeating, and the table below says which line belongs to which loop and what that loop is
//! waiting for. The lines come with the identifier `bootstrap-in-place-post-reboot.sh` (the
//! script's name) from `bootkube.service` of the installed system.

use std::collections::VecDeque;

/// The journal identifier of the script's lines: systemd gives a unit's output its program's
/// name.
pub const IDENTIFIER: &str = "bootstrap-in-place-post-reboot.sh";

/// One wait loop of the script.
#[derive(Debug, PartialEq, Eq)]
pub struct WaitLoop {
    /// A short name; the fixture's `post-reboot-hang:<loop>` fault uses the same ones.
    pub id: &'static str,
    /// What the script is doing, as a reason says it ("approving CSRs").
    pub name: &'static str,
    /// Lines printed once, just before the first round.
    pub opens: &'static [&'static str],
    /// Lines printed on each round that found the condition unmet.
    pub rounds: &'static [&'static str],
    /// What the loop waits for, in words.
    pub waits_for: &'static str,
}

/// The script's loops in the order it runs them (its functions `wait_for_api`,
/// `signal_bootstrap_complete`, `release_cvo_lease`, `release_cpc_lease`,
/// `restore_cvo_overrides`, `approve_csr`, `restart_kubelet`'s two waits, `wait_for_cvo`).
pub const LOOPS: &[WaitLoop] = &[
    WaitLoop {
        id: "api",
        name: "waiting for the API",
        opens: &[],
        rounds: &["Waiting for api ..."],
        waits_for: "the API server on the node to answer a list of CSRs (`oc get csr` with the bootstrap kubeconfig)",
    },
    WaitLoop {
        id: "bootstrap-configmap",
        name: "creating the bootstrap configmap",
        opens: &[],
        rounds: &["Creating bootstrap configmap ..."],
        waits_for: "configmap kube-system/bootstrap to exist (the script creates it with status=complete, which wait-for bootstrap-complete and the etcd operator wait for)",
    },
    WaitLoop {
        id: "cvo-lease",
        name: "releasing the cluster-version operator's lease",
        opens: &[],
        rounds: &[
            "Deleting openshift-cluster-version version lease",
            "Deleting openshift-cluster-version version cm",
        ],
        waits_for: "the lease and the configmap openshift-cluster-version/version, which the bootstrap CVO held, to be gone, so that the cluster's own CVO can lead",
    },
    WaitLoop {
        id: "cpc-lease",
        name: "releasing the cluster-policy-controller's lock",
        opens: &[],
        rounds: &[
            "Deleting kube-system cluster-policy-controller-lock lease",
            "Deleting kube-system cluster-policy-controller-lock cm",
        ],
        waits_for: "the lease and the configmap kube-system/cluster-policy-controller-lock, which the bootstrap control plane held, to be gone",
    },
    WaitLoop {
        id: "cvo-overrides",
        name: "restoring the CVO overrides",
        opens: &["Restoring CVO overrides"],
        rounds: &["Trying again to restore CVO overrides ..."],
        waits_for: "the API to accept the merge patch of ClusterVersion version from /opt/openshift/original_cvo_overrides.patch (the overrides the bootstrap set aside)",
    },
    WaitLoop {
        id: "csr",
        name: "approving CSRs",
        opens: &["Waiting for node to report ready status"],
        rounds: &["Approving csrs ..."],
        waits_for: "the master node to report Ready; meanwhile it approves every pending CSR, so the kubelet must reach api-int to ask for its certificates",
    },
    WaitLoop {
        id: "kube-apiserver-operator",
        name: "waiting for the kube-apiserver operator",
        opens: &["Waiting for kube-apiserver-operator"],
        rounds: &["Waiting for kube-apiserver-operator ready condition to be True"],
        waits_for: "the kube-apiserver-operator pod (openshift-kube-apiserver-operator, app=kube-apiserver-operator) to be Ready, before the script restarts the kubelet",
    },
    WaitLoop {
        id: "static-pod",
        name: "waiting for the kube-apiserver static pod",
        opens: &[],
        rounds: &["Waiting for kube-apiserver to apply the new static pod configuration"],
        waits_for: "/etc/kubernetes/manifests/kube-apiserver-pod.yaml to stop naming bootstrap-kube-apiserver, i.e. the kube-apiserver operator to roll out the cluster's own API server",
    },
    WaitLoop {
        id: "cvo",
        name: "waiting for the CVO",
        opens: &["Waiting for cvo"],
        rounds: &["Still waiting for cvo ..."],
        waits_for: "ClusterVersion version to be Available=True; each round it lists the operators that are not Available",
    },
];

/// The script's lines between its loops (its start, the end of the CSR loop, the kubelet's
/// restarts): each means the loop before it is over.
const STEPS: &[&str] = &[
    "Running bootkube bootstrap-in-place post reboot",
    "node is ready",
    "Restarting kubelet",
];

/// How many of the script's other lines within a loop are kept, latest last (the CVO loop's
/// operators, oc's errors, `Api is not available`).
const SAID: usize = 3;

/// The longest line kept from the script: an oc error may quote a whole object.
const SAID_CHARS: usize = 240;

/// What one line of the script says about where it stands.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Opens(&'static WaitLoop),
    Round(&'static WaitLoop),
    /// A step between loops.
    Step,
    /// Anything else: output within the current loop.
    Other,
}

/// The loop of that id.
pub fn by_id(id: &str) -> Option<&'static WaitLoop> {
    LOOPS.iter().find(|l| l.id == id)
}

pub fn classify(line: &str) -> Line {
    let line = line.trim();
    for l in LOOPS {
        if l.rounds.contains(&line) {
            return Line::Round(l);
        }
        if l.opens.contains(&line) {
            return Line::Opens(l);
        }
    }
    if STEPS.contains(&line) {
        Line::Step
    } else {
        Line::Other
    }
}

/// The loop the script is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spin {
    pub wait: &'static WaitLoop,
    /// When its first line came (ms since the run's start).
    pub first_ms: u64,
    /// When its latest round came (or its opening line, before any round).
    pub last_ms: u64,
    /// Rounds that found the condition unmet.
    pub rounds: u32,
    /// The script's latest other lines since the loop began, oldest first.
    pub said: VecDeque<String>,
}

/// Follows the script's lines.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    current: Option<Spin>,
}

impl Tracker {
    pub fn observe(&mut self, line: &str, now_ms: u64) {
        match classify(line) {
            Line::Opens(l) => self.current = Some(Spin::new(l, now_ms)),
            Line::Round(l) => {
                let spin = match self.current.take() {
                    Some(s) if s.wait == l => s,
                    _ => Spin::new(l, now_ms),
                };
                self.current = Some(spin.round(now_ms));
            }
            Line::Step => self.current = None,
            Line::Other => {
                if let Some(s) = &mut self.current {
                    s.said
                        .push_back(line.trim().chars().take(SAID_CHARS).collect());
                    while s.said.len() > SAID {
                        s.said.pop_front();
                    }
                }
            }
        }
    }

    pub fn current(&self) -> Option<&Spin> {
        self.current.as_ref()
    }
}

impl Spin {
    fn new(wait: &'static WaitLoop, now_ms: u64) -> Spin {
        Spin {
            wait,
            first_ms: now_ms,
            last_ms: now_ms,
            rounds: 0,
            said: VecDeque::new(),
        }
    }

    fn round(mut self, now_ms: u64) -> Spin {
        self.rounds += 1;
        self.last_ms = now_ms;
        // What the script printed in earlier rounds is stale once a new one begins, except
        // what it prints after the round's line (the CVO's operators), which comes next.
        self.said.clear();
        self
    }

    /// The loop for a reason: its name, since when, how often it went round, what it waits
    /// for, and what the script said last.
    pub fn describe(&self, now_ms: u64) -> String {
        let secs = |ms: u64| ms / 1000;
        let line = self.wait.rounds.first().copied().unwrap_or_default();
        let rounds = match self.rounds {
            0 => "no round yet".to_string(),
            n => format!(
                "{n} round{} of `{line}`, the last {} s ago",
                if n == 1 { "" } else { "s" },
                secs(now_ms.saturating_sub(self.last_ms))
            ),
        };
        let said = if self.said.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = self.said.iter().map(|s| format!("{s:?}")).collect();
            format!("; it last said {}", quoted.join(", "))
        };
        format!(
            "the post-reboot script ({IDENTIFIER}) is {} (loop `{}`) for {} s, since {} s into the run ({rounds}): it waits for {}{said}",
            self.wait.name,
            self.wait.id,
            secs(now_ms.saturating_sub(self.first_ms)),
            secs(self.first_ms),
            self.wait.waits_for
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loop_line_belongs_to_one_loop_only() {
        let mut lines: Vec<&str> = LOOPS
            .iter()
            .flat_map(|l| l.opens.iter().chain(l.rounds))
            .copied()
            .chain(STEPS.iter().copied())
            .collect();
        let n = lines.len();
        lines.sort();
        lines.dedup();
        assert_eq!(lines.len(), n);
        let mut ids: Vec<&str> = LOOPS.iter().map(|l| l.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), LOOPS.len());
    }

    #[test]
    fn the_fixture_can_hold_every_loop_of_the_table_by_the_same_name_in_the_same_order() {
        let ids: Vec<&str> = LOOPS.iter().map(|l| l.id).collect();
        assert_eq!(ids, sno_fixture_faults::POST_REBOOT_LOOPS);
    }

    #[test]
    fn lines_are_matched_whole_so_a_longer_line_is_not_its_prefix() {
        let op = by_id("kube-apiserver-operator").unwrap();
        assert_eq!(
            classify("Waiting for kube-apiserver-operator"),
            Line::Opens(op)
        );
        assert_eq!(
            classify("Waiting for kube-apiserver-operator ready condition to be True"),
            Line::Round(op)
        );
        assert_eq!(
            classify("Waiting for api ...\n"),
            Line::Round(by_id("api").unwrap())
        );
        assert_eq!(classify("Waiting for api ... done"), Line::Other);
    }

    #[test]
    fn a_step_ends_the_loop_and_another_loops_line_starts_that_one() {
        let mut t = Tracker::default();
        t.observe("Waiting for node to report ready status", 1000);
        t.observe("Approving csrs ...", 2000);
        t.observe("Approving csrs ...", 12_000);
        let s = t.current().unwrap();
        assert_eq!(
            (s.wait.id, s.first_ms, s.last_ms, s.rounds),
            ("csr", 1000, 12_000, 2)
        );
        t.observe("node is ready", 13_000);
        assert!(t.current().is_none());
        t.observe("Still waiting for cvo ...", 20_000);
        assert_eq!(t.current().unwrap().wait.id, "cvo");
        assert_eq!(t.current().unwrap().first_ms, 20_000);
    }

    #[test]
    fn the_cvo_loops_operators_are_quoted_from_its_latest_round() {
        let mut t = Tracker::default();
        t.observe("Waiting for cvo", 0);
        t.observe("Still waiting for cvo ...", 1000);
        t.observe("console: Available=False RouteHealthDegraded", 1100);
        t.observe("Still waiting for cvo ...", 21_000);
        t.observe("ingress: Available=False no router", 21_100);
        let d = t.current().unwrap().describe(30_000);
        assert!(d.contains("waiting for the CVO (loop `cvo`) for 30 s, since 0 s into the run (2 rounds of `Still waiting for cvo ...`, the last 9 s ago)"), "{d}");
        assert!(
            d.contains("it last said \"ingress: Available=False no router\""),
            "{d}"
        );
        assert!(!d.contains("console"), "{d}");
    }
}
