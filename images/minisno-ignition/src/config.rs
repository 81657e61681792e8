//! The supported subset of the Ignition 3.x schema, parsing and validation.
//! Every struct denies unknown fields: an unsupported key is an error.

use std::collections::HashSet;
use std::path::{Component, Path};

use serde::Deserialize;

use crate::contents;
use crate::error::{Error, Result};
// A file's resources are in a module of their own: contents.rs resolves them and the
// validation here calls contents.rs.
pub use crate::resource::{Resource, Verification};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub ignition: Ignition,
    pub storage: Option<Storage>,
    pub systemd: Option<Systemd>,
    pub passwd: Option<Passwd>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ignition {
    pub version: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    pub files: Option<Vec<File>>,
    pub directories: Option<Vec<Directory>>,
    pub links: Option<Vec<Link>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub path: String,
    pub overwrite: Option<bool>,
    pub mode: Option<u32>,
    pub contents: Option<Resource>,
    pub append: Option<Vec<Resource>>,
    pub user: Option<Owner>,
    pub group: Option<Owner>,
}

/// `user` / `group` of a node: by numeric id or by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Owner {
    pub id: Option<u32>,
    pub name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Directory {
    pub path: String,
    pub overwrite: Option<bool>,
    pub mode: Option<u32>,
    pub user: Option<Owner>,
    pub group: Option<Owner>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub path: String,
    pub target: Option<String>,
    pub hard: Option<bool>,
    pub overwrite: Option<bool>,
    pub user: Option<Owner>,
    pub group: Option<Owner>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Systemd {
    pub units: Option<Vec<Unit>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unit {
    pub name: String,
    pub enabled: Option<bool>,
    pub mask: Option<bool>,
    pub contents: Option<String>,
    pub dropins: Option<Vec<Dropin>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropin {
    pub name: String,
    pub contents: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Passwd {
    pub users: Option<Vec<User>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct User {
    pub name: String,
    pub ssh_authorized_keys: Option<Vec<String>>,
    pub password_hash: Option<String>,
    pub groups: Option<Vec<String>>,
}

fn list<T>(v: &Option<Vec<T>>) -> &[T] {
    v.as_deref().unwrap_or(&[])
}

impl Config {
    pub fn files(&self) -> &[File] {
        self.storage.as_ref().map_or(&[], |s| list(&s.files))
    }
    pub fn directories(&self) -> &[Directory] {
        self.storage.as_ref().map_or(&[], |s| list(&s.directories))
    }
    pub fn links(&self) -> &[Link] {
        self.storage.as_ref().map_or(&[], |s| list(&s.links))
    }
    pub fn units(&self) -> &[Unit] {
        self.systemd.as_ref().map_or(&[], |s| list(&s.units))
    }
    pub fn users(&self) -> &[User] {
        self.passwd.as_ref().map_or(&[], |p| list(&p.users))
    }
}

/// Parse and validate a config from its JSON text.
pub fn parse(text: &str) -> Result<Config> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Error::Json(e.to_string()))?;
    // Version first: a 2.x config gets a version error, not an unknown-key one.
    check_version(&value)?;
    let cfg: Config = serde_path_to_error::deserialize(value).map_err(serde_error)?;
    validate(&cfg)?;
    Ok(cfg)
}

fn serde_error(err: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let (path, msg) = (err.path().to_string(), err.inner().to_string());
    let join = |key: &str| match path.as_str() {
        "." => key.to_string(),
        p if p == key || p.ends_with(&format!(".{key}")) => p.to_string(),
        p => format!("{p}.{key}"),
    };
    let quoted = |rest: &str| rest.split('`').next().unwrap_or_default().to_string();
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        return Error::UnknownKey {
            path: join(&quoted(rest)),
        };
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        return Error::Invalid {
            path: join(&quoted(rest)),
            msg: "required key is missing".into(),
        };
    }
    Error::Invalid { path, msg }
}

fn check_version(value: &serde_json::Value) -> Result<()> {
    const WANT: &str = "minisno-ignition supports Ignition spec versions 3.0.0 through 3.4.0";
    let version = value.get("ignition").and_then(|i| i.get("version"));
    let Some(version) = version.and_then(|v| v.as_str()) else {
        fail!(
            Invalid,
            "ignition.version",
            "required string key missing; {WANT}"
        );
    };
    let nums: Option<Vec<u32>> = version.split('.').map(|p| p.parse().ok()).collect();
    let hint = match version.starts_with("2.") || version.starts_with("1.") {
        true => " (translate 1.x/2.x configs to spec 3.x, e.g. with butane)",
        false => "",
    };
    let ok = matches!(nums.as_deref(), Some([3, minor, _]) if *minor <= 4);
    ensure!(
        ok,
        "ignition.version",
        "unsupported config version {version:?}{hint}; {WANT}"
    );
    Ok(())
}

/// Path checks shared by files, directories and links.
fn check_node(
    seen: &mut HashSet<String>,
    jp: &str,
    path: &str,
    mode: Option<u32>,
    owners: [&Option<Owner>; 2],
) -> Result<()> {
    let (p, jpath) = (Path::new(path), format!("{jp}.path"));
    ensure!(p.is_absolute(), jpath, "path {path:?} must be absolute");
    let clean = p.parent().is_some() && !p.components().any(|c| c == Component::ParentDir);
    ensure!(
        clean,
        jpath,
        "path {path:?} must not be `/` or contain `..`"
    );
    ensure!(
        seen.insert(path.trim_end_matches('/').into()),
        jpath,
        "duplicate entry for {path:?}"
    );
    ensure!(
        mode.unwrap_or(0) <= 0o7777,
        format!("{jp}.mode"),
        "mode must be a decimal integer <= 4095 (0o7777)"
    );
    for (owner, key) in owners.into_iter().zip(["user", "group"]) {
        let both = owner
            .as_ref()
            .is_some_and(|o| o.id.is_some() && o.name.is_some());
        ensure!(
            !both,
            format!("{jp}.{key}"),
            "specify only one of `id` and `name`"
        );
    }
    Ok(())
}

/// Names become file names (units, dropins) or /etc/passwd fields (users, groups).
fn check_name(jpath: &str, name: &str, what: &str) -> Result<()> {
    let forbidden: &[char] = if what == "unit" || what == "dropin" {
        &['/', '\n', '\0']
    } else {
        &['/', ':', ',', '\n', '\0']
    };
    let bad = name.is_empty() || name.starts_with('.') || name.contains(forbidden);
    ensure!(!bad, jpath, "invalid {what} name {name:?}");
    Ok(())
}

const UNIT_SUFFIXES: [&str; 11] = [
    ".service",
    ".socket",
    ".target",
    ".timer",
    ".mount",
    ".automount",
    ".path",
    ".slice",
    ".swap",
    ".device",
    ".scope",
];

/// Semantic validation (Ignition's rules plus minisno's limits). Also decodes
/// every data URL, so `check` catches bad contents and hash mismatches.
pub fn validate(cfg: &Config) -> Result<()> {
    let mut paths = HashSet::new();
    for (i, f) in cfg.files().iter().enumerate() {
        let jp = format!("storage.files[{i}]");
        check_node(&mut paths, &jp, &f.path, f.mode, [&f.user, &f.group])?;
        let has_source = f.contents.as_ref().is_some_and(|c| c.source.is_some());
        let why = "overwrite must be false if contents.source is unspecified (Ignition rule)";
        ensure!(
            f.overwrite != Some(true) || has_source,
            format!("{jp}.overwrite"),
            "{why}"
        );
        if let Some(c) = &f.contents {
            contents::fetch(c, &format!("{jp}.contents"))?;
        }
        for (j, a) in list(&f.append).iter().enumerate() {
            contents::fetch(a, &format!("{jp}.append[{j}]"))?;
        }
    }
    for (i, d) in cfg.directories().iter().enumerate() {
        check_node(
            &mut paths,
            &format!("storage.directories[{i}]"),
            &d.path,
            d.mode,
            [&d.user, &d.group],
        )?;
    }
    for (i, l) in cfg.links().iter().enumerate() {
        let jp = format!("storage.links[{i}]");
        check_node(&mut paths, &jp, &l.path, None, [&l.user, &l.group])?;
        let target = l.target.as_deref().unwrap_or_default();
        ensure!(
            !target.is_empty(),
            format!("{jp}.target"),
            "link target is required"
        );
        let abs = l.hard != Some(true) || target.starts_with('/');
        ensure!(
            abs,
            format!("{jp}.target"),
            "hard link target {target:?} must be absolute"
        );
    }
    let mut units = HashSet::new();
    for (i, u) in cfg.units().iter().enumerate() {
        let (jp, name) = (format!("systemd.units[{i}]"), &u.name);
        check_name(&format!("{jp}.name"), name, "unit")?;
        let typed = UNIT_SUFFIXES.iter().any(|s| name.ends_with(s));
        ensure!(
            typed,
            format!("{jp}.name"),
            "unit name {name:?} has no valid unit type suffix"
        );
        ensure!(
            units.insert(name),
            format!("{jp}.name"),
            "duplicate unit {name:?}"
        );
        let masked = u.mask == Some(true) && u.contents.is_some();
        ensure!(
            !masked,
            format!("{jp}.mask"),
            "a masked unit cannot also have contents"
        );
        let mut dropins = HashSet::new();
        for (j, d) in list(&u.dropins).iter().enumerate() {
            let jd = format!("{jp}.dropins[{j}].name");
            check_name(&jd, &d.name, "dropin")?;
            ensure!(
                d.name.ends_with(".conf"),
                jd,
                "dropin name must end in .conf"
            );
            ensure!(dropins.insert(&d.name), jd, "duplicate dropin {:?}", d.name);
        }
    }
    let mut users = HashSet::new();
    for (i, u) in cfg.users().iter().enumerate() {
        let jp = format!("passwd.users[{i}]");
        check_name(&format!("{jp}.name"), &u.name, "user")?;
        ensure!(
            users.insert(&u.name),
            format!("{jp}.name"),
            "duplicate user {:?}",
            u.name
        );
        let hash = u.password_hash.as_deref().unwrap_or_default();
        ensure!(
            !hash.contains([':', '\n']),
            format!("{jp}.passwordHash"),
            "must not contain `:` or newlines"
        );
        for (j, g) in list(&u.groups).iter().enumerate() {
            check_name(&format!("{jp}.groups[{j}]"), g, "group")?;
        }
        for (j, k) in list(&u.ssh_authorized_keys).iter().enumerate() {
            ensure!(
                !k.trim().is_empty(),
                format!("{jp}.sshAuthorizedKeys[{j}]"),
                "empty ssh key"
            );
        }
    }
    Ok(())
}
