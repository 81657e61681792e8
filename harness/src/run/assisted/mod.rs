//! The assisted-style install (`[install] mode = "assisted"`): the harness plays the assisted
//! installer's agent (assisted-installer's `src/installer/installer.go` InstallNode and
//! `src/ops/ops.go`). The live Ignition has install-to-disk.service masked (assets/assisted.rs);
//! once install-to-disk begins (bootkube done), the harness waits for the one file bootkube
//! promises the assisted flow, `/opt/openshift/master.ign`, then over SSH: resolves the
//! installation disk's link to its device and cleans the device's old LVM, MD RAID and
//! partition metadata (disk.rs), merges the scenario's host Ignition into master.ign
//! (ignition.rs), runs `coreos-installer install --insecure` up to 3 times, sets the EFI boot
//! entry on UEFI (boot_entry.rs), collects the live system's logs into the run (the agent
//! uploads them), and reboots the machine itself.
//!
//! Every step goes to the state machine as `Signal::Assisted`: coreos-installer's lines are
//! install-to-disk's evidence as its journal is otherwise, and its last attempt's exit code
//! ends the phase.

mod boot_entry;
mod disk;
mod guest;
mod ignition;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::flow::event::{AssistedStep, Signal, SignalTx, Source, INSTALL_ATTEMPTS};
use crate::guest::ssh::{SshSession, SshTarget};
use crate::scenario::files::host_ignition::read_host_ignition;
use crate::scenario::AssistedSection;

pub use guest::quote;

/// What bootkube writes for the installed system, and the agent installs with.
pub const MASTER_IGNITION: &str = "/opt/openshift/master.ign";
/// bootkube.sh's last act.
const BOOTKUBE_DONE: &str = "/opt/openshift/.bootkube.done";
/// The live system's logs, in the run directory.
pub const LOGS_DIR: &str = "assisted-logs";
pub const JOURNAL_FILE: &str = "live-journal.txt";
pub const VAR_LOG_FILE: &str = "live-var-log.tar.gz";
/// How long master.ign may take to appear once bootkube is done (it is written before
/// bootkube's end, so this is the time SSH takes to answer a loaded guest).
const MASTER_IGNITION_WAIT: Duration = Duration::from_secs(300);
/// coreos-installer prints its progress every second or so; this long a silence on a live
/// connection is a hung session, not a slow disk (the write-stall detector judges the disk).
const OUTPUT_SILENCE: Duration = Duration::from_secs(900);
/// How long a step waits for its login to the live system (see `login`).
const LOGIN_WAIT: Duration = Duration::from_secs(90);
/// How long a step's read or write on the live system may block.
const STEP_IO_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_JOURNAL: u64 = 64 << 20;
const MAX_VAR_LOG: u64 = 256 << 20;

/// coreos-installer's arguments: `--insecure`, the installed system's Ignition, the scenario's
/// own, then the install device. The agent passes `--insecure` on every install to a disk
/// (ops.go's installerArgs, used by WriteImageToDisk): the image comes from the live system
/// itself (osmet), which carries no signature to check.
pub fn installer_args(device: &str, a: &AssistedSection) -> Vec<String> {
    let mut args = vec![
        "install".to_string(),
        "--insecure".into(),
        "-i".into(),
        MASTER_IGNITION.into(),
    ];
    for k in &a.append_kargs {
        args.push("--append-karg".into());
        args.push(k.clone());
    }
    if a.copy_network {
        args.push("--copy-network".into());
    }
    args.push(device.to_string());
    args
}

/// The guest command line: coreos-installer as root, stderr with stdout so its lines keep
/// their order.
pub fn command_line(args: &[String]) -> String {
    let words: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!("sudo -n coreos-installer {} 2>&1", words.join(" "))
}

/// The assisted install of one run.
pub struct AssistedInstall {
    pub target: SshTarget,
    /// The installation disk as install-config names it.
    pub disk: String,
    pub section: AssistedSection,
    /// The scenario's firmware is UEFI: the agent then sets a boot entry.
    pub uefi: bool,
    /// The run directory (the logs go under LOGS_DIR).
    pub run_dir: PathBuf,
}

