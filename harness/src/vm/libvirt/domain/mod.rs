//! The libvirt domain XML of a `VmSpec`: the same machine `qemu::argv` starts, described to
//! libvirt 9.0 with typed structs that quick-xml serialises. `vm.txt` holds this XML when the
//! libvirt backend runs.
//!
//! Same machine means: q35, the same firmware and variable store, every PCI device at the slot
//! of `argv::plan` (so the guest's `/dev/disk/by-path` links are the same on both backends),
//! SATA disks and the CD-ROM on the same AHCI ports, SCSI disks at the same targets, the same
//! serials, sector sizes, boot order, cache mode, AIO, I/O limits, CPU model and TCG translation
//! cache, and the guest reachable only through loopback port forwards.
//!
//! What libvirt would add on its own is switched off or pinned, because anything it places
//! itself takes the first free PCI slot and shifts the plan: no USB controller (libvirt adds a
//! qemu-xhci on q35), no memory balloon (a virtio device), the root complex and the built-in
//! AHCI controller written out with their addresses. No device is left for libvirt to place, so
//! it adds no pcie-root-port either. The slots NVMe disks take through `<qemu:commandline>` are
//! invisible to libvirt's allocator, which is one more reason nothing may be left unplaced.
//!
//! Differences that remain, all from libvirt itself:
//! - libvirt always passes `-boot strict=on`: the firmware boots only devices that have a boot
//!   order, where `qemu_argv` (QEMU's default, strict=off) lets it fall back to the others.
//! - libvirt opens the serial socket with `server=on,wait=off`; `qemu_argv` waits for the
//!   harness to connect. Start the domain paused, connect, then resume, to lose no output.
//! - libvirt owns the QMP monitor, so `VmSpec::qmp_socket` is not used: query QEMU through
//!   libvirt's monitor passthrough (`qemu-monitor-command`).
//! - Disks are `-blockdev`s: `query-blockstats` has an empty `device`, and `qdev` names the
//!   disk through its alias (see [`disk_id_from_qdev`]).
//! - The NIC is QEMU's own user-mode network (slirp) with loopback `hostfwd`s, given through
//!   `<qemu:commandline>` as for NVMe: libvirt 9.0 as Debian ships it rejects
//!   `<backend type='passt'/>` ("Invalid value for attribute 'type' in element 'backend'"),
//!   and its `<interface type='user'>` without passt has no port forwards. The passthrough gives
//!   the guest exactly the QEMU backend's network: 10.0.2.15/24 via 10.0.2.2, the same MAC.

use crate::vm::start::RunMeta;

mod document;

pub(super) use document::Metadata;
use document::*;
use serde::Serialize;

use crate::hw::guest_net::NIC_MACS;
use crate::hw::slots::{self as plan, DiskPlace};
use crate::hw::{Accel, Bus};
use crate::vm::qemu::argv::TCG_TB_SIZE_MIB;
use crate::vm::{DiskSpec, Nic, VmSpec};

/// Namespace of the harness's own metadata element, `<sno:run id=... dir=.../>`. `gc` asks
/// libvirt for the metadata under this URI (`virDomainGetMetadata`) on every domain: the ones
/// that have it were made by the harness, and the run id says whether their run is still alive.
pub const RUN_XMLNS: &str = "https://github.com/sno-harness/xmlns/run/1";
/// libvirt's namespace for QEMU command-line passthrough.
pub const QEMU_XMLNS: &str = "http://libvirt.org/schemas/domain/qemu/1.0";
/// libvirt's prefix for user-chosen device aliases; QEMU gets the alias as the device id.
pub const USER_ALIAS_PREFIX: &str = "ua-";
/// Alias of the CD-ROM. Disk ids are lowercase letters, digits and '-', so the underscore
/// keeps it from clashing with a disk's alias.
pub const CDROM_ALIAS: &str = "ua-live_cdrom";

/// The libvirt alias of a disk, `ua-ID`. libvirt hands it to QEMU as the device id, so under
/// libvirt a disk's guest device is `-device ...,id=ua-ID`; its drive has no `-drive` id
/// (libvirt attaches disks with `-blockdev`, node names `libvirt-N-format`/`-storage`). In
/// `query-blockstats` the entry of the disk has an empty `device` and `qdev` = `ua-ID` for SCSI,
/// SATA and NVMe disks, `/machine/peripheral/ua-ID/virtio-backend` for virtio-blk (measured on
/// QEMU 7.2 with the same `-blockdev`/`-device id=` pairs).
pub fn disk_alias(id: &str) -> String {
    format!("{USER_ALIAS_PREFIX}{id}")
}

