//! Files that hold secrets at rest are the owner's alone. A run's disks hold `master.ign` (the
//! cluster CA's key, the pull secret) once the install is done, its live ISO the embedded
//! Ignition, a saved state the guest's memory, and QEMU's QMP socket runs any command as the
//! harness's user: none of them may be readable (or a socket connectable) by group or others.
//!
//! Tools that make such files (qemu-img, coreos-installer, QEMU) create them under the umask,
//! so the harness sets their mode once they exist, inside a directory only the owner can enter
//! (so that nothing is ever exposed in between); QEMU's sockets are protected by that directory
//! alone, which is why the run directory is owner-only.

use std::fs;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A file's mode for secrets: read and write for the owner only.
pub const PRIVATE_FILE: u32 = 0o600;
/// A directory's mode for secrets: the owner only.
pub const PRIVATE_DIR: u32 = 0o700;

/// Sets `path`'s permission bits to `mode`.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

/// Creates `dir` (and its missing parents, under the umask) and gives `dir` itself `mode`,
/// whatever it had.
pub fn create_dir_with_mode(dir: &Path, mode: u32) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    set_mode(dir, mode)
}

/// Creates `path` empty and owner-only (or empties it and makes it so), for a tool to write
/// into afterwards: a shell's `> FILE` keeps the mode of a file that exists.
pub fn create_empty_private(path: &Path) -> io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(PRIVATE_FILE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // The mode of `open` applies to a new file only.
    set_mode(path, PRIVATE_FILE)
}

/// What gives someone besides the owner a way to a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    pub path: PathBuf,
    pub mode: u32,
    pub why: &'static str,
}

impl std::fmt::Display for Exposure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is mode {:o}: {}",
            self.path.display(),
            self.mode,
            self.why
        )
    }
}

/// How far others may reach into the directories that lead to the secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirAccess {
    /// Not at all (`0700`): the QEMU backend, where QEMU runs as the harness's user.
    OwnerOnly,
    /// Through them by name, never listing or writing them (`0711`): a local libvirtd runs QEMU
    /// as its own user, which opens the files by path.
    Traverse,
}

impl DirAccess {
    /// The mode of a directory on the way to secrets.
    pub fn mode(self) -> u32 {
        match self {
            DirAccess::OwnerOnly => PRIVATE_DIR,
            DirAccess::Traverse => 0o711,
        }
    }
}

/// Takes group and other permissions away from `root` and everything below it (links left
/// as they are, never followed): for what a tool wrote into a private directory under its own
/// modes (the installer makes `auth/` 0750).
pub fn make_tree_owner_only(root: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(root)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if meta.is_dir() {
        for e in fs::read_dir(root)? {
            make_tree_owner_only(&e?.path())?;
        }
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        set_mode(root, mode & 0o700)?;
    }
    Ok(())
}

/// Every way under `root` (itself included) that lets group or others at a secret: an entry
/// `secret` selects (a file, a socket, a directory) with any group or other permission, and any
/// directory from `root` down to one that lets group or others in beyond `dirs` allows.
/// Links are not followed (a link's own mode means nothing).
pub fn exposures(
    root: &Path,
    secret: &dyn Fn(&Path) -> bool,
    dirs: DirAccess,
) -> io::Result<Vec<Exposure>> {
    let mut found = Vec::new();
    walk(root, secret, dirs, &mut found)?;
    Ok(found)
}

