//! A run's private directory: everything of the run that is secret or that only the VM needs,
//! kept outside `--out`, so that everything under `--out` is publishable (CI uploaders such as
//! Prow's take `$ARTIFACT_DIR` whole and ignore file modes).
//!
//! It holds the installer's asset directory (the Ignition configs with the pull secret and the
//! cluster's keys, `auth/` with the admin kubeconfig and the kubeadmin password, the installer's
//! state file), the run's SSH private key, the forwarded admin kubeconfig, the live ISO (its
//! embedded Ignition), a network boot's files, the disks (the installed system's Ignition),
//! the UEFI variables and QEMU's sockets (QMP runs anything as the harness's user).
//!
//! It lives under one root per user (`$SNO_HARNESS_PRIVATE_DIR`, else `$SNO_HARNESS_STATE_DIR/
//! private`, else `/var/tmp/sno-harness-<uid>`: on disk, not tmpfs, since disks are GiBs, and
//! passable by a local libvirtd's QEMU user), in a directory of
//! its own named by the run id and 64 random bits; it is locked (`flock` on `lock`) while the
//! run lives, so that `gc` tells a live run's from a dead one's, and removed when the run ends
//! unless the run keeps it (`--keep`), in which case a `kept` file says so.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rand_core::RngCore;

use crate::util::private::{set_mode, DirAccess};

/// The lock file inside a private directory, held by the run that owns it.
pub const LOCK_FILE: &str = "lock";
/// The mark of a private directory a run left for the user (`--keep`).
pub const KEPT_FILE: &str = "kept";

#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    #[error("{}: {why}; remove it, or set SNO_HARNESS_PRIVATE_DIR to a directory of your own", .root.display())]
    UnsafeRoot { root: PathBuf, why: String },
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PrivateDirError {
    let path = path.to_path_buf();
    move |source| PrivateDirError::Io { what, path, source }
}

/// The root of this user's private directories: `$SNO_HARNESS_PRIVATE_DIR`, else `private/`
/// in `$SNO_HARNESS_STATE_DIR` (the harness's own state, tests keep theirs apart so), else
/// `/var/tmp/sno-harness-<uid>`.
pub fn root() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("SNO_HARNESS_PRIVATE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = var("SNO_HARNESS_STATE_DIR") {
        return PathBuf::from(d).join("private");
    }
    PathBuf::from(format!("/var/tmp/sno-harness-{}", effective_uid()))
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes sure `root` is this user's own directory that nobody else can write or list: created
/// (0711) when missing; refused when it is a link, not a directory, someone else's, or writable
/// by others (a shared `/var/tmp` lets anyone create it first). Others may pass through it by
/// name: a local libvirtd's QEMU opens the disks by path.
pub fn ensure_root(root: &Path) -> Result<(), PrivateDirError> {
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = root.parent() {
                fs::create_dir_all(parent).map_err(io_err("creating", parent))?;
            }
            match fs::create_dir(root) {
                Ok(()) => {}
                // Another run made it a moment ago: it is checked below like any.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err("creating", root)(e)),
            }
        }
        Err(e) => return Err(io_err("reading", root)(e)),
        Ok(_) => {}
    }
    let meta = fs::symlink_metadata(root).map_err(io_err("reading", root))?;
    let unsafe_root = |why: String| PrivateDirError::UnsafeRoot {
        root: root.to_path_buf(),
        why,
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_root("a symbolic link, not a directory".into()));
    }
    if !meta.is_dir() {
        return Err(unsafe_root("not a directory".into()));
    }
    if meta.uid() != effective_uid() {
        return Err(unsafe_root(format!(
            "owned by uid {}, not by this user (uid {})",
            meta.uid(),
            effective_uid()
        )));
    }
    set_mode(root, DirAccess::Traverse.mode()).map_err(io_err("chmod 711", root))
}

/// A run's private directory, locked while it lives; removed when dropped unless kept.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    _lock: File,
    kept: bool,
}

impl PrivateDir {
    /// Creates a new private directory for the run `run_id` under [`root`], as far open as
    /// `access` says (a local libvirtd's QEMU must pass through it).
    pub fn create(run_id: &str, access: DirAccess) -> Result<PrivateDir, PrivateDirError> {
        Self::create_in(&root(), run_id, access)
    }

