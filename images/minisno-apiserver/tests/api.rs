//! The API as a kube client sees it: typed k8s-openapi objects, dynamic OpenShift objects,
//! configmap create/get/conflict, CSR approval, persistence across a restart.

mod common;

use common::*;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::core::ObjectMeta;

fn openshift(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

fn node_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[tokio::test]
async fn kube_client_sees_the_install_converge() {
    let fx = Fixture::start(&[]).await;
    let client = fx.client().await;

    // /version through the client: it is a test fixture and says so
    let v = client.apiserver_version().await.unwrap();
    assert!(v.git_version.ends_with("-minisno"), "{v:?}");

    // readyz reaches ok
    poll("readyz ok", DEADLINE, || async {
        let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
        client.request_text(req).await.ok().filter(|t| t == "ok")
    })
    .await;
    let verbose = client
        .request_text(
            http::Request::get("/readyz?verbose")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(verbose.contains("[+]etcd ok"), "{verbose}");
    assert!(
        verbose.trim_end().ends_with("readyz check passed"),
        "{verbose}"
    );

    // the single node becomes Ready, with SNO roles and an InternalIP-or-Hostname address
    let nodes: Api<Node> = Api::all(client.clone());
    let node = poll("node Ready", DEADLINE, || async {
        let list = nodes.list(&Default::default()).await.ok()?;
        assert!(list.items.len() <= 1, "{list:?}");
        list.items.into_iter().find(node_ready)
    })
    .await;
    let labels = node.metadata.labels.clone().unwrap();
    for role in ["master", "worker", "control-plane"] {
        assert_eq!(labels[&format!("node-role.kubernetes.io/{role}")], "");
    }
    assert_eq!(labels["kubernetes.io/hostname"], "minisno");
    let info = node.status.unwrap().node_info.unwrap();
    assert_eq!(info.kubelet_version, "v1.30.4-minisno");
    assert!(nodes.get("minisno").await.is_ok());
    let err = nodes.get("other").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err:?}"
    );

    // the install-config configmap
    let kube_system: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let cc = kube_system.get("cluster-config-v1").await.unwrap();
    assert_eq!(cc.data.unwrap()["install-config"], INSTALL_CONFIG);
    let bundle: Api<ConfigMap> = Api::namespaced(client.clone(), "openshift-config");
    assert!(
        bundle.get("user-ca-bundle").await.unwrap().data.unwrap()["ca-bundle.crt"]
            .contains("BEGIN CERTIFICATE")
    );

    // bootstrap configmap: absent, created by "the post-reboot script", then a conflict
    let err = kube_system.get("bootstrap").await.unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"));
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("bootstrap".into()),
            ..Default::default()
        },
        data: Some([("status".to_string(), "complete".to_string())].into()),
        ..Default::default()
    };
    let created = kube_system
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.metadata.namespace.as_deref(), Some("kube-system"));
    let got = kube_system.get("bootstrap").await.unwrap();
    assert_eq!(got.data.unwrap()["status"], "complete");
    let err = kube_system
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    // etcd: bootstrap member removed
    let etcds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &openshift("operator.openshift.io", "Etcd", "etcds"),
    );
    poll("EtcdBootstrapMemberRemoved=True", DEADLINE, || async {
        let e = etcds.get("cluster").await.ok()?;
        (condition_status(&e.data, "EtcdBootstrapMemberRemoved") == "True").then_some(())
    })
    .await;
    let e = etcds.get("cluster").await.unwrap();
    assert_eq!(condition_status(&e.data, "EtcdMembersAvailable"), "True");

    // every cluster operator Available, not Progressing, not Degraded
    let cos: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &openshift("config.openshift.io", "ClusterOperator", "clusteroperators"),
    );
    let list = poll("all operators settled", DEADLINE, || async {
        let list = cos.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .all(|co| {
                condition_status(&co.data, "Available") == "True"
                    && condition_status(&co.data, "Progressing") == "False"
                    && condition_status(&co.data, "Degraded") == "False"
            })
            .then_some(list)
    })
    .await;
    assert_eq!(list.items.len(), 33);
    let ingress = cos.get("ingress").await.unwrap();
    assert_eq!(
        ingress.data["status"]["versions"][0]["version"],
        "4.17.0-minisno"
    );
    assert!(
        ingress.data["status"]["relatedObjects"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );

    // the cluster version completes
    let cvs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &openshift("config.openshift.io", "ClusterVersion", "clusterversions"),
    );
    let cv = poll("ClusterVersion Available", DEADLINE, || async {
        let cv = cvs.get("version").await.ok()?;
        (condition_status(&cv.data, "Available") == "True").then_some(cv)
    })
    .await;
    assert_eq!(condition_status(&cv.data, "Progressing"), "False");
    assert_eq!(condition_status(&cv.data, "Failing"), "False");
    let status = &cv.data["status"];
    assert_eq!(status["desired"]["version"], "4.17.0-minisno");
    assert_eq!(status["history"][0]["state"], "Completed");
    assert!(status["history"][0]["completionTime"].is_string());
    assert_eq!(
        status["capabilities"]["enabledCapabilities"],
        serde_json::json!(["Ingress"])
    );
    assert_eq!(
        cv.data["spec"]["capabilities"]["baselineCapabilitySet"],
        "None"
    );
    assert_eq!(
        condition(&cv.data, "Available").unwrap()["message"],
        "Done applying 4.17.0-minisno"
    );

    fx.running.stop().await;
}

