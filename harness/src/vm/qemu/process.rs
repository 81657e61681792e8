//! The QEMU process: started in its own process group with a parent-death signal, so that it
//! dies with the harness even on SIGKILL; killed and reaped on drop. A `--keep` run's QEMU is
//! started without that signal so that, once the run has passed, it can be detached and run on
//! with the cluster for the user; until then a forced exit kills it (`kill_untethered`), and
//! after it `sno-harness gc` stops it by its registration.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{qemu_argv_started, QEMU_BINARY};
use crate::guest::console::Console;
use crate::util::socket_path;
use crate::vm::VmSpec;

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// `hint` says what to do when that is known (QEMU not installed), else is empty.
    #[error("starting {binary}: {source}{hint}")]
    Spawn {
        binary: String,
        #[source]
        source: std::io::Error,
        hint: String,
    },
    #[error("QEMU exited during start-up ({status}); its stderr says: {stderr}{hint}")]
    EarlyExit {
        status: String,
        stderr: String,
        hint: String,
    },
    #[error("QEMU's serial socket {path} did not accept a connection within {secs} s")]
    SerialSocket { path: PathBuf, secs: u64 },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

pub struct QemuProcess {
    child: Child,
    stderr_path: PathBuf,
    argv: Vec<String>,
    /// Left running on drop: handed to the user.
    detached: bool,
}

/// Whether QEMU dies with the harness or may be left running after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tether {
    /// The parent-death signal: QEMU dies with the harness's starting thread, even on SIGKILL.
    DiesWithHarness,
    /// No parent-death signal; killed on drop and on a forced exit unless detached.
    MayOutlive,
}

/// The process groups of the QEMUs started `MayOutlive` and not yet killed or detached.
static UNTETHERED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn untethered() -> std::sync::MutexGuard<'static, Vec<u32>> {
    UNTETHERED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills every QEMU that has no parent-death signal and was not handed on: for the harness's
/// forced exit (a second Ctrl-C), which ends the process without running drops.
pub fn kill_untethered() {
    for pid in untethered().drain(..) {
        // SAFETY: signalling the process group of a QEMU this process started and still owns.
        unsafe {
            libc::kill(-(pid as i32), libc::SIGKILL);
        }
    }
}

impl QemuProcess {
    /// Starts QEMU for `spec`, with its stderr in `dir/qemu.stderr`, and attaches the serial
    /// console (QEMU waits for that connection before it runs the guest, so no output is lost).
    ///
    /// The parent-death signal is tied to the calling *thread*: call this from a thread that
    /// lives as long as the VM should (not from `spawn_blocking`, whose threads exit when idle).
    pub fn start(spec: &VmSpec, dir: &Path) -> Result<(QemuProcess, Console), QemuError> {
        Self::start_with(spec, dir, false, Tether::DiesWithHarness)
    }

