//! minisno's operating-system half, booted for real under QEMU (TCG here): the live ISO with
//! an Ignition config embedded by the real coreos-installer, the install to disk with the real
//! coreos-installer, the reset and the first and second boots from disk, and every disk bus.

use std::io::Write;
use std::time::Instant;

use base64::Engine as _;
use serde_json::json;
use sno_e2e::*;
use sno_harness::guest::ssh::SshKeyPair;
use sno_harness::hw::{Bus, Firmware, Sector};

const GIB: u64 = 1024 * 1024 * 1024;

fn gzip_base64(text: &str) -> String {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    base64::engine::general_purpose::STANDARD.encode(enc.finish().unwrap())
}

/// A config touching every supported kind of Ignition entry.
fn live_config(key: &SshKeyPair) -> serde_json::Value {
    ignition_with_key(
        key,
        json!({
            "storage": {
                "directories": [{"path": "/var/lib/minisno-test", "mode": 488}],
                "files": [
                    {"path": "/etc/minisno-test/plain", "mode": 384,
                     "contents": {"source": "data:,hello%20plain"}},
                    {"path": "/etc/minisno-test/b64", "mode": 493,
                     "contents": {"source": format!("data:;base64,{}",
                        base64::engine::general_purpose::STANDARD.encode("hello base64"))}},
                    {"path": "/etc/minisno-test/gz",
                     "contents": {"compression": "gzip",
                                  "source": format!("data:;base64,{}", gzip_base64("hello gzip"))}},
                    {"path": "/etc/hostname", "overwrite": true,
                     "contents": {"source": "data:,minisno-test%0A"}}
                ],
                "links": [{"path": "/etc/minisno-test/link", "target": "/etc/minisno-test/plain"}]
            },
            "systemd": {"units": [
                {"name": "minisno-test.service", "enabled": true,
                 "contents": "[Unit]\nDescription=test unit from Ignition\nBefore=ssh.service\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo \"$GREETING\" > /run/minisno-test.ran'\n[Install]\nWantedBy=multi-user.target\n",
                 "dropins": [{"name": "10-env.conf", "contents": "[Service]\nEnvironment=GREETING=from-dropin\n"}]},
                {"name": "e2scrub_reap.service", "mask": true}
            ]}
        }),
    )
}

fn live_iso_applies_ignition(firmware: Firmware, name: &str) {
    let t0 = Instant::now();
    let key = SshKeyPair::generate("sno-e2e").unwrap();
    let work = tempfile::tempdir().unwrap();
    let iso = customised_iso(work.path(), &live_config(&key));
    step(t0, "ISO customised; booting");
    let disks = [TestDisk {
        bus: Bus::Virtio,
        sector: Sector::S512,
        serial: "sno-install".into(),
        size_bytes: 8 * GIB,
        bootindex: Some(1),
    }];
    let m = Machine::start(name, firmware, &iso, &disks, &key);
    let ssh = m.wait_for_ssh();
    step(t0, "SSH into the live system works");

    succeed(&ssh, "test -e /run/ostree-live");
    assert_eq!(
        succeed(&ssh, "sudo -n cat /etc/minisno-test/plain"),
        "hello plain"
    );
    assert_eq!(succeed(&ssh, "cat /etc/minisno-test/b64"), "hello base64");
    assert_eq!(succeed(&ssh, "cat /etc/minisno-test/gz"), "hello gzip");
    assert_eq!(
        succeed(&ssh, "stat -c '%a %U' /etc/minisno-test/plain /etc/minisno-test/b64 /etc/minisno-test/gz /var/lib/minisno-test"),
        "600 root\n755 root\n644 root\n750 root\n"
    );
    assert_eq!(
        succeed(&ssh, "readlink /etc/minisno-test/link"),
        "/etc/minisno-test/plain\n"
    );
    assert_eq!(succeed(&ssh, "hostname"), "minisno-test\n");
    // The unit was enabled before systemd started, ran with its drop-in, and was masked ones are.
    assert_eq!(succeed(&ssh, "cat /run/minisno-test.ran"), "from-dropin\n");
    assert_eq!(
        succeed(&ssh, "sudo systemctl is-enabled minisno-test.service"),
        "enabled\n"
    );
    assert_eq!(
        ssh.exec("sudo systemctl is-enabled e2scrub_reap.service")
            .unwrap()
            .stdout,
        "masked\n"
    );
    // Real systemd and journald, passwordless sudo, the real coreos-installer with its tools.
    assert_eq!(succeed(&ssh, "ps -o comm= -p 1"), "systemd\n");
    assert!(
        succeed(&ssh, "sudo journalctl -b -o cat | head -c 100000").contains("minisno-ignition")
    );
    assert_eq!(succeed(&ssh, "sudo -n id -u"), "0\n");
    assert!(succeed(&ssh, "coreos-installer --version").starts_with("coreos-installer 0.27.0"));
    assert!(succeed(&ssh, "lsblk -J -o NAME,SERIAL").contains("sno-install"));
    assert!(succeed(&ssh, "sudo blkid /dev/sr0").contains("LABEL=\"minisno-live\""));
    m.wait_for_console("minisno: live system up");
    step(t0, "all checks passed");
}

