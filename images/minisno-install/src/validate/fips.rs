//! The install-config's FIPS checks: with `fips: true` the SSH key must be RSA or ECDSA, and the
//! host must be able to install a FIPS cluster. The installer this fixture stands in for is the
//! ordinary (not FIPS-capable) binary, which refuses every FIPS cluster; it names the host too
//! when the host itself is not in FIPS mode. A non-empty
//! `OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION` turns the host refusal into a warning.

use super::field::{self, Value};

/// Where the kernel says whether it runs in FIPS mode.
pub const FIPS_FILE: &str = "/proc/sys/crypto/fips_enabled";
pub const SKIP_ENV: &str = "OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION";

const BINARY_INSTRUCTIONS: &str = "To obtain a suitable binary, download the openshift-install-rhel9 archive from the client mirror, or extract the openshift-install-fips command from the release payload.";

/// What the FIPS checks need to know about the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The contents of [`FIPS_FILE`], `None` when it cannot be read.
    pub fips_enabled: Option<String>,
    /// Whether the hostcrypt check is skipped.
    pub skip_hostcrypt: bool,
}

impl Host {
    /// This machine, as the command runs on it.
    pub fn current() -> Host {
        Host {
            fips_enabled: std::fs::read_to_string(FIPS_FILE).ok(),
            skip_hostcrypt: std::env::var_os(SKIP_ENV).is_some_and(|v| !v.is_empty()),
        }
    }
}

/// Go's `strconv.ParseBool` of the file's first line.
fn host_in_fips_mode(contents: Option<&str>) -> bool {
    matches!(
        contents.map(|c| c.strip_suffix('\n').unwrap_or(c)),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

/// The refusal of the ordinary installer binary for a FIPS cluster (two lines).
pub fn hostcrypt_refusal(host: &Host) -> String {
    let on_host = if host_in_fips_mode(host.fips_enabled.as_deref()) {
        ""
    } else {
        " on a host with FIPS enabled"
    };
    format!(
        "target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9{on_host}.\n{BINARY_INSTRUCTIONS}"
    )
}

/// The result of the FIPS checks of a `fips: true` config.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FipsOutcome {
    pub errors: Vec<String>,
    /// The refusal the skip variable turned into a warning.
    pub bypassed: Option<String>,
}

/// The checks made when the install-config asks for FIPS.
pub fn check(ssh_key: Option<&str>, host: &Host) -> FipsOutcome {
    let mut out = FipsOutcome::default();
    if let Some(key) = ssh_key.filter(|k| !k.is_empty()) {
        match super::sshkey::key_type(key) {
            Err(e) => out.errors.push(field::invalid(
                "sshKey",
                Value::Str(key),
                &format!("Fatal error trying to parse configured public key: {e}"),
            )),
            Ok(t) if !fips_key_type(&t) => out.errors.push(field::invalid(
                "sshKey",
                Value::Str(key),
                &format!(
                    "SSH key type {t} unavailable when FIPS is enabled. Please use rsa or ecdsa."
                ),
            )),
            Ok(_) => {}
        }
    }
    let refusal = hostcrypt_refusal(host);
    if host.skip_hostcrypt {
        out.bypassed = Some(refusal);
    } else {
        out.errors.push(field::forbidden("fips", &refusal));
    }
    out
}

/// `^ecdsa-sha2-nistp\d{3}$|^ssh-rsa$`.
fn fips_key_type(t: &str) -> bool {
    t == "ssh-rsa"
        || t.strip_prefix("ecdsa-sha2-nistp")
            .is_some_and(|n| n.len() == 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(file: Option<&str>, skip: bool) -> Host {
        Host {
            fips_enabled: file.map(str::to_string),
            skip_hostcrypt: skip,
        }
    }

    #[test]
    fn the_ordinary_binary_refuses_and_names_a_host_without_fips() {
        for file in [None, Some("0\n"), Some("garbage")] {
            let out = check(None, &host(file, false));
            assert_eq!(
                out.errors,
                [format!(
                    "fips: Forbidden: target cluster is in FIPS mode, use the FIPS-capable installer binary for RHEL 9 on a host with FIPS enabled.\n{BINARY_INSTRUCTIONS}"
                )],
                "{file:?}"
            );
        }
        let out = check(None, &host(Some("1\n"), false));
        assert!(
            out.errors[0].contains("binary for RHEL 9.\nTo obtain"),
            "{out:?}"
        );
    }

    #[test]
    fn skipping_turns_the_refusal_into_a_warning() {
        let out = check(None, &host(None, true));
        assert!(out.errors.is_empty());
        assert!(out
            .bypassed
            .unwrap()
            .starts_with("target cluster is in FIPS mode"));
    }

    #[test]
    fn ed25519_keys_are_refused_under_fips_even_when_skipping() {
        let key = super::super::sshkey::tests::ED25519;
        let out = check(Some(key), &host(None, true));
        assert_eq!(
            out.errors,
            [format!("sshKey: Invalid value: \"{key}\": SSH key type ssh-ed25519 unavailable when FIPS is enabled. Please use rsa or ecdsa.")]
        );
        let out = check(Some("not a key"), &host(None, true));
        assert!(out.errors[0]
            .ends_with("Fatal error trying to parse configured public key: ssh: no key found"));
        assert!(fips_key_type("ecdsa-sha2-nistp256") && fips_key_type("ssh-rsa"));
        assert!(!fips_key_type("ssh-ed25519") && !fips_key_type("ecdsa-sha2-nistp25"));
    }
}
