//! The pods and the events of the simulated cluster at a moment of a [`Timeline`]: what a
//! harness gathers from a failed install. Nothing runs before the node registers, so there is
//! neither a pod nor an event before then.

use std::hash::{Hash, Hasher};

use super::conditions::reached;
use super::workloads::{
    operator_workloads, pod_phase, unowned_workloads, Owner, PodPhase, Workload,
};
use super::{operator_conditions, operator_names, operator_namespaces, Cond, Timeline};
use crate::config::Faults;

/// One simulated pod.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPod {
    pub name: String,
    pub workload: Workload,
    /// The ClusterOperator it belongs to; `None` for the cluster version operator.
    pub operator: Option<String>,
    pub phase: PodPhase,
}

/// The letters Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn suffix(seed: i64, what: &str, len: usize) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (seed, what).hash(&mut h);
    let mut n = h.finish();
    (0..len)
        .map(|_| {
            let c = SAFE[(n % SAFE.len() as u64) as usize] as char;
            n /= SAFE.len() as u64;
            c
        })
        .collect()
}

/// The pod's name as its controller makes it; `seed` tells clusters apart.
pub fn pod_name(w: &Workload, node: &str, seed: i64) -> String {
    let key = format!("{}/{}", w.namespace, w.name);
    match w.owner {
        Owner::Deployment => format!(
            "{}-{}-{}",
            w.name,
            suffix(seed, &format!("{key}/rs"), 10),
            suffix(seed, &key, 5)
        ),
        Owner::DaemonSet => format!("{}-{}", w.name, suffix(seed, &key, 5)),
        Owner::Static => format!("{}-{node}", w.name),
    }
}

/// Every pod that exists at `elapsed`, sorted by namespace and name as the apiserver lists them.
pub fn pods(elapsed: f64, t: &Timeline, faults: &Faults, node: &str, seed: i64) -> Vec<SimPod> {
    let mut out = Vec::new();
    let mut add = |w: Workload, operator: Option<&str>, index: usize| {
        if let Some(phase) = pod_phase(operator, index, elapsed, t, faults) {
            out.push(SimPod {
                name: pod_name(&w, node, seed),
                workload: w,
                operator: operator.map(str::to_string),
                phase,
            });
        }
    };
    for (index, op) in operator_names(faults).iter().enumerate() {
        for w in operator_workloads(op) {
            add(w, Some(op), index);
        }
    }
    for w in unowned_workloads() {
        add(w, None, 0);
    }
    out.sort_by(|a, b| (&a.workload.namespace, &a.name).cmp(&(&b.workload.namespace, &b.name)));
    out
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Involved {
    pub kind: &'static str,
    pub name: String,
    /// `None` for a cluster-scoped object.
    pub namespace: Option<String>,
}

/// One simulated event; a repeated one has `count > 1` and its last time in `last_s`.
#[derive(Debug, Clone, PartialEq)]
pub struct SimEvent {
    /// The namespace the event is stored in.
    pub namespace: String,
    pub involved: Involved,
    pub type_: &'static str,
    pub reason: String,
    pub message: String,
    pub component: String,
    pub first_s: f64,
    pub last_s: f64,
    pub count: u32,
}

fn event(
    namespace: &str,
    involved: Involved,
    warning: bool,
    reason: &str,
    message: String,
    component: &str,
    at: f64,
) -> SimEvent {
    SimEvent {
        namespace: namespace.to_string(),
        involved,
        type_: if warning { "Warning" } else { "Normal" },
        reason: reason.to_string(),
        message,
        component: component.to_string(),
        first_s: at,
        last_s: at,
        count: 1,
    }
}

/// The kubelet's and the node controller's events about the node; they go to `default`, as a
/// cluster-scoped object's events do.
fn node_events(elapsed: f64, t: &Timeline, node: &str) -> Vec<SimEvent> {
    let Some(registered) = reached(t.node_registered, elapsed) else {
        return Vec::new();
    };
    let about = || Involved {
        kind: "Node",
        name: node.to_string(),
        namespace: None,
    };
    let status = |reason: &str, at: f64| {
        let message = format!("Node {node} status is now: {reason}");
        event("default", about(), false, reason, message, "kubelet", at)
    };
    let mut out = vec![event(
        "default",
        about(),
        false,
        "Starting",
        "Starting kubelet.".to_string(),
        "kubelet",
        registered,
    )];
    for reason in [
        "NodeHasSufficientMemory",
        "NodeHasNoDiskPressure",
        "NodeHasSufficientPID",
    ] {
        out.push(status(reason, registered));
    }
    out.push(event(
        "default",
        about(),
        false,
        "RegisteredNode",
        format!("Node {node} event: Registered Node {node} in Controller"),
        "node-controller",
        registered,
    ));
    if let Some(ready) = reached(t.node_ready, elapsed) {
        out.push(status("NodeReady", ready));
    }
    out
}

/// `Degraded changed from False to True ("...")`, as library-go's status controller words a
/// change; `None` when nothing changed.
fn change(before: &Cond, after: &Cond) -> Option<String> {
    if before.status != after.status {
        Some(format!(
            "{} changed from {} to {}{}",
            after.type_,
            before.status,
            after.status,
            quote_nonempty(&after.message)
        ))
    } else if before.message != after.message {
        Some(format!(
            "{} message changed from {:?} to {:?}",
            after.type_, before.message, after.message
        ))
    } else {
        None
    }
}

/// Whether conditions are worth a Warning: Degraded, or Available=False for any reason but the
/// operator still starting.
fn unhealthy(conds: &[Cond]) -> bool {
    conds.iter().any(|c| {
        (c.type_ == "Degraded" && c.status == "True")
            || (c.type_ == "Available" && c.status == "False" && c.reason != "Initializing")
    })
}

/// The status controller's `OperatorStatusChanged` events of operator number `index`, about its
/// deployment in its own namespace: the first status once the node registers (its pod can run
/// then), and one event for each later moment its conditions change.
fn operator_events(
    name: &str,
    index: usize,
    elapsed: f64,
    t: &Timeline,
    faults: &Faults,
    version: &str,
) -> Vec<SimEvent> {
    let Some(registered) = reached(t.node_registered, elapsed) else {
        return Vec::new();
    };
    let namespace = operator_namespaces(name).remove(0);
    let deployment = operator_workloads(name)
        .into_iter()
        .find(|w| w.namespace == namespace)
        .map(|w| w.name.into_owned())
        .unwrap_or_else(|| format!("{name}-operator"));
    let component = format!("{deployment}-status-controller-statussyncer_{name}");
    let about = || Involved {
        kind: "Deployment",
        name: deployment.clone(),
        namespace: Some(namespace.clone()),
    };
    let conds_at = |at: f64| operator_conditions(name, index, at, t, faults, version);
    // Before anything is reached: the conditions an operator starts with.
    let mut last = conds_at(-1.0);
    let set: Vec<String> = last
        .iter()
        .map(|c| {
            format!(
                "{} set to {}{}",
                c.type_,
                c.status,
                quote_nonempty(&c.message)
            )
        })
        .collect();
    let mut out = vec![event(
        &namespace,
        about(),
        false,
        "OperatorStatusChanged",
        format!(
            "Status for clusteroperator/{name} changed: {}",
            set.join(",")
        ),
        &component,
        registered,
    )];
    let offset = index as f64 * t.step;
    // And when a failing route check of the operator cleared.
    let cleared = super::routes::check_of(name).and_then(|i| t.routes.cleared_at(i));
    let mut moments: Vec<f64> = [t.operators_available, t.operators_settled]
        .iter()
        .flatten()
        .map(|m| m + offset)
        .chain(cleared)
        .collect();
    moments.sort_by(f64::total_cmp);
    for at in moments {
        if at > elapsed {
            break;
        }
        let now = conds_at(at);
        let changes: Vec<String> = last
            .iter()
            .zip(&now)
            .filter_map(|(b, a)| change(b, a))
            .collect();
        if !changes.is_empty() {
            out.push(event(
                &namespace,
                about(),
                unhealthy(&now),
                "OperatorStatusChanged",
                format!(
                    "Status for clusteroperator/{name} changed: {}",
                    changes.join(",")
                ),
                &component,
                at,
            ));
        }
        last = now;
    }
    out
}

fn quote_nonempty(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(" ({m:?})")
    }
}

