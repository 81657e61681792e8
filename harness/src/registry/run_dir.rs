//! Claiming a run's directory: an exclusive lock held for the whole run, so that two runs never
//! write into one directory at once, and a refusal of a directory that holds a previous run,
//! so that a rerun never destroys the first one's disks, timeline and result by accident.
//!
//! The lock is `flock(2)` on `run.lock` inside the directory. The file stays when the run ends:
//! removing a lock file lets a newcomer lock a fresh inode while another process holds the old
//! one. It holds the pid of the run that holds it, for the refusal of a second run.
//!
//! A directory is refused before anything in it is touched: [`check`] only reads (it opens an
//! existing lock file, it never creates one), and [`claim`] creates the lock file only in a
//! directory without a previous run, or after `--replace`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file inside a claimed directory.
pub const LOCK_FILE: &str = "run.lock";

/// What in a directory says that it holds a previous run.
#[derive(Debug, Clone, Copy)]
pub enum Markers {
    /// Any of these entries.
    Named(&'static [&'static str]),
    /// Any entry at all but the lock file (a directory that only runs of one command write).
    Anything,
}

/// What `--replace` removes of a previous run.
#[derive(Debug, Clone, Copy)]
pub enum Replaced {
    /// Everything in the directory but the lock file: the directory is the run's own.
    Everything,
    /// These files only: the directory also holds what other commands wrote (a matrix's `--out`
    /// holds its permutations' directories, claimed on their own).
    Files(&'static [&'static str]),
}

/// A kind of directory a command claims.
#[derive(Debug, Clone, Copy)]
pub struct DirKind {
    pub markers: Markers,
    pub replaced: Replaced,
}

/// One run's directory (`run`'s `OUT/<name>`, a matrix permutation's `OUT/<id>`).
pub const RUN: DirKind = DirKind {
    markers: Markers::Named(&["result.json", "events.jsonl", "disks"]),
    replaced: Replaced::Everything,
};

/// A matrix's `--out`: its merged reports.
pub const MATRIX: DirKind = DirKind {
    markers: Markers::Named(&["summary.json"]),
    replaced: Replaced::Files(&["summary.json", "summary.md", "junit.xml", "report.html"]),
};

/// A perf run's `--out`: its reports.
pub const PERF: DirKind = DirKind {
    markers: Markers::Named(&["perf.json"]),
    replaced: Replaced::Files(&["perf.json", "perf.md", "report.html"]),
};

/// A perf permutation's `OUT/<id>`: its warmup, measured and saved-state runs.
pub const PERF_PERMUTATION: DirKind = DirKind {
    markers: Markers::Anything,
    replaced: Replaced::Everything,
};

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("{}: another run{} holds it (it locks {}); give --out another directory, or wait for that run to end", .dir.display(), pid_text(*.pid), .dir.join(LOCK_FILE).display())]
    Busy { dir: PathBuf, pid: Option<u32> },
    #[error("{} holds a previous run ({found}); it is left as it is: give --out another directory, or --replace to remove that run first", .dir.display())]
    Previous { dir: PathBuf, found: String },
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ClaimError {
    /// Whether the user can fix it by choosing another directory or `--replace` (bad input),
    /// rather than the host failing.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, ClaimError::Io { .. })
    }
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ClaimError {
    let path = path.to_path_buf();
    move |source| ClaimError::Io { what, path, source }
}

/// A claimed directory: locked until dropped.
#[derive(Debug)]
pub struct Claim {
    dir: PathBuf,
    _lock: File,
}