    /// `start`, or with `incoming`, a QEMU that waits paused for a saved state
    /// (`-incoming defer`; see `state_file::load`).
    pub fn start_with(
        spec: &VmSpec,
        dir: &Path,
        incoming: bool,
        tether: Tether,
    ) -> Result<(QemuProcess, Console), QemuError> {
        let socket_dir = socket_dir_for_qemu(spec)?;
        let socket_dir_fd = socket_dir.as_ref().map(|d| d.as_raw_fd());
        let mut argv = qemu_argv_started(spec, socket_dir_fd);
        if incoming {
            argv.extend(["-incoming".to_string(), "defer".to_string()]);
        }
        let stderr_path = dir.join("qemu.stderr");
        let stderr = File::create(&stderr_path).map_err(|e| QemuError::Io {
            what: format!("creating {}", stderr_path.display()),
            source: e,
        })?;
        let mut cmd = Command::new(QEMU_BINARY);
        cmd.args(&argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if tether == Tether::DiesWithHarness
                    && libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(fd) = socket_dir_fd {
                    keep_open_across_exec(fd)?;
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| QemuError::Spawn {
            binary: QEMU_BINARY.into(),
            hint: spawn_hint(&e),
            source: e,
        })?;
        if tether == Tether::MayOutlive {
            untethered().push(child.id());
        }
        let mut proc = QemuProcess {
            child,
            stderr_path,
            argv,
            detached: false,
        };
        let stream = proc.connect_serial(&spec.serial_socket)?;
        let console =
            Console::attach(stream, &dir.join("serial.log")).map_err(|e| QemuError::Io {
                what: "attaching the serial console".into(),
                source: e,
            })?;
        proc.wait_past_start_up()?;
        Ok((proc, console))
    }

    /// QEMU builds the rest of the machine, the NIC's host forwards among it, only once the
    /// serial console is connected. A failure there (a host port taken) ends QEMU at once; it
    /// is caught here, with QEMU's own words, instead of surfacing later as a QMP socket that
    /// never answers. QEMU creates its vCPU threads (named "CPU 0/TCG" and so on, by
    /// `debug-threads=on`) after its network backends, so their presence is the all-clear;
    /// the bound only matters should a QEMU name its threads otherwise.
    fn wait_past_start_up(&mut self) -> Result<(), QemuError> {
        let limit = Duration::from_secs(5);
        let start = Instant::now();
        loop {
            self.check_running()?;
            if self.has_vcpu_thread() || start.elapsed() > limit {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn has_vcpu_thread(&self) -> bool {
        let tasks = PathBuf::from(format!("/proc/{}/task", self.child.id()));
        std::fs::read_dir(tasks)
            .into_iter()
            .flatten()
            .flatten()
            .any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|comm| comm.starts_with("CPU "))
            })
    }

    /// `EarlyExit` with QEMU's stderr once QEMU has exited.
    fn check_running(&mut self) -> Result<(), QemuError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                // Without QEMU's "info:" lines (it waits for the console), which are no error.
                let stderr = std::fs::read_to_string(&self.stderr_path)
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| !l.contains(": info: "))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .trim()
                    .to_string();
                Err(QemuError::EarlyExit {
                    status: status.to_string(),
                    hint: start_up_hint(&stderr),
                    stderr,
                })
            }
            Err(e) => Err(QemuError::Io {
                what: "polling QEMU".into(),
                source: e,
            }),
        }
    }

    fn connect_serial(&mut self, path: &Path) -> Result<UnixStream, QemuError> {
        let limit = Duration::from_secs(30);
        let start = Instant::now();
        let reachable = socket_path::Reachable::new(path).map_err(|e| QemuError::Io {
            what: format!("opening the directory of {}", path.display()),
            source: e,
        })?;
        loop {
            self.check_running()?;
            if let Ok(s) = UnixStream::connect(reachable.path()) {
                return Ok(s);
            }
            if start.elapsed() > limit {
                return Err(QemuError::SerialSocket {
                    path: path.to_path_buf(),
                    secs: limit.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the QEMU process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Leaves QEMU running when this is dropped; Err when it was started tied to the harness
    /// (it would die with it anyway) or has exited.
    pub fn detach(&mut self) -> Result<u32, String> {
        let pid = self.child.id();
        let mut list = untethered();
        let Some(at) = list.iter().position(|p| *p == pid) else {
            return Err("QEMU was started to die with the harness".into());
        };
        if !self.is_running() {
            return Err("QEMU has exited".into());
        }
        list.remove(at);
        self.detached = true;
        Ok(pid)
    }

    /// Kills QEMU (SIGKILL to its process group) and reaps it.
    pub fn kill(&mut self) {
        untethered().retain(|p| *p != self.child.id());
        if self.is_running() {
            // SAFETY: signalling our own child's process group.
            unsafe {
                libc::kill(-(self.child.id() as i32), libc::SIGKILL);
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    /// The command line in a form that can be pasted into a shell.
    pub fn command_line(&self) -> String {
        super::argv::shell_command_line(&self.argv)
    }
}

/// What to do when QEMU cannot be started: a missing binary is a host that is not ready.
fn spawn_hint(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        format!(
            "; QEMU is not installed or {QEMU_BINARY} is not on PATH: install it (Debian and \
             Ubuntu: apt-get install qemu-system-x86; Fedora: dnf install qemu-system-x86-core) \
             and check the host with `sno-harness doctor`"
        )
    } else {
        String::new()
    }
}

/// What to do about a start-up failure QEMU reported, when the harness knows; else empty.
pub fn start_up_hint(stderr: &str) -> String {
    // QEMU 7.2's words when open(O_DIRECT) fails with EINVAL and a plain open works.
    if stderr.contains("filesystem does not support O_DIRECT") {
        return "; cache = \"none\" and \"directsync\" (which aio = \"native\" needs) open the \
                disk image with O_DIRECT, and the filesystem of the run's private directory \
                does not support it (ramfs, tmpfs before Linux 6.6, some FUSE and network \
                filesystems): set SNO_HARNESS_PRIVATE_DIR to a directory on a disk filesystem \
                such as ext4 or XFS, or use cache = \"unsafe\" or \"writeback\" with aio = \
                \"threads\" or \"io_uring\""
            .into();
    }
    if stderr.contains("Unable to use io_uring") {
        return "; QEMU could not set up io_uring for aio = \"io_uring\": this host's kernel \
                refuses it (sysctl kernel.io_uring_disabled, or a seccomp filter); use \
                aio = \"threads\", or \"native\" with cache = \"none\""
            .into();
    }
    const RULE: &str = "Could not set up host forwarding rule '";
    let Some(at) = stderr.find(RULE) else {
        return String::new();
    };
    // The rule reads `tcp:127.0.0.1:40123-:22`: the host port is between the last ':' before
    // the '-' and the '-'.
    let rule = &stderr[at + RULE.len()..];
    let host = rule.split('-').next().unwrap_or("");
    match host.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()) {
        Some(port) => format!(
            "; host port {port} is taken by another process (`ss -ltnp 'sport = :{port}'` shows \
             which); the harness picks free ports anew on every run, so run again"
        ),
        None => "; a forwarded host port is taken by another process; run again".into(),
    }
}

impl Drop for QemuProcess {
    fn drop(&mut self) {
        if !self.detached {
            self.kill();
        }
    }
}

/// The directory QEMU binds its long socket paths through (`socket_path::for_qemu`), opened,
/// when a socket's path is too long for a socket address; `None` when every path fits.
fn socket_dir_for_qemu(spec: &VmSpec) -> Result<Option<File>, QemuError> {
    let long: Vec<&Path> = std::iter::once(spec.serial_socket.as_path())
        .chain(spec.qmp_socket.as_deref())
        .filter(|p| !socket_path::fits(p))
        .collect();
    let Some(first) = long.first() else {
        return Ok(None);
    };
    let dir = first.parent().unwrap_or(Path::new("/"));
    if long.iter().any(|p| p.parent() != Some(dir)) {
        return Err(QemuError::Io {
            what: format!(
                "placing QEMU's sockets: paths longer than {} bytes must share a directory",
                socket_path::MAX_SOCKET_PATH
            ),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        });
    }
    File::open(dir).map(Some).map_err(|e| QemuError::Io {
        what: format!("opening {} for QEMU's sockets", dir.display()),
        source: e,
    })
}

/// In the child before exec: `fd` (the parent's, of the same number) stays open in QEMU.
fn keep_open_across_exec(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl is async-signal-safe.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::start_up_hint;

    #[test]
    fn a_filesystem_without_o_direct_is_named_with_what_to_do() {
        // What QEMU 7.2 printed for cache=none, aio=native on a ramfs (and cache=directsync).
        let stderr = "qemu-system-x86_64: -drive file=/tmp/ioprobe/ramfs/x.qcow2,format=qcow2,if=none,id=install,cache=none,aio=native: Could not open '/tmp/ioprobe/ramfs/x.qcow2': filesystem does not support O_DIRECT";
        let h = start_up_hint(stderr);
        assert!(h.starts_with("; "), "{h}");
        for said in [
            "O_DIRECT",
            "tmpfs",
            "SNO_HARNESS_PRIVATE_DIR",
            "cache = \"unsafe\"",
        ] {
            assert!(h.contains(said), "{said:?} not in {h}");
        }
    }

    #[test]
    fn a_kernel_without_io_uring_is_named_with_what_to_do() {
        let stderr = "qemu-system-x86_64: -drive file=/r/disks/install.qcow2,format=qcow2,if=none,id=install,discard=unmap,cache=unsafe,aio=io_uring: Unable to use io_uring: failed to init linux io_uring ring: Operation not permitted";
        let h = start_up_hint(stderr);
        assert!(h.contains("kernel.io_uring_disabled"), "{h}");
        assert!(h.contains("aio = \"threads\""), "{h}");
    }

    #[test]
    fn other_failures_get_no_disk_hint() {
        assert_eq!(
            start_up_hint(
                "qemu-system-x86_64: -drive x: Could not open 'x': No such file or directory"
            ),
            ""
        );
    }
}
