//! The router without the network: response shapes, status codes, discovery documents.

mod common;

use common::*;
use minisno_apiserver::app::App;
use minisno_apiserver::router::route;
use minisno_apiserver::Schedule;
use serde_json::Value;

/// An app whose API is up at once and whose node has registered (api-int resolves) but is
/// not Ready for a long while.
fn app_with(faults: &[&str], install_config: &str) -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("pki"));
    let mut cfg = config(dir.path(), &pki, faults);
    cfg.schedule.readyz_after_s = 0.0;
    cfg.schedule.node_ready_delay_s = 1000.0;
    cfg.install_config_yaml = install_config.into();
    let app = App::new(cfg, None).unwrap();
    app.look_up_api_int();
    (dir, app)
}

fn app(faults: &[&str]) -> (tempfile::TempDir, App) {
    app_with(faults, INSTALL_CONFIG)
}

fn get(app: &App, path: &str) -> (u16, Value) {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let r = route(app, "GET", path, query, b"");
    assert_eq!(r.content_type, "application/json", "{path}");
    (r.code, serde_json::from_slice(&r.body).unwrap())
}

#[test]
fn discovery_documents() {
    let (_d, app) = app(&[]);
    let (code, v) = get(&app, "/api");
    assert_eq!((code, v["kind"].as_str()), (200, Some("APIVersions")));
    assert_eq!(v["versions"], serde_json::json!(["v1"]));
    let (_, v) = get(&app, "/api/v1");
    assert_eq!(v["kind"], "APIResourceList");
    assert_eq!(v["groupVersion"], "v1");
    let names: Vec<&str> = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["configmaps", "events", "namespaces", "nodes", "pods"]
    );
    let (_, v) = get(&app, "/apis/config.openshift.io");
    assert_eq!(v["kind"], "APIGroup");
    assert_eq!(
        v["preferredVersion"]["groupVersion"],
        "config.openshift.io/v1"
    );
    let (_, v) = get(&app, "/apis/config.openshift.io/v1");
    let co = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "clusteroperators")
        .unwrap()
        .clone();
    assert_eq!(co["kind"], "ClusterOperator");
    assert_eq!(co["namespaced"], false);
    assert_eq!(co["shortNames"], serde_json::json!(["co"]));
    let (_, v) = get(&app, "/apis/certificates.k8s.io/v1");
    assert!(v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "certificatesigningrequests/approval"));
    let (code, _) = get(&app, "/openapi/v2");
    assert_eq!(code, 404);
    let (code, _) = get(&app, "/openapi/v3");
    assert_eq!(code, 404);
}

#[test]
fn error_shapes() {
    let (_d, app) = app(&[]);
    let (code, v) = get(&app, "/no/such/path");
    assert_eq!(code, 404);
    assert_eq!(v["kind"], "Status");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["status"], "Failure");
    assert_eq!(v["reason"], "NotFound");
    assert_eq!(v["code"], 404);
    let (code, v) = get(&app, "/api/v1/namespaces/kube-system/configmaps/bootstrap");
    assert_eq!(code, 404);
    assert_eq!(v["message"], "configmaps \"bootstrap\" not found");
    assert_eq!(v["details"]["name"], "bootstrap");
    let r = route(&app, "POST", "/api/v1/nodes", None, b"{}");
    assert_eq!(r.code, 405);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["reason"], "MethodNotAllowed");
    let r = route(&app, "POST", "/version", None, b"");
    assert_eq!(r.code, 405);
    let r = route(
        &app,
        "POST",
        "/api/v1/namespaces/kube-system/configmaps",
        None,
        b"not json",
    );
    assert_eq!(r.code, 400);
    let r = route(
        &app,
        "POST",
        "/api/v1/namespaces/kube-system/configmaps",
        None,
        br#"{"metadata":{"name":"Bad_Name"}}"#,
    );
    assert_eq!(r.code, 422);
    let r = route(
        &app,
        "POST",
        "/api/v1/namespaces/kube-system/configmaps",
        None,
        br#"{"metadata":{"name":"x","namespace":"default"}}"#,
    );
    assert_eq!(r.code, 400);
}

#[test]
fn health_text_and_version() {
    let (_d, app) = app(&["api-never-ready"]);
    let r = route(&app, "GET", "/readyz", Some("verbose"), b"");
    assert_eq!(r.code, 503);
    assert!(r.content_type.starts_with("text/plain"));
    let body = String::from_utf8(r.body).unwrap();
    assert!(body.contains("[+]ping ok"), "{body}");
    assert!(body.contains("[-]etcd failed: reason withheld"), "{body}");
    assert!(body.trim_end().ends_with("readyz check failed"), "{body}");
    let (code, v) = get(&app, "/version");
    assert_eq!(code, 200);
    assert_eq!(v["gitVersion"], "v1.30.4-minisno");
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "30");
    let (code, v) = get(&app, "/api/v1/nodes");
    assert_eq!(code, 503);
    assert_eq!(
        v,
        serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"the server is currently unable to handle the request",
            "reason":"ServiceUnavailable","details":{},"code":503})
    );
}

