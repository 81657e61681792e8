//! Server-side printing: when a client asks for `as=Table` (kubectl does), nodes, pods, events,
//! cluster operators and cluster versions come back as a `meta.k8s.io/v1` Table with the columns
//! `oc get` shows, instead of kubectl's bare NAME/AGE fallback.

use serde_json::{json, Value};

/// Whether the Accept header asks for a Table.
pub fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',')
            .any(|m| m.contains("as=Table") && m.contains("g=meta.k8s.io"))
    })
}

/// kubectl's short human durations: `45s`, `3m12s`, `2h5m`, `4d`.
pub fn human_duration(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..=119 => format!("{s}s"),
        120..=599 => format!("{}m{}s", s / 60, s % 60),
        600..=10799 => format!("{}m", s / 60),
        10800..=28799 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        28800..=172799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

fn since(ts: &Value, now_s: i64) -> String {
    ts.as_str()
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
        .map(|t| human_duration(now_s - t.as_second()))
        .unwrap_or_else(|| "<unknown>".to_string())
}

fn cond<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn cond_field(obj: &Value, type_: &str, field: &str) -> String {
    cond(obj, type_)
        .and_then(|c| c[field].as_str())
        .unwrap_or_default()
        .to_string()
}

fn column(name: &str, type_: &str) -> Value {
    json!({"name": name, "type": type_, "format": if name == "Name" {"name"} else {""},
           "description": "", "priority": 0})
}

type Columns = (
    &'static [(&'static str, &'static str)],
    fn(&Value, i64) -> Vec<Value>,
);

fn node_row(o: &Value, now_s: i64) -> Vec<Value> {
    let ready = cond_field(o, "Ready", "status") == "True";
    let mut roles: Vec<&str> = o["metadata"]["labels"]
        .as_object()
        .map(|l| {
            l.keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .collect()
        })
        .unwrap_or_default();
    roles.sort();
    vec![
        o["metadata"]["name"].clone(),
        json!(if ready { "Ready" } else { "NotReady" }),
        json!(roles.join(",")),
        json!(since(&o["metadata"]["creationTimestamp"], now_s)),
        o["status"]["nodeInfo"]["kubeletVersion"].clone(),
    ]
}

fn operator_row(o: &Value, now_s: i64) -> Vec<Value> {
    let version = o["status"]["versions"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "operator"))
        .map(|v| v["version"].clone())
        .unwrap_or(json!(""));
    vec![
        o["metadata"]["name"].clone(),
        version,
        json!(cond_field(o, "Available", "status")),
        json!(cond_field(o, "Progressing", "status")),
        json!(cond_field(o, "Degraded", "status")),
        json!(cond(o, "Available")
            .map(|c| since(&c["lastTransitionTime"], now_s))
            .unwrap_or_default()),
        json!(cond_field(o, "Progressing", "message")),
    ]
}

fn version_row(o: &Value, now_s: i64) -> Vec<Value> {
    let version = o["status"]["history"]
        .as_array()
        .and_then(|h| h.iter().find(|h| h["state"] == "Completed"))
        .map(|h| h["version"].clone())
        .unwrap_or(json!(""));
    vec![
        o["metadata"]["name"].clone(),
        version,
        json!(cond_field(o, "Available", "status")),
        json!(cond_field(o, "Progressing", "status")),
        json!(cond(o, "Progressing")
            .map(|c| since(&c["lastTransitionTime"], now_s))
            .unwrap_or_default()),
        json!(cond_field(o, "Progressing", "message")),
    ]
}

/// READY `0/1`, STATUS the waiting reason (`CrashLoopBackOff`) or else the phase, RESTARTS.
fn pod_row(o: &Value, now_s: i64) -> Vec<Value> {
    let statuses: &[Value] = o["status"]["containerStatuses"]
        .as_array()
        .map_or(&[], |v| v.as_slice());
    let ready = statuses.iter().filter(|c| c["ready"] == true).count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|c| c["restartCount"].as_i64())
        .sum();
    let waiting = statuses
        .iter()
        .find_map(|c| c["state"]["waiting"]["reason"].as_str());
    let status = waiting
        .or(o["status"]["phase"].as_str())
        .unwrap_or_default();
    vec![
        o["metadata"]["name"].clone(),
        json!(format!("{ready}/{}", statuses.len())),
        json!(status),
        json!(restarts),
        json!(since(&o["metadata"]["creationTimestamp"], now_s)),
    ]
}

fn event_row(o: &Value, now_s: i64) -> Vec<Value> {
    let involved = &o["involvedObject"];
    let kind = involved["kind"].as_str().unwrap_or_default().to_lowercase();
    vec![
        json!(since(&o["lastTimestamp"], now_s)),
        o["type"].clone(),
        o["reason"].clone(),
        json!(format!(
            "{kind}/{}",
            involved["name"].as_str().unwrap_or_default()
        )),
        o["message"].clone(),
    ]
}

fn columns(kind: &str) -> Option<Columns> {
    match kind {
        "Node" => Some((
            &[
                ("Name", "string"),
                ("Status", "string"),
                ("Roles", "string"),
                ("Age", "string"),
                ("Version", "string"),
            ],
            node_row,
        )),
        "ClusterOperator" => Some((
            &[
                ("Name", "string"),
                ("Version", "string"),
                ("Available", "string"),
                ("Progressing", "string"),
                ("Degraded", "string"),
                ("Since", "date"),
                ("Message", "string"),
            ],
            operator_row,
        )),
        "ClusterVersion" => Some((
            &[
                ("Name", "string"),
                ("Version", "string"),
                ("Available", "string"),
                ("Progressing", "string"),
                ("Since", "date"),
                ("Status", "string"),
            ],
            version_row,
        )),
        "Pod" => Some((
            &[
                ("Name", "string"),
                ("Ready", "string"),
                ("Status", "string"),
                ("Restarts", "integer"),
                ("Age", "string"),
            ],
            pod_row,
        )),
        "Event" => Some((
            &[
                ("Last Seen", "string"),
                ("Type", "string"),
                ("Reason", "string"),
                ("Object", "string"),
                ("Message", "string"),
            ],
            event_row,
        )),
        _ => None,
    }
}

/// Turns an object or a list of one of the kinds above into a Table; `None` for other kinds.
pub fn to_table(value: &Value, now_s: i64) -> Option<Value> {
    let kind = value["kind"].as_str()?;
    let (items, item_kind): (Vec<&Value>, &str) = match kind.strip_suffix("List") {
        Some(k) => (value["items"].as_array()?.iter().collect(), k),
        None => (vec![value], kind),
    };
    let (cols, row) = columns(item_kind)?;
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            json!({
                "cells": row(o, now_s),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"],
                },
            })
        })
        .collect();
    Some(json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": value["metadata"]["resourceVersion"]},
        "columnDefinitions": cols.iter().map(|(n, t)| column(n, t)).collect::<Vec<_>>(),
        "rows": rows,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(190), "3m10s");
        assert_eq!(human_duration(3600), "60m");
        assert_eq!(human_duration(4 * 3600 + 120), "4h2m");
        assert_eq!(human_duration(3 * 86400), "3d");
    }

    #[test]
    fn accept_header() {
        assert!(wants_table(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        )));
        assert!(!wants_table(Some("application/json")));
        assert!(!wants_table(None));
    }
}
