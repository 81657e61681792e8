//! The etcd operator is causal: it removes the bootstrap member only after the node is Ready and
//! the bootstrap configmap says complete, reports the removal only ever as True (the condition
//! is absent before), under the name its release gives it; the cluster version completes only
//! after the removal.

mod common;

use common::*;

async fn etcd(client: &kube::Client) -> serde_json::Value {
    get_json(client, "/apis/operator.openshift.io/v1/etcds/cluster")
        .await
        .unwrap()
}

fn condition_types(obj: &serde_json::Value) -> Vec<String> {
    obj["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_bootstrap_member_waits_for_the_node_and_the_configmap() {
    let fx = Fixture::start(&[]).await;
    let client = fx.client().await;
    poll("the node Ready", DEADLINE, || async {
        let node = get_json(&client, "/api/v1/nodes/minisno").await.ok()?;
        (condition_status(&node, "Ready") == "True").then_some(())
    })
    .await;
    // The node is Ready, but nobody said the bootstrap is complete: long after the removal's
    // delay, the member is still there and the condition absent (not False).
    let s = fx.running.app.config.schedule;
    let wait = fx.running.app.elapsed()
        + s.etcd_bootstrap_removed_delay_s * 3.0
        + s.cluster_version_completed_delay_s;
    poll("a while", DEADLINE, || async {
        (fx.running.app.elapsed() > wait).then_some(())
    })
    .await;
    let e = etcd(&client).await;
    assert!(
        !condition_types(&e).contains(&"EtcdBootstrapMemberRemoved".to_string()),
        "{e}"
    );
    let cv = get_json(
        &client,
        "/apis/config.openshift.io/v1/clusterversions/version",
    )
    .await
    .unwrap();
    assert_eq!(condition_status(&cv, "Available"), "False");

    let completed_at = fx.running.app.elapsed();
    fx.complete_bootstrap();
    let removed = poll("EtcdBootstrapMemberRemoved=True", DEADLINE, || async {
        condition(&etcd(&client).await, "EtcdBootstrapMemberRemoved")
    })
    .await;
    assert_eq!(removed["status"], "True");
    assert_eq!(removed["reason"], "BootstrapMemberRemoved");
    let removed_at: k8s_openapi::jiff::Timestamp = removed["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let completed = fx.running.app.first_start_ms + (completed_at * 1000.0) as i64;
    assert!(
        removed_at.as_millisecond() >= completed - 1000,
        "removed before the configmap said complete"
    );
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
    let cv_at: k8s_openapi::jiff::Timestamp = condition(&cv, "Available").unwrap()
        ["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        cv_at >= removed_at,
        "the cluster version completed before the member was removed"
    );
    fx.running.stop().await;
}

/// The condition each release's etcd operator reports, once the member is removed.
async fn removal_condition_of(version: &str) -> Vec<String> {
    let fx = Fixture::start_with(&[], |c| c.release.version = version.to_string()).await;
    fx.complete_bootstrap();
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
    assert_eq!(cv["status"]["desired"]["version"], version);
    assert_eq!(cv["status"]["history"][0]["version"], version);
    let types = condition_types(&etcd(&client).await);
    fx.running.stop().await;
    types
        .into_iter()
        .filter(|t| t.contains("MemberRemoved"))
        .collect()
}

#[tokio::test]
async fn the_removal_condition_is_spelled_as_the_release_spells_it() {
    assert_eq!(
        removal_condition_of("4.14.3").await,
        ["EtcdBoostrapMemberRemoved"]
    );
    assert_eq!(
        removal_condition_of("4.15.0").await,
        ["EtcdBoostrapMemberRemoved"]
    );
    assert_eq!(
        removal_condition_of("4.17.0").await,
        ["EtcdBootstrapMemberRemoved"]
    );
    assert_eq!(removal_condition_of("4.12.9").await, Vec::<String>::new());
}