/// The `DiskSpec::id` a `query-blockstats` `qdev` belongs to under this backend, or `None` for
/// a device that is not one of the spec's disks (the CD-ROM) or not aliased by us.
pub fn disk_id_from_qdev(qdev: &str) -> Option<&str> {
    let dev = match qdev.strip_prefix("/machine/peripheral/") {
        Some(path) => path.strip_suffix("/virtio-backend").unwrap_or(path),
        None => qdev,
    };
    if dev == CDROM_ALIAS {
        return None;
    }
    dev.strip_prefix(USER_ALIAS_PREFIX)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The domain XML for `spec`, indented, without an XML declaration (libvirt needs none).
///
/// A disk that does not fit the plan (`plan::disk_place` says why) is still written, at the
/// place `plan::place` gives it, exactly as `qemu_argv` does; libvirt then refuses the domain
/// (duplicate address, slot 0x1f taken), as QEMU refuses that command line.
pub fn domain_xml(spec: &VmSpec, meta: &RunMeta) -> String {
    domain_xml_for(spec, meta, SerialAt::Socket)
}

/// Where the serial console goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerialAt {
    /// `spec.serial_socket`, a Unix socket QEMU listens on: libvirtd on this host.
    Socket,
    /// A pty on the libvirt host, read through `virDomainOpenConsole`: a remote libvirtd,
    /// whose sockets this host cannot open.
    Pty,
}

/// `domain_xml`, with the serial console at `serial`.
pub fn domain_xml_for(spec: &VmSpec, meta: &RunMeta, serial: SerialAt) -> String {
    let domain = Domain::new(spec, meta, serial);
    let mut out = String::new();
    let mut ser = quick_xml::se::Serializer::new(&mut out);
    ser.indent(' ', 2);
    domain
        .serialize(ser)
        .expect("the domain structs serialise: every element and attribute name is valid XML");
    out.push('\n');
    out
}

// ----- Building the document.

impl Domain {
    fn new(spec: &VmSpec, meta: &RunMeta, serial: SerialAt) -> Self {
        let buses: Vec<Bus> = spec.disks.iter().map(|d| d.bus).collect();
        let mut disks = Vec::new();
        let mut passthrough = Vec::new();
        let mut names = TargetNames::default();
        for (i, d) in spec.disks.iter().enumerate() {
            let (bus, dev, address) = match plan::place(&buses, i) {
                DiskPlace::Nvme { slot } => {
                    passthrough.extend(nvme_args(i, d, slot));
                    continue;
                }
                DiskPlace::Virtio { slot } => ("virtio", names.next_vd(), Address::pci(slot, 0)),
                DiskPlace::Scsi { target } if d.multipath_wwn.is_some() => {
                    for n in 0..crate::hw::multipath::PATHS {
                        disks.push(multipath_path(d, target, n, names.next_sd()));
                    }
                    continue;
                }
                // Channel 0, this target, LUN 0: `scsi-hd,bus=scsi0.0,channel=0,scsi-id=T,lun=0`.
                DiskPlace::Scsi { target } => (
                    "scsi",
                    names.next_sd(),
                    Address::drive(u32::from(target), 0),
                ),
                // AHCI port = unit: libvirt makes it `ide-hd,bus=ide.PORT`.
                DiskPlace::Sata { port } => {
                    ("sata", names.next_sd(), Address::drive(0, u32::from(port)))
                }
            };
            disks.push(disk(d, DiskTarget { dev, bus }, address));
        }
        if let Some(cd) = &spec.cdrom {
            disks.push(cdrom(cd, &mut names));
        }
        let controllers = controllers(spec);
        let (kind, cpu_mode, tcg) = match spec.accel {
            Accel::Kvm => ("kvm", "host-passthrough", None),
            // libvirt passes `-accel tcg,tb-size=N`; QEMU 7.2 already runs x86_64 guests on
            // x86_64 hosts with one thread per vCPU (`thread=multi`, as `qemu_argv` asks).
            Accel::Tcg => (
                "qemu",
                "maximum",
                Some(TcgFeatures {
                    tb_cache: Scaled {
                        unit: "MiB",
                        value: TCG_TB_SIZE_MIB,
                    },
                }),
            ),
        };

        let os = os(spec);
        // The user-mode NIC (and its loopback forwards) only exists as passthrough.
        if spec.nic == Nic::User {
            passthrough.extend(net_args(spec));
        }
        Domain {
            kind,
            xmlns_qemu: (!passthrough.is_empty()).then_some(QEMU_XMLNS),
            name: spec.name.clone(),
            metadata: Metadata::of(meta),
            memory: Memory {
                unit: "MiB",
                value: spec.memory_mib,
            },
            vcpu: spec.vcpus,
            os,
            features: Features {
                acpi: (),
                smm: spec.firmware.secure_boot().then_some(Smm { state: "on" }),
                tcg,
            },
            cpu: Cpu { mode: cpu_mode },
            clock: Clock { offset: "utc" },
            on_poweroff: "destroy",
            on_reboot: "restart",
            on_crash: "destroy",
            devices: devices(spec, controllers, disks, serial),
            qemu_commandline: (!passthrough.is_empty())
                .then_some(QemuCommandline { args: passthrough }),
        }
    }
}

