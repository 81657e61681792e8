//! Pods of the simulated cluster (read-only): one or a few per operator namespace, following the
//! operator's health in the schedule, so that a harness gathering a failed install finds the
//! crashlooping pod behind a faulted ClusterOperator.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, OwnerReference};
use k8s_openapi::List;

use super::Reply;
use crate::app::App;
use crate::schedule::{self, Owner, PodPhase, SimPod};

/// The simulated pods that exist now, in `namespace` or everywhere.
pub fn sim_pods(app: &App, namespace: Option<&str>) -> Vec<SimPod> {
    schedule::pods(
        app.elapsed(),
        &app.timeline(),
        &app.faults,
        &app.node_name,
        app.first_start_ms,
    )
    .into_iter()
    .filter(|p| namespace.is_none_or(|ns| p.workload.namespace == ns))
    .collect()
}

/// The uid of an object the events and the pods both refer to.
pub fn object_uid(app: &App, kind: &str, namespace: &str, name: &str) -> String {
    app.uid(&format!("{kind}/{namespace}/{name}"))
}

/// Who made the pod: its ReplicaSet, its DaemonSet, or, for a static (mirror) pod, the node.
fn owner(app: &App, p: &SimPod) -> OwnerReference {
    let w = &p.workload;
    let (api_version, kind, name) = match w.owner {
        Owner::Deployment => {
            let rs = p
                .name
                .rsplit_once('-')
                .map_or(p.name.as_str(), |(rs, _)| rs);
            ("apps/v1", "ReplicaSet", rs.to_string())
        }
        Owner::DaemonSet => ("apps/v1", "DaemonSet", w.name.to_string()),
        Owner::Static => ("v1", "Node", app.node_name.clone()),
    };
    let ns = if kind == "Node" { "" } else { &w.namespace };
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        uid: object_uid(app, kind, ns, &name),
        name,
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn meta(app: &App, p: &SimPod) -> ObjectMeta {
    let w = &p.workload;
    let mut labels = BTreeMap::from([("app".to_string(), w.name.to_string())]);
    if w.owner == Owner::Deployment {
        if let Some(hash) = p.name.rsplit('-').nth(1) {
            labels.insert("pod-template-hash".to_string(), hash.to_string());
        }
    }
    ObjectMeta {
        name: Some(p.name.clone()),
        namespace: Some(w.namespace.to_string()),
        uid: Some(object_uid(app, "Pod", &w.namespace, &p.name)),
        resource_version: Some(app.generation().to_string()),
        creation_timestamp: app.timeline().node_registered.map(|t| app.time_at(t)),
        labels: Some(labels),
        owner_references: Some(vec![owner(app, p)]),
        ..Default::default()
    }
}

/// The fault that makes this operator's pods crash, as the scenario spelled it.
fn fault_of(app: &App, operator: &str) -> String {
    if app.faults.operator_degraded(operator) {
        format!("operator-degraded:{operator}")
    } else {
        format!("operator-unavailable:{operator}")
    }
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_string()),
            message,
        }),
        ..Default::default()
    }
}

/// `(phase, state, last state, ready, restarts)` of the pod's one container.
fn container_state(
    app: &App,
    p: &SimPod,
) -> (
    &'static str,
    ContainerState,
    Option<ContainerState>,
    bool,
    i32,
) {
    let container = &p.workload.name;
    match p.phase {
        PodPhase::Creating { .. } => (
            "Pending",
            waiting("ContainerCreating", None),
            None,
            false,
            0,
        ),
        PodPhase::Running { since_s, ready_at } => {
            let state = ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(app.time_at(since_s)),
                }),
                ..Default::default()
            };
            ("Running", state, None, ready_at.is_some(), 0)
        }
        PodPhase::CrashLooping {
            restarts,
            last_crash_s,
            ..
        } => {
            let operator = p.operator.as_deref().unwrap_or_default();
            let message = format!(
                "back-off {}s restarting failed container={container} pod={}_{}({})",
                schedule::CRASH_PERIOD_S,
                p.name,
                p.workload.namespace,
                object_uid(app, "Pod", &p.workload.namespace, &p.name)
            );
            let last = ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 1,
                    reason: Some("Error".to_string()),
                    message: Some(format!(
                        "{container} exited with status 1: minisno fault {}",
                        fault_of(app, operator)
                    )),
                    started_at: Some(app.time_at(last_crash_s - 1.0)),
                    finished_at: Some(app.time_at(last_crash_s)),
                    container_id: Some(format!("cri-o://{}", container_id(app, p))),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let state = waiting("CrashLoopBackOff", Some(message));
            ("Running", state, Some(last), false, restarts as i32)
        }
    }
}

