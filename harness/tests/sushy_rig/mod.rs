//! The real Redfish emulator for the client's tests: sushy-tools' `sushy-emulator` (from the venv
//! ci/install-host-deps.sh makes) with its libvirt driver on qemu:///system, on 127.0.0.1 and a
//! free port, with basic authentication from a bcrypt htpasswd file, seeing only the test's own
//! libvirt domain (an empty disk, an empty CD drive, no boot media) and putting the images it
//! fetches into the test's own storage pool. Neither carries the harness's `<sno:run>` metadata
//! nor its `sno-` prefix, so `sno-harness gc` leaves them alone; the rig removes both, the
//! emulator and every file on every way out (drop).

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const USER: &str = "redfish-tester";
pub const PASSWORD: &str = "emulated:bmc-pass";

/// The venv ci/install-host-deps.sh makes, unless SNO_SUSHY_VENV names another.
pub fn venv() -> PathBuf {
    let venv = std::env::var_os("SNO_SUSHY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/sno-harness/sushy-tools"));
    assert!(
        venv.join("bin/sushy-emulator").is_file(),
        "{}/bin/sushy-emulator is missing: run ci/install-host-deps.sh (sushy-tools in a venv \
         of Debian's python3 with python3-libvirt), or set SNO_SUSHY_VENV",
        venv.display()
    );
    venv
}