impl AssistedInstall {
    /// Runs the install in the background; everything it does reaches `signals`.
    pub fn spawn(self, signals: SignalTx) {
        tokio::task::spawn_blocking(move || {
            let say = |step| {
                let _ = signals.send((Source::Harness, Signal::Assisted(step)));
            };
            let note = |text: String| {
                let _ = signals.send((Source::Harness, Signal::Note { text }));
            };
            match self.install(&say, &|| signals.is_closed()) {
                // A run that has ended meanwhile (Ctrl-C) wants neither logs nor a reboot.
                Ok(_) if signals.is_closed() => {}
                Ok((0, device)) => {
                    say(AssistedStep::Exited { code: 0 });
                    say(self.boot_entry(&device));
                    say(AssistedStep::CollectingLogs);
                    say(AssistedStep::LogsCollected {
                        detail: self.collect_logs(),
                    });
                    say(AssistedStep::Rebooting);
                    match self.reboot() {
                        Ok(()) => {
                            note("assisted install: the harness rebooted the live system".into())
                        }
                        Err(detail) => say(AssistedStep::Broken { detail }),
                    }
                }
                Ok((code, _)) => {
                    // The agent uploads its logs before it reports the failure.
                    note(self.collect_logs());
                    say(AssistedStep::Exited { code });
                }
                Err(detail) => say(AssistedStep::Broken { detail }),
            }
        });
    }

    /// Waits for master.ign, prepares the device and master.ign, then runs coreos-installer
    /// until an attempt succeeds or the last one fails: that attempt's exit code, and the
    /// device. The wait stops as soon as the run has `ended` (nobody listens any more), so
    /// that a run ended by a failure or Ctrl-C does not wait on this thread.
    fn install(
        &self,
        say: &dyn Fn(AssistedStep),
        ended: &dyn Fn() -> bool,
    ) -> Result<(i32, String), String> {
        // Read first: a file that went bad since validation stops the install before it
        // touches the disk.
        let host = match &self.section.host_ignition {
            Some(p) => Some(
                read_host_ignition(p).map_err(|e| format!("the scenario's host Ignition: {e}"))?,
            ),
            None => None,
        };
        self.wait_for_master_ignition(ended)?;
        let device = self.prepare(host.as_ref(), say)?;
        let args = installer_args(&device, &self.section);
        for attempt in 1..=INSTALL_ATTEMPTS {
            let (code, error) = self.run_installer(&args, say)?;
            if code == 0 || attempt == INSTALL_ATTEMPTS || ended() {
                return Ok((code, device));
            }
            say(AssistedStep::Retrying {
                attempt,
                code,
                error,
            });
            // The agent's pause between attempts (installer.go: utils.Retry's interval).
            std::thread::sleep(Duration::from_secs(1));
        }
        unreachable!("the last attempt returns")
    }

    /// The agent's steps before it writes the disk, in its order: the device's link resolved
    /// and its old metadata cleaned (InstallNode's start), the host Ignition merged
    /// (updateSingleNodeIgnition). The kernel's device name, for coreos-installer.
    fn prepare(&self, host: Option<&Value>, say: &dyn Fn(AssistedStep)) -> Result<String, String> {
        let s = self.login()?;
        let device = disk::resolve(&s, &self.disk)
            .map_err(|e| format!("resolving the installation disk {}: {e}", self.disk))?;
        say(AssistedStep::DeviceResolved {
            link: self.disk.clone(),
            device: device.clone(),
        });
        disk::clean(&s, &device, say);
        if let (Some(host), Some(path)) = (host, &self.section.host_ignition) {
            let said = ignition::merge_into_master(&s, MASTER_IGNITION, host)
                .map_err(|e| format!("merging the host Ignition into {MASTER_IGNITION}: {e}"))?;
            say(AssistedStep::IgnitionMerged {
                detail: format!(
                    "host Ignition {} merged into {MASTER_IGNITION} ({said})",
                    path.display()
                ),
            });
        }
        Ok(device)
    }

