//! Shared helpers of the end-to-end tests: a `Machine` in the style of the NixOS test driver
//! (start, wait for console text, wait for SSH, succeed), built on the harness's own VM,
//! console and SSH layers, and the minisno fixture.

pub mod analyze;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sno_harness::fixture::{self, BuildOptions, FixtureArtifacts};
use sno_harness::guest::console::Console;
use sno_harness::guest::ssh::{SshKeyPair, SshSession, SshTarget};
use sno_harness::hw::naming;
use sno_harness::hw::{AccelChoice, Bus, Firmware, Sector};
use sno_harness::vm::qemu::QemuProcess;
use sno_harness::vm::{accel, disk, CdromSpec, DiskSpec, PortForward, VmSpec};

/// Under TCG on two cores a boot takes 15-30 s; leave room for a loaded CI machine.
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(240);
/// How long one read or write of a test's guest command may block: minutes of TCG beside other
/// VMs, never forever.
pub const GUEST_COMMAND_IO_TIMEOUT: Duration = Duration::from_secs(120);

/// The fixture, built once per test process (cached across processes by the harness).
pub fn fixture() -> &'static FixtureArtifacts {
    static F: OnceLock<FixtureArtifacts> = OnceLock::new();
    F.get_or_init(|| {
        fixture::build(&BuildOptions::default()).unwrap_or_else(|e| panic!("fixture build: {e}"))
    })
}

/// Prints a timed step, so a failing test's output shows where the time went.
pub fn step(start: Instant, what: &str) {
    eprintln!("[{:7.1} s] {what}", start.elapsed().as_secs_f64());
}

/// A live ISO with `config` embedded and the serial console enabled, made with the real
/// coreos-installer, in `dir`.
pub fn customised_iso(dir: &Path, config: &serde_json::Value) -> PathBuf {
    let ign = dir.join("live.ign");
    std::fs::write(&ign, serde_json::to_vec(config).unwrap()).unwrap();
    let iso = dir.join("live.iso");
    run(Command::new("coreos-installer")
        .args(["iso", "ignition", "embed", "-f", "-i"])
        .arg(&ign)
        .arg("-o")
        .arg(&iso)
        .arg(&fixture().live_iso));
    run(Command::new("coreos-installer")
        .args(["iso", "kargs", "modify", "-a", "console=ttyS0,115200n8"])
        .arg(&iso));
    iso
}

pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An Ignition config giving `core` the test key, plus whatever `extra` adds (merged into the
/// top-level object).
pub fn ignition_with_key(key: &SshKeyPair, extra: serde_json::Value) -> serde_json::Value {
    let mut cfg = serde_json::json!({
        "ignition": {"version": "3.4.0"},
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": [key.public_openssh]}]}
    });
    if let serde_json::Value::Object(extra) = extra {
        for (k, v) in extra {
            cfg[k] = v;
        }
    }
    cfg
}

/// One disk of a test VM.
pub struct TestDisk {
    pub bus: Bus,
    pub sector: Sector,
    pub serial: String,
    pub size_bytes: u64,
    pub bootindex: Option<u32>,
}

/// `/dev/disk/by-path/...` of disk `index` of `disks` as `Machine::start` attaches them (in this
/// order, through the harness's own command line), from the harness's naming, as scenarios get it.
pub fn by_path(disks: &[TestDisk], index: usize) -> String {
    let buses: Vec<Bus> = disks.iter().map(|d| d.bus).collect();
    naming::by_path(&buses, index).unwrap_or_else(|e| panic!("disk {index}: {e}"))
}

pub struct Machine {
    pub dir: tempfile::TempDir,
    pub qemu: QemuProcess,
    pub console: Console,
    pub ssh: SshTarget,
    /// Host ports (on 127.0.0.1) forwarded to the guest ports asked for, in that order.
    pub forwarded: Vec<(u16, u16)>,
    pub started: Instant,
}

impl Machine {
    /// Starts a VM booting `iso` (boot index 2) with `disks`, under the accelerator `auto`
    /// picks, with SSH forwarded to an ephemeral 127.0.0.1 port.
    pub fn start(
        name: &str,
        firmware: Firmware,
        iso: &Path,
        disks: &[TestDisk],
        key: &SshKeyPair,
    ) -> Machine {
        Machine::start_with_ports(name, firmware, iso, disks, key, &[])
    }

    /// `start`, with `guest_ports` forwarded from ephemeral 127.0.0.1 ports too.
    pub fn start_with_ports(
        name: &str,
        firmware: Firmware,
        iso: &Path,
        disks: &[TestDisk],
        key: &SshKeyPair,
        guest_ports: &[u16],
    ) -> Machine {
        let dir = tempfile::Builder::new()
            .prefix(&format!("sno-e2e-{name}-"))
            .tempdir()
            .unwrap();
        // In the order given: the harness places disks by their order (`by_path` relies on it).
        let mut specs = Vec::new();
        for (i, d) in disks.iter().enumerate() {
            let path = dir.path().join(format!("disk{i}.qcow2"));
            disk::create_qcow2(&path, d.size_bytes).unwrap();
            specs.push(DiskSpec {
                id: format!("disk{i}"),
                path,
                format: "qcow2".into(),
                bus: d.bus,
                sector: d.sector,
                serial: Some(d.serial.clone()),
                bootindex: d.bootindex,
                io: Default::default(),
                multipath_wwn: None,
            });
        }
        let uefi_vars = firmware.ovmf_vars_template().map(|template| {
            let p = dir.path().join("OVMF_VARS.fd");
            std::fs::copy(template, &p).unwrap();
            p
        });
        let decision = accel::decide(AccelChoice::Auto).unwrap();
        eprintln!("accelerator: {:?} ({})", decision.accel, decision.reason);
        let ssh_port = free_port();
        let forwarded: Vec<(u16, u16)> = guest_ports.iter().map(|g| (free_port(), *g)).collect();
        let mut forwards = vec![PortForward {
            host_port: ssh_port,
            guest_port: 22,
        }];
        forwards.extend(forwarded.iter().map(|(h, g)| PortForward {
            host_port: *h,
            guest_port: *g,
        }));
        let spec = VmSpec {
            name: name.into(),
            vcpus: 2,
            memory_mib: 2048,
            firmware,
            accel: decision.accel,
            disks: specs,
            cdrom: Some(CdromSpec {
                path: iso.to_path_buf(),
                bootindex: Some(2),
            }),
            uefi_vars,
            serial_socket: dir.path().join("serial.sock"),
            qmp_socket: Some(dir.path().join("qmp.sock")),
            forwards,
            nic: Default::default(),
            netboot: None,
            // As the harness's DHCP names a node (the fixture takes its name from DHCP).
            dhcp_hostname: Some("sno-master-0".into()),
            second_nic: false,
        };
        let (qemu, console) = QemuProcess::start(&spec, dir.path()).unwrap();
        std::fs::write(dir.path().join("vm.txt"), qemu.command_line()).unwrap();
        Machine {
            dir,
            qemu,
            console,
            ssh: SshTarget {
                addr: ([127, 0, 0, 1], ssh_port).into(),
                user: "core".into(),
                key: key.clone(),
            },
            forwarded,
            started: Instant::now(),
        }
    }

    pub fn wait_for_console(&self, pattern: &str) -> String {
        self.console
            .wait_for_text(pattern, BOOT_TIMEOUT)
            .unwrap_or_else(|e| self.fail(&e.to_string()))
    }

    /// Waits for `pattern` on a console line printed after line `mark`.
    pub fn wait_for_console_after(&self, mark: usize, pattern: &str) -> usize {
        self.console
            .wait_for_text_from(pattern, mark, BOOT_TIMEOUT)
            .unwrap_or_else(|e| self.fail(&e.to_string()))
            .0
    }

    /// The host port forwarded to `guest_port`.
    pub fn host_port(&self, guest_port: u16) -> u16 {
        self.forwarded
            .iter()
            .find(|(_, g)| *g == guest_port)
            .map(|(h, _)| *h)
            .unwrap_or_else(|| panic!("guest port {guest_port} is not forwarded"))
    }

    pub fn wait_for_ssh(&self) -> SshSession {
        let session = self
            .ssh
            .wait_for_ssh(BOOT_TIMEOUT)
            .unwrap_or_else(|e| self.fail(&e.to_string()));
        // The login's 10 s per read is for a guest still booting; the tests' own commands
        // (an Ignition config of hundreds of KiB through base64, coreos-installer) under TCG on
        // a host with other VMs and builds took longer than that and failed the test.
        session.set_io_timeout(GUEST_COMMAND_IO_TIMEOUT);
        session
    }

    /// Fails the test with the reason and the console's last lines.
    pub fn fail(&self, why: &str) -> ! {
        let lines = self.console.lines();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        panic!(
            "{why}\n--- last console lines ({}) ---\n{tail}\n--- QEMU ---\n{}",
            self.dir.path().display(),
            self.qemu.command_line()
        );
    }
}

/// Runs `cmd` over SSH and returns stdout, failing the test with stderr otherwise.
pub fn succeed(ssh: &SshSession, cmd: &str) -> String {
    ssh.succeed(cmd)
        .unwrap_or_else(|e| panic!("guest command failed: {e}"))
}

/// Writes `bytes` to `path` on the guest (through base64, no SCP needed).
pub fn put_file(ssh: &SshSession, path: &str, bytes: &[u8]) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    succeed(ssh, &format!("echo '{b64}' | base64 -d > {path}"));
}

/// An ephemeral port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