    pub fn create_in(
        root: &Path,
        run_id: &str,
        access: DirAccess,
    ) -> Result<PrivateDir, PrivateDirError> {
        ensure_root(root)?;
        let path = root.join(format!("{}-{}", name_part(run_id), random_hex()));
        // A new directory, never one that exists (create_dir fails on any entry, links too).
        fs::create_dir(&path).map_err(io_err("creating", &path))?;
        let made = (|| {
            set_mode(&path, access.mode()).map_err(io_err("chmod", &path))?;
            let lock_path = path.join(LOCK_FILE);
            let lock = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&lock_path)
                .map_err(io_err("creating", &lock_path))?;
            lock.try_lock()
                .map_err(|e| io_err("locking", &lock_path)(io::Error::other(e.to_string())))?;
            Ok(lock)
        })();
        match made {
            Ok(lock) => Ok(PrivateDir {
                path,
                _lock: lock,
                kept: false,
            }),
            Err(e) => {
                let _ = fs::remove_dir_all(&path);
                Err(e)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory for the user when the run ends (`--keep`), marked so for `gc`.
    pub fn keep(&mut self) {
        self.kept = true;
        let _ = fs::write(self.path.join(KEPT_FILE), b"kept by the run (--keep)\n");
    }

    pub fn is_kept(&self) -> bool {
        self.kept
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// The run id as a file name's start: characters any file system takes, at most 48.
fn name_part(run_id: &str) -> String {
    let s: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    match s.trim_start_matches('.') {
        "" => "run".into(),
        t => t.to_string(),
    }
}

/// 64 random bits in hex: the directory's name cannot be guessed (nor planted ahead).
fn random_hex() -> String {
    let mut b = [0u8; 8];
    rand_core::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

/// Whether a live run holds the private directory `dir` (its lock is taken), without creating
/// anything in it.
pub fn held_by_a_live_run(dir: &Path) -> io::Result<bool> {
    let lock = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(LOCK_FILE))
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match lock.try_lock_shared() {
        Ok(()) => Ok(false),
        Err(fs::TryLockError::WouldBlock) => Ok(true),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_private_directory_is_new_owner_only_locked_and_gone_when_dropped() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let d = PrivateDir::create_in(&root, "a/b..c", DirAccess::OwnerOnly).unwrap();
        assert_eq!(mode(&root), 0o711);
        assert_eq!(mode(d.path()), 0o700);
        let name = d.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("a_b..c-") && name.len() == "a_b..c-".len() + 16,
            "{name}"
        );
        assert!(held_by_a_live_run(d.path()).unwrap());
        let other = PrivateDir::create_in(&root, "a/b..c", DirAccess::Traverse).unwrap();
        assert_ne!(other.path(), d.path());
        assert_eq!(mode(other.path()), 0o711);
        let path = d.path().to_path_buf();
        drop(d);
        assert!(!path.exists());
    }

    #[test]
    fn a_kept_directory_stays_marked_and_is_no_longer_held() {
        let t = tempfile::tempdir().unwrap();
        let mut d = PrivateDir::create_in(t.path(), "smoke", DirAccess::OwnerOnly).unwrap();
        d.keep();
        let path = d.path().to_path_buf();
        drop(d);
        assert!(path.join(KEPT_FILE).is_file());
        assert!(!held_by_a_live_run(&path).unwrap());
    }

    #[test]
    fn a_root_that_is_a_link_or_open_to_others_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = PrivateDir::create_in(&link, "x", DirAccess::OwnerOnly).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(
            fs::read_dir(&real).unwrap().count(),
            0,
            "nothing made through it"
        );
        let file = t.path().join("file");
        fs::write(&file, "").unwrap();
        let e = ensure_root(&file).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn a_root_someone_else_owns_is_refused() {
        // As root, a directory given to nobody stands for another user's; otherwise / does.
        let t = tempfile::tempdir().unwrap();
        let theirs = t.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        let target = if effective_uid() == 0 {
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            theirs
        } else {
            PathBuf::from("/")
        };
        let e = ensure_root(&target).unwrap_err();
        assert!(e.to_string().contains("not by this user"), "{e}");
    }
}
