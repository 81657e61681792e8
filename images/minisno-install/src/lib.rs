//! `minisno-install`: minisno's stand-in for the subset of `openshift-install` that
//! bootstrap-in-place uses (`create single-node-ignition-config`, `coreos print-stream-json`,
//! `version`). A test fixture, not OpenShift: see docs/bip-contract.md §2 and §3 for what it imitates.

pub mod assets;
pub mod bip;
pub mod cli;
pub mod install_config;
pub mod log;
pub mod pki;
pub mod stream;
pub mod validate;

/// The release this fixture pretends to be.
pub const RELEASE: &str = "4.17.0-minisno";
/// The release image it reports (`OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE` replaces it).
pub const RELEASE_IMAGE: &str = "quay.io/minisno/release:4.17.0-minisno";
/// The commit this binary was built from, or "unknown".
pub const GIT_COMMIT: &str = env!("MINISNO_GIT_COMMIT");

/// The release image in force: the override from the environment, else [`RELEASE_IMAGE`].
pub fn release_image() -> String {
    std::env::var("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| RELEASE_IMAGE.to_string())
}

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
