//! A started VM, whichever backend started it: what the run needs from it (its events in the
//! signal channel, the install disk's write counter, a screenshot, whether it still runs, and
//! stopping it) behind one type, so the flow does not know which backend it drives.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::bmc_boot::{BmcVm, Power};
use super::error::VmError;
use super::external::ExternalVm;
use super::libvirt::LibvirtVm;
use super::qemu::process::Tether;
use super::qemu::qmp::Qmp;
use super::qemu::QemuProcess;
use super::start::{RunMeta, StartOptions};
use super::{Nic, VmSpec};
use crate::flow::event::SignalTx;
use crate::flow::event::{Signal, Source};
use crate::guest::console::Console;

pub use super::backend::Backend;

/// Lets a user type into the console (`sno-harness console RUN --interactive`) through a
/// socket beside the VM's serial socket, in the run's private directory. A run goes on without
/// it: the user is told why there is none.
fn serve_console_input(console: &Console, spec: &VmSpec) {
    let path = spec
        .serial_socket
        .with_file_name(crate::guest::console_input::SOCKET);
    if let Err(e) = console.serve_input(&path) {
        tracing::warn!(
            "no interactive console for this run ({}: {e}); `sno-harness console RUN` still follows it",
            path.display()
        );
    }
}

/// QMP's event stream ended: QEMU exited (its own signal says so), or QEMU runs on without the
/// harness's QMP connection, which is then lost. QEMU closes the socket a moment before it
/// exits, so the process is looked at after a second.
async fn qmp_lost(pid: u32, start: Option<u64>) -> Option<Signal> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let runs = start.is_some_and(|s| crate::util::process::still_runs(pid, s));
    runs.then(|| Signal::InstrumentLost {
        instrument: "QMP connection".into(),
        detail: format!(
            "QEMU (pid {pid}) runs on, but its QMP socket closed the harness's connection: resets, panics and disk statistics can no longer be seen"
        ),
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Gone,
    Lost {
        instrument: &'static str,
        detail: String,
    },
}

/// What a kept run left running for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftRunning {
    /// A QEMU process, the harness's own or a libvirt domain's, by its pid.
    Qemu(u32),
    /// A machine its BMC keeps powered on.
    PoweredOn,
}

impl LeftRunning {
    /// The QEMU process's pid, when it is one.
    pub fn pid(self) -> Option<u32> {
        match self {
            LeftRunning::Qemu(pid) => Some(pid),
            LeftRunning::PoweredOn => None,
        }
    }
}

pub enum RunningVm {
    Qemu {
        process: QemuProcess,
        qmp: Arc<Qmp>,
    },
    /// libvirt's calls block: the domain is shared with `spawn_blocking` tasks.
    Libvirt(Arc<std::sync::Mutex<LibvirtVm>>),
    /// A machine the harness did not boot: nothing runs of the harness's but its console.
    External(ExternalVm),
    /// A machine booted through its BMC: judged as an external one, powered by the BMC.
    Redfish(Box<BmcVm>),
    #[cfg(test)]
    StandIn(super::stand_in::StandInVm),
}

impl RunningVm {
    /// Starts the VM and forwards its events (QMP's, or libvirt's under QMP's names) into
    /// `tx`. Call it from a thread that lives as long as the VM (the QEMU backend's parent-death
    /// signal is tied to the starting thread).
    pub async fn start(
        backend: &Backend,
        spec: &VmSpec,
        opts: StartOptions<'_>,
        meta: &RunMeta,
        dir: &Path,
        tx: &SignalTx,
    ) -> Result<(RunningVm, Console), VmError> {
        let started = Self::start_on(backend, spec, opts, meta, dir, tx).await?;
        if backend.can().console {
            serve_console_input(&started.1, spec);
        }
        Ok(started)
    }

