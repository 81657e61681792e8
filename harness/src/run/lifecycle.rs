//! What a run does with saved VM states, as one strategy the session asks at each point where
//! the three ways differ: the whole flow; stop once bootkube is done and save the VM; or resume
//! a saved VM for install-to-disk alone (`state.rs` has the saving and the state directory).

use std::path::PathBuf;

use super::error::RunError;
use super::given::Given;
use super::progress::Progress;
use super::state::{self, guest_command_task, save_vm_state, Manifest, SaveInputs, StateMode};
use crate::assets::Assets;
use crate::flow::event::{EventLog, Signal, SignalTx, Source};
use crate::flow::machine::{Action, Machine};
use crate::flow::phase::Phase;
use crate::guest::ssh::{SshKeyPair, SshTarget};
use crate::hw::{Accel, Firmware, OVMF_VARS};
use crate::scenario::Scenario;
use crate::vm::disk;
use crate::vm::running::RunningVm;
use crate::vm::DiskSpec;

/// A disk of the VM that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MakeDiskError {
    #[error("{}: the saved state has no disk {disk:?}; it was saved from another scenario", .dir.display())]
    NotSaved { dir: PathBuf, disk: String },
    #[error(transparent)]
    Disk(#[from] disk::DiskError),
}

pub enum Lifecycle {
    Fresh,
    /// Stop once bootkube is done and save the VM into `dir` (a new directory).
    Save {
        dir: PathBuf,
    },
    /// Start from the VM saved in `dir` and end once install-to-disk is done.
    Resume {
        dir: PathBuf,
        manifest: Box<Manifest>,
    },
    /// Follow a machine booted by others, with the assets its install was made with.
    Observe {
        given: Box<Given>,
    },
}

impl StateMode {
    /// The phase a run of this mode ends with (passed), when not the last.
    pub fn stops_after(&self) -> Option<Phase> {
        match self {
            StateMode::Fresh | StateMode::Observe(_) => None,
            StateMode::SaveAfterBootkube(_) => Some(Phase::Bootkube),
            StateMode::ResumeInstall(_) => Some(Phase::InstallToDisk),
        }
    }
}

impl Lifecycle {
    /// The strategy of `mode`; a saved state is read now, and must have been saved under the
    /// same accelerator, memory size and firmware as the VM of `s` (QEMU loads it into no
    /// other).
    pub fn new(mode: &StateMode, accel: Accel, s: &Scenario) -> Result<Lifecycle, RunError> {
        Ok(match mode {
            StateMode::Fresh => Lifecycle::Fresh,
            StateMode::Observe(given) => Lifecycle::Observe {
                given: given.clone(),
            },
            StateMode::SaveAfterBootkube(dir) => Lifecycle::Save { dir: dir.clone() },
            StateMode::ResumeInstall(dir) => {
                let manifest = Manifest::read(dir).map_err(|e| RunError::Harness(e.to_string()))?;
                manifest
                    .fits(&accel.to_string(), s.vm.memory_mib, s.vm.firmware)
                    .map_err(|e| RunError::Harness(format!("{}: {e}", dir.display())))?;
                Lifecycle::Resume {
                    dir: dir.clone(),
                    manifest: Box::new(manifest),
                }
            }
        })
    }

    /// The first phase starts: assets, or install-to-disk of a resumed VM (the phases before
    /// it ran in the run that saved the state), or live-boot of an observed machine (its
    /// assets were made by others).
    pub fn begin(&self, machine: &mut Machine, now_ms: u64) -> Vec<Action> {
        match self {
            Lifecycle::Resume { dir, .. } => machine.start_at(
                Phase::InstallToDisk,
                now_ms,
                &format!("ran in the run that saved {}", dir.display()),
            ),
            Lifecycle::Observe { given } => machine.start_at(
                Phase::LiveBoot,
                now_ms,
                &format!("made by others; given as {}", given.from),
            ),
            _ => machine.start(now_ms),
        }
    }

    /// A resumed VM's assets: the saved guest's key, live ISO and kubeconfig; an observed
    /// machine's, as given, placed in the run's private directory `private`.
    pub fn saved_assets(
        &self,
        private: &std::path::Path,
    ) -> Option<Result<(SshKeyPair, Assets), RunError>> {
        match self {
            Lifecycle::Resume { dir, .. } => {
                Some(state::resumed_assets(dir).map_err(|e| RunError::Harness(e.to_string())))
            }
            Lifecycle::Observe { given } => Some(given.place(private).map_err(RunError::Harness)),
            _ => None,
        }
    }