#[test]
fn live_iso_applies_ignition_on_seabios() {
    live_iso_applies_ignition(Firmware::Bios, "live-bios");
}

#[test]
fn live_iso_applies_ignition_on_ovmf() {
    live_iso_applies_ignition(Firmware::Uefi, "live-uefi");
}

#[test]
fn an_unsupported_ignition_key_is_loud_on_the_console() {
    let key = SshKeyPair::generate("sno-e2e").unwrap();
    let work = tempfile::tempdir().unwrap();
    let cfg = ignition_with_key(
        &key,
        json!({"storage": {"filesystems": [{"device": "/dev/vda", "format": "xfs"}]}}),
    );
    let iso = customised_iso(work.path(), &cfg);
    let m = Machine::start("bad-ignition", Firmware::Bios, &iso, &[], &key);
    let line = m.wait_for_console("minisno-ignition: ERROR");
    assert!(
        m.console
            .lines()
            .iter()
            .any(|l| l.contains("storage.filesystems")),
        "the error names the key: {line}"
    );
    m.wait_for_console("Ignition failed");
}

/// Boots the live ISO, installs to the disk with coreos-installer, reboots into the installed
/// system, checks the first-boot config, and reboots once more to check it is not re-applied.
fn install_and_boot_from_disk(firmware: Firmware, sector: Sector, name: &str) {
    let t0 = Instant::now();
    let key = SshKeyPair::generate("sno-e2e").unwrap();
    let work = tempfile::tempdir().unwrap();
    let iso = customised_iso(work.path(), &ignition_with_key(&key, json!({})));
    let disks = [TestDisk {
        bus: Bus::Virtio,
        sector,
        serial: "sno-install".into(),
        size_bytes: 8 * GIB,
        bootindex: Some(1),
    }];
    let m = Machine::start(name, firmware, &iso, &disks, &key);
    let live = m.wait_for_ssh();
    let live_key = live.host_key_sha256.clone();
    step(
        t0,
        &format!(
            "MEASURE live ISO launch to SSH: {:.1} s",
            m.started.elapsed().as_secs_f64()
        ),
    );

    let disk_config = ignition_with_key(
        &key,
        json!({"storage": {"files": [{"path": "/etc/minisno-test/firstboot",
            "contents": {"source": "data:,written%20on%20first%20boot"}}]}}),
    );
    put_file(
        &live,
        "/tmp/disk.ign",
        &serde_json::to_vec(&disk_config).unwrap(),
    );
    let image = match sector.logical() {
        4096 => "metal-4096.raw.zst",
        _ => "metal-512.raw.zst",
    };
    // The metal images are in the live rootfs.img, where RHCOS keeps its osmet data
    // (images/README.md); the live ISO's is read out of it first, off the install's clock.
    let out = live
        .exec(&format!(
            "cd /var/tmp && sudo busybox cpio -i -d -F /run/media/iso/images/pxeboot/rootfs.img minisno-osmet/{image} 2>&1"
        ))
        .unwrap();
    assert_eq!(
        out.status, 0,
        "reading {image} out of rootfs.img:\n{}",
        out.stdout
    );
    let t_install = Instant::now();
    let out = live
        .exec(&format!(
            "sudo coreos-installer install /dev/vda --image-file /var/tmp/minisno-osmet/{image} --insecure -i /tmp/disk.ign 2>&1"
        ))
        .unwrap();
    let install_s = t_install.elapsed().as_secs_f64();
    assert_eq!(out.status, 0, "coreos-installer failed:\n{}", out.stdout);
    assert!(out.stdout.contains("Install complete."), "{}", out.stdout);
    assert!(
        out.stdout.contains("Writing Ignition config"),
        "{}",
        out.stdout
    );
    step(t0, &format!("MEASURE metal install: {install_s:.1} s"));

    let mark = m.console.line_count();
    let t_reboot = Instant::now();
    let _ = live.exec("sudo systemctl reboot");
    drop(live);
    m.wait_for_console_after(mark, "minisno: disk system up");
    let disk = m.wait_for_ssh();
    step(
        t0,
        &format!(
            "MEASURE reboot to SSH into the installed system (first boot): {:.1} s",
            t_reboot.elapsed().as_secs_f64()
        ),
    );
    profile_boot(&m, &disk, mark);
    assert_ne!(
        disk.host_key_sha256, live_key,
        "a new system has a new host key"
    );
    let out = disk.exec("test -e /run/ostree-live").unwrap();
    assert_ne!(
        out.status, 0,
        "/run/ostree-live must be absent on the installed system"
    );
    assert_eq!(
        succeed(&disk, "cat /etc/minisno-test/firstboot"),
        "written on first boot"
    );
    let boot = succeed(&disk, "findmnt -n -o SOURCE /boot");
    assert!(boot.starts_with("/dev/vda"), "/boot is on {boot}");
    assert_eq!(
        succeed(&disk, "lsblk -no LABEL $(findmnt -n -o SOURCE /boot)"),
        "boot\n"
    );
    succeed(&disk, "test ! -e /boot/ignition.firstboot");
    succeed(&disk, "sudo test -s /boot/ignition/config.ign");
    assert_eq!(
        succeed(&disk, "cat /sys/block/vda/queue/logical_block_size"),
        format!("{}\n", sector.logical())
    );

    // Second boot: the config is not applied again (the file deleted now stays deleted), and
    // what the first boot wrote elsewhere persists.
    succeed(
        &disk,
        "sudo rm /etc/minisno-test/firstboot && echo kept | sudo tee /etc/minisno-test/persist",
    );
    let mark = m.console.line_count();
    let t_reboot = Instant::now();
    let _ = disk.exec("sudo systemctl reboot");
    drop(disk);
    m.wait_for_console_after(mark, "minisno: disk system up");
    let again = m.wait_for_ssh();
    profile_boot(&m, &again, mark);
    step(
        t0,
        &format!(
            "MEASURE reboot to SSH (second boot from disk): {:.1} s",
            t_reboot.elapsed().as_secs_f64()
        ),
    );
    succeed(&again, "test ! -e /etc/minisno-test/firstboot");
    assert_eq!(succeed(&again, "cat /etc/minisno-test/persist"), "kept\n");
    assert!(
        !m.console.lines()[mark..]
            .iter()
            .any(|l| l.contains("applying Ignition config")),
        "Ignition ran again on the second boot"
    );
}

