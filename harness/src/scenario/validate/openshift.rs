//! `[openshift]`: the installer, the release image and the live ISO the scenario names.

use std::path::Path;

use super::{Ctx, ScenarioError};
use crate::scenario::files;
use crate::scenario::model::*;

pub(super) fn openshift_section(
    cx: &Ctx,
    f: &ScenarioFile,
    profile: Profile,
) -> Result<Option<OpenshiftSpec>, ScenarioError> {
    Ok(match (&f.openshift, profile) {
        (Some(s), Profile::Fixture) => {
            return Err(cx.at(
                s,
                "an [openshift] section only applies to profile = \"openshift\"",
            ))
        }
        (Some(s), Profile::Openshift) => Some(OpenshiftSpec {
            // Not checked here: the run's preflight looks for it (exit 3), as `doctor` does.
            installer: s
                .get_ref()
                .installer
                .as_deref()
                .map(|p| files::resolve_program(cx.file, p)),
            release_image: s.get_ref().release_image.clone(),
            iso: own_iso(cx, s.get_ref())?,
        }),
        (None, Profile::Openshift) => Some(OpenshiftSpec {
            installer: None,
            release_image: None,
            iso: None,
        }),
        (None, Profile::Fixture) => None,
    })
}

/// `[openshift] iso` and `iso_sha256`: an http(s) URL with its digest, or a regular file
/// (relative to the scenario) with or without one. The file is not read here: an ISO is a GiB.
fn own_iso(cx: &Ctx, s: &OpenshiftSection) -> Result<Option<OwnIso>, ScenarioError> {
    let sha256 = match &s.iso_sha256 {
        Some(d)
            if d.get_ref().len() == 64 && d.get_ref().bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Some(d.get_ref().to_ascii_lowercase())
        }
        Some(d) => {
            return Err(cx.at(
                d,
                format!(
                    "openshift.iso_sha256 = {:?}: 64 hex digits, as sha256sum prints them",
                    d.get_ref()
                ),
            ))
        }
        None => None,
    };
    let Some(iso) = &s.iso else {
        return match &s.iso_sha256 {
            Some(d) => Err(cx.at(
                d,
                "openshift.iso_sha256 without openshift.iso: name the ISO it is the digest of",
            )),
            None => Ok(None),
        };
    };
    let text = iso.get_ref();
    if text.starts_with("http://") || text.starts_with("https://") {
        let Some(sha256) = sha256 else {
            return Err(cx.at(iso, format!("openshift.iso = {text:?} is a URL: add openshift.iso_sha256, the digest the download must have")));
        };
        return Ok(Some(OwnIso::Url {
            url: text.clone(),
            sha256,
        }));
    }
    if text.is_empty() || text.contains("://") {
        return Err(cx.at(
            iso,
            format!("openshift.iso = {text:?}: a path to the ISO, or an http:// or https:// URL"),
        ));
    }
    let path = files::resolve(cx.file, Path::new(text));
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(Some(OwnIso::File { path, sha256 })),
        Ok(_) => Err(cx.at(
            iso,
            format!("openshift.iso: {} is not a regular file", path.display()),
        )),
        Err(e) => Err(cx.at(
            iso,
            format!(
                "openshift.iso: {}: {e} (the path is relative to the scenario file, or absolute)",
                path.display()
            ),
        )),
    }
}
