//! The libvirt domain document as typed elements, serialised by quick-xml. Field names are
//! libvirt's element names; `@x` is attribute `x`, `$text` the element's text. Optional parts
//! are skipped, never written empty.

use serde::Serialize;

use super::RUN_XMLNS;
use crate::hw::{CacheMode, Throttle};
use crate::vm::start::RunMeta;

#[derive(Serialize)]
#[serde(rename = "domain")]
pub(super) struct Domain {
    /// `qemu` (TCG) or `kvm`.
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    /// Always declared: the NIC (and NVMe disks) go through the passthrough.
    #[serde(rename = "@xmlns:qemu", skip_serializing_if = "Option::is_none")]
    pub(super) xmlns_qemu: Option<&'static str>,
    pub(super) name: String,
    pub(super) metadata: Metadata,
    pub(super) memory: Memory,
    pub(super) vcpu: u32,
    pub(super) os: Os,
    pub(super) features: Features,
    pub(super) cpu: Cpu,
    pub(super) clock: Clock,
    /// The guest powered off: the domain ends, as the QEMU backend's process exits. Without it
    /// the run's end (or a failed install's poweroff) would leave a running domain behind.
    pub(super) on_poweroff: &'static str,
    /// The guest rebooted: restart in the same domain, as QEMU does without `-no-reboot`. The
    /// install reboots from the live ISO into the installed system, and the harness follows
    /// it through the reboot event; `destroy` here would end every install at that reboot.
    pub(super) on_reboot: &'static str,
    /// The guest panicked (pvpanic): end the domain so the run fails at once with the panic
    /// in the log, instead of a paused or restarted guest hiding it until a phase times out.
    pub(super) on_crash: &'static str,
    pub(super) devices: Devices,
    #[serde(rename = "qemu:commandline", skip_serializing_if = "Option::is_none")]
    pub(super) qemu_commandline: Option<QemuCommandline>,
}

/// `<metadata><sno:run .../></metadata>`: the same element on domains and networks, so `gc`
/// reads the run and its owner from either.
#[derive(Serialize)]
pub(in crate::vm::libvirt) struct Metadata {
    #[serde(rename = "sno:run")]
    pub(super) run: RunElement,
}

impl Metadata {
    pub(in crate::vm::libvirt) fn of(meta: &RunMeta) -> Metadata {
        Metadata {
            run: RunElement {
                xmlns: RUN_XMLNS,
                id: meta.run_id.clone(),
                dir: meta.run_dir.display().to_string(),
                host: meta.owner_host.clone(),
                pid: meta.owner_pid,
                pid_start: meta.owner_start,
            },
        }
    }
}

#[derive(Serialize)]
pub(super) struct RunElement {
    #[serde(rename = "@xmlns:sno")]
    pub(super) xmlns: &'static str,
    #[serde(rename = "@id")]
    pub(super) id: String,
    #[serde(rename = "@dir")]
    pub(super) dir: String,
    #[serde(rename = "@host")]
    pub(super) host: String,
    #[serde(rename = "@pid")]
    pub(super) pid: u32,
    #[serde(rename = "@pid-start")]
    pub(super) pid_start: u64,
}

#[derive(Serialize)]
pub(super) struct Memory {
    #[serde(rename = "@unit")]
    pub(super) unit: &'static str,
    #[serde(rename = "$text")]
    pub(super) value: u64,
}

/// No `boot` field: the boot order is only ever per device (`<boot order=.../>`), so `<os>` can
/// never carry `<boot dev=...>`, which libvirt refuses next to per-device boot orders.
#[derive(Serialize)]
pub(super) struct Os {
    #[serde(rename = "type")]
    pub(super) os_type: OsType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) loader: Option<Loader>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) nvram: Option<Nvram>,
}

#[derive(Serialize)]
pub(super) struct OsType {
    #[serde(rename = "@arch")]
    pub(super) arch: &'static str,
    #[serde(rename = "@machine")]
    pub(super) machine: &'static str,
    #[serde(rename = "$text")]
    pub(super) value: &'static str,
}

#[derive(Serialize)]
pub(super) struct Loader {
    #[serde(rename = "@readonly")]
    pub(super) readonly: &'static str,
    /// `yes` for OVMF's Secure Boot build: libvirt marks the flash secure (only SMM code may
    /// write the variables) and requires `<smm state='on'/>`.
    #[serde(rename = "@secure", skip_serializing_if = "Option::is_none")]
    pub(super) secure: Option<&'static str>,
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    #[serde(rename = "$text")]
    pub(super) path: &'static str,
}

