//! Where each operator runs and what its pods are, and how a pod of an operator looks at a
//! moment of a [`Timeline`]. A harness that gathers a failed install lists the pods of the
//! namespaces an unhealthy ClusterOperator names in `status.relatedObjects`, so the names here
//! are the ones an OpenShift 4.17 single-node cluster uses.

use std::borrow::Cow;

use super::conditions::reached;
use super::Timeline;
use crate::config::Faults;

/// How a workload's pods are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// `<name>-<template hash>-<5 chars>`.
    Deployment,
    /// `<name>-<5 chars>`.
    DaemonSet,
    /// A static pod of the node: `<name>-<node>`.
    Static,
}

/// One workload: its namespace, name (also its container's) and controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub namespace: Cow<'static, str>,
    pub name: Cow<'static, str>,
    pub owner: Owner,
}

/// A workload as the tables below write it.
#[derive(Debug, Clone, Copy)]
struct Spec {
    namespace: &'static str,
    name: &'static str,
    owner: Owner,
}

impl From<&Spec> for Workload {
    fn from(s: &Spec) -> Workload {
        Workload {
            namespace: Cow::Borrowed(s.namespace),
            name: Cow::Borrowed(s.name),
            owner: s.owner,
        }
    }
}

const fn deploy(namespace: &'static str, name: &'static str) -> Spec {
    Spec {
        namespace,
        name,
        owner: Owner::Deployment,
    }
}

const fn daemon(namespace: &'static str, name: &'static str) -> Spec {
    Spec {
        namespace,
        name,
        owner: Owner::DaemonSet,
    }
}

const fn static_pod(namespace: &'static str, name: &'static str) -> Spec {
    Spec {
        namespace,
        name,
        owner: Owner::Static,
    }
}

/// An operator's namespaces (its own first, where its status events go) and its workloads.
struct Operand {
    operator: &'static str,
    namespaces: &'static [&'static str],
    workloads: &'static [Spec],
}

const fn operand(
    operator: &'static str,
    namespaces: &'static [&'static str],
    workloads: &'static [Spec],
) -> Operand {
    Operand {
        operator,
        namespaces,
        workloads,
    }
}

