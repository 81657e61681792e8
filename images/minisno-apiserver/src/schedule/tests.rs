use super::*;

fn faults(names: &[&str]) -> Faults {
    Faults::parse(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).0
}

fn status(conds: &[Cond], t: &str) -> &'static str {
    conds.iter().find(|c| c.type_ == t).unwrap().status
}

/// api-int resolves at `resolved`, the bootstrap configmap completes at `complete`.
fn facts(resolved: Option<f64>, complete: Option<f64>) -> Facts {
    Facts {
        api_int_resolved_at: resolved,
        bootstrap_complete_at: complete,
        ..Facts::default()
    }
}

const REMOVED: Option<&str> = Some("EtcdBootstrapMemberRemoved");

#[test]
fn the_milestones_follow_their_causes() {
    let s = Schedule::fast();
    let t = Timeline::new(&s, &faults(&[]), &facts(Some(1.0), Some(4.0)));
    // The node registers when the API is up (3 s), though api-int resolved at 1 s.
    assert_eq!(t.readyz, Some(3.0));
    assert_eq!(t.node_registered, Some(3.0));
    assert_eq!(t.node_ready, Some(5.0));
    // Removal waits for both the node (5 s) and the configmap (4 s).
    assert_eq!(t.etcd_removed, Some(6.0));
    assert_eq!(t.operators_available, Some(7.0));
    let last = 7.0 + (t.operators - 1) as f64 * t.step;
    assert_eq!(t.cluster_version_due, Some(last + 2.0));
    assert_eq!(t.operators_settled, Some(last + 4.0));
    let names: Vec<_> = t
        .milestones(100.0, &faults(&[]))
        .iter()
        .map(|m| m.0)
        .collect();
    assert_eq!(
        names,
        [
            "readyz ok",
            "node registered",
            "node Ready",
            "etcd bootstrap member removed",
            "operators available",
            "cluster version completed",
            "operators settled"
        ]
    );
}

#[test]
fn without_dns_for_api_int_nothing_after_the_api_comes() {
    let s = Schedule::fast();
    let t = Timeline::new(&s, &faults(&[]), &facts(None, Some(4.0)));
    assert_eq!(t.node_registered, None);
    assert!(!t.node_exists(1e6));
    assert_eq!(
        (t.node_ready, t.etcd_removed, t.cluster_version_due),
        (None, None, None)
    );
    let names: Vec<_> = t
        .milestones(1e6, &faults(&[]))
        .iter()
        .map(|m| m.0)
        .collect();
    assert_eq!(names, ["readyz ok"]);
    let cv = cluster_version(1e6, &t, &faults(&[]), "4.17.0");
    assert_eq!(status(&cv.conditions, "Available"), "False");
    let p = cv
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert!(
        p.message.contains("797 of 886 done (89% complete)"),
        "{}",
        p.message
    );
    assert!(etcd_conditions(1e6, &t, REMOVED)
        .iter()
        .all(|c| c.type_ != "EtcdBootstrapMemberRemoved"));
}

#[test]
fn the_bootstrap_member_is_removed_only_after_the_node_is_ready_and_the_configmap_complete() {
    let s = Schedule::fast();
    let f = faults(&[]);
    // No configmap yet: the node goes Ready, the member stays.
    let t = Timeline::new(&s, &f, &facts(Some(0.0), None));
    assert_eq!(t.node_ready, Some(5.0));
    assert_eq!(t.etcd_removed, None);
    assert_eq!(t.cluster_version_due, None);
    // The configmap long before the node: removal follows the node.
    let t = Timeline::new(&s, &f, &facts(Some(10.0), Some(3.5)));
    assert_eq!(t.etcd_removed, Some(13.0));
    // The node before the configmap: removal follows the configmap.
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(20.0)));
    assert_eq!(t.etcd_removed, Some(21.0));
    assert!(t.cluster_version_due.unwrap() >= 21.0 + s.cluster_version_completed_delay_s);
}

