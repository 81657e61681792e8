//! passwd.users for users that already exist in <root>/etc/passwd: ssh keys,
//! password hash, supplementary groups. /etc/passwd, /etc/group, /etc/shadow
//! are parsed here, not via NSS, because the root may be any directory.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;

use crate::config::User;
use crate::error::{io_err, Result};
use crate::nodes::{ensure_dir, is_dir, write_atomic};
use crate::Applier;

/// Read `<root>/<rel>`; a missing file reads as `None`.
fn read_etc(root: &std::path::Path, rel: &str, jp: &str) -> Result<Option<String>> {
    match fs::read_to_string(root.join(rel)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        r => r.map(Some).map_err(io_err(jp, "read", &format!("/{rel}"))),
    }
}

/// The `:`-separated fields of the entry for `name` in `<root>/<rel>`.
pub fn lookup(
    root: &std::path::Path,
    rel: &str,
    name: &str,
    jp: &str,
) -> Result<Option<Vec<String>>> {
    let text = read_etc(root, rel, jp)?.unwrap_or_default();
    let fields = text
        .lines()
        .map(|l| l.split(':').map(str::to_string).collect::<Vec<_>>());
    Ok(fields
        .into_iter()
        .find(|f| f.first().is_some_and(|n| n == name)))
}

impl Applier<'_> {
    /// Rewrite the entry for `name` in `<root>/<rel>` with `edit`, keeping the
    /// file's mode and owner. Returns false if the file or entry is missing.
    fn edit_entry(
        &self,
        rel: &str,
        jp: &str,
        name: &str,
        edit: impl FnOnce(&mut Vec<String>),
    ) -> Result<bool> {
        let Some(text) = read_etc(&self.root, rel, jp)? else {
            return Ok(false);
        };
        let mut edit = Some(edit);
        let mut out = String::with_capacity(text.len() + 64);
        for line in text.lines() {
            let mut fields: Vec<String> = line.split(':').map(str::to_string).collect();
            match edit.take_if(|_| fields[0] == name) {
                Some(edit) => {
                    edit(&mut fields);
                    out.push_str(&fields.join(":"));
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        if edit.is_some() {
            return Ok(false);
        }
        let (host, shown) = (self.root.join(rel), format!("/{rel}"));
        let m = fs::metadata(&host).map_err(io_err(jp, "stat", &shown))?;
        write_atomic(&host, out.as_bytes(), m.mode() & 0o7777, m.uid(), m.gid())
            .map_err(io_err(jp, "write", &shown))?;
        Ok(true)
    }

    pub(crate) fn apply_user(&mut self, jp: &str, u: &User) -> Result<()> {
        let (jname, name) = (format!("{jp}.name"), &u.name);
        let Some(entry) = lookup(&self.root, "etc/passwd", name, &jname)? else {
            fail!(Apply, jname, "user {name} does not exist; minisno-ignition cannot create users (the image must ship it in /etc/passwd)");
        };
        let ids = (
            entry.get(2).and_then(|s| s.parse().ok()),
            entry.get(3).and_then(|s| s.parse().ok()),
        );
        let (Some(uid), Some(gid), Some(home)) = (ids.0, ids.1, entry.get(5)) else {
            fail!(Apply, jname, "malformed /etc/passwd entry for {name}");
        };
        let keys = u.ssh_authorized_keys.as_deref().unwrap_or(&[]);
        if !keys.is_empty() {
            self.write_keys(
                &format!("{jp}.sshAuthorizedKeys"),
                name,
                home,
                (uid, gid),
                keys,
            )?;
        }
        if let Some(hash) = &u.password_hash {
            let jh = format!("{jp}.passwordHash");
            let set = |f: &mut Vec<String>| {
                f.resize(f.len().max(2), String::new());
                f[1] = hash.clone();
            };
            if !self.edit_entry("etc/shadow", &jh, name, set)? {
                fail!(Apply, jh, "user {name} has no entry in /etc/shadow");
            }
            self.log(format!("set password hash for user {name}"));
        }
        for (j, group) in u.groups.iter().flatten().enumerate() {
            let jg = format!("{jp}.groups[{j}]");
            if lookup(&self.root, "etc/group", group, &jg)?.is_none() {
                fail!(Apply, jg, "group {group} does not exist in /etc/group; minisno-ignition cannot create groups");
            }
            for rel in ["etc/group", "etc/gshadow"] {
                let add = |f: &mut Vec<String>| {
                    f.resize(f.len().max(4), String::new());
                    if !f[3].split(',').any(|m| m == name) {
                        f[3] = if f[3].is_empty() {
                            name.clone()
                        } else {
                            format!("{},{name}", f[3])
                        };
                    }
                };
                self.edit_entry(rel, &jg, group, add)?;
            }
            self.log(format!("added user {name} to group {group}"));
        }
        Ok(())
    }

    fn write_keys(
        &mut self,
        jp: &str,
        name: &str,
        home: &str,
        (uid, gid): (u32, u32),
        keys: &[String],
    ) -> Result<()> {
        if !home.starts_with('/') {
            fail!(
                Apply,
                jp,
                "home directory {home:?} of {name} in /etc/passwd is not absolute"
            );
        }
        let ssh_shown = format!("{}/.ssh", home.trim_end_matches('/'));
        let io = |op, file: &str| io_err(jp, op, file);
        if !is_dir(&self.host(home)) {
            ensure_dir(&self.host(home), 0o700, uid, gid).map_err(io("create home", home))?;
        }
        let data: String = keys
            .iter()
            .map(|k| format!("{}\n", k.trim_end_matches(['\n', '\r'])))
            .collect();
        for (dir, file) in [("", "authorized_keys"), ("/authorized_keys.d", "ignition")] {
            let shown = format!("{ssh_shown}{dir}");
            ensure_dir(&self.host(&shown), 0o700, uid, gid).map_err(io("create", &shown))?;
            let (shown, host) = (
                format!("{shown}/{file}"),
                self.host(&format!("{shown}/{file}")),
            );
            write_atomic(&host, data.as_bytes(), 0o600, uid, gid).map_err(io("write", &shown))?;
        }
        self.log(format!("wrote {} ssh key(s) for user {name} to {ssh_shown}/authorized_keys and authorized_keys.d/ignition", keys.len()));
        Ok(())
    }
}
