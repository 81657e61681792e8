//! Saved VM states: a run that stops once bootkube is done and saves the VM (RAM, devices,
//! disks) into a state directory, and runs that resume it to measure install-to-disk alone,
//! without booting and bootstrapping again (`sno-harness perf --disk-write-only`).
//!
//! The save point: install-to-disk.service would run coreos-installer as soon as bootkube is
//! done, so a saving run embeds an Ignition in which the unit waits for a file first
//! (assets/hold.rs). The saved state has the install not begun; a resumed run creates the file,
//! and the install runs as it would have. Once the live system answers SSH, the run checks
//! the hold is in place.
//!
//! A state directory holds `snapshot.json` (the manifest), `vm.state` (QEMU's migration
//! stream), the disk images of that moment (never written again: each resumed run writes into
//! qcow2 overlays on them), the live ISO, the UEFI variables, and the SSH key the guest trusts.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use crate::assets::Assets;
use crate::flow::event::SignalTx;
use crate::flow::event::{Signal, Source};
use crate::flow::machine::Machine;
use crate::guest::ssh::{SshKeyPair, SshTarget};
use crate::scenario::Scenario;
use crate::vm::accel::Accel;
use crate::vm::running::RunningVm;
use crate::vm::VmSpec;

pub const MANIFEST_FILE: &str = "snapshot.json";
pub const SCHEMA: &str = "sno-harness/snapshot/v1";
pub const STATE_FILE: &str = "vm.state";
pub const ISO_FILE: &str = "live.iso";
pub const KEY_FILE: &str = "ssh-key";
pub const UEFI_VARS_FILE: &str = "OVMF_VARS.fd";
pub const KUBECONFIG_FILE: &str = "kubeconfig";
use crate::assets::hold::{DROPIN_NAME, HELD_UNIT, RELEASE_FILE};
/// Saving or loading a few GiB of guest RAM through a pipe takes seconds; a minute would mean
/// QEMU is stuck.
pub const STATE_TIMEOUT: Duration = Duration::from_secs(600);

/// What a run does with saved states, or whether it follows a machine booted by others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StateMode {
    /// The whole flow.
    #[default]
    Fresh,
    /// Stop once bootkube is done and save the VM into this directory (created by the run).
    SaveAfterBootkube(PathBuf),
    /// Start from the state in this directory and end once install-to-disk is done.
    ResumeInstall(PathBuf),
    /// Follow a machine the harness did not boot from its live system on (`observe`), with
    /// the assets its install was made with instead of an assets phase.
    Observe(Box<super::given::Given>),
}

/// A disk of the saved VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedDisk {
    pub id: String,
    /// File name in the state directory.
    pub file: String,
}

/// `snapshot.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    /// The run that saved it.
    pub run_id: String,
    pub scenario: String,
    /// RFC 3339 UTC.
    pub saved_at: String,
    /// The state only loads into a QEMU with the same accelerator and machine.
    pub accel: String,
    /// The state loads only into a VM of the same memory size and firmware (the migration
    /// stream carries the RAM and the firmware's own state; a SeaBIOS state in an OVMF machine,
    /// or Secure Boot's SMM machine in one without, does not load or runs on wrong).
    pub memory_mib: u64,
    /// Absent in states saved before it was recorded: those are taken as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<crate::hw::firmware::Firmware>,
    pub disks: Vec<SavedDisk>,
    pub uefi_vars: Option<String>,
    /// From the saving run's start until bootkube was done: what each resumed run saves.
    pub bootstrap_ms: u64,
    /// Pausing the VM and writing `vm.state`.
    pub save_ms: u64,
    pub state_bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a saved state: {detail}")]
    Manifest { path: PathBuf, detail: String },
}