    /// Waits until bootkube is done and its master.ign is on the live system: the agent waits
    /// for `.bootkube.done`, then for master.ign (installer.go's waitForBootkube and its
    /// `stat`), since bootkube rewrites master.ign up to its end (it adds the log bundle).
    fn wait_for_master_ignition(&self, ended: &dyn Fn() -> bool) -> Result<(), String> {
        let wait = format!("test -e {BOOTKUBE_DONE} && test -s {MASTER_IGNITION}");
        let found = crate::util::wait::wait_until_succeeds(
            format!("`{wait}` on the live system"),
            MASTER_IGNITION_WAIT,
            Duration::from_secs(1),
            || {
                if ended() {
                    return Ok(false);
                }
                self.target
                    .connect(Duration::from_secs(10))
                    .and_then(|s| s.succeed(&wait))
                    .map(|_| true)
            },
        )
        .map_err(|e| {
            format!("{BOOTKUBE_DONE} and {MASTER_IGNITION}, which bootkube writes for the install, are not on the live system: {e}")
        })?;
        if !found {
            return Err("the run ended before the install began".into());
        }
        Ok(())
    }

    /// One coreos-installer attempt to its end: its exit code and its last error line (or
    /// last line).
    fn run_installer(
        &self,
        args: &[String],
        say: &dyn Fn(AssistedStep),
    ) -> Result<(i32, Option<String>), String> {
        let session = self.login()?;
        session.set_io_timeout(OUTPUT_SILENCE);
        let command = command_line(args);
        say(AssistedStep::Started {
            command: command.clone(),
        });
        let mut ch = session.stream(&command).map_err(|e| e.to_string())?;
        let mut lines = LineSplitter::default();
        // The last `Error:` line, else the last line: what the attempt's failure quotes.
        let (mut last_error, mut last) = (None, None);
        let mut buf = [0u8; 8192];
        let mut each = |line: String| {
            if line.starts_with("Error:") {
                last_error = Some(line.clone());
            }
            last = Some(line.clone());
            say(AssistedStep::Output { line });
        };
        loop {
            let n = ch
                .read(&mut buf)
                .map_err(|e| format!("reading coreos-installer's output over SSH: {e}"))?;
            if n == 0 {
                break;
            }
            lines.push(&buf[..n]).into_iter().for_each(&mut each);
        }
        if let Some(line) = lines.take() {
            each(line);
        }
        let code = ch
            .wait_close()
            .and_then(|()| ch.exit_status())
            .map_err(|e| format!("coreos-installer's exit status over SSH: {e}"))?;
        Ok((code, last_error.or(last)))
    }

    /// The EFI boot entry after the install, on UEFI only (the agent skips BIOS machines).
    fn boot_entry(&self, device: &str) -> AssistedStep {
        if !self.uefi {
            return AssistedStep::BootEntryNotSet {
                detail: "the scenario's firmware is BIOS; the agent sets a boot entry on UEFI only"
                    .into(),
            };
        }
        match self.login().map(|s| boot_entry::set(&s, device)) {
            Ok(boot_entry::Outcome::Set(command)) => AssistedStep::BootEntrySet { command },
            Ok(boot_entry::Outcome::NotSet(detail)) | Err(detail) => {
                AssistedStep::BootEntryNotSet { detail }
            }
        }
    }

    /// A session on the live system, which is known to be up: logins are tried again until
    /// [`LOGIN_WAIT`], since one attempt can miss its few seconds' wait for sshd's banner on a
    /// loaded TCG guest (CI saw "Resource temporarily unavailable" right after an install).
    /// Its reads and writes may then block for [`STEP_IO_TIMEOUT`].
    fn login(&self) -> Result<SshSession, String> {
        let s = self
            .target
            .wait_for_ssh(LOGIN_WAIT)
            .map_err(|e| e.to_string())?;
        s.set_io_timeout(STEP_IO_TIMEOUT);
        Ok(s)
    }