/// Looks at `dir` and below; returns whether a secret is under it (its own mode matters then).
fn walk(
    dir: &Path,
    secret: &dyn Fn(&Path) -> bool,
    dirs: DirAccess,
    found: &mut Vec<Exposure>,
) -> io::Result<bool> {
    let mut holds_secret = secret(dir);
    let mut inside = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let path = e.path();
        let meta = fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            holds_secret |= walk(&path, secret, dirs, &mut inside)?;
        } else if !meta.file_type().is_symlink() && secret(&path) {
            holds_secret = true;
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o077 != 0 {
                inside.push(Exposure {
                    path,
                    mode,
                    why: "a secret that group or others may open",
                });
            }
        }
    }
    if holds_secret {
        let mode = fs::symlink_metadata(dir)?.permissions().mode() & 0o7777;
        let allowed = match dirs {
            DirAccess::OwnerOnly => 0,
            DirAccess::Traverse => 0o011,
        };
        if mode & 0o077 & !allowed != 0 {
            found.push(Exposure {
                path: dir.to_path_buf(),
                mode,
                why: match dirs {
                    DirAccess::OwnerOnly => {
                        "a directory with secrets that group or others may enter"
                    }
                    DirAccess::Traverse => {
                        "a directory with secrets that group or others may list or write"
                    }
                },
            });
        }
    }
    found.extend(inside);
    Ok(holds_secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn all(_: &Path) -> bool {
        true
    }

    #[test]
    fn an_empty_private_file_is_0600_new_or_old() {
        let d = tempfile::tempdir().unwrap();
        let new = d.path().join("state");
        create_empty_private(&new).unwrap();
        assert_eq!(mode(&new), 0o600);
        let old = d.path().join("old");
        fs::write(&old, "previous").unwrap();
        set_mode(&old, 0o666).unwrap();
        create_empty_private(&old).unwrap();
        assert_eq!(mode(&old), 0o600);
        assert_eq!(fs::read(&old).unwrap(), b"");
    }

    #[test]
    fn a_dir_gets_its_mode_whatever_it_had() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("a/run");
        create_dir_with_mode(&dir, 0o700).unwrap();
        assert_eq!(mode(&dir), 0o700);
        set_mode(&dir, 0o777).unwrap();
        create_dir_with_mode(&dir, 0o711).unwrap();
        assert_eq!(mode(&dir), 0o711);
    }

    /// A run directory as the harness leaves it, before the modes are judged.
    fn run_dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        set_mode(d.path(), 0o700).unwrap();
        fs::create_dir(d.path().join("disks")).unwrap();
        set_mode(&d.path().join("disks"), 0o700).unwrap();
        for f in ["disks/install.qcow2", "live.iso"] {
            fs::write(d.path().join(f), "secret").unwrap();
            set_mode(&d.path().join(f), 0o600).unwrap();
        }
        fs::write(d.path().join("serial.log"), "public").unwrap();
        set_mode(&d.path().join("serial.log"), 0o644).unwrap();
        d
    }

    fn secret(p: &Path) -> bool {
        p.extension()
            .is_some_and(|x| x == "qcow2" || x == "iso" || x == "sock")
    }

    #[test]
    fn owner_only_secrets_are_no_exposure_and_public_logs_are_not_judged() {
        let d = run_dir();
        assert_eq!(
            exposures(d.path(), &secret, DirAccess::OwnerOnly).unwrap(),
            vec![]
        );
    }

    #[test]
    fn a_readable_disk_and_an_open_directory_are_named() {
        let d = run_dir();
        let disk = d.path().join("disks/install.qcow2");
        set_mode(&disk, 0o644).unwrap();
        set_mode(d.path(), 0o755).unwrap();
        let found = exposures(d.path(), &secret, DirAccess::OwnerOnly).unwrap();
        let paths: Vec<&Path> = found.iter().map(|e| e.path.as_path()).collect();
        assert_eq!(paths, vec![d.path(), disk.as_path()]);
        assert!(found[1].to_string().contains("is mode 644"), "{}", found[1]);
        // Traversal alone is what a local libvirtd's QEMU user needs; listing is not.
        let found = exposures(d.path(), &secret, DirAccess::Traverse).unwrap();
        assert_eq!(found.len(), 2, "0755 lets others list: {found:?}");
        set_mode(d.path(), 0o711).unwrap();
        let found = exposures(d.path(), &secret, DirAccess::Traverse).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, disk);
    }

    #[test]
    fn a_group_readable_secret_or_subdirectory_is_an_exposure() {
        let d = run_dir();
        set_mode(&d.path().join("live.iso"), 0o640).unwrap();
        set_mode(&d.path().join("disks"), 0o750).unwrap();
        let found = exposures(d.path(), &secret, DirAccess::OwnerOnly).unwrap();
        let paths: Vec<PathBuf> = found.iter().map(|e| e.path.clone()).collect();
        assert!(paths.contains(&d.path().join("live.iso")), "{found:?}");
        assert!(paths.contains(&d.path().join("disks")), "{found:?}");
    }

    #[test]
    fn a_socket_is_judged_like_a_file() {
        let d = run_dir();
        let sock = d.path().join("qmp.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        set_mode(&sock, 0o755).unwrap();
        let found = exposures(d.path(), &secret, DirAccess::OwnerOnly).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, sock);
    }

    #[test]
    fn a_directory_without_secrets_is_not_judged() {
        let d = run_dir();
        let logs = d.path().join("logs");
        fs::create_dir(&logs).unwrap();
        set_mode(&logs, 0o755).unwrap();
        fs::write(logs.join("a.txt"), "").unwrap();
        set_mode(&logs.join("a.txt"), 0o600).unwrap();
        assert_eq!(
            exposures(d.path(), &secret, DirAccess::OwnerOnly).unwrap(),
            vec![]
        );
        // ...unless it is one itself.
        let found = exposures(d.path(), &|p| p == logs.as_path(), DirAccess::OwnerOnly).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            exposures(d.path(), &all, DirAccess::OwnerOnly)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_tree_made_owner_only_keeps_the_owners_bits_and_links() {
        let d = tempfile::tempdir().unwrap();
        let auth = d.path().join("auth");
        fs::create_dir(&auth).unwrap();
        fs::write(auth.join("kubeconfig"), "x").unwrap();
        set_mode(&auth, 0o750).unwrap();
        set_mode(&auth.join("kubeconfig"), 0o644).unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        set_mode(outside.path(), 0o644).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
        make_tree_owner_only(d.path()).unwrap();
        assert_eq!(mode(&auth), 0o700);
        assert_eq!(mode(&auth.join("kubeconfig")), 0o600);
        assert_eq!(mode(outside.path()), 0o644, "a link was followed");
        let all = |_: &Path| true;
        let found = exposures(d.path(), &all, DirAccess::OwnerOnly).unwrap();
        assert!(found.is_empty(), "{found:?}");
    }
}