/// Why these scenarios' VMs cannot be saved and resumed.
#[derive(Debug, thiserror::Error)]
pub enum CannotSave {
    #[error("saving and resuming the VM needs --backend qemu, not {0}")]
    Backend(&'static str),
    #[error("{}: disk {disk:?} is on NVMe, which QEMU cannot save (its NVMe controller is not migratable); use bus virtio, scsi or sata", .scenario.display())]
    Nvme { scenario: PathBuf, disk: String },
    #[error("{}: disk {disk:?} is multipath, whose raw image (shared by its two paths) a saved state's qcow2 overlays cannot take; leave multipath out to save and resume", .scenario.display())]
    Multipath { scenario: PathBuf, disk: String },
}

/// Why a VM was not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("cannot save the VM state: {HELD_UNIT} was not seen held (its drop-in {DROPIN_NAME} loaded) when bootkube was done, so the install may have begun ({0})")]
    NotHeld(String),
    #[error("cannot save the VM state: coreos-installer had started")]
    InstallStarted,
    #[error("cannot save the VM state: {0} bytes were already written to the install disk")]
    AlreadyWritten(u64),
    #[error("cannot save the VM state: block stats: {0}")]
    BlockStats(#[source] crate::vm::VmError),
    #[error("creating {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("saving the VM state: {0}")]
    Save(#[source] crate::vm::VmError),
    #[error("copying {}: {source}", .path.display())]
    Copy {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Manifest {
    pub fn read(dir: &Path) -> Result<Manifest, StateError> {
        let path = dir.join(MANIFEST_FILE);
        let text = fs::read_to_string(&path).map_err(io(&path))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| StateError::Manifest {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        if m.schema != SCHEMA {
            return Err(StateError::Manifest {
                path,
                detail: format!("schema {:?}, expected {SCHEMA:?}", m.schema),
            });
        }
        for f in m
            .disks
            .iter()
            .map(|d| d.file.as_str())
            .chain([STATE_FILE, ISO_FILE, KEY_FILE])
            .chain(m.uefi_vars.as_deref())
        {
            if f.contains('/') || !dir.join(f).is_file() {
                return Err(StateError::Manifest {
                    path,
                    detail: format!("{f} is missing from the state directory"),
                });
            }
        }
        Ok(m)
    }

    pub fn write(&self, dir: &Path) -> Result<(), StateError> {
        let path = dir.join(MANIFEST_FILE);
        let text = serde_json::to_string_pretty(self).expect("a manifest serializes");
        fs::write(&path, text + "\n").map_err(io(&path))
    }

    /// The saved disk of `id`, as a path.
    pub fn disk(&self, dir: &Path, id: &str) -> Option<PathBuf> {
        self.disks
            .iter()
            .find(|d| d.id == id)
            .map(|d| dir.join(&d.file))
    }
}

/// The SSH key the saved guest trusts.
/// Why a saved state cannot load into the VM a scenario describes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    #[error("the state was saved under {saved} and cannot load under {asked}")]
    Accel { saved: String, asked: String },
    #[error("the state was saved with vm.memory {saved} MiB and cannot load into {asked} MiB; resume it with the saving run's memory")]
    Memory { saved: u64, asked: u64 },
    #[error("the state was saved on firmware {saved:?} and cannot load on {asked:?}; resume it with the saving run's vm.firmware")]
    Firmware {
        saved: &'static str,
        asked: &'static str,
    },
}

impl Manifest {
    /// Whether this state loads into a VM of `memory_mib` and `firmware` under `accel`.
    pub fn fits(
        &self,
        accel: &str,
        memory_mib: u64,
        firmware: crate::hw::firmware::Firmware,
    ) -> Result<(), Unfit> {
        if self.accel != accel {
            return Err(Unfit::Accel {
                saved: self.accel.clone(),
                asked: accel.to_string(),
            });
        }
        if self.memory_mib != memory_mib {
            return Err(Unfit::Memory {
                saved: self.memory_mib,
                asked: memory_mib,
            });
        }
        match self.firmware {
            Some(saved) if saved != firmware => Err(Unfit::Firmware {
                saved: saved.as_str(),
                asked: firmware.as_str(),
            }),
            _ => Ok(()),
        }
    }
}

pub fn read_key(dir: &Path) -> Result<SshKeyPair, StateError> {
    let path = dir.join(KEY_FILE);
    let private_openssh = fs::read_to_string(&path).map_err(io(&path))?;
    let public_path = dir.join(format!("{KEY_FILE}.pub"));
    let public_openssh = fs::read_to_string(&public_path)
        .map_err(io(&public_path))?
        .trim()
        .to_string();
    Ok(SshKeyPair {
        private_openssh,
        public_openssh,
    })
}

/// Whether these scenarios' VMs can be saved and resumed on `backend`: checked before anything
/// runs. QEMU's own migration does it (a libvirt save would need the domain restored with its
/// disks swapped for overlays: not done), and QEMU 7.2 refuses to migrate an NVMe controller
/// ("State blocked by non-migratable device").
pub fn can_save(scenarios: &[&Scenario], backend: &crate::vm::Backend) -> Result<(), CannotSave> {
    if !backend.can().saved_state {
        return Err(CannotSave::Backend(backend.name()));
    }
    for s in scenarios {
        if let Some(d) = s.disks.iter().find(|d| d.bus == crate::hw::Bus::Nvme) {
            return Err(CannotSave::Nvme {
                scenario: s.path.clone(),
                disk: d.id.clone(),
            });
        }
        if let Some(d) = s.disks.iter().find(|d| d.multipath) {
            return Err(CannotSave::Multipath {
                scenario: s.path.clone(),
                disk: d.id.clone(),
            });
        }
    }
    Ok(())
}

/// What a resumed run uses instead of making assets: the saved guest's key and live ISO (the
/// guest still reads it), and the saving run's kubeconfig.
pub fn resumed_assets(dir: &Path) -> Result<(SshKeyPair, crate::assets::Assets), StateError> {
    let key = read_key(dir)?;
    let assets = crate::assets::Assets {
        dir: dir.to_path_buf(),
        kubeconfig: dir.join(KUBECONFIG_FILE),
        ignition: PathBuf::new(),
        live_iso: dir.join(ISO_FILE),
        // The saved live system fetched its root filesystem before it was saved.
        rootfs: None,
        pxe: None,
        iso_source: format!("the saved state in {}", dir.display()),
        iso_sha256: String::new(),
        installer: PathBuf::new(),
        installer_version: Default::default(),
        release_override: None,
        install_config: serde_json::Value::Null,
    };
    Ok((key, assets))
}

/// Saves the run's key next to the state (private half 0600).
pub fn write_key(dir: &Path, key: &SshKeyPair) -> Result<(), StateError> {
    let path = dir.join(KEY_FILE);
    crate::assets::write_private(&path, key.private_openssh.as_bytes()).map_err(|e| {
        StateError::Io {
            path: path.clone(),
            source: std::io::Error::other(e.to_string()),
        }
    })?;
    let public_path = dir.join(format!("{KEY_FILE}.pub"));
    fs::write(&public_path, format!("{}\n", key.public_openssh)).map_err(io(&public_path))
}

/// Moves `from` to `to`, copying when they are on different filesystems.
pub fn move_file(from: &Path, to: &Path) -> Result<(), StateError> {
    if fs::rename(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to).map_err(io(from))?;
    fs::remove_file(from).map_err(io(from))
}

/// The guest command that succeeds when systemd has loaded the hold's drop-in.
pub fn check_hold_command() -> String {
    format!("systemctl show -p DropInPaths --value {HELD_UNIT} | grep -q /{DROPIN_NAME}")
}

/// The guest command that lets the held install go.
pub fn release_command() -> String {
    let dir = Path::new(RELEASE_FILE)
        .parent()
        .expect("an absolute path")
        .display()
        .to_string();
    format!("sudo -n sh -c 'mkdir -p {dir} && touch {RELEASE_FILE}'")
}

/// Runs `command` on the guest once SSH answers, retrying both until `timeout`; returns the
/// last error on failure (blocking: call it from `spawn_blocking`).
pub fn on_guest(
    target: &SshTarget,
    command: &str,
    timeout: Duration,
) -> Result<(), Box<crate::util::wait::WaitTimeout<crate::guest::ssh::SshError>>> {
    crate::util::wait::wait_until_succeeds(
        format!("`{command}` on the guest"),
        timeout,
        Duration::from_secs(1),
        || {
            target
                .connect(Duration::from_secs(10))
                .and_then(|s| s.succeed(command))
                .map(drop)
        },
    )
    .map_err(Box::new)
}

/// Runs `command` on the guest in the background (retrying until SSH answers and it
/// succeeds, for up to 5 minutes); on success notes `done` in the timeline, on failure sends
/// the reason to `failures`.
pub fn guest_command_task(
    target: SshTarget,
    command: String,
    done: &'static str,
    signals: SignalTx,
    failures: UnboundedSender<String>,
) {
    tokio::task::spawn_blocking(move || {
        match on_guest(&target, &command, Duration::from_secs(300)) {
            Ok(()) => {
                let _ = signals.send((
                    Source::Harness,
                    Signal::Note {
                        text: done.to_string(),
                    },
                ));
            }
            Err(e) => {
                let _ = failures.send(e.to_string());
            }
        }
    });
}

/// What saving needs from the run.
pub struct SaveInputs<'a> {
    pub vm: &'a mut RunningVm,
    pub machine: &'a Machine,
    /// Where to check that install-to-disk is held.
    pub guest: &'a SshTarget,
    pub spec: &'a VmSpec,
    pub key: &'a SshKeyPair,
    pub assets: &'a Assets,
    pub run_id: &'a str,
    pub scenario: &'a Scenario,
    pub accel: Accel,
}

/// Saves the VM (which must be where `SaveAfterBootkube` stops it: bootkube done, the install
/// held and not begun) into `dir`, which must not exist yet. The VM is stopped afterwards, its
/// disks and live ISO moved into `dir`. The manifest is written last: a directory without one
/// is no saved state.
pub async fn save_vm_state(dir: &Path, i: SaveInputs<'_>) -> Result<Manifest, SaveError> {
    let (guest, check) = (i.guest.clone(), check_hold_command());
    let held =
        tokio::task::spawn_blocking(move || on_guest(&guest, &check, Duration::from_secs(60)))
            .await;
    match held {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(SaveError::NotHeld(e.to_string())),
        Err(e) => return Err(SaveError::NotHeld(e.to_string())),
    }
    if i.machine.disk.start_ms.is_some() {
        return Err(SaveError::InstallStarted);
    }
    if let Some(install) = &i.scenario.install.install_disk_id {
        match i.vm.handle().disk_written_bytes(install).await {
            Ok(Some(0)) | Ok(None) => {}
            Ok(Some(n)) => return Err(SaveError::AlreadyWritten(n)),
            Err(e) => return Err(SaveError::BlockStats(e)),
        }
    }
    // Owner-only: the state is the guest's memory (its keys, the pull secret), and QEMU's
    // `cat > FILE` makes it under the umask unless it exists already, as it does here.
    fs::DirBuilder::new()
        .mode(crate::util::private::PRIVATE_DIR)
        .create(dir)
        .map_err(|source| SaveError::Create {
            path: dir.to_path_buf(),
            source,
        })?;
    let state = dir.join(STATE_FILE);
    crate::util::private::create_empty_private(&state).map_err(|source| SaveError::Create {
        path: state.clone(),
        source,
    })?;
    let saved =
        i.vm.save_state(&state, STATE_TIMEOUT)
            .await
            .map_err(SaveError::Save)?;
    // QEMU flushed the disks when the migration completed; it may go now.
    i.vm.stop();
    let mut disks = Vec::new();
    for d in &i.spec.disks {
        let file = format!("{}.qcow2", d.id);
        move_file(&d.path, &dir.join(&file))?;
        disks.push(SavedDisk {
            id: d.id.clone(),
            file,
        });
    }
    move_file(&i.assets.live_iso, &dir.join(ISO_FILE))?;
    let uefi_vars = match &i.spec.uefi_vars {
        Some(v) => {
            fs::copy(v, dir.join(UEFI_VARS_FILE)).map_err(|source| SaveError::Copy {
                path: v.clone(),
                source,
            })?;
            Some(UEFI_VARS_FILE.to_string())
        }
        None => None,
    };
    write_key(dir, i.key)?;
    if let Ok(k) = fs::read(&i.assets.kubeconfig) {
        crate::assets::write_private(&dir.join(KUBECONFIG_FILE), &k)
            .map_err(|e| SaveError::Io(std::io::Error::other(e.to_string())))?;
    }
    let manifest = Manifest {
        schema: SCHEMA.into(),
        run_id: i.run_id.to_string(),
        scenario: i.scenario.path.display().to_string(),
        saved_at: crate::result::rfc3339(std::time::SystemTime::now()),
        accel: i.accel.to_string(),
        memory_mib: i.spec.memory_mib,
        firmware: Some(i.spec.firmware),
        disks,
        uefi_vars,
        bootstrap_ms: i
            .machine
            .phase(crate::flow::phase::Phase::Bootkube)
            .end_ms
            .unwrap_or(0),
        save_ms: saved.duration.as_millis() as u64,
        state_bytes: saved.bytes,
    };
    manifest.write(dir)?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            schema: SCHEMA.into(),
            run_id: "smoke".into(),
            scenario: "scenarios/smoke.toml".into(),
            saved_at: "2026-11-30T13:00:00Z".into(),
            accel: "tcg".into(),
            memory_mib: 3072,
            firmware: Some(crate::hw::firmware::Firmware::Bios),
            disks: vec![SavedDisk {
                id: "install".into(),
                file: "install.qcow2".into(),
            }],
            uefi_vars: None,
            bootstrap_ms: 61_000,
            save_ms: 2_100,
            state_bytes: 400 << 20,
        }
    }

    fn populated(m: &Manifest) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for f in ["install.qcow2", STATE_FILE, ISO_FILE, KEY_FILE] {
            fs::write(d.path().join(f), "x").unwrap();
        }
        m.write(d.path()).unwrap();
        d
    }