/// The live ISO on q35's AHCI at the CD-ROM's port.
fn cdrom(cd: &crate::vm::CdromSpec, names: &mut TargetNames) -> Disk {
    Disk {
        kind: "file",
        device: "cdrom",
        driver: DiskDriver {
            name: "qemu",
            format: "raw".into(),
            cache: None,
            io: None,
            discard: None,
        },
        source: DiskSource {
            file: cd.path.display().to_string(),
        },
        target: DiskTarget {
            dev: names.next_sd(),
            bus: "sata",
        },
        readonly: Some(()),
        shareable: None,
        serial: None,
        wwn: None,
        boot: cd.bootindex.map(|order| Boot { order }),
        blockio: None,
        iotune: None,
        alias: Alias {
            name: CDROM_ALIAS.into(),
        },
        address: Address::drive(0, u32::from(plan::CDROM_AHCI_PORT)),
    }
}

/// The root PCIe bus, q35's AHCI, no USB, and the virtio-scsi controller when a disk needs it.
fn controllers(spec: &VmSpec) -> Vec<Controller> {
    let mut controllers = vec![
        Controller {
            kind: "pci",
            index: 0,
            model: Some("pcie-root"),
            address: None,
        },
        // q35's built-in AHCI, written out so that nothing can move it or add another.
        Controller {
            kind: "sata",
            index: 0,
            model: None,
            address: Some(Address::pci(plan::AHCI_SLOT, plan::AHCI_FUNCTION)),
        },
        // No USB: libvirt adds a qemu-xhci controller on q35 unless told `none`.
        Controller {
            kind: "usb",
            index: 0,
            model: Some("none"),
            address: None,
        },
    ];
    if spec.disks.iter().any(|d| d.bus == Bus::Scsi) {
        // libvirt names it scsi0, so its disks are on bus scsi0.0 as in `qemu_argv`.
        controllers.push(Controller {
            kind: "scsi",
            index: 0,
            model: Some("virtio-scsi"),
            address: Some(Address::pci(plan::SCSI_CONTROLLER_SLOT, 0)),
        });
    }
    if spec.disks.iter().any(|d| d.multipath_wwn.is_some()) {
        // scsi1: the second path of a multipath disk, as `qemu_argv`'s.
        controllers.push(Controller {
            kind: "scsi",
            index: 1,
            model: Some("virtio-scsi"),
            address: Some(Address::pci(plan::SCSI2_CONTROLLER_SLOT, 0)),
        });
    }
    controllers
}

/// q35 with SeaBIOS, or OVMF (its Secure Boot build for `uefi-secure`) with the run's copy of
/// the variable store.
fn os(spec: &VmSpec) -> Os {
    let secure = spec.firmware.secure_boot();
    Os {
        os_type: OsType {
            arch: "x86_64",
            machine: "q35",
            value: "hvm",
        },
        loader: spec.firmware.ovmf_code().map(|path| Loader {
            readonly: "yes",
            secure: secure.then_some("yes"),
            kind: "pflash",
            path,
        }),
        nvram: spec.firmware.ovmf_vars_template().map(|template| Nvram {
            template,
            path: spec
                .uefi_vars
                .as_ref()
                .expect("a UEFI VmSpec carries its variable store")
                .display()
                .to_string(),
        }),
    }
}

