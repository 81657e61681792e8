//! Filesystem stage (storage.directories, .files, .links) and the low-level
//! helpers: atomic writes, ownership, parent creation.

use std::fs::{self, Metadata, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{chown, lchown, symlink, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::config::{Directory, File, Link, Owner};
use crate::contents;
use crate::error::{io_err, Error, Result};
use crate::{users, Applier};

/// `symlink_metadata`, with "does not exist" mapped to `None`.
pub fn lstat(p: &Path) -> io::Result<Option<Metadata>> {
    match fs::symlink_metadata(p) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        r => r.map(Some),
    }
}

pub fn is_dir(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_dir())
}

/// Create the missing parents of `p`, mode 0755, owned by the applying
/// process (root in the guest).
pub fn mkdir_parents(p: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = p
        .ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && !is_dir(d))
        .collect();
    for dir in missing.into_iter().rev() {
        fs::create_dir(dir)?;
        fs::set_permissions(dir, Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Create directory `p` if needed, then force its owner and mode.
pub fn ensure_dir(p: &Path, mode: u32, uid: u32, gid: u32) -> io::Result<()> {
    if !is_dir(p) {
        mkdir_parents(p)?;
        fs::create_dir(p)?;
    }
    set_owner(p, uid, gid, true)?;
    fs::set_permissions(p, Permissions::from_mode(mode))
}

/// chown (lchown unless `follow`), skipped if the owner is already right, so
/// an unprivileged caller can "set" the owner it already has.
pub fn set_owner(p: &Path, uid: u32, gid: u32, follow: bool) -> io::Result<()> {
    let m = if follow {
        fs::metadata(p)?
    } else {
        fs::symlink_metadata(p)?
    };
    match (m.uid() == uid && m.gid() == gid, follow) {
        (true, _) => Ok(()),
        (false, true) => chown(p, Some(uid), Some(gid)),
        (false, false) => lchown(p, Some(uid), Some(gid)),
    }
}

/// Write `data` to a temp file next to `p`, set owner and mode, rename over `p`.
pub fn write_atomic(p: &Path, data: &[u8], mode: u32, uid: u32, gid: u32) -> io::Result<()> {
    let name = p
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let tmp = p.with_file_name(format!(".{}.minisno-ignition.tmp", name.to_string_lossy()));
    if lstat(&tmp)?.is_some() {
        fs::remove_file(&tmp)?;
    }
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(data)?;
        // No fsync per file: the initramfs syncs once after the whole config is applied
        // (under TCG each fsync on the installed disk costs most of a second).
        drop(f);
        set_owner(&tmp, uid, gid, false)?;
        fs::set_permissions(&tmp, Permissions::from_mode(mode))?; // after chown, which clears setuid
        fs::rename(&tmp, p)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Remove whatever node is at `p` (a directory recursively).
pub fn remove_node(p: &Path) -> io::Result<()> {
    match lstat(p)? {
        Some(m) if m.is_dir() => fs::remove_dir_all(p),
        Some(_) => fs::remove_file(p),
        None => Ok(()),
    }
}

fn is_symlink_to(p: &Path, target: &str) -> bool {
    fs::read_link(p).is_ok_and(|t| t == Path::new(target))
}

/// Make `link` a symlink to `target`, replacing whatever is there.
pub fn ensure_symlink(link: &Path, target: &str) -> io::Result<()> {
    if is_symlink_to(link, target) {
        return Ok(());
    }
    remove_node(link)?;
    mkdir_parents(link)?;
    symlink(target, link)
}

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
