//! The registry of runs: which runs are in progress, so that `sno-harness gc` can tell what a
//! killed harness left (this file); the claim of a run's directory (`run_dir`), its private
//! directory (`private_dir`), what still uses a run's files (`in_use`), and `gc` itself.
//!
//! Every run writes one small file into the registry directory when its VM is about to be made,
//! and removes it when it has cleaned up. A file whose owner is gone (SIGKILL, a second Ctrl-C,
//! a crash, a reboot of the host) is the mark of a run whose leftovers need collecting: its
//! disks, its copy of the live ISO, its sockets, a libvirt domain.

pub mod gc;
pub mod in_use;
pub mod private_dir;
pub mod run_dir;
pub mod status;

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
    /// The run is paused at its failure (`--pause-on-failure`) until `sno-harness resume`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The run's QEMU process (QEMU backend), recorded once it started: gc kills exactly
    /// this process, never one it only finds by its command line.
    #[serde(default)]
    pub qemu: Option<ProcessId>,
    /// The run's private directory (its disks, ISO copy and sockets, out of the run directory
    /// others may read), when it has one: gc removes it whole once the run is dead and not
    /// kept.
    #[serde(default)]
    pub private: Option<PathBuf>,
    /// The BMC a machine booted through it is powered by (`--backend redfish`): gc powers the
    /// machine off and ejects its media, with the credentials from the same file or the
    /// environment (never recorded here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bmc: Option<BmcRecord>,
}

/// How gc reaches the BMC of a run's machine: its URL (naming the system, or a BMC with one),
/// the credentials file, if they came from one, and whom it trusts on https (the CA file or
/// the certificate's fingerprint the run was given; neither: the system's roots).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BmcRecord {
    pub url: String,
    #[serde(default)]
    pub credentials: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

impl BmcRecord {
    /// The record of the machine `m` a run boots.
    pub fn of(m: &crate::vm::backend::BmcMachine) -> BmcRecord {
        use crate::vm::redfish::Trust;
        BmcRecord {
            url: m.bmc.clone(),
            credentials: m.credentials.clone(),
            ca_file: match &m.trust {
                Trust::CaFile(f) => Some(f.clone()),
                _ => None,
            },
            fingerprint: match &m.trust {
                Trust::Fingerprint(f) => Some(f.to_string()),
                _ => None,
            },
        }
    }

    /// Whom the run trusted; a fingerprint that no longer parses is said.
    pub fn trust(&self) -> Result<crate::vm::redfish::Trust, String> {
        use crate::vm::redfish::{Fingerprint, Trust};
        match (&self.ca_file, &self.fingerprint) {
            (Some(f), _) => Ok(Trust::CaFile(f.clone())),
            (None, Some(f)) => Fingerprint::parse(f)
                .map(Trust::Fingerprint)
                .map_err(|e| e.to_string()),
            (None, None) => Ok(Trust::System),
        }
    }
}

/// A process by pid and start time (clock ticks since boot): a pid alone can be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    pub pid: u32,
    pub start: u64,
}

impl ProcessId {
    /// The process `pid` as it is now, if it exists.
    pub fn of(pid: u32) -> Option<ProcessId> {
        process_start(pid).map(|start| ProcessId { pid, start })
    }

    /// Whether this very process still runs (not another that got its pid).
    pub fn alive(&self) -> bool {
        process_start(self.pid) == Some(self.start)
    }
}

/// Where the registry lives: `$SNO_HARNESS_STATE_DIR` (tests), else `/run/sno-harness` for
/// root, else `$XDG_RUNTIME_DIR/sno-harness`, else the temporary directory.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SNO_HARNESS_STATE_DIR") {
        return PathBuf::from(d).join("runs");
    }
    if my_uid() == 0 {
        return PathBuf::from("/run/sno-harness/runs");
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("sno-harness/runs");
    }
    std::env::temp_dir().join(format!("sno-harness-{}/runs", my_uid()))
}

/// This process's effective uid: the owner every registry file and directory must have.
fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// A registration gc does not act on: what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("run directory {0:?} is not an absolute path below / without \"..\"")]
    RunDir(PathBuf),
    #[error("private directory {0:?} is not an absolute path below / without \"..\"")]
    PrivateDir(PathBuf),
    #[error("private directory {0:?} holds the run directory or the home directory: gc would remove it whole")]
    PrivateHoldsOthers(PathBuf),
    #[error(transparent)]
    Uri(#[from] crate::vm::libvirt::UriError),
    #[error("domain {0:?} is not a name the harness gives its domains")]
    Domain(String),
    #[error("{0} (a symbolic link is refused)")]
    Open(std::io::Error),
    #[error("{0}")]
    Read(std::io::Error),
    #[error("not a regular file of this user (uid {0})")]
    NotTheUsers(u32),
    #[error("larger than {MAX_ENTRY_BYTES} bytes")]
    TooLarge,
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("the registry is not a directory of this user (uid {0}): none of its files is read")]
    RegistryNotTheUsers(u32),
}

