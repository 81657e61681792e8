//! Small serde structs for the OpenShift kinds served here (only the fields a client of an
//! install looks at, in OpenShift's JSON shape).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};

/// An OpenShift object: `{apiVersion, kind, metadata, spec, status}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Object<Spec, Status> {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: Spec,
    pub status: Status,
}

/// `config.openshift.io/v1` ClusterOperatorStatusCondition / ClusterVersion condition, and
/// `operator.openshift.io/v1` OperatorCondition (same shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub last_transition_time: Time,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

// ---- ClusterVersion ----

pub type ClusterVersion = Object<ClusterVersionSpec, ClusterVersionStatus>;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionSpec {
    #[serde(rename = "clusterID")]
    pub cluster_id: String,
    pub channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_update: Option<Release>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub version: String,
    pub image: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    pub desired: Release,
    pub history: Vec<UpdateHistory>,
    pub observed_generation: i64,
    pub version_hash: String,
    pub capabilities: Capabilities,
    pub available_updates: Option<Vec<Release>>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateHistory {
    /// `Partial` or `Completed`.
    pub state: String,
    pub started_time: Time,
    /// `null` while Partial.
    pub completion_time: Option<Time>,
    pub version: String,
    pub image: String,
    pub verified: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    pub enabled_capabilities: Vec<String>,
    pub known_capabilities: Vec<String>,
}

// ---- ClusterOperator ----

pub type ClusterOperator = Object<serde_json::Value, ClusterOperatorStatus>;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOperatorStatus {
    pub conditions: Vec<Condition>,
    pub versions: Vec<OperandVersion>,
    pub related_objects: Vec<ObjectReference>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OperandVersion {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectReference {
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

// ---- Etcd (operator.openshift.io/v1) ----

pub type Etcd = Object<EtcdSpec, EtcdStatus>;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtcdSpec {
    pub management_state: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtcdStatus {
    pub conditions: Vec<Condition>,
    pub latest_available_revision: i64,
    pub observed_generation: i64,
    pub ready_replicas: i64,
}

// ---- Network, Proxy, Infrastructure: spec/status are free-form JSON ----

pub type Network = Object<serde_json::Value, serde_json::Value>;
pub type Proxy = Object<serde_json::Value, serde_json::Value>;
pub type Infrastructure = Object<serde_json::Value, serde_json::Value>;