#[test]
fn object_metadata_and_lists() {
    let (_d, app) = app(&[]);
    let (_, nodes) = get(&app, "/api/v1/nodes");
    assert_eq!(nodes["kind"], "NodeList");
    assert_eq!(nodes["apiVersion"], "v1");
    let node = &nodes["items"][0];
    assert_eq!(node["kind"], "Node");
    for f in ["name", "uid", "resourceVersion", "creationTimestamp"] {
        assert!(node["metadata"][f].is_string(), "{f}");
    }
    let (_, cos) = get(&app, "/apis/config.openshift.io/v1/clusteroperators");
    assert_eq!(cos["kind"], "ClusterOperatorList");
    assert_eq!(cos["apiVersion"], "config.openshift.io/v1");
    let co = &cos["items"][0];
    assert_eq!(co["kind"], "ClusterOperator");
    let cond = &co["status"]["conditions"][0];
    assert!(cond["lastTransitionTime"].as_str().unwrap().ends_with('Z'));
    let (_, cv) = get(&app, "/apis/config.openshift.io/v1/clusterversions/version");
    assert_eq!(cv["spec"]["channel"], "stable-4.17");
    assert!(cv["spec"]["clusterID"].as_str().unwrap().len() == 36);
    assert_eq!(cv["status"]["history"][0]["state"], "Partial");
    assert!(cv["status"]["history"][0]["completionTime"].is_null());
    assert_eq!(cv["status"]["history"][0]["verified"], false);
    let (_, ns) = get(&app, "/api/v1/namespaces");
    assert_eq!(ns["kind"], "NamespaceList");
    assert!(ns["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["metadata"]["name"] == "openshift-etcd"));
    let (code, _) = get(&app, "/apis/config.openshift.io/v1/clusterversions/other");
    assert_eq!(code, 404);
    let (_, list) = get(&app, "/apis/operator.openshift.io/v1/etcds");
    assert_eq!(list["kind"], "EtcdList");
}

#[test]
fn watch_field_selector_and_tables() {
    use minisno_apiserver::router::route_negotiated;
    let (_d, app) = app(&[]);
    let r = route(
        &app,
        "GET",
        "/apis/config.openshift.io/v1/clusterversions",
        Some("watch=true&fieldSelector=metadata.name%3Dversion"),
        b"",
    );
    assert_eq!(r.code, 405);
    let r = route_negotiated(
        &app,
        "GET",
        "/apis/config.openshift.io/v1/clusteroperators",
        Some("fieldSelector=metadata.name%3Ddns&limit=500"),
        None,
        b"",
    );
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["items"].as_array().unwrap().len(), 1);
    assert_eq!(v["items"][0]["metadata"]["name"], "dns");
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let r = route_negotiated(&app, "GET", "/api/v1/nodes", None, Some(accept), b"");
    let t: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["columnDefinitions"][1]["name"], "Status");
    assert_eq!(t["rows"][0]["cells"][0], "minisno");
    assert_eq!(t["rows"][0]["cells"][1], "NotReady");
    assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "minisno");
    // kinds without columns stay as they are
    let r = route_negotiated(&app, "GET", "/api/v1/namespaces", None, Some(accept), b"");
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["kind"], "NamespaceList");
}