/// The per-VM variable store; libvirt copies `template` there only if the file is missing
/// (the harness makes the copy itself, as for the QEMU backend).
#[derive(Serialize)]
pub(super) struct Nvram {
    #[serde(rename = "@template")]
    pub(super) template: &'static str,
    #[serde(rename = "$text")]
    pub(super) path: String,
}

#[derive(Serialize)]
pub(super) struct Features {
    /// Always: without ACPI a guest's poweroff never ends the domain (measured, docs/host-facts.md).
    pub(super) acpi: (),
    /// On for OVMF's Secure Boot build, whose variable store lives behind SMM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) smm: Option<Smm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tcg: Option<TcgFeatures>,
}

#[derive(Serialize)]
pub(super) struct Smm {
    #[serde(rename = "@state")]
    pub(super) state: &'static str,
}

#[derive(Serialize)]
pub(super) struct TcgFeatures {
    #[serde(rename = "tb-cache")]
    pub(super) tb_cache: Scaled,
}

#[derive(Serialize)]
pub(super) struct Scaled {
    #[serde(rename = "@unit")]
    pub(super) unit: &'static str,
    #[serde(rename = "$text")]
    pub(super) value: u32,
}

/// `host-passthrough` is `-cpu host` (KVM), `maximum` is `-cpu max` (TCG): `qemu_argv`'s models.
#[derive(Serialize)]
pub(super) struct Cpu {
    #[serde(rename = "@mode")]
    pub(super) mode: &'static str,
}

/// `-rtc base=utc`, as `qemu_argv`.
#[derive(Serialize)]
pub(super) struct Clock {
    #[serde(rename = "@offset")]
    pub(super) offset: &'static str,
}

/// Devices by kind; libvirt's schema takes them in any order.
#[derive(Serialize)]
pub(super) struct Devices {
    pub(super) controller: Vec<Controller>,
    pub(super) disk: Vec<Disk>,
    pub(super) serial: CharDev,
    pub(super) console: CharDev,
    pub(super) video: Video,
    pub(super) rng: Rng,
    pub(super) panic: Panic,
    pub(super) memballoon: Memballoon,
    /// Only for `Nic::LibvirtNetwork` (NIC 0, and NIC 1 for a bond); the user-mode NIC goes
    /// through the passthrough.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) interface: Vec<Interface>,
}

/// `<interface type='network'>`: a virtio NIC on a libvirt network, at the slot and with the
/// MAC the user-mode NIC has, so the guest sees the same card either way.
#[derive(Serialize)]
pub(super) struct Interface {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    pub(super) mac: MacAddress,
    pub(super) source: NetworkSource,
    pub(super) model: NicModel,
    /// A PXE boot's place in the boot order (the network's TFTP and boot file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) boot: Option<Boot>,
    pub(super) alias: Alias,
    pub(super) address: Address,
}

#[derive(Serialize)]
pub(super) struct MacAddress {
    #[serde(rename = "@address")]
    pub(super) address: &'static str,
}

#[derive(Serialize)]
pub(super) struct NetworkSource {
    #[serde(rename = "@network")]
    pub(super) network: String,
}

#[derive(Serialize)]
pub(super) struct NicModel {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
}

#[derive(Serialize)]
pub(super) struct Controller {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    #[serde(rename = "@index")]
    pub(super) index: u32,
    #[serde(rename = "@model", skip_serializing_if = "Option::is_none")]
    pub(super) model: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) address: Option<Address>,
}

#[derive(Serialize)]
pub(super) struct Disk {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    /// `disk` or `cdrom`.
    #[serde(rename = "@device")]
    pub(super) device: &'static str,
    pub(super) driver: DiskDriver,
    pub(super) source: DiskSource,
    pub(super) target: DiskTarget,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) readonly: Option<()>,
    /// A multipath disk's paths: devices that share one image (raw, as libvirt requires).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) shareable: Option<()>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) serial: Option<String>,
    /// 16 hex digits; libvirt passes it to the SCSI device as `wwn=0x...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wwn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) boot: Option<Boot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) blockio: Option<BlockIo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) iotune: Option<IoTune>,
    pub(super) alias: Alias,
    pub(super) address: Address,
}

#[derive(Serialize)]
pub(super) struct DiskDriver {
    #[serde(rename = "@name")]
    pub(super) name: &'static str,
    /// `qcow2` or `raw`.
    #[serde(rename = "@type")]
    pub(super) format: String,
    /// The disk's cache mode (`unsafe` unless the scenario says otherwise), its AIO (`io`,
    /// `threads` by default) and `discard=unmap` for disks, as `qemu_argv` (see the reason
    /// there); the CD-ROM keeps QEMU's defaults there too.
    #[serde(rename = "@cache", skip_serializing_if = "Option::is_none")]
    pub(super) cache: Option<&'static str>,
    #[serde(rename = "@io", skip_serializing_if = "Option::is_none")]
    pub(super) io: Option<&'static str>,
    #[serde(rename = "@discard", skip_serializing_if = "Option::is_none")]
    pub(super) discard: Option<&'static str>,
}

