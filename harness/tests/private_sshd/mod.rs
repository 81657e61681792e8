//! A private sshd for tests: openssh-server's binary (never the system service) on 127.0.0.1
//! with host keys, an authorized client key (`client`) and its config in a temporary
//! directory. Used by the SSH tunnel's unit tests (through `#[path]`) and by the remote
//! libvirt tests; each user takes the parts it needs.
#![allow(dead_code)]

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn keygen(path: &Path, kind: &str) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", "", "-C", "sno-harness-test", "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen (openssh-client) is installed");
    assert!(
        out.status.success(),
        "ssh-keygen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// This process's pids below `pid`, recursively (from /proc).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parents = std::collections::HashMap::<u32, Vec<u32>>::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces and parentheses.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        parents.entry(ppid).or_default().push(child);
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &c in parents.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

/// A private sshd: host keys, an authorized client key and its config in a temporary
/// directory, listening on 127.0.0.1 only. Killed (with its session processes) on drop.
pub struct Sshd {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Sshd {
    pub fn start() -> Sshd {
        Sshd::start_with("")
    }

    /// With `extra` lines appended to sshd_config (`SetEnv PATH=...` for a test's own tools).
    pub fn start_with(extra: &str) -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_ed25519"), "ed25519");
        keygen(&d.join("host_ecdsa"), "ecdsa");
        keygen(&d.join("client"), "ed25519");
        std::fs::copy(d.join("client.pub"), d.join("authorized_keys")).unwrap();
        // sshd running as root insists on its privilege separation directory, which the
        // system service would create.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = free_port();
        let config = format!(
            "Port {port}\n\
             ListenAddress 127.0.0.1\n\
             HostKey {d}/host_ed25519\n\
             HostKey {d}/host_ecdsa\n\
             AuthorizedKeysFile {d}/authorized_keys\n\
             StrictModes no\n\
             UsePAM no\n\
             PermitRootLogin yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             AllowTcpForwarding yes\n\
             PidFile {d}/sshd.pid\n\
             LogLevel VERBOSE\n{extra}",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let log = File::create(d.join("sshd.log")).unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("/usr/sbin/sshd (openssh-server) is installed");
        let mut sshd = Sshd { child, port, dir };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = sshd.child.try_wait() {
                panic!("sshd exited ({status}): {}", sshd.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd: {}",
                sshd.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn log(&self) -> String {
        read(&self.path("sshd.log"))
    }

    /// The sshd processes serving connections (children of the listener).
    pub fn sessions(&self) -> Vec<u32> {
        descendants(self.child.id())
    }
}

impl Drop for Sshd {
    /// Lets the session processes end (the tests' connections are closed by now) while
    /// the listener still reaps them, then kills what is left and the listener. Killed
    /// first, sessions and their privilege-separated children would be left to init as
    /// zombies.
    fn drop(&mut self) {
        let started = Instant::now();
        while !self.sessions().is_empty() && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        for pid in self.sessions() {
            // SAFETY: plain kill(2) of a process this test's sshd started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