/// `virsh -c qemu:///system ARGS`: its stdout, or a panic with its stderr.
pub fn virsh(args: &[&str]) -> String {
    let out = virsh_output(args);
    assert!(
        out.status.success(),
        "virsh {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn virsh_output(args: &[&str]) -> std::process::Output {
    Command::new("virsh")
        .args(["-c", "qemu:///system"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("virsh (libvirt-clients)")
}

/// A libvirt domain and storage pool of the test's, undefined and removed on drop.
pub struct Machine {
    pub name: String,
    pub uuid: String,
    pub pool: String,
}

impl Machine {
    /// Defines (persistently: the emulator edits the definition) the machine `xml` makes of its
    /// name and its empty raw disk of `disk_bytes` (by default `domain_xml_of`'s small q35
    /// machine with an empty SATA CD drive), and a directory pool at `dir/pool`.
    fn define_with(
        dir: &Path,
        tag: &str,
        disk_bytes: u64,
        xml: impl Fn(&str, &Path) -> String,
    ) -> Machine {
        let name = format!("redfish-emu-{tag}");
        let pool_dir = dir.join("pool");
        std::fs::create_dir(&pool_dir).unwrap();
        std::fs::set_permissions(&pool_dir, std::fs::Permissions::from_mode(0o711)).unwrap();
        let disk = pool_dir.join("disk.img");
        std::fs::File::create(&disk)
            .unwrap()
            .set_len(disk_bytes)
            .unwrap();
        // Made first, so that a failing step below still removes what the ones before made.
        let mut machine = Machine {
            uuid: String::new(),
            pool: name.clone(),
            name,
        };
        let pool_xml = dir.join("pool.xml");
        std::fs::write(
            &pool_xml,
            format!(
                "<pool type='dir'><name>{}</name><target><path>{}</path></target></pool>",
                machine.pool,
                pool_dir.display()
            ),
        )
        .unwrap();
        virsh(&["pool-create", &pool_xml.to_string_lossy()]);
        let domain_xml = dir.join("domain.xml");
        std::fs::write(&domain_xml, xml(&machine.name, &disk)).unwrap();
        virsh(&["define", &domain_xml.to_string_lossy()]);
        machine.uuid = virsh(&["domuuid", &machine.name]).trim().to_string();
        machine
    }

    /// `virsh dumpxml --inactive`: the definition the emulator edits.
    pub fn definition(&self) -> String {
        virsh(&["dumpxml", "--inactive", &self.name])
    }

    pub fn state(&self) -> String {
        virsh(&["domstate", &self.name]).trim().to_string()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // Each step may find nothing to do (never defined, already off): errors are expected.
        let _ = virsh_output(&["destroy", &self.name]);
        let _ = virsh_output(&["undefine", "--nvram", &self.name]);
        let _ = virsh_output(&["pool-destroy", &self.pool]);
    }
}

fn domain_xml_of(name: &str, disk: &Path) -> String {
    format!(
        "<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <on_reboot>destroy</on_reboot>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='{}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <disk type='file' device='cdrom'>
      <driver name='qemu' type='raw'/>
      <target dev='sda' bus='sata'/>
      <readonly/>
    </disk>
    <graphics type='vnc' autoport='yes' listen='127.0.0.1'/>
  </devices>
</domain>
",
        disk.display()
    )
}

/// The emulator process (its own process group), stopped on drop.
pub struct Emulator {
    child: Child,
    /// Where it listens: 127.0.0.1, or its namespace's end of the veth pair.
    pub host: IpAddr,
    pub port: u16,
    log: PathBuf,
}

impl Emulator {
    fn start(
        venv: &Path,
        dir: &Path,
        machine: &Machine,
        netns: Option<&Netns>,
        extra_config: &str,
    ) -> Emulator {
        let port = free_port();
        let host = netns.map_or(IpAddr::from([127, 0, 0, 1]), |n| n.inside);
        let htpasswd = dir.join("htpasswd");
        std::fs::write(&htpasswd, htpasswd_line(venv)).unwrap();
        let state = dir.join("state");
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let config = dir.join("emulator.conf");
        std::fs::write(
            &config,
            format!(
                "SUSHY_EMULATOR_LISTEN_IP = '{host}'\n\
                 SUSHY_EMULATOR_LISTEN_PORT = {port}\n\
                 SUSHY_EMULATOR_AUTH_FILE = '{}'\n\
                 SUSHY_EMULATOR_LIBVIRT_URI = 'qemu:///system'\n\
                 SUSHY_EMULATOR_STORAGE_POOL = '{}'\n\
                 SUSHY_EMULATOR_STATE_DIR = '{}'\n\
                 SUSHY_EMULATOR_ALLOWED_INSTANCES = ['{}', '{}']\n{extra_config}",
                htpasswd.display(),
                machine.pool,
                state.display(),
                machine.name,
                machine.uuid,
            ),
        )
        .unwrap();
        let log = dir.join("emulator.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let mut command = match netns {
            Some(n) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &n.name])
                    .arg(venv.join("bin/sushy-emulator"));
                c
            }
            None => Command::new(venv.join("bin/sushy-emulator")),
        };
        let child = command
            .arg("--config")
            .arg(&config)
            // Its downloads go to the test's directory, removed with it.
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .process_group(0)
            .spawn()
            .expect("sushy-emulator starts");
        let mut emulator = Emulator {
            child,
            host,
            port,
            log,
        };
        emulator.wait_listening(Duration::from_secs(60));
        emulator
    }

    /// Until the port takes connections; a panic with the log if the emulator ends or the
    /// deadline passes first.
    fn wait_listening(&mut self, deadline: Duration) {
        let started = Instant::now();
        let addr = SocketAddr::new(self.host, self.port);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("sushy-emulator ended ({status}):\n{}", self.log_text());
            }
            assert!(
                started.elapsed() < deadline,
                "sushy-emulator did not listen within {deadline:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.host, self.port)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // The emulator leads its own process group (`process_group(0)`).
        let group = rustix::process::Pid::from_raw(self.child.id() as i32)
            .expect("a child's pid is positive");
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = self.child.wait();
    }
}