/// With `SNO_E2E_PROFILE` set, prints where a boot spent its time: the console since `mark`
/// (host timestamps are in serial.log) and systemd's own accounting. For measurement runs.
fn profile_boot(m: &Machine, ssh: &sno_harness::guest::ssh::SshSession, mark: usize) {
    if std::env::var_os("SNO_E2E_PROFILE").is_none() {
        return;
    }
    let log = std::fs::read_to_string(m.dir.path().join("serial.log")).unwrap_or_default();
    eprintln!("--- PROFILE serial.log (from console line {mark}) ---");
    for line in log.lines().skip(mark) {
        eprintln!("{line}");
    }
    for cmd in [
        "systemd-analyze time",
        "systemd-analyze blame --no-pager | head -25",
        "systemd-analyze critical-chain --no-pager ssh.service",
        "sudo journalctl -b -o short-monotonic --no-pager | grep -v kernel: | head -200",
    ] {
        let out = ssh
            .exec(cmd)
            .map(|o| o.stdout)
            .unwrap_or_else(|e| e.to_string());
        eprintln!("--- PROFILE {cmd} ---\n{out}");
    }
}

#[test]
fn install_to_disk_and_boot_seabios_512() {
    install_and_boot_from_disk(Firmware::Bios, Sector::S512, "install-bios-512");
}

