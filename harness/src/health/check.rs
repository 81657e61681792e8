//! `sno-harness check`: the post-pivot checks of a run (api-ready, node-ready,
//! bootstrap-complete, cluster-ready with the operators' settled window, and the
//! install-config applied when one is given) against any existing cluster, with the same
//! judgements and words as `run` (`checks::evaluate`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::checks::{self, evaluate, EtcdRule, Inputs, Pass};
use super::client::Limits;
use super::failure::human;
use super::judge::Judgement;
use super::watch::{Stuck, Watch};
use super::{ApiEndpoint, ClusterApi, HealthError};
use crate::flow::event::ApiCheck;
use crate::flow::phase::Phase;
use crate::flow::release_rules;

/// The schema tag of `check --json`'s document.
pub const SCHEMA: &str = "sno-harness/check/v1";
/// The phases the checks stand for, in order.
pub const PHASES: [Phase; 4] = [
    Phase::ApiReady,
    Phase::NodeReady,
    Phase::BootstrapComplete,
    Phase::ClusterReady,
];
/// Between attempts while `--wait` lasts.
const RETRY: Duration = Duration::from_secs(5);

/// One phase's checks.
#[derive(Debug, Clone)]
pub struct PhaseCheck {
    pub phase: Phase,
    pub parts: Vec<(ApiCheck, Judgement)>,
}

impl PhaseCheck {
    pub fn ok(&self) -> bool {
        self.parts.iter().all(|(_, j)| j.ok)
    }

    /// What failed, in words (each failing check's own detail), or what passed.
    pub fn detail(&self) -> String {
        let mut failing: Vec<&str> = self
            .parts
            .iter()
            .filter(|(_, j)| !j.ok)
            .map(|(_, j)| j.detail.as_str())
            .collect();
        // Checks not asked share one reason.
        failing.dedup();
        if failing.is_empty() {
            let all: Vec<&str> = self.parts.iter().map(|(_, j)| j.detail.as_str()).collect();
            all.join("; ")
        } else {
            failing.join("; ")
        }
    }
}

/// What the last attempt found.
#[derive(Debug, Clone)]
pub struct Report {
    pub server: String,
    pub phases: Vec<PhaseCheck>,
    pub version: Option<String>,
    pub etcd_rule: Option<EtcdRule>,
    /// The API did not answer at all.
    pub unreachable: Option<String>,
    pub attempts: u32,
}

impl Report {
    pub fn healthy(&self) -> bool {
        self.unreachable.is_none() && self.phases.iter().all(PhaseCheck::ok)
    }

    fn of(pass: Pass, server: String, attempts: u32) -> Report {
        let phases = PHASES
            .iter()
            .map(|p| PhaseCheck {
                phase: *p,
                parts: pass
                    .results
                    .iter()
                    .filter(|(c, _)| p.api_checks().contains(c))
                    .cloned()
                    .collect(),
            })
            .collect();
        Report {
            server,
            phases,
            version: pass.version,
            etcd_rule: pass.etcd_rule,
            unreachable: pass.unreachable,
            attempts,
        }
    }