#[tokio::test]
async fn openshift_config_objects_follow_the_install_config() {
    let fx = Fixture::start(&[]).await;
    let client = fx.client().await;
    let net = get_json(&client, "/apis/config.openshift.io/v1/networks/cluster")
        .await
        .unwrap();
    assert_eq!(net["kind"], "Network");
    assert_eq!(net["apiVersion"], "config.openshift.io/v1");
    assert_eq!(net["spec"]["networkType"], "OVNKubernetes");
    assert_eq!(net["status"]["clusterNetwork"][0]["cidr"], "10.128.0.0/14");
    assert_eq!(net["spec"]["serviceNetwork"][0], "172.30.0.0/16");
    assert!(net["spec"].get("machineNetwork").is_none());

    let proxy = get_json(&client, "/apis/config.openshift.io/v1/proxies/cluster")
        .await
        .unwrap();
    assert_eq!(proxy["spec"]["httpProxy"], "http://proxy.example.test:3128");
    assert_eq!(proxy["spec"]["trustedCA"]["name"], "user-ca-bundle");
    let no_proxy = proxy["status"]["noProxy"].as_str().unwrap();
    assert!(no_proxy.contains("api-int.sno.example.test") && no_proxy.contains(".example.test"));

    let infra = get_json(
        &client,
        "/apis/config.openshift.io/v1/infrastructures/cluster",
    )
    .await
    .unwrap();
    assert_eq!(infra["status"]["platform"], "None");
    assert_eq!(infra["status"]["controlPlaneTopology"], "SingleReplica");
    assert_eq!(
        infra["status"]["apiServerInternalURI"],
        "https://api-int.sno.example.test:6443"
    );

    // discovery and error shapes
    let groups = get_json(&client, "/apis").await.unwrap();
    assert_eq!(groups["kind"], "APIGroupList");
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "config.openshift.io",
            "operator.openshift.io",
            "certificates.k8s.io"
        ]
    );
    let err = get_json(&client, "/apis/nope.example/v1/things")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err:?}"
    );
    let err = client
        .request_text(
            http::Request::delete("/api/v1/nodes/minisno")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 405 && s.reason == "MethodNotAllowed"),
        "{err:?}"
    );
    fx.running.stop().await;
}

fn approval(type_: &str) -> CertificateSigningRequestStatus {
    CertificateSigningRequestStatus {
        conditions: Some(vec![CertificateSigningRequestCondition {
            type_: type_.into(),
            status: "True".into(),
            reason: Some("TestApprove".into()),
            message: Some("approved by the test".into()),
            ..Default::default()
        }]),
        certificate: None,
    }
}

