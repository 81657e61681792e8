//! The scenario file as written (serde types, unknown keys rejected) and the validated
//! `Scenario` the runner uses, by part: how values are read (`syntax`), the file's top table
//! and its small sections (`file`), the VM and its disks (`vm`), the install (`install`), and
//! the node's network setup (`network`), and the validated scenario (`scenario`).

mod file;
mod install;
mod network;
mod scenario;
mod syntax;
mod vm;

pub use crate::hw::Disk;
pub use file::{
    AccessSection, BadnessSection, BootSection, BootSource, ChecksSection, CrashSeverity,
    EtcdCheck, ExpectSection, FixtureSection, OpenshiftSection, OperatorsRule, Profile,
    ScenarioFile, TimeoutValue, BOOTKUBE_RESTARTS_KEY, DEFAULT_DISK_WRITE_STALL,
    DISK_WRITE_STALL_KEY,
};
pub use install::{
    AssistedSection, CapabilitiesSection, ClusterNetworkEntry, DiskNaming, InstallMode,
    InstallSection, InstallSpec, InstallationDiskSpec, ProxySection, SecretSource,
    TrustBundlePolicy,
};
pub use network::{
    AddressSection, BondMode, BondSection, BondSpec, NetworkMode, NetworkSection, NetworkSpec,
    StaticAddress,
};
pub use scenario::{FixtureSpec, OpenshiftSpec, OwnIso, Scenario};
pub(crate) use syntax::{entries, option_spanned_choice};
pub use vm::{
    BootOrder, DiskSection, GuestNetwork, ThrottleSection, VmConfig, VmSection, MAX_VCPUS,
    MULTIPATH_NO_KARGS_FAULT, MULTIPATH_PATH_LOST_FAULT,
};
