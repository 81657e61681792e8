//! The generated XML read back as a tree and checked against the QEMU backend's plan, plus
//! libvirt 9.0's own schema check (`virt-xml-validate`).

use crate::vm::start::RunMeta;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::Command;

use quick_xml::events::{BytesStart, Event};

use super::domain::{
    disk_alias, disk_id_from_qdev, domain_xml, CDROM_ALIAS, QEMU_XMLNS, RUN_XMLNS,
};
use super::network::{
    bridge_name, nat_network_xml, Ipv4Subnet, Ipv6Subnet, NatNetwork, NodeReservation,
    DNSMASQ_XMLNS, MAX_BRIDGE_NAME,
};
use crate::hw::guest_net::NIC_MACS;
use crate::hw::slots::{self as plan, DiskPlace};
use crate::hw::{
    Accel, AioMode, Bus, CacheMode, DiskIo, Firmware, Sector, Throttle, OVMF_CODE,
    OVMF_CODE_SECBOOT, OVMF_VARS, OVMF_VARS_MS,
};
use crate::vm::qemu::argv::tests::{disks_on, spec};
use crate::vm::qemu::argv::TCG_TB_SIZE_MIB;
use crate::vm::{CdromSpec, DiskSpec, VmSpec};

// ----- A small tree of the parsed document: enough to walk and assert on.

#[derive(Debug, Clone)]
struct Node {
    /// The qualified name as written (`qemu:arg`).
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    children: Vec<Node>,
}

impl Node {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The attribute, which must be there.
    fn at(&self, key: &str) -> &str {
        self.attr(key)
            .unwrap_or_else(|| panic!("<{}> has no {key}: {self:?}", self.name))
    }

    fn all(&self, name: &str) -> Vec<&Node> {
        self.children.iter().filter(|c| c.name == name).collect()
    }

    fn opt(&self, name: &str) -> Option<&Node> {
        let all = self.all(name);
        assert!(all.len() <= 1, "<{}> has {} <{name}>", self.name, all.len());
        all.first().copied()
    }

    /// The one child of that name.
    fn one(&self, name: &str) -> &Node {
        self.opt(name)
            .unwrap_or_else(|| panic!("<{}> has no <{name}>: {self:?}", self.name))
    }

    /// Every element of that name anywhere below, this one included.
    fn descendants(&self, name: &str) -> Vec<&Node> {
        let mut out = Vec::new();
        if self.name == name {
            out.push(self);
        }
        for c in &self.children {
            out.extend(c.descendants(name));
        }
        out
    }
}

fn parse(xml: &str) -> Node {
    fn node(e: &BytesStart<'_>) -> Node {
        Node {
            name: String::from_utf8(e.name().as_ref().to_vec()).unwrap(),
            attrs: e
                .attributes()
                .map(|a| {
                    let a = a.expect("well-formed attribute");
                    (
                        String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                            .unwrap()
                            .into_owned(),
                    )
                })
                .collect(),
            text: String::new(),
            children: Vec::new(),
        }
    }
    fn close(open: &mut Vec<Node>) -> Option<Node> {
        let done = open.pop().unwrap();
        match open.last_mut() {
            Some(parent) => {
                parent.children.push(done);
                None
            }
            None => Some(done),
        }
    }
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut open: Vec<Node> = Vec::new();
    let mut root = None;
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => open.push(node(&e)),
            Event::Empty(e) => {
                open.push(node(&e));
                root = root.or(close(&mut open));
            }
            Event::End(_) => root = root.or(close(&mut open)),
            Event::Text(t) => {
                if let Some(n) = open.last_mut() {
                    n.text.push_str(t.decode().unwrap().trim());
                }
            }
            Event::GeneralRef(r) => {
                if let Some(n) = open.last_mut() {
                    let name = r.decode().unwrap();
                    n.text
                        .push_str(quick_xml::escape::resolve_predefined_entity(&name).unwrap());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    root.expect("a root element")
}

fn meta() -> RunMeta {
    RunMeta {
        run_id: "20261129-230000-ab12".into(),
        run_dir: PathBuf::from("/out/virtio.512.bios.by-id"),
        owner_host: "ci-7".into(),
        owner_pid: 4242,
        owner_start: 987654,
    }
}

fn domain(spec: &VmSpec) -> Node {
    let xml = domain_xml(spec, &meta());
    let root = parse(&xml);
    assert_eq!(root.name, "domain", "{xml}");
    root
}

/// (slot, function) of a `<address type='pci'>`, checking it is on q35's root bus.
fn pci(addr: &Node) -> (u8, u8) {
    assert_eq!(addr.at("type"), "pci", "{addr:?}");
    assert_eq!(addr.at("domain"), "0x0000");
    assert_eq!(addr.at("bus"), "0x00");
    let hex = |s: &str| u8::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    (hex(addr.at("slot")), hex(addr.at("function")))
}

/// (controller, bus, target, unit) of a `<address type='drive'>`.
fn drive(addr: &Node) -> (u32, u32, u32, u32) {
    assert_eq!(addr.at("type"), "drive", "{addr:?}");
    let n = |k: &str| addr.at(k).parse::<u32>().unwrap();
    (n("controller"), n("bus"), n("target"), n("unit"))
}

fn disk_by_alias<'a>(devices: &'a Node, alias: &str) -> &'a Node {
    devices
        .all("disk")
        .into_iter()
        .find(|d| d.one("alias").at("name") == alias)
        .unwrap_or_else(|| panic!("no disk with alias {alias}"))
}

fn controller<'a>(devices: &'a Node, kind: &str) -> Option<&'a Node> {
    devices
        .all("controller")
        .into_iter()
        .find(|c| c.at("type") == kind)
}

/// The JSON values of the passthrough arguments that follow each `flag` (`-blockdev`, `-device`).
fn passthrough(root: &Node, flag: &str) -> Vec<serde_json::Value> {
    let Some(cl) = root.opt("qemu:commandline") else {
        return Vec::new();
    };
    let args: Vec<&str> = cl.all("qemu:arg").iter().map(|a| a.at("value")).collect();
    args.windows(2)
        .filter(|w| w[0] == flag)
        .map(|w| serde_json::from_str(w[1]).expect("JSON argument"))
        .collect()
}

fn uefi(mut sp: VmSpec) -> VmSpec {
    sp.firmware = Firmware::Uefi;
    sp.uefi_vars = Some(PathBuf::from("/r/OVMF_VARS.fd"));
    sp
}

/// UEFI, a 4K-native SCSI install disk booted first, a SATA data disk, the CD-ROM second.
fn uefi_scsi_sata_cdrom() -> VmSpec {
    let mut sp = uefi(spec());
    sp.disks = disks_on(&[Bus::Scsi, Bus::Sata]);
    sp.disks[0].sector = Sector::S4k;
    sp.disks[0].serial = Some("sno-install".into());
    sp.disks[0].bootindex = Some(1);
    sp.disks[1].sector = Sector::S512e;
    sp.disks[1].serial = Some("sno-data".into());
    sp
}

/// KVM, BIOS, the install disk on NVMe (booted first), a virtio data disk, the CD-ROM second.
fn nvme_kvm() -> VmSpec {
    let mut sp = spec();
    sp.accel = Accel::Kvm;
    sp.disks = disks_on(&[Bus::Nvme, Bus::Virtio]);
    sp.disks[0].bootindex = Some(1);
    sp.disks[0].sector = Sector::S4k;
    sp
}

