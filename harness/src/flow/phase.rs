//! The phases of a bootstrap-in-place run, in order (docs/architecture.md "Phases"). After the
//! API is up they follow the real install's causality (docs/bip-contract.md §7): the node
//! becomes Ready, then the etcd operator removes the bootstrap member (it waits for the node),
//! then the cluster converges, then the post-reboot script cleans up.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::event::ApiCheck;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Assets,
    LiveBoot,
    Bootkube,
    InstallToDisk,
    Reboot,
    DiskBoot,
    ApiReady,
    NodeReady,
    BootstrapComplete,
    ClusterReady,
    BootstrapCleanup,
}

impl Phase {
    pub const ALL: [Phase; 11] = [
        Phase::Assets,
        Phase::LiveBoot,
        Phase::Bootkube,
        Phase::InstallToDisk,
        Phase::Reboot,
        Phase::DiskBoot,
        Phase::ApiReady,
        Phase::NodeReady,
        Phase::BootstrapComplete,
        Phase::ClusterReady,
        Phase::BootstrapCleanup,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Assets => "assets",
            Phase::LiveBoot => "live-boot",
            Phase::Bootkube => "bootkube",
            Phase::InstallToDisk => "install-to-disk",
            Phase::Reboot => "reboot",
            Phase::DiskBoot => "disk-boot",
            Phase::ApiReady => "api-ready",
            Phase::BootstrapComplete => "bootstrap-complete",
            Phase::NodeReady => "node-ready",
            Phase::ClusterReady => "cluster-ready",
            Phase::BootstrapCleanup => "bootstrap-cleanup",
        }
    }

    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn names() -> Vec<&'static str> {
        Phase::ALL.iter().map(|p| p.name()).collect()
    }

    /// The API checks a phase after the pivot waits for (`health::checks` makes them).
    /// cluster-ready's ClusterVersion and ClusterOperators checks are `wait-for
    /// install-complete`'s (the installer's cmd/openshift-install/create.go) under the default
    /// `[checks] operators = "installer"`; node-ready's is the control-plane node's.
    pub fn api_checks(self) -> &'static [ApiCheck] {
        match self {
            Phase::ApiReady => &[ApiCheck::Readyz],
            Phase::NodeReady => &[ApiCheck::NodeReady],
            Phase::BootstrapComplete => &[
                ApiCheck::BootstrapConfigmap,
                ApiCheck::EtcdBootstrapMemberRemoved,
            ],
            Phase::ClusterReady => &[
                ApiCheck::ClusterVersion,
                ApiCheck::ClusterOperators,
                ApiCheck::InstallConfigApplied,
            ],
            _ => &[],
        }
    }

    /// The phase whose timeout bounds this one. node-ready has no deadline of its own: the
    /// installer's `wait-for bootstrap-complete` (cmd/openshift-install/create.go) waits for
    /// the API and then for the bootstrap configmap, never for the node, so the node's
    /// readiness is judged inside bootstrap-complete's budget, which runs from node-ready's
    /// start (docs/bip-contract.md §13). node-ready stays a milestone of the timeline.
    pub fn budget_phase(self) -> Phase {
        match self {
            Phase::NodeReady => Phase::BootstrapComplete,
            p => p,
        }
    }

    /// Whether a scenario may set this phase's timeout (`[timeouts]`): every phase with a
    /// deadline of its own.
    pub fn has_own_timeout(self) -> bool {
        self.budget_phase() == self
    }

    pub fn next(self) -> Option<Phase> {
        let i = Phase::ALL.iter().position(|p| *p == self)?;
        Phase::ALL.get(i + 1).copied()
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Default phase timeouts of a real OpenShift install on KVM, from `openshift-install
/// wait-for` and CI practice (docs/bip-contract.md §7, §9). The profile may override them; they are
/// scaled for TCG and by `--timeout-scale`.
pub fn openshift_default_timeout(p: Phase) -> Duration {
    let m = |n: u64| Duration::from_secs(n * 60);
    match p {
        Phase::Assets => m(15),
        Phase::LiveBoot => m(15),
        Phase::Bootkube => m(45),
        Phase::InstallToDisk => m(30),
        Phase::Reboot => m(5),
        Phase::DiskBoot => m(20),
        // wait-for gives /version 20 minutes, but on a single node the installed system's
        // first boot comes before its API: an OS update with its reboot, then the image pulls.
        Phase::ApiReady => m(40),
        // wait-for bootstrap-complete's 45 minutes for the bootstrap configmap, shared with
        // node-ready (Phase::budget_phase).
        Phase::NodeReady | Phase::BootstrapComplete => m(45),
        Phase::ClusterReady => m(70),
        Phase::BootstrapCleanup => m(10),
    }
}

/// Default phase timeouts of the minisno fixture with its fast schedule, measured under TCG
/// on two cores with generous slack (a loaded CI machine runs two VMs at a time).
pub fn fixture_default_timeout(p: Phase) -> Duration {
    let s = Duration::from_secs;
    match p {
        Phase::Assets => s(300),
        Phase::LiveBoot => s(240),
        Phase::Bootkube => s(180),
        Phase::InstallToDisk => s(300),
        Phase::Reboot => s(120),
        Phase::DiskBoot => s(240),
        Phase::ApiReady => s(180),
        // Shared with node-ready (Phase::budget_phase), as the two had 180 s each.
        Phase::NodeReady | Phase::BootstrapComplete => s(300),
        Phase::ClusterReady => s(240),
        Phase::BootstrapCleanup => s(180),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_follow_the_contract_order() {
        assert_eq!(
            Phase::names(),
            [
                "assets",
                "live-boot",
                "bootkube",
                "install-to-disk",
                "reboot",
                "disk-boot",
                "api-ready",
                "node-ready",
                "bootstrap-complete",
                "cluster-ready",
                "bootstrap-cleanup"
            ]
        );
        for p in Phase::ALL {
            assert_eq!(Phase::from_name(p.name()), Some(p));
        }
        assert_eq!(Phase::Reboot.next(), Some(Phase::DiskBoot));
        assert_eq!(Phase::BootstrapCleanup.next(), None);
    }

    #[test]
    fn node_ready_is_bounded_by_bootstrap_completes_budget_and_every_other_phase_by_its_own() {
        for p in Phase::ALL {
            let shared = p == Phase::NodeReady;
            assert_eq!(p.has_own_timeout(), !shared, "{p}");
            let budget = p.budget_phase();
            assert_eq!(budget == Phase::BootstrapComplete && shared, shared, "{p}");
            assert_eq!(
                openshift_default_timeout(p),
                openshift_default_timeout(budget)
            );
        }
        assert_eq!(
            openshift_default_timeout(Phase::BootstrapComplete).as_secs(),
            45 * 60
        );
    }
}