/// Console, video, RNG, panic device, no balloon, and the NIC when it is on a libvirt network.
fn devices(
    spec: &VmSpec,
    controllers: Vec<Controller>,
    disks: Vec<Disk>,
    serial: SerialAt,
) -> Devices {
    let (serial_kind, serial_source) = match serial {
        SerialAt::Socket => (
            "unix",
            Some(CharSource {
                mode: "bind",
                path: spec.serial_socket.display().to_string(),
            }),
        ),
        SerialAt::Pty => ("pty", None),
    };
    Devices {
        controller: controllers,
        disk: disks,
        serial: CharDev {
            kind: serial_kind,
            source: serial_source.clone(),
            target: CharTarget {
                kind: None,
                port: 0,
            },
        },
        console: CharDev {
            kind: serial_kind,
            source: serial_source,
            target: CharTarget {
                kind: Some("serial"),
                port: 0,
            },
        },
        video: Video {
            model: VideoModel {
                kind: "vga",
                primary: "yes",
            },
            address: Address::pci(plan::VGA_SLOT, 0),
        },
        rng: Rng {
            model: "virtio",
            backend: RngBackend {
                model: "random",
                path: "/dev/urandom",
            },
            address: Address::pci(plan::RNG_SLOT, 0),
        },
        panic: Panic { model: "isa" },
        memballoon: Memballoon { model: "none" },
        interface: match &spec.nic {
            Nic::User => Vec::new(),
            Nic::LibvirtNetwork { network } => network_interfaces(spec, network),
        },
    }
}

/// The NICs on a libvirt network: NIC 0, and NIC 1 for a bond's other port.
fn network_interfaces(spec: &VmSpec, network: &str) -> Vec<Interface> {
    let count = if spec.second_nic { 2 } else { 1 };
    (0..count)
        .map(|i| Interface {
            kind: "network",
            // NIC 0's MAC, as the QEMU backend gives it: the same DHCP client, the same keyfile
            // match by MAC on both backends; libvirt would otherwise pick a random one.
            mac: MacAddress {
                address: NIC_MACS[i],
            },
            source: NetworkSource {
                network: network.to_string(),
            },
            model: NicModel { kind: "virtio" },
            boot: (i == 0)
                .then_some(spec.netboot.as_ref())
                .flatten()
                .map(|n| Boot { order: n.bootindex }),
            alias: Alias {
                name: format!("ua-net{i}"),
            },
            address: Address::pci([plan::NET_SLOT, plan::NET2_SLOT][i], 0),
        })
        .collect()
}

/// A virtio, SCSI or SATA disk as a libvirt `<disk>`, at `target` and `address`.
fn disk(d: &DiskSpec, target: DiskTarget, address: Address) -> Disk {
    Disk {
        kind: "file",
        device: "disk",
        driver: DiskDriver {
            name: "qemu",
            format: d.format.clone(),
            cache: Some(d.io.cache.name()),
            io: Some(d.io.aio.name()),
            discard: Some("unmap"),
        },
        source: DiskSource {
            file: d.path.display().to_string(),
        },
        target,
        readonly: None,
        shareable: None,
        serial: d.serial.clone(),
        wwn: None,
        boot: d.bootindex.map(|order| Boot { order }),
        blockio: Some(BlockIo {
            logical: d.sector.logical(),
            physical: d.sector.physical(),
        }),
        iotune: d.io.throttle.as_ref().map(IoTune::of),
        alias: Alias {
            name: disk_alias(&d.id),
        },
        address,
    }
}

/// Path `n` of a multipath disk: libvirt's equivalent of kola's two `scsi-hd`s on one image, a
/// `<disk>` per path with the same raw image marked `<shareable/>` (QEMU gets `share-rw=on`),
/// the same WWN and serial, on SCSI controller `n` at the disk's target. Only the first path is
/// in the boot order. Its alias is `ua-` and the path's device id, so block stats and the
/// path's removal name it as on the QEMU backend.
fn multipath_path(d: &DiskSpec, target: u8, n: u8, dev: String) -> Disk {
    let mut disk = disk(
        d,
        DiskTarget { dev, bus: "scsi" },
        Address::drive_on(u32::from(n), u32::from(target), 0),
    );
    disk.shareable = Some(());
    disk.wwn = d.multipath_wwn.map(|w| format!("{w:016x}"));
    disk.alias = Alias {
        name: disk_alias(&crate::hw::multipath::path_device_id(&d.id, n)),
    };
    if n > 0 {
        disk.boot = None;
    }
    disk
}