#[test]
fn before_4_12_the_bootstrap_member_is_removed_without_the_configmap() {
    let s = Schedule::fast();
    let f = faults(&[]);
    let old = Facts {
        no_bootstrap_configmap: true,
        ..facts(Some(0.0), None)
    };
    let t = Timeline::new(&s, &f, &old);
    assert_eq!(t.node_ready, Some(5.0));
    assert_eq!(t.etcd_removed, Some(6.0));
    assert!(t.cluster_version_due.is_some());
    // The fault still holds it.
    let t = Timeline::new(&s, &faults(&["etcd-member-not-removed"]), &old);
    assert_eq!(t.etcd_removed, None);
}

#[test]
fn the_removal_condition_is_absent_until_true() {
    let s = Schedule::fast();
    let t = Timeline::new(&s, &faults(&[]), &facts(Some(0.0), Some(0.0)));
    let names = |e: f64, n: Option<&'static str>| -> Vec<&str> {
        etcd_conditions(e, &t, n).iter().map(|c| c.type_).collect()
    };
    assert!(!names(5.9, REMOVED).contains(&"EtcdBootstrapMemberRemoved"));
    let c = etcd_conditions(6.0, &t, REMOVED);
    let removed = c
        .iter()
        .find(|c| c.type_ == "EtcdBootstrapMemberRemoved")
        .unwrap();
    assert_eq!((removed.status, removed.since_s), ("True", 6.0));
    // Other releases name it differently, or not at all.
    assert!(names(6.0, Some("EtcdBoostrapMemberRemoved")).contains(&"EtcdBoostrapMemberRemoved"));
    assert_eq!(names(6.0, None).len(), 3);
    // The fault keeps it absent forever, and the cluster version never completes.
    let f = faults(&["etcd-member-not-removed"]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    assert_eq!(etcd_conditions(1e6, &t, REMOVED).len(), 3);
    assert_eq!(
        status(&cluster_version(1e6, &t, &f, "v").conditions, "Available"),
        "False"
    );
}

#[test]
fn node_not_ready_registers_but_stays_not_ready() {
    let s = Schedule::fast();
    let f = faults(&["node-not-ready"]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    assert!(t.node_exists(3.0));
    let ready = node_conditions(1e6, &t)
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status, ready.reason.as_str()),
        ("False", "KubeletNotReady")
    );
    assert!(ready.message.starts_with("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: no CNI configuration file in /etc/kubernetes/cni/net.d/. Has your network provider started?"), "{}", ready.message);
    assert_eq!(t.etcd_removed, None);
}

#[test]
fn readiness() {
    let s = Schedule::fast();
    let t = Timeline::new(&s, &faults(&[]), &Facts::default());
    assert!(!t.api_ready(2.9) && t.api_ready(3.0));
    let t = Timeline::new(
        &s,
        &faults(&["api-never-ready"]),
        &facts(Some(0.0), Some(0.0)),
    );
    assert!(!t.api_ready(1e6));
    assert_eq!(t.node_registered, None);
    assert!(api_live(3.0, &s));
}