    #[test]
    fn manifest_round_trip_and_disk_lookup() {
        let m = manifest();
        let d = populated(&m);
        let back = Manifest::read(d.path()).unwrap();
        assert_eq!(back, m);
        assert_eq!(
            back.disk(d.path(), "install"),
            Some(d.path().join("install.qcow2"))
        );
        assert_eq!(back.disk(d.path(), "data"), None);
    }

    #[test]
    fn a_state_directory_missing_a_file_or_of_another_schema_is_refused() {
        let m = manifest();
        let d = populated(&m);
        fs::remove_file(d.path().join(STATE_FILE)).unwrap();
        let e = Manifest::read(d.path()).unwrap_err().to_string();
        assert!(e.contains("vm.state is missing"), "{e}");

        let mut other = manifest();
        other.schema = "sno-harness/snapshot/v0".into();
        let d = populated(&other);
        let e = Manifest::read(d.path()).unwrap_err().to_string();
        assert!(e.contains("expected \"sno-harness/snapshot/v1\""), "{e}");

        let mut escaping = manifest();
        escaping.disks[0].file = "../install.qcow2".into();
        let d = populated(&escaping);
        assert!(Manifest::read(d.path()).is_err());

        let empty = tempfile::tempdir().unwrap();
        let e = Manifest::read(empty.path()).unwrap_err().to_string();
        assert!(e.contains("snapshot.json"), "{e}");
    }