impl Entry {
    /// What gc may not act on: a registration is data anyone who could write the registry
    /// wrote. The run directory must be absolute, without `..`, and not the root; the libvirt
    /// URI one of the transports `run` accepts; the domain a harness domain's name.
    pub fn check(&self) -> Result<(), EntryError> {
        let dir_ok = self.dir.is_absolute()
            && self.dir.parent().is_some()
            && !self
                .dir
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if !dir_ok {
            return Err(EntryError::RunDir(self.dir.clone()));
        }
        if let Some(p) = &self.private {
            check_private(p, &self.dir)?;
        }
        if let Some(uri) = &self.uri {
            crate::vm::libvirt::remote::remote_target(uri)?;
        }
        if let Some(d) = &self.domain {
            let name_ok = d.starts_with("sno-")
                && d.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && !d.contains("..");
            if !name_ok {
                return Err(EntryError::Domain(d.clone()));
            }
        }
        Ok(())
    }

    /// Whether the process that registered the run still runs.
    pub fn owner_alive(&self) -> bool {
        process_start(self.pid) == Some(self.pid_start)
    }
}

/// A private directory gc may remove whole: absolute, without `..`, and neither `/`, the run
/// directory (its evidence), the home directory nor a directory above one of them.
fn check_private(private: &Path, run_dir: &Path) -> Result<(), EntryError> {
    let plain = private.is_absolute()
        && private.parent().is_some()
        && !private
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    if !plain {
        return Err(EntryError::PrivateDir(private.to_path_buf()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let above = |p: &Path| p.starts_with(private);
    if above(run_dir) || home.as_deref().is_some_and(above) {
        return Err(EntryError::PrivateHoldsOthers(private.to_path_buf()));
    }
    Ok(())
}

/// A registered run; the file goes when this is dropped (the run cleaned up after itself),
/// unless the run left its VM running for the user.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
    entry: Entry,
    left_running: bool,
}

impl Registration {
    /// Adds the run's QEMU process to the registration, replacing the file whole (a new file
    /// renamed over it: a reader sees the old entry or the new one, never half).
    pub fn record_qemu(&mut self, qemu: ProcessId) -> std::io::Result<()> {
        self.update(|e| e.qemu = Some(qemu))
    }

    /// Changes the registered entry (the libvirt domain once it is named, the QEMU once it
    /// runs), replacing the file whole.
    pub fn update(&mut self, change: impl FnOnce(&mut Entry)) -> std::io::Result<()> {
        change(&mut self.entry);
        let tmp = self.path.with_extension("json.tmp");
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(&self.entry).expect("serialisable"))?;
        fs::rename(&tmp, &self.path)
    }
}

impl Registration {
    /// The run ends with its VM still running (a passing `--keep` run): the file stays, so
    /// that `sno-harness gc` finds the VM once the harness is gone and stops it.
    pub fn leave_for_gc(mut self) {
        self.left_running = true;
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if !self.left_running {
            let _ = fs::remove_file(&self.path);
        }
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
    ensure_private(registry)?;
    let path = registry.join(file_name(&entry.id, entry.pid));
    // Not through a link someone planted under this name.
    let _ = fs::remove_file(&path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(&serde_json::to_vec_pretty(&entry).expect("serialisable"))?;
    Ok(Registration {
        path,
        entry,
        left_running: false,
    })
}

/// Creates the registry directory owner-only, or checks the one there: a directory (not a
/// link) of this user, made owner-only when it is more open. One of another user is refused:
/// whoever owns it could plant registrations for gc to act on.
pub fn ensure_private(registry: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(registry)?;
    let m = fs::symlink_metadata(registry)?;
    let me = my_uid();
    if !m.is_dir() || m.uid() != me {
        return Err(std::io::Error::other(format!(
            "the run registry {} is {} of uid {}, not a directory of this user (uid {me}): remove it, or set SNO_HARNESS_STATE_DIR",
            registry.display(),
            if m.file_type().is_symlink() { "a symbolic link" } else if m.is_dir() { "a directory" } else { "a file" },
            m.uid()
        )));
    }
    if m.mode() & 0o077 != 0 {
        fs::set_permissions(registry, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The largest registration read (they are some 300 bytes).
const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// One registration, if it is what a run writes: a regular file of this user (no link),
/// small, parsing as an entry that passes `Entry::check`.
fn read_entry(path: &Path) -> Result<Entry, EntryError> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(EntryError::Open)?;
    let m = f.metadata().map_err(EntryError::Read)?;
    let me = my_uid();
    if !m.is_file() || m.uid() != me {
        return Err(EntryError::NotTheUsers(me));
    }
    let mut bytes = Vec::new();
    f.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(EntryError::Read)?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(EntryError::TooLarge);
    }
    let e: Entry = serde_json::from_slice(&bytes)?;
    e.check()?;
    Ok(e)
}

/// The registered runs `run` names: by id, or by run directory (made absolute as the
/// registration holds it). Registrations that do not read as a run's are left out.
pub fn named(registry: &Path, run: &str) -> Vec<Entry> {
    let dir = Path::new(run)
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(run));
    entries(registry)
        .into_iter()
        .filter_map(|(_, e)| e.ok())
        .filter(|e| e.id == run || e.dir == dir)
        .collect()
}

/// Every registered run, with its file. Files that are not a run's registration are returned
/// as errors, not acted on: gc reports them.
pub fn entries(registry: &Path) -> Vec<(PathBuf, Result<Entry, EntryError>)> {
    use std::os::unix::fs::MetadataExt;
    // A registry of another user, or a link to one, is read by nobody: its files could be
    // anyone's. (Checked without changing it: gc --dry-run changes nothing.)
    if let Ok(m) = fs::symlink_metadata(registry) {
        let me = my_uid();
        if !m.is_dir() || m.uid() != me {
            return vec![(
                registry.to_path_buf(),
                Err(EntryError::RegistryNotTheUsers(me)),
            )];
        }
    }
    let mut out: Vec<(PathBuf, Result<Entry, EntryError>)> = fs::read_dir(registry)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .map(|p| {
                    let e = read_entry(&p);
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
            paused: false,
            qemu: None,
            private: None,
            bmc: None,
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
    fn planted_registrations_are_refused_not_acted_on() {
        use std::os::unix::fs::symlink;
        let reg = tempfile::tempdir().unwrap();
        let good = |f: &dyn Fn(&mut Entry)| {
            let mut e = entry("x");
            f(&mut e);
            serde_json::to_vec(&e).unwrap()
        };
        fs::write(
            reg.path().join("1-root.json"),
            good(&|e| e.dir = "/".into()),
        )
        .unwrap();
        fs::write(
            reg.path().join("2-up.json"),
            good(&|e| e.dir = "/tmp/a/../../etc".into()),
        )
        .unwrap();
        fs::write(
            reg.path().join("3-ext.json"),
            good(&|e| e.uri = Some("qemu+ext:///system?command=/bin/touch".into())),
        )
        .unwrap();
        fs::write(
            reg.path().join("4-dom.json"),
            good(&|e| e.domain = Some("../../etc/passwd".into())),
        )
        .unwrap();
        let target = reg.path().join("elsewhere");
        fs::write(&target, good(&|_| ())).unwrap();
        symlink(&target, reg.path().join("5-link.json")).unwrap();
        fs::write(reg.path().join("6-ok.json"), good(&|_| ())).unwrap();
        let all = entries(reg.path());
        let verdicts: Vec<(String, bool)> = all
            .iter()
            .map(|(p, e)| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    e.is_ok(),
                )
            })
            .collect();
        assert_eq!(
            verdicts,
            [
                ("1-root.json".to_string(), false),
                ("2-up.json".into(), false),
                ("3-ext.json".into(), false),
                ("4-dom.json".into(), false),
                ("5-link.json".into(), false),
                ("6-ok.json".into(), true),
            ]
        );
    }

    #[test]
    fn a_private_directory_gc_would_remove_whole_must_be_one_of_the_run_s_own() {
        let with = |p: &str| {
            let mut e = entry("x");
            e.dir = "/out/smoke".into();
            e.private = Some(p.into());
            e.check()
        };
        with("/run/user/1000/sno-harness/private/smoke-1").unwrap();
        for bad in ["/", "relative", "/tmp/a/../..", "/out", "/out/smoke"] {
            assert!(with(bad).is_err(), "{bad}");
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
            let err = with(home.to_str().unwrap()).unwrap_err();
            assert!(err.to_string().contains("home directory"), "{err}");
        }
    }

    #[test]
    fn the_registry_is_made_owner_only_and_tightened_when_open() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let reg = tmp.path().join("state/runs");
        ensure_private(&reg).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&reg), 0o700);
        fs::set_permissions(&reg, fs::Permissions::from_mode(0o777)).unwrap();
        ensure_private(&reg).unwrap();
        assert_eq!(mode(&reg), 0o700);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&reg, &link).unwrap();
        let err = ensure_private(&link).unwrap_err().to_string();
        assert!(err.contains("a symbolic link"), "{err}");
    }

    #[test]
    fn a_corrupt_file_is_reported() {
        let reg = tempfile::tempdir().unwrap();
        fs::write(reg.path().join("1-x.json"), "{not json").unwrap();
        let all = entries(reg.path());
        assert!(all[0].1.is_err());
    }
}
