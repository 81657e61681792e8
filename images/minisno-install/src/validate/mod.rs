//! The checks of the real tool's install-config asset (its `ValidateInstallConfig`), made on the
//! config with the real defaults applied and in the real order, every error collected. A config
//! that fails here is an error of the install-config asset: exit 3 (docs/bip-contract.md §3).
//!
//! Not reproduced: SSH key checks without FIPS, trust-bundle parsing, overlaps between networks,
//! platform-specific settings, capabilities and publishing strategies.

pub mod bootstrap_in_place;
pub mod field;
pub mod fips;
mod names;
mod networking;
pub mod sshkey;
#[cfg(test)]
mod tests;

use field::Value;
pub use fips::Host;

use crate::install_config::InstallConfig;

/// The trust-bundle policies the real tool knows.
pub const TRUST_BUNDLE_POLICIES: &[&str] = &["Proxyonly", "Always"];

/// Platforms the real tool accepts, as its message lists them (sorted).
const PLATFORMS: &[&str] = &[
    "aws",
    "azure",
    "baremetal",
    "external",
    "gcp",
    "ibmcloud",
    "none",
    "nutanix",
    "openstack",
    "powervs",
    "vsphere",
];
/// The order in which the real tool names the platform of a config that has several.
const PLATFORM_NAME_ORDER: &[&str] = &[
    "aws",
    "azure",
    "baremetal",
    "gcp",
    "ibmcloud",
    "none",
    "external",
    "openstack",
    "vsphere",
    "ovirt",
    "powervs",
    "nutanix",
];
/// The platforms whose own validation runs (and refuses a second platform).
const VALIDATED_PLATFORMS: &[&str] = &[
    "aws",
    "azure",
    "gcp",
    "ibmcloud",
    "openstack",
    "powervs",
    "vsphere",
    "baremetal",
    "ovirt",
    "nutanix",
];

/// What the checks found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub errors: Vec<String>,
    /// The FIPS host refusal that `OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION` turned into a
    /// warning; the real tool then marks the config with an annotation.
    pub hostcrypt_bypassed: Option<String>,
}

impl Outcome {
    /// The aggregate text of the errors, `None` when there are none.
    pub fn error_text(&self) -> Option<String> {
        (!self.errors.is_empty()).then(|| field::aggregate(&self.errors))
    }
}

/// The platform the config names: the first one set, in the real tool's order.
pub fn platform_name(config: &InstallConfig) -> &'static str {
    PLATFORM_NAME_ORDER
        .iter()
        .find(|p| config.platform.contains_key(**p))
        .copied()
        .unwrap_or("")
}

/// Validates a config whose defaults are applied ([`InstallConfig::with_defaults`]).
pub fn validate(config: &InstallConfig, host: &Host) -> Outcome {
    let mut out = Outcome::default();
    match config.api_version.as_deref().unwrap_or_default() {
        "" => {
            out.errors.push(field::required(
                "apiVersion",
                "install-config version required",
            ));
            return out;
        }
        "v1" => {}
        other => {
            out.errors.push(field::invalid(
                "apiVersion",
                Value::Str(other),
                "install-config version must be \"v1\"",
            ));
            return out;
        }
    }
    if config.fips == Some(true) {
        let f = fips::check(config.ssh_key.as_deref(), host);
        out.errors.extend(f.errors);
        out.hostcrypt_bypassed = f.bypassed;
    }
    out.errors.extend(trust_bundle_policy_errors(config));
    out.errors.extend(name_errors(config));
    let platform = platform_name(config);
    if let Some(n) = &config.networking {
        out.errors.extend(networking::errors(n, platform));
    }
    out.errors.extend(platform_errors(config, platform));
    out.errors.extend(control_plane_errors(config));
    out.errors
        .extend(pull_secret_errors(config.pull_secret.as_deref()));
    out.errors.extend(proxy_errors(config));
    out
}

