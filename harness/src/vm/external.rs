//! A machine the harness did not boot (`observe`): its "VM" starts nothing and ends nothing.
//! What it has of a VM is where the harness reaches it (the addresses it was given, in place of
//! the forwards a VM of the harness's would have) and its console when there is a way to read
//! one: a log file followed as it grows, or a command that prints it. Either is fed into the
//! same `Console` a VM's serial socket feeds, so serial.log and the console's signals are as
//! for a VM; without one the console is a stream that never says anything.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::backend::{ConsoleSource, ExternalMachine};
use crate::guest::console::Console;

/// How often a followed console log is read again once it has nothing new.
const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// How much of the console one read takes.
const CHUNK: usize = 64 * 1024;

pub struct ExternalVm {
    machine: ExternalMachine,
    /// `[ssh, api]` as the run planned them, each mapped to the address the machine was given.
    planned: Vec<(SocketAddr, SocketAddr)>,
    stop: Arc<AtomicBool>,
    /// The console command's process group, stopped with the run.
    command: Option<std::process::Child>,
    /// The console's other end while no source writes into it: the console stays open.
    _silent: Option<UnixStream>,
}

impl ExternalVm {
    /// "Starts" it: nothing is booted. `reach` is the run's plan of where it reaches the
    /// guest's SSH and API (in that order), which `local_addr` maps to the given addresses.
    pub fn start(
        machine: &ExternalMachine,
        reach: &[SocketAddr],
        dir: &Path,
    ) -> std::io::Result<(ExternalVm, Console)> {
        let (peer, ours) = UnixStream::pair()?;
        let console = Console::attach(ours, &dir.join("serial.log"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let given = [machine.ssh, machine.api];
        let mut vm = ExternalVm {
            machine: machine.clone(),
            planned: reach.iter().copied().zip(given).collect(),
            stop: stop.clone(),
            command: None,
            _silent: None,
        };
        match &machine.console {
            None => vm._silent = Some(peer),
            Some(ConsoleSource::Log(path)) => follow_log(path.clone(), peer, stop)?,
            Some(ConsoleSource::Command(cmd)) => vm.command = Some(run_console_command(cmd, peer)?),
        }
        Ok((vm, console))
    }

    /// Where this host reaches the guest's `addr`: the address given for it.
    pub fn local_addr(&self, addr: SocketAddr) -> SocketAddr {
        self.planned
            .iter()
            .find(|(planned, _)| *planned == addr)
            .map_or(addr, |(_, given)| *given)
    }

    /// For vm.txt: what the harness knows of the machine.
    pub fn describe(&self) -> String {
        let console = match &self.machine.console {
            None => "no console".to_string(),
            Some(ConsoleSource::Log(p)) => format!("console from the log {}", p.display()),
            Some(ConsoleSource::Command(c)) => format!("console from the command `{c}`"),
        };
        format!(
            "a machine the harness did not boot: SSH {}@{}, API {}, {console}",
            self.machine.user, self.machine.ssh, self.machine.api
        )
    }

    /// Stops reading the console (and its command); the machine itself runs on.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(mut child) = self.command.take() {
            let pgid = child.id() as i32;
            // SAFETY: kill(2) on the process group this process created for the command.
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = child.wait();
        }
    }
}

impl Drop for ExternalVm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Follows `path` from its start into `peer` until `stop`: what is appended is read as it
/// comes; a file that shrinks (rotated, truncated) is read again from its start. A file not
/// there yet is waited for.
fn follow_log(path: PathBuf, mut peer: UnixStream, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("console-log".into())
        .spawn(move || {
            let mut at = 0u64;
            let mut buf = vec![0u8; CHUNK];
            while !stop.load(Ordering::SeqCst) {
                let Ok(mut f) = std::fs::File::open(&path) else {
                    std::thread::sleep(FOLLOW_POLL);
                    continue;
                };
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                if len < at {
                    at = 0;
                }
                let _ = std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(at));
                let n = f.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    std::thread::sleep(FOLLOW_POLL);
                    continue;
                }
                at += n as u64;
                if peer.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

/// Runs the console command in a process group of its own, its standard output into `peer`;
/// its standard error is not the console and is left out.
fn run_console_command(cmd: &str, peer: UnixStream) -> std::io::Result<std::process::Child> {
    std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(peer)))
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(console: Option<ConsoleSource>) -> ExternalMachine {
        ExternalMachine {
            ssh: "192.0.2.7:2222".parse().unwrap(),
            user: "core".into(),
            api: "192.0.2.7:6443".parse().unwrap(),
            console,
        }
    }

    #[test]
    fn the_planned_addresses_are_the_given_ones() {
        let d = tempfile::tempdir().unwrap();
        let planned: [SocketAddr; 2] = [
            "127.0.0.1:4001".parse().unwrap(),
            "127.0.0.1:4002".parse().unwrap(),
        ];
        let (vm, _console) = ExternalVm::start(&machine(None), &planned, d.path()).unwrap();
        assert_eq!(vm.local_addr(planned[0]), "192.0.2.7:2222".parse().unwrap());
        assert_eq!(vm.local_addr(planned[1]), "192.0.2.7:6443".parse().unwrap());
        assert!(vm.describe().contains("no console"), "{}", vm.describe());
    }

    #[test]
    fn a_console_log_is_followed_as_it_grows() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("console.log");
        std::fs::write(&log, "SeaBIOS\n").unwrap();
        let m = machine(Some(ConsoleSource::Log(log.clone())));
        let (mut vm, console) = ExternalVm::start(&m, &[], d.path()).unwrap();
        console
            .wait_for_text("SeaBIOS", Duration::from_secs(10))
            .unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(b"Linux version 6.1\n")
            .unwrap();
        console
            .wait_for_text("Linux version", Duration::from_secs(10))
            .unwrap();
        vm.stop();
        let saved = std::fs::read_to_string(d.path().join("serial.log")).unwrap();
        assert!(
            saved.contains("SeaBIOS") && saved.contains("Linux version"),
            "{saved}"
        );
    }

    #[test]
    fn a_console_command_is_read_and_its_end_closes_the_console() {
        let d = tempfile::tempdir().unwrap();
        let m = machine(Some(ConsoleSource::Command(
            "echo login: ; echo oops >&2".into(),
        )));
        let (_vm, console) = ExternalVm::start(&m, &[], d.path()).unwrap();
        console
            .wait_for_text("login:", Duration::from_secs(10))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !console.is_closed() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(console.is_closed(), "the command ended: so did its console");
    }

    #[test]
    fn stopping_ends_a_console_command_that_runs_on() {
        let d = tempfile::tempdir().unwrap();
        let m = machine(Some(ConsoleSource::Command(
            "echo up; exec sleep 600".into(),
        )));
        let (mut vm, console) = ExternalVm::start(&m, &[], d.path()).unwrap();
        console
            .wait_for_text("up", Duration::from_secs(10))
            .unwrap();
        let pid = vm.command.as_ref().unwrap().id();
        let t = std::time::Instant::now();
        vm.stop();
        assert!(t.elapsed() < Duration::from_secs(3));
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }
}
