//! Writing a whole file at a path a user chose (`--json FILE`, `--html FILE`,
//! `--kubeconfig-out`, `man --out DIR`) or beside one (the reports in `--out`), so that a
//! reader never sees half of it and nothing planted in that directory is followed.
//!
//! The bytes go to a new temporary file in the same directory, created with O_EXCL and
//! O_NOFOLLOW under a name no one can guess in advance (a fixed name such as `.F.tmp` lets
//! another user of a shared directory plant a symbolic link there, and the harness would
//! write through it into a file of theirs or of root's). The file is synced and then renamed
//! over the path: a symbolic link at the path itself is replaced, not followed. On any error
//! the temporary file goes again.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of a report: anyone may read it (it holds no secret).
pub const PUBLIC_FILE: u32 = 0o644;

/// How many fresh names are tried before giving up (each is 64 random bits: a clash means
/// someone is creating names in the directory as fast as they can).
const ATTEMPTS: usize = 16;

/// Writing `path` failed; the message names it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        io::Error::new(e.source.kind(), e.to_string())
    }
}

/// Replaces `path` with a file of `bytes` and permission bits `mode` (exactly those, whatever
/// the umask), atomically; see the module documentation.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), WriteError> {
    let named = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    if path.file_name().is_none() {
        return Err(named(io::Error::new(
            io::ErrorKind::InvalidInput,
            "names no file (it ends in '..' or '/')",
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let (tmp, mut file) = create_temporary(dir).map_err(named)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.set_permissions(fs::Permissions::from_mode(mode)))
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(named(e));
    }
    // The rename lasts a crash once the directory is synced; a directory that cannot be opened
    // for it (not readable) holds the file all the same.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new, empty, owner-only file in `dir` under a random hidden name.
fn create_temporary(dir: &Path) -> io::Result<(PathBuf, File)> {
    use rand_core::{OsRng, RngCore};
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let tmp = dir.join(format!(".sno-harness-{:016x}.tmp", OsRng.next_u64()));
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp);
        match opened {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("at least one attempt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    /// A file `victim` in `dir` that must stay "untouched".
    fn victim(dir: &Path) -> PathBuf {
        let victim = dir.join("victim");
        fs::write(&victim, "untouched").unwrap();
        victim
    }

    #[test]
    fn links_planted_at_guessable_names_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let victim = victim(d.path());
        let path = d.path().join("out.json");
        // The names earlier versions wrote through: `.NAME.tmp`, and `.NAME.PID.tmp`.
        for planted in [
            ".out.json.tmp".to_string(),
            format!(".out.json.{}.tmp", std::process::id()),
        ] {
            std::os::unix::fs::symlink(&victim, d.path().join(planted)).unwrap();
        }
        replace_file(&path, b"{}\n", PUBLIC_FILE).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}\n");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert_eq!(names_in(d.path()).len(), 4, "no temporary file left");
    }

    #[test]
    fn a_link_at_the_path_is_replaced_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = victim(d.path());
        let path = d.path().join("kubeconfig");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        replace_file(&path, b"secret", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        let meta = fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_failed_write_names_the_path_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        // A directory cannot be renamed over by a file.
        let path = d.path().join("taken");
        fs::create_dir(&path).unwrap();
        let e = replace_file(&path, b"x", PUBLIC_FILE).unwrap_err();
        assert!(
            e.to_string().starts_with(&path.display().to_string()),
            "{e}"
        );
        assert_eq!(names_in(d.path()), ["taken"]);
        let e = replace_file(&d.path().join("missing/f"), b"x", PUBLIC_FILE).unwrap_err();
        assert_eq!(e.source.kind(), io::ErrorKind::NotFound);
        let e = replace_file(Path::new("/"), b"x", PUBLIC_FILE).unwrap_err();
        assert_eq!(e.source.kind(), io::ErrorKind::InvalidInput);
    }
}