// ----- Boot order, firmware, features.

#[test]
fn boot_order_is_per_device_and_never_in_os() {
    let sp = spec();
    let root = domain(&sp);
    assert!(root.one("os").opt("boot").is_none());
    let devices = root.one("devices");
    let install = disk_by_alias(devices, &disk_alias("install"));
    assert_eq!(install.one("boot").at("order"), "1");
    let cd = disk_by_alias(devices, CDROM_ALIAS);
    assert_eq!(cd.at("device"), "cdrom");
    assert_eq!(cd.one("boot").at("order"), "2");
    // Nothing else boots: the NIC gets no boot order when libvirt sees the disks' ones.
    assert_eq!(root.descendants("boot").len(), 2);

    // A spec without any boot order gets none written either (libvirt's default applies).
    let mut none = spec();
    none.disks[0].bootindex = None;
    none.cdrom.as_mut().unwrap().bootindex = None;
    let root = domain(&none);
    assert!(root.descendants("boot").is_empty());
}

#[test]
fn uefi_has_the_readonly_code_and_the_per_vm_vars_bios_has_neither() {
    let root = domain(&uefi(spec()));
    let os = root.one("os");
    let ty = os.one("type");
    assert_eq!(
        (ty.at("arch"), ty.at("machine"), ty.text.as_str()),
        ("x86_64", "q35", "hvm")
    );
    let loader = os.one("loader");
    assert_eq!(loader.at("readonly"), "yes");
    assert_eq!(loader.at("type"), "pflash");
    assert_eq!(loader.text, OVMF_CODE);
    let nvram = os.one("nvram");
    assert_eq!(nvram.at("template"), OVMF_VARS);
    assert_eq!(nvram.text, "/r/OVMF_VARS.fd");

    assert!(loader.attr("secure").is_none(), "{loader:?}");
    assert!(root.one("features").opt("smm").is_none());

    let bios = domain(&spec());
    let os = bios.one("os");
    assert!(
        os.opt("loader").is_none() && os.opt("nvram").is_none(),
        "{os:?}"
    );
}

/// `uefi-secure`: the secboot build marked secure, the store with Microsoft's keys, SMM on
/// (libvirt refuses a secure loader without it), as qemu_argv's `smm=on` and secure flash.
#[test]
fn secure_boot_has_the_secure_secboot_loader_the_ms_store_and_smm() {
    let mut sp = uefi(spec());
    sp.firmware = Firmware::UefiSecure;
    let root = domain(&sp);
    let os = root.one("os");
    let loader = os.one("loader");
    assert_eq!(
        (
            loader.at("readonly"),
            loader.at("secure"),
            loader.at("type")
        ),
        ("yes", "yes", "pflash")
    );
    assert_eq!(loader.text, OVMF_CODE_SECBOOT);
    let nvram = os.one("nvram");
    assert_eq!(nvram.at("template"), OVMF_VARS_MS);
    assert_eq!(nvram.text, "/r/OVMF_VARS.fd");
    assert_eq!(root.one("features").one("smm").at("state"), "on");
}

#[test]
fn acpi_always_and_the_tcg_cache_of_the_qemu_backend() {
    let tcg = domain(&spec());
    assert_eq!(tcg.at("type"), "qemu");
    let features = tcg.one("features");
    features.one("acpi");
    let tb = features.one("tcg").one("tb-cache");
    assert_eq!(tb.at("unit"), "MiB");
    assert_eq!(tb.text, TCG_TB_SIZE_MIB.to_string());
    // `-cpu max`, as qemu_argv under TCG.
    assert_eq!(tcg.one("cpu").at("mode"), "maximum");

    let kvm = domain(&nvme_kvm());
    assert_eq!(kvm.at("type"), "kvm");
    let features = kvm.one("features");
    features.one("acpi");
    assert!(features.opt("tcg").is_none());
    assert_eq!(kvm.one("cpu").at("mode"), "host-passthrough");
}

#[test]
fn name_resources_and_lifecycle() {
    let root = domain(&spec());
    assert_eq!(root.one("name").text, "t");
    let memory = root.one("memory");
    assert_eq!((memory.at("unit"), memory.text.as_str()), ("MiB", "2048"));
    assert_eq!(root.one("vcpu").text, "2");
    assert_eq!(root.one("clock").at("offset"), "utc");
    assert_eq!(root.one("on_poweroff").text, "destroy");
    assert_eq!(root.one("on_reboot").text, "restart");
    assert_eq!(root.one("on_crash").text, "destroy");
}

#[test]
fn metadata_names_the_run_in_our_namespace() {
    let root = domain(&spec());
    let run = root.one("metadata").one("sno:run");
    assert_eq!(run.at("xmlns:sno"), RUN_XMLNS);
    assert_eq!(run.at("id"), "20261129-230000-ab12");
    assert_eq!(run.at("dir"), "/out/virtio.512.bios.by-id");
    // The owner, so that gc tells a live run's domain from a dead one's.
    assert_eq!(run.at("host"), "ci-7");
    assert_eq!(run.at("pid"), "4242");
    assert_eq!(run.at("pid-start"), "987654");
}

// ----- Devices where the QEMU backend puts them.

