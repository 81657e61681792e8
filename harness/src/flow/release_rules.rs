//! What a real install does depends on its release: expectations that a later installer brought
//! must not be held against an older cluster. This is the one table of them (docs/bip-contract.md
//! §7, "Release history"): each rule, the release that brought it, and where it comes from. The
//! API checks (`health::checks`), the install-config comparison (`health::applied`) and the
//! phase machine's bootstrap-cleanup all ask [`applies`]; result.json and `check --json` record
//! [`applied`].
//!
//! A release the harness cannot read (a nightly without `major.minor`, or none yet) gets every
//! rule: the newest behaviour is the one a harness is most likely to meet.

use serde::{Deserialize, Serialize};

/// The release-gated expectations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The post-reboot script creates configmap `kube-system/bootstrap` (status complete),
    /// which `wait-for bootstrap-complete` waits for.
    BootstrapConfigmap,
    /// The post-reboot script's cleanup removes `/opt/openshift`.
    OptOpenshiftRemoved,
    /// `wait-for bootstrap-complete` waits for etcd's `EtcdBootstrapMemberRemoved`.
    EtcdBootstrapMemberRemoved,
    /// The installer fills in `networking.networkType: OVNKubernetes` when the install-config
    /// leaves it out (OpenShiftSDN before).
    DefaultNetworkTypeOvn,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct ReleaseRule {
    pub rule: Rule,
    /// The name result.json and `check --json` record.
    pub name: &'static str,
    /// The first release (major, minor) that behaves so.
    pub from: (u64, u64),
    /// Where the behaviour comes from, and what older releases did instead.
    pub source: &'static str,
}

/// Every release-gated rule, oldest first.
pub const RULES: [ReleaseRule; 4] = [
    ReleaseRule {
        rule: Rule::BootstrapConfigmap,
        name: "bootstrap-configmap",
        from: (4, 12),
        source: "openshift/installer PR #6521 (Nov 2022) made bootstrap-in-place-post-reboot.sh create it; before, nothing in bootstrap-in-place did and users ran only `wait-for install-complete`, so bootstrap-complete ends when the API answers and the node is Ready",
    },
    ReleaseRule {
        rule: Rule::DefaultNetworkTypeOvn,
        name: "default-network-type-ovn",
        from: (4, 12),
        source: "openshift/installer pkg/types/defaults/installconfig.go: the default networkType became OVNKubernetes in the 4.12 installer (SDN-3298); OpenShiftSDN before",
    },
    ReleaseRule {
        rule: Rule::OptOpenshiftRemoved,
        name: "opt-openshift-removed",
        from: (4, 13),
        source: "openshift/installer bootstrap-in-place-post-reboot.sh removes /opt/openshift in its cleanup from the 4.13 installer (Jan 2023); before, the directory stays on the installed system",
    },
    ReleaseRule {
        rule: Rule::EtcdBootstrapMemberRemoved,
        name: "etcd-bootstrap-member-removed",
        from: (4, 16),
        source: "openshift/installer PR #8004 (Feb 2024): cmd/openshift-install/create.go waits for the etcd operator's EtcdBootstrapMemberRemoved after the bootstrap configmap; before, it does not",
    },
];

/// A rule as result.json records it: whether the cluster's release is held to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleApplied {
    pub rule: String,
    /// `major.minor` of the first release with the rule.
    pub from: String,
    pub applied: bool,
}

/// The row of `rule`.
pub fn row(rule: Rule) -> &'static ReleaseRule {
    RULES
        .iter()
        .find(|r| r.rule == rule)
        .expect("every rule has a row in RULES")
}

/// `4.16.0-0.nightly-...` as (4, 16); None when it does not start `<major>.<minor>`.
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Whether a cluster of `version` is held to `rule`: yes from the rule's release on, and for
/// a release that is unknown or unreadable (the newest rules).
pub fn applies(rule: Rule, version: Option<&str>) -> bool {
    match version.and_then(major_minor) {
        Some(release) => release >= row(rule).from,
        None => true,
    }
}

/// Every rule, and whether `version` is held to it.
pub fn applied(version: Option<&str>) -> Vec<RuleApplied> {
    RULES
        .iter()
        .map(|r| RuleApplied {
            rule: r.name.to_string(),
            from: format!("{}.{}", r.from.0, r.from.1),
            applied: applies(r.rule, version),
        })
        .collect()
}

/// One line for the event log: the release, and the rules it is and is not held to.
pub fn describe(version: &str) -> String {
    let (held, not): (Vec<_>, Vec<_>) = applied(Some(version)).into_iter().partition(|r| r.applied);
    let names = |rs: &[RuleApplied]| {
        rs.iter()
            .map(|r| format!("{} (from {})", r.rule, r.from))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if not.is_empty() {
        return format!("the cluster's release is {version}: every release rule applies");
    }
    let also = match held.is_empty() {
        true => String::new(),
        false => format!("; held to {}", names(&held)),
    };
    format!(
        "the cluster's release is {version}: not held to {}{also}",
        names(&not)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(version: &str) -> Vec<&'static str> {
        RULES
            .iter()
            .filter(|r| applies(r.rule, Some(version)))
            .map(|r| r.name)
            .collect()
    }

    #[test]
    fn each_rule_starts_at_its_release() {
        assert!(held("4.11.59").is_empty());
        assert_eq!(
            held("4.12.0"),
            ["bootstrap-configmap", "default-network-type-ovn"]
        );
        assert_eq!(
            held("4.13.0"),
            [
                "bootstrap-configmap",
                "default-network-type-ovn",
                "opt-openshift-removed"
            ]
        );
        assert_eq!(held("4.15.9").len(), 3);
        assert!(!held("4.15.9").contains(&"etcd-bootstrap-member-removed"));
        assert_eq!(held("4.16.0-0.nightly-2024-03-01-000000").len(), 4);
        assert_eq!(held("5.0.0").len(), 4);
    }

    #[test]
    fn an_unknown_or_unreadable_release_gets_the_newest_rules() {
        for v in [None, Some("nightly"), Some(""), Some("4")] {
            assert!(
                RULES.iter().all(|r| applies(r.rule, v)),
                "{v:?} should be held to every rule"
            );
        }
    }

    #[test]
    fn the_record_names_each_rule_with_its_release() {
        let a = applied(Some("4.12.3"));
        assert_eq!(a.len(), RULES.len());
        let by = |n: &str| a.iter().find(|r| r.rule == n).unwrap().clone();
        assert_eq!(
            by("bootstrap-configmap"),
            RuleApplied {
                rule: "bootstrap-configmap".into(),
                from: "4.12".into(),
                applied: true
            }
        );
        assert!(!by("opt-openshift-removed").applied);
        assert_eq!(by("etcd-bootstrap-member-removed").from, "4.16");
    }
}
