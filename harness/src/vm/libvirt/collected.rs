//! What `gc` did and could not do, one line each: filled by the registry's half of gc and by
//! the libvirt half (`gc`), or its stand-in in a build without libvirt (`absent`).

/// What gc did (or, with `dry_run`, would do), one line per action; and what it could not.
#[derive(Debug, Default)]
pub struct Collected {
    pub actions: Vec<String>,
    pub errors: Vec<String>,
    /// Runs still in progress, left alone.
    pub alive: Vec<String>,
    /// What this build cannot look at (libvirt's objects, in a build without libvirt).
    pub skipped: Vec<String>,
}