#[test]
fn every_device_sits_where_the_qemu_plan_puts_it() {
    use Bus::*;
    let buses = [Sata, Virtio, Scsi, Nvme, Virtio, Scsi, Sata, Nvme];
    let mut sp = spec();
    sp.disks = disks_on(&buses);
    let root = domain(&sp);
    let devices = root.one("devices");

    assert_eq!(
        pci(devices.one("video").one("address")),
        (plan::VGA_SLOT, 0)
    );
    assert_eq!(devices.one("video").one("model").at("type"), "vga");
    let nic = passthrough(&root, "-device")
        .into_iter()
        .find(|d| d["driver"] == "virtio-net-pci")
        .expect("the NIC in the passthrough");
    assert_eq!(nic["addr"], format!("{:#04x}", plan::NET_SLOT));
    let rng = devices.one("rng");
    assert_eq!(rng.at("model"), "virtio");
    assert_eq!(rng.one("backend").text, "/dev/urandom");
    assert_eq!(pci(rng.one("address")), (plan::RNG_SLOT, 0));
    let scsi = controller(devices, "scsi").expect("a SCSI controller");
    assert_eq!(scsi.at("model"), "virtio-scsi");
    assert_eq!(pci(scsi.one("address")), (plan::SCSI_CONTROLLER_SLOT, 0));
    let sata = controller(devices, "sata").expect("the AHCI controller");
    assert_eq!(sata.at("index"), "0");
    assert_eq!(
        pci(sata.one("address")),
        (plan::AHCI_SLOT, plan::AHCI_FUNCTION)
    );

    // Each disk where plan::disk_place says, on the bus of its kind.
    let nvme_devices = passthrough(&root, "-device");
    for (i, d) in sp.disks.iter().enumerate() {
        let place = plan::disk_place(&buses, i).unwrap();
        if d.bus == Nvme {
            let dev = nvme_devices
                .iter()
                .find(|v| v["id"] == disk_alias(&d.id))
                .unwrap_or_else(|| panic!("no passthrough device for {}", d.id));
            let DiskPlace::Nvme { slot } = place else {
                panic!("{place:?}")
            };
            assert_eq!(dev["bus"], "pcie.0");
            assert_eq!(dev["addr"], format!("{slot:#04x}"));
            continue;
        }
        let disk = disk_by_alias(devices, &disk_alias(&d.id));
        let target = disk.one("target");
        let addr = disk.one("address");
        match place {
            DiskPlace::Virtio { slot } => {
                assert_eq!(target.at("bus"), "virtio");
                assert_eq!(pci(addr), (slot, 0));
            }
            DiskPlace::Scsi { target: t } => {
                assert_eq!(target.at("bus"), "scsi");
                // Controller 0, channel 0, this SCSI id, LUN 0.
                assert_eq!(drive(addr), (0, 0, u32::from(t), 0));
            }
            DiskPlace::Sata { port } => {
                assert_eq!(target.at("bus"), "sata");
                assert_eq!(drive(addr), (0, 0, 0, u32::from(port)));
            }
            DiskPlace::Nvme { .. } => panic!("NVMe disk {} is a <disk>", d.id),
        }
    }
    let cd = disk_by_alias(devices, CDROM_ALIAS);
    assert_eq!(cd.one("target").at("bus"), "sata");
    assert_eq!(
        drive(cd.one("address")),
        (0, 0, 0, u32::from(plan::CDROM_AHCI_PORT))
    );

    // Nothing for libvirt to add or place: no balloon, no USB, every PCI address taken once,
    // and every device that could take a slot has its address written out.
    assert_eq!(devices.one("memballoon").at("model"), "none");
    let usb = controller(devices, "usb").expect("a USB controller set to none");
    assert_eq!(usb.at("model"), "none");
    assert_eq!(
        controller(devices, "pci").map(|c| c.at("model")),
        Some("pcie-root")
    );
    let mut slots: Vec<(u8, u8)> = root
        .descendants("address")
        .into_iter()
        .filter(|a| a.at("type") == "pci")
        .map(pci)
        .chain(nvme_devices.iter().map(|v| {
            let addr = v["addr"].as_str().unwrap().trim_start_matches("0x");
            (u8::from_str_radix(addr, 16).unwrap(), 0)
        }))
        .collect();
    let n = slots.len();
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), n, "a PCI address used twice: {slots:?}");
    for kind in ["video", "interface", "rng", "disk"] {
        for dev in devices.all(kind) {
            assert!(dev.opt("address").is_some(), "<{kind}> without address");
        }
    }
    for c in devices.all("controller") {
        let placed = c.opt("address").is_some();
        let builtin = matches!(c.at("type"), "pci" | "usb");
        assert!(placed || builtin, "{c:?}");
    }
    // pvpanic on the ISA bus, as in qemu_argv.
    assert_eq!(devices.one("panic").at("model"), "isa");
}

#[test]
fn no_scsi_controller_without_scsi_disks() {
    let root = domain(&spec());
    assert!(controller(root.one("devices"), "scsi").is_none());
}

#[test]
fn disks_carry_their_format_serial_sector_sizes_and_cache_mode() {
    let mut sp = spec();
    sp.disks = disks_on(&[Bus::Virtio, Bus::Scsi, Bus::Sata]);
    let sectors = [Sector::S512, Sector::S4k, Sector::S512e];
    for (d, s) in sp.disks.iter_mut().zip(sectors) {
        d.sector = s;
        d.serial = Some(format!("ser-{}", d.id));
    }
    sp.disks[2].format = "raw".into();
    let root = domain(&sp);
    let devices = root.one("devices");
    for d in &sp.disks {
        let disk = disk_by_alias(devices, &disk_alias(&d.id));
        assert_eq!((disk.at("type"), disk.at("device")), ("file", "disk"));
        let driver = disk.one("driver");
        assert_eq!(driver.at("name"), "qemu");
        assert_eq!(driver.at("type"), d.format);
        assert_eq!(driver.at("cache"), "unsafe");
        assert_eq!(driver.at("io"), "threads");
        assert_eq!(driver.at("discard"), "unmap");
        assert!(disk.opt("iotune").is_none(), "no limits by default");
        assert_eq!(disk.one("source").at("file"), d.path.display().to_string());
        assert_eq!(disk.one("serial").text, format!("ser-{}", d.id));
        let bio = disk.one("blockio");
        assert_eq!(bio.at("logical_block_size"), d.sector.logical().to_string());
        assert_eq!(
            bio.at("physical_block_size"),
            d.sector.physical().to_string()
        );
        assert!(disk.opt("readonly").is_none());
    }
    // Target names are unique: virtio from vda, SCSI/SATA/CD-ROM sharing sda, sdb, ...
    let devs: Vec<&str> = devices
        .all("disk")
        .iter()
        .map(|d| d.one("target").at("dev"))
        .collect();
    assert_eq!(devs, ["vda", "sda", "sdb", "sdc"]);
    // A disk without a serial has no <serial>; the CD-ROM is read-only raw.
    sp.disks[0].serial = None;
    let root = domain(&sp);
    let devices = root.one("devices");
    assert!(disk_by_alias(devices, &disk_alias("d0"))
        .opt("serial")
        .is_none());
    let cd = disk_by_alias(devices, CDROM_ALIAS);
    cd.one("readonly");
    assert_eq!(cd.one("driver").at("type"), "raw");
    assert!(cd.one("driver").attr("cache").is_none() && cd.one("driver").attr("io").is_none());
    assert_eq!(cd.one("source").at("file"), "/r/live.iso");
    assert!(cd.opt("blockio").is_none());
}

#[test]
fn nvme_goes_through_the_qemu_passthrough_at_its_slot() {
    let sp = nvme_kvm();
    let xml = domain_xml(&sp, &meta());
    let root = parse(&xml);
    assert_eq!(root.at("xmlns:qemu"), QEMU_XMLNS);
    // libvirt never sees the NVMe disk as a <disk>.
    let devices = root.one("devices");
    let aliases: Vec<&str> = devices
        .all("disk")
        .iter()
        .map(|d| d.one("alias").at("name"))
        .collect();
    assert_eq!(aliases, [disk_alias("d1").as_str(), CDROM_ALIAS]);

    let blockdevs = passthrough(&root, "-blockdev");
    assert_eq!(blockdevs.len(), 2, "{xml}");
    let (file, format) = (&blockdevs[0], &blockdevs[1]);
    assert_eq!(file["driver"], "file");
    assert_eq!(file["filename"], "/r/d0.qcow2");
    assert_eq!(format["driver"], "qcow2");
    assert_eq!(format["file"], file["node-name"]);
    // cache=unsafe, aio=threads, as the QEMU backend's -drive.
    for node in [file, format] {
        assert_eq!(node["cache"]["direct"], false);
        assert_eq!(node["cache"]["no-flush"], true);
        assert_eq!(node["discard"], "unmap");
        assert!(node["node-name"].as_str().unwrap().len() <= 31);
    }
    assert_eq!(file["aio"], "threads");
    assert!(format.get("aio").is_none(), "aio is the file's");
    assert!(
        passthrough(&root, "-object").is_empty(),
        "no throttle group"
    );
    let devs = passthrough(&root, "-device");
    assert_eq!(devs.len(), 2, "the NVMe disk and the NIC");
    assert_eq!(devs[1]["driver"], "virtio-net-pci");
    let dev = &devs[0];
    let buses: Vec<Bus> = sp.disks.iter().map(|d| d.bus).collect();
    let DiskPlace::Nvme { slot } = plan::disk_place(&buses, 0).unwrap() else {
        panic!()
    };
    assert_eq!(slot, plan::FIRST_DISK_SLOT);
    assert_eq!(dev["driver"], "nvme");
    assert_eq!(dev["addr"], format!("{slot:#04x}"));
    assert_eq!(dev["drive"], format["node-name"]);
    assert_eq!(dev["id"], disk_alias("d0"));
    // NVMe needs a serial: the drive id when the spec has none, as qemu_argv.
    assert_eq!(dev["serial"], "d0");
    assert_eq!(dev["logical_block_size"], 4096);
    assert_eq!(dev["physical_block_size"], 4096);
    assert_eq!(dev["write-cache"], "on");
    assert_eq!(dev["bootindex"], 1);
    // The virtio disk takes the next slot, as in the plan.
    assert_eq!(
        pci(disk_by_alias(devices, &disk_alias("d1")).one("address")),
        (plan::FIRST_DISK_SLOT + 1, 0)
    );
    // The CD-ROM's boot order is on the CD-ROM; still nothing in <os>.
    assert_eq!(
        disk_by_alias(devices, CDROM_ALIAS).one("boot").at("order"),
        "2"
    );
    assert!(root.one("os").opt("boot").is_none());
}

