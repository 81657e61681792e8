//! The whole QEMU command line, built from a `VmSpec`. Nothing else in the harness adds
//! arguments, so `vm.txt` and this file together say exactly what ran.

use crate::vm::{Accel, Bus, Firmware, VmSpec, OVMF_CODE};

/// Size in MiB of TCG's translation cache. QEMU 7.2's default is 1 GiB. With a cache that
/// large, the first boot after a guest reset that follows a busy system (the live ISO after
/// `coreos-installer` has run) is several times slower: measured on this host, GRUB took 21-28 s
/// to load the kernel instead of 6 s and the initramfs unpacked in 2-12 s instead of 0.2 s,
/// putting the first disk boot at 50-56 s to SSH. With 64 MiB it is 24 s; the live boot and the
/// disk write are unchanged, and each VM's RSS is smaller.
pub const TCG_TB_SIZE_MIB: u32 = 64;

/// AHCI port of the CD-ROM on q35's built-in controller; SATA disks take ports from 0 up.
const CDROM_AHCI_PORT: usize = 5;

pub fn qemu_argv(spec: &VmSpec) -> Vec<String> {
    build(spec, Console::Harness)
}

/// The same VM for a person at a terminal (`--keep`): the serial console and QEMU's monitor on
/// stdio (Ctrl-a x quits, Ctrl-a c switches to the monitor), no QMP socket, no socket for the
/// harness to attach to first. Disks, firmware, vars, forwards and boot order are the run's.
pub fn interactive_argv(spec: &VmSpec) -> Vec<String> {
    build(spec, Console::Terminal)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Console {
    /// Serial on a Unix socket the harness reads; QMP on another.
    Harness,
    /// Serial and monitor multiplexed on stdio.
    Terminal,
}

fn build(spec: &VmSpec, console: Console) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));

    push(&["-name", &format!("guest={},debug-threads=on", spec.name)]);
    push(&["-nodefaults", "-no-user-config", "-display", "none"]);
    // q35 for both firmwares: one machine, one AHCI controller for SATA disks and the CD-ROM.
    match spec.accel {
        Accel::Kvm => push(&["-machine", "q35", "-accel", "kvm", "-cpu", "host"]),
        Accel::Tcg => push(&[
            "-machine",
            "q35",
            "-accel",
            &format!("tcg,thread=multi,tb-size={TCG_TB_SIZE_MIB}"),
            "-cpu",
            "max",
        ]),
    }
    push(&[
        "-m",
        &spec.memory_mib.to_string(),
        "-smp",
        &spec.vcpus.to_string(),
    ]);
    push(&["-rtc", "base=utc"]);
    if spec.firmware == Firmware::Uefi {
        let vars = spec
            .uefi_vars
            .as_ref()
            .expect("a UEFI VmSpec carries its variable store");
        push(&[
            "-drive",
            &format!("if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}"),
            "-drive",
            &format!("if=pflash,format=raw,unit=1,file={}", vars.display()),
        ]);
    }
    push(&["-device", "VGA"]);
    match console {
        Console::Harness => push(&[
            "-chardev",
            &format!(
                "socket,id=serial0,path={},server=on,wait=on",
                spec.serial_socket.display()
            ),
            "-serial",
            "chardev:serial0",
        ]),
        Console::Terminal => push(&["-serial", "mon:stdio"]),
    }
    if let (Some(qmp), Console::Harness) = (&spec.qmp_socket, console) {
        push(&[
            "-chardev",
            &format!("socket,id=qmp0,path={},server=on,wait=off", qmp.display()),
            "-mon",
            "chardev=qmp0,mode=control",
        ]);
    }
    let fwds: String = spec
        .forwards
        .iter()
        .map(|f| format!(",hostfwd=tcp:127.0.0.1:{}-:{}", f.host_port, f.guest_port))
        .collect();
    push(&["-netdev", &format!("user,id=net0{fwds}")]);
    push(&["-device", "virtio-net-pci,netdev=net0"]);
    push(&["-object", "rng-random,id=rng0,filename=/dev/urandom"]);
    push(&["-device", "virtio-rng-pci,rng=rng0"]);
    push(&["-device", "pvpanic"]);

    if spec.disks.iter().any(|d| d.bus == Bus::Scsi) {
        push(&["-device", "virtio-scsi-pci,id=scsi0"]);
    }
    let mut sata_port = 0;
    for d in &spec.disks {
        push(&[
            "-drive",
            &format!(
                // cache=unsafe: guest flushes are not forced to the host's disk. Runs are
                // throw-away, and forced flushes under TCG cost seconds per fsync; the guest
                // still sees every write (QMP counts them), so throughput stays comparable.
                "file={},format={},if=none,id={},discard=unmap,cache=unsafe",
                d.path.display(),
                d.format,
                d.id
            ),
        ]);
        let mut dev = match d.bus {
            Bus::Virtio => format!("virtio-blk-pci,drive={}", d.id),
            Bus::Scsi => format!("scsi-hd,bus=scsi0.0,drive={}", d.id),
            Bus::Nvme => format!("nvme,drive={}", d.id),
            Bus::Sata => {
                let port = sata_port;
                sata_port += 1;
                format!("ide-hd,bus=ide.{port},drive={}", d.id)
            }
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
            .or_else(|| (d.bus == Bus::Nvme).then(|| d.id.clone()));
        if let Some(s) = serial {
            dev.push_str(&format!(",serial={s}"));
        }
        if let Some(b) = d.bootindex {
            dev.push_str(&format!(",bootindex={b}"));
        }
        push(&["-device", &dev]);
    }
    if let Some(cd) = &spec.cdrom {
        push(&[
            "-drive",
            &format!(
                "file={},format=raw,if=none,id=cdrom0,media=cdrom,readonly=on",
                cd.path.display()
            ),
        ]);
        let mut dev = format!("ide-cd,bus=ide.{CDROM_AHCI_PORT},drive=cdrom0");
        if let Some(b) = cd.bootindex {
            dev.push_str(&format!(",bootindex={b}"));
        }
        push(&["-device", &dev]);
    }
    a
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
mod tests {
    use super::*;
    use crate::vm::{CdromSpec, DiskSpec, PortForward, Sector};
    use std::path::PathBuf;

    fn spec() -> VmSpec {
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
        }
    }

    fn joined(spec: &VmSpec) -> String {
        qemu_argv(spec).join(" ")
    }

    #[test]
    fn boot_order_is_per_device_and_never_mixed_with_boot_order() {
        let s = joined(&spec());
        assert!(s.contains("virtio-blk-pci,drive=install,logical_block_size=512,physical_block_size=512,serial=sno-install,bootindex=1"), "{s}");
        assert!(
            s.contains("ide-cd,bus=ide.5,drive=cdrom0,bootindex=2"),
            "{s}"
        );
        assert!(!s.contains("-boot"), "{s}");
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
    fn forwards_bind_loopback_only() {
        let s = joined(&spec());
        assert!(s.contains("hostfwd=tcp:127.0.0.1:40022-:22"), "{s}");
    }

    #[test]
    fn every_bus_and_sector_size_maps_to_its_device() {
        let mut sp = spec();
        sp.disks = Bus::ALL
            .iter()
            .enumerate()
            .map(|(i, bus)| DiskSpec {
                id: format!("d{i}"),
                path: PathBuf::from(format!("/r/d{i}.qcow2")),
                format: "qcow2".into(),
                bus: *bus,
                sector: if *bus == Bus::Sata {
                    Sector::S512e
                } else {
                    Sector::S4k
                },
                serial: None,
                bootindex: None,
            })
            .collect();
        let s = joined(&sp);
        assert!(s.contains("virtio-scsi-pci,id=scsi0"));
        assert!(
            s.contains("virtio-blk-pci,drive=d0,logical_block_size=4096,physical_block_size=4096")
        );
        assert!(s.contains("scsi-hd,bus=scsi0.0,drive=d1,logical_block_size=4096"));
        assert!(
            s.contains("nvme,drive=d2,logical_block_size=4096,physical_block_size=4096,serial=d2")
        );
        assert!(
            s.contains("ide-hd,bus=ide.0,drive=d3,logical_block_size=512,physical_block_size=4096")
        );
    }

    #[test]
    fn uefi_uses_readonly_code_and_the_per_vm_vars_copy() {
        let mut sp = spec();
        sp.firmware = Firmware::Uefi;
        sp.uefi_vars = Some(PathBuf::from("/r/OVMF_VARS.fd"));
        let s = joined(&sp);
        assert!(s.contains(&format!("unit=0,readonly=on,file={OVMF_CODE}")));
        assert!(s.contains("unit=1,file=/r/OVMF_VARS.fd"));
    }
}