/// The `<disk>` of path `n` of disk `index` of `spec`, alone: what `virDomainDetachDevice`
/// takes to remove that path, and `virDomainAttachDevice` to give it back. None when the disk
/// is not multipath.
pub fn multipath_path_xml(spec: &VmSpec, index: usize, n: u8) -> Option<String> {
    let d = spec.disks.get(index)?;
    d.multipath_wwn?;
    let buses: Vec<Bus> = spec.disks.iter().map(|d| d.bus).collect();
    let DiskPlace::Scsi { target } = plan::place(&buses, index) else {
        return None;
    };
    // The target name libvirt gave the path in the domain: the disks before it in order.
    let mut names = TargetNames::default();
    for (i, e) in spec.disks.iter().enumerate().take(index) {
        match plan::place(&buses, i) {
            DiskPlace::Scsi { .. } if e.multipath_wwn.is_some() => {
                for _ in 0..crate::hw::multipath::PATHS {
                    names.next_sd();
                }
            }
            DiskPlace::Scsi { .. } | DiskPlace::Sata { .. } => {
                names.next_sd();
            }
            DiskPlace::Virtio { .. } => {
                names.next_vd();
            }
            DiskPlace::Nvme { .. } => {}
        }
    }
    let mut dev = String::new();
    for _ in 0..=n {
        dev = names.next_sd();
    }
    let mut out = String::new();
    let ser = quick_xml::se::Serializer::with_root(&mut out, Some("disk"))
        .expect("\"disk\" is a valid element name");
    multipath_path(d, target, n, dev)
        .serialize(ser)
        .expect("the disk struct serialises");
    Some(out)
}

/// The `<qemu:arg>`s of NVMe disk number `index` at PCI `slot`.
///
/// libvirt 9.0 has no emulated NVMe disk: no `bus='nvme'` for `<disk>` and no NVMe controller
/// (`<disk type='nvme'>` is a host NVMe device as the *source*, not an NVMe device in the
/// guest). So the disk is given to QEMU directly, as `qemu_argv` does: two `-blockdev` nodes
/// and an `nvme` device at the planned slot with the same serial (the drive id when the spec
/// has none: NVMe needs one), sector sizes and boot index. Its device id is the disk's alias,
/// so `query-blockstats` names it like the other disks. The node names are by index: QEMU
/// limits node names to 31 characters, and disk ids are not limited.
///
/// The disk's cache mode is split as `-drive cache=` splits it (see [`BlockdevCache`]), its
/// AIO goes on the file node, and a throttle is a `throttle-group` object with a `throttle`
/// filter node on top of the format node, which the device then uses (the QEMU backend's
/// `-drive ...,throttling.*` set the same limits on the drive). The device id stays the alias
/// either way, so block stats still find the disk.
///
/// What this costs: libvirt does not know the disk. It neither grants QEMU access to the image
/// (no DAC/AppArmor relabelling: the file must already be readable and writable by the user
/// QEMU runs as) nor reserves the slot (nothing else may be left for libvirt to place), and it
/// marks the domain tainted (`custom-argv`).
fn nvme_args(index: usize, d: &DiskSpec, slot: u8) -> Vec<QemuArg> {
    let file_node = format!("sno-nvme{index}-file");
    let format_node = format!("sno-nvme{index}");
    let file = BlockdevFile {
        driver: "file",
        filename: d.path.display().to_string(),
        node_name: file_node.clone(),
        discard: "unmap",
        cache: BlockdevCache::of(d.io.cache),
        aio: d.io.aio.name(),
    };
    let format = BlockdevFormat {
        driver: d.format.clone(),
        file: file_node,
        node_name: format_node.clone(),
        discard: "unmap",
        cache: BlockdevCache::of(d.io.cache),
    };
    let mut args = vec![
        "-blockdev".to_string(),
        json(&file),
        "-blockdev".to_string(),
        json(&format),
    ];
    let mut top = format_node;
    if let Some(t) = &d.io.throttle {
        let group = format!("sno-nvme{index}-tg");
        let mut object = format!("throttle-group,id={group}");
        if let Some(b) = t.bytes_per_s {
            object.push_str(&format!(",x-bps-total={b}"));
        }
        if let Some(i) = t.iops {
            object.push_str(&format!(",x-iops-total={i}"));
        }
        let throttle = BlockdevThrottle {
            driver: "throttle",
            group,
            file: top,
            node_name: format!("sno-nvme{index}-throttle"),
            discard: "unmap",
            cache: BlockdevCache::of(d.io.cache),
        };
        top = throttle.node_name.clone();
        args.extend(["-object".to_string(), object]);
        args.extend(["-blockdev".to_string(), json(&throttle)]);
    }
    let device = NvmeDevice {
        driver: "nvme",
        bus: "pcie.0",
        addr: format!("{slot:#04x}"),
        drive: top,
        id: disk_alias(&d.id),
        serial: d.serial.clone().unwrap_or_else(|| d.id.clone()),
        logical_block_size: d.sector.logical(),
        physical_block_size: d.sector.physical(),
        write_cache: if d.io.cache.guest_write_cache() {
            "on"
        } else {
            "off"
        },
        bootindex: d.bootindex,
    };
    args.extend(["-device".to_string(), json(&device)]);
    args.into_iter().map(|value| QemuArg { value }).collect()
}