#[test]
fn nvme_keeps_an_explicit_serial_and_sector_sizes() {
    let mut sp = spec();
    sp.disks = disks_on(&[Bus::Nvme]);
    sp.disks[0].serial = Some("sno-install".into());
    sp.disks[0].sector = Sector::S512e;
    sp.disks[0].format = "raw".into();
    let root = domain(&sp);
    let dev = &passthrough(&root, "-device")[0];
    assert_eq!(dev["serial"], "sno-install");
    assert_eq!(dev["logical_block_size"], 512);
    assert_eq!(dev["physical_block_size"], 4096);
    assert!(dev.get("bootindex").is_none());
    assert_eq!(passthrough(&root, "-blockdev")[1]["driver"], "raw");
}

// ----- Cache mode, AIO and throttling.

/// Every disk's io: none/native on virtio, directsync/io_uring on SCSI, writeback on SATA,
/// none/io_uring on NVMe; the virtio and NVMe disks throttled (both limits, bytes only).
fn io_everything() -> VmSpec {
    let mut sp = spec();
    sp.disks = disks_on(&[Bus::Virtio, Bus::Scsi, Bus::Sata, Bus::Nvme]);
    let io = |cache, aio, throttle| DiskIo {
        cache,
        aio,
        throttle,
    };
    sp.disks[0].io = io(
        CacheMode::None,
        AioMode::Native,
        Some(Throttle {
            bytes_per_s: Some(8 << 20),
            iops: Some(500),
        }),
    );
    sp.disks[1].io = io(CacheMode::Directsync, AioMode::IoUring, None);
    sp.disks[2].io = io(
        CacheMode::Writeback,
        AioMode::Threads,
        Some(Throttle {
            bytes_per_s: None,
            iops: Some(100),
        }),
    );
    sp.disks[3].io = io(
        CacheMode::None,
        AioMode::IoUring,
        Some(Throttle {
            bytes_per_s: Some(20 << 20),
            iops: None,
        }),
    );
    sp
}

#[test]
fn disks_carry_their_cache_mode_io_and_limits_in_the_driver_and_iotune() {
    let sp = io_everything();
    let root = domain(&sp);
    let devices = root.one("devices");
    let driver = |id: &str| disk_by_alias(devices, &disk_alias(id)).one("driver");
    assert_eq!(
        (driver("d0").at("cache"), driver("d0").at("io")),
        ("none", "native")
    );
    assert_eq!(
        (driver("d1").at("cache"), driver("d1").at("io")),
        ("directsync", "io_uring")
    );
    assert_eq!(
        (driver("d2").at("cache"), driver("d2").at("io")),
        ("writeback", "threads")
    );
    for id in ["d0", "d1", "d2"] {
        assert_eq!(driver(id).at("discard"), "unmap");
    }

    let iotune = |id: &str| disk_by_alias(devices, &disk_alias(id)).opt("iotune");
    let limits = |n: &Node| -> Vec<(String, String)> {
        n.children
            .iter()
            .map(|c| (c.name.clone(), c.text.clone()))
            .collect()
    };
    assert_eq!(
        limits(iotune("d0").unwrap()),
        [
            ("total_bytes_sec".to_string(), "8388608".to_string()),
            ("total_iops_sec".to_string(), "500".to_string()),
        ]
    );
    assert!(iotune("d1").is_none());
    assert_eq!(
        limits(iotune("d2").unwrap()),
        [("total_iops_sec".to_string(), "100".to_string())]
    );
    // Each mode as its name, on a virtio disk.
    for cache in CacheMode::ALL {
        for aio in AioMode::ALL {
            let mut one = spec();
            one.disks[0].io = DiskIo {
                cache,
                aio,
                throttle: None,
            };
            let root = domain(&one);
            let d = disk_by_alias(root.one("devices"), &disk_alias("install")).one("driver");
            assert_eq!((d.at("cache"), d.at("io")), (cache.name(), aio.name()));
        }
    }
}

#[test]
fn nvme_cache_modes_split_into_direct_no_flush_and_the_devices_write_cache() {
    let want = [
        (CacheMode::Unsafe, false, true, "on"),
        (CacheMode::Writeback, false, false, "on"),
        (CacheMode::None, true, false, "on"),
        (CacheMode::Directsync, true, false, "off"),
    ];
    for (cache, direct, no_flush, write_cache) in want {
        for aio in AioMode::ALL {
            let mut sp = spec();
            sp.disks = disks_on(&[Bus::Nvme]);
            sp.disks[0].io = DiskIo {
                cache,
                aio,
                throttle: None,
            };
            let root = domain(&sp);
            let blockdevs = passthrough(&root, "-blockdev");
            assert_eq!(blockdevs.len(), 2, "no throttle node without limits");
            for node in &blockdevs {
                assert_eq!(node["cache"]["direct"], direct, "{cache:?}");
                assert_eq!(node["cache"]["no-flush"], no_flush, "{cache:?}");
            }
            assert_eq!(blockdevs[0]["aio"], aio.name());
            let dev = &passthrough(&root, "-device")[0];
            assert_eq!(dev["write-cache"], write_cache, "{cache:?}");
            assert_eq!(dev["drive"], blockdevs[1]["node-name"]);
            // Throttled, every node has the mode and the device's write cache is the same.
            sp.disks[0].io.throttle = Some(Throttle {
                bytes_per_s: Some(1 << 20),
                iops: None,
            });
            let root = domain(&sp);
            let blockdevs = passthrough(&root, "-blockdev");
            assert_eq!(blockdevs.len(), 3);
            for node in &blockdevs {
                assert_eq!(node["cache"]["direct"], direct, "{cache:?}");
                assert_eq!(node["cache"]["no-flush"], no_flush, "{cache:?}");
            }
            let dev = &passthrough(&root, "-device")[0];
            assert_eq!(dev["write-cache"], write_cache, "{cache:?}");
        }
    }
}

