//! The node registers only once `api-int.<cluster>.<domain>` resolves through the node's own
//! resolver (here a hosts file): until then there is no node, no CSR, no removal of the
//! bootstrap etcd member and no cluster version, whatever else has happened.

mod common;

use std::time::Duration;

use common::*;

#[tokio::test]
async fn no_node_until_api_int_resolves() {
    let fx = Fixture::start_without_dns(&[]).await;
    fx.complete_bootstrap();
    let client = fx.client().await;
    poll("readyz ok", DEADLINE, || async {
        let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
        client.request_text(req).await.ok().filter(|t| t == "ok")
    })
    .await;
    // Long past the time every milestone would have been reached with DNS.
    let s = fx.running.app.config.schedule;
    let would_be_done = s.readyz_after_s
        + s.node_ready_delay_s
        + s.operators_available_delay_s
        + s.cluster_version_completed_delay_s
        + s.operators_settled_delay_s
        + 1.0;
    poll("the time everything would be done", DEADLINE, || async {
        (fx.running.app.elapsed() > would_be_done).then_some(())
    })
    .await;
    let nodes = get_json(&client, "/api/v1/nodes").await.unwrap();
    assert_eq!(nodes["items"], serde_json::json!([]), "{nodes}");
    let err = get_json(&client, "/api/v1/nodes/minisno")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err:?}"
    );
    let csrs = get_json(
        &client,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    )
    .await
    .unwrap();
    assert_eq!(csrs["items"], serde_json::json!([]));
    let etcd = get_json(&client, "/apis/operator.openshift.io/v1/etcds/cluster")
        .await
        .unwrap();
    assert_eq!(condition(&etcd, "EtcdBootstrapMemberRemoved"), None);
    let cv = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusterversions/version",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&cv, "Available"), "False");

    // The harness's /etc/hosts arrives: the node registers, and the rest follows.
    write_hosts(fx.dir.path(), true);
    let node = poll("the node registers", Duration::from_secs(5), || async {
        let nodes = get_json(&client, "/api/v1/nodes").await.ok()?;
        nodes["items"].as_array()?.first().cloned()
    })
    .await;
    assert_eq!(node["metadata"]["name"], "minisno");
    poll("the node Ready", DEADLINE, || async {
        let node = get_json(&client, "/api/v1/nodes/minisno").await.ok()?;
        (condition_status(&node, "Ready") == "True").then_some(())
    })
    .await;
    poll("the bootstrap member removed", DEADLINE, || async {
        let etcd = get_json(&client, "/apis/operator.openshift.io/v1/etcds/cluster")
            .await
            .ok()?;
        (condition_status(&etcd, "EtcdBootstrapMemberRemoved") == "True").then_some(())
    })
    .await;
    poll("ClusterVersion Available", DEADLINE, || async {
        let cv = get_json(
            &client,
            "/apis/config.openshift.io/v1/clusterversions/version",
        )
        .await
        .ok()?;
        (condition_status(&cv, "Available") == "True").then_some(())
    })
    .await;
    let csrs = get_json(
        &client,
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    )
    .await
    .unwrap();
    assert_eq!(csrs["items"].as_array().unwrap().len(), 2);
    fx.running.stop().await;
}
