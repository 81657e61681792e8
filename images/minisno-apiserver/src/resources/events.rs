//! Events of the simulated cluster (read-only, core v1 `Event`): the node's, the operators'
//! status changes and the kubelet's about the pods, each listed once its time has come.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use k8s_openapi::List;

use super::pods::object_uid;
use super::Reply;
use crate::app::App;
use crate::schedule::{self, SimEvent};

/// The API group/version of what an event is about.
fn api_version(kind: &str) -> &'static str {
    match kind {
        "Deployment" | "ReplicaSet" | "DaemonSet" => "apps/v1",
        _ => "v1",
    }
}

/// `<object>.<hex nanoseconds>`, as client-go names an event; `nth` (how many events about the
/// same object at the same moment come before it) keeps those apart.
fn event_name(app: &App, e: &SimEvent, nth: usize) -> String {
    let ns = app.first_start_ms as i128 * 1_000_000 + (e.first_s * 1e9).round() as i128;
    format!("{}.{:x}", e.involved.name, ns + nth as i128)
}

fn event(app: &App, e: &SimEvent, nth: usize) -> Event {
    let name = event_name(app, e, nth);
    let involved_ns = e.involved.namespace.clone();
    Event {
        metadata: ObjectMeta {
            uid: Some(object_uid(app, "Event", &e.namespace, &name)),
            name: Some(name),
            namespace: Some(e.namespace.clone()),
            resource_version: Some(app.generation().to_string()),
            creation_timestamp: Some(app.time_at(e.first_s)),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some(api_version(e.involved.kind).to_string()),
            kind: Some(e.involved.kind.to_string()),
            uid: Some(object_uid(
                app,
                e.involved.kind,
                involved_ns.as_deref().unwrap_or(""),
                &e.involved.name,
            )),
            name: Some(e.involved.name.clone()),
            namespace: involved_ns,
            ..Default::default()
        },
        reason: Some(e.reason.clone()),
        message: Some(e.message.clone()),
        type_: Some(e.type_.to_string()),
        count: Some(e.count as i32),
        first_timestamp: Some(app.time_at(e.first_s)),
        last_timestamp: Some(app.time_at(e.last_s)),
        source: Some(EventSource {
            component: Some(e.component.clone()),
            host: (e.component == "kubelet").then(|| app.node_name.clone()),
        }),
        reporting_component: Some(e.component.clone()),
        reporting_instance: Some(app.node_name.clone()),
        ..Default::default()
    }
}

/// The events that have happened, in `namespace` or everywhere, in the order they happened.
pub fn events(app: &App, namespace: Option<&str>) -> Vec<Event> {
    schedule::events(
        app.elapsed(),
        &app.timeline(),
        &app.faults,
        &app.config.release.version,
        &app.node_name,
        app.first_start_ms,
    )
    .iter()
    .scan(HashMap::new(), |seen, e| {
        let key = (e.involved.name.clone(), e.first_s.to_bits());
        let nth = seen.entry(key).or_insert(0usize);
        *nth += 1;
        Some((e, *nth - 1))
    })
    // numbered before the filter, so an event has one name whichever way it is listed
    .filter(|(e, _)| namespace.is_none_or(|ns| e.namespace == ns))
    .map(|(e, nth)| event(app, e, nth))
    .collect()
}

pub fn list_events(app: &App, namespace: Option<&str>) -> Reply {
    let list = List::<Event> {
        items: events(app, namespace),
        metadata: ListMeta {
            resource_version: Some(app.generation().to_string()),
            ..Default::default()
        },
    };
    Reply::json(200, &list)
}

pub fn get_event(app: &App, namespace: &str, name: &str) -> Reply {
    match events(app, Some(namespace))
        .into_iter()
        .find(|e| e.metadata.name.as_deref() == Some(name))
    {
        Some(e) => Reply::json(200, &e),
        None => Reply::not_found("", "events", name),
    }
}
