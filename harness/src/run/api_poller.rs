//! Polls the cluster's API after the pivot (`health::checks`, the same pass `sno-harness
//! check` makes) and sends each check's outcome when it changes, and the etcd rule once the
//! cluster's release decides it.

use std::collections::HashMap;
use std::time::Duration;

use crate::flow::event::{ApiCheck, NodeSeen, Signal, SignalTx, Source};
use crate::health::checks::{evaluate, EtcdRule, Inputs};
use crate::health::{ApiEndpoint, ClusterApi};

pub async fn poll(endpoint: ApiEndpoint, inputs: Inputs, tx: SignalTx, every: Duration) {
    let mut last: HashMap<u8, (bool, String)> = HashMap::new();
    let mut send = |check: ApiCheck, ok: bool, detail: String| {
        let k = check as u8;
        if last.get(&k) != Some(&(ok, detail.clone())) {
            last.insert(k, (ok, detail.clone()));
            let _ = tx.send((Source::Api, Signal::Api { check, ok, detail }));
        }
    };
    let mut rule: Option<EtcdRule> = None;
    let mut release: Option<String> = None;
    let mut node: Option<NodeSeen> = None;
    let mut api: Option<ClusterApi> = None;
    loop {
        if api.is_none() {
            match ClusterApi::connect(&endpoint).await {
                Ok(a) => api = Some(a),
                Err(e) => send(ApiCheck::Readyz, false, e.to_string()),
            }
        }
        if let Some(a) = &api {
            let pass = evaluate(a, &inputs).await;
            // The release before the checks it decides (the release rules).
            if pass.version.is_some() && pass.version != release {
                release = pass.version.clone();
                let version = pass.version.clone().expect("checked above");
                let _ = tx.send((Source::Api, Signal::Release { version }));
            }
            // The rule first: the machine records it before the check it explains.
            if pass.etcd_rule.is_some() && pass.etcd_rule != rule {
                rule = pass.etcd_rule.clone();
                let r = pass.etcd_rule.clone().expect("checked above");
                let _ = tx.send((
                    Source::Api,
                    Signal::EtcdRule {
                        required: r.required,
                        why: r.why,
                    },
                ));
            }
            // The node's name before its Ready check: a wrong name explains the rest.
            if pass.node.is_some() && pass.node != node {
                node = pass.node.clone();
                let seen = pass.node.clone().expect("checked above");
                let _ = tx.send((Source::Api, Signal::NodeSeen(seen)));
            }
            for (check, j) in pass.results {
                send(check, j.ok, j.detail);
            }
        }
        tokio::time::sleep(every).await;
    }
}
