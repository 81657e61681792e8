//! `minisno-install`: minisno's stand-in for the subset of `openshift-install` that
//! bootstrap-in-place uses (`create manifests`, `create single-node-ignition-config`,
//! `coreos print-stream-json`, `version`). A test fixture, not OpenShift: see
//! docs/bip-contract.md §2 and §3 for what it imitates.

pub mod assets;
pub mod bip;
pub mod cidr;
pub mod cli;
pub mod install_config;
pub mod log;
pub mod manifests;
pub mod pki;
pub mod release;
pub mod stream;
pub mod validate;

/// The release this fixture pretends to be, unless `MINISNO_VERSION` says otherwise.
pub const RELEASE: &str = release::DEFAULT_VERSION;
/// The commit this binary was built from, or "unknown".
pub const GIT_COMMIT: &str = env!("MINISNO_GIT_COMMIT");

/// How a command failed, which decides the exit code as the real tool does.
#[derive(Debug)]
pub enum Failure {
    /// An install-config error: logged at `error`, exit 3.
    InstallConfig(String),
    /// Any other error: logged at `fatal`, exit 1.
    Fatal(String),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::InstallConfig(_) => 3,
            Failure::Fatal(_) => 1,
        }
    }
}