const OPERANDS: &[Operand] = &[
    operand(
        "authentication",
        &[
            "openshift-authentication-operator",
            "openshift-authentication",
            "openshift-oauth-apiserver",
        ],
        &[
            deploy(
                "openshift-authentication-operator",
                "authentication-operator",
            ),
            deploy("openshift-authentication", "oauth-openshift"),
            deploy("openshift-oauth-apiserver", "apiserver"),
        ],
    ),
    operand(
        "baremetal",
        &["openshift-machine-api"],
        &[deploy(
            "openshift-machine-api",
            "cluster-baremetal-operator",
        )],
    ),
    operand(
        "cloud-controller-manager",
        &[
            "openshift-cloud-controller-manager-operator",
            "openshift-cloud-controller-manager",
        ],
        &[deploy(
            "openshift-cloud-controller-manager-operator",
            "cluster-cloud-controller-manager-operator",
        )],
    ),
    operand(
        "cloud-credential",
        &["openshift-cloud-credential-operator"],
        &[deploy(
            "openshift-cloud-credential-operator",
            "cloud-credential-operator",
        )],
    ),
    operand(
        "cluster-autoscaler",
        &["openshift-machine-api"],
        &[deploy(
            "openshift-machine-api",
            "cluster-autoscaler-operator",
        )],
    ),
    operand(
        "config-operator",
        &[
            "openshift-config-operator",
            "openshift-config",
            "openshift-config-managed",
        ],
        &[deploy(
            "openshift-config-operator",
            "openshift-config-operator",
        )],
    ),
    operand(
        "console",
        &["openshift-console-operator", "openshift-console"],
        &[
            deploy("openshift-console-operator", "console-operator"),
            deploy("openshift-console", "console"),
        ],
    ),
    operand(
        "control-plane-machine-set",
        &["openshift-machine-api"],
        &[deploy(
            "openshift-machine-api",
            "control-plane-machine-set-operator",
        )],
    ),
    operand(
        "csi-snapshot-controller",
        &["openshift-cluster-storage-operator"],
        &[deploy(
            "openshift-cluster-storage-operator",
            "csi-snapshot-controller-operator",
        )],
    ),
    operand(
        "dns",
        &["openshift-dns-operator", "openshift-dns"],
        &[
            deploy("openshift-dns-operator", "dns-operator"),
            daemon("openshift-dns", "dns-default"),
        ],
    ),
    operand(
        "etcd",
        &["openshift-etcd-operator", "openshift-etcd"],
        &[
            deploy("openshift-etcd-operator", "etcd-operator"),
            static_pod("openshift-etcd", "etcd"),
        ],
    ),
    operand(
        "image-registry",
        &["openshift-image-registry"],
        &[deploy(
            "openshift-image-registry",
            "cluster-image-registry-operator",
        )],
    ),
    operand(
        "ingress",
        &[
            "openshift-ingress-operator",
            "openshift-ingress",
            "openshift-ingress-canary",
        ],
        &[
            deploy("openshift-ingress-operator", "ingress-operator"),
            deploy("openshift-ingress", "router-default"),
            daemon("openshift-ingress-canary", "ingress-canary"),
        ],
    ),
    operand(
        "insights",
        &["openshift-insights"],
        &[deploy("openshift-insights", "insights-operator")],
    ),
    operand(
        "kube-apiserver",
        &[
            "openshift-kube-apiserver-operator",
            "openshift-kube-apiserver",
        ],
        &[
            deploy(
                "openshift-kube-apiserver-operator",
                "kube-apiserver-operator",
            ),
            static_pod("openshift-kube-apiserver", "kube-apiserver"),
        ],
    ),
    operand(
        "kube-controller-manager",
        &[
            "openshift-kube-controller-manager-operator",
            "openshift-kube-controller-manager",
        ],
        &[
            deploy(
                "openshift-kube-controller-manager-operator",
                "kube-controller-manager-operator",
            ),
            static_pod(
                "openshift-kube-controller-manager",
                "kube-controller-manager",
            ),
        ],
    ),
    operand(
        "kube-scheduler",
        &[
            "openshift-kube-scheduler-operator",
            "openshift-kube-scheduler",
        ],
        &[
            deploy(
                "openshift-kube-scheduler-operator",
                "openshift-kube-scheduler-operator",
            ),
            static_pod("openshift-kube-scheduler", "openshift-kube-scheduler"),
        ],
    ),
    operand(
        "kube-storage-version-migrator",
        &[
            "openshift-kube-storage-version-migrator-operator",
            "openshift-kube-storage-version-migrator",
        ],
        &[
            deploy(
                "openshift-kube-storage-version-migrator-operator",
                "kube-storage-version-migrator-operator",
            ),
            deploy("openshift-kube-storage-version-migrator", "migrator"),
        ],
    ),
    operand(
        "machine-api",
        &["openshift-machine-api"],
        &[deploy("openshift-machine-api", "machine-api-operator")],
    ),
    operand(
        "machine-approver",
        &["openshift-cluster-machine-approver"],
        &[deploy(
            "openshift-cluster-machine-approver",
            "machine-approver",
        )],
    ),
    operand(
        "machine-config",
        &["openshift-machine-config-operator"],
        &[
            deploy(
                "openshift-machine-config-operator",
                "machine-config-operator",
            ),
            daemon("openshift-machine-config-operator", "machine-config-daemon"),
        ],
    ),
    operand(
        "marketplace",
        &["openshift-marketplace"],
        &[deploy("openshift-marketplace", "marketplace-operator")],
    ),
    operand(
        "monitoring",
        &["openshift-monitoring"],
        &[deploy(
            "openshift-monitoring",
            "cluster-monitoring-operator",
        )],
    ),
    operand(
        "network",
        &[
            "openshift-network-operator",
            "openshift-multus",
            "openshift-ovn-kubernetes",
        ],
        &[
            deploy("openshift-network-operator", "network-operator"),
            daemon("openshift-multus", "multus"),
            daemon("openshift-ovn-kubernetes", "ovnkube-node"),
        ],
    ),
    operand(
        "node-tuning",
        &["openshift-cluster-node-tuning-operator"],
        &[
            deploy(
                "openshift-cluster-node-tuning-operator",
                "cluster-node-tuning-operator",
            ),
            daemon("openshift-cluster-node-tuning-operator", "tuned"),
        ],
    ),
    operand(
        "openshift-apiserver",
        &["openshift-apiserver-operator", "openshift-apiserver"],
        &[
            deploy(
                "openshift-apiserver-operator",
                "openshift-apiserver-operator",
            ),
            deploy("openshift-apiserver", "apiserver"),
        ],
    ),
    operand(
        "openshift-controller-manager",
        &[
            "openshift-controller-manager-operator",
            "openshift-controller-manager",
        ],
        &[
            deploy(
                "openshift-controller-manager-operator",
                "openshift-controller-manager-operator",
            ),
            deploy("openshift-controller-manager", "controller-manager"),
        ],
    ),
    operand(
        "openshift-samples",
        &["openshift-cluster-samples-operator"],
        &[deploy(
            "openshift-cluster-samples-operator",
            "cluster-samples-operator",
        )],
    ),
    operand(
        "operator-lifecycle-manager",
        &["openshift-operator-lifecycle-manager"],
        &[deploy(
            "openshift-operator-lifecycle-manager",
            "olm-operator",
        )],
    ),
    operand(
        "operator-lifecycle-manager-catalog",
        &["openshift-operator-lifecycle-manager"],
        &[deploy(
            "openshift-operator-lifecycle-manager",
            "catalog-operator",
        )],
    ),
    operand(
        "operator-lifecycle-manager-packageserver",
        &["openshift-operator-lifecycle-manager"],
        &[deploy(
            "openshift-operator-lifecycle-manager",
            "packageserver",
        )],
    ),
    operand(
        "service-ca",
        &["openshift-service-ca-operator", "openshift-service-ca"],
        &[
            deploy("openshift-service-ca-operator", "service-ca-operator"),
            deploy("openshift-service-ca", "service-ca"),
        ],
    ),
    operand(
        "storage",
        &["openshift-cluster-storage-operator"],
        &[deploy(
            "openshift-cluster-storage-operator",
            "cluster-storage-operator",
        )],
    ),
];