#[tokio::test]
async fn node_csrs_are_pending_until_approved() {
    let fx = Fixture::start(&[]).await;
    let client = fx.client().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    // the kubelet files them once it reaches the API
    let list = poll("the kubelet's CSRs", DEADLINE, || async {
        let list = csrs.list(&Default::default()).await.ok()?;
        (!list.items.is_empty()).then_some(list)
    })
    .await;
    assert_eq!(list.items.len(), 2);
    let mut signers: Vec<_> = list
        .items
        .iter()
        .map(|c| c.spec.signer_name.clone())
        .collect();
    signers.sort();
    assert_eq!(
        signers,
        [
            "kubernetes.io/kube-apiserver-client-kubelet",
            "kubernetes.io/kubelet-serving"
        ]
    );
    for c in &list.items {
        assert!(c.metadata.name.as_ref().unwrap().starts_with("csr-"));
        assert_eq!(c.spec.username.as_deref(), Some("system:node:minisno"));
        let pending = c
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_none();
        assert!(pending, "{c:?}");
        assert!(String::from_utf8_lossy(&c.spec.request.0).contains("CERTIFICATE REQUEST"));
    }
    let first = list.items[0].metadata.name.clone().unwrap();
    let second = list.items[1].metadata.name.clone().unwrap();

    // PUT .../approval (what `oc adm certificate approve` does)
    let mut csr = list.items[0].clone();
    csr.status = Some(approval("Approved"));
    let approved: CertificateSigningRequest = csrs
        .replace_subresource("approval", &first, &PostParams::default(), &csr)
        .await
        .unwrap();
    let conds = approved.status.unwrap().conditions.unwrap();
    assert_eq!(
        (conds[0].type_.as_str(), conds[0].status.as_str()),
        ("Approved", "True")
    );

    // PATCH .../approval (kube's patch_approval)
    let patch = serde_json::json!({"status": approval("Approved")});
    csrs.patch_approval(&second, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();

    for c in csrs.list(&Default::default()).await.unwrap().items {
        let conds = c.status.unwrap().conditions.unwrap();
        assert!(conds
            .iter()
            .any(|c| c.type_ == "Approved" && c.status == "True"));
    }
    fx.running.stop().await;
}

#[tokio::test]
async fn state_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(&dir.path().join("pki"));
    let cfg = config(dir.path(), &pki, &[]);

    let first = minisno_apiserver::start(cfg.clone()).await.unwrap();
    assert!(first.app.fresh);
    let first_start = first.app.first_start_ms;
    let url = format!("https://127.0.0.1:{}", first.local_addr.port());
    let client = client_from_yaml(&kubeconfig(
        &url,
        &pki.ca_cert,
        Some((&pki.admin_cert, &pki.admin_key)),
        Some(SERVER_NAME),
    ))
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "openshift-test");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("kept".into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    };
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let name = poll("the kubelet's CSRs", DEADLINE, || async {
        let list = csrs.list(&Default::default()).await.ok()?;
        list.items.first().and_then(|c| c.metadata.name.clone())
    })
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    let registered = nodes
        .get("minisno")
        .await
        .unwrap()
        .metadata
        .creation_timestamp;
    let patch = serde_json::json!({"status": approval("Approved")});
    csrs.patch_approval(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    first.stop().await;

    let second = minisno_apiserver::start(cfg).await.unwrap();
    assert!(!second.app.fresh);
    assert_eq!(second.app.first_start_ms, first_start);
    let url = format!("https://127.0.0.1:{}", second.local_addr.port());
    let client = client_from_yaml(&kubeconfig(
        &url,
        &pki.ca_cert,
        Some((&pki.admin_cert, &pki.admin_key)),
        Some(SERVER_NAME),
    ))
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "openshift-test");
    let kept = cms.get("kept").await.unwrap();
    assert_eq!(kept.metadata.uid, created.metadata.uid);
    assert_eq!(kept.data.unwrap()["k"], "v");
    // the namespace it was created in is listed now
    let ns = get_json(&client, "/api/v1/namespaces/openshift-test")
        .await
        .unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
    // the approval is kept too
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let csr = csrs.get(&name).await.unwrap();
    assert!(csr.status.unwrap().conditions.is_some());
    // the node registered in the first run and is the same node now: registered at the time
    // it was, counted from the first start, not this one
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.get("minisno").await.unwrap();
    assert_eq!(node.metadata.creation_timestamp, registered);
    assert!(registered.unwrap().0.as_second() >= first_start.div_euclid(1000));
    // replace and delete work and persist
    let mut kept = cms.get("kept").await.unwrap();
    kept.data = Some([("k".to_string(), "w".to_string())].into());
    let replaced = cms
        .replace("kept", &PostParams::default(), &kept)
        .await
        .unwrap();
    assert_eq!(replaced.data.unwrap()["k"], "w");
    cms.delete("kept", &Default::default()).await.unwrap();
    assert!(cms.get("kept").await.is_err());
    second.stop().await;
}