#[test]
fn a_throttled_nvme_disk_gets_a_throttle_group_and_node_under_the_same_device_id() {
    let sp = io_everything();
    let root = domain(&sp);
    let args: Vec<String> = root
        .one("qemu:commandline")
        .all("qemu:arg")
        .iter()
        .map(|a| a.at("value").to_string())
        .collect();
    let objects: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "-object")
        .map(|w| w[1].as_str())
        .collect();
    assert_eq!(
        objects,
        ["throttle-group,id=sno-nvme3-tg,x-bps-total=20971520"]
    );
    let blockdevs = passthrough(&root, "-blockdev");
    assert_eq!(blockdevs.len(), 3, "file, format, throttle");
    let (file, format, throttle) = (&blockdevs[0], &blockdevs[1], &blockdevs[2]);
    assert_eq!(file["aio"], "io_uring");
    assert_eq!(file["cache"]["direct"], true);
    assert_eq!(throttle["driver"], "throttle");
    assert_eq!(throttle["throttle-group"], "sno-nvme3-tg");
    assert_eq!(throttle["file"], format["node-name"]);
    assert!(throttle["node-name"].as_str().unwrap().len() <= 31);
    // Discards pass it, and it reports the disk's cache mode.
    assert_eq!(throttle["discard"], "unmap");
    assert_eq!(throttle["cache"], format["cache"]);
    let dev = passthrough(&root, "-device")
        .into_iter()
        .find(|d| d["driver"] == "nvme")
        .unwrap();
    assert_eq!(dev["drive"], throttle["node-name"]);
    // The device id, which block stats map back to the disk, is the alias as without limits.
    assert_eq!(dev["id"], disk_alias("d3"));
    assert_eq!(disk_id_from_qdev(dev["id"].as_str().unwrap()), Some("d3"));
    // The group exists before the node that names it, and both before the device.
    let at = |needle: &str| args.iter().position(|a| a.contains(needle)).unwrap();
    assert!(at("throttle-group,") < at("\"driver\":\"throttle\""));
    assert!(at("\"driver\":\"throttle\"") < at("\"driver\":\"nvme\""));

    // Both limits; iops alone.
    let mut sp = spec();
    sp.disks = disks_on(&[Bus::Nvme, Bus::Nvme]);
    sp.disks[0].io.throttle = Some(Throttle {
        bytes_per_s: Some(1 << 20),
        iops: Some(50),
    });
    sp.disks[1].io.throttle = Some(Throttle {
        bytes_per_s: None,
        iops: Some(75),
    });
    let root = domain(&sp);
    let objects: Vec<String> = root
        .one("qemu:commandline")
        .all("qemu:arg")
        .windows(2)
        .filter(|w| w[0].at("value") == "-object")
        .map(|w| w[1].at("value").to_string())
        .collect();
    assert_eq!(
        objects,
        [
            "throttle-group,id=sno-nvme0-tg,x-bps-total=1048576,x-iops-total=50",
            "throttle-group,id=sno-nvme1-tg,x-iops-total=75",
        ]
    );
    let devs = passthrough(&root, "-device");
    assert_eq!(devs[0]["drive"], "sno-nvme0-throttle");
    assert_eq!(devs[1]["drive"], "sno-nvme1-throttle");
}

// ----- Console and network.

#[test]
fn the_serial_console_is_a_unix_socket_qemu_listens_on() {
    let root = domain(&spec());
    let devices = root.one("devices");
    let serial = devices.one("serial");
    assert_eq!(serial.at("type"), "unix");
    assert_eq!(serial.one("source").at("mode"), "bind");
    assert_eq!(serial.one("source").at("path"), "/r/serial.sock");
    assert_eq!(serial.one("target").at("port"), "0");
    let console = devices.one("console");
    assert_eq!(console.one("source").at("path"), "/r/serial.sock");
    assert_eq!(console.one("target").at("type"), "serial");
    assert_eq!(console.one("target").at("port"), "0");
}

#[test]
fn the_nic_is_the_qemu_backends_user_network_with_loopback_forwards_only() {
    let mut sp = spec();
    sp.forwards.push(crate::vm::PortForward {
        host_port: 40443,
        guest_port: 6443,
    });
    let root = domain(&sp);
    assert!(
        root.one("devices").opt("interface").is_none(),
        "no libvirt-managed NIC"
    );
    let args: Vec<&str> = root
        .one("qemu:commandline")
        .all("qemu:arg")
        .iter()
        .map(|a| a.at("value"))
        .collect();
    let netdev = args
        .windows(2)
        .find(|w| w[0] == "-netdev")
        .map(|w| w[1])
        .expect("a -netdev");
    assert_eq!(
        netdev,
        crate::vm::qemu::argv::user_netdev(&sp.forwards, None, sp.dhcp_hostname.as_deref())
    );
    let fwds: Vec<&str> = netdev
        .split(',')
        .filter(|p| p.starts_with("hostfwd="))
        .collect();
    assert_eq!(fwds.len(), sp.forwards.len());
    for (f, spec_f) in fwds.iter().zip(&sp.forwards) {
        assert_eq!(
            *f,
            format!(
                "hostfwd=tcp:127.0.0.1:{}-:{}",
                spec_f.host_port, spec_f.guest_port
            )
        );
    }
    let nic = passthrough(&root, "-device")
        .into_iter()
        .find(|d| d["driver"] == "virtio-net-pci")
        .unwrap();
    assert_eq!(nic["netdev"], "net0");
    assert_eq!(nic["mac"], NIC_MACS[0]);
}

/// `sp` booting from the network: no CD-ROM, the NIC second in the boot order, the script in
/// `/o/run/tftp`.
fn pxe(mut sp: VmSpec) -> VmSpec {
    sp.cdrom = None;
    sp.netboot = Some(crate::vm::NetBootSpec {
        tftp_dir: PathBuf::from("/o/run/tftp"),
        bootfile: "boot.ipxe".into(),
        bootindex: 2,
    });
    sp
}

/// A PXE machine whose NIC is on the run's libvirt network.
fn pxe_on_a_network() -> VmSpec {
    let mut sp = pxe(spec());
    sp.nic = crate::vm::Nic::LibvirtNetwork {
        network: "sno-run-40022".into(),
    };
    sp
}

#[test]
fn a_pxe_machine_has_no_cd_rom_and_its_nic_takes_the_tftp_boot_and_the_boot_order_after_the_disk() {
    let sp = pxe(spec());
    let root = domain(&sp);
    let devices = root.one("devices");
    assert!(
        devices
            .all("disk")
            .iter()
            .all(|d| d.attr("device") != Some("cdrom")),
        "no CD-ROM"
    );
    let args: Vec<&str> = root
        .one("qemu:commandline")
        .all("qemu:arg")
        .iter()
        .map(|a| a.at("value"))
        .collect();
    let netdev: Vec<String> = args
        .windows(2)
        .filter(|w| w[0] == "-netdev")
        .map(|w| w[1].to_string())
        .collect();
    assert_eq!(
        netdev,
        [crate::vm::qemu::argv::user_netdev(
            &sp.forwards,
            sp.netboot.as_ref(),
            sp.dhcp_hostname.as_deref()
        )]
    );
    assert!(
        netdev[0].contains(",tftp=/o/run/tftp,bootfile=boot.ipxe"),
        "{netdev:?}"
    );
    let nic = passthrough(&root, "-device")
        .into_iter()
        .find(|d| d["driver"] == "virtio-net-pci")
        .unwrap();
    assert_eq!(nic["bootindex"], 2);
    // Without a network boot the NIC has no place in the boot order at all.
    let plain = passthrough(&domain(&spec()), "-device")
        .into_iter()
        .find(|d| d["driver"] == "virtio-net-pci")
        .unwrap();
    assert!(plain.get("bootindex").is_none(), "{plain}");
}