    async fn start_on(
        backend: &Backend,
        spec: &VmSpec,
        opts: StartOptions<'_>,
        meta: &RunMeta,
        dir: &Path,
        tx: &SignalTx,
    ) -> Result<(RunningVm, Console), VmError> {
        match backend {
            Backend::Qemu => Self::start_qemu(spec, &opts, dir, tx).await,
            Backend::Libvirt { .. } if opts.incoming => Err(VmError::NotOnThisBackend {
                what: "restoring a saved VM state",
            }),
            Backend::Libvirt { uri } => {
                let (vm, console) =
                    LibvirtVm::start(uri, spec, opts, meta, dir, tx).map_err(|source| {
                        VmError::Libvirt {
                            uri: uri.clone(),
                            source,
                        }
                    })?;
                Ok((
                    RunningVm::Libvirt(Arc::new(std::sync::Mutex::new(vm))),
                    console,
                ))
            }
            Backend::External(machine) => {
                let (vm, console) = ExternalVm::start(machine, opts.reach, dir)
                    .map_err(|e| VmError::Console(e.to_string()))?;
                Ok((RunningVm::External(vm), console))
            }
            Backend::Redfish(machine) => {
                let (vm, console) = BmcVm::start(machine, spec, opts.reach, dir).await?;
                Ok((RunningVm::Redfish(Box::new(vm)), console))
            }
            #[cfg(test)]
            Backend::StandIn => {
                let (vm, console) = super::stand_in::StandInVm::start(dir)
                    .map_err(|e| VmError::Detach(e.to_string()))?;
                Ok((RunningVm::StandIn(vm), console))
            }
        }
    }

    /// QEMU started by the harness, with its QMP events forwarded into `tx`.
    async fn start_qemu(
        spec: &VmSpec,
        opts: &StartOptions<'_>,
        dir: &Path,
        tx: &SignalTx,
    ) -> Result<(RunningVm, Console), VmError> {
        if spec.nic != Nic::User || opts.network.is_some() {
            return Err(VmError::NoNetwork { backend: "QEMU" });
        }
        let tether = if opts.may_outlive {
            Tether::MayOutlive
        } else {
            Tether::DiesWithHarness
        };
        let (mut process, console) = QemuProcess::start_with(spec, dir, opts.incoming, tether)?;
        let qmp_path = spec
            .qmp_socket
            .clone()
            .unwrap_or_else(|| dir.join("qmp.sock"));
        let (q, mut events) = match Qmp::connect(&qmp_path, Duration::from_secs(30)).await {
            Ok(connected) => connected,
            Err(e) => {
                process.kill();
                return Err(e.into());
            }
        };
        let tx = tx.clone();
        let qemu = process.pid();
        let qemu_start = crate::util::process::process_start(qemu);
        tokio::spawn(async move {
            while let Some(ev) = events.recv().await {
                let signal = Signal::Qmp {
                    name: ev.name,
                    data: ev.data,
                };
                let _ = tx.send((Source::Qmp, signal));
            }
            if let Some(lost) = qmp_lost(qemu, qemu_start).await {
                let _ = tx.send((Source::Harness, lost));
            }
        });
        let vm = RunningVm::Qemu {
            process,
            qmp: Arc::new(q),
        };
        Ok((vm, console))
    }

    /// For `vm.txt`: the QEMU command line, or the domain XML.
    pub fn describe(&self) -> String {
        match self {
            RunningVm::Qemu { process, .. } => process.command_line(),
            RunningVm::Libvirt(vm) => lock(vm).xml().to_string(),
            RunningVm::External(vm) => vm.describe(),
            RunningVm::Redfish(vm) => vm.describe(),
            #[cfg(test)]
            RunningVm::StandIn(_) => "a stand-in VM".into(),
        }
    }

    /// Where this host reaches the guest's `addr`: itself, or a local end of an SSH forward
    /// to a remote libvirt host.
    pub fn local_addr(&self, addr: std::net::SocketAddr) -> std::net::SocketAddr {
        match self {
            RunningVm::Qemu { .. } => addr,
            RunningVm::Libvirt(vm) => lock(vm).local_addr(addr),
            RunningVm::External(vm) => vm.local_addr(addr),
            RunningVm::Redfish(vm) => vm.local_addr(addr),
            #[cfg(test)]
            RunningVm::StandIn(_) => addr,
        }
    }

