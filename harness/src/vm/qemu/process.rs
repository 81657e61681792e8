//! The QEMU process: started in its own process group with a parent-death signal, so that it
//! dies with the harness even on SIGKILL; killed and reaped on drop.

use std::fs::File;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{qemu_argv, QEMU_BINARY};
use crate::guest::console::Console;
use crate::vm::VmSpec;

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error("starting {binary}: {source}")]
    Spawn {
        binary: String,
        #[source]
        source: std::io::Error,
    },
    #[error("QEMU exited during start-up ({status}); its stderr says: {stderr}")]
    EarlyExit { status: String, stderr: String },
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
}

impl QemuProcess {
    /// Starts QEMU for `spec`, with its stderr in `dir/qemu.stderr`, and attaches the serial
    /// console (QEMU waits for that connection before it runs the guest, so no output is lost).
    ///
    /// The parent-death signal is tied to the calling *thread*: call this from a thread that
    /// lives as long as the VM should (not from `spawn_blocking`, whose threads exit when idle).
    pub fn start(spec: &VmSpec, dir: &Path) -> Result<(QemuProcess, Console), QemuError> {
        let argv = qemu_argv(spec);
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
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| QemuError::Spawn {
            binary: QEMU_BINARY.into(),
            source: e,
        })?;
        let mut proc = QemuProcess {
            child,
            stderr_path,
            argv,
        };
        let stream = proc.connect_serial(&spec.serial_socket)?;
        let console =
            Console::attach(stream, &dir.join("serial.log")).map_err(|e| QemuError::Io {
                what: "attaching the serial console".into(),
                source: e,
            })?;
        Ok((proc, console))
    }

    fn connect_serial(&mut self, path: &Path) -> Result<UnixStream, QemuError> {
        let limit = Duration::from_secs(30);
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| QemuError::Io {
                what: "polling QEMU".into(),
                source: e,
            })? {
                return Err(QemuError::EarlyExit {
                    status: status.to_string(),
                    stderr: std::fs::read_to_string(&self.stderr_path)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                });
            }
            if let Ok(s) = UnixStream::connect(path) {
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

    /// Kills QEMU (SIGKILL to its process group) and reaps it.
    pub fn kill(&mut self) {
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

impl Drop for QemuProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