#[test]
fn paths_and_names_with_markup_characters_survive() {
    let mut sp = spec();
    sp.name = "a<b>&'\"".into();
    sp.disks[0].path = PathBuf::from("/r/it's \"a\" & <b>.qcow2");
    let odd = RunMeta {
        run_id: "x&y".into(),
        run_dir: PathBuf::from("/o/'q'"),
        ..meta()
    };
    let root = parse(&domain_xml(&sp, &odd));
    assert_eq!(root.one("name").text, "a<b>&'\"");
    let disk = disk_by_alias(root.one("devices"), &disk_alias("install"));
    assert_eq!(disk.one("source").at("file"), "/r/it's \"a\" & <b>.qcow2");
    let run = root.one("metadata").one("sno:run");
    assert_eq!((run.at("id"), run.at("dir")), ("x&y", "/o/'q'"));
}

#[test]
fn block_stats_qdev_maps_back_to_the_disk_id() {
    assert_eq!(disk_id_from_qdev("ua-install"), Some("install"));
    assert_eq!(
        disk_id_from_qdev("/machine/peripheral/ua-d-1/virtio-backend"),
        Some("d-1")
    );
    assert_eq!(disk_id_from_qdev(CDROM_ALIAS), None);
    assert_eq!(
        disk_id_from_qdev("/machine/peripheral-anon/device[3]"),
        None
    );
    assert_eq!(disk_id_from_qdev(""), None);
    assert_eq!(disk_id_from_qdev("ua-"), None);
}

#[test]
fn target_names_go_past_z() {
    let mut sp = spec();
    sp.disks = disks_on(&[Bus::Scsi; 28]);
    let root = domain(&sp);
    let devs: Vec<&str> = root
        .one("devices")
        .all("disk")
        .iter()
        .map(|d| d.one("target").at("dev"))
        .collect();
    assert_eq!(devs[25], "sdz");
    assert_eq!(devs[26], "sdaa");
    assert_eq!(devs[28], "sdac", "the CD-ROM after 28 SCSI disks");
}

// ----- NAT network.

fn nat(ipv6: bool) -> NatNetwork {
    NatNetwork {
        name: "sno-20261129-230000-ab12-40022".into(),
        run: meta(),
        cluster_name: "sno".into(),
        base_domain: "example.test".into(),
        ipv4: Some(Ipv4Subnet {
            host: Ipv4Addr::new(192, 168, 126, 1),
            prefix: 24,
            dhcp_start: Ipv4Addr::new(192, 168, 126, 100),
            dhcp_end: Ipv4Addr::new(192, 168, 126, 199),
        }),
        ipv6: ipv6.then(|| Ipv6Subnet {
            host: "fd00:126::1".parse().unwrap(),
            prefix: 64,
            dhcp_start: "fd00:126::100".parse().unwrap(),
            dhcp_end: "fd00:126::1ff".parse().unwrap(),
        }),
        node: NodeReservation {
            mac: "52:54:00:aa:bb:cc".into(),
            hostname: "master-0".into(),
            ipv4: Some(Ipv4Addr::new(192, 168, 126, 10)),
            ipv6: ipv6.then(|| "fd00:126::10".parse::<Ipv6Addr>().unwrap()),
        },
        tftp: None,
    }
}

/// A single-stack IPv6 network: `nat(true)` without its IPv4.
fn nat_ipv6_only() -> NatNetwork {
    let mut n = nat(true);
    n.ipv4 = None;
    n.node.ipv4 = None;
    n
}

/// The run's network of a PXE boot.
fn nat_pxe(ipv6: bool) -> NatNetwork {
    NatNetwork {
        tftp: Some(super::network::NetTftp {
            root: PathBuf::from("/o/run/tftp"),
            bootfile: "boot.ipxe".into(),
        }),
        ..nat(ipv6)
    }
}

#[test]
fn a_pxe_boots_network_serves_the_tftp_root_and_names_the_boot_file_on_ipv4_only() {
    let root = parse(&nat_network_xml(&nat_pxe(true)));
    let ips = root.all("ip");
    let v4 = ips.iter().find(|ip| ip.attr("family").is_none()).unwrap();
    assert_eq!(v4.one("tftp").at("root"), "/o/run/tftp");
    assert_eq!(v4.one("dhcp").one("bootp").at("file"), "boot.ipxe");
    // dnsmasq serves TFTP on IPv4; the IPv6 range names no boot file.
    let v6 = ips
        .iter()
        .find(|ip| ip.attr("family") == Some("ipv6"))
        .unwrap();
    assert!(v6.opt("tftp").is_none() && v6.one("dhcp").opt("bootp").is_none());
    // Without a network boot there is neither.
    let plain = parse(&nat_network_xml(&nat(false)));
    assert!(plain.all("ip")[0].opt("tftp").is_none());
    assert!(plain.all("ip")[0].one("dhcp").opt("bootp").is_none());
}

#[test]
fn a_pxe_machine_on_a_libvirt_network_boots_its_interface_after_the_disk() {
    let sp = pxe_on_a_network();
    let root = domain(&sp);
    let nic = root.one("devices").one("interface");
    assert_eq!(nic.one("boot").at("order"), "2");
    let disk = disk_by_alias(root.one("devices"), &disk_alias("install"));
    assert_eq!(disk.one("boot").at("order"), "1");
    // The user network's TFTP is not there: the network's dnsmasq serves it.
    assert!(!domain_xml(&sp, &meta()).contains("tftp="));
}

#[test]
fn the_nat_network_reserves_the_node_and_resolves_the_cluster_names() {
    let n = nat(false);
    let root = parse(&nat_network_xml(&n));
    assert_eq!(root.name, "network");
    assert_eq!(root.one("name").text, "sno-20261129-230000-ab12-40022");
    let run = root.one("metadata").one("sno:run");
    assert_eq!(run.at("xmlns:sno"), RUN_XMLNS);
    assert_eq!(run.at("id"), n.run.run_id);
    assert_eq!(root.one("forward").at("mode"), "nat");
    let bridge = root.one("bridge").at("name");
    assert_eq!(bridge, bridge_name(&n.name));
    assert!(bridge.len() <= MAX_BRIDGE_NAME && bridge.starts_with("sno"));
    // Plain names (the node's own host name) are never forwarded: with no upstream to ask,
    // such a lookup would hang the node's sudo.
    assert_eq!(root.one("dns").at("forwardPlainNames"), "no");
    let domain = root.one("domain");
    assert_eq!(domain.at("name"), "sno.example.test");
    assert_eq!(domain.at("localOnly"), "yes");

    let ip = root.one("ip");
    assert_eq!((ip.at("address"), ip.at("prefix")), ("192.168.126.1", "24"));
    let dhcp = ip.one("dhcp");
    assert_eq!(dhcp.one("range").at("start"), "192.168.126.100");
    assert_eq!(dhcp.one("range").at("end"), "192.168.126.199");
    let host = dhcp.one("host");
    assert_eq!(host.at("mac"), "52:54:00:aa:bb:cc");
    assert_eq!(host.at("name"), "master-0");
    assert_eq!(host.at("ip"), "192.168.126.10");

    let dns = root.one("dns").one("host");
    assert_eq!(dns.at("ip"), "192.168.126.10");
    let names: Vec<&str> = dns
        .all("hostname")
        .iter()
        .map(|h| h.text.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "api.sno.example.test",
            "api-int.sno.example.test",
            "console-openshift-console.apps.sno.example.test",
            "oauth-openshift.apps.sno.example.test",
            "canary-openshift-ingress-canary.apps.sno.example.test",
        ]
    );
    assert_eq!(root.at("xmlns:dnsmasq"), DNSMASQ_XMLNS);
    let opts: Vec<&str> = root
        .one("dnsmasq:options")
        .all("dnsmasq:option")
        .iter()
        .map(|o| o.at("value"))
        .collect();
    assert_eq!(opts, ["address=/apps.sno.example.test/192.168.126.10"]);
}