    /// The live system's journal and /var/log into LOGS_DIR; what was collected, in words.
    fn collect_logs(&self) -> String {
        let dir = self.run_dir.join(LOGS_DIR);
        let got = self.login().and_then(|s| {
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let journal = fetch(
                &s,
                "sudo -n journalctl -b --no-pager -o short-iso-precise",
                MAX_JOURNAL,
                &dir.join(JOURNAL_FILE),
            )?;
            // The journal's own files are the text above; tar's exit 1 is a file that
            // changed while read (a log being written), which a live system's logs are.
            let var_log = fetch(
                &s,
                "sudo -n sh -c 'tar -C / --exclude=var/log/journal -czf - var/log; [ $? -le 1 ]'",
                MAX_VAR_LOG,
                &dir.join(VAR_LOG_FILE),
            )?;
            Ok((journal, var_log))
        });
        match got {
            Ok((j, v)) => format!(
                "assisted install: the live system's logs collected into {LOGS_DIR}/ (journal {:.1} MiB, /var/log {:.1} MiB)",
                j as f64 / 1048576.0,
                v as f64 / 1048576.0
            ),
            Err(e) => format!("assisted install: collecting the live system's logs failed: {e}"),
        }
    }

    /// Asks the live system to reboot. Its connection may drop before the answer: that is the
    /// reboot under way, not a failure.
    fn reboot(&self) -> Result<(), String> {
        let s = self
            .login()
            .map_err(|e| format!("reaching the live system to reboot it: {e}"))?;
        match s.exec("sudo -n systemctl reboot") {
            Ok(out) if out.status != 0 => Err(format!(
                "`sudo -n systemctl reboot` exited {}: {}",
                out.status,
                out.stderr.trim()
            )),
            _ => Ok(()),
        }
    }
}

/// Runs `command` and writes its stdout (at most `cap` bytes) to `to`, owner-only (logs carry
/// secrets); the bytes written.
fn fetch(s: &SshSession, command: &str, cap: u64, to: &Path) -> Result<u64, String> {
    let out = s.exec_bytes(command, cap).map_err(|e| e.to_string())?;
    if out.status != 0 && !out.truncated {
        return Err(format!(
            "`{command}` exited {}: {}",
            out.status,
            out.stderr.trim()
        ));
    }
    crate::assets::write_private(to, &out.stdout).map_err(|e| e.to_string())?;
    Ok(out.stdout.len() as u64)
}

/// Splits a byte stream into lines at `\n` and at `\r` (coreos-installer rewrites its progress
/// line with `\r` on a terminal), dropping empty ones.
#[derive(Default)]
struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' || b == b'\r' {
                out.extend(self.take());
            } else {
                self.partial.push(b);
            }
        }
        out
    }

    /// The line so far (the last one, at the end of the stream), if not empty.
    fn take(&mut self) -> Option<String> {
        let line = String::from_utf8_lossy(&self.partial)
            .trim_end()
            .to_string();
        self.partial.clear();
        (!line.is_empty()).then_some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_are_insecure_the_ignition_the_scenarios_own_and_the_device() {
        let a = AssistedSection {
            append_kargs: vec!["console=ttyS0,115200".into(), "rd.neednet=1".into()],
            copy_network: true,
            host_ignition: None,
        };
        let args = installer_args("/dev/vda", &a);
        assert_eq!(
            command_line(&args),
            "sudo -n coreos-installer install --insecure -i /opt/openshift/master.ign --append-karg console=ttyS0,115200 --append-karg rd.neednet=1 --copy-network /dev/vda 2>&1"
        );
        let bare = installer_args("/dev/nvme0n1", &AssistedSection::default());
        assert_eq!(
            bare,
            [
                "install",
                "--insecure",
                "-i",
                MASTER_IGNITION,
                "/dev/nvme0n1"
            ]
            .map(String::from)
        );
    }

    #[test]
    fn lines_split_at_newlines_and_carriage_returns_across_reads() {
        let mut s = LineSplitter::default();
        assert_eq!(
            s.push(b"Installing minisno\nRead disk 1"),
            ["Installing minisno"]
        );
        assert_eq!(
            s.push(b"0 MiB/80 MiB (12%)\rRead disk 20 MiB/80 MiB (25%)\r\n\nError: x"),
            [
                "Read disk 10 MiB/80 MiB (12%)",
                "Read disk 20 MiB/80 MiB (25%)"
            ]
        );
        assert_eq!(s.take().as_deref(), Some("Error: x"));
        assert_eq!(s.take(), None);
    }
}