#[derive(Serialize)]
pub(super) struct DiskSource {
    #[serde(rename = "@file")]
    pub(super) file: String,
}

#[derive(Serialize)]
pub(super) struct DiskTarget {
    /// A name libvirt needs, unique in the domain; the guest's names come from the bus.
    #[serde(rename = "@dev")]
    pub(super) dev: String,
    #[serde(rename = "@bus")]
    pub(super) bus: &'static str,
}

#[derive(Serialize)]
pub(super) struct Boot {
    #[serde(rename = "@order")]
    pub(super) order: u32,
}

#[derive(Serialize)]
pub(super) struct BlockIo {
    #[serde(rename = "@logical_block_size")]
    pub(super) logical: u32,
    #[serde(rename = "@physical_block_size")]
    pub(super) physical: u32,
}

/// A disk's I/O limits, reads and writes together: what `qemu_argv` passes as
/// `throttling.bps-total` and `throttling.iops-total` (libvirt sets them through QMP).
#[derive(Serialize)]
pub(super) struct IoTune {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) total_bytes_sec: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) total_iops_sec: Option<u64>,
}

impl IoTune {
    pub(super) fn of(t: &Throttle) -> IoTune {
        IoTune {
            total_bytes_sec: t.bytes_per_s,
            total_iops_sec: t.iops,
        }
    }
}

#[derive(Serialize)]
pub(super) struct Alias {
    #[serde(rename = "@name")]
    pub(super) name: String,
}

/// A PCI address (`domain`, `bus`, `slot`, `function`) or a drive address on a controller
/// (`controller`, `bus`, `target`, `unit`); the unused attributes are skipped.
#[derive(Serialize)]
pub(super) struct Address {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    #[serde(rename = "@domain", skip_serializing_if = "Option::is_none")]
    pub(super) domain: Option<&'static str>,
    #[serde(rename = "@controller", skip_serializing_if = "Option::is_none")]
    pub(super) controller: Option<u32>,
    #[serde(rename = "@bus")]
    pub(super) bus: String,
    #[serde(rename = "@slot", skip_serializing_if = "Option::is_none")]
    pub(super) slot: Option<String>,
    #[serde(rename = "@function", skip_serializing_if = "Option::is_none")]
    pub(super) function: Option<String>,
    #[serde(rename = "@target", skip_serializing_if = "Option::is_none")]
    pub(super) target: Option<u32>,
    #[serde(rename = "@unit", skip_serializing_if = "Option::is_none")]
    pub(super) unit: Option<u32>,
}

impl Address {
    /// Slot `slot`, function `function` of q35's root complex (pcie.0, libvirt's bus 0).
    pub(super) fn pci(slot: u8, function: u8) -> Self {
        Address {
            kind: "pci",
            domain: Some("0x0000"),
            controller: None,
            bus: "0x00".into(),
            slot: Some(format!("{slot:#04x}")),
            function: Some(format!("{function:#x}")),
            target: None,
            unit: None,
        }
    }

    /// On controller 0 of its kind: for SATA `unit` is the AHCI port, for SCSI `target` is the
    /// SCSI id (`scsi-id`) and `unit` the LUN; `bus` is the channel.
    pub(super) fn drive(target: u32, unit: u32) -> Self {
        Self::drive_on(0, target, unit)
    }

    /// A drive address on controller `controller` (of its kind: SCSI or SATA).
    pub(super) fn drive_on(controller: u32, target: u32, unit: u32) -> Self {
        Address {
            kind: "drive",
            domain: None,
            controller: Some(controller),
            bus: "0".into(),
            slot: None,
            function: None,
            target: Some(target),
            unit: Some(unit),
        }
    }
}

/// The serial console (and the `<console>` that names the same device): a Unix socket libvirt
/// makes QEMU listen on, which the harness reads.
#[derive(Serialize)]
pub(super) struct CharDev {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) source: Option<CharSource>,
    pub(super) target: CharTarget,
}

#[derive(Serialize, Clone)]
pub(super) struct CharSource {
    #[serde(rename = "@mode")]
    pub(super) mode: &'static str,
    #[serde(rename = "@path")]
    pub(super) path: String,
}

#[derive(Serialize)]
pub(super) struct CharTarget {
    #[serde(rename = "@type", skip_serializing_if = "Option::is_none")]
    pub(super) kind: Option<&'static str>,
    #[serde(rename = "@port")]
    pub(super) port: u32,
}

