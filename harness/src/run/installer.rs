//! The installer a scenario's profile names, and its environment: minisno-install from the
//! fixture build (with the fixture's faults and schedule), or the user's `openshift-install`.

use std::path::PathBuf;

use crate::fixture::{self, BuildOptions};
use crate::scenario::{Profile, Scenario};

/// The installer's environment: the fixture's options, or the release image override; the
/// FIPS host check skipped when the scenario asks; and the installer's own variables this
/// process inherited (`inherited_installer_env`), passed on and recorded, never silently.
pub fn installer_env(s: &Scenario) -> Vec<(String, String)> {
    let mut env = scenario_env(s);
    env.extend(inherited_installer_env(s, std::env::vars()));
    env
}

/// What the scenario itself sets.
fn scenario_env(s: &Scenario) -> Vec<(String, String)> {
    let mut env = profile_env(s);
    if s.install.skip_hostcrypt_validation {
        env.push((
            "OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION".to_string(),
            "1".to_string(),
        ));
    }
    env
}

/// The prefix of the installer's own variables (openshift/installer reads
/// `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`, `..._OS_IMAGE_OVERRIDE`,
/// `..._SKIP_HOSTCRYPT_VALIDATION` and more): each changes what it installs.
pub const INSTALLER_ENV_PREFIX: &str = "OPENSHIFT_INSTALL_";

/// The variables whose values the run may record: images and switches, never credentials.
const RECORDED_VALUES: &[&str] = &[
    "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
    "OPENSHIFT_INSTALL_OS_IMAGE_OVERRIDE",
    "OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION",
];

/// The installer's variables in `env` (this process's environment: a CI step's
/// `OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE`, say) that the scenario does not set itself:
/// the installer would inherit them anyway, so they are passed on explicitly, which puts the
/// release they choose in result.json (`assets.release_image`) and them in
/// `assets.inherited_env`. The scenario's own value wins over an inherited one.
pub fn inherited_installer_env(
    s: &Scenario,
    env: impl Iterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let own = scenario_env(s);
    let mut inherited: Vec<(String, String)> = env
        .filter(|(k, _)| k.starts_with(INSTALLER_ENV_PREFIX))
        .filter(|(k, _)| !own.iter().any(|(o, _)| o == k))
        .collect();
    inherited.sort();
    inherited
}

/// How result.json records an inherited variable: `NAME=VALUE` for images and switches,
/// the name alone for anything else (it may hold a credential).
pub fn recorded(name: &str, value: &str) -> String {
    if RECORDED_VALUES.contains(&name) {
        format!("{name}={value}")
    } else {
        format!("{name} (inherited; its value is not recorded)")
    }
}

fn profile_env(s: &Scenario) -> Vec<(String, String)> {
    match (&s.fixture, &s.openshift) {
        (Some(f), _) => {
            let mut env = vec![
                ("MINISNO_SCHEDULE".to_string(), f.schedule.clone()),
                ("MINISNO_FAULTS".to_string(), f.faults.join(",")),
            ];
            if let Some(v) = &f.version {
                env.push(("MINISNO_VERSION".to_string(), v.clone()));
            }
            env
        }
        (None, Some(o)) => o
            .release_image
            .iter()
            .map(|r| {
                (
                    "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE".to_string(),
                    r.clone(),
                )
            })
            .collect(),
        (None, None) => Vec::new(),
    }
}

/// The installer binary and its environment, from the profile (building the fixture when
/// the profile is `fixture`).
pub fn installer_for(s: &Scenario) -> Result<(PathBuf, Vec<(String, String)>), String> {
    let path = match s.profile {
        Profile::Fixture => {
            let a = fixture::build(&BuildOptions::default()).map_err(|e| e.to_string())?;
            a.installer.ok_or("the fixture build has no installer")?
        }
        Profile::Openshift => match s.openshift.as_ref().and_then(|o| o.installer.clone()) {
            Some(p) => p,
            None => crate::util::which("openshift-install")
                .ok_or("openshift-install is not on PATH; set [openshift] installer = \"PATH\"")?,
        },
    };
    Ok((path, installer_env(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(file: &str) -> Scenario {
        crate::scenario::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
    }

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn the_installers_inherited_variables_are_passed_on_and_the_scenarios_own_win() {
        let mut s = scenario("../scenarios/smoke.toml");
        let ci = || {
            env(&[
                (
                    "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
                    "quay.io/ci/release:4.16",
                ),
                ("OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION", "0"),
                ("PATH", "/bin"),
            ])
        };
        let names = |v: Vec<(String, String)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            names(inherited_installer_env(&s, ci())),
            [
                "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE",
                "OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION"
            ]
        );
        // The scenario sets the host check itself: its value, not the environment's.
        s.install.skip_hostcrypt_validation = true;
        assert_eq!(
            names(inherited_installer_env(&s, ci())),
            ["OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE"]
        );
    }

    #[test]
    fn only_images_and_switches_are_recorded_with_their_values() {
        assert_eq!(
            recorded("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE", "quay.io/r:1"),
            "OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE=quay.io/r:1"
        );
        assert_eq!(
            recorded("OPENSHIFT_INSTALL_EXPERIMENTAL_X", "token"),
            "OPENSHIFT_INSTALL_EXPERIMENTAL_X (inherited; its value is not recorded)"
        );
    }
}
