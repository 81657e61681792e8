//! The low-level helpers of every stage that writes: atomic writes, ownership, parent
//! creation, symlinks, removal. Apart from fsops.rs (the storage stage), which looks owners
//! up through users.rs, which writes with these too.

use std::fs::{self, Metadata, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{chown, lchown, symlink, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

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

/// Whether `p` is a symlink to exactly `target`.
pub fn is_symlink_to(p: &Path, target: &str) -> bool {
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
