//! The whole QEMU command line, built from a `VmSpec`. Nothing else in the harness adds
//! arguments, so `vm.txt` and this file together say exactly what ran.

use crate::util::socket_path;
use crate::vm::{DiskSpec, NetBootSpec, PortForward, VmSpec};

use crate::hw::{Accel, Bus, Throttle};

/// Size in MiB of TCG's translation cache. QEMU 7.2's default is 1 GiB. With a cache that
/// large, the first boot after a guest reset that follows a busy system (the live ISO after
/// `coreos-installer` has run) is several times slower: measured on this host, GRUB took 21-28 s
/// to load the kernel instead of 6 s and the initramfs unpacked in 2-12 s instead of 0.2 s,
/// putting the first disk boot at 50-56 s to SSH. With 64 MiB it is 24 s; the live boot and the
/// disk write are unchanged, and each VM's RSS is smaller.
pub const TCG_TB_SIZE_MIB: u32 = 64;

use crate::hw::guest_net::NIC_MACS;
use crate::hw::slots::{self as plan, DiskPlace, CDROM_AHCI_PORT};

/// A path as the value of a QEMU option: a comma doubled, as QEMU's option syntax requires
/// (a single one would end the value and start an option of the path's choosing).
fn opt_path(p: &std::path::Path) -> String {
    p.display().to_string().replace(',', ",,")
}

/// `bus=pcie.0,addr=0xSS`: a device's fixed place on q35's root bus.
fn pci_addr(slot: u8) -> String {
    format!("bus=pcie.0,addr={slot:#04x}")
}

pub fn qemu_argv(spec: &VmSpec) -> Vec<String> {
    build(spec, Console::Harness, None)
}

/// `qemu_argv` as the QEMU that is started gets it: a socket path too long for a socket
/// address goes through `socket_dir_fd`, the socket directory QEMU inherits open.
pub fn qemu_argv_started(spec: &VmSpec, socket_dir_fd: Option<i32>) -> Vec<String> {
    build(spec, Console::Harness, socket_dir_fd)
}

/// QEMU's user-mode network `net0` with each forward bound to the host's loopback only (the
/// guest must not be reachable from anywhere else), and for a PXE boot its TFTP root and the
/// boot file its DHCP names, and the hostname its DHCP gives. The libvirt backend passes the
/// same string.
pub fn user_netdev(
    forwards: &[PortForward],
    netboot: Option<&NetBootSpec>,
    hostname: Option<&str>,
) -> String {
    let fwds: String = forwards
        .iter()
        .map(|f| format!(",hostfwd=tcp:127.0.0.1:{}-:{}", f.host_port, f.guest_port))
        .collect();
    let boot = netboot
        .map(|n| {
            format!(
                ",tftp={},bootfile={}",
                opt_path(&n.tftp_dir),
                n.bootfile.replace(',', ",,")
            )
        })
        .unwrap_or_default();
    // A hostname is validated as a DNS label upstream (the cluster's name): no comma to double.
    let name = hostname
        .map(|h| format!(",hostname={}", h.replace(',', ",,")))
        .unwrap_or_default();
    format!("user,id=net0{fwds}{boot}{name}")
}

