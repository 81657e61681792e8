//! The status conditions of the node, the etcd operator, the cluster operators and the cluster
//! version, at a moment of a [`Timeline`].

use super::routes::{self, ROUTE_CHECKS};
use super::{camel, Timeline};
use crate::config::Faults;

/// How many manifests the simulated CVO pretends to apply.
pub const CVO_MANIFESTS: u32 = 886;

pub use super::cond::Cond;

fn cond(
    type_: &'static str,
    status: bool,
    since_s: f64,
    reason: impl Into<String>,
    message: impl Into<String>,
) -> Cond {
    Cond {
        type_,
        status: if status { "True" } else { "False" },
        since_s,
        reason: reason.into(),
        message: message.into(),
    }
}

pub(super) fn reached(at: Option<f64>, elapsed: f64) -> Option<f64> {
    at.filter(|t| elapsed >= *t)
}

/// The conditions of the registered node.
pub fn node_conditions(elapsed: f64, t: &Timeline) -> Vec<Cond> {
    let since = t.node_registered.unwrap_or(0.0);
    let mut out = vec![
        cond(
            "MemoryPressure",
            false,
            since,
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        cond(
            "DiskPressure",
            false,
            since,
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        cond(
            "PIDPressure",
            false,
            since,
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    ];
    out.push(match reached(t.node_ready, elapsed) {
        Some(at) => cond("Ready", true, at, "KubeletReady", "kubelet is posting ready status"),
        None => cond(
            "Ready",
            false,
            since,
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady \
             message:Network plugin returns error: no CNI configuration file in /etc/kubernetes/cni/net.d/. \
             Has your network provider started?",
        ),
    });
    out
}

/// The etcd operator's conditions. `removed_condition` is the name its release gives the
/// removal of the bootstrap member (none before 4.13); the condition appears only once the
/// member is removed, and only ever as True.
pub fn etcd_conditions(
    elapsed: f64,
    t: &Timeline,
    removed_condition: Option<&'static str>,
) -> Vec<Cond> {
    let mut out = vec![
        cond(
            "EtcdMembersAvailable",
            true,
            0.0,
            "EtcdQuorate",
            "1 members are available",
        ),
        cond(
            "EtcdMembersDegraded",
            false,
            0.0,
            "AsExpected",
            "No unhealthy members found",
        ),
        cond(
            "EtcdMembersProgressing",
            false,
            0.0,
            "AsExpected",
            "No unstarted etcd members found",
        ),
    ];
    if let (Some(at), Some(name)) = (reached(t.etcd_removed, elapsed), removed_condition) {
        out.push(cond(
            name,
            true,
            at,
            "BootstrapMemberRemoved",
            "etcd bootstrap member is removed",
        ));
    }
    out
}

fn degraded_reason(op: &str) -> String {
    match op {
        "ingress" => "IngressControllerDegraded".to_string(),
        _ => format!("{}Degraded", camel(op)),
    }
}

fn available_condition(name: &str, at: Option<f64>, elapsed: f64, unavailable: bool) -> Cond {
    match reached(at, elapsed) {
        Some(at) if !unavailable => cond("Available", true, at, "AsExpected", "All is well"),
        Some(_) => cond(
            "Available",
            false,
            0.0,
            format!("{}Unavailable", camel(name)),
            format!(
                "The {name} operator is not available (minisno fault operator-unavailable:{name})"
            ),
        ),
        None => cond(
            "Available",
            false,
            0.0,
            "Initializing",
            format!("The {name} operator is starting"),
        ),
    }
}

/// Conditions of operator number `index` (0-based). An operator whose route check fails shows
/// it from when it would have been Available, and follows its schedule from when it cleared.
pub fn operator_conditions(
    name: &str,
    index: usize,
    elapsed: f64,
    t: &Timeline,
    faults: &Faults,
    version: &str,
) -> Vec<Cond> {
    let offset = index as f64 * t.step;
    let check = routes::check_of(name);
    let cleared = check.and_then(|i| t.routes.cleared_at(i)).unwrap_or(0.0);
    let failing = check.and_then(|i| t.routes.failing(i, elapsed).map(|f| (i, f)));
    let scheduled_at = t.operators_available.map(|a| a + offset);
    let available_at = scheduled_at.map(|a| a.max(cleared));
    let settled_at = t
        .operators_settled
        .map(|a| a + offset)
        .map(|a| a.max(cleared));
    let unavailable = faults.operator_unavailable(name)
        || failing.is_some_and(|(i, _)| ROUTE_CHECKS[i].effect == routes::Effect::Unavailable);
    let available = available_condition(name, available_at, elapsed, unavailable);
    let progressing = match reached(settled_at, elapsed) {
        Some(at) if !unavailable => cond(
            "Progressing",
            false,
            at,
            "AsExpected",
            format!("Desired and current number of replicas are equal; at version {version}"),
        ),
        _ => cond(
            "Progressing",
            true,
            0.0,
            "Deploying",
            format!("Working towards {version}"),
        ),
    };
    let degraded = match reached(available_at, elapsed) {
        Some(at) if faults.operator_degraded(name) => cond(
            "Degraded",
            true,
            at,
            degraded_reason(name),
            format!("The {name} operator is degraded (minisno fault operator-degraded:{name})"),
        ),
        _ => cond("Degraded", false, 0.0, "AsExpected", ""),
    };
    let upgradeable = cond("Upgradeable", true, 0.0, "AsExpected", "All is well");
    let mut conds = vec![available, progressing, degraded, upgradeable];
    if let (Some((i, f)), Some(since)) = (failing, reached(scheduled_at, elapsed)) {
        if !faults.operator_unavailable(name) {
            routes::apply_failure(i, f, since, &mut conds);
        }
    }
    conds
}

/// A simulated ClusterVersion status.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterVersionView {
    pub conditions: Vec<Cond>,
    /// `Some(t)`: history entry Completed at `t`; `None`: Partial.
    pub completed_at: Option<f64>,
}

/// The operators that block the install at `elapsed`, in the operators' order: those not
/// Available, by a fault or a failing route check. As the cluster-version operator judges an
/// operator while it installs (pkg/cvo/internal/operatorstatus.go, its operator health check):
/// one not Available fails the payload, so ClusterVersion never becomes Available; one that is
/// Available but Degraded is only reported then, and the install completes.
fn blocking_operators(faults: &Faults, t: &Timeline, elapsed: f64) -> Vec<String> {
    let mut out: Vec<String> = faults
        .operators()
        .into_iter()
        .filter(|op| faults.operator_unavailable(op))
        .collect();
    for (i, c) in ROUTE_CHECKS.iter().enumerate() {
        let blocked =
            c.effect == routes::Effect::Unavailable && t.routes.failing(i, elapsed).is_some();
        if blocked && !out.iter().any(|o| o == c.operator) {
            out.push(c.operator.to_string());
        }
    }
    let order = super::operator_names(faults);
    out.sort_by_key(|o| order.iter().position(|n| n == o));
    out
}

fn retrieved_updates() -> Cond {
    cond(
        "RetrievedUpdates",
        false,
        0.0,
        "RemoteFailed",
        "Unable to retrieve available updates: minisno is a test fixture and has no update service",
    )
}

/// The CVO still applying its manifests; the count goes towards the expected completion and
/// stops short of the end while that is not in sight.
fn progressing_view(elapsed: f64, t: &Timeline, version: &str) -> ClusterVersionView {
    let total = CVO_MANIFESTS;
    let due = t
        .cluster_version_due
        .unwrap_or(t.expected_cluster_version_due);
    let frac = if due > 0.0 {
        (elapsed / due).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let cap = if t.cluster_version_due.is_some() {
        total - 1
    } else {
        total * 9 / 10
    };
    let done = ((frac * total as f64) as u32).min(cap);
    let pct = done * 100 / total;
    ClusterVersionView {
        conditions: vec![
            cond("Available", false, 0.0, "", ""),
            cond(
                "Progressing",
                true,
                0.0,
                "",
                format!("Working towards {version}: {done} of {total} done ({pct}% complete)"),
            ),
            cond("Failing", false, 0.0, "", ""),
            retrieved_updates(),
        ],
        completed_at: None,
    }
}

fn failing_view(due: f64, blocking: &[String], version: &str) -> ClusterVersionView {
    let (reason, message, progressing) = match blocking {
        [op] => (
            "ClusterOperatorNotAvailable".to_string(),
            format!("Cluster operator {op} is not available"),
            format!("Unable to apply {version}: the cluster operator {op} is not available"),
        ),
        many => {
            let lines: Vec<String> = many
                .iter()
                .map(|op| format!("* Cluster operator {op} is not available"))
                .collect();
            (
                "MultipleErrors".to_string(),
                format!(
                    "Multiple errors are preventing progress:\n{}",
                    lines.join("\n")
                ),
                format!("Unable to apply {version}: an unknown error has occurred: MultipleErrors"),
            )
        }
    };
    ClusterVersionView {
        conditions: vec![
            cond("Available", false, 0.0, "", ""),
            cond("Progressing", true, 0.0, reason.clone(), progressing),
            cond("Failing", true, due, reason, message),
            retrieved_updates(),
        ],
        completed_at: None,
    }
}

pub fn cluster_version(
    elapsed: f64,
    t: &Timeline,
    faults: &Faults,
    version: &str,
) -> ClusterVersionView {
    let Some(due) = reached(t.cluster_version_due, elapsed) else {
        return progressing_view(elapsed, t, version);
    };
    let blocking = blocking_operators(faults, t, elapsed);
    if !blocking.is_empty() {
        return failing_view(due, &blocking, version);
    }
    // Route checks that held an operator unavailable and cleared since: the version completes
    // then (a Degraded one never held it).
    let cleared = (0..ROUTE_CHECKS.len())
        .filter(|i| ROUTE_CHECKS[*i].effect == routes::Effect::Unavailable)
        .filter_map(|i| t.routes.cleared_at(i));
    let due = cleared.fold(due, f64::max);
    ClusterVersionView {
        conditions: vec![
            cond(
                "Available",
                true,
                due,
                "",
                format!("Done applying {version}"),
            ),
            cond(
                "Progressing",
                false,
                due,
                "",
                format!("Cluster version is {version}"),
            ),
            cond("Failing", false, 0.0, "", ""),
            retrieved_updates(),
        ],
        completed_at: Some(due),
    }
}