#[test]
fn the_proxy_trusts_the_bundle_only_with_a_proxy_or_policy_always() {
    let without_proxy = INSTALL_CONFIG.replace(
        "proxy:\n  httpProxy: http://proxy.example.test:3128\n  noProxy: .example.test\n",
        "",
    );
    assert_ne!(without_proxy, INSTALL_CONFIG);
    let no_bundle = INSTALL_CONFIG.replace(
        "additionalTrustBundle: |\n  -----BEGIN CERTIFICATE-----\n  MIIBfake\n  -----END CERTIFICATE-----\n",
        "",
    );
    assert_ne!(no_bundle, INSTALL_CONFIG);
    for (ic, trusted) in [
        (INSTALL_CONFIG.to_string(), "user-ca-bundle"),
        (without_proxy.clone(), ""),
        (
            format!("{without_proxy}additionalTrustBundlePolicy: Proxyonly\n"),
            "",
        ),
        (
            format!("{without_proxy}additionalTrustBundlePolicy: Always\n"),
            "user-ca-bundle",
        ),
        (no_bundle.clone(), ""),
        (
            format!("{no_bundle}additionalTrustBundlePolicy: Always\n"),
            "",
        ),
    ] {
        let (_d, app) = app_with(&[], &ic);
        let (_, proxy) = get(&app, "/apis/config.openshift.io/v1/proxies/cluster");
        assert_eq!(proxy["spec"]["trustedCA"]["name"], trusted, "{ic}");
        // the bundle's configmap is there whenever there is a bundle
        let (code, cm) = get(
            &app,
            "/api/v1/namespaces/openshift-config/configmaps/user-ca-bundle",
        );
        if ic.contains("additionalTrustBundle: |") {
            assert_eq!(code, 200);
            assert!(cm["data"]["ca-bundle.crt"]
                .as_str()
                .unwrap()
                .contains("MIIBfake"));
        } else {
            assert_eq!(code, 404);
        }
    }
    // the proxy fields themselves are as before
    let (_d, app) = app_with(&[], &without_proxy);
    let (_, proxy) = get(&app, "/apis/config.openshift.io/v1/proxies/cluster");
    assert!(
        proxy["spec"].get("httpProxy").is_none() && proxy["status"] == serde_json::json!({}),
        "{proxy}"
    );
}

#[test]
fn no_node_and_no_csr_before_api_int_resolves() {
    let dir = tempfile::tempdir().unwrap();
    write_hosts(dir.path(), false);
    let pki = Pki::new(&dir.path().join("pki"));
    let mut cfg = config(dir.path(), &pki, &[]);
    cfg.schedule.readyz_after_s = 0.0;
    let app = App::new(cfg, None).unwrap();
    app.look_up_api_int();
    let (_, nodes) = get(&app, "/api/v1/nodes");
    assert_eq!(nodes["items"], serde_json::json!([]));
    let (code, _) = get(&app, "/api/v1/nodes/minisno");
    assert_eq!(code, 404);
    let (_, csrs) = get(
        &app,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    );
    assert_eq!(csrs["items"], serde_json::json!([]));
}

/// An app whose every milestone has come at once (all delays 0), with `faults`.
fn converged(faults: &[&str]) -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("pki"));
    let mut cfg = config(dir.path(), &pki, faults);
    cfg.schedule = Schedule::fast().scaled(0.0);
    let app = App::new(cfg, None).unwrap();
    app.look_up_api_int();
    (dir, app)
}

fn items(v: &Value) -> &Vec<Value> {
    v["items"].as_array().unwrap()
}

#[test]
fn a_healthy_clusters_pods_are_running_and_ready() {
    let (_d, app) = converged(&[]);
    let (code, pods) = get(&app, "/api/v1/pods");
    assert_eq!(code, 200);
    assert_eq!(
        (pods["kind"].as_str(), pods["apiVersion"].as_str()),
        (Some("PodList"), Some("v1"))
    );
    assert!(pods["metadata"]["resourceVersion"].is_string());
    assert!(items(&pods).len() > 33);
    for p in items(&pods) {
        assert_eq!(p["status"]["phase"], "Running", "{}", p["metadata"]["name"]);
        assert_eq!(p["status"]["containerStatuses"][0]["ready"], true);
        assert_eq!(p["status"]["containerStatuses"][0]["restartCount"], 0);
        assert_eq!(p["spec"]["nodeName"], "minisno");
        for f in ["name", "namespace", "uid", "creationTimestamp"] {
            assert!(p["metadata"][f].is_string(), "{f}");
        }
    }
    let (_, one) = get(&app, "/api/v1/namespaces/openshift-etcd/pods");
    assert_eq!(items(&one).len(), 1);
    assert_eq!(one["items"][0]["metadata"]["name"], "etcd-minisno");
    let (code, pod) = get(&app, "/api/v1/namespaces/openshift-etcd/pods/etcd-minisno");
    assert_eq!((code, pod["kind"].as_str()), (200, Some("Pod")));
    let (_, none) = get(&app, "/api/v1/namespaces/no-such/pods");
    assert_eq!(none["items"], serde_json::json!([]));
    let (code, _) = get(&app, "/api/v1/namespaces/openshift-etcd/pods/other");
    assert_eq!(code, 404);
}

