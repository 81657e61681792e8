//! Polls the cluster's API after the pivot and sends each check's outcome when it changes.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use crate::flow::event::SignalTx;
use crate::flow::event::{ApiCheck, Signal, Source};
use crate::health::{applied, judge, ApiEndpoint, ClusterApi, HealthError};

/// How long ClusterOperators must stay settled (`wait-for install-complete` uses 30 s).
pub const OPERATORS_SETTLE: Duration = Duration::from_secs(30);

/// `install_config` is the install-config the harness generated, as JSON: the cluster's
/// reported state is compared with it.
pub async fn poll(
    endpoint: ApiEndpoint,
    install_config: serde_json::Value,
    tx: SignalTx,
    every: Duration,
) {
    let mut last: HashMap<u8, (bool, String)> = HashMap::new();
    let mut send = |check: ApiCheck, ok: bool, detail: String| {
        let k = check as u8;
        if last.get(&k) != Some(&(ok, detail.clone())) {
            last.insert(k, (ok, detail.clone()));
            let _ = tx.send((Source::Api, Signal::Api { check, ok, detail }));
        }
    };
    let mut api: Option<ClusterApi> = None;
    loop {
        if api.is_none() {
            match ClusterApi::connect(&endpoint).await {
                Ok(a) => api = Some(a),
                Err(e) => send(ApiCheck::Readyz, false, e.to_string()),
            }
        }
        if let Some(a) = &api {
            match a.readyz().await {
                Ok(ok) => send(
                    ApiCheck::Readyz,
                    ok,
                    format!("/readyz {}", if ok { "ok" } else { "not ready (503)" }),
                ),
                Err(e) => send(ApiCheck::Readyz, false, e.to_string()),
            }
            match a.bootstrap_status().await {
                Ok(s) => send(
                    ApiCheck::BootstrapConfigmap,
                    s.as_deref() == Some("complete"),
                    format!(
                        "configmap kube-system/bootstrap status {}",
                        s.as_deref().unwrap_or("absent")
                    ),
                ),
                Err(e) => send(ApiCheck::BootstrapConfigmap, false, e.to_string()),
            }
            let j = |r: Result<serde_json::Value, crate::health::HealthError>,
                     f: fn(&serde_json::Value) -> judge::Judgement| match r {
                Ok(v) => f(&v),
                Err(e) => judge::Judgement {
                    ok: false,
                    detail: e.to_string(),
                },
            };
            let e = j(a.etcd().await, judge::etcd_bootstrap_member_removed);
            send(ApiCheck::EtcdBootstrapMemberRemoved, e.ok, e.detail);
            let n = j(a.nodes().await, judge::single_node_ready);
            send(ApiCheck::NodeReady, n.ok, n.detail);
            let cv = j(a.cluster_version().await, judge::cluster_version);
            send(ApiCheck::ClusterVersion, cv.ok, cv.detail);
            let co = match a.cluster_operators().await {
                Ok(v) => judge::cluster_operators(&v, SystemTime::now(), OPERATORS_SETTLE),
                Err(e) => judge::Judgement {
                    ok: false,
                    detail: e.to_string(),
                },
            };
            send(ApiCheck::ClusterOperators, co.ok, co.detail);
            // Only an answer is evidence here: a dropped connection says nothing about the
            // config (and /readyz reports it), while a refusal such as 403 is kept.
            match a.applied_config().await {
                Ok(seen) => {
                    let j = applied::install_config_applied(&install_config, &seen);
                    send(ApiCheck::InstallConfigApplied, j.ok, j.detail);
                }
                Err(e @ HealthError::Api { .. }) => {
                    send(ApiCheck::InstallConfigApplied, false, e.to_string())
                }
                Err(_) => {}
            }
        }
        tokio::time::sleep(every).await;
    }
}