    /// Whether the assets were given by others (no installer or ISO of the run's to record).
    pub fn assets_are_given(&self) -> bool {
        matches!(self, Lifecycle::Observe { .. })
    }

    /// Whether the live Ignition holds install-to-disk until it is released (a saving run).
    pub fn holds_install(&self) -> bool {
        matches!(self, Lifecycle::Save { .. })
    }

    /// Whether the VM starts waiting for a saved state to load.
    pub fn incoming(&self) -> bool {
        matches!(self, Lifecycle::Resume { .. })
    }

    /// Creates a disk of the VM: empty, or (resuming) an overlay on the saved image, which
    /// stays unwritten for the next resume.
    pub fn make_disk(&self, d: &DiskSpec, size_bytes: u64) -> Result<(), MakeDiskError> {
        match self {
            Lifecycle::Resume { dir, manifest } => match manifest.disk(dir, &d.id) {
                Some(saved) => Ok(disk::create_overlay(&d.path, &saved)?),
                None => Err(MakeDiskError::NotSaved {
                    dir: dir.clone(),
                    disk: d.id.clone(),
                }),
            },
            _ => Ok(disk::create(&d.path, &d.format, size_bytes)?),
        }
    }

    /// Where the VM's UEFI variables start from: the saved ones when resuming, else the
    /// firmware's template (with Microsoft's keys for Secure Boot). SeaBIOS has no variables
    /// and is never asked.
    pub fn uefi_vars_template(&self, firmware: Firmware) -> PathBuf {
        match self {
            Lifecycle::Resume { dir, .. } => dir.join(state::UEFI_VARS_FILE),
            _ => PathBuf::from(firmware.ovmf_vars_template().unwrap_or(OVMF_VARS)),
        }
    }

    /// Once the VM runs: a resumed one gets its saved state loaded (and runs on from there).
    pub async fn after_start(
        &self,
        vm: &mut RunningVm,
        ui: &Progress,
        log: &mut EventLog,
    ) -> Result<(), RunError> {
        let Lifecycle::Resume { dir, .. } = self else {
            return Ok(());
        };
        let path = dir.join(state::STATE_FILE);
        match vm.load_state(&path, state::STATE_TIMEOUT).await {
            Ok(took) => {
                let text = format!(
                    "VM state loaded from {} in {:.1} s",
                    path.display(),
                    took.as_secs_f64()
                );
                ui.line(&text);
                let _ = log.record(Source::Harness, Signal::Note { text });
                Ok(())
            }
            Err(e) => {
                vm.stop();
                Err(RunError::Harness(format!(
                    "loading the saved VM state: {e}"
                )))
            }
        }
    }

    /// Guest work that goes with the strategy: a resumed run releases install-to-disk from
    /// its hold as soon as SSH answers; a failure ends the run through `failures`.
    pub fn on_guest(
        &self,
        target: &SshTarget,
        signals: &SignalTx,
        failures: tokio::sync::mpsc::UnboundedSender<String>,
    ) {
        if self.incoming() {
            guest_command_task(
                target.clone(),
                state::release_command(),
                "install-to-disk.service released from the saved state's hold",
                signals.clone(),
                failures,
            );
        }
    }

    /// After a passed run: a saving run saves the VM. A failed save leaves nothing half-saved;
    /// its reason comes back, to turn the pass into a harness error.
    pub async fn after_pass(
        &self,
        i: SaveInputs<'_>,
        ui: &Progress,
        log: &mut EventLog,
    ) -> Result<(), state::SaveError> {
        let Lifecycle::Save { dir } = self else {
            return Ok(());
        };
        let scenario = i.scenario;
        match save_vm_state(dir, i).await {
            Ok(m) => {
                let text = format!(
                    "VM state saved in {} ({:.0} MiB in {:.1} s)",
                    dir.display(),
                    m.state_bytes as f64 / 1048576.0,
                    m.save_ms as f64 / 1000.0
                );
                ui.line(&text);
                let _ = log.record(Source::Harness, Signal::Note { text });
                ui.line(&format!(
                    "resume it (as often as wanted): sno-harness run {} --resume-state {}",
                    scenario.path.display(),
                    dir.display()
                ));
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(dir);
                let text = e.to_string();
                let _ = log.record(Source::Harness, Signal::Note { text });
                Err(e)
            }
        }
    }

    /// Whether `--keep` leaves the disks for the user: a saving run's disks went into the
    /// state directory, and what it keeps is the saved VM.
    pub fn keeps_disks(&self, keep: bool) -> bool {
        keep && !matches!(self, Lifecycle::Save { .. })
    }
}