/// `USER:BCRYPT` for the emulator's auth file, hashed by the venv's bcrypt (the password on
/// its standard input, not in its arguments).
fn htpasswd_line(venv: &Path) -> String {
    let mut child = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import bcrypt, sys; pw = sys.stdin.read().encode(); \
             print(bcrypt.hashpw(pw, bcrypt.gensalt(rounds=4)).decode())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(PASSWORD.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    format!("{USER}:{}", String::from_utf8(out.stdout).unwrap())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The emulator driving the test's machine. Dropped in field order: the emulator first, then
/// its network namespace, the machine and its pool, then the files.
pub struct Rig {
    pub emulator: Emulator,
    _netns: Option<Netns>,
    pub machine: Machine,
    pub dir: tempfile::TempDir,
}

/// How a rig differs from the plain one.
#[derive(Default)]
pub struct Setup {
    /// Lines added to the emulator's configuration file.
    pub config: String,
    /// The emulator in a network namespace of the test's own (`Netns`), as a BMC on a
    /// management network: this host's loopback, where the harness serves by default, is not
    /// its loopback.
    pub own_network: bool,
}

impl Rig {
    pub fn start() -> Rig {
        Self::start_with(64 << 20, domain_xml_of)
    }

    /// The small machine with an emulator set up as `setup` says.
    pub fn start_set_up(setup: &Setup) -> Rig {
        Self::start_full(64 << 20, domain_xml_of, setup)
    }

    /// A rig whose domain has a disk of `disk_bytes` and the XML `xml` makes of its name and
    /// disk.
    pub fn start_with(disk_bytes: u64, xml: impl Fn(&str, &Path) -> String) -> Rig {
        Self::start_full(disk_bytes, xml, &Setup::default())
    }

    fn start_full(disk_bytes: u64, xml: impl Fn(&str, &Path) -> String, setup: &Setup) -> Rig {
        let venv = venv();
        let dir = tempfile::tempdir().unwrap();
        // QEMU runs as another user (libvirt-qemu) and must reach the disk and the images.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let tag = format!(
            "{}-{}",
            std::process::id(),
            dir.path().file_name().unwrap().to_string_lossy()
        );
        let tag: String = tag
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let machine = Machine::define_with(dir.path(), &tag, disk_bytes, xml);
        let netns = setup.own_network.then(Netns::create);
        let emulator = Emulator::start(&venv, dir.path(), &machine, netns.as_ref(), &setup.config);
        Rig {
            emulator,
            _netns: netns,
            machine,
            dir,
        }
    }
}

/// A network namespace of the test's own, joined to this one by a veth pair on a /30 of the
/// benchmarking range (198.18.0.0/15): this side's address on one end, the namespace's on the
/// other, its own loopback up. Removed (with the pair) on drop.
pub struct Netns {
    pub name: String,
    pub inside: IpAddr,
    pub outside: IpAddr,
}

impl Netns {
    fn create() -> Netns {
        // Names of at most 15 characters, unique per test process and call.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let id = (std::process::id() * 8 + n) % 16_000;
        let (third, fourth) = ((id / 64) as u8, ((id % 64) * 4) as u8);
        let netns = Netns {
            name: format!("snorf{id}"),
            outside: IpAddr::from([198, 18, third, fourth + 1]),
            inside: IpAddr::from([198, 18, third, fourth + 2]),
        };
        let (host_end, ns_end) = (format!("snorf{id}h"), format!("snorf{id}n"));
        ip(&["netns", "add", &netns.name]);
        ip(&[
            "link",
            "add",
            &host_end,
            "type",
            "veth",
            "peer",
            "name",
            &ns_end,
            "netns",
            &netns.name,
        ]);
        ip(&[
            "addr",
            "add",
            &format!("{}/30", netns.outside),
            "dev",
            &host_end,
        ]);
        ip(&["link", "set", &host_end, "up"]);
        ip(&[
            "-n",
            &netns.name,
            "addr",
            "add",
            &format!("{}/30", netns.inside),
            "dev",
            &ns_end,
        ]);
        ip(&["-n", &netns.name, "link", "set", &ns_end, "up"]);
        ip(&["-n", &netns.name, "link", "set", "lo", "up"]);
        netns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// `ip ARGS`, or a panic with its stderr.
fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A TCP proxy on 127.0.0.1 to `to` that holds each connection `delay` ms before it forwards
/// anything (a BMC that takes its time).
pub async fn slow_proxy(
    to: SocketAddr,
    delay: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let wait = Duration::from_millis(delay.load(std::sync::atomic::Ordering::SeqCst));
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    addr
}