#[test]
fn operators_timeline() {
    let s = Schedule::fast();
    let f = faults(&[]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    let at = |e: f64, i: usize| operator_conditions("x", i, e, &t, &f, "4.17.0");
    assert_eq!(status(&at(6.9, 0), "Available"), "False");
    assert_eq!(status(&at(7.0, 0), "Available"), "True");
    assert_eq!(status(&at(7.0, 0), "Progressing"), "True");
    assert_eq!(status(&at(7.0, t.operators - 1), "Available"), "False");
    let late = at(100.0, t.operators - 1);
    assert_eq!(status(&late, "Available"), "True");
    assert_eq!(status(&late, "Progressing"), "False");
    assert_eq!(status(&late, "Degraded"), "False");
    let p = late.iter().find(|c| c.type_ == "Progressing").unwrap();
    assert!(p.since_s > t.cluster_version_due.unwrap(), "{p:?}");
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
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    let ing = operator_conditions("ingress", 12, 100.0, &t, &f, "v");
    assert_eq!(status(&ing, "Degraded"), "True");
    assert_eq!(status(&ing, "Available"), "True");
    assert_eq!(
        ing.iter().find(|c| c.type_ == "Degraded").unwrap().reason,
        "IngressControllerDegraded"
    );
    let fro = operator_conditions("frobnicator", names.len() - 1, 100.0, &t, &f, "v");
    assert_eq!(status(&fro, "Available"), "False");
    assert_eq!(status(&fro, "Progressing"), "True");
    let milestones: Vec<_> = t.milestones(1e6, &f).iter().map(|m| m.0).collect();
    assert!(
        !milestones.contains(&"cluster version completed")
            && !milestones.contains(&"operators available")
    );
}

#[test]
fn cluster_version_timeline() {
    let s = Schedule::fast();
    let f = faults(&[]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    let due = t.cluster_version_due.unwrap();
    let v = cluster_version(due / 2.0, &t, &f, "4.17.0-minisno");
    assert_eq!(v.completed_at, None);
    let p = v
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert!(
        p.message
            .starts_with("Working towards 4.17.0-minisno: 443 of 886 done (50% complete)"),
        "{}",
        p.message
    );
    let v = cluster_version(due, &t, &f, "4.17.0-minisno");
    assert_eq!(v.completed_at, Some(due));
    assert_eq!(status(&v.conditions, "Available"), "True");
    assert_eq!(status(&v.conditions, "Progressing"), "False");
    assert_eq!(status(&v.conditions, "Failing"), "False");
}

#[test]
fn cluster_version_fault() {
    let s = Schedule::fast();
    let f = faults(&["operator-degraded:ingress"]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    let v = cluster_version(100.0, &t, &f, "4.17.0-minisno");
    assert_eq!(v.completed_at, None);
    assert_eq!(status(&v.conditions, "Available"), "False");
    assert_eq!(status(&v.conditions, "Progressing"), "True");
    let failing = v.conditions.iter().find(|c| c.type_ == "Failing").unwrap();
    assert_eq!(
        (failing.status, failing.message.as_str()),
        ("True", "Cluster operator ingress is degraded")
    );
    let f = faults(&["operator-unavailable:console"]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)));
    let v = cluster_version(100.0, &t, &f, "x");
    let failing = v.conditions.iter().find(|c| c.type_ == "Failing").unwrap();
    assert_eq!(failing.message, "Cluster operator console is not available");
    assert_eq!(camel("kube-apiserver"), "KubeApiserver");
}

#[test]
fn generation_grows_with_each_milestone() {
    let s = Schedule::fast();
    let t = Timeline::new(&s, &faults(&[]), &facts(Some(0.0), Some(0.0)));
    assert_eq!(t.generation(0.0), 1);
    assert_eq!(t.generation(3.0), 3);
    assert_eq!(t.generation(1e6), 8);
}

#[test]
fn events_come_in_time_order_as_the_timeline_advances() {
    let s = Schedule::fast();
    let f = faults(&["operator-degraded:ingress"]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(4.0)));
    // nothing before the node registers (3 s)
    assert!(events(2.9, &t, &f, "4.17.0", "n", 1).is_empty());
    let mut seen = 0;
    for elapsed in [3.0, 5.0, 7.0, 20.0, 60.0] {
        let ev = events(elapsed, &t, &f, "4.17.0", "n", 1);
        assert!(ev.len() >= seen, "events never disappear");
        seen = ev.len();
        assert!(ev.windows(2).all(|w| w[0].first_s <= w[1].first_s));
        assert!(ev
            .iter()
            .all(|e| e.first_s <= elapsed && e.last_s <= elapsed));
    }
    let reasons = |elapsed: f64| -> Vec<String> {
        events(elapsed, &t, &f, "4.17.0", "n", 1)
            .iter()
            .filter(|e| e.involved.kind == "Node")
            .map(|e| e.reason.clone())
            .collect()
    };
    assert!(reasons(3.0).contains(&"RegisteredNode".to_string()));
    assert!(!reasons(4.9).contains(&"NodeReady".to_string()));
    assert_eq!(reasons(5.0).last().unwrap(), "NodeReady");
    // the degraded operator's status change is a Warning in its own namespace
    let ev = events(60.0, &t, &f, "4.17.0", "n", 1);
    let degraded = ev
        .iter()
        .find(|e| e.message.contains("Degraded changed from False to True"))
        .unwrap();
    assert_eq!(
        (degraded.type_, degraded.namespace.as_str()),
        ("Warning", "openshift-ingress-operator")
    );
    assert_eq!(degraded.involved.name, "ingress-operator");
    // its pods back off, counted up at every restart
    let backoff = ev.iter().find(|e| e.reason == "BackOff").unwrap();
    assert!(backoff.count > 1 && backoff.last_s > backoff.first_s);
    // a healthy operator's changes are Normal
    let dns: Vec<_> = ev
        .iter()
        .filter(|e| e.namespace == "openshift-dns-operator" && e.reason == "OperatorStatusChanged")
        .collect();
    assert_eq!(dns.len(), 3, "first status, Available, settled");
    assert!(dns.iter().all(|e| e.type_ == "Normal"));
    assert!(dns[1]
        .message
        .contains("Available changed from False to True"));
}

