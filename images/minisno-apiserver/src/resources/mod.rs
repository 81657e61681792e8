//! What each endpoint answers. Every function here is synchronous and takes the [`App`]; the
//! router picks one, the server turns its [`Reply`] into an HTTP response.

pub mod certificates;
pub mod core;
pub mod discovery;
pub mod events;
pub mod health;
pub mod openshift;
pub mod openshift_types;
pub mod pods;
pub mod tables;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status, StatusDetails};
use serde::Serialize;

use crate::app::App;

/// An HTTP answer, before it is put on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub code: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

pub const JSON: &str = "application/json";
pub const TEXT: &str = "text/plain; charset=utf-8";

impl Reply {
    pub fn json<T: Serialize>(code: u16, value: &T) -> Reply {
        Reply {
            code,
            content_type: JSON,
            body: serde_json::to_vec(value).expect("response serializes"),
        }
    }

    pub fn text(code: u16, text: impl Into<String>) -> Reply {
        Reply {
            code,
            content_type: TEXT,
            body: text.into().into_bytes(),
        }
    }

    /// A `Status` failure object as the kube-apiserver sends it.
    pub fn status(code: u16, reason: &str, message: impl Into<String>) -> Reply {
        Reply::status_with(code, reason, message, None)
    }

    pub fn status_with(
        code: u16,
        reason: &str,
        message: impl Into<String>,
        details: Option<StatusDetails>,
    ) -> Reply {
        let status = Status {
            code: Some(code as i32),
            details: Some(details.unwrap_or_default()),
            message: Some(message.into()),
            reason: Some(reason.to_string()),
            status: Some("Failure".to_string()),
            ..Default::default()
        };
        Reply::json(code, &status)
    }

    /// `404` for a named object: `configmaps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Reply {
        Reply::status_with(
            404,
            "NotFound",
            if group.is_empty() {
                format!("{resource} \"{name}\" not found")
            } else {
                format!("{resource}.{group} \"{name}\" not found")
            },
            Some(details(group, resource, name)),
        )
    }

    /// `404` for a path the server does not serve.
    pub fn no_route() -> Reply {
        Reply::status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn method_not_allowed(method: &str) -> Reply {
        Reply::status(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Reply {
        Reply::status(400, "BadRequest", message)
    }

    pub fn unavailable() -> Reply {
        Reply::status(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        )
    }
}

pub fn details(group: &str, resource: &str, name: &str) -> StatusDetails {
    StatusDetails {
        group: (!group.is_empty()).then(|| group.to_string()),
        kind: Some(resource.to_string()),
        name: Some(name.to_string()),
        ..Default::default()
    }
}

/// Metadata of a simulated (not stored) object.
pub fn sim_meta(app: &App, kind: &str, namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        uid: Some(app.uid(&format!("{kind}/{}/{name}", namespace.unwrap_or("")))),
        resource_version: Some(app.generation().to_string()),
        creation_timestamp: Some(app.time_at(0.0)),
        generation: Some(1),
        ..Default::default()
    }
}

/// A JSON list in the shape the apiserver sends (`{apiVersion, kind, metadata, items}`).
pub fn list_json<T: Serialize>(
    api_version: &str,
    kind: &str,
    resource_version: String,
    items: &[T],
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"resourceVersion": resource_version},
        "items": items,
    })
}
