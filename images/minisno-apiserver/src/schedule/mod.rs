//! Pure functions from "seconds since first start", the schedule, the faults and what has
//! happened on the node to what the cluster shows. No clock and no I/O here, so every transition
//! can be unit-tested.
//!
//! The milestones are causal, as in a real install (docs/bip-contract.md §7): the API comes up;
//! the node registers once the API is up and api-int resolves on the node; it turns Ready; the
//! etcd operator removes the bootstrap member once the node is Ready and the bootstrap
//! configmap says complete; the cluster version completes once the member is gone and every
//! operator is Available; then the operators settle. A milestone whose cause never comes never
//! comes either.

mod cond;
mod conditions;
mod events;
pub mod routes;
#[cfg(test)]
mod tests;
mod workloads;

pub use conditions::*;
pub use events::*;
pub use routes::{RouteFacts, RouteFailure, ROUTE_CHECKS};
pub use workloads::*;

use crate::config::{Fault, Faults, Schedule};

/// The operators a single-node OpenShift 4.17 cluster reports.
pub const SNO_OPERATORS: &[&str] = &[
    "authentication",
    "baremetal",
    "cloud-controller-manager",
    "cloud-credential",
    "cluster-autoscaler",
    "config-operator",
    "console",
    "control-plane-machine-set",
    "csi-snapshot-controller",
    "dns",
    "etcd",
    "image-registry",
    "ingress",
    "insights",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-storage-version-migrator",
    "machine-api",
    "machine-approver",
    "machine-config",
    "marketplace",
    "monitoring",
    "network",
    "node-tuning",
    "openshift-apiserver",
    "openshift-controller-manager",
    "openshift-samples",
    "operator-lifecycle-manager",
    "operator-lifecycle-manager-catalog",
    "operator-lifecycle-manager-packageserver",
    "service-ca",
    "storage",
];

/// How many milestones there are.
pub const MILESTONES: usize = 7;

/// What happened on the node and through the API, in seconds since the first start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// When `api-int.<cluster>.<domain>` first resolved on the node.
    pub api_int_resolved_at: Option<f64>,
    /// When configmap kube-system/bootstrap first said `status: complete`.
    pub bootstrap_complete_at: Option<f64>,
    /// The release's bootstrap-in-place never creates that configmap (before 4.12): the etcd
    /// operator then removes the bootstrap member on the node's readiness alone (inferred:
    /// those installs completed, and their users ran only `wait-for install-complete`).
    pub no_bootstrap_configmap: bool,
    /// What the operators' route checks found through the pods' DNS.
    pub routes: RouteFacts,
}

/// When each milestone is (or will be) reached; `None`: never, as things stand.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub readyz: Option<f64>,
    pub node_registered: Option<f64>,
    pub node_ready: Option<f64>,
    pub etcd_removed: Option<f64>,
    /// When the first operator turns Available (the others follow, `step` apart).
    pub operators_available: Option<f64>,
    /// When the cluster version operator has applied everything: Completed then, or Failing
    /// when an operator fault blocks it.
    pub cluster_version_due: Option<f64>,
    /// When the first operator stops progressing (the others follow, `step` apart).
    pub operators_settled: Option<f64>,
    /// When the cluster version would complete if nothing waited longer than the schedule
    /// says: what its progress message counts towards while the real time is not known.
    pub expected_cluster_version_due: f64,
    /// Seconds between two operators' transitions.
    pub step: f64,
    /// How many operators there are.
    pub operators: usize,
    /// The route checks: while one fails, its operator is not Available (or is Degraded) and
    /// the cluster version cannot complete, whatever the schedule says.
    pub routes: RouteFacts,
}

fn later(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a?.max(b?))
}

/// Seconds between two operators' transitions: 0.1 s, or less when the schedule is short.
pub fn stagger_step(s: &Schedule, operators: usize) -> f64 {
    let room = s
        .cluster_version_completed_delay_s
        .min(s.operators_settled_delay_s)
        .max(0.0);
    (room / (operators as f64 + 1.0)).min(0.1)
}