fn trust_bundle_policy_errors(config: &InstallConfig) -> Vec<String> {
    match config.additional_trust_bundle_policy.as_deref() {
        None | Some("") => vec![],
        Some(p) if TRUST_BUNDLE_POLICIES.contains(&p) => vec![],
        Some(p) => vec![field::invalid(
            "additionalTrustBundlePolicy",
            Value::Str(p),
            "supported values \"Proxyonly\", \"Always\"",
        )],
    }
}

fn name_errors(config: &InstallConfig) -> Vec<String> {
    let name = config.metadata.name.as_str();
    let domain = config.base_domain.as_str();
    let mut errs = Vec::new();
    let name_err = names::cluster_name(name);
    if let Some(e) = &name_err {
        errs.push(field::invalid("metadata.name", Value::Str(name), e));
    }
    let domain_err = names::domain_name(domain);
    if let Some(e) = &domain_err {
        errs.push(field::invalid("baseDomain", Value::Str(domain), e));
    }
    if name_err.is_none() && domain_err.is_none() {
        let cluster_domain = format!("{name}.{domain}");
        if let Some(e) = names::domain_name(&cluster_domain) {
            errs.push(field::invalid(
                "baseDomain",
                Value::Str(&cluster_domain),
                &e,
            ));
        }
    }
    errs
}

fn platform_errors(config: &InstallConfig, name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if !PLATFORMS.contains(&name) {
        errs.push(field::invalid(
            "platform",
            Value::Str(name),
            &format!(
                "must specify one of the platforms ({})",
                PLATFORMS.join(", ")
            ),
        ));
    }
    for other in VALIDATED_PLATFORMS
        .iter()
        .filter(|p| config.platform.contains_key(**p) && **p != name)
    {
        errs.push(field::invalid("platform", Value::Str(name), &format!("must only specify a single type of platform; cannot use both \"{name}\" and \"{other}\"")));
    }
    errs
}

fn control_plane_errors(config: &InstallConfig) -> Vec<String> {
    match config.control_plane.as_ref().and_then(|p| p.replicas) {
        Some(0) => vec![field::invalid(
            "controlPlane.replicas",
            Value::Int(0),
            "number of control plane replicas must be positive",
        )],
        _ => vec![],
    }
}

/// The pull secret's shape. Unlike the real tool, which prints the secret in the error, the
/// fixture never shows it.
fn pull_secret_errors(pull_secret: Option<&str>) -> Vec<String> {
    const REDACTED: Value = Value::Str("<redacted>");
    let text = pull_secret.unwrap_or_default();
    let invalid = |why: &str| vec![field::invalid("pullSecret", REDACTED, why)];
    if text.trim().is_empty() {
        return invalid("unexpected end of JSON input");
    }
    // serde_json's messages name positions, never the input, so they are safe to show.
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return invalid(&e.to_string()),
    };
    let auths = value.get("auths").and_then(serde_json::Value::as_object);
    let Some(auths) = auths.filter(|a| !a.is_empty()) else {
        return invalid("auths required");
    };
    let missing: Vec<String> = auths
        .iter()
        .filter(|(_, a)| a.get("auth").is_none() && a.get("credsStore").is_none())
        .map(|(registry, _)| {
            format!(
                "{} requires either auth or credsStore",
                field::go_quote(registry)
            )
        })
        .collect();
    if missing.is_empty() {
        vec![]
    } else {
        invalid(&field::aggregate(&missing))
    }
}

fn proxy_errors(config: &InstallConfig) -> Vec<String> {
    let Some(p) = &config.proxy else {
        return vec![];
    };
    let empty = |v: &Option<String>| v.as_deref().unwrap_or_default().is_empty();
    if empty(&p.http_proxy) && empty(&p.https_proxy) {
        vec![field::required(
            "proxy",
            "must include httpProxy or httpsProxy",
        )]
    } else {
        vec![]
    }
}