#[test]
fn pods_follow_the_node_and_their_operator() {
    let s = Schedule::fast();
    let f = faults(&["operator-unavailable:etcd"]);
    let t = Timeline::new(&s, &f, &facts(Some(0.0), Some(4.0)));
    assert!(pods(2.9, &t, &f, "n", 1).is_empty());
    // registered, not Ready: every pod waits for its container
    let p = pods(3.0, &t, &f, "n", 1);
    assert!(p
        .iter()
        .all(|p| matches!(p.phase, PodPhase::Creating { .. })));
    let later = pods(100.0, &t, &f, "n", 1);
    let etcd = later.iter().find(|p| p.name == "etcd-n").unwrap();
    assert!(matches!(etcd.phase, PodPhase::CrashLooping { restarts, .. } if restarts > 1));
    let dns = later
        .iter()
        .find(|p| p.workload.namespace == "openshift-dns")
        .unwrap();
    assert!(matches!(
        dns.phase,
        PodPhase::Running {
            ready_at: Some(_),
            ..
        }
    ));
    assert!(dns.name.starts_with("dns-default-") && dns.name.len() == "dns-default-".len() + 5);
    assert_eq!(
        pod_name(&later[0].workload, "n", 1),
        later[0].name,
        "stable names"
    );
    assert_eq!(
        operator_namespaces("kube-apiserver"),
        [
            "openshift-kube-apiserver-operator",
            "openshift-kube-apiserver"
        ]
    );
    assert_eq!(operator_namespaces("made-up"), ["openshift-made-up"]);
}

fn cond<'a>(conds: &'a [Cond], t: &str) -> &'a Cond {
    conds.iter().find(|c| c.type_ == t).unwrap()
}

/// The three route checks failing as the pods' DNS answered NXDOMAIN; `resolved` (if any): when
/// every host resolved after all.
fn failing_routes(resolved: Option<f64>) -> Facts {
    let mut f = facts(Some(0.0), Some(0.0));
    for (i, c) in ROUTE_CHECKS.iter().enumerate() {
        let host = c.host("sno", "example.test");
        f.routes.failure[i] = Some(RouteFailure {
            error: format!("lookup {host} on 172.30.0.10:53: no such host"),
            host,
        });
        f.routes.resolved_at[i] = resolved;
    }
    f
}