/// The kubelet's events about a pod: its container started, and, while it crashloops, one
/// back-off event counted up at every restart (a crashlooping container had started once the
/// node was Ready: that event stays).
fn pod_events(pod: &SimPod, t: &Timeline) -> Vec<SimEvent> {
    let ns = &pod.workload.namespace;
    let container = &pod.workload.name;
    let about = || Involved {
        kind: "Pod",
        name: pod.name.clone(),
        namespace: Some(ns.to_string()),
    };
    let started = |at: f64| {
        let message = format!("Started container {container}");
        event(ns, about(), false, "Started", message, "kubelet", at)
    };
    match pod.phase {
        PodPhase::Creating { .. } => Vec::new(),
        PodPhase::Running { since_s, .. } => vec![started(since_s)],
        PodPhase::CrashLooping {
            first_crash_s,
            restarts,
            last_crash_s,
        } => vec![
            started(t.node_ready.unwrap_or(first_crash_s)),
            SimEvent {
                last_s: last_crash_s,
                count: restarts,
                ..event(
                    ns,
                    about(),
                    true,
                    "BackOff",
                    format!(
                        "Back-off restarting failed container {container} in pod {}",
                        pod.name
                    ),
                    "kubelet",
                    first_crash_s,
                )
            },
        ],
    }
}

/// Every event that has happened by `elapsed`, in the order they first happened.
pub fn events(
    elapsed: f64,
    t: &Timeline,
    faults: &Faults,
    version: &str,
    node: &str,
    seed: i64,
) -> Vec<SimEvent> {
    let mut out = node_events(elapsed, t, node);
    for (index, op) in operator_names(faults).iter().enumerate() {
        out.extend(operator_events(op, index, elapsed, t, faults, version));
    }
    for pod in pods(elapsed, t, faults, node, seed) {
        out.extend(pod_events(&pod, t));
    }
    // stable: events of one moment keep the order they were made in
    out.sort_by(|a, b| a.first_s.total_cmp(&b.first_s));
    out
}