    /// The context of the host the VM runs on when that is not this one (a remote libvirtd).
    pub fn remote_host_context(&self) -> Option<crate::result::HostContext> {
        match self {
            RunningVm::Qemu { .. } => None,
            RunningVm::Libvirt(vm) => lock(vm).remote_host_context(),
            RunningVm::External(_) | RunningVm::Redfish(_) => None,
            #[cfg(test)]
            RunningVm::StandIn(_) => None,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        match self {
            RunningVm::Qemu { process, .. } => Some(process.pid()),
            RunningVm::Libvirt(vm) => lock(vm).pid(),
            RunningVm::External(_) | RunningVm::Redfish(_) => None,
            #[cfg(test)]
            RunningVm::StandIn(_) => None,
        }
    }

    /// Whether the VM runs, has ended, or cannot be told because the instrument that says is
    /// lost (the libvirt connection).
    pub fn liveness(&mut self) -> Liveness {
        match self {
            RunningVm::Qemu { process, .. } => match process.is_running() {
                true => Liveness::Running,
                false => Liveness::Gone,
            },
            RunningVm::Libvirt(vm) => match lock(vm).liveness() {
                Ok(true) => Liveness::Running,
                Ok(false) => Liveness::Gone,
                Err(e) => Liveness::Lost {
                    instrument: "libvirt connection",
                    detail: e.to_string(),
                },
            },
            // Nothing says whether a machine the harness did not boot runs: SSH and the API do.
            RunningVm::External(_) => Liveness::Running,
            // The BMC's power state: off is the machine's end.
            RunningVm::Redfish(vm) => match vm.power() {
                Power::On => Liveness::Running,
                Power::Off => Liveness::Gone,
                Power::Lost(detail) => Liveness::Lost {
                    instrument: "BMC",
                    detail,
                },
            },
            #[cfg(test)]
            RunningVm::StandIn(vm) => match vm.is_running() {
                true => Liveness::Running,
                false => Liveness::Gone,
            },
        }
    }

    /// Pauses the VM and saves its state to `path` (QEMU backend only; see
    /// `qemu::state_file`).
    pub async fn save_state(
        &self,
        path: &Path,
        timeout: Duration,
    ) -> Result<super::qemu::state_file::Saved, VmError> {
        match self {
            RunningVm::Qemu { qmp, .. } => {
                Ok(super::qemu::state_file::save(qmp, path, timeout).await?)
            }
            RunningVm::Libvirt(_) | RunningVm::External(_) | RunningVm::Redfish(_) => {
                Err(VmError::NotOnThisBackend {
                    what: "saving the VM state",
                })
            }
            #[cfg(test)]
            RunningVm::StandIn(_) => Err(VmError::NotOnThisBackend {
                what: "saving the VM state",
            }),
        }
    }

    /// Loads a state saved by `save_state` into a VM started with `incoming`, and lets it run.
    pub async fn load_state(&self, path: &Path, timeout: Duration) -> Result<Duration, VmError> {
        match self {
            RunningVm::Qemu { qmp, .. } => {
                Ok(super::qemu::state_file::load(qmp, path, timeout).await?)
            }
            RunningVm::Libvirt(_) | RunningVm::External(_) | RunningVm::Redfish(_) => {
                Err(VmError::NotOnThisBackend {
                    what: "restoring a saved VM state",
                })
            }
            #[cfg(test)]
            RunningVm::StandIn(_) => Err(VmError::NotOnThisBackend {
                what: "restoring a saved VM state",
            }),
        }
    }

    /// Leaves the VM running after the harness, for the user: its QEMU pid, or a machine left
    /// powered on by its BMC. Only a VM started `may_outlive` (a QEMU without the parent-death
    /// signal, a local domain without auto-destroy).
    pub fn detach(&mut self) -> Result<LeftRunning, VmError> {
        match self {
            RunningVm::Qemu { process, .. } => process
                .detach()
                .map(LeftRunning::Qemu)
                .map_err(VmError::Detach),
            RunningVm::Libvirt(vm) => lock(vm)
                .detach()
                .map(LeftRunning::Qemu)
                .map_err(|e| VmError::Detach(e.to_string())),
            RunningVm::External(_) => Err(VmError::Detach(
                "the machine is not the harness's: it runs on whatever the run does".into(),
            )),
            RunningVm::Redfish(vm) => {
                vm.leave_powered_on();
                Ok(LeftRunning::PoweredOn)
            }
            #[cfg(test)]
            RunningVm::StandIn(_) => Err(VmError::Detach("a stand-in VM ends with the run".into())),
        }
    }

    /// The libvirt domain's name, for a VM that is one.
    pub fn domain_name(&self) -> Option<String> {
        match self {
            RunningVm::Libvirt(vm) => Some(lock(vm).name().to_string()),
            _ => None,
        }
    }

    /// Whether stopping keeps the disks where the backend would remove them (a remote host's
    /// pool): the verdict decides (`--keep on-failure`).
    pub fn keep_disks(&mut self, keep: bool) {
        if let RunningVm::Libvirt(vm) = self {
            lock(vm).set_keep_disks(keep);
        }
    }

    /// The install is on the disk and the machine reboots into it soon: a machine booted
    /// through its BMC has its virtual media ejected (the others' CD is after their disk).
    pub fn install_on_disk(&self) {
        match self {
            RunningVm::Redfish(vm) => vm.install_on_disk(),
            RunningVm::Qemu { .. } | RunningVm::Libvirt(_) | RunningVm::External(_) => {}
            #[cfg(test)]
            RunningVm::StandIn(_) => {}
        }
    }

    /// Stops the VM; idempotent.
    pub fn stop(&mut self) {
        match self {
            RunningVm::Qemu { process, .. } => process.kill(),
            RunningVm::Libvirt(vm) => lock(vm).stop(),
            RunningVm::External(vm) => vm.stop(),
            RunningVm::Redfish(vm) => vm.stop(),
            #[cfg(test)]
            RunningVm::StandIn(vm) => vm.stop(),
        }
    }

    /// A handle for background tasks that query the VM (the block-stats poller).
    pub fn handle(&self) -> RunningVmHandle {
        match self {
            RunningVm::Qemu { qmp, .. } => RunningVmHandle::Qemu(qmp.clone()),
            RunningVm::Libvirt(vm) => RunningVmHandle::Libvirt(vm.clone()),
            RunningVm::External(_) | RunningVm::Redfish(_) => RunningVmHandle::Monitorless,
            #[cfg(test)]
            RunningVm::StandIn(_) => RunningVmHandle::StandIn,
        }
    }
}

/// What a background task holds to query the VM: no ownership of the process or domain.
#[derive(Clone)]
pub enum RunningVmHandle {
    Qemu(Arc<Qmp>),
    Libvirt(Arc<std::sync::Mutex<LibvirtVm>>),
    /// A machine the harness did not boot has no monitor.
    Monitorless,
    /// A stand-in VM has no monitor.
    #[cfg(test)]
    StandIn,
}

/// A QMP query whose reply gather keeps as QEMU gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmQuery {
    Status,
    BlockStats,
}