#[test]
fn operators_whose_routes_do_not_resolve_say_so_as_the_real_ones_do() {
    let s = Schedule::fast();
    let f = faults(&[]);
    let t = Timeline::new(&s, &f, &failing_routes(None));
    let names = operator_names(&f);
    let at = |op: &str| {
        let i = names.iter().position(|n| n == op).unwrap();
        operator_conditions(op, i, 1e6, &t, &f, "4.17.0")
    };
    let auth = at("authentication");
    let a = cond(&auth, "Available");
    assert_eq!(
        (a.status, a.reason.as_str()),
        (
            "False",
            "OAuthServerRouteEndpointAccessibleController_EndpointUnavailable"
        )
    );
    assert_eq!(a.message, "OAuthServerRouteEndpointAccessibleControllerAvailable: Get \"https://oauth-openshift.apps.sno.example.test/healthz\": dial tcp: lookup oauth-openshift.apps.sno.example.test on 172.30.0.10:53: no such host (this is likely result of malfunctioning DNS server)");
    let d = cond(&auth, "Degraded");
    assert_eq!(
        (d.status, d.reason.as_str()),
        (
            "True",
            "OAuthServerRouteEndpointAccessibleController_SyncError"
        )
    );
    assert!(d.message.starts_with("OAuthServerRouteEndpointAccessibleControllerDegraded: Get \"https://oauth-openshift.apps.sno.example.test/healthz\": dial tcp: lookup "));
    let console = at("console");
    let a = cond(&console, "Available");
    assert_eq!(
        (a.status, a.reason.as_str()),
        ("False", "RouteHealth_FailedGet")
    );
    assert_eq!(a.message, "RouteHealthAvailable: failed to GET route (https://console-openshift-console.apps.sno.example.test/health): Get \"https://console-openshift-console.apps.sno.example.test/health\": dial tcp: lookup console-openshift-console.apps.sno.example.test on 172.30.0.10:53: no such host");
    assert_eq!(status(&console, "Degraded"), "False");
    // The ingress operator stays Available; its canary makes it Degraded.
    let ingress = at("ingress");
    assert_eq!(status(&ingress, "Available"), "True");
    let d = cond(&ingress, "Degraded");
    assert_eq!((d.status, d.reason.as_str()), ("True", "IngressDegraded"));
    assert!(d.message.starts_with("The \"default\" ingress controller reports Degraded=True: DegradedConditions: One or more other status conditions indicate a degraded state: CanaryChecksSucceeding=False (CanaryChecksRepetitiveFailures: Canary route checks for the default ingress controller are failing. Last 1 error messages:\nerror sending canary HTTP request: DNS error: Get \"https://canary-openshift-ingress-canary.apps.sno.example.test\": dial tcp: lookup canary-openshift-ingress-canary.apps.sno.example.test on 172.30.0.10:53: no such host"), "{}", d.message);
    // The others are not touched, and nothing fails before its operator would be Available.
    assert_eq!(status(&at("dns"), "Available"), "True");
    let early = operator_conditions("authentication", 0, 0.5, &t, &f, "4.17.0");
    assert_eq!(cond(&early, "Available").reason, "Initializing");
    // The cluster version cannot complete: it names the three.
    let v = cluster_version(1e6, &t, &f, "4.17.0");
    assert_eq!(v.completed_at, None);
    assert_eq!(cond(&v.conditions, "Failing").message, "Multiple errors are preventing progress:\n* Cluster operator authentication is not available\n* Cluster operator console is not available\n* Cluster operator ingress is degraded");
    let milestones: Vec<_> = t.milestones(1e6, &f).iter().map(|m| m.0).collect();
    assert!(
        !milestones.contains(&"operators available"),
        "{milestones:?}"
    );
    assert!(!milestones.contains(&"cluster version completed"));
}

#[test]
fn a_route_that_resolves_late_holds_its_operator_and_the_version_until_then() {
    let s = Schedule::fast();
    let f = faults(&[]);
    let due = Timeline::new(&s, &f, &facts(Some(0.0), Some(0.0)))
        .cluster_version_due
        .unwrap();
    let late = due + 50.0;
    let t = Timeline::new(&s, &f, &failing_routes(Some(late)));
    let before = operator_conditions("authentication", 0, late - 1.0, &t, &f, "v");
    assert_eq!(status(&before, "Available"), "False");
    let after = operator_conditions("authentication", 0, late + 1.0, &t, &f, "v");
    let a = cond(&after, "Available");
    assert_eq!((a.status, a.since_s), ("True", late));
    assert_eq!(status(&after, "Degraded"), "False");
    assert_eq!(cluster_version(late - 1.0, &t, &f, "v").completed_at, None);
    assert_eq!(
        cluster_version(late + 1.0, &t, &f, "v").completed_at,
        Some(late)
    );
    let milestones = t.milestones(1e6, &f);
    let completed = milestones
        .iter()
        .find(|m| m.0 == "cluster version completed");
    assert_eq!(completed.map(|m| m.1), Some(late));
    // A route that resolved at once, before its operator's time, changes nothing.
    let mut quick = facts(Some(0.0), Some(0.0));
    quick.routes.resolved_at = [Some(0.1); 3];
    assert_eq!(
        cluster_version(1e6, &Timeline::new(&s, &f, &quick), &f, "v").completed_at,
        Some(due)
    );
}
