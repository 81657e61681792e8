//! Maps a request (method, path, query, body) to the resource function that answers it.

use crate::app::App;
use crate::config::Fault;
use crate::resources::health::Check;
use crate::resources::openshift::Singleton;
use crate::resources::{
    certificates, core, discovery, events, health, openshift, pods, tables, Reply,
};

fn has_flag(query: Option<&str>, flag: &str) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            k == flag && v != "false" && v != "0"
        })
    })
}

/// Answers one request, as a Table when the client asks for one and the kind has columns.
pub fn route_negotiated(
    app: &App,
    method: &str,
    path: &str,
    query: Option<&str>,
    accept: Option<&str>,
    body: &[u8],
) -> Reply {
    let reply = route(app, method, path, query, body);
    if method != "GET" || reply.code != 200 {
        return reply;
    }
    let reply = match field_selector(query) {
        Some(terms) => filter_list(reply, &terms),
        None => reply,
    };
    if !tables::wants_table(accept) {
        return reply;
    }
    let now_s = app.first_start_ms.div_euclid(1000) + app.elapsed() as i64;
    serde_json::from_slice(&reply.body)
        .ok()
        .and_then(|v| tables::to_table(&v, now_s))
        .map(|t| Reply::json(200, &t))
        .unwrap_or(reply)
}

/// `%3D` and the like of a query value, and `+` as a space.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One term of a field selector: `path=value`, `path==value` or `path!=value`.
#[derive(Debug, PartialEq)]
struct Term {
    path: String,
    value: String,
    equal: bool,
}

/// `fieldSelector=metadata.name=X` (what kubectl wait and informers send), or several terms
/// joined by commas (`involvedObject.kind=Node,type=Warning`, `spec.nodeName=n`), URL-decoded.
fn field_selector(query: Option<&str>) -> Option<Vec<Term>> {
    let value = query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("fieldSelector="))?;
    let decoded = percent_decode(value);
    let terms = decoded
        .split(',')
        .filter(|t| !t.is_empty())
        .filter_map(|t| {
            let (path, value, equal) = if let Some((p, v)) = t.split_once("!=") {
                (p, v, false)
            } else {
                let (p, v) = t.split_once('=')?;
                (p, v.strip_prefix('=').unwrap_or(v), true)
            };
            Some(Term {
                path: path.trim().to_string(),
                value: value.trim().to_string(),
                equal,
            })
        })
        .collect();
    Some(terms)
}

/// The field at a dotted path as a selector compares it: a missing field is the empty string
/// (as the apiserver's field sets have it), a number or a boolean its text.
fn field(item: &serde_json::Value, path: &str) -> String {
    let v = path.split('.').fold(item, |v, k| &v[k]);
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Keeps the list's items every term matches. The real apiserver knows a few fields per kind
/// and refuses others; this one reads any path of the object, which answers the same for the
/// fields the real one knows.
fn filter_list(reply: Reply, terms: &[Term]) -> Reply {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&reply.body) else {
        return reply;
    };
    match v.get_mut("items").and_then(|i| i.as_array_mut()) {
        Some(items) => items.retain(|o| {
            terms
                .iter()
                .all(|t| (field(o, &t.path) == t.value) == t.equal)
        }),
        None => return reply,
    }
    Reply::json(200, &v)
}