impl Timeline {
    pub fn new(s: &Schedule, faults: &Faults, facts: &Facts) -> Timeline {
        let operators = operator_names(faults).len();
        let step = stagger_step(s, operators);
        let readyz = (!faults.has(&Fault::ApiNeverReady)).then_some(s.readyz_after_s);
        let node_registered = later(readyz, facts.api_int_resolved_at);
        let node_ready = node_registered
            .filter(|_| !faults.has(&Fault::NodeNotReady))
            .map(|t| t + s.node_ready_delay_s);
        let configmap = match facts.no_bootstrap_configmap {
            true => node_ready,
            false => facts.bootstrap_complete_at,
        };
        let etcd_removed = later(node_ready, configmap)
            .filter(|_| !faults.has(&Fault::EtcdMemberNotRemoved))
            .map(|t| t + s.etcd_bootstrap_removed_delay_s);
        let operators_available = node_ready.map(|t| t + s.operators_available_delay_s);
        let last_available =
            operators_available.map(|t| t + operators.saturating_sub(1) as f64 * step);
        let cluster_version_due =
            later(etcd_removed, last_available).map(|t| t + s.cluster_version_completed_delay_s);
        let operators_settled = cluster_version_due.map(|t| t + s.operators_settled_delay_s);
        let expected_cluster_version_due = s.readyz_after_s
            + s.node_ready_delay_s
            + s.operators_available_delay_s
                .max(s.etcd_bootstrap_removed_delay_s)
            + s.cluster_version_completed_delay_s;
        Timeline {
            readyz,
            node_registered,
            node_ready,
            etcd_removed,
            operators_available,
            cluster_version_due,
            operators_settled,
            expected_cluster_version_due,
            step,
            operators,
            routes: facts.routes.clone(),
        }
    }

    /// The milestones reached by `elapsed`, with their times, in order.
    pub fn milestones(&self, elapsed: f64, faults: &Faults) -> Vec<(&'static str, f64)> {
        let last = self.operators.saturating_sub(1) as f64 * self.step;
        let unblocked = faults.operators().is_empty();
        let all_available = faults
            .operators()
            .iter()
            .all(|o| !faults.operator_unavailable(o));
        // A route check that fails holds its operator back until it clears.
        let routes_available = self.routes.clear(elapsed, routes::Effect::Unavailable);
        let routes_all = later(
            routes_available,
            self.routes.clear(elapsed, routes::Effect::Degraded),
        );
        let mut all: Vec<(&'static str, Option<f64>)> = vec![
            ("readyz ok", self.readyz),
            ("node registered", self.node_registered),
            ("node Ready", self.node_ready),
            ("etcd bootstrap member removed", self.etcd_removed),
            (
                "operators available",
                later(
                    self.operators_available
                        .filter(|_| all_available)
                        .map(|t| t + last),
                    routes_available,
                ),
            ),
            (
                "cluster version completed",
                later(self.cluster_version_due.filter(|_| unblocked), routes_all),
            ),
            (
                "operators settled",
                later(
                    self.operators_settled
                        .filter(|_| unblocked)
                        .map(|t| t + last),
                    routes_all,
                ),
            ),
        ];
        all.sort_by(|a, b| a.1.unwrap_or(f64::MAX).total_cmp(&b.1.unwrap_or(f64::MAX)));
        all.into_iter()
            .filter_map(|(name, t)| t.filter(|t| elapsed >= *t).map(|t| (name, t)))
            .collect()
    }

    /// A number that grows whenever anything simulated changes (used as resourceVersion).
    pub fn generation(&self, elapsed: f64) -> u64 {
        let cleared = (0..ROUTE_CHECKS.len()).map(|i| self.routes.cleared_at(i));
        [
            self.readyz,
            self.node_registered,
            self.node_ready,
            self.etcd_removed,
            self.operators_available,
            self.cluster_version_due,
            self.operators_settled,
        ]
        .into_iter()
        .chain(cleared)
        .flatten()
        .filter(|t| elapsed >= *t)
        .count() as u64
            + 1
    }

    /// Whether the node object exists.
    pub fn node_exists(&self, elapsed: f64) -> bool {
        self.node_registered.is_some_and(|t| elapsed >= t)
    }

    /// `/readyz` and `/healthz`.
    pub fn api_ready(&self, elapsed: f64) -> bool {
        self.readyz.is_some_and(|t| elapsed >= t)
    }
}

/// `/livez`: follows the schedule; `api-never-ready` does not touch it.
pub fn api_live(elapsed: f64, s: &Schedule) -> bool {
    elapsed >= s.readyz_after_s
}

/// The SNO operators plus any that only a fault names (so the fault still applies).
pub fn operator_names(faults: &Faults) -> Vec<String> {
    let mut names: Vec<String> = SNO_OPERATORS.iter().map(|s| s.to_string()).collect();
    for extra in faults.operators() {
        if !names.contains(&extra) {
            names.push(extra);
        }
    }
    names
}

/// `kube-apiserver` -> `KubeApiserver`.
pub fn camel(name: &str) -> String {
    name.split(['-', '_', '.'])
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}
