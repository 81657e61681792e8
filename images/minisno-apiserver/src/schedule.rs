//! Pure functions from "seconds since first start" + schedule + faults to what the cluster
//! shows. No clock and no I/O here, so every transition can be unit-tested.

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

/// How many manifests the simulated CVO pretends to apply.
pub const CVO_MANIFESTS: u32 = 886;

/// One status condition; `since_s` is when it last changed, in seconds since first start.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub type_: &'static str,
    pub status: &'static str,
    pub since_s: f64,
    pub reason: String,
    pub message: String,
}

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

/// `/readyz` and `/healthz`.
pub fn api_ready(elapsed: f64, s: &Schedule, faults: &Faults) -> bool {
    !faults.has(&Fault::ApiNeverReady) && elapsed >= s.readyz_after_s
}

/// `/livez`: follows the schedule; `api-never-ready` does not touch it.
pub fn api_live(elapsed: f64, s: &Schedule) -> bool {
    elapsed >= s.readyz_after_s
}

/// When the node becomes Ready (`None`: never).
pub fn node_ready_at(s: &Schedule, faults: &Faults) -> Option<f64> {
    (!faults.has(&Fault::NodeNotReady)).then_some(s.node_ready_after_s)
}

pub fn node_conditions(elapsed: f64, s: &Schedule, faults: &Faults) -> Vec<Cond> {
    let mut out = vec![
        cond(
            "MemoryPressure",
            false,
            0.0,
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        cond(
            "DiskPressure",
            false,
            0.0,
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        cond(
            "PIDPressure",
            false,
            0.0,
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    ];
    out.push(match node_ready_at(s, faults) {
        Some(t) if elapsed >= t => cond(
            "Ready",
            true,
            t,
            "KubeletReady",
            "kubelet is posting ready status",
        ),
        _ => cond(
            "Ready",
            false,
            0.0,
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady \
             message:Network plugin returns error: no CNI configuration file in /etc/kubernetes/cni/net.d/. \
             Has your network provider started?",
        ),
    });
    out
}

pub fn etcd_bootstrap_removed_at(s: &Schedule, faults: &Faults) -> Option<f64> {
    (!faults.has(&Fault::EtcdMemberNotRemoved)).then_some(s.etcd_bootstrap_removed_after_s)
}

pub fn etcd_conditions(elapsed: f64, s: &Schedule, faults: &Faults) -> Vec<Cond> {
    let removed = match etcd_bootstrap_removed_at(s, faults) {
        Some(t) if elapsed >= t => cond(
            "EtcdBootstrapMemberRemoved",
            true,
            t,
            "BootstrapMemberRemoved",
            "etcd bootstrap member is removed",
        ),
        _ => cond(
            "EtcdBootstrapMemberRemoved",
            false,
            0.0,
            "BootstrapMemberNotRemoved",
            "etcd bootstrap member is still a member of the cluster",
        ),
    };
    vec![
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
        removed,
    ]
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

/// Seconds between two operators' transitions: 0.1 s, or less when the schedule is too
/// short for that (all operators must settle before the cluster version completes).
pub fn stagger_step(s: &Schedule, operators: usize) -> f64 {
    let room = (s.operators_settled_after_s - s.operators_available_after_s)
        .min(s.cluster_version_completed_after_s - s.operators_settled_after_s)
        .max(0.0);
    (room / (operators as f64 + 1.0)).min(0.1)
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

fn degraded_reason(op: &str) -> String {
    match op {
        "ingress" => "IngressControllerDegraded".to_string(),
        _ => format!("{}Degraded", camel(op)),
    }
}

/// Conditions of operator number `index` (0-based) of `count`.
pub fn operator_conditions(
    name: &str,
    index: usize,
    count: usize,
    elapsed: f64,
    s: &Schedule,
    faults: &Faults,
    version: &str,
) -> Vec<Cond> {
    let step = stagger_step(s, count);
    let available_at = s.operators_available_after_s + index as f64 * step;
    let settled_at = s.operators_settled_after_s + index as f64 * step;
    let unavailable = faults.operator_unavailable(name);
    let degraded = faults.operator_degraded(name);

    let available = if !unavailable && elapsed >= available_at {
        cond("Available", true, available_at, "AsExpected", "All is well")
    } else if unavailable && elapsed >= available_at {
        cond(
            "Available",
            false,
            0.0,
            format!("{}Unavailable", camel(name)),
            format!(
                "The {name} operator is not available (minisno fault operator-unavailable:{name})"
            ),
        )
    } else {
        cond(
            "Available",
            false,
            0.0,
            "Initializing",
            format!("The {name} operator is starting"),
        )
    };
    let progressing = if !unavailable && elapsed >= settled_at {
        cond(
            "Progressing",
            false,
            settled_at,
            "AsExpected",
            format!("Desired and current number of replicas are equal; at version {version}"),
        )
    } else {
        cond(
            "Progressing",
            true,
            0.0,
            "Deploying",
            format!("Working towards {version}"),
        )
    };
    let degraded = if degraded && elapsed >= available_at {
        cond(
            "Degraded",
            true,
            available_at,
            degraded_reason(name),
            format!("The {name} operator is degraded (minisno fault operator-degraded:{name})"),
        )
    } else {
        cond("Degraded", false, 0.0, "AsExpected", "")
    };
    let upgradeable = cond("Upgradeable", true, 0.0, "AsExpected", "All is well");
    vec![available, progressing, degraded, upgradeable]
}

/// A simulated ClusterVersion status.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterVersionView {
    pub conditions: Vec<Cond>,
    /// `Some(t)`: history entry Completed at `t`; `None`: Partial.
    pub completed_at: Option<f64>,
}

/// `(name, degraded?)` for the operators whose faults block the install.
fn blocking_operators(faults: &Faults) -> Vec<(String, &'static str)> {
    faults
        .operators()
        .into_iter()
        .map(|op| {
            let what = if faults.operator_unavailable(&op) {
                "not available"
            } else {
                "degraded"
            };
            (op, what)
        })
        .collect()
}

pub fn cluster_version(
    elapsed: f64,
    s: &Schedule,
    faults: &Faults,
    version: &str,
) -> ClusterVersionView {
    let done_at = s.cluster_version_completed_after_s;
    let retrieved = cond(
        "RetrievedUpdates",
        false,
        0.0,
        "RemoteFailed",
        "Unable to retrieve available updates: minisno is a test fixture and has no update service",
    );
    let blocking = blocking_operators(faults);

    if elapsed < done_at {
        let total = CVO_MANIFESTS;
        let frac = if done_at > 0.0 {
            (elapsed / done_at).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let done = ((frac * total as f64) as u32).min(total - 1);
        let pct = done * 100 / total;
        return ClusterVersionView {
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
                retrieved,
            ],
            completed_at: None,
        };
    }

    if !blocking.is_empty() {
        let (reason, message) = if blocking.len() == 1 {
            let (op, what) = &blocking[0];
            let reason = if *what == "degraded" {
                "ClusterOperatorDegraded"
            } else {
                "ClusterOperatorNotAvailable"
            };
            (
                reason.to_string(),
                format!("Cluster operator {op} is {what}"),
            )
        } else {
            let lines: Vec<String> = blocking
                .iter()
                .map(|(op, what)| format!("* Cluster operator {op} is {what}"))
                .collect();
            (
                "MultipleErrors".to_string(),
                format!(
                    "Multiple errors are preventing progress:\n{}",
                    lines.join("\n")
                ),
            )
        };
        let progressing_msg = format!(
            "Unable to apply {version}: {}",
            if blocking.len() == 1 {
                let (op, what) = &blocking[0];
                format!("the cluster operator {op} is {what}")
            } else {
                "an unknown error has occurred: MultipleErrors".to_string()
            }
        );
        return ClusterVersionView {
            conditions: vec![
                cond("Available", false, 0.0, "", ""),
                cond("Progressing", true, 0.0, reason.clone(), progressing_msg),
                cond("Failing", true, done_at, reason, message),
                retrieved,
            ],
            completed_at: None,
        };
    }

    ClusterVersionView {
        conditions: vec![
            cond(
                "Available",
                true,
                done_at,
                "",
                format!("Done applying {version}"),
            ),
            cond(
                "Progressing",
                false,
                done_at,
                "",
                format!("Cluster version is {version}"),
            ),
            cond("Failing", false, 0.0, "", ""),
            retrieved,
        ],
        completed_at: Some(done_at),
    }
}

/// The milestones reached by `elapsed`, with their times, in order.
pub fn milestones(elapsed: f64, s: &Schedule, faults: &Faults) -> Vec<(&'static str, f64)> {
    let n = operator_names(faults).len();
    let step = stagger_step(s, n);
    let mut all: Vec<(&'static str, Option<f64>)> = vec![
        (
            "readyz ok",
            (!faults.has(&Fault::ApiNeverReady)).then_some(s.readyz_after_s),
        ),
        (
            "etcd bootstrap member removed",
            etcd_bootstrap_removed_at(s, faults),
        ),
        ("node Ready", node_ready_at(s, faults)),
        (
            "operators available",
            (faults
                .operators()
                .iter()
                .all(|o| !faults.operator_unavailable(o)))
            .then_some(s.operators_available_after_s + (n.saturating_sub(1)) as f64 * step),
        ),
        (
            "operators settled",
            (faults.operators().is_empty())
                .then_some(s.operators_settled_after_s + (n.saturating_sub(1)) as f64 * step),
        ),
        (
            "cluster version completed",
            faults
                .operators()
                .is_empty()
                .then_some(s.cluster_version_completed_after_s),
        ),
    ];
    all.sort_by(|a, b| {
        a.1.unwrap_or(f64::MAX)
            .partial_cmp(&b.1.unwrap_or(f64::MAX))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    all.into_iter()
        .filter_map(|(name, t)| t.filter(|t| elapsed >= *t).map(|t| (name, t)))
        .collect()
}

/// A number that grows whenever anything simulated changes (used as resourceVersion).
pub fn generation(elapsed: f64, s: &Schedule) -> u64 {
    [
        s.readyz_after_s,
        s.etcd_bootstrap_removed_after_s,
        s.node_ready_after_s,
        s.operators_available_after_s,
        s.operators_settled_after_s,
        s.cluster_version_completed_after_s,
    ]
    .iter()
    .filter(|t| elapsed >= **t)
    .count() as u64
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(names: &[&str]) -> Faults {
        Faults::parse(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).0
    }

    fn status(conds: &[Cond], t: &str) -> &'static str {
        conds.iter().find(|c| c.type_ == t).unwrap().status
    }

    #[test]
    fn readiness() {
        let s = Schedule::fast();
        assert!(!api_ready(2.9, &s, &faults(&[])));
        assert!(api_ready(3.0, &s, &faults(&[])));
        assert!(!api_ready(1e6, &s, &faults(&["api-never-ready"])));
        assert!(api_live(3.0, &s));
    }

    #[test]
    fn node_ready_transition() {
        let s = Schedule::fast();
        let f = faults(&[]);
        assert_eq!(status(&node_conditions(5.0, &s, &f), "Ready"), "False");
        let c = node_conditions(7.0, &s, &f);
        let ready = c.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!((ready.status, ready.since_s), ("True", 6.0));
        assert_eq!(
            status(
                &node_conditions(1e6, &s, &faults(&["node-not-ready"])),
                "Ready"
            ),
            "False"
        );
    }

    #[test]
    fn etcd_transition() {
        let s = Schedule::fast();
        let t = "EtcdBootstrapMemberRemoved";
        assert_eq!(status(&etcd_conditions(5.0, &s, &faults(&[])), t), "False");
        assert_eq!(status(&etcd_conditions(6.0, &s, &faults(&[])), t), "True");
        let f = faults(&["etcd-member-not-removed"]);
        assert_eq!(status(&etcd_conditions(1e6, &s, &f), t), "False");
    }

    #[test]
    fn operators_timeline() {
        let s = Schedule::fast();
        let f = faults(&[]);
        let n = operator_names(&f).len();
        let at = |e: f64, i: usize| operator_conditions("x", i, n, e, &s, &f, "4.17.0");
        assert_eq!(status(&at(9.0, 0), "Available"), "False");
        assert_eq!(status(&at(9.0, 0), "Progressing"), "True");
        assert_eq!(status(&at(10.0, 0), "Available"), "True");
        assert_eq!(status(&at(10.0, 0), "Progressing"), "True");
        // staggered: the last one is not yet available at exactly 10 s
        assert_eq!(status(&at(10.0, n - 1), "Available"), "False");
        let late = at(20.0, n - 1);
        assert_eq!(status(&late, "Available"), "True");
        assert_eq!(status(&late, "Progressing"), "False");
        assert_eq!(status(&late, "Degraded"), "False");
        let p = late.iter().find(|c| c.type_ == "Progressing").unwrap();
        assert!(p.since_s > 14.0 && p.since_s < 16.0);
    }

    #[test]
    fn operator_faults() {
        let s = Schedule::fast();
        let f = faults(&[
            "operator-degraded:ingress",
            "operator-unavailable:frobnicator",
        ]);
        let names = operator_names(&f);
        assert_eq!(names.last().unwrap(), "frobnicator");
        let n = names.len();
        let ing = operator_conditions("ingress", 12, n, 100.0, &s, &f, "v");
        assert_eq!(status(&ing, "Degraded"), "True");
        assert_eq!(status(&ing, "Available"), "True");
        let d = ing.iter().find(|c| c.type_ == "Degraded").unwrap();
        assert_eq!(d.reason, "IngressControllerDegraded");
        let fro = operator_conditions("frobnicator", n - 1, n, 100.0, &s, &f, "v");
        assert_eq!(status(&fro, "Available"), "False");
        assert_eq!(status(&fro, "Progressing"), "True");
    }

    #[test]
    fn cluster_version_timeline() {
        let s = Schedule::fast();
        let v = cluster_version(8.0, &s, &faults(&[]), "4.17.0-minisno");
        assert_eq!(v.completed_at, None);
        let p = v
            .conditions
            .iter()
            .find(|c| c.type_ == "Progressing")
            .unwrap();
        assert_eq!(p.status, "True");
        assert!(
            p.message
                .starts_with("Working towards 4.17.0-minisno: 443 of 886 done (50% complete)"),
            "{}",
            p.message
        );
        let v = cluster_version(16.0, &s, &faults(&[]), "4.17.0-minisno");
        assert_eq!(v.completed_at, Some(16.0));
        assert_eq!(status(&v.conditions, "Available"), "True");
        assert_eq!(status(&v.conditions, "Progressing"), "False");
        assert_eq!(status(&v.conditions, "Failing"), "False");
    }

    #[test]
    fn cluster_version_fault() {
        let s = Schedule::fast();
        let f = faults(&["operator-degraded:ingress"]);
        let v = cluster_version(100.0, &s, &f, "4.17.0-minisno");
        assert_eq!(v.completed_at, None);
        assert_eq!(status(&v.conditions, "Available"), "False");
        assert_eq!(status(&v.conditions, "Progressing"), "True");
        let failing = v.conditions.iter().find(|c| c.type_ == "Failing").unwrap();
        assert_eq!(failing.status, "True");
        assert_eq!(failing.message, "Cluster operator ingress is degraded");
        let f = faults(&["operator-unavailable:console"]);
        let v = cluster_version(100.0, &s, &f, "x");
        let failing = v.conditions.iter().find(|c| c.type_ == "Failing").unwrap();
        assert_eq!(failing.message, "Cluster operator console is not available");
    }

    #[test]
    fn milestone_order() {
        let s = Schedule::fast();
        let m = milestones(100.0, &s, &faults(&[]));
        let names: Vec<_> = m.iter().map(|m| m.0).collect();
        assert_eq!(
            names,
            vec![
                "readyz ok",
                "etcd bootstrap member removed",
                "node Ready",
                "operators available",
                "operators settled",
                "cluster version completed"
            ]
        );
        let m = milestones(
            100.0,
            &s,
            &faults(&["api-never-ready", "operator-degraded:dns"]),
        );
        assert!(!m
            .iter()
            .any(|m| m.0 == "readyz ok" || m.0 == "cluster version completed"));
        assert!(m.iter().any(|m| m.0 == "operators available"));
        assert_eq!(camel("kube-apiserver"), "KubeApiserver");
    }
}