    #[test]
    fn the_key_round_trips_with_an_owner_only_private_half() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let k = SshKeyPair::generate("t").unwrap();
        write_key(d.path(), &k).unwrap();
        let back = read_key(d.path()).unwrap();
        assert_eq!(back.private_openssh, k.private_openssh);
        assert_eq!(back.public_openssh, k.public_openssh);
        let mode = fs::metadata(d.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn hold_check_and_release_name_the_dropin_and_the_file() {
        assert_eq!(
            check_hold_command(),
            "systemctl show -p DropInPaths --value install-to-disk.service | grep -q /50-sno-harness-hold.conf"
        );
        assert_eq!(
            release_command(),
            "sudo -n sh -c 'mkdir -p /run/sno-harness && touch /run/sno-harness/release-install'"
        );
    }

    #[test]
    fn a_state_loads_only_into_the_memory_and_firmware_it_was_saved_with() {
        use crate::hw::firmware::Firmware;
        let m = manifest();
        assert_eq!(m.fits("tcg", 3072, Firmware::Bios), Ok(()));
        let e = m.fits("tcg", 3072, Firmware::UefiSecure).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the state was saved on firmware \"bios\" and cannot load on \"uefi-secure\"; resume it with the saving run's vm.firmware"
        );
        assert!(matches!(
            m.fits("tcg", 4096, Firmware::Bios),
            Err(Unfit::Memory {
                saved: 3072,
                asked: 4096
            })
        ));
        assert!(matches!(
            m.fits("kvm", 3072, Firmware::Bios),
            Err(Unfit::Accel { .. })
        ));
        let old = Manifest {
            firmware: None,
            ..manifest()
        };
        assert_eq!(
            old.fits("tcg", 3072, Firmware::Uefi),
            Ok(()),
            "a state from before firmware was recorded"
        );
        let json = serde_json::to_string(&m).unwrap();
        let back: Manifest = serde_json::from_str(&json).unwrap();
        assert_eq!(back.firmware, Some(Firmware::Bios));
        let without: serde_json::Value =
            serde_json::from_str(&json.replace(",\"firmware\":\"bios\"", "")).unwrap();
        assert_eq!(
            serde_json::from_value::<Manifest>(without)
                .unwrap()
                .firmware,
            None
        );
    }
}