/// The NIC as `<qemu:arg>`s: the QEMU backend's `-netdev user` (loopback forwards, and for a
/// PXE boot its TFTP and boot file) and its virtio-net device at the planned slot, with the
/// MAC QEMU gives the first NIC and, for a PXE boot, its place in the boot order. A second NIC
/// (a bond's other port) joins the first on QEMU's hub 0, as on the QEMU backend
/// (`qemu::argv::nic_args`).
fn net_args(spec: &VmSpec) -> Vec<QemuArg> {
    let nic = |slot: u8, netdev: &'static str, i: usize, boot: Option<u32>| NetDevice {
        driver: "virtio-net-pci",
        bus: "pcie.0",
        addr: format!("{slot:#04x}"),
        netdev,
        mac: NIC_MACS[i],
        id: ["ua-net0", "ua-net1"][i],
        bootindex: boot,
    };
    let boot = spec.netboot.as_ref().map(|n| n.bootindex);
    let mut args = vec![
        "-netdev".to_string(),
        crate::vm::qemu::argv::user_netdev(
            &spec.forwards,
            spec.netboot.as_ref(),
            spec.dhcp_hostname.as_deref(),
        ),
    ];
    if spec.second_nic {
        for (port, device) in [
            ("hubport,id=hub0uplink,hubid=0,netdev=net0", None),
            (
                "hubport,id=nic0,hubid=0",
                Some(nic(plan::NET_SLOT, "nic0", 0, boot)),
            ),
            (
                "hubport,id=nic1,hubid=0",
                Some(nic(plan::NET2_SLOT, "nic1", 1, None)),
            ),
        ] {
            args.extend(["-netdev".to_string(), port.to_string()]);
            if let Some(d) = device {
                args.extend(["-device".to_string(), json(&d)]);
            }
        }
    } else {
        args.extend([
            "-device".to_string(),
            json(&nic(plan::NET_SLOT, "net0", 0, boot)),
        ]);
    }
    args.into_iter().map(|value| QemuArg { value }).collect()
}

#[derive(Serialize)]
struct NetDevice {
    driver: &'static str,
    bus: &'static str,
    addr: String,
    netdev: &'static str,
    mac: &'static str,
    id: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    bootindex: Option<u32>,
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain structs of strings and numbers serialise")
}

/// `<target dev=...>` names: `vda`, `vdb`, ... for virtio; `sda`, `sdb`, ... shared by SCSI,
/// SATA and the CD-ROM, in the order of the disks.
#[derive(Default)]
struct TargetNames {
    vd: usize,
    sd: usize,
}

impl TargetNames {
    fn next_vd(&mut self) -> String {
        self.vd += 1;
        format!("vd{}", crate::hw::naming::letters(self.vd - 1))
    }

    fn next_sd(&mut self) -> String {
        self.sd += 1;
        format!("sd{}", crate::hw::naming::letters(self.sd - 1))
    }
}