impl Claim {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Refuses `dir` if another run holds it, or if it holds a previous run and `replace` is not
/// given; creates and changes nothing (a missing `dir` is fine).
pub fn check(dir: &Path, kind: DirKind, replace: bool) -> Result<(), ClaimError> {
    let _held = lock_existing(dir)?;
    refuse_previous(dir, kind, replace)
}

/// Takes `dir` for a run: creates it (and its parents) when missing, locks it, refuses it as
/// [`check`] does, and with `replace` removes the previous run (only once the lock is held).
pub fn claim(dir: &Path, kind: DirKind, replace: bool) -> Result<Claim, ClaimError> {
    // Refused before the lock file is created: a refused directory stays as it was.
    let existing = lock_existing(dir)?;
    refuse_previous(dir, kind, replace)?;
    let mut lock = match existing {
        Some(f) => f,
        None => {
            fs::create_dir_all(dir).map_err(io("creating", dir))?;
            let path = dir.join(LOCK_FILE);
            let f = open_lock(&path, true)?;
            try_lock(&f, dir)?;
            f
        }
    };
    // Looked at again under the lock: a run may have come and gone since.
    refuse_previous(dir, kind, replace)?;
    if replace {
        remove_previous(dir, kind.replaced)?;
    }
    record_pid(&mut lock, &dir.join(LOCK_FILE))?;
    Ok(Claim {
        dir: dir.to_path_buf(),
        _lock: lock,
    })
}

/// Claims every directory of `dirs`, or none: on a refusal, the ones taken are released (and
/// nothing was removed from any, the refusals being checked first).
pub fn claim_all(dirs: &[(PathBuf, DirKind)], replace: bool) -> Result<Vec<Claim>, ClaimError> {
    for (d, kind) in dirs {
        check(d, *kind, replace)?;
    }
    dirs.iter()
        .map(|(d, kind)| claim(d, *kind, replace))
        .collect()
}

/// The existing lock file of `dir`, locked; `None` when there is none (or no `dir`).
fn lock_existing(dir: &Path) -> Result<Option<File>, ClaimError> {
    let path = dir.join(LOCK_FILE);
    match open_lock(&path, false) {
        Ok(f) => {
            try_lock(&f, dir)?;
            Ok(Some(f))
        }
        Err(ClaimError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Opens the lock file for reading and writing, never through a link (a planted one would
/// have the pid written elsewhere).
fn open_lock(path: &Path, create: bool) -> Result<File, ClaimError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io("opening", path))
}

fn try_lock(f: &File, dir: &Path) -> Result<(), ClaimError> {
    match f.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(ClaimError::Busy {
            dir: dir.to_path_buf(),
            pid: read_pid(f),
        }),
        Err(fs::TryLockError::Error(e)) => Err(io("locking", &dir.join(LOCK_FILE))(e)),
    }
}

/// The pid the holder wrote, if it has yet.
fn read_pid(f: &File) -> Option<u32> {
    let mut text = String::new();
    // Read from the start, whatever the file position.
    let mut f = f.try_clone().ok()?;
    f.rewind().ok()?;
    f.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn record_pid(f: &mut File, path: &Path) -> Result<(), ClaimError> {
    f.set_len(0).map_err(io("writing", path))?;
    f.rewind().map_err(io("writing", path))?;
    writeln!(f, "{}", std::process::id()).map_err(io("writing", path))
}

/// What of a previous run `dir` holds, as the refusal names it; empty when none.
pub fn previous_run(dir: &Path, markers: Markers) -> Result<Vec<String>, ClaimError> {
    let found = match markers {
        Markers::Named(names) => names
            .iter()
            .filter(|n| fs::symlink_metadata(dir.join(n)).is_ok())
            .map(|n| n.to_string())
            .collect(),
        Markers::Anything => match fs::read_dir(dir) {
            Ok(entries) => {
                let mut names: Vec<String> = entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != LOCK_FILE)
                    .collect();
                names.sort();
                names
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("reading", dir)(e)),
        },
    };
    Ok(found)
}

fn refuse_previous(dir: &Path, kind: DirKind, replace: bool) -> Result<(), ClaimError> {
    let found = previous_run(dir, kind.markers)?;
    if found.is_empty() || replace {
        return Ok(());
    }
    let shown: Vec<String> = found.iter().take(5).cloned().collect();
    let more = found.len().saturating_sub(shown.len());
    Err(ClaimError::Previous {
        dir: dir.to_path_buf(),
        found: shown.join(", ")
            + &if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
    })
}

/// Removes what `--replace` replaces. Links are removed as links, never followed.
fn remove_previous(dir: &Path, replaced: Replaced) -> Result<(), ClaimError> {
    let names: Vec<std::ffi::OsString> = match replaced {
        Replaced::Files(names) => names.iter().map(Into::into).collect(),
        Replaced::Everything => fs::read_dir(dir)
            .map_err(io("reading", dir))?
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != LOCK_FILE)
            .collect(),
    };
    for name in names {
        let path = dir.join(&name);
        let removed = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        removed.map_err(io("removing (--replace)", &path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path under `dir` with its bytes (directories as `None`), to compare trees.
    fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if e.file_type().unwrap().is_dir() {
                    out.push((p.clone(), None));
                    stack.push(p);
                } else {
                    out.push((p.clone(), Some(fs::read(&p).unwrap())));
                }
            }
        }
        out.sort();
        out
    }

    fn previous_run_in(dir: &Path) {
        fs::create_dir_all(dir.join("disks")).unwrap();
        fs::write(dir.join("result.json"), "{}").unwrap();
        fs::write(dir.join("events.jsonl"), "{\"t\":1}\n").unwrap();
        fs::write(dir.join("disks/x.qcow2"), "disk").unwrap();
    }

    #[test]
    fn a_previous_run_is_refused_and_left_byte_identical() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("smoke");
        previous_run_in(&dir);
        let before = tree(&dir);
        let e = claim(&dir, RUN, false).unwrap_err();
        assert!(matches!(e, ClaimError::Previous { .. }), "{e}");
        let m = e.to_string();
        assert!(m.contains(&dir.display().to_string()), "{m}");
        assert!(m.contains("--out") && m.contains("--replace"), "{m}");
        assert!(m.contains("result.json, events.jsonl, disks"), "{m}");
        assert_eq!(tree(&dir), before, "nothing touched, no lock file made");
        assert!(check(&dir, RUN, false).is_err());
        assert_eq!(tree(&dir), before);
    }

