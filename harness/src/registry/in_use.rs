//! Whether what a registration names is still in use, for `sno-harness gc`: a registration is
//! only a claim that a run once lived in a directory. The directory may hold another, live run
//! now (a rerun with the same `--out`), and a process may still have the run's disks open (a
//! QEMU gc may not kill, anything else). gc asks here before it removes anything.
//!
//! Two facts count. A live run holds an flock on its directory's `run.lock` for its whole
//! life (`registry::run_dir`); gc tries that lock without waiting and without creating the file,
//! and keeps it while it collects, so no run claims the directory under it. And every process
//! whose `/proc/PID/fd` this user may read is asked for the files it has open.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::run_dir::LOCK_FILE;

/// Why gc may not take a run directory.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("held by a live run{}", .pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Held { pid: Option<u32> },
    #[error("{}: {source} (gc cannot tell whether a run holds the directory)", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Takes the lock of the run directory `dir` for as long as the returned file is kept: `None`
/// when there is no lock file (no run has claimed the directory, or it is gone). The lock file
/// is opened, never created, and never through a link.
pub fn lock_run_dir(dir: &Path) -> Result<Option<File>, LockError> {
    let path = dir.join(LOCK_FILE);
    let unreadable = |source| LockError::Unreadable {
        path: path.clone(),
        source,
    };
    // O_NONBLOCK: a FIFO planted under the name would block the open otherwise.
    let f = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    if !f.metadata().map_err(unreadable)?.is_file() {
        return Err(unreadable(std::io::Error::other("not a regular file")));
    }
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(fs::TryLockError::WouldBlock) => Err(LockError::Held {
            pid: holder_pid(&f),
        }),
        Err(fs::TryLockError::Error(e)) => Err(unreadable(e)),
    }
}

/// The pid the run holding the lock wrote into it, if it has yet.
fn holder_pid(f: &File) -> Option<u32> {
    let mut text = String::new();
    f.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// A process that has some of the files asked about open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`), for the report.
    pub name: String,
    /// The files it has open, as `/proc` names them.
    pub files: Vec<PathBuf>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let files: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        write!(
            f,
            "process {} ({}) has {} open",
            self.pid,
            self.name,
            files.join(", ")
        )
    }
}

/// The processes (but `except`) that have one of `paths` open, or a file below one that is a
/// directory. A link among `paths` is skipped: removing it removes the link only, whatever has
/// its target open. Processes whose descriptors this user may not read are not seen (a QEMU of
/// libvirt's runs as its own user: gc knows it by its command line or its domain instead).
pub fn open_holders(paths: &[PathBuf], except: &[u32]) -> Vec<Holder> {
    let wanted: Vec<PathBuf> = paths
        .iter()
        .filter(|p| {
            p.symlink_metadata()
                .is_ok_and(|m| !m.file_type().is_symlink())
        })
        // /proc names a file by its path with every link resolved.
        .filter_map(|p| fs::canonicalize(p).ok())
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<Holder> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !except.contains(pid))
        .filter_map(|pid| {
            let files = open_files_among(pid, &wanted);
            (!files.is_empty()).then(|| Holder {
                pid,
                name: fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|n| n.trim().to_string())
                    .unwrap_or_default(),
                files,
            })
        })
        .collect();
    out.sort_by_key(|h| h.pid);
    out
}

/// The files of `wanted` (or below one) that process `pid` has open.
fn open_files_among(pid: u32, wanted: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = fds
        .flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter(|target| wanted.iter().any(|w| target.starts_with(w)))
        .collect();
    files.sort();
    files.dedup();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_lock_file_is_no_claim_and_none_is_created() {
        let d = tempfile::tempdir().unwrap();
        assert!(lock_run_dir(d.path()).unwrap().is_none());
        assert!(!d.path().join(LOCK_FILE).exists());
        assert!(lock_run_dir(&d.path().join("gone")).unwrap().is_none());
    }

    #[test]
    fn a_held_lock_names_its_holder_and_a_free_one_is_taken() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(LOCK_FILE);
        fs::write(&path, "77\n").unwrap();
        let run = File::open(&path).unwrap();
        run.try_lock().unwrap();
        let e = lock_run_dir(d.path()).unwrap_err();
        assert!(matches!(e, LockError::Held { pid: Some(77) }), "{e}");
        assert_eq!(e.to_string(), "held by a live run (pid 77)");
        drop(run);
        let gc = lock_run_dir(d.path()).unwrap().expect("a lock file");
        // Held by gc now: a run claiming the directory meanwhile is refused.
        let second = File::open(&path).unwrap();
        assert!(second.try_lock().is_err());
        drop(gc);
    }

    #[test]
    fn a_planted_link_as_the_lock_file_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("elsewhere");
        fs::write(&target, "1\n").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(
            lock_run_dir(d.path()),
            Err(LockError::Unreadable { .. })
        ));
    }

    #[test]
    fn a_process_with_a_file_open_below_a_directory_is_found() {
        let d = tempfile::tempdir().unwrap();
        let disks = d.path().join("disks");
        fs::create_dir(&disks).unwrap();
        let disk = disks.join("a.qcow2");
        fs::write(&disk, "x").unwrap();
        let other = d.path().join("other");
        fs::write(&other, "x").unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .stdin(File::open(&disk).unwrap())
            .spawn()
            .unwrap();
        let pid = child.id();
        let found = open_holders(std::slice::from_ref(&disks), &[]);
        let mine: Vec<&Holder> = found.iter().filter(|h| h.pid == pid).collect();
        assert_eq!(mine.len(), 1, "{found:?}");
        assert_eq!(mine[0].files, vec![fs::canonicalize(&disk).unwrap()]);
        assert_eq!(mine[0].name, "sleep");
        assert!(open_holders(std::slice::from_ref(&disks), &[pid])
            .iter()
            .all(|h| h.pid != pid));
        assert!(open_holders(&[other], &[]).iter().all(|h| h.pid != pid));
        // A link to the disk is not the disk: removing it costs the process nothing.
        let link = d.path().join("live.iso");
        std::os::unix::fs::symlink(&disk, &link).unwrap();
        assert!(open_holders(&[link], &[]).iter().all(|h| h.pid != pid));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(open_holders(&[disks], &[]).iter().all(|h| h.pid != pid));
    }
}