    /// The `--json` document.
    pub fn to_json(&self) -> Value {
        let checks: Vec<Value> = self
            .phases
            .iter()
            .map(|p| {
                json!({
                    "name": p.phase.name(),
                    "status": if p.ok() { "pass" } else { "fail" },
                    "detail": p.detail(),
                    "parts": p.parts.iter().map(|(c, j)| json!({
                        "check": c, "ok": j.ok, "detail": j.detail,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "schema": SCHEMA,
            "server": self.server,
            "version": self.version,
            "healthy": self.healthy(),
            "reachable": self.unreachable.is_none(),
            "unreachable": self.unreachable,
            "etcd_rule": self.etcd_rule.as_ref().map(|r| json!({"required": r.required, "why": r.why})),
            // The release-gated rules the checks followed: by the release, the newest while it
            // is not known.
            "release_rules": release_rules::applied(self.version.as_deref()),
            "attempts": self.attempts,
            "checks": checks,
        })
    }
}

/// How long `check` may take in all, and what set it (named when it cuts a check short).
#[derive(Debug, Clone)]
pub struct Deadline {
    pub after: Duration,
    pub set_by: String,
    /// Check again until healthy (`--wait`), or once.
    pub again: bool,
}

impl Deadline {
    /// Without `--wait`: one attempt, within twice a request's own bound.
    pub const ONE_ATTEMPT: Duration = Duration::from_secs(60);

    /// `--wait` as given (`text`, e.g. `10m`).
    pub fn wait(after: Duration, text: &str) -> Deadline {
        Deadline {
            after,
            set_by: format!("--wait {text}"),
            again: true,
        }
    }

    pub fn one_attempt() -> Deadline {
        Deadline {
            after: Self::ONE_ATTEMPT,
            set_by: format!(
                "{} for one attempt, as no --wait was given",
                human(Self::ONE_ATTEMPT)
            ),
            again: false,
        }
    }
}

/// What the watch shows while the client is set up (kube may run the kubeconfig's exec
/// credential plugins then).
const SETTING_UP: &str = "setting up the API client from the kubeconfig";

/// Checks the cluster once, or again every few seconds until it is healthy, within
/// `deadline`: when it passes, the report says what did not answer (from `watch`). A kubeconfig
/// that cannot be used is the error; an API that does not answer is in the report.
pub async fn check_cluster(
    endpoint: &ApiEndpoint,
    inputs: &Inputs,
    deadline: &Deadline,
    watch: &Watch,
) -> Result<Report, HealthError> {
    let until = Instant::now() + deadline.after;
    let mut last = None;
    let again = deadline.again.then_some(until);
    let attempts = attempts(endpoint, inputs, again, watch, &mut last);
    // What is waited for is seen as the deadline passes, before the attempts are dropped
    // (which ends their waits).
    let passed = async {
        tokio::time::sleep_until(until.into()).await;
        watch.stuck()
    };
    let outcome = tokio::select! {
        report = attempts => Ok(report),
        seen = passed => Err(seen),
    };
    match outcome {
        Ok(report) => report,
        Err(seen) => Ok(cut_short(inputs, deadline, seen, last)),
    }
}

/// Attempts, again until healthy when `again` (the deadline) is given.
async fn attempts(
    endpoint: &ApiEndpoint,
    inputs: &Inputs,
    again: Option<Instant>,
    watch: &Watch,
    last: &mut Option<Report>,
) -> Result<Report, HealthError> {
    let api = {
        let _setting_up = watch.begin(SETTING_UP);
        ClusterApi::connect_with(endpoint, Limits::DEFAULT, watch.clone()).await?
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let started = Instant::now();
        let report = Report::of(evaluate(&api, inputs).await, api.server().into(), attempt);
        // Another attempt only when it should end before the deadline, by the time this one
        // took (twice over): a deadline that cuts an attempt short then means that something
        // did not answer, rather than an unhealthy cluster's answers being cut off.
        let next_ends = Instant::now() + RETRY + started.elapsed() * 2;
        if report.healthy() || again.is_none_or(|until| next_ends > until) {
            return Ok(report);
        }
        *last = Some(report);
        tokio::time::sleep(RETRY).await;
    }
}

/// `d` to the nearest tenth of a second.
fn tenths(d: Duration) -> Duration {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(ms.saturating_add(50) / 100 * 100)
}

/// The report of a check the deadline cut short: the last whole attempt's findings, if any,
/// and what was still waited for (`seen`, from [`Watch::stuck`]), where, and for how long.
pub fn cut_short(
    inputs: &Inputs,
    deadline: &Deadline,
    seen: (String, Option<Stuck>),
    last: Option<Report>,
) -> Report {
    let (server, stuck) = seen;
    let why = match stuck {
        Some(s) => format!(
            "{}: no answer after {}, when the deadline ({}) passed",
            s.what,
            human(tenths(s.waited)),
            deadline.set_by
        ),
        None => format!("the deadline ({}) passed", deadline.set_by),
    };
    match last {
        Some(mut report) => {
            report.attempts += 1;
            report.unreachable = Some(why);
            report
        }
        None => Report::of(checks::unreachable(inputs, &why), server, 1),
    }
}