    #[test]
    fn any_one_marker_is_a_previous_run() {
        for marker in ["result.json", "events.jsonl", "disks"] {
            let d = tempfile::tempdir().unwrap();
            fs::write(d.path().join(marker), "").unwrap();
            assert!(
                matches!(
                    claim(d.path(), RUN, false),
                    Err(ClaimError::Previous { .. })
                ),
                "{marker}"
            );
        }
    }

    #[test]
    fn replace_removes_the_previous_run_under_the_lock() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("smoke");
        previous_run_in(&dir);
        // A link in the old run is removed as a link: what it points at stays.
        let outside = d.path().join("outside");
        fs::write(&outside, "keep me").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        let c = claim(&dir, RUN, true).unwrap();
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from(LOCK_FILE)]);
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me");
        let pid = fs::read_to_string(dir.join(LOCK_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        drop(c);
    }

    #[test]
    fn a_missing_directory_is_created_with_its_parents() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("not/yet/there");
        check(&dir, RUN, false).unwrap();
        assert!(!dir.exists(), "check creates nothing");
        let c = claim(&dir, RUN, false).unwrap();
        assert!(dir.join(LOCK_FILE).is_file());
        assert_eq!(c.dir(), dir);
    }

    #[test]
    fn a_second_claim_while_the_first_holds_is_busy_with_the_holders_pid() {
        let d = tempfile::tempdir().unwrap();
        let first = claim(d.path(), RUN, false).unwrap();
        // flock locks belong to the open file description: a second open in this process
        // conflicts as another process's would.
        let e = claim(d.path(), RUN, false).unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, ClaimError::Busy { pid: Some(p), .. } if p == std::process::id()));
        let holder = format!("another run (pid {}) holds it", std::process::id());
        assert!(m.contains(&holder) && m.contains("--out"), "{m}");
        let e = claim(d.path(), RUN, true).unwrap_err();
        assert!(
            matches!(e, ClaimError::Busy { .. }),
            "--replace never takes a held one"
        );
        drop(first);
        // Released: the lock file left behind is no previous run.
        claim(d.path(), RUN, false).unwrap();
    }

    #[test]
    fn a_busy_directory_is_refused_before_it_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let held = claim(d.path(), RUN, false).unwrap();
        fs::write(d.path().join("events.jsonl"), "live\n").unwrap();
        assert!(matches!(
            claim(d.path(), RUN, true),
            Err(ClaimError::Busy { .. })
        ));
        assert_eq!(
            fs::read_to_string(d.path().join("events.jsonl")).unwrap(),
            "live\n"
        );
        drop(held);
    }

    #[test]
    fn a_planted_lock_link_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        fs::write(&target, "mine").unwrap();
        let dir = d.path().join("run");
        fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&target, dir.join(LOCK_FILE)).unwrap();
        let e = claim(&dir, RUN, false).unwrap_err();
        assert!(!e.is_refusal(), "{e}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "mine");
    }

    #[test]
    fn a_matrix_replace_removes_its_reports_only() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "summary.json",
            "summary.md",
            "junit.xml",
            "report.html",
            "notes.txt",
        ] {
            fs::write(d.path().join(f), "old").unwrap();
        }
        fs::create_dir(d.path().join("perm-a")).unwrap();
        assert!(matches!(
            claim(d.path(), MATRIX, false),
            Err(ClaimError::Previous { .. })
        ));
        claim(d.path(), MATRIX, true).unwrap();
        let mut left: Vec<String> = fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["notes.txt", "perm-a", LOCK_FILE]);
    }

    #[test]
    fn claim_all_takes_none_when_one_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        previous_run_in(&b);
        let e = claim_all(&[(a.clone(), RUN), (b.clone(), RUN)], false).unwrap_err();
        assert!(e.to_string().contains(&b.display().to_string()), "{e}");
        assert!(!a.exists(), "the first was not created either");
        let both = claim_all(&[(a.clone(), RUN), (b.clone(), RUN)], true).unwrap();
        assert_eq!(both.len(), 2);
        assert!(!b.join("result.json").exists());
    }

    #[test]
    fn a_perf_permutation_with_anything_in_it_is_a_previous_one() {
        let d = tempfile::tempdir().unwrap();
        claim(d.path(), PERF_PERMUTATION, false).unwrap();
        fs::create_dir(d.path().join("run-1")).unwrap();
        let e = claim(d.path(), PERF_PERMUTATION, false).unwrap_err();
        assert!(e.to_string().contains("(run-1)"), "{e}");
    }
}
