//! The installer a scenario's profile names, and its environment: minisno-install from the
//! fixture build (with the fixture's faults and schedule), or the user's `openshift-install`.

use std::path::PathBuf;

use crate::fixture::{self, BuildOptions};
use crate::scenario::{Profile, Scenario};

/// The installer's environment: the fixture's options, or the release image override; and
/// the FIPS host check skipped when the scenario asks.
pub fn installer_env(s: &Scenario) -> Vec<(String, String)> {
    let mut env = profile_env(s);
    if s.install.skip_hostcrypt_validation {
        env.push((
            "OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION".to_string(),
            "1".to_string(),
        ));
    }
    env
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