const UNOWNED: &[Spec] = &[deploy(
    "openshift-cluster-version",
    "cluster-version-operator",
)];

/// What runs outside every ClusterOperator: the cluster version operator.
pub fn unowned_workloads() -> Vec<Workload> {
    UNOWNED.iter().map(Workload::from).collect()
}

fn operand_of(operator: &str) -> Option<&'static Operand> {
    OPERANDS.iter().find(|o| o.operator == operator)
}

/// The namespaces an operator's `status.relatedObjects` names, its own first. An operator only
/// a fault names runs in `openshift-<name>`.
pub fn operator_namespaces(operator: &str) -> Vec<String> {
    match operand_of(operator) {
        Some(o) => o.namespaces.iter().map(|s| s.to_string()).collect(),
        None => vec![format!("openshift-{operator}")],
    }
}

/// An operator's workloads. One only a fault names gets a `<name>-operator` deployment.
pub fn operator_workloads(operator: &str) -> Vec<Workload> {
    match operand_of(operator) {
        Some(o) => o.workloads.iter().map(Workload::from).collect(),
        None => vec![Workload {
            namespace: Cow::Owned(format!("openshift-{operator}")),
            name: Cow::Owned(format!("{operator}-operator")),
            owner: Owner::Deployment,
        }],
    }
}

/// What a pod's container is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum PodPhase {
    /// Scheduled, but the node is not Ready (no CNI yet): the container is being created.
    Creating { since_s: f64 },
    /// Running since `since_s`; ready from `ready_at` on, if it has come.
    Running { since_s: f64, ready_at: Option<f64> },
    /// The container exits 1 over and over, the kubelet backing off between restarts.
    CrashLooping {
        first_crash_s: f64,
        restarts: u32,
        last_crash_s: f64,
    },
}

/// Seconds between two restarts of a crashlooping container (the kubelet's back-off grows to
/// five minutes; a fixed step keeps the count a plain function of the time).
pub const CRASH_PERIOD_S: f64 = 10.0;

/// `(restarts, time of the last crash)` of a container crashing since `first` by `elapsed`.
pub fn crashes(first: f64, elapsed: f64) -> (u32, f64) {
    let restarts = 1 + ((elapsed - first).max(0.0) / CRASH_PERIOD_S).floor() as u32;
    (restarts, first + f64::from(restarts - 1) * CRASH_PERIOD_S)
}

/// The state at `elapsed` of a pod of `operator` (`None`: a pod of no operator, which is
/// healthy), operator number `index`; `None` before the node registers (no pod exists then).
/// A faulted operator's pods crash from the moment its fault shows in its conditions.
pub fn pod_phase(
    operator: Option<&str>,
    index: usize,
    elapsed: f64,
    t: &Timeline,
    faults: &Faults,
) -> Option<PodPhase> {
    let registered = reached(t.node_registered, elapsed)?;
    let Some(ready) = reached(t.node_ready, elapsed) else {
        return Some(PodPhase::Creating {
            since_s: registered,
        });
    };
    let available_at = t.operators_available.map(|a| a + index as f64 * t.step);
    let faulted =
        operator.is_some_and(|o| faults.operator_degraded(o) || faults.operator_unavailable(o));
    match reached(available_at, elapsed) {
        Some(at) if faulted => {
            let (restarts, last) = crashes(at, elapsed);
            Some(PodPhase::CrashLooping {
                first_crash_s: at,
                restarts,
                last_crash_s: last,
            })
        }
        _ => Some(PodPhase::Running {
            since_s: ready,
            ready_at: if operator.is_none() {
                Some(ready)
            } else {
                reached(available_at, elapsed)
            },
        }),
    }
}
