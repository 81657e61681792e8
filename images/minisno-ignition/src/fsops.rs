//! Filesystem stage: storage.directories, .files, .links (the helpers it writes with are
//! in nodes.rs).

use std::fs::{self, Permissions};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

use crate::config::{Directory, File, Link, Owner};
use crate::contents;
use crate::error::{io_err, Error, Result};
use crate::nodes::{
    ensure_dir, is_dir, is_symlink_to, lstat, mkdir_parents, remove_node, set_owner, write_atomic,
};
use crate::{users, Applier};

impl Applier<'_> {
    /// Resolve `user`/`group` to ids (names via <root>/etc/passwd, /etc/group).
    fn owner(&self, jp: &str, user: &Option<Owner>, group: &Option<Owner>) -> Result<(u32, u32)> {
        let resolve = |owner: &Option<Owner>, key: &str, file: &str, default: u32| match owner {
            Some(Owner { id: Some(id), .. }) => Ok(*id),
            Some(Owner {
                name: Some(name), ..
            }) => {
                let jn = format!("{jp}.{key}.name");
                let fields = users::lookup(&self.root, file, name, &jn)?;
                let id = fields.and_then(|f| f.get(2).and_then(|id| id.parse().ok()));
                id.ok_or_else(|| Error::apply(jn, format!("{key} {name:?} not found in /{file}")))
            }
            _ => Ok(default),
        };
        let (uid, gid) = self.default_owner;
        Ok((
            resolve(user, "user", "etc/passwd", uid)?,
            resolve(group, "group", "etc/group", gid)?,
        ))
    }

    pub(crate) fn apply_directory(&mut self, jp: &str, d: &Directory) -> Result<()> {
        let (host, io) = (self.host(&d.path), |op| io_err(jp, op, &d.path));
        let (uid, gid) = self.owner(jp, &d.user, &d.group)?;
        let mode = d.mode.unwrap_or(0o755);
        let existed = is_dir(&host);
        if !existed && lstat(&host).map_err(io("inspect"))?.is_some() {
            let why = format!(
                "a non-directory exists at {} and overwrite is false",
                d.path
            );
            ensure!(d.overwrite == Some(true), jp, "{why}");
            remove_node(&host).map_err(io("remove"))?;
        }
        // Follows a symlink to a directory (e.g. /home -> var/home), like Ignition.
        ensure_dir(&host, mode, uid, gid).map_err(io("create directory"))?;
        let verb = if existed { "updated" } else { "created" };
        self.log(format!("{verb} directory {} (mode {mode:04o})", d.path));
        Ok(())
    }

    pub(crate) fn apply_file(&mut self, jp: &str, f: &File) -> Result<()> {
        let (host, io) = (self.host(&f.path), |op| io_err(jp, op, &f.path));
        let (uid, gid) = self.owner(jp, &f.user, &f.group)?;
        let mode = f.mode.unwrap_or(0o644);
        let source = f.contents.as_ref().filter(|c| c.source.is_some());
        let appends = f.append.as_deref().unwrap_or(&[]);
        let mut data = match (lstat(&host).map_err(io("inspect"))?, source) {
            (Some(_), Some(_)) if f.overwrite != Some(true) => {
                fail!(
                    Apply,
                    jp,
                    "file exists at {} and overwrite is false",
                    f.path
                )
            }
            (Some(m), Some(c)) => {
                let data = contents::fetch(c, &format!("{jp}.contents"))?;
                if m.is_dir() {
                    remove_node(&host).map_err(io("remove"))?; // rename(2) replaces anything else
                }
                data
            }
            (Some(m), None) if !m.is_file() => {
                fail!(
                    Apply,
                    jp,
                    "a non-file node exists at {} and overwrite is false",
                    f.path
                )
            }
            (Some(_), None) if appends.is_empty() => {
                // Ignition leaves an existing file's contents alone here.
                set_owner(&host, uid, gid, true).map_err(io("chown"))?;
                fs::set_permissions(&host, Permissions::from_mode(mode)).map_err(io("chmod"))?;
                self.log(format!("kept existing {} (mode {mode:04o})", f.path));
                return Ok(());
            }
            (Some(_), None) => fs::read(&host).map_err(io("read"))?,
            (None, Some(c)) => contents::fetch(c, &format!("{jp}.contents"))?,
            (None, None) => Vec::new(),
        };
        for (j, a) in appends.iter().enumerate() {
            data.extend(contents::fetch(a, &format!("{jp}.append[{j}]"))?);
        }
        mkdir_parents(&host).map_err(io("create parents of"))?;
        write_atomic(&host, &data, mode, uid, gid).map_err(io("write"))?;
        self.log(format!("wrote {} (mode {mode:04o})", f.path));
        Ok(())
    }

    pub(crate) fn apply_link(&mut self, jp: &str, l: &Link) -> Result<()> {
        let (host, io) = (self.host(&l.path), |op| io_err(jp, op, &l.path));
        let (target, hard) = (
            l.target.as_deref().unwrap_or_default(),
            l.hard == Some(true),
        );
        let target_host = self.host(target);
        let existing = lstat(&host).map_err(io("inspect"))?;
        let same = match &existing {
            Some(m) if hard => {
                fs::metadata(&target_host).is_ok_and(|t| (t.dev(), t.ino()) == (m.dev(), m.ino()))
            }
            Some(_) => is_symlink_to(&host, target),
            None => false,
        };
        if existing.is_some() && !same {
            let why = format!("a node exists at {} and overwrite is false", l.path);
            ensure!(l.overwrite == Some(true), jp, "{why}");
            remove_node(&host).map_err(io("remove"))?;
        }
        if !same {
            mkdir_parents(&host).map_err(io("create parents of"))?;
            let made = if hard {
                fs::hard_link(&target_host, &host)
            } else {
                symlink(target, &host)
            };
            made.map_err(io("link"))?;
        }
        // A hard link shares its target's inode: only chown it when asked to.
        if !hard || l.user.is_some() || l.group.is_some() {
            let (uid, gid) = self.owner(jp, &l.user, &l.group)?;
            set_owner(&host, uid, gid, false).map_err(io("chown"))?;
        }
        let (kind, verb) = (
            if hard { "hard link" } else { "symlink" },
            if same { "kept" } else { "created" },
        );
        self.log(format!("{verb} {kind} {} -> {target}", l.path));
        Ok(())
    }
}