impl VmQuery {
    pub fn command(self) -> &'static str {
        match self {
            VmQuery::Status => "query-status",
            VmQuery::BlockStats => "query-blockstats",
        }
    }
}

impl RunningVmHandle {
    /// The primary display as PNG.
    pub async fn screenshot(&self, png: &Path) -> Result<(), VmError> {
        match self {
            RunningVmHandle::Qemu(qmp) => Ok(qmp.screendump(png).await?),
            RunningVmHandle::Libvirt(vm) => {
                let (vm, png) = (vm.clone(), png.to_path_buf());
                Ok(tokio::task::spawn_blocking(move || lock(&vm).screenshot(&png)).await??)
            }
            RunningVmHandle::Monitorless => Err(VmError::NotOnThisBackend {
                what: "a screenshot",
            }),
            #[cfg(test)]
            RunningVmHandle::StandIn => Err(VmError::NotOnThisBackend {
                what: "a screenshot",
            }),
        }
    }

    /// QEMU's reply to `q`, raw (through libvirt's monitor passthrough on libvirt).
    pub async fn query(&self, q: VmQuery) -> Result<serde_json::Value, VmError> {
        use super::qemu::qmp::{QueryBlockstats, QueryStatus};
        match self {
            RunningVmHandle::Qemu(qmp) => Ok(match q {
                VmQuery::Status => qmp.execute_raw::<QueryStatus>(Default::default()).await,
                VmQuery::BlockStats => qmp.execute_raw::<QueryBlockstats>(Default::default()).await,
            }?),
            RunningVmHandle::Libvirt(vm) => {
                let vm = vm.clone();
                let command = serde_json::json!({ "execute": q.command() });
                Ok(tokio::task::spawn_blocking(move || lock(&vm).monitor(&command)).await??)
            }
            RunningVmHandle::Monitorless => Err(VmError::NotOnThisBackend {
                what: "a QMP query",
            }),
            #[cfg(test)]
            RunningVmHandle::StandIn => Err(VmError::NotOnThisBackend {
                what: "a QMP query",
            }),
        }
    }

