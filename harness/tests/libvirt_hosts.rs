//! A matrix spread over several libvirt hosts (`matrix --hosts FILE`), reached over `qemu+ssh`
//! as a lab's would be. Each "host" is a private libvirtd with its own sshd in mount and pid
//! namespaces of its own (tests/data/netns-libvirt-host.sh), all inside one network namespace
//! this test made, where the harness runs too: nothing of it reaches the machine's own
//! libvirtd or network. One host is killed (every process of it at once, its QEMU included)
//! while a permutation runs there: that run ends as an error naming the host, and the
//! permutations still queued run on the host that is left. And a host behind a jump host,
//! reached only as a `~/.ssh/config` says.

// The libvirt backend is built with the `libvirt` feature only (on by default).
#![cfg(feature = "libvirt")]

mod private_sshd;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use private_sshd::{descendants, keygen, read};

/// A network namespace with only `lo`, held open by a sleeping process.
struct Netns {
    holder: Child,
}

impl Netns {
    fn new() -> Netns {
        let holder = Command::new("unshare")
            .args(["--net", "--", "sleep", "infinity"])
            .spawn()
            .expect("unshare");
        let ns = Netns { holder };
        // The namespace exists once unshare has exec'd sleep.
        let path = ns.path();
        let started = Instant::now();
        while std::fs::read_link(&path).ok() == std::fs::read_link("/proc/self/ns/net").ok() {
            assert!(started.elapsed() < Duration::from_secs(10), "unshare --net");
            std::thread::sleep(Duration::from_millis(20));
        }
        let up = ns.enter().args(["ip", "link", "set", "lo", "up"]).status();
        assert!(up.unwrap().success());
        ns
    }

    fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/ns/net", self.holder.id()))
    }

    /// A link to `other` (a veth pair): `here` on this side, `there` on the other, each a /24.
    fn link(&self, other: &Netns, here: &str, there: &str) {
        let run = |ns: &Netns, args: &[&str]| {
            let out = ns.enter().args(args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {err}");
        };
        let peer_ns = other.holder.id().to_string();
        let add = ["ip", "link", "add", "sno-j0", "type", "veth", "peer"];
        run(
            self,
            &[&add[..], &["name", "sno-j1", "netns", &peer_ns]].concat(),
        );
        for (ns, dev, addr) in [(self, "sno-j0", here), (other, "sno-j1", there)] {
            run(
                ns,
                &["ip", "addr", "add", &format!("{addr}/24"), "dev", dev],
            );
            run(ns, &["ip", "link", "set", dev, "up"]);
        }
    }

    /// Whether a TCP connection to `addr`:`port` from inside the namespace is accepted.
    fn reaches(&self, addr: &str, port: u16) -> bool {
        let probe = format!("exec 3<>/dev/tcp/{addr}/{port}");
        // Refused at once when nothing listens: both ends are in namespaces of this test.
        let out = self.enter().args(["bash", "-c", &probe]).output().unwrap();
        out.status.success()
    }

    /// A command run inside the namespace.
    fn enter(&self) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={}", self.path().display())).arg("--");
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// STATE/sshd_config for an sshd on `listen`:`port` with STATE's host key and authorized keys.
fn write_sshd_config(state: &Path, listen: &str, port: u16) {
    let config = format!(
        "Port {port}\nListenAddress {listen}\nHostKey {d}/host_ed25519\n\
         AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\n\
         PermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
         AllowTcpForwarding yes\nPidFile none\nLogLevel VERBOSE\n",
        d = state.display()
    );
    std::fs::write(state.join("sshd_config"), config).unwrap();
}

/// One libvirt host in the namespace: libvirtd behind an sshd on 127.0.0.1:`port`.
struct Host {
    /// `unshare`, whose only child is the host's first process.
    child: Child,
    state: PathBuf,
    port: u16,
}

impl Host {
    fn start(ns: &Netns, state: &Path, port: u16, client_pub: &Path) -> Host {
        std::fs::create_dir_all(state).unwrap();
        keygen(&state.join("host_ed25519"), "ed25519");
        std::fs::copy(client_pub, state.join("authorized_keys")).unwrap();
        write_sshd_config(state, "127.0.0.1", port);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/netns-libvirt-host.sh");
        let child = ns
            .enter()
            .args([
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "--pid",
                "--fork",
            ])
            .args(["--mount-proc", "--", "bash"])
            .arg(&script)
            .arg(state)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(state.join("script.log")).unwrap())
            .spawn()
            .expect("nsenter and unshare");
        let mut host = Host {
            child,
            state: state.to_path_buf(),
            port,
        };
        let started = Instant::now();
        while !state.join("ready").exists() {
            if let Ok(Some(status)) = host.child.try_wait() {
                panic!("host on port {port} ended ({status}): {}", host.logs());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{}",
                host.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        host
    }

    fn uri(&self, key: &Path) -> String {
        format!(
            "qemu+ssh://root@127.0.0.1:{}/system?keyfile={}&no_verify=1",
            self.port,
            key.display()
        )
    }

    /// The URI as the reports name the host: without its parameters.
    fn label(&self) -> String {
        format!("qemu+ssh://root@127.0.0.1:{}/system", self.port)
    }

    /// The tails of the host's daemon logs and of each domain's QEMU log (a QEMU that died
    /// says why only there).
    fn logs(&self) -> String {
        let mut files: Vec<PathBuf> = ["script.log", "sshd.log", "libvirtd.log"]
            .iter()
            .map(|f| self.state.join(f))
            .collect();
        if let Ok(entries) = std::fs::read_dir(self.state.join("log/qemu")) {
            let mut qemu: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            qemu.sort();
            files.extend(qemu);
        }
        files
            .iter()
            .map(|f| tail(f, 30))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The host's first process (pid 1 of its pid namespace).
    fn first_process(&self) -> Option<u32> {
        descendants(self.child.id()).first().copied()
    }

    /// The names of the domains this host's libvirtd runs, through its own socket.
    fn domains(&self, ns: &Netns) -> Vec<String> {
        let Some(pid) = self.first_process() else {
            return Vec::new();
        };
        let out = ns
            .enter()
            .args(["nsenter", &format!("--mount=/proc/{pid}/ns/mnt"), "--"])
            .args(["virsh", "-c", "qemu:///system", "list", "--name"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }

    /// Every process of the host at once, as a power cut would.
    fn kill(&mut self) {
        if let Some(pid) = self.first_process() {
            // SAFETY: kill(2) of the first process of this test's own pid namespace.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A matrix of smoke over disk buses x sector sizes (every combination), in `dir`.
fn matrix(dir: &Path, buses: &[&str], sectors: &[&str]) -> PathBuf {
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    std::fs::copy(smoke, dir.join("smoke.toml")).unwrap();
    let list = |v: &[&str]| {
        v.iter()
            .map(|b| format!("{b:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "name = \"hosts\"\nbase = \"smoke.toml\"\nstrategy = \"full\"\n\n\
         [[axis]]\nkey = \"disks.install.bus\"\nvalues = [{}]\n\n\
         [[axis]]\nkey = \"disks.install.sector\"\nvalues = [{}]\n",
        list(buses),
        list(sectors)
    );
    let path = dir.join("hosts-matrix.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn hosts_file(dir: &Path, uris: &[String]) -> PathBuf {
    let text: String = uris
        .iter()
        .map(|u| format!("[[host]]\nuri = \"{u}\"\njobs = 1\n\n"))
        .collect();
    let path = dir.join("hosts.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `sno-harness matrix MATRIX --hosts HOSTS --out OUT` inside the namespace, started.
fn start_matrix(ns: &Netns, matrix: &Path, hosts: &Path, out: &Path, state: &Path) -> Child {
    ns.enter()
        .arg(env!("CARGO_BIN_EXE_sno-harness"))
        .args(["matrix"])
        .arg(matrix)
        .arg("--hosts")
        .arg(hosts)
        .arg("--out")
        .arg(out)
        .env("SNO_HARNESS_STATE_DIR", state)
        .env("SNO_HARNESS_PROGRESS", "plain")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&out.join("summary.json"))).unwrap()
}

/// A work directory only root may enter: a remote host's QEMU must never need the run's files.
fn work_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::Builder::new()
        .prefix("sno-hosts-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    work
}

/// Two hosts in one namespace, and the work directory with the client key both accept.
/// Dropped in this order: the hosts, then the namespace, then the files.
struct Lab {
    a: Host,
    b: Host,
    ns: Netns,
    work: tempfile::TempDir,
}

impl Lab {
    fn start() -> Lab {
        let work = work_dir();
        let w = work.path();
        keygen(&w.join("client"), "ed25519");
        let ns = Netns::new();
        let client = w.join("client.pub");
        Lab {
            a: Host::start(&ns, &w.join("host-a"), 2201, &client),
            b: Host::start(&ns, &w.join("host-b"), 2202, &client),
            ns,
            work,
        }
    }
}

#[test]
fn a_host_lost_mid_matrix_ends_its_run_as_an_error_naming_it_and_the_rest_run_elsewhere() {
    let Lab { a, mut b, ns, work } = Lab::start();
    let w = work.path();
    let hosts = hosts_file(w, &[a.uri(&w.join("client")), b.uri(&w.join("client"))]);
    let matrix = matrix(w, &["virtio", "sata", "scsi"], &["512"]);
    let out = w.join("out");
    let started = Instant::now();
    let mut child = start_matrix(&ns, &matrix, &hosts, &out, &w.join("state"));

    // Host b takes a permutation at once (both are free, it is the less loaded on the second
    // start); it goes away some seconds into that run.
    let deadline = Instant::now() + Duration::from_secs(600);
    while !b.domains(&ns).iter().any(|d| d.starts_with("sno-")) {
        assert!(
            Instant::now() < deadline,
            "no domain ever ran on host b: {}",
            b.logs()
        );
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            let (status, err) = (o.status, String::from_utf8_lossy(&o.stderr));
            panic!("the matrix ended early ({status}): {err}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(10));
    b.kill();
    let lost_at = started.elapsed();

    let ran: Output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    eprintln!("{stderr}");
    eprintln!(
        "host b went away {:.0} s in; the matrix took {:.0} s",
        lost_at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    // A run that ended as an error its scenario does not expect: the harness's exit 4 (the
    // host failed, not the system under test).
    assert_eq!(ran.status.code(), Some(4), "{stderr}\n{}", a.logs());
    let s = summary(&out);
    let perms = s["permutations"].as_array().unwrap();
    assert_eq!(perms.len(), 3, "{s}");
    let on = |label: &str| perms.iter().filter(|p| p["host"] == label).count();
    let errors: Vec<&serde_json::Value> =
        perms.iter().filter(|p| p["verdict"] == "error").collect();
    assert_eq!(errors.len(), 1, "{s}");
    let lost = errors[0];
    assert_eq!(lost["host"], b.label().as_str());
    let reason = lost["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "the libvirt host {} went away during the run",
            b.label()
        )),
        "{reason}"
    );
    // The record in the permutation's own directory says the same.
    let dir = out.join(lost["path"].as_str().unwrap());
    let result: serde_json::Value = serde_json::from_str(&read(&dir.join("result.json"))).unwrap();
    assert_eq!(result["verdict"], "error");
    assert_eq!(result["libvirt_host"], b.label().as_str());
    // Everything else passed on the host that was left, b's queue included.
    for p in perms.iter().filter(|p| p["verdict"] != "error") {
        assert_eq!(p["verdict"], "pass", "{p}");
        assert_eq!(p["host"], a.label().as_str(), "{p}");
    }
    assert_eq!(on(&a.label()), 2, "{s}");
    assert!(stderr.contains(&format!("on {}", a.label())), "{stderr}");
    // Host a is left clean: no domain of the matrix.
    assert!(a.domains(&ns).is_empty(), "{:?}", a.domains(&ns));
}

/// The same 6 permutations on one host and on two (each 1 job at a time): the wall times for
/// the record. Ignored: two whole matrices, some 40 minutes under TCG on 2 cores.
#[test]
#[ignore]
fn six_permutations_on_one_host_and_on_two() {
    let Lab { a, b, ns, work } = Lab::start();
    let w = work.path();
    let matrix = matrix(w, &["virtio", "sata", "scsi"], &["512", "512e"]);
    let key = w.join("client");
    let mut walls = Vec::new();
    for (name, uris) in [
        ("two", vec![a.uri(&key), b.uri(&key)]),
        ("one", vec![a.uri(&key)]),
    ] {
        std::fs::create_dir_all(w.join(name)).unwrap();
        let hosts = hosts_file(&w.join(name), &uris);
        let out = w.join(name).join("out");
        let started = Instant::now();
        let ran = start_matrix(&ns, &matrix, &hosts, &out, &w.join("state"))
            .wait_with_output()
            .unwrap();
        let wall = started.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&ran.stderr);
        eprintln!("{stderr}");
        let logs = format!("{}\n{}", a.logs(), b.logs());
        assert_eq!(ran.status.code(), Some(0), "{name}: {stderr}\n{logs}");
        let s = summary(&out);
        assert_eq!(s["counts"]["pass"], 6, "{s}\n{logs}");
        // Every host given took permutations.
        let used: std::collections::BTreeSet<&str> = s["permutations"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["host"].as_str())
            .collect();
        assert_eq!(used.len(), uris.len(), "{s}");
        eprintln!("6 permutations on {name} host(s), 1 job each: wall {wall:.1} s");
        walls.push((name, wall));
    }
    eprintln!("6 permutations, 1 job per host: {walls:?}");
}

/// The last `lines` lines of `file`, headed by its path (empty if it cannot be read).
fn tail(file: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let last: Vec<&str> = text.lines().rev().take(lines).collect();
    let last: Vec<&str> = last.into_iter().rev().collect();
    format!("--- {}:\n{}", file.display(), last.join("\n"))
}

/// An sshd that is only a jump host: on `listen`:`port` inside `ns`, no libvirt behind it.
struct JumpHost {
    child: Child,
    state: PathBuf,
}

impl JumpHost {
    fn start(ns: &Netns, state: &Path, listen: &str, port: u16, client_pub: &Path) -> JumpHost {
        std::fs::create_dir_all(state).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        keygen(&state.join("host_ed25519"), "ed25519");
        std::fs::copy(client_pub, state.join("authorized_keys")).unwrap();
        write_sshd_config(state, listen, port);
        let child = ns
            .enter()
            .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(state.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(state.join("sshd.log")).unwrap())
            .spawn()
            .expect("sshd");
        let jump = JumpHost {
            child,
            state: state.to_path_buf(),
        };
        let started = Instant::now();
        while !ns.reaches(listen, port) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the jump host's sshd: {}",
                read(&state.join("sshd.log"))
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        jump
    }
}

impl Drop for JumpHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `[addr]:port KEY` for known_hosts, from STATE's host key.
fn known_host(addr: &str, port: u16, state: &Path) -> String {
    let public = read(&state.join("host_ed25519.pub"));
    let key: Vec<&str> = public.split_whitespace().take(2).collect();
    format!("[{addr}]:{port} {}\n", key.join(" "))
}

/// A copy of /etc/passwd whose root has `home`: OpenSSH finds `~/.ssh` through the password
/// database, not $HOME, so this is how a test gives ssh (libvirt's and the harness's) a
/// ~/.ssh/config of its own without touching the machine's.
fn passwd_with_root_home(home: &Path, into: &Path) -> PathBuf {
    let text: String = read(Path::new("/etc/passwd"))
        .lines()
        .map(|line| {
            let mut fields: Vec<&str> = line.split(':').collect();
            let home = home.to_str().unwrap();
            if fields.first() == Some(&"root") && fields.len() == 7 {
                fields[5] = home;
            }
            format!("{}\n", fields.join(":"))
        })
        .collect();
    let path = into.join("passwd");
    std::fs::write(&path, text).unwrap();
    path
}

/// A lab host behind a bastion, as labs often are: the harness's own namespace reaches only the
/// jump host (over a veth pair), and the libvirt host's sshd listens on the lab's loopback. The
/// URI is a bare alias (`qemu+ssh://labhost/system`: no user, port, key or `no_verify`); the
/// user's ~/.ssh/config names the jump host, the user, the port, the key and a known_hosts file
/// with strict checking. libvirt reaches the host that way, and the run's forwards (the guest's
/// SSH and API server) must too, or the run cannot pass.
#[test]
fn a_host_behind_a_jump_host_is_reached_as_the_users_ssh_config_says() {
    let work = work_dir();
    let w = work.path();
    keygen(&w.join("client"), "ed25519");
    let client_pub = w.join("client.pub");
    let lab = Netns::new();
    let host = Host::start(&lab, &w.join("host"), 2201, &client_pub);
    // After the host started: its script refuses a namespace with any link besides lo.
    let here = Netns::new();
    here.link(&lab, "10.251.0.1", "10.251.0.2");
    let jump = JumpHost::start(&lab, &w.join("jump"), "10.251.0.2", 2200, &client_pub);
    assert!(
        here.reaches("10.251.0.2", 2200),
        "the jump host is reachable"
    );
    for (addr, port) in [("127.0.0.1", 2201), ("10.251.0.2", 2201)] {
        assert!(
            !here.reaches(addr, port),
            "the host is not reachable directly"
        );
    }

    let home = w.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let known = home.join(".ssh/known_hosts");
    let known_text = known_host("10.251.0.2", 2200, &jump.state)
        + &known_host("127.0.0.1", 2201, &w.join("host"));
    std::fs::write(&known, known_text).unwrap();
    let config = format!(
        "Host jump\n  HostName 10.251.0.2\n  Port 2200\n\n\
         Host labhost\n  HostName 127.0.0.1\n  Port 2201\n  ProxyJump jump\n\n\
         Host *\n  User root\n  IdentityFile {key}\n  IdentitiesOnly yes\n\
         \x20 UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n",
        key = w.join("client").display(),
        known = known.display(),
    );
    std::fs::write(home.join(".ssh/config"), config).unwrap();
    let passwd = passwd_with_root_home(&home, w);

    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    let out = w.join("out");
    let uri = "qemu+ssh://labhost/system";
    let started = Instant::now();
    let ran = here
        .enter()
        .args(["unshare", "--mount", "--propagation", "private", "--"])
        .args([
            "bash",
            "-c",
            "mount --bind \"$0\" /etc/passwd && exec \"$@\"",
        ])
        .arg(&passwd)
        .arg(env!("CARGO_BIN_EXE_sno-harness"))
        .arg("run")
        .arg(&smoke)
        .args(["--backend", "libvirt", "--connect", uri, "--out"])
        .arg(&out)
        .env("SNO_HARNESS_STATE_DIR", w.join("state"))
        .env("SNO_HARNESS_PROGRESS", "plain")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    eprintln!("{stderr}");
    eprintln!(
        "the run through the jump host took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let jump_log = read(&jump.state.join("sshd.log"));
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{stderr}\n--- jump host:\n{jump_log}\n{}",
        host.logs()
    );
    let result: serde_json::Value =
        serde_json::from_str(&read(&out.join("smoke/result.json"))).unwrap();
    assert_eq!(result["verdict"], "pass", "{result}");
    assert_eq!(result["libvirt_host"], uri);
    // Everything went through the jump host: libvirt's connection and the forwards' one.
    let logins = jump_log.matches("Accepted publickey for root").count();
    assert!(logins >= 2, "{logins} logins on the jump host:\n{jump_log}");
    // Nothing is left: no ssh to the host, no domain on it.
    let ssh_left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.starts_with("ssh ") && c.contains("labhost"))
        .collect();
    assert!(ssh_left.is_empty(), "{ssh_left:?}");
    assert!(host.domains(&lab).is_empty(), "{:?}", host.domains(&lab));
}
