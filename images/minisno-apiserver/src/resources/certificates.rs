//! certificates.k8s.io/v1: the two kubelet CSRs a fresh node files, and their approval.

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestSpec,
    CertificateSigningRequestStatus,
};
use k8s_openapi::{ByteString, List};

use super::{sim_meta, Reply};
use crate::app::{App, UpdateError};
use crate::state::{now_unix_ms, CsrDecision};

const GROUP: &str = "certificates.k8s.io";

struct Pending {
    name: String,
    signer: &'static str,
    usages: &'static [&'static str],
    request: usize,
}

fn csr_name(app: &App, signer: &str) -> String {
    let id = app.uid(&format!("csr/{}/{signer}", app.node_name));
    // five characters of [a-z0-9], like the apiserver's generated names
    let alphabet: Vec<char> = "bcdfghjklmnpqrstvwxz2456789".chars().collect();
    let digits: u64 = u64::from_str_radix(&id.replace('-', "")[..15], 16).unwrap_or(0);
    let suffix: String = (0..5)
        .map(|i| alphabet[((digits >> (i * 5)) % alphabet.len() as u64) as usize])
        .collect();
    format!("csr-{suffix}")
}

/// The CSRs the kubelet has filed: none until it could reach the API (api-int resolved).
fn pending(app: &App) -> Vec<Pending> {
    if !app.timeline().node_exists(app.elapsed()) {
        return Vec::new();
    }
    vec![
        Pending {
            name: csr_name(app, "kubernetes.io/kube-apiserver-client-kubelet"),
            signer: "kubernetes.io/kube-apiserver-client-kubelet",
            usages: &["digital signature", "client auth"],
            request: 0,
        },
        Pending {
            name: csr_name(app, "kubernetes.io/kubelet-serving"),
            signer: "kubernetes.io/kubelet-serving",
            usages: &["digital signature", "server auth"],
            request: 1,
        },
    ]
}

fn csr(app: &App, p: &Pending, decisions: Option<&Vec<CsrDecision>>) -> CertificateSigningRequest {
    let node = &app.node_name;
    let conditions = decisions.map(|ds| {
        ds.iter()
            .map(|d| {
                let t = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::from_millisecond(d.at_unix_ms)
                        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
                );
                CertificateSigningRequestCondition {
                    type_: d.type_.clone(),
                    status: d.status.clone(),
                    reason: Some(d.reason.clone()),
                    message: Some(d.message.clone()),
                    last_transition_time: Some(t.clone()),
                    last_update_time: Some(t),
                }
            })
            .collect()
    });
    let mut meta = sim_meta(app, "CertificateSigningRequest", None, &p.name);
    meta.creation_timestamp = Some(app.time_at(app.timeline().node_registered.unwrap_or(0.0)));
    CertificateSigningRequest {
        metadata: meta,
        spec: CertificateSigningRequestSpec {
            signer_name: p.signer.to_string(),
            request: ByteString(app.csr_requests[p.request].clone().into_bytes()),
            usages: Some(p.usages.iter().map(|s| s.to_string()).collect()),
            username: Some(format!("system:node:{node}")),
            groups: Some(vec![
                "system:nodes".to_string(),
                "system:authenticated".to_string(),
            ]),
            ..Default::default()
        },
        status: Some(CertificateSigningRequestStatus {
            conditions,
            certificate: None,
        }),
    }
}

pub fn list(app: &App) -> Reply {
    let items = app.read(|s| {
        pending(app)
            .iter()
            .map(|p| csr(app, p, s.csr_decisions.get(&p.name)))
            .collect()
    });
    Reply::json(
        200,
        &List::<CertificateSigningRequest> {
            items,
            metadata: Default::default(),
        },
    )
}

pub fn get(app: &App, name: &str) -> Reply {
    let Some(p) = pending(app).into_iter().find(|p| p.name == name) else {
        return Reply::not_found(GROUP, "certificatesigningrequests", name);
    };
    let item = app.read(|s| csr(app, &p, s.csr_decisions.get(name)));
    Reply::json(200, &item)
}

/// `PUT .../certificatesigningrequests/<name>/approval`: the body's `status.conditions` of type
/// Approved or Denied become the CSR's conditions.
pub fn approve(app: &App, name: &str, body: &[u8]) -> Reply {
    let Some(p) = pending(app).into_iter().find(|p| p.name == name) else {
        return Reply::not_found(GROUP, "certificatesigningrequests", name);
    };
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Reply::bad_request(format!("invalid JSON body: {e}")),
    };
    let now = now_unix_ms();
    let decisions: Vec<CsrDecision> = value["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter(|c| matches!(c["type"].as_str(), Some("Approved" | "Denied")))
                .map(|c| CsrDecision {
                    type_: c["type"].as_str().unwrap_or_default().to_string(),
                    status: c["status"].as_str().unwrap_or("True").to_string(),
                    reason: c["reason"].as_str().unwrap_or_default().to_string(),
                    message: c["message"].as_str().unwrap_or_default().to_string(),
                    at_unix_ms: now,
                })
                .collect()
        })
        .unwrap_or_default();
    if decisions.is_empty() {
        return Reply::status(
            422,
            "Invalid",
            format!("CertificateSigningRequest.certificates.k8s.io \"{name}\" is invalid: status.conditions: Required value: an Approved or Denied condition"),
        );
    }
    let r = app.update(|s| {
        s.csr_decisions.insert(name.to_string(), decisions);
        s.next_resource_version();
        Ok::<_, Reply>(Reply::json(200, &csr(app, &p, s.csr_decisions.get(name))))
    });
    match r {
        Ok(r) | Err(UpdateError::Rejected(r)) => r,
        Err(UpdateError::Save(e)) => Reply::status(500, "InternalError", e.to_string()),
    }
}