/// The same VM for a person at a terminal (`--keep`): the serial console and QEMU's monitor on
/// stdio (Ctrl-a x quits, Ctrl-a c switches to the monitor), no QMP socket, no socket for the
/// harness to attach to first. Disks, firmware, vars, forwards and boot order are the run's.
pub fn interactive_argv(spec: &VmSpec) -> Vec<String> {
    build(spec, Console::Terminal, None)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Console {
    /// Serial on a Unix socket the harness reads; QMP on another.
    Harness,
    /// Serial and monitor multiplexed on stdio.
    Terminal,
}

/// The command line, option by option: the machine, its firmware, the consoles, the devices,
/// the disks and the CD-ROM, in that order.
fn build(spec: &VmSpec, console: Console, socket_dir_fd: Option<i32>) -> Vec<String> {
    let mut a = Args::default();
    machine(&mut a, spec);
    firmware(&mut a, spec);
    a.push(&["-device", &format!("VGA,{}", pci_addr(plan::VGA_SLOT))]);
    consoles(&mut a, spec, console, socket_dir_fd);
    devices(&mut a, spec);
    disks(&mut a, spec);
    cdrom(&mut a, spec);
    a.0
}

/// The arguments so far.
#[derive(Default)]
struct Args(Vec<String>);

impl Args {
    fn push(&mut self, items: &[&str]) {
        self.0.extend(items.iter().map(|s| s.to_string()));
    }
}

/// Name, machine type, accelerator, CPU, memory, vCPUs and clock.
fn machine(a: &mut Args, spec: &VmSpec) {
    a.push(&["-name", &format!("guest={},debug-threads=on", spec.name)]);
    a.push(&["-nodefaults", "-no-user-config", "-display", "none"]);
    // q35 for every firmware: one machine, one AHCI controller for SATA disks and the CD-ROM.
    // OVMF's Secure Boot build keeps its variables behind SMM: the machine needs it.
    let q35 = if spec.firmware.secure_boot() {
        "q35,smm=on"
    } else {
        "q35"
    };
    match spec.accel {
        Accel::Kvm => a.push(&["-machine", q35, "-accel", "kvm", "-cpu", "host"]),
        Accel::Tcg => a.push(&[
            "-machine",
            q35,
            "-accel",
            &format!("tcg,thread=multi,tb-size={TCG_TB_SIZE_MIB}"),
            "-cpu",
            "max",
        ]),
    }
    a.push(&[
        "-m",
        &spec.memory_mib.to_string(),
        "-smp",
        &spec.vcpus.to_string(),
    ]);
    a.push(&["-rtc", "base=utc"]);
}

/// OVMF's code (read-only, shared) and the VM's own variable store, for UEFI; nothing for
/// SeaBIOS, QEMU's default. Under Secure Boot the flash is marked secure, so that only the
/// firmware's SMM code can write the variables (its keys among them), as the OVMF README asks
/// of its SMM builds and as libvirt does for `<loader secure='yes'>`.
fn firmware(a: &mut Args, spec: &VmSpec) {
    let Some(code) = spec.firmware.ovmf_code() else {
        return;
    };
    let vars = spec
        .uefi_vars
        .as_ref()
        .expect("a UEFI VmSpec carries its variable store");
    if spec.firmware.secure_boot() {
        a.push(&["-global", "driver=cfi.pflash01,property=secure,value=on"]);
    }
    a.push(&[
        "-drive",
        &format!("if=pflash,format=raw,unit=0,readonly=on,file={code}"),
        "-drive",
        &format!("if=pflash,format=raw,unit=1,file={}", opt_path(vars)),
    ]);
}

/// The serial console, and QMP when the harness drives the VM.
fn consoles(a: &mut Args, spec: &VmSpec, console: Console, socket_dir_fd: Option<i32>) {
    match console {
        Console::Harness => a.push(&[
            "-chardev",
            &format!(
                "socket,id=serial0,path={},server=on,wait=on",
                opt_path(&socket_path::for_qemu(&spec.serial_socket, socket_dir_fd))
            ),
            "-serial",
            "chardev:serial0",
        ]),
        Console::Terminal => a.push(&["-serial", "mon:stdio"]),
    }
    if let (Some(qmp), Console::Harness) = (&spec.qmp_socket, console) {
        a.push(&[
            "-chardev",
            &format!(
                "socket,id=qmp0,path={},server=on,wait=off",
                opt_path(&socket_path::for_qemu(qmp, socket_dir_fd))
            ),
            "-mon",
            "chardev=qmp0,mode=control",
        ]);
    }
}

/// The network, the random number source, pvpanic, and the SCSI controller when a disk is on
/// SCSI.
fn devices(a: &mut Args, spec: &VmSpec) {
    a.push(&[
        "-netdev",
        &user_netdev(
            &spec.forwards,
            spec.netboot.as_ref(),
            spec.dhcp_hostname.as_deref(),
        ),
    ]);
    for (option, value) in nic_args(spec) {
        a.push(&[option, &value]);
    }
    a.push(&["-object", "rng-random,id=rng0,filename=/dev/urandom"]);
    a.push(&[
        "-device",
        &format!("virtio-rng-pci,{},rng=rng0", pci_addr(plan::RNG_SLOT)),
    ]);
    a.push(&["-device", "pvpanic"]);
    if spec.disks.iter().any(|d| d.bus == Bus::Scsi) {
        a.push(&[
            "-device",
            &format!(
                "virtio-scsi-pci,{},id=scsi0",
                pci_addr(plan::SCSI_CONTROLLER_SLOT)
            ),
        ]);
    }
    if spec.disks.iter().any(|d| d.multipath_wwn.is_some()) {
        a.push(&[
            "-device",
            &format!(
                "virtio-scsi-pci,{},id=scsi1",
                pci_addr(plan::SCSI2_CONTROLLER_SLOT)
            ),
        ]);
    }
}

/// Each disk: its drive (the image and how it is accessed) and its device, where the plan
/// places it.
fn disks(a: &mut Args, spec: &VmSpec) {
    let buses: Vec<Bus> = spec.disks.iter().map(|d| d.bus).collect();
    for (i, d) in spec.disks.iter().enumerate() {
        if let Some(path) = MultipathPath::of(spec, i, 0) {
            multipath_disk(a, d, path);
            continue;
        }
        a.push(&[
            "-drive",
            &format!(
                // cache=unsafe by default: guest flushes are not forced to the host's disk.
                // Runs are throw-away, and forced flushes under TCG cost seconds per fsync; the
                // guest still sees every write (QMP counts them), so throughput stays
                // comparable. A scenario asks for another mode (and aio) to measure realistic
                // throughput.
                "file={},format={},if=none,id={},discard=unmap,cache={},aio={}{}",
                opt_path(&d.path),
                d.format,
                d.id,
                d.io.cache.name(),
                d.io.aio.name(),
                throttling(d.io.throttle.as_ref())
            ),
        ]);
        a.push(&["-device", &disk_device(d, plan::place(&buses, i))]);
    }
}

/// A multipath disk: its image once, as a file node and a format node, and on that node one
/// `scsi-hd` per path, each on its own virtio-scsi controller at the disk's target, all with the
/// same WWN and serial, as kola gives QEMU a multipath disk. A `-drive` attaches to one device
/// only; a node attaches to several (`share-rw`), so every path sees every write at once. The
/// cache mode is split as `-drive cache=` splits it: the nodes' `cache.direct` and
/// `cache.no-flush`, the device's `write-cache`.
fn multipath_disk(a: &mut Args, d: &DiskSpec, first: MultipathPath) {
    let cache = format!(
        "cache.direct={},cache.no-flush={}",
        on_off(d.io.cache.direct()),
        on_off(d.io.cache.no_flush())
    );
    a.push(&[
        "-blockdev",
        &format!(
            "driver=file,filename={},node-name={},discard=unmap,{cache},aio={}",
            opt_path(&d.path),
            first.file_node(),
            d.io.aio.name()
        ),
        "-blockdev",
        &format!(
            "driver={},file={},node-name={},discard=unmap,{cache}",
            d.format,
            first.file_node(),
            first.node()
        ),
    ]);
    for n in 0..crate::hw::multipath::PATHS {
        let path = MultipathPath {
            n,
            bootindex: first.bootindex.filter(|_| n == 0),
            ..first.clone()
        };
        a.push(&["-device", &path.device_args()]);
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// One path of a multipath disk: a `scsi-hd` on controller `scsi<n>` at the disk's target,
/// on the disk's format node. The command line has one per path; QMP's `device_add` restores
/// a removed one from the same fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultipathPath {
    /// The disk's index in the VmSpec (its nodes are named by it: node names are limited to
    /// 31 characters, disk ids are not).
    pub index: usize,
    pub n: u8,
    pub disk_id: String,
    pub target: u8,
    pub wwn: u64,
    pub serial: String,
    pub logical: u32,
    pub physical: u32,
    pub write_cache: bool,
    pub bootindex: Option<u32>,
}

impl MultipathPath {
    /// Path `n` of disk `index` of `spec`, if that disk is multipath.
    pub fn of(spec: &VmSpec, index: usize, n: u8) -> Option<MultipathPath> {
        let d = spec.disks.get(index)?;
        let wwn = d.multipath_wwn?;
        let buses: Vec<Bus> = spec.disks.iter().map(|d| d.bus).collect();
        let DiskPlace::Scsi { target } = plan::place(&buses, index) else {
            return None;
        };
        Some(MultipathPath {
            index,
            n,
            disk_id: d.id.clone(),
            target,
            wwn,
            serial: d.serial.clone().unwrap_or_else(|| d.id.clone()),
            logical: d.sector.logical(),
            physical: d.sector.physical(),
            write_cache: d.io.cache.guest_write_cache(),
            // The firmware boots from the first path; the second has no place in the order.
            bootindex: d.bootindex.filter(|_| n == 0),
        })
    }

    pub fn file_node(&self) -> String {
        format!("sno-mpath{}-file", self.index)
    }

    pub fn node(&self) -> String {
        format!("sno-mpath{}", self.index)
    }

    /// The device id: `hw::multipath::path_device_id`.
    pub fn device_id(&self) -> String {
        crate::hw::multipath::path_device_id(&self.disk_id, self.n)
    }

    /// The `-device` value.
    pub fn device_args(&self) -> String {
        let mut dev = format!(
            "scsi-hd,bus=scsi{}.0,channel=0,scsi-id={},lun=0,drive={},share-rw=on,id={},wwn={:#018x},serial={},logical_block_size={},physical_block_size={},write-cache={}",
            self.n,
            self.target,
            self.node(),
            self.device_id(),
            self.wwn,
            self.serial,
            self.logical,
            self.physical,
            on_off(self.write_cache)
        );
        if let Some(b) = self.bootindex {
            dev.push_str(&format!(",bootindex={b}"));
        }
        dev
    }

    /// QMP `device_add`'s arguments for the same device, typed as QMP wants them.
    pub fn device_add_arguments(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::json!({
            "driver": "scsi-hd",
            "bus": format!("scsi{}.0", self.n),
            "channel": 0,
            "scsi-id": self.target,
            "lun": 0,
            "drive": self.node(),
            "share-rw": true,
            "id": self.device_id(),
            "wwn": self.wwn,
            "serial": self.serial,
            "logical_block_size": self.logical,
            "physical_block_size": self.physical,
            "write-cache": on_off(self.write_cache),
        });
        if let (Some(b), Some(o)) = (self.bootindex, m.as_object_mut()) {
            o.insert("bootindex".into(), b.into());
        }
        match m {
            serde_json::Value::Object(o) => o,
            _ => unreachable!("a JSON object literal"),
        }
    }
}

/// A disk's `-device`: the device of its bus at its place, its sectors, serial and boot order.
fn disk_device(d: &DiskSpec, place: DiskPlace) -> String {
    let mut dev = match place {
        DiskPlace::Virtio { slot } => format!("virtio-blk-pci,{},drive={}", pci_addr(slot), d.id),
        DiskPlace::Nvme { slot } => format!("nvme,{},drive={}", pci_addr(slot), d.id),
        DiskPlace::Scsi { target } => format!(
            "scsi-hd,bus=scsi0.0,channel=0,scsi-id={target},lun=0,drive={}",
            d.id
        ),
        DiskPlace::Sata { port } => format!("ide-hd,bus=ide.{port},drive={}", d.id),
    };
    dev.push_str(&format!(
        ",logical_block_size={},physical_block_size={}",
        d.sector.logical(),
        d.sector.physical()
    ));
    // NVMe needs a serial; default to the drive id as QEMU users usually do.
    let serial = d
        .serial
        .clone()
        .or_else(|| matches!(place, DiskPlace::Nvme { .. }).then(|| d.id.clone()));
    if let Some(s) = serial {
        dev.push_str(&format!(",serial={s}"));
    }
    if let Some(b) = d.bootindex {
        dev.push_str(&format!(",bootindex={b}"));
    }
    dev
}

/// The live ISO, read-only on its AHCI port, when the VM has one.
fn cdrom(a: &mut Args, spec: &VmSpec) {
    let Some(cd) = &spec.cdrom else { return };
    a.push(&[
        "-drive",
        &format!(
            "file={},format=raw,if=none,id=cdrom0,media=cdrom,readonly=on",
            opt_path(&cd.path)
        ),
    ]);
    let mut dev = format!("ide-cd,bus=ide.{CDROM_AHCI_PORT},drive=cdrom0");
    if let Some(b) = cd.bootindex {
        dev.push_str(&format!(",bootindex={b}"));
    }
    a.push(&["-device", &dev]);
}

/// The virtio NICs at their planned slots as QEMU options (`-device`, and `-netdev` for each
/// hub port), after the user network's own `-netdev`. NIC 0 has NIC_MACS[0] (QEMU's default
/// for it, written out so that the keyfiles and libvirt name the same one) and is in the boot
/// order when the machine boots from it. With a second NIC (a bond's other port), both are
/// ports of QEMU's hub 0, whose uplink is the user network: a user netdev takes one peer
/// only, and a hub repeats every frame to each port, as a switch would to two ports of one
/// segment.
pub(crate) fn nic_args(spec: &VmSpec) -> Vec<(&'static str, String)> {
    let boot = spec
        .netboot
        .as_ref()
        .map(|n| format!(",bootindex={}", n.bootindex))
        .unwrap_or_default();
    let device = |slot: u8, netdev: &str, mac: &str, boot: &str| {
        format!(
            "virtio-net-pci,{},netdev={netdev},mac={mac}{boot}",
            pci_addr(slot)
        )
    };
    if !spec.second_nic {
        return vec![(
            "-device",
            device(plan::NET_SLOT, "net0", NIC_MACS[0], &boot),
        )];
    }
    vec![
        (
            "-netdev",
            format!("hubport,id={HUB_UPLINK},hubid=0,netdev=net0"),
        ),
        ("-netdev", "hubport,id=nic0,hubid=0".into()),
        (
            "-device",
            device(plan::NET_SLOT, "nic0", NIC_MACS[0], &boot),
        ),
        ("-netdev", "hubport,id=nic1,hubid=0".into()),
        ("-device", device(plan::NET2_SLOT, "nic1", NIC_MACS[1], "")),
    ]
}

/// The hub port that joins the user network to the NICs' hub.
const HUB_UPLINK: &str = "hub0uplink";

/// QEMU 7.2's legacy `-drive` throttling options of a disk's limits (reads and writes
/// together), each after a comma; empty without limits.
fn throttling(t: Option<&Throttle>) -> String {
    let Some(t) = t else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(b) = t.bytes_per_s {
        out.push_str(&format!(",throttling.bps-total={b}"));
    }
    if let Some(i) = t.iops {
        out.push_str(&format!(",throttling.iops-total={i}"));
    }
    out
}

/// The command line as a shell command, one option and its value per line.
pub fn shell_command_line(argv: &[String]) -> String {
    let mut lines = vec![super::QEMU_BINARY.to_string()];
    let mut i = 0;
    while i < argv.len() {
        let opt = shell_quote(&argv[i]);
        match argv.get(i + 1) {
            Some(v) if !v.starts_with('-') => {
                lines.push(format!("{opt} {}", shell_quote(v)));
                i += 2;
            }
            _ => {
                lines.push(opt);
                i += 1;
            }
        }
    }
    lines.join(" \\\n    ")
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_=,.:/+@[]".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::hw::{AioMode, CacheMode, DiskIo, Firmware, Sector, OVMF_CODE, OVMF_CODE_SECBOOT};
    use crate::vm::{CdromSpec, DiskSpec, PortForward};
    use std::path::PathBuf;

    pub(crate) fn spec() -> VmSpec {
        VmSpec {
            name: "t".into(),
            vcpus: 2,
            memory_mib: 2048,
            firmware: Firmware::Bios,
            accel: Accel::Tcg,
            disks: vec![DiskSpec {
                id: "install".into(),
                path: PathBuf::from("/r/install.qcow2"),
                format: "qcow2".into(),
                bus: Bus::Virtio,
                sector: Sector::S512,
                serial: Some("sno-install".into()),
                bootindex: Some(1),
                io: Default::default(),
                multipath_wwn: None,
            }],
            cdrom: Some(CdromSpec {
                path: PathBuf::from("/r/live.iso"),
                bootindex: Some(2),
            }),
            uefi_vars: None,
            serial_socket: PathBuf::from("/r/serial.sock"),
            qmp_socket: Some(PathBuf::from("/r/qmp.sock")),
            forwards: vec![PortForward {
                host_port: 40022,
                guest_port: 22,
            }],
            nic: Default::default(),
            netboot: None,
            dhcp_hostname: Some("sno-master-0".into()),
            second_nic: false,
        }
    }

    fn joined(spec: &VmSpec) -> String {
        qemu_argv(spec).join(" ")
    }

    #[test]
    fn boot_order_is_per_device_and_never_mixed_with_boot_order() {
        let s = joined(&spec());
        assert!(s.contains("virtio-blk-pci,bus=pcie.0,addr=0x08,drive=install,logical_block_size=512,physical_block_size=512,serial=sno-install,bootindex=1"), "{s}");
        assert!(
            s.contains("ide-cd,bus=ide.5,drive=cdrom0,bootindex=2"),
            "{s}"
        );
        assert!(!s.contains("-boot"), "{s}");
    }

    #[test]
    fn a_pxe_machine_has_no_cd_rom_its_nic_is_second_in_the_boot_order_and_tftp_serves_the_script()
    {
        let mut sp = spec();
        sp.cdrom = None;
        sp.netboot = Some(crate::vm::NetBootSpec {
            tftp_dir: PathBuf::from("/r/a,b/tftp"),
            bootfile: "boot.ipxe".into(),
            bootindex: 2,
        });
        let s = joined(&sp);
        assert!(!s.contains("cdrom0"), "{s}");
        assert!(s.contains(",tftp=/r/a,,b/tftp,bootfile=boot.ipxe"), "{s}");
        assert!(
            s.contains(
                "virtio-net-pci,bus=pcie.0,addr=0x02,netdev=net0,mac=52:54:00:12:34:56,bootindex=2"
            ),
            "{s}"
        );
        assert!(s.contains("bootindex=1"), "{s}");
        assert!(!joined(&spec()).contains("tftp="));
    }

    #[test]
    fn a_comma_in_a_path_is_doubled_so_it_cannot_start_an_option() {
        let mut s = spec();
        let dir = PathBuf::from("/r/x,readonly=off,file=/etc");
        s.disks[0].path = dir.join("install.qcow2");
        s.cdrom.as_mut().unwrap().path = dir.join("live.iso");
        s.serial_socket = dir.join("serial.sock");
        s.qmp_socket = Some(dir.join("qmp.sock"));
        let a = qemu_argv(&s);
        let doubled = "/r/x,,readonly=off,,file=/etc/";
        for (opt, val) in [
            (
                "-drive",
                format!("file={doubled}install.qcow2,format=qcow2,if=none,id=install,"),
            ),
            ("-drive", format!("file={doubled}live.iso,format=raw,")),
            (
                "-chardev",
                format!("socket,id=serial0,path={doubled}serial.sock,server=on"),
            ),
            (
                "-chardev",
                format!("socket,id=qmp0,path={doubled}qmp.sock,server=on"),
            ),
        ] {
            assert!(
                a.windows(2).any(|w| w[0] == opt && w[1].starts_with(&val)),
                "{val}: {a:?}"
            );
        }
        assert!(!a.iter().any(|x| x.contains("/r/x,readonly")), "{a:?}");
    }

    #[test]
    fn qmp_monitor_listens_without_waiting_only_when_asked() {
        let a = qemu_argv(&spec());
        let i = a.iter().position(|x| x == "-mon").expect("a -mon");
        assert_eq!(a[i + 1], "chardev=qmp0,mode=control");
        assert!(
            a.windows(2).any(|w| w[0] == "-chardev"
                && w[1] == "socket,id=qmp0,path=/r/qmp.sock,server=on,wait=off"),
            "{a:?}"
        );
        // The serial console, which QEMU waits for, comes first.
        let serial = a.iter().position(|x| x.contains("id=serial0")).unwrap();
        let qmp = a.iter().position(|x| x.contains("id=qmp0")).unwrap();
        assert!(serial < qmp, "{a:?}");
        assert!(a.iter().any(|x| x == "pvpanic"), "{a:?}");

        let mut sp = spec();
        sp.qmp_socket = None;
        let s = joined(&sp);
        assert!(!s.contains("qmp0") && !s.contains("-mon"), "{s}");
    }

    #[test]
    fn the_interactive_command_line_boots_the_same_vm_with_the_console_on_stdio() {
        let harness = qemu_argv(&spec());
        let person = interactive_argv(&spec());
        let s = person.join(" ");
        assert!(!s.contains("socket"), "no socket chardevs: {s}");
        assert!(!s.contains("-mon"), "{s}");
        assert!(s.contains("-serial mon:stdio"), "{s}");
        // Everything else is the run's VM, option for option.
        let strip = |a: &[String]| -> Vec<String> {
            let mut out = Vec::new();
            let mut i = 0;
            while i < a.len() {
                let console = matches!(a[i].as_str(), "-chardev" | "-serial" | "-mon");
                if !console {
                    out.push(a[i].clone());
                }
                i += if console { 2 } else { 1 };
            }
            out
        };
        assert_eq!(strip(&harness), strip(&person));
        assert!(
            s.contains("bootindex=1") && s.contains("file=/r/install.qcow2"),
            "{s}"
        );
    }

    #[test]
    fn the_user_networks_dhcp_names_the_node_unless_told_not_to() {
        assert!(joined(&spec())
            .contains("user,id=net0,hostfwd=tcp:127.0.0.1:40022-:22,hostname=sno-master-0"));
        let nameless = VmSpec {
            dhcp_hostname: None,
            ..spec()
        };
        assert!(!joined(&nameless).contains("hostname="));
    }

    #[test]
    fn a_bond_gets_two_nics_on_one_hub_whose_uplink_is_the_user_network() {
        let one = qemu_argv(&spec());
        assert!(!one.iter().any(|a| a.contains("hubport")), "{one:?}");
        let sp = VmSpec {
            second_nic: true,
            ..spec()
        };
        let argv = qemu_argv(&sp);
        let after = |opt: &str| -> Vec<&str> {
            argv.windows(2)
                .filter(|w| w[0] == opt)
                .map(|w| w[1].as_str())
                .collect()
        };
        let netdevs = after("-netdev");
        assert!(netdevs[0].starts_with("user,id=net0,"), "{netdevs:?}");
        assert_eq!(
            &netdevs[1..],
            [
                "hubport,id=hub0uplink,hubid=0,netdev=net0",
                "hubport,id=nic0,hubid=0",
                "hubport,id=nic1,hubid=0"
            ]
        );
        let nics: Vec<&str> = after("-device")
            .into_iter()
            .filter(|d| d.starts_with("virtio-net-pci"))
            .collect();
        assert_eq!(
            nics,
            [
                "virtio-net-pci,bus=pcie.0,addr=0x02,netdev=nic0,mac=52:54:00:12:34:56",
                "virtio-net-pci,bus=pcie.0,addr=0x05,netdev=nic1,mac=52:54:00:12:34:57"
            ]
        );
    }

    #[test]
    fn forwards_bind_loopback_only() {
        let s = joined(&spec());
        assert!(s.contains("hostfwd=tcp:127.0.0.1:40022-:22"), "{s}");
    }

    #[test]
    fn every_bus_and_sector_size_maps_to_its_device() {
        let mut sp = spec();
        sp.disks = disks_on(&Bus::ALL);
        for d in &mut sp.disks {
            d.sector = if d.bus == Bus::Sata {
                Sector::S512e
            } else {
                Sector::S4k
            };
        }
        let s = joined(&sp);
        assert!(
            s.contains("virtio-scsi-pci,bus=pcie.0,addr=0x04,id=scsi0"),
            "{s}"
        );
        assert!(
            s.contains("virtio-blk-pci,bus=pcie.0,addr=0x08,drive=d0,logical_block_size=4096,physical_block_size=4096"),
            "{s}"
        );
        assert!(
            s.contains(
                "scsi-hd,bus=scsi0.0,channel=0,scsi-id=0,lun=0,drive=d1,logical_block_size=4096"
            ),
            "{s}"
        );
        assert!(
            s.contains("nvme,bus=pcie.0,addr=0x09,drive=d2,logical_block_size=4096,physical_block_size=4096,serial=d2"),
            "{s}"
        );
        assert!(
            s.contains("ide-hd,bus=ide.0,drive=d3,logical_block_size=512,physical_block_size=4096"),
            "{s}"
        );
    }

    /// The `-drive` value of disk `id`.
    fn drive_of(sp: &VmSpec, id: &str) -> String {
        let a = qemu_argv(sp);
        a.windows(2)
            .find(|w| w[0] == "-drive" && w[1].contains(&format!(",id={id},")))
            .map(|w| w[1].clone())
            .unwrap_or_else(|| panic!("no -drive for {id}: {a:?}"))
    }

    #[test]
    fn disks_default_to_unsafe_cache_threads_and_no_throttling() {
        let d = drive_of(&spec(), "install");
        assert_eq!(
            d,
            "file=/r/install.qcow2,format=qcow2,if=none,id=install,discard=unmap,cache=unsafe,aio=threads"
        );
        assert!(!d.contains("throttling"), "{d}");
    }

    #[test]
    fn each_cache_mode_and_aio_is_passed_to_the_drive() {
        for cache in CacheMode::ALL {
            for aio in AioMode::ALL {
                let mut sp = spec();
                sp.disks[0].io = DiskIo {
                    cache,
                    aio,
                    throttle: None,
                };
                let d = drive_of(&sp, "install");
                assert!(
                    d.ends_with(&format!(
                        ",discard=unmap,cache={},aio={}",
                        cache.name(),
                        aio.name()
                    )),
                    "{d}"
                );
            }
        }
        let mut sp = spec();
        sp.disks[0].io.cache = CacheMode::Directsync;
        sp.disks[0].io.aio = AioMode::IoUring;
        assert!(drive_of(&sp, "install").ends_with(",cache=directsync,aio=io_uring"));
        sp.disks[0].io.cache = CacheMode::None;
        sp.disks[0].io.aio = AioMode::Native;
        assert!(drive_of(&sp, "install").ends_with(",cache=none,aio=native"));
        sp.disks[0].io.cache = CacheMode::Writeback;
        assert!(drive_of(&sp, "install").contains(",cache=writeback,"));
    }

    #[test]
    fn a_throttle_becomes_the_legacy_drive_throttling_options() {
        let mut sp = spec();
        sp.disks[0].io.throttle = Some(Throttle {
            bytes_per_s: Some(8 << 20),
            iops: Some(500),
        });
        let d = drive_of(&sp, "install");
        assert!(
            d.ends_with(
                ",cache=unsafe,aio=threads,throttling.bps-total=8388608,throttling.iops-total=500"
            ),
            "{d}"
        );
        sp.disks[0].io.throttle = Some(Throttle {
            bytes_per_s: Some(20 << 20),
            iops: None,
        });
        let d = drive_of(&sp, "install");
        assert!(d.ends_with(",throttling.bps-total=20971520"), "{d}");
        assert!(!d.contains("iops"), "{d}");
        sp.disks[0].io.throttle = Some(Throttle {
            bytes_per_s: None,
            iops: Some(100),
        });
        let d = drive_of(&sp, "install");
        assert!(d.ends_with(",aio=threads,throttling.iops-total=100"), "{d}");
        assert!(!d.contains("bps"), "{d}");
        // Only the throttled disk is limited; the device line is the same as without.
        let mut two = spec();
        two.disks = disks_on(&[Bus::Nvme, Bus::Sata]);
        two.disks[1].io.throttle = Some(Throttle {
            bytes_per_s: Some(1 << 20),
            iops: None,
        });
        assert!(!drive_of(&two, "d0").contains("throttling"));
        assert!(drive_of(&two, "d1").contains("throttling.bps-total=1048576"));
        let s = joined(&two);
        assert!(
            s.contains("ide-hd,bus=ide.0,drive=d1,logical_block_size=512"),
            "{s}"
        );
    }

    pub(crate) fn disks_on(buses: &[Bus]) -> Vec<DiskSpec> {
        buses
            .iter()
            .enumerate()
            .map(|(i, bus)| DiskSpec {
                id: format!("d{i}"),
                path: PathBuf::from(format!("/r/d{i}.qcow2")),
                format: "qcow2".into(),
                bus: *bus,
                sector: Sector::S512,
                serial: None,
                bootindex: None,
                io: Default::default(),
                multipath_wwn: None,
            })
            .collect()
    }

    /// The `-device` values of a command line, in order.
    fn devices(a: &[String]) -> Vec<&str> {
        a.windows(2)
            .filter(|w| w[0] == "-device")
            .map(|w| w[1].as_str())
            .collect()
    }

    /// The MAC is written out, not left to QEMU: keyfiles match NIC 0 by it.
    #[test]
    fn the_nic_has_nic_0s_mac() {
        let a = qemu_argv(&spec());
        let nics: Vec<&str> = devices(&a)
            .into_iter()
            .filter(|d| d.starts_with("virtio-net-pci,"))
            .collect();
        assert_eq!(nics.len(), 1, "{nics:?}");
        assert!(
            nics[0].contains(&format!(",mac={},", NIC_MACS[0]))
                || nics[0].ends_with(&format!(",mac={}", NIC_MACS[0])),
            "{nics:?}"
        );
    }

    #[test]
    fn every_pci_device_has_its_slot_from_the_plan() {
        use Bus::*;
        let buses = [Sata, Virtio, Scsi, Nvme, Virtio, Scsi, Sata, Nvme];
        let mut sp = spec();
        sp.disks = disks_on(&buses);
        let a = qemu_argv(&sp);
        let dev = devices(&a);
        let at = |slot: &str| -> Vec<&str> {
            dev.iter()
                .filter(|d| {
                    d.split(',')
                        .collect::<Vec<_>>()
                        .windows(2)
                        .any(|w| w[0] == "bus=pcie.0" && w[1] == format!("addr={slot}"))
                })
                .map(|d| d.split(',').next().unwrap())
                .collect()
        };
        assert_eq!(at("0x01"), ["VGA"]);
        assert_eq!(at("0x02"), ["virtio-net-pci"]);
        assert_eq!(at("0x03"), ["virtio-rng-pci"]);
        assert_eq!(at("0x04"), ["virtio-scsi-pci"]);
        // virtio-blk and NVMe disks from 0x08 up, in the order of the disks.
        assert_eq!(at("0x08"), ["virtio-blk-pci"]);
        assert_eq!(at("0x09"), ["nvme"]);
        assert_eq!(at("0x0a"), ["virtio-blk-pci"]);
        assert_eq!(at("0x0b"), ["nvme"]);
        // Every PCI device has an address; the others are on the SCSI, AHCI or ISA bus.
        for d in &dev {
            let pci = d.contains("-pci,") || d.starts_with("VGA,") || d.starts_with("nvme,");
            assert_eq!(pci, d.contains(",bus=pcie.0,addr=0x"), "{d}");
        }
        assert!(dev.contains(&"pvpanic"), "{dev:?}");
        // SCSI disks are targets 0, 1, ... at LUN 0; SATA disks take AHCI ports from 0 up.
        let s = a.join(" ");
        assert!(
            s.contains("scsi-hd,bus=scsi0.0,channel=0,scsi-id=0,lun=0,drive=d2,"),
            "{s}"
        );
        assert!(
            s.contains("scsi-hd,bus=scsi0.0,channel=0,scsi-id=1,lun=0,drive=d5,"),
            "{s}"
        );
        assert!(s.contains("ide-hd,bus=ide.0,drive=d0,"), "{s}");
        assert!(s.contains("ide-hd,bus=ide.1,drive=d6,"), "{s}");
        assert!(s.contains("ide-cd,bus=ide.5,drive=cdrom0"), "{s}");
        // The command line places each disk where the plan says (what by-path links rely on).
        let places: Vec<DiskPlace> = (0..buses.len())
            .map(|i| plan::disk_place(&buses, i).unwrap())
            .collect();
        assert_eq!(
            places,
            [
                DiskPlace::Sata { port: 0 },
                DiskPlace::Virtio { slot: 0x08 },
                DiskPlace::Scsi { target: 0 },
                DiskPlace::Nvme { slot: 0x09 },
                DiskPlace::Virtio { slot: 0x0a },
                DiskPlace::Scsi { target: 1 },
                DiskPlace::Sata { port: 1 },
                DiskPlace::Nvme { slot: 0x0b },
            ]
        );
    }

    #[test]
    fn the_plan_has_room_for_23_pci_disks_and_5_sata_disks() {
        let pci: Vec<Bus> = (0..24)
            .map(|i| if i % 2 == 0 { Bus::Virtio } else { Bus::Nvme })
            .collect();
        assert_eq!(
            plan::disk_place(&pci, 22),
            Ok(DiskPlace::Virtio { slot: 0x1e })
        );
        assert!(plan::disk_place(&pci, 23).is_err());
        let sata = [Bus::Sata; 6];
        assert_eq!(plan::disk_place(&sata, 4), Ok(DiskPlace::Sata { port: 4 }));
        let e = plan::disk_place(&sata, 5).unwrap_err().to_string();
        assert!(e.contains("5 AHCI ports"), "{e}");
        let scsi = vec![Bus::Scsi; 257];
        assert_eq!(
            plan::disk_place(&scsi, 255),
            Ok(DiskPlace::Scsi { target: 255 })
        );
        assert!(plan::disk_place(&scsi, 256).is_err());
    }

    #[test]
    fn uefi_uses_readonly_code_and_the_per_vm_vars_copy() {
        let mut sp = spec();
        sp.firmware = Firmware::Uefi;
        sp.uefi_vars = Some(PathBuf::from("/r/OVMF_VARS.fd"));
        let s = joined(&sp);
        assert!(s.contains(&format!("unit=0,readonly=on,file={OVMF_CODE}")));
        assert!(s.contains("unit=1,file=/r/OVMF_VARS.fd"));
        assert!(s.contains("-machine q35 ") && !s.contains("smm") && !s.contains("secure"));
    }

    #[test]
    fn secure_boot_takes_the_secboot_code_smm_and_a_secure_flash() {
        let mut sp = spec();
        sp.firmware = Firmware::UefiSecure;
        sp.uefi_vars = Some(PathBuf::from("/r/OVMF_VARS.fd"));
        let s = joined(&sp);
        assert!(s.contains(&format!("unit=0,readonly=on,file={OVMF_CODE_SECBOOT}")));
        assert!(s.contains("unit=1,file=/r/OVMF_VARS.fd"));
        assert!(s.contains("-machine q35,smm=on "), "{s}");
        assert!(s.contains("-global driver=cfi.pflash01,property=secure,value=on -drive if=pflash"));
        sp.firmware = Firmware::Bios;
        let s = joined(&sp);
        assert!(!s.contains("pflash") && !s.contains("smm"), "{s}");
    }

    /// The VM of `spec()` with its disk on SCSI and multipath.
    pub(crate) fn multipath_spec() -> VmSpec {
        let mut sp = spec();
        let d = &mut sp.disks[0];
        d.bus = Bus::Scsi;
        d.format = "raw".into();
        d.path = PathBuf::from("/r/install.raw");
        d.multipath_wwn = Some(0x5a1b_2c3d_4e5f_6071);
        sp
    }

    #[test]
    fn a_multipath_disk_is_one_node_on_two_controllers_with_one_wwn() {
        let argv = qemu_argv(&multipath_spec());
        let s = argv.join(" ");
        assert!(
            s.contains("-device virtio-scsi-pci,bus=pcie.0,addr=0x04,id=scsi0"),
            "{s}"
        );
        assert!(
            s.contains("-device virtio-scsi-pci,bus=pcie.0,addr=0x06,id=scsi1"),
            "{s}"
        );
        assert!(s.contains("-blockdev driver=file,filename=/r/install.raw,node-name=sno-mpath0-file,discard=unmap,cache.direct=off,cache.no-flush=on,aio=threads"), "{s}");
        assert!(s.contains("-blockdev driver=raw,file=sno-mpath0-file,node-name=sno-mpath0,discard=unmap,cache.direct=off,cache.no-flush=on"), "{s}");
        let devices: Vec<&String> = argv.iter().filter(|a| a.starts_with("scsi-hd,")).collect();
        assert_eq!(
            devices,
            [
                "scsi-hd,bus=scsi0.0,channel=0,scsi-id=0,lun=0,drive=sno-mpath0,share-rw=on,id=install_path0,wwn=0x5a1b2c3d4e5f6071,serial=sno-install,logical_block_size=512,physical_block_size=512,write-cache=on,bootindex=1",
                "scsi-hd,bus=scsi1.0,channel=0,scsi-id=0,lun=0,drive=sno-mpath0,share-rw=on,id=install_path1,wwn=0x5a1b2c3d4e5f6071,serial=sno-install,logical_block_size=512,physical_block_size=512,write-cache=on",
            ]
        );
        assert!(!s.contains("-drive file=/r/install.raw"), "{s}");
        let restore = MultipathPath::of(&multipath_spec(), 0, 1).unwrap();
        let args = serde_json::Value::Object(restore.device_add_arguments());
        assert_eq!(args["id"], "install_path1");
        assert_eq!(args["bus"], "scsi1.0");
        assert_eq!(args["wwn"], 0x5a1b_2c3d_4e5f_6071_u64);
        assert_eq!(args["share-rw"], true);
        assert!(args.get("bootindex").is_none());
        assert!(MultipathPath::of(&spec(), 0, 0).is_none());
    }
}