/// Answers one request.
pub fn route(app: &App, method: &str, path: &str, query: Option<&str>, body: &[u8]) -> Reply {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let verbose = has_flag(query, "verbose");

    // health and version first: they are served whatever the faults
    match segs.as_slice() {
        ["readyz", ..] | ["livez", ..] | ["healthz", ..] | ["version"] if method != "GET" => {
            return Reply::method_not_allowed(method)
        }
        ["readyz"] => return health::health(app, Check::Readyz, verbose),
        ["livez"] => return health::health(app, Check::Livez, verbose),
        ["healthz"] => return health::health(app, Check::Healthz, verbose),
        ["version"] => return health::version(),
        _ => {}
    }
    if app.faults.has(&Fault::ApiNeverReady) {
        return Reply::unavailable();
    }
    if method == "GET" && has_flag(query, "watch") {
        return Reply::status(
            405,
            "MethodNotAllowed",
            "minisno-apiserver (a test fixture) does not serve watches; poll with GET instead",
        );
    }

    let get = |f: &dyn Fn() -> Reply| {
        if method == "GET" {
            f()
        } else {
            Reply::method_not_allowed(method)
        }
    };

    match segs.as_slice() {
        ["api"] => get(&discovery::api_versions),
        ["api", "v1"] => get(&|| discovery::resource_list(&discovery::CORE_V1)),
        ["api", "v1", "nodes"] => get(&|| core::list_nodes(app)),
        ["api", "v1", "nodes", name] => get(&|| core::get_node(app, name)),
        ["api", "v1", "namespaces"] => get(&|| core::list_namespaces(app)),
        ["api", "v1", "namespaces", ns] => get(&|| core::get_namespace(app, ns)),
        ["api", "v1", "events"] => get(&|| events::list_events(app, None)),
        ["api", "v1", "namespaces", ns, "events"] => get(&|| events::list_events(app, Some(ns))),
        ["api", "v1", "namespaces", ns, "events", name] => {
            get(&|| events::get_event(app, ns, name))
        }
        ["api", "v1", "pods"] => get(&|| pods::list_pods(app, None)),
        ["api", "v1", "namespaces", ns, "pods"] => get(&|| pods::list_pods(app, Some(ns))),
        ["api", "v1", "namespaces", ns, "pods", name] => get(&|| pods::get_pod(app, ns, name)),
        ["api", "v1", "configmaps"] => get(&|| core::list_configmaps(app, None)),
        ["api", "v1", "namespaces", ns, "configmaps"] => match method {
            "GET" => core::list_configmaps(app, Some(ns)),
            "POST" => core::create_configmap(app, ns, body),
            _ => Reply::method_not_allowed(method),
        },
        ["api", "v1", "namespaces", ns, "configmaps", name] => match method {
            "GET" => core::get_configmap(app, ns, name),
            "PUT" => core::replace_configmap(app, ns, name, body),
            "DELETE" => core::delete_configmap(app, ns, name),
            _ => Reply::method_not_allowed(method),
        },
        ["apis"] => get(&discovery::group_list),
        ["apis", group] => match discovery::find_group(group) {
            Some(gv) => get(&|| discovery::group(gv)),
            None => Reply::no_route(),
        },
        ["apis", group, version] => match discovery::find_group_version(group, version) {
            Some(gv) => get(&|| discovery::resource_list(gv)),
            None => Reply::no_route(),
        },
        ["apis", "config.openshift.io", "v1", "clusterversions"] => {
            get(&|| openshift::list_cluster_versions(app))
        }
        ["apis", "config.openshift.io", "v1", "clusterversions", name] => {
            get(&|| openshift::get_cluster_version(app, name))
        }
        ["apis", "config.openshift.io", "v1", "clusteroperators"] => {
            get(&|| openshift::list_cluster_operators(app))
        }
        ["apis", "config.openshift.io", "v1", "clusteroperators", name] => {
            get(&|| openshift::get_cluster_operator(app, name))
        }
        ["apis", "certificates.k8s.io", "v1", "certificatesigningrequests"] => {
            get(&|| certificates::list(app))
        }
        ["apis", "certificates.k8s.io", "v1", "certificatesigningrequests", name] => {
            get(&|| certificates::get(app, name))
        }
        ["apis", "certificates.k8s.io", "v1", "certificatesigningrequests", name, "approval"] => {
            match method {
                "GET" => certificates::get(app, name),
                // PUT replaces the conditions; a merge or strategic patch carries the same
                // `status.conditions`, so both are read the same way
                "PUT" | "PATCH" => certificates::approve(app, name, body),
                _ => Reply::method_not_allowed(method),
            }
        }
        ["apis", group, "v1", resource] => match Singleton::from_resource(group, resource) {
            Some(s) => get(&|| s.list(app)),
            None => Reply::no_route(),
        },
        ["apis", group, "v1", resource, name] => match Singleton::from_resource(group, resource) {
            Some(s) => get(&|| s.get(app, group, resource, name)),
            None => Reply::no_route(),
        },
        _ => Reply::no_route(),
    }
}
