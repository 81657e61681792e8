//! minisno-ignition: apply a subset of an Ignition 3.x config (storage.files,
//! storage.directories, storage.links, systemd.units, passwd.users) to a root
//! directory. Anything outside that subset is a loud error, never ignored.

#[macro_use]
pub mod error;
pub mod config;
pub mod contents;
pub mod fsops;
pub mod nodes;
pub mod resource;
pub mod units;
pub mod users;

use std::ffi::OsString;
use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use config::{parse, Config};
pub use error::{report, Error, Result};

pub const USAGE: &str = "usage: minisno-ignition apply [--root DIR] CONFIG.json\n       minisno-ignition check CONFIG.json";

/// Applies a parsed config under a root directory, logging one line per
/// action to `out`.
pub struct Applier<'w> {
    root: PathBuf,
    /// Owner of nodes whose config names no user/group: root:root.
    default_owner: (u32, u32),
    out: &'w mut dyn Write,
}

/// "N files, N dirs, N links, N units, N users" for the closing summary line.
pub fn summary(cfg: &Config) -> String {
    let (files, dirs, links) = (
        cfg.files().len(),
        cfg.directories().len(),
        cfg.links().len(),
    );
    let (units, users) = (cfg.units().len(), cfg.users().len());
    format!("{files} files, {dirs} dirs, {links} links, {units} units, {users} users")
}

impl<'w> Applier<'w> {
    pub fn new(root: impl Into<PathBuf>, out: &'w mut dyn Write) -> Self {
        Applier {
            root: root.into(),
            default_owner: (0, 0),
            out,
        }
    }

    /// Use another default owner than root:root (for unprivileged tests).
    pub fn with_default_owner(mut self, uid: u32, gid: u32) -> Self {
        self.default_owner = (uid, gid);
        self
    }

    /// Map a path from the config (absolute, as seen in the guest) under the root.
    pub fn host(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    pub(crate) fn log(&mut self, msg: impl Display) {
        // Best effort: a closed stdout must not abort provisioning.
        let _ = writeln!(self.out, "minisno-ignition: {msg}");
    }

    /// Apply in Ignition's order: directories, files, links, units, users.
    pub fn apply(&mut self, cfg: &Config) -> Result<()> {
        if !self.root.is_dir() {
            return Err(Error::Root(format!(
                "{} is not a directory",
                self.root.display()
            )));
        }
        for (i, d) in cfg.directories().iter().enumerate() {
            self.apply_directory(&format!("storage.directories[{i}]"), d)?;
        }
        for (i, f) in cfg.files().iter().enumerate() {
            self.apply_file(&format!("storage.files[{i}]"), f)?;
        }
        for (i, l) in cfg.links().iter().enumerate() {
            self.apply_link(&format!("storage.links[{i}]"), l)?;
        }
        self.apply_units(cfg.units())?;
        for (i, u) in cfg.users().iter().enumerate() {
            self.apply_user(&format!("passwd.users[{i}]"), u)?;
        }
        self.log(format!("applied config ({})", summary(cfg)));
        Ok(())
    }
}

/// Read, parse and validate a config file.
pub fn load(path: &Path) -> Result<Config> {
    let file = path.display().to_string();
    parse(&std::fs::read_to_string(path).map_err(|source| Error::ReadConfig { file, source })?)
}

/// Parse argv into (command, root, config).
fn parse_args(args: &[OsString]) -> Result<(String, PathBuf, PathBuf)> {
    let usage = |why: &str| Error::Usage(format!("{why}\n{USAGE}"));
    let mut it = args.iter().skip(1);
    let cmd = it
        .next()
        .and_then(|c| c.to_str())
        .unwrap_or_default()
        .to_string();
    let (mut root, mut config) = (PathBuf::from("/"), None);
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--root") if cmd == "apply" => {
                root = it
                    .next()
                    .ok_or_else(|| usage("--root needs a value"))?
                    .into()
            }
            Some(s) if cmd == "apply" && s.starts_with("--root=") => {
                root = s["--root=".len()..].into()
            }
            Some(s) if s.starts_with('-') => return Err(usage(&format!("unknown option {s}"))),
            _ if config.is_none() => config = Some(PathBuf::from(arg)),
            _ => return Err(usage("too many arguments")),
        }
    }
    if cmd != "apply" && cmd != "check" {
        return Err(usage(&format!("unknown or missing command {cmd:?}")));
    }
    Ok((
        cmd,
        root,
        config.ok_or_else(|| usage("missing CONFIG.json"))?,
    ))
}

/// The whole CLI; returns the exit code. Action lines go to `out`, the loud
/// error report to `err`.
pub fn cli(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let (result, config, action) = match parse_args(args) {
        Err(e) => (Err(e), None, ""),
        Ok((cmd, root, config)) => {
            let shown = config.display().to_string();
            let result = load(&config).and_then(|cfg| match cmd.as_str() {
                "check" => {
                    let _ = writeln!(
                        out,
                        "minisno-ignition: config {shown} is valid ({})",
                        summary(&cfg)
                    );
                    Ok(())
                }
                _ => Applier::new(root, out).apply(&cfg),
            });
            let action = if cmd == "check" {
                "accepted"
            } else {
                "(fully) applied"
            };
            (result, Some(shown), action)
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            let _ = err.write_all(report(&e, config.as_deref(), action).as_bytes());
            1
        }
    }
}

#[cfg(test)]
mod tests;
