//! Injected faults make the simulated cluster fail the way the real one would.
//! Instead of sleeping, each test waits for a later milestone of the server's own schedule
//! and then checks that the faulted one did not happen.

mod common;

use common::*;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

fn text(
    client: &kube::Client,
    path: &str,
) -> impl std::future::Future<Output = Result<String, kube::Error>> {
    let client = client.clone();
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    async move { client.request_text(req).await }
}

fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn api_never_ready_keeps_readyz_failing() {
    let fx = Fixture::start(&["api-never-ready"]).await;
    let client = fx.client().await;
    // livez follows the schedule and turns ok at readyz_after_s ...
    poll("livez ok", DEADLINE, || async {
        text(&client, "/livez").await.ok()
    })
    .await;
    // ... and once the whole schedule has run out, readyz still fails
    past_the_schedule(&fx).await;
    for path in ["/readyz", "/healthz"] {
        let err = text(&client, path).await.unwrap_err();
        assert_eq!(status_code(&err), Some(503), "{path}: {err:?}");
    }
    let err = text(&client, "/readyz?verbose").await.unwrap_err();
    assert_eq!(status_code(&err), Some(503));
    // every resource endpoint answers 503 ServiceUnavailable
    for path in [
        "/api/v1/nodes",
        "/apis/config.openshift.io/v1/clusterversions/version",
        "/api/v1/namespaces/kube-system/configmaps/cluster-config-v1",
        "/apis",
    ] {
        let err = get_json(&client, path).await.unwrap_err();
        match &err {
            kube::Error::Api(s) => {
                assert_eq!(s.code, 503, "{path}");
                assert_eq!(s.reason, "ServiceUnavailable");
                assert_eq!(
                    s.message,
                    "the server is currently unable to handle the request"
                );
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    // /version is still served
    assert!(client.apiserver_version().await.is_ok());
    fx.running.stop().await;
}

/// Waits until the whole schedule would have run its course, with room to spare.
async fn past_the_schedule(fx: &Fixture) {
    let s = fx.running.app.config.schedule;
    let end = s.readyz_after_s
        + s.node_ready_delay_s
        + s.etcd_bootstrap_removed_delay_s
        + s.operators_available_delay_s
        + s.cluster_version_completed_delay_s
        + s.operators_settled_delay_s
        + 4.0;
    poll("the end of the schedule", DEADLINE, || async {
        (fx.running.app.elapsed() > end).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_node_that_never_becomes_ready_stops_everything_after_the_configmap() {
    let fx = Fixture::start_bootstrapped(&["node-not-ready"]).await;
    let client = fx.client().await;
    past_the_schedule(&fx).await;
    // The node registered, and is not Ready, with the kubelet's own reason ...
    let node = get_json(&client, "/api/v1/nodes/minisno").await.unwrap();
    assert_eq!(condition_status(&node, "Ready"), "False");
    let ready = condition(&node, "Ready").unwrap();
    assert_eq!(ready["reason"], "KubeletNotReady");
    assert_eq!(ready["message"], "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: no CNI configuration file in /etc/kubernetes/cni/net.d/. Has your network provider started?");
    // ... the bootstrap member is still there (no condition at all) ...
    let etcd = get_json(&client, "/apis/operator.openshift.io/v1/etcds/cluster")
        .await
        .unwrap();
    assert_eq!(condition(&etcd, "EtcdBootstrapMemberRemoved"), None);
    // ... no operator is Available and the cluster version is not either
    let co = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusteroperators/kube-apiserver",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&co, "Available"), "False");
    let cv = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusterversions/version",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&cv, "Available"), "False");
    assert_eq!(condition_status(&cv, "Failing"), "False");
    assert_eq!(text(&client, "/readyz").await.unwrap(), "ok");
    fx.running.stop().await;
}

#[tokio::test]
async fn a_member_never_removed_keeps_the_condition_absent_and_the_cluster_version_waiting() {
    let fx = Fixture::start_bootstrapped(&["etcd-member-not-removed"]).await;
    let client = fx.client().await;
    past_the_schedule(&fx).await;
    let node = get_json(&client, "/api/v1/nodes/minisno").await.unwrap();
    assert_eq!(condition_status(&node, "Ready"), "True");
    let etcd = get_json(&client, "/apis/operator.openshift.io/v1/etcds/cluster")
        .await
        .unwrap();
    assert_eq!(
        condition(&etcd, "EtcdBootstrapMemberRemoved"),
        None,
        "{etcd}"
    );
    assert_eq!(condition_status(&etcd, "EtcdMembersAvailable"), "True");
    let cv = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusterversions/version",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&cv, "Available"), "False");
    assert_eq!(cv["status"]["history"][0]["state"], "Partial");
    fx.running.stop().await;
}

#[tokio::test]
async fn operator_faults() {
    let fx = Fixture::start_bootstrapped(&[
        "operator-degraded:ingress",
        "operator-unavailable:frobnicator",
        "boot-order:cdrom-first", // another component's fault: ignored here
    ])
    .await;
    assert_eq!(fx.running.app.ignored_faults, ["boot-order:cdrom-first"]);
    let client = fx.client().await;
    let cv_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("config.openshift.io", "v1", "ClusterVersion"),
            "clusterversions",
        ),
    );
    // the cluster version gives up on the blocked operators once its time has come
    let cv = poll("ClusterVersion Failing", DEADLINE, || async {
        let cv = cv_api.get("version").await.ok()?;
        (condition_status(&cv.data, "Failing") == "True").then_some(cv)
    })
    .await;
    assert_eq!(condition_status(&cv.data, "Available"), "False");
    assert_eq!(condition_status(&cv.data, "Progressing"), "True");
    let failing = condition(&cv.data, "Failing").unwrap();
    let message = failing["message"].as_str().unwrap();
    // Only the operator not Available blocks it: a Degraded one is reported by the CVO
    // (pkg/cvo/internal/operatorstatus.go) and does not fail the payload.
    assert_eq!(message, "Cluster operator frobnicator is not available");
    assert_eq!(failing["reason"], "ClusterOperatorNotAvailable");
    assert_eq!(cv.data["status"]["history"][0]["state"], "Partial");
    assert!(cv.data["status"]["history"][0]["completionTime"].is_null());
    let progressing = condition(&cv.data, "Progressing").unwrap();
    assert!(progressing["message"]
        .as_str()
        .unwrap()
        .starts_with("Unable to apply 4.17.0-minisno"));
    // ingress is Available but Degraded, and the extra operator exists and is unavailable
    let ingress = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusteroperators/ingress",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&ingress, "Available"), "True");
    assert_eq!(condition_status(&ingress, "Degraded"), "True");
    assert_eq!(
        condition(&ingress, "Degraded").unwrap()["reason"],
        "IngressControllerDegraded"
    );
    let fro = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusteroperators/frobnicator",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&fro, "Available"), "False");
    // and the API itself is healthy
    assert_eq!(text(&client, "/readyz").await.unwrap(), "ok");
    fx.running.stop().await;
}

/// A degraded operator while the install runs is only reported by the real CVO
/// (pkg/cvo/internal/operatorstatus.go): ClusterVersion completes, and the operator says it is
/// Degraded on its own object.
#[tokio::test]
async fn a_single_degraded_operator_does_not_keep_the_cluster_version_from_completing() {
    let fx = Fixture::start_bootstrapped(&["operator-degraded:ingress"]).await;
    let client = fx.client().await;
    let cv = poll("ClusterVersion Available", DEADLINE, || async {
        let cv = get_json(
            &client,
            "/apis/config.openshift.io/v1/clusterversions/version",
        )
        .await
        .ok()?;
        (condition_status(&cv, "Available") == "True").then_some(cv)
    })
    .await;
    assert_eq!(condition_status(&cv, "Failing"), "False");
    assert_eq!(condition_status(&cv, "Progressing"), "False");
    assert_eq!(cv["status"]["history"][0]["state"], "Completed");
    let ingress = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusteroperators/ingress",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&ingress, "Degraded"), "True");
    assert_eq!(condition_status(&ingress, "Available"), "True");
    fx.running.stop().await;
}

#[tokio::test]
async fn network_type_drift_reports_the_other_network_type_in_status_only() {
    for (faults, deployed) in [
        (&[][..], "OVNKubernetes"),
        (&["network-type-drift"][..], "OpenShiftSDN"),
    ] {
        let fx = Fixture::start(faults).await;
        let client = fx.client().await;
        let net = get_json(&client, "/apis/config.openshift.io/v1/networks/cluster")
            .await
            .unwrap();
        // spec is what the installer wrote from the install-config; status is what runs
        assert_eq!(net["spec"]["networkType"], "OVNKubernetes", "{faults:?}");
        assert_eq!(net["status"]["networkType"], deployed, "{faults:?}");
        // nothing else gives it away: the stored install-config still says what was asked
        let cc = get_json(
            &client,
            "/api/v1/namespaces/kube-system/configmaps/cluster-config-v1",
        )
        .await
        .unwrap();
        assert!(cc["data"]["install-config"]
            .as_str()
            .unwrap()
            .contains("networkType: OVNKubernetes"));
        fx.running.stop().await;
    }
}
