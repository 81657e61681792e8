//! `sno-harness check`: the post-pivot checks of a run (api-ready, node-ready,
//! bootstrap-complete, cluster-ready with the operators' settled window, and the
//! install-config applied when one is given) against any existing cluster, with the same
//! judgements and words as `run` (`checks::evaluate`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::checks::{evaluate, EtcdRule, Inputs, Pass};
use super::judge::Judgement;
use super::{ApiEndpoint, ClusterApi, HealthError};
use crate::flow::event::ApiCheck;
use crate::flow::phase::Phase;

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
        let failing: Vec<&str> = self
            .parts
            .iter()
            .filter(|(_, j)| !j.ok)
            .map(|(_, j)| j.detail.as_str())
            .collect();
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
            "attempts": self.attempts,
            "checks": checks,
        })
    }
}

/// Checks the cluster once, or again every few seconds until it is healthy or `wait` is
/// over. A kubeconfig that cannot be used is the error; an API that does not answer is in
/// the report.
pub async fn check_cluster(
    endpoint: &ApiEndpoint,
    inputs: &Inputs,
    wait: Duration,
) -> Result<Report, HealthError> {
    let until = Instant::now() + wait;
    let api = ClusterApi::connect(endpoint).await?;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let report = Report::of(evaluate(&api, inputs).await, api.server().into(), attempts);
        if report.healthy() || Instant::now() + RETRY > until {
            return Ok(report);
        }
        tokio::time::sleep(RETRY).await;
    }
}
