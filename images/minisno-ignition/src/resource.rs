//! A file's `contents` and `append` entries (Ignition's resource): part of config.rs's
//! schema, apart from it because contents.rs, which resolves them, is called by config.rs's
//! validation.

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resource {
    pub source: Option<String>,
    pub compression: Option<String>,
    pub verification: Option<Verification>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verification {
    pub hash: Option<String>,
}