#[test]
fn install_to_disk_and_boot_ovmf_512() {
    install_and_boot_from_disk(Firmware::Uefi, Sector::S512, "install-uefi-512");
}

#[test]
fn install_to_disk_and_boot_ovmf_4k() {
    install_and_boot_from_disk(Firmware::Uefi, Sector::S4k, "install-uefi-4k");
}

/// A disk on `bus` shows up under its expected name, with its by-id link from the serial and its
/// by-path link from where the harness placed it (what a scenario's `by = "path"` resolves to).
fn disk_bus(bus: Bus, expected_dev: &str, expected_by_id: &str) {
    let key = SshKeyPair::generate("sno-e2e").unwrap();
    let work = tempfile::tempdir().unwrap();
    let iso = customised_iso(work.path(), &ignition_with_key(&key, json!({})));
    let serial = format!("sno-{}", bus.name());
    let disks = [TestDisk {
        bus,
        sector: Sector::S512,
        serial: serial.clone(),
        size_bytes: GIB,
        bootindex: Some(1),
    }];
    let m = Machine::start(
        &format!("bus-{}", bus.name()),
        Firmware::Bios,
        &iso,
        &disks,
        &key,
    );
    let ssh = m.wait_for_ssh();
    let link = format!("/dev/disk/by-id/{expected_by_id}");
    let resolved = succeed(&ssh, &format!("udevadm settle; readlink -f {link}"));
    assert_eq!(resolved.trim(), expected_dev, "{link}");
    let lsblk = succeed(&ssh, &format!("lsblk -dn -o SERIAL {expected_dev}"));
    assert_eq!(lsblk.trim(), serial);
    let path_link = by_path(&disks, 0);
    let resolved = succeed(&ssh, &format!("readlink -f {path_link}"));
    assert_eq!(
        resolved.trim(),
        expected_dev,
        "{path_link}; the guest has:\n{}",
        succeed(&ssh, "ls -l /dev/disk/by-path/")
    );
}

#[test]
fn disk_bus_virtio_is_vda() {
    disk_bus(Bus::Virtio, "/dev/vda", "virtio-sno-virtio");
}

#[test]
fn disk_bus_scsi_is_sda() {
    disk_bus(Bus::Scsi, "/dev/sda", "scsi-0QEMU_QEMU_HARDDISK_sno-scsi");
}

#[test]
fn disk_bus_nvme_is_nvme0n1() {
    disk_bus(Bus::Nvme, "/dev/nvme0n1", "nvme-QEMU_NVMe_Ctrl_sno-nvme");
}

#[test]
fn disk_bus_sata_is_sda() {
    disk_bus(Bus::Sata, "/dev/sda", "ata-QEMU_HARDDISK_sno-sata");
}