#[test]
fn the_nat_network_can_be_dual_stack() {
    let root = parse(&nat_network_xml(&nat(true)));
    let ips = root.all("ip");
    assert_eq!(ips.len(), 2);
    let v6 = ips[1];
    assert_eq!(v6.at("family"), "ipv6");
    assert_eq!((v6.at("address"), v6.at("prefix")), ("fd00:126::1", "64"));
    let host = v6.one("dhcp").one("host");
    assert!(host.attr("mac").is_none(), "no MAC in DHCPv6 hosts");
    assert_eq!(
        (host.at("name"), host.at("ip")),
        ("master-0", "fd00:126::10")
    );
    let dns: Vec<&str> = root
        .one("dns")
        .all("host")
        .iter()
        .map(|h| h.at("ip"))
        .collect();
    assert_eq!(dns, ["192.168.126.10", "fd00:126::10"]);
    assert_eq!(root.one("dnsmasq:options").all("dnsmasq:option").len(), 2);
}

#[test]
fn a_single_stack_ipv6_network_has_no_ipv4_and_names_the_cluster_in_aaaa_records() {
    let n = nat_ipv6_only();
    assert_eq!(n.node.address().to_string(), "fd00:126::10");
    let root = parse(&nat_network_xml(&n));
    let ips = root.all("ip");
    assert_eq!(ips.len(), 1, "no IPv4 <ip>");
    assert_eq!(ips[0].at("family"), "ipv6");
    assert_eq!(
        (ips[0].at("address"), ips[0].at("prefix")),
        ("fd00:126::1", "64")
    );
    let host = ips[0].one("dhcp").one("host");
    assert_eq!(host.at("ip"), "fd00:126::10");
    let dns = root.one("dns").one("host");
    assert_eq!(dns.at("ip"), "fd00:126::10");
    assert_eq!(dns.all("hostname")[0].text, "api.sno.example.test");
    let opts: Vec<&str> = root
        .one("dnsmasq:options")
        .all("dnsmasq:option")
        .iter()
        .map(|o| o.at("value"))
        .collect();
    assert_eq!(opts, ["address=/apps.sno.example.test/fd00:126::10"]);
    // The harness reaches a dual-stack node over IPv4.
    assert_eq!(nat(true).node.address().to_string(), "192.168.126.10");
}

#[test]
fn bridge_names_differ_for_runs_that_share_a_prefix() {
    let a = bridge_name("20261129-230000-000000000001");
    let b = bridge_name("20261129-230000-000000000002");
    assert_ne!(a, b);
    assert_eq!(a.len(), MAX_BRIDGE_NAME);
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()), "{a}");
}

// ----- libvirt's own schema.

/// Runs `virt-xml-validate FILE SCHEMA` on `xml`; fails the test with its output when libvirt's
/// schema rejects the document, and when the tool is missing (never a silent skip).
fn virt_xml_validate(xml: &str, schema: &str, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{what}.xml"));
    std::fs::write(&file, xml).unwrap();
    let out = match Command::new("virt-xml-validate")
        .arg(&file)
        .arg(schema)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "virt-xml-validate is not installed: install libvirt-clients (and libxml2-utils, for \
             xmllint), e.g. `apt-get install libvirt-clients libxml2-utils`, or run \
             ci/install-host-deps.sh"
        ),
        Err(e) => panic!("virt-xml-validate: {e}"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !(stderr.contains("xmllint") && stderr.contains("not found")),
        "virt-xml-validate needs xmllint: install libxml2-utils (ci/install-host-deps.sh does)"
    );
    assert!(
        out.status.success(),
        "libvirt's {schema} schema rejects the {what} XML ({}):\n{}{}\n--- XML ---\n{xml}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr,
    );
}

#[test]
fn on_a_libvirt_network_the_nic_is_an_interface_at_the_same_slot_and_mac_without_forwards() {
    let mut sp = spec();
    sp.nic = crate::vm::Nic::LibvirtNetwork {
        network: "sno-run-40022".into(),
    };
    let root = domain(&sp);
    let nic = root.one("devices").one("interface");
    assert_eq!(nic.at("type"), "network");
    assert_eq!(nic.one("source").at("network"), "sno-run-40022");
    assert_eq!(nic.one("mac").at("address"), NIC_MACS[0]);
    assert_eq!(nic.one("model").at("type"), "virtio");
    assert_eq!(pci(nic.one("address")), (plan::NET_SLOT, 0));
    // No user-mode NIC and no forwards; nothing else needs the passthrough here.
    assert!(root.opt("qemu:commandline").is_none());
    assert!(!domain_xml(&sp, &meta()).contains("hostfwd"));
    // With NVMe disks the passthrough stays, for them only.
    sp.disks = disks_on(&[Bus::Nvme]);
    let root = domain(&sp);
    assert!(passthrough(&root, "-netdev").is_empty());
    assert_eq!(passthrough(&root, "-device").len(), 1);
    assert!(root.one("devices").opt("interface").is_some());
}

#[test]
fn a_bonds_second_nic_is_a_second_interface_or_a_second_hub_port() {
    let mut sp = spec();
    sp.second_nic = true;
    sp.nic = crate::vm::Nic::LibvirtNetwork {
        network: "sno-run-40022".into(),
    };
    let xml = domain_xml(&sp, &meta());
    let root = domain(&sp);
    let nics: Vec<_> = root.one("devices").all("interface");
    assert_eq!(nics.len(), 2, "{xml}");
    for (i, nic) in nics.iter().enumerate() {
        assert_eq!(nic.one("source").at("network"), "sno-run-40022");
        assert_eq!(nic.one("mac").at("address"), NIC_MACS[i]);
        assert_eq!(nic.one("alias").at("name"), format!("ua-net{i}"));
    }
    assert_eq!(pci(nics[0].one("address")), (plan::NET_SLOT, 0));
    assert_eq!(pci(nics[1].one("address")), (plan::NET2_SLOT, 0));
    // On the user network: the QEMU backend's hub, through the passthrough.
    sp.nic = crate::vm::Nic::User;
    let root = domain(&sp);
    let cl = root.one("qemu:commandline");
    let args: Vec<&str> = cl.all("qemu:arg").iter().map(|a| a.at("value")).collect();
    let netdevs: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "-netdev")
        .map(|w| w[1])
        .collect();
    assert_eq!(netdevs.len(), 4, "{netdevs:?}");
    assert_eq!(netdevs[1], "hubport,id=hub0uplink,hubid=0,netdev=net0");
    let devices = passthrough(&root, "-device");
    let nic1 = devices
        .iter()
        .find(|d| d["netdev"] == "nic1")
        .expect("NIC 1 on hub port nic1");
    assert_eq!(nic1["mac"], NIC_MACS[1]);
    assert_eq!(nic1["addr"], format!("{:#04x}", plan::NET2_SLOT));
}

