//! Discovery documents (`/api`, `/api/v1`, `/apis`, `/apis/<group>[/<version>]`), so that
//! kubectl and kube clients can map kinds to paths.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery,
    ServerAddressByClientCIDR,
};

use super::Reply;

/// One served resource.
pub struct Res {
    pub name: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
}

/// One served group/version ("" is the core group).
pub struct GroupVersion {
    pub group: &'static str,
    pub version: &'static str,
    pub resources: &'static [Res],
}

const READ: &[&str] = &["get", "list"];

pub const CORE_V1: GroupVersion = GroupVersion {
    group: "",
    version: "v1",
    resources: &[
        Res {
            name: "configmaps",
            singular: "configmap",
            kind: "ConfigMap",
            namespaced: true,
            verbs: &["create", "delete", "get", "list", "update"],
            short_names: &["cm"],
        },
        Res {
            name: "events",
            singular: "event",
            kind: "Event",
            namespaced: true,
            verbs: READ,
            short_names: &["ev"],
        },
        Res {
            name: "namespaces",
            singular: "namespace",
            kind: "Namespace",
            namespaced: false,
            verbs: READ,
            short_names: &["ns"],
        },
        Res {
            name: "nodes",
            singular: "node",
            kind: "Node",
            namespaced: false,
            verbs: READ,
            short_names: &["no"],
        },
        Res {
            name: "pods",
            singular: "pod",
            kind: "Pod",
            namespaced: true,
            verbs: READ,
            short_names: &["po"],
        },
    ],
};

pub const GROUPS: &[GroupVersion] = &[
    GroupVersion {
        group: "config.openshift.io",
        version: "v1",
        resources: &[
            Res {
                name: "clusteroperators",
                singular: "clusteroperator",
                kind: "ClusterOperator",
                namespaced: false,
                verbs: READ,
                short_names: &["co"],
            },
            Res {
                name: "clusterversions",
                singular: "clusterversion",
                kind: "ClusterVersion",
                namespaced: false,
                verbs: READ,
                short_names: &[],
            },
            Res {
                name: "infrastructures",
                singular: "infrastructure",
                kind: "Infrastructure",
                namespaced: false,
                verbs: READ,
                short_names: &[],
            },
            Res {
                name: "networks",
                singular: "network",
                kind: "Network",
                namespaced: false,
                verbs: READ,
                short_names: &[],
            },
            Res {
                name: "proxies",
                singular: "proxy",
                kind: "Proxy",
                namespaced: false,
                verbs: READ,
                short_names: &[],
            },
        ],
    },
    GroupVersion {
        group: "operator.openshift.io",
        version: "v1",
        resources: &[Res {
            name: "etcds",
            singular: "etcd",
            kind: "Etcd",
            namespaced: false,
            verbs: READ,
            short_names: &[],
        }],
    },
    GroupVersion {
        group: "certificates.k8s.io",
        version: "v1",
        resources: &[
            Res {
                name: "certificatesigningrequests",
                singular: "certificatesigningrequest",
                kind: "CertificateSigningRequest",
                namespaced: false,
                verbs: READ,
                short_names: &["csr"],
            },
            Res {
                name: "certificatesigningrequests/approval",
                singular: "",
                kind: "CertificateSigningRequest",
                namespaced: false,
                verbs: &["get", "update"],
                short_names: &[],
            },
        ],
    },
];

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn everywhere() -> Vec<ServerAddressByClientCIDR> {
    vec![ServerAddressByClientCIDR {
        client_cidr: "0.0.0.0/0".to_string(),
        server_address: String::new(),
    }]
}

pub fn api_versions() -> Reply {
    Reply::json(
        200,
        &APIVersions {
            server_address_by_client_cidrs: everywhere(),
            versions: vec!["v1".to_string()],
        },
    )
}

fn group_doc(gv: &GroupVersion) -> APIGroup {
    let v = GroupVersionForDiscovery {
        group_version: format!("{}/{}", gv.group, gv.version),
        version: gv.version.to_string(),
    };
    APIGroup {
        name: gv.group.to_string(),
        preferred_version: Some(v.clone()),
        server_address_by_client_cidrs: None,
        versions: vec![v],
    }
}

pub fn group_list() -> Reply {
    Reply::json(
        200,
        &APIGroupList {
            groups: GROUPS.iter().map(group_doc).collect(),
        },
    )
}

pub fn find_group(group: &str) -> Option<&'static GroupVersion> {
    GROUPS.iter().find(|g| g.group == group)
}

pub fn find_group_version(group: &str, version: &str) -> Option<&'static GroupVersion> {
    if group.is_empty() {
        return (version == CORE_V1.version).then_some(&CORE_V1);
    }
    GROUPS
        .iter()
        .find(|g| g.group == group && g.version == version)
}

pub fn group(gv: &GroupVersion) -> Reply {
    Reply::json(200, &group_doc(gv))
}

pub fn resource_list(gv: &GroupVersion) -> Reply {
    let group_version = if gv.group.is_empty() {
        gv.version.to_string()
    } else {
        format!("{}/{}", gv.group, gv.version)
    };
    Reply::json(
        200,
        &APIResourceList {
            group_version,
            resources: gv
                .resources
                .iter()
                .map(|r| APIResource {
                    name: r.name.to_string(),
                    singular_name: r.singular.to_string(),
                    namespaced: r.namespaced,
                    kind: r.kind.to_string(),
                    verbs: strings(r.verbs),
                    short_names: (!r.short_names.is_empty()).then(|| strings(r.short_names)),
                    ..Default::default()
                })
                .collect(),
        },
    )
}