    /// Bytes written so far to the disk with this id (the guest's writes, from QEMU's block
    /// stats; a multipath disk's over the paths it has now), None when QEMU does not list it.
    pub async fn disk_written_bytes(&self, disk_id: &str) -> Result<Option<u64>, VmError> {
        let writes = self.disk_writes(disk_id).await?;
        Ok((!writes.is_empty()).then(|| writes.iter().map(|(_, w)| w).sum()))
    }

    /// Takes path `n` of the multipath disk `index` of `spec` away from the running VM, as a
    /// cable pulled from one HBA (`present` false), or gives it back: QEMU's `device_del` and
    /// `device_add` of the path's `scsi-hd` (the image stays open on the other path's), or
    /// libvirt's detach and attach of the path's `<disk>`.
    pub async fn set_disk_path(
        &self,
        spec: &VmSpec,
        (index, n): (usize, u8),
        present: bool,
    ) -> Result<(), VmError> {
        match self {
            RunningVmHandle::Qemu(qmp) => {
                let path = super::qemu::argv::MultipathPath::of(spec, index, n).ok_or(
                    VmError::NotOnThisBackend {
                        what: "a path of a disk that is not multipath",
                    },
                )?;
                match present {
                    true => qmp.plug(path.device_add_arguments()).await?,
                    false => qmp.unplug(&path.device_id()).await?,
                }
                Ok(())
            }
            RunningVmHandle::Libvirt(vm) => {
                let xml = super::libvirt::domain::multipath_path_xml(spec, index, n).ok_or(
                    VmError::NotOnThisBackend {
                        what: "a path of a disk that is not multipath",
                    },
                )?;
                let vm = vm.clone();
                Ok(
                    tokio::task::spawn_blocking(move || lock(&vm).set_device(&xml, present))
                        .await??,
                )
            }
            RunningVmHandle::Monitorless => Err(VmError::NotOnThisBackend {
                what: "a disk path",
            }),
            #[cfg(test)]
            RunningVmHandle::StandIn => Err(VmError::NotOnThisBackend {
                what: "a disk path",
            }),
        }
    }

    /// The disk's write counters, one per block backend it has now: the disk's own, or one per
    /// path of a multipath disk, named by its device (`qmp::disk_writes`). A path removed from
    /// the VM takes its counter with it.
    pub async fn disk_writes(&self, disk_id: &str) -> Result<Vec<(String, u64)>, VmError> {
        match self {
            RunningVmHandle::Qemu(qmp) => {
                let stats = qmp.block_stats().await?;
                Ok(super::qemu::qmp::disk_writes(
                    &stats,
                    disk_id,
                    super::qemu::qmp::BlockStats::device_name,
                ))
            }
            RunningVmHandle::Libvirt(vm) => {
                let (vm, id) = (vm.clone(), disk_id.to_string());
                Ok(tokio::task::spawn_blocking(move || lock(&vm).disk_writes(&id)).await??)
            }
            RunningVmHandle::Monitorless => Ok(Vec::new()),
            #[cfg(test)]
            RunningVmHandle::StandIn => Ok(Vec::new()),
        }
    }
}

/// A poisoned lock only means another task panicked mid-call; the domain handle is still valid.
fn lock(vm: &std::sync::Mutex<LibvirtVm>) -> std::sync::MutexGuard<'_, LibvirtVm> {
    vm.lock().unwrap_or_else(|e| e.into_inner())
}