#[test]
fn virt_xml_validate_accepts_the_domains() {
    let mut bios_virtio = spec();
    bios_virtio.cdrom = None;
    let cases = [
        ("bios-virtio", bios_virtio),
        ("uefi-scsi4k-sata-cdrom", uefi_scsi_sata_cdrom()),
        ("nvme-kvm", nvme_kvm()),
        ("on-a-network", {
            let mut sp = spec();
            sp.nic = crate::vm::Nic::LibvirtNetwork {
                network: "sno-run-40022".into(),
            };
            sp
        }),
        ("all-buses-uefi", {
            let mut sp = uefi(spec());
            sp.disks = disks_on(&[Bus::Sata, Bus::Virtio, Bus::Scsi, Bus::Nvme]);
            sp
        }),
        ("every-io-option", io_everything()),
        ("secure-boot", {
            let mut sp = uefi(spec());
            sp.firmware = Firmware::UefiSecure;
            sp
        }),
        ("pxe-on-a-network", pxe_on_a_network()),
        ("bond-on-a-network", {
            let mut sp = spec();
            sp.second_nic = true;
            sp.nic = crate::vm::Nic::LibvirtNetwork {
                network: "sno-run-40022".into(),
            };
            sp
        }),
        ("multipath", crate::vm::qemu::argv::tests::multipath_spec()),
    ];
    for (what, sp) in cases {
        virt_xml_validate(&domain_xml(&sp, &meta()), "domain", what);
    }
}

#[test]
fn virt_xml_validate_accepts_the_networks() {
    virt_xml_validate(&nat_network_xml(&nat(false)), "network", "nat-ipv4");
    virt_xml_validate(&nat_network_xml(&nat(true)), "network", "nat-dual-stack");
    virt_xml_validate(&nat_network_xml(&nat_pxe(true)), "network", "nat-pxe");
    virt_xml_validate(&nat_network_xml(&nat_ipv6_only()), "network", "nat-ipv6");
}

/// A UEFI VM with a SATA install disk and the CD-ROM, the common SNO layout on SATA: the disk
/// on AHCI port 0. Prints the XML with `--nocapture`, for reading.
#[test]
fn sample_uefi_sata_cdrom_domain() {
    let mut sp = uefi(spec());
    sp.disks = vec![DiskSpec {
        id: "install".into(),
        path: PathBuf::from("/r/disks/install.qcow2"),
        format: "qcow2".into(),
        bus: Bus::Sata,
        sector: Sector::S512e,
        serial: Some("sno-install".into()),
        bootindex: Some(1),
        io: Default::default(),
        multipath_wwn: None,
    }];
    sp.cdrom = Some(CdromSpec {
        path: PathBuf::from("/r/live.iso"),
        bootindex: Some(2),
    });
    let xml = domain_xml(&sp, &meta());
    println!("{xml}");
    let root = parse(&xml);
    let disk = disk_by_alias(root.one("devices"), "ua-install");
    assert_eq!(drive(disk.one("address")), (0, 0, 0, 0));
}

#[test]
fn a_nat_network_is_laid_out_in_the_machine_network() {
    use super::network::from_machine_network;
    let n = from_machine_network(
        &["192.168.126.0/24".into(), "fd00:126::/64".into()],
        "sno",
        "example.test",
        meta(),
        "sno-x-1".into(),
    )
    .unwrap();
    assert_eq!(n.name, "sno-x-1");
    let v4 = n.ipv4.unwrap();
    assert_eq!(v4.host.to_string(), "192.168.126.1");
    assert_eq!(n.node.ipv4.unwrap().to_string(), "192.168.126.10");
    assert_eq!(v4.dhcp_start.to_string(), "192.168.126.100");
    assert_eq!(v4.dhcp_end.to_string(), "192.168.126.200");
    assert_eq!(n.node.ipv6.unwrap().to_string(), "fd00:126::10");
    assert_eq!(n.node.mac, NIC_MACS[0]);
    let xml = nat_network_xml(&n);
    assert!(xml.contains("api.sno.example.test"), "{xml}");
    for (cidrs, why) in [
        (vec!["10.0.2.0/25".to_string()], "from /8 to /24"),
        (vec![], "needs an IPv4 or IPv6 CIDR"),
        (vec!["10.0.2.0".to_string()], "not a CIDR"),
    ] {
        let e = from_machine_network(&cidrs, "sno", "example.test", meta(), "sno-x-1".into())
            .unwrap_err();
        assert!(e.contains(why), "{e}");
    }
    // Single-stack IPv6: no IPv4 anywhere, the node reached at ::10.
    let n = from_machine_network(
        &["fd00:1::/64".into()],
        "sno",
        "example.test",
        meta(),
        "sno-x-1".into(),
    )
    .unwrap();
    assert_eq!((n.ipv4, n.node.ipv4), (None, None));
    assert_eq!(n.ipv6.unwrap().host.to_string(), "fd00:1::1");
    assert_eq!(n.node.address().to_string(), "fd00:1::10");
}

#[test]
fn a_multipath_disk_is_two_shareable_disks_on_two_controllers_with_one_wwn() {
    let sp = crate::vm::qemu::argv::tests::multipath_spec();
    let root = domain(&sp);
    let devices = root.one("devices");
    let scsi: Vec<(String, (u8, u8))> = devices
        .all("controller")
        .into_iter()
        .filter(|c| c.at("type") == "scsi")
        .map(|c| (c.at("index").to_string(), pci(c.one("address"))))
        .collect();
    assert_eq!(
        scsi,
        [
            ("0".to_string(), (plan::SCSI_CONTROLLER_SLOT, 0)),
            ("1".to_string(), (plan::SCSI2_CONTROLLER_SLOT, 0))
        ]
    );
    for (n, controller) in [(0, 0), (1, 1)] {
        let d = disk_by_alias(devices, &format!("ua-install_path{n}"));
        assert_eq!(d.one("driver").at("type"), "raw");
        assert_eq!(d.one("source").at("file"), "/r/install.raw");
        assert!(d.opt("shareable").is_some());
        assert_eq!(d.one("wwn").text, "5a1b2c3d4e5f6071");
        assert_eq!(d.one("serial").text, "sno-install");
        assert_eq!(drive(d.one("address")), (controller, 0, 0, 0));
        assert_eq!(d.opt("boot").is_some(), n == 0, "only the first path boots");
    }
    // The second path alone, as detach and attach take it: the same element.
    let xml = super::domain::multipath_path_xml(&sp, 0, 1).unwrap();
    let alone = parse(&xml);
    assert_eq!(alone.name, "disk");
    assert_eq!(alone.one("alias").at("name"), "ua-install_path1");
    assert_eq!(alone.one("target").at("dev"), "sdb");
    assert_eq!(drive(alone.one("address")), (1, 0, 0, 0));
    assert!(super::domain::multipath_path_xml(&spec(), 0, 1).is_none());
    virt_xml_validate(
        &format!("<domain type='qemu'><name>x</name><memory>1</memory><os><type>hvm</type></os><devices>{xml}</devices></domain>"),
        "domain",
        "multipath-path",
    );
}