#[test]
fn a_degraded_operators_namespaces_hold_a_crashlooping_pod() {
    let (_d, app) = converged(&["operator-degraded:ingress"]);
    let (_, cos) = get(
        &app,
        "/apis/config.openshift.io/v1/clusteroperators/ingress",
    );
    let namespaces: Vec<&str> = cos["status"]["relatedObjects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resource"] == "namespaces" && r["group"] == "")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        namespaces,
        [
            "openshift-ingress-operator",
            "openshift-ingress",
            "openshift-ingress-canary"
        ]
    );
    for ns in namespaces {
        let (_, pods) = get(&app, &format!("/api/v1/namespaces/{ns}/pods"));
        let p = &pods["items"][0];
        assert_eq!(p["metadata"]["namespace"], ns);
        let c = &p["status"]["containerStatuses"][0];
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff", "{ns}");
        assert!(c["restartCount"].as_i64().unwrap() > 0);
        assert_eq!(c["ready"], false);
        let term = &c["lastState"]["terminated"];
        assert_eq!(term["exitCode"], 1);
        assert!(term["message"]
            .as_str()
            .unwrap()
            .contains("operator-degraded:ingress"));
    }
    // the operator's status change is a Warning event in its namespace
    let (_, ev) = get(&app, "/api/v1/namespaces/openshift-ingress-operator/events");
    assert_eq!(ev["kind"], "EventList");
    assert!(items(&ev)
        .iter()
        .all(|e| e["metadata"]["namespace"] == "openshift-ingress-operator"));
    let warning = items(&ev)
        .iter()
        .find(|e| e["reason"] == "OperatorStatusChanged" && e["type"] == "Warning")
        .unwrap();
    assert_eq!(warning["involvedObject"]["kind"], "Deployment");
    assert_eq!(
        warning["source"]["component"],
        "ingress-operator-status-controller-statussyncer_ingress"
    );
    assert!(warning["count"].as_i64().unwrap() >= 1);
    for f in ["firstTimestamp", "lastTimestamp"] {
        assert!(warning[f].is_string(), "{f}");
    }
}

#[test]
fn events_of_all_namespaces_and_their_selectors_and_tables() {
    use minisno_apiserver::router::route_negotiated;
    let (_d, app) = converged(&[]);
    let (_, all) = get(&app, "/api/v1/events");
    let node = items(&all)
        .iter()
        .find(|e| e["reason"] == "NodeReady")
        .unwrap();
    assert_eq!(node["metadata"]["namespace"], "default");
    assert_eq!(node["involvedObject"]["kind"], "Node");
    assert_eq!(node["involvedObject"]["name"], "minisno");
    assert!(node["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("minisno."));
    for f in ["uid", "creationTimestamp", "resourceVersion"] {
        assert!(node["metadata"][f].is_string(), "{f}");
    }
    let names: std::collections::HashSet<&str> = items(&all)
        .iter()
        .map(|e| e["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), items(&all).len(), "event names are unique");
    let r = route_negotiated(
        &app,
        "GET",
        "/api/v1/events",
        Some("fieldSelector=involvedObject.kind%3DNode%2Creason%21%3DStarting"),
        None,
        b"",
    );
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(!items(&v).is_empty());
    assert!(items(&v)
        .iter()
        .all(|e| e["involvedObject"]["kind"] == "Node" && e["reason"] != "Starting"));
    let r = route_negotiated(
        &app,
        "GET",
        "/api/v1/pods",
        Some("fieldSelector=metadata.name%3Detcd-minisno"),
        None,
        b"",
    );
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(items(&v).len(), 1);
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let r = route_negotiated(
        &app,
        "GET",
        "/api/v1/namespaces/openshift-etcd/pods",
        None,
        Some(accept),
        b"",
    );
    let t: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["rows"][0]["cells"][0], "etcd-minisno");
    assert_eq!(t["rows"][0]["cells"][1], "1/1");
    assert_eq!(t["rows"][0]["cells"][2], "Running");
    let r = route_negotiated(&app, "GET", "/api/v1/events", None, Some(accept), b"");
    let t: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(t["columnDefinitions"][3]["name"], "Object");
    let r = route(&app, "GET", "/api/v1/events", Some("watch=1"), b"");
    assert_eq!(r.code, 405);
}

#[test]
fn no_pod_and_no_event_before_the_node_registers() {
    let dir = tempfile::tempdir().unwrap();
    write_hosts(dir.path(), false);
    let pki = Pki::new(&dir.path().join("pki"));
    let mut cfg = config(dir.path(), &pki, &["operator-degraded:ingress"]);
    cfg.schedule = Schedule::fast().scaled(0.0);
    let app = App::new(cfg, None).unwrap();
    app.look_up_api_int();
    for path in [
        "/api/v1/pods",
        "/api/v1/events",
        "/api/v1/namespaces/openshift-ingress-operator/pods",
        "/api/v1/namespaces/default/events",
    ] {
        let (code, v) = get(&app, path);
        assert_eq!((code, &v["items"]), (200, &serde_json::json!([])), "{path}");
    }
}