fn container_id(app: &App, p: &SimPod) -> String {
    object_uid(app, "Container", &p.workload.namespace, &p.name).replace('-', "")
}

fn condition(type_: &str, ok: bool, at: f64, app: &App) -> PodCondition {
    PodCondition {
        type_: type_.to_string(),
        status: if ok { "True" } else { "False" }.to_string(),
        last_transition_time: Some(app.time_at(at)),
        ..Default::default()
    }
}

fn status(app: &App, p: &SimPod) -> PodStatus {
    let registered = app.timeline().node_registered.unwrap_or(0.0);
    let (phase, state, last_state, ready, restarts) = container_state(app, p);
    let image = image(app, p);
    let running = state.running.is_some();
    let host_ip = app.node_ips.first().map(|ip| ip.to_string());
    PodStatus {
        phase: Some(phase.to_string()),
        conditions: Some(vec![
            condition("PodScheduled", true, registered, app),
            condition("Initialized", true, registered, app),
            condition("ContainersReady", ready, registered, app),
            condition("Ready", ready, registered, app),
        ]),
        host_ip: host_ip.clone(),
        // a static pod runs in the host's network; the others get an address of the cluster
        // network once the CNI is up
        pod_ip: match p.workload.owner {
            Owner::Static => host_ip,
            _ => (phase != "Pending").then(|| pod_ip(p)),
        },
        start_time: Some(app.time_at(registered)),
        container_statuses: Some(vec![ContainerStatus {
            name: p.workload.name.to_string(),
            image: image.clone(),
            image_id: image,
            container_id: (phase != "Pending").then(|| format!("cri-o://{}", container_id(app, p))),
            ready,
            restart_count: restarts,
            started: Some(running),
            state: Some(state),
            last_state,
            ..Default::default()
        }]),
        qos_class: Some("Burstable".to_string()),
        ..Default::default()
    }
}

/// An address in the default cluster network, the same for the pod every time.
fn pod_ip(p: &SimPod) -> String {
    let n = p
        .name
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    format!("10.128.0.{}", 2 + n % 250)
}

fn image(app: &App, p: &SimPod) -> String {
    format!(
        "quay.io/minisno/{}:{}",
        p.workload.name, app.config.release.version
    )
}

pub fn pod(app: &App, p: &SimPod) -> Pod {
    Pod {
        metadata: meta(app, p),
        spec: Some(PodSpec {
            node_name: Some(app.node_name.clone()),
            containers: vec![Container {
                name: p.workload.name.to_string(),
                image: Some(image(app, p)),
                ..Default::default()
            }],
            restart_policy: Some("Always".to_string()),
            priority_class_name: Some("system-cluster-critical".to_string()),
            host_network: Some(p.workload.owner == Owner::Static),
            ..Default::default()
        }),
        status: Some(status(app, p)),
    }
}

/// Lists pods in `namespace`, or in all namespaces when `None`; an unknown namespace has none.
pub fn list_pods(app: &App, namespace: Option<&str>) -> Reply {
    let list = List::<Pod> {
        items: sim_pods(app, namespace)
            .iter()
            .map(|p| pod(app, p))
            .collect(),
        metadata: ListMeta {
            resource_version: Some(app.generation().to_string()),
            ..Default::default()
        },
    };
    Reply::json(200, &list)
}

pub fn get_pod(app: &App, namespace: &str, name: &str) -> Reply {
    match sim_pods(app, Some(namespace))
        .iter()
        .find(|p| p.name == name)
    {
        Some(p) => Reply::json(200, &pod(app, p)),
        None => Reply::not_found("", "pods", name),
    }
}
