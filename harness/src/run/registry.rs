//! Which runs are in progress, so that `sno-harness gc` can tell what a killed harness left.
//!
//! Every run writes one small file into the registry directory when its VM is about to be made,
//! and removes it when it has cleaned up. A file whose owner is gone (SIGKILL, a second Ctrl-C,
//! a crash, a reboot of the host) is the mark of a run whose leftovers need collecting: its
//! disks, its copy of the live ISO, its sockets, a libvirt domain.

use std::fs;

use crate::util::process::process_start;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One run in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    /// The harness process and its start time (clock ticks since boot, from /proc): a pid
    /// alone can be reused by an unrelated process.
    pub pid: u32,
    pub pid_start: u64,
    /// The run directory (absolute).
    pub dir: PathBuf,
    /// `qemu` or `libvirt`.
    pub backend: String,
    /// The libvirt URI and domain name, for the libvirt backend.
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub domain: Option<String>,
    /// `--keep`: the disks are wanted after the run, gc leaves them.
    #[serde(default)]
    pub keep: bool,
}

/// Where the registry lives: `$SNO_HARNESS_STATE_DIR` (tests), else `/run/sno-harness` for
/// root, else `$XDG_RUNTIME_DIR/sno-harness`, else the temporary directory.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SNO_HARNESS_STATE_DIR") {
        return PathBuf::from(d).join("runs");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/run/sno-harness/runs");
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("sno-harness/runs");
    }
    // SAFETY: as above.
    std::env::temp_dir().join(format!("sno-harness-{}/runs", unsafe { libc::geteuid() }))
}

impl Entry {
    /// Whether the process that registered the run still runs.
    pub fn owner_alive(&self) -> bool {
        process_start(self.pid) == Some(self.pid_start)
    }
}

/// A registered run; the file goes when this is dropped (the run cleaned up after itself).
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn file_name(id: &str, pid: u32) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    format!("{pid}-{safe}.json")
}

/// Registers a run of this process in `registry` (the directory `dir()` gives).
pub fn register(registry: &Path, mut entry: Entry) -> std::io::Result<Registration> {
    entry.pid = std::process::id();
    entry.pid_start = process_start(entry.pid).unwrap_or(0);
    fs::create_dir_all(registry)?;
    let path = registry.join(file_name(&entry.id, entry.pid));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(&serde_json::to_vec_pretty(&entry).expect("serialisable"))?;
    Ok(Registration { path })
}

/// Every registered run, with its file. Unreadable files are returned as errors, not skipped:
/// gc reports them.
pub fn entries(registry: &Path) -> Vec<(PathBuf, Result<Entry, String>)> {
    let mut out: Vec<(PathBuf, Result<Entry, String>)> = fs::read_dir(registry)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .map(|p| {
                    let e = fs::read(&p)
                        .map_err(|e| e.to_string())
                        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()));
                    (p, e)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str) -> Entry {
        Entry {
            id: id.into(),
            pid: 0,
            pid_start: 0,
            dir: "/tmp/x".into(),
            backend: "qemu".into(),
            uri: None,
            domain: None,
            keep: false,
        }
    }

    #[test]
    fn a_registration_lives_as_long_as_its_guard_and_names_this_process() {
        let reg = tempfile::tempdir().unwrap();
        let guard = register(reg.path(), entry("disks/nvme.4k")).unwrap();
        let all = entries(reg.path());
        assert_eq!(all.len(), 1);
        let e = all[0].1.as_ref().unwrap();
        assert_eq!(e.pid, std::process::id());
        assert!(e.owner_alive());
        assert!(all[0]
            .0
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("-disks_nvme.4k.json"));
        drop(guard);
        assert!(entries(reg.path()).is_empty());
    }

    #[test]
    fn a_dead_or_reused_pid_is_not_alive() {
        let mut e = entry("x");
        e.pid = std::process::id();
        e.pid_start = process_start(e.pid).unwrap() + 1;
        assert!(
            !e.owner_alive(),
            "same pid, another start time: a reused pid"
        );
        e.pid = u32::MAX - 1;
        assert!(!e.owner_alive());
    }

    #[test]
    fn a_corrupt_file_is_reported() {
        let reg = tempfile::tempdir().unwrap();
        fs::write(reg.path().join("1-x.json"), "{not json").unwrap();
        let all = entries(reg.path());
        assert!(all[0].1.is_err());
    }
}
