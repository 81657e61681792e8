//! The release the simulated cluster reports: minisno's own by default, or the one
//! `MINISNO_VERSION` names (so that a harness can be shown clusters of older releases, whose
//! etcd operator words its conditions differently and whose post-reboot script does less).

/// The release minisno reports unless told otherwise.
pub const DEFAULT_VERSION: &str = "4.17.0-minisno";
pub const VERSION_ENV: &str = "MINISNO_VERSION";
pub const IMAGE_OVERRIDE_ENV: &str = "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE";

/// Whether `v` is a release version: `major.minor.patch`, optionally `-suffix` (`4.14.3`,
/// `4.16.0-rc.1`, `4.17.0-minisno`).
pub fn is_version(v: &str) -> bool {
    let (core, suffix) = match v.split_once('-') {
        Some((c, s)) => (c, Some(s)),
        None => (v, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let number = |n: &&str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    let suffix_ok = suffix.is_none_or(|s| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    });
    numbers.len() == 3 && numbers.iter().all(number) && suffix_ok
}

/// The release image of `version`: the override from the environment, else minisno's image of
/// that version (baked into the OS image).
pub fn image(version: &str) -> String {
    std::env::var(IMAGE_OVERRIDE_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| format!("quay.io/minisno/release:{version}"))
}

/// The version in force: `MINISNO_VERSION` when it is set and valid, else the default.
pub fn version_from_env() -> String {
    std::env::var(VERSION_ENV)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| is_version(v))
        .unwrap_or_else(|| DEFAULT_VERSION.to_string())
}

/// `(major, minor)` of a version; None when it does not start `<major>.<minor>`.
fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether the post-reboot script of `version` creates configmap kube-system/bootstrap: from
/// the 4.12 installer (openshift/installer PR #6521, Nov 2022); before, nothing in
/// bootstrap-in-place does.
pub fn creates_bootstrap_configmap(version: &str) -> bool {
    major_minor(version).is_none_or(|r| r >= (4, 12))
}

/// Whether the post-reboot script's cleanup of `version` removes /opt/openshift: from the 4.13
/// installer (Jan 2023); before, the directory stays on the installed system.
pub fn removes_opt_openshift(version: &str) -> bool {
    major_minor(version).is_none_or(|r| r >= (4, 13))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_post_reboot_script_follows_the_release() {
        let at = |v| (creates_bootstrap_configmap(v), removes_opt_openshift(v));
        assert_eq!(at("4.11.0"), (false, false));
        assert_eq!(at("4.12.0"), (true, false));
        assert_eq!(at("4.12.80"), (true, false));
        assert_eq!(at("4.13.0"), (true, true));
        assert_eq!(at("4.17.0-minisno"), (true, true));
    }

    #[test]
    fn versions() {
        for ok in [
            "4.14.3",
            "4.17.0-minisno",
            "4.16.0-rc.1",
            "4.15.0-0.nightly-2024-01-01-000000",
        ] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in [
            "", "4.14", "4.14.x", "v4.14.3", "4.14.3-", "4..3", "4.14.3 ",
        ] {
            assert!(!is_version(bad), "{bad}");
        }
    }
}