#[derive(Serialize)]
pub(super) struct Video {
    pub(super) model: VideoModel,
    pub(super) address: Address,
}

/// `VGA`, as `qemu_argv`; libvirt's default video memory is QEMU's (16 MiB).
#[derive(Serialize)]
pub(super) struct VideoModel {
    #[serde(rename = "@type")]
    pub(super) kind: &'static str,
    #[serde(rename = "@primary")]
    pub(super) primary: &'static str,
}

/// virtio-rng fed from `/dev/urandom`: without it the guest waits seconds for entropy.
#[derive(Serialize)]
pub(super) struct Rng {
    #[serde(rename = "@model")]
    pub(super) model: &'static str,
    pub(super) backend: RngBackend,
    pub(super) address: Address,
}

#[derive(Serialize)]
pub(super) struct RngBackend {
    #[serde(rename = "@model")]
    pub(super) model: &'static str,
    #[serde(rename = "$text")]
    pub(super) path: &'static str,
}

/// `pvpanic` on the ISA bus (no PCI address), as `qemu_argv`: a guest panic becomes an event.
#[derive(Serialize)]
pub(super) struct Panic {
    #[serde(rename = "@model")]
    pub(super) model: &'static str,
}

/// `none`: libvirt would otherwise add a virtio balloon, taking a PCI slot of the plan.
#[derive(Serialize)]
pub(super) struct Memballoon {
    #[serde(rename = "@model")]
    pub(super) model: &'static str,
}

#[derive(Serialize)]
pub(super) struct QemuCommandline {
    #[serde(rename = "qemu:arg")]
    pub(super) args: Vec<QemuArg>,
}

#[derive(Serialize)]
pub(super) struct QemuArg {
    #[serde(rename = "@value")]
    pub(super) value: String,
}

// ----- NVMe through the passthrough, as JSON `-blockdev`/`-device` arguments (QEMU 7.2 takes
// JSON for both; no comma escaping of paths).

/// The protocol node: the image file.
#[derive(Serialize)]
pub(super) struct BlockdevFile {
    pub(super) driver: &'static str,
    pub(super) filename: String,
    #[serde(rename = "node-name")]
    pub(super) node_name: String,
    pub(super) discard: &'static str,
    pub(super) cache: BlockdevCache,
    /// `threads`, `native` or `io_uring`: how the file is read and written.
    pub(super) aio: &'static str,
}

/// The format node on top of it, which the device uses.
#[derive(Serialize)]
pub(super) struct BlockdevFormat {
    pub(super) driver: String,
    pub(super) file: String,
    #[serde(rename = "node-name")]
    pub(super) node_name: String,
    pub(super) discard: &'static str,
    pub(super) cache: BlockdevCache,
}

/// A `-drive` cache mode in `-blockdev` terms, with the device's `write-cache` as the third
/// part: `unsafe` is the host page cache with guest flushes ignored (direct off, no-flush on),
/// `writeback` the page cache with flushes (both off), `none` O_DIRECT with flushes (direct
/// on), `directsync` O_DIRECT with the device's write cache off.
#[derive(Serialize)]
pub(super) struct BlockdevCache {
    pub(super) direct: bool,
    #[serde(rename = "no-flush")]
    pub(super) no_flush: bool,
}

impl BlockdevCache {
    pub(super) fn of(mode: CacheMode) -> BlockdevCache {
        BlockdevCache {
            direct: mode.direct(),
            no_flush: mode.no_flush(),
        }
    }
}

/// A throttle filter node between the format node and the device, in its throttle group.
/// It carries the disk's discard and cache options too: QEMU drops a discard at the first
/// node without `discard=unmap`, and `query-block` reports the top node's cache mode.
#[derive(Serialize)]
pub(super) struct BlockdevThrottle {
    pub(super) driver: &'static str,
    #[serde(rename = "throttle-group")]
    pub(super) group: String,
    pub(super) file: String,
    #[serde(rename = "node-name")]
    pub(super) node_name: String,
    pub(super) discard: &'static str,
    pub(super) cache: BlockdevCache,
}

#[derive(Serialize)]
pub(super) struct NvmeDevice {
    pub(super) driver: &'static str,
    pub(super) bus: &'static str,
    pub(super) addr: String,
    pub(super) drive: String,
    pub(super) id: String,
    pub(super) serial: String,
    pub(super) logical_block_size: u32,
    pub(super) physical_block_size: u32,
    #[serde(rename = "write-cache")]
    pub(super) write_cache: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) bootindex: Option<u32>,
}
