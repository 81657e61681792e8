//! The observers of a running VM, each turning what it sees into signals on the run's one
//! channel: the serial console, the install disk's write counter (block stats; for a multipath
//! disk over its paths, with the path fault played along it), the guest's status and journal
//! over SSH, from disk-boot on a multipath install's root devices, and, from api-ready on, the
//! cluster's API. Also the files that keep the BiP units' journal lines of each system.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::api_poller;
use super::multipath::{InstallDrive, MultipathDrive, PathAction, PathFault, WriteCounters};
use crate::flow::event::{MultipathStep, Signal, SignalTx, Source};
use crate::flow::phase::Phase;
use crate::guest::console::Console;
use crate::guest::follow::Followers;
use crate::guest::ssh::SshTarget;
use crate::health::checks::Inputs;
use crate::health::ApiEndpoint;
use crate::vm::running::RunningVm;

/// The observers' tasks and threads; `stop` (or drop) ends them.
pub struct Observers {
    blockstats: Option<tokio::task::JoinHandle<()>>,
    followers: Followers,
    api: Option<tokio::task::JoinHandle<()>>,
    /// A multipath install: where the root probe asks, from disk-boot on, and the probe.
    multipath: Option<SshTarget>,
    root_probe: Option<crate::guest::multipath::RootProbe>,
    endpoint: ApiEndpoint,
    checks: Inputs,
    tx: SignalTx,
}

impl Observers {
    /// Starts the console, block-stats and SSH observers (the API and a multipath install's
    /// root probe wait for their phases).
    pub fn start(
        vm: &RunningVm,
        console: &Console,
        install: InstallDrive,
        (target, run_dir): (&SshTarget, &Path),
        endpoint: ApiEndpoint,
        checks: Inputs,
        tx: &SignalTx,
    ) -> Observers {
        forward_console(console, tx);
        let multipath = install.multipath.is_some().then(|| target.clone());
        Observers {
            multipath,
            root_probe: None,
            blockstats: install
                .id
                .map(|drive| poll_blockstats(vm, (drive, install.multipath), tx)),
            followers: Followers::start(
                target.clone(),
                tx.clone(),
                Duration::from_secs(2),
                Some(run_dir.to_path_buf()),
            ),
            api: None,
            endpoint,
            checks,
            tx: tx.clone(),
        }
    }

    /// A phase started: disk-boot starts a multipath install's root probe, api-ready the API
    /// poller.
    pub fn on_phase_started(&mut self, p: Phase) {
        if let (Phase::DiskBoot, Some(target), None) = (p, &self.multipath, &self.root_probe) {
            self.root_probe = Some(crate::guest::multipath::RootProbe::start(
                target.clone(),
                self.tx.clone(),
                crate::hw::multipath::PATHS,
            ));
        }
        if p == Phase::ApiReady && self.api.is_none() {
            self.api = Some(tokio::spawn(api_poller::poll(
                self.endpoint.clone(),
                self.checks.clone(),
                self.tx.clone(),
                Duration::from_secs(2),
            )));
        }
    }

    /// Stops every observer.
    pub fn stop(&mut self) {
        if let Some(t) = self.api.take() {
            t.abort();
        }
        if let Some(t) = self.blockstats.take() {
            t.abort();
        }
        if let Some(mut p) = self.root_probe.take() {
            p.stop();
        }
        self.followers.stop();
    }
}

fn forward_console(console: &Console, tx: &SignalTx) {
    let tx = tx.clone();
    console.on_line(move |l| {
        let _ = tx.send((
            Source::Serial,
            Signal::Console {
                line: l.to_string(),
            },
        ));
    });
}

/// The install disk's write counter, from QEMU's block stats (a multipath disk's summed over
/// its paths), each time it grows; and along it the multipath path fault, when the run plays it.
fn poll_blockstats(
    vm: &RunningVm,
    (drive, multipath): (String, Option<MultipathDrive>),
    tx: &SignalTx,
) -> tokio::task::JoinHandle<()> {
    let (tx, vm) = (tx.clone(), vm.handle());
    tokio::spawn(async move {
        let mut last = None;
        let mut counters = WriteCounters::default();
        let mut fault = multipath
            .filter(|m| m.lose_path)
            .map(|m| (m, PathFault::Waiting));
        loop {
            if let Ok(writes) = vm.disk_writes(&drive).await {
                if !writes.is_empty() {
                    let bytes = counters.update(&writes);
                    if last != Some(bytes) {
                        last = Some(bytes);
                        let _ = tx.send((Source::Disk, Signal::DiskWrite { bytes }));
                    }
                    if let Some((m, f)) = fault.as_mut() {
                        if let Some(action) = f.next(bytes, std::time::Instant::now()) {
                            play_path_fault(&vm, m, (action, bytes), &tx).await;
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

/// Takes the multipath disk's path away from the VM or gives it back, and says so.
async fn play_path_fault(
    vm: &crate::vm::running::RunningVmHandle,
    m: &MultipathDrive,
    (action, bytes): (PathAction, u64),
    tx: &SignalTx,
) {
    let device = crate::hw::multipath::path_device_id(
        &m.spec.disks[m.index].id,
        super::multipath::LOST_PATH,
    );
    let present = matches!(action, PathAction::Restore { .. });
    let done = vm
        .set_disk_path(&m.spec, (m.index, super::multipath::LOST_PATH), present)
        .await;
    let step = match (done, action) {
        (Err(e), _) => MultipathStep::PathFaultFailed {
            detail: format!(
                "{} path {device}: {e}",
                if present {
                    "giving back"
                } else {
                    "taking away"
                }
            ),
        },
        (Ok(()), PathAction::Lose) => MultipathStep::PathLost {
            device,
            written: bytes,
        },
        (Ok(()), PathAction::Restore { written_while_lost }) => MultipathStep::PathRestored {
            device,
            written_while_lost,
        },
    };
    let _ = tx.send((Source::Harness, Signal::Multipath(step)));
}

/// journal-live.txt and journal-disk.txt: the BiP units' entries of each system, as they come.
/// An entry's system is known by its boot, and a boot's by the status poller (it reads
/// /run/ostree-live), which may report a boot after its first entries arrive: those wait here
/// until it does (or the run ends), so the live system's first lines do not land in the
/// installed system's file.
pub struct JournalFiles {
    live: Option<fs::File>,
    disk: Option<fs::File>,
    /// The boots written so far, in order: each file's first entry of a boot is preceded by
    /// a header naming it (the installed system boots more than once when something resets it).
    boots: Vec<String>,
    /// Boot key -> whether it is the live system, as the status poller reported.
    systems: std::collections::HashMap<String, bool>,
    /// Entries of boots whose system is not known yet, in arrival order.
    pending: Vec<(String, Signal)>,
}

/// How many entries wait for their boot's system: past this they are written as of an
/// unidentified system (a status poller that never answers must not grow memory).
const MAX_PENDING: usize = 20_000;

impl JournalFiles {
    pub fn new(dir: &Path) -> JournalFiles {
        JournalFiles {
            live: fs::File::create(dir.join("journal-live.txt")).ok(),
            disk: fs::File::create(dir.join("journal-disk.txt")).ok(),
            boots: Vec::new(),
            systems: Default::default(),
            pending: Vec::new(),
        }
    }

    /// The status poller says which system boot `boot_id` is: its waiting entries are written.
    pub fn learn(&mut self, boot_id: &str, live: bool) {
        let key = crate::flow::machine::boot_key(boot_id);
        if self.systems.insert(key.clone(), live).is_some() {
            return;
        }
        let (now, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(k, _)| *k == key);
        self.pending = still;
        for (k, sig) in now {
            self.emit(&k, Some(live), &sig);
        }
    }

    /// A journal entry: written to its system's file, or kept until its boot is known.
    pub fn write(&mut self, signal: &Signal) {
        let Signal::Journal { boot_id, .. } = signal else {
            return;
        };
        let key = crate::flow::machine::boot_key(boot_id);
        match self.systems.get(&key) {
            Some(live) => self.emit(&key, Some(*live), signal),
            None if self.pending.len() < MAX_PENDING => self.pending.push((key, signal.clone())),
            None => self.emit(&key, None, signal),
        }
    }

    /// The run ends: entries of boots never identified are written to journal-disk.txt under
    /// a header that says so.
    pub fn finish(&mut self) {
        for (k, sig) in std::mem::take(&mut self.pending) {
            self.emit(&k, None, &sig);
        }
    }

    fn emit(&mut self, key: &str, live: Option<bool>, signal: &Signal) {
        let Signal::Journal {
            unit,
            identifier,
            message,
            guest_usec,
            ..
        } = signal
        else {
            return;
        };
        let new_boot = !self.boots.iter().any(|b| b == key);
        if new_boot {
            self.boots.push(key.to_string());
        }
        let (f, system) = match live {
            Some(true) => (&mut self.live, "live system"),
            Some(false) => (&mut self.disk, "installed system"),
            None => (
                &mut self.disk,
                "a system the status poller never identified",
            ),
        };
        if let Some(f) = f {
            if new_boot {
                let n = self.boots.len();
                let _ = writeln!(f, "-- boot {n} of the run: {system}, boot id {key} --");
            }
            let t = guest_time(*guest_usec);
            let _ = writeln!(f, "{t} {unit} {identifier}: {message}");
        }
    }
}

/// The last microsecond RFC 3339 can write (9999-12-31T23:59:59.999999Z).
const LAST_RFC3339_USEC: u64 = 253_402_300_799_999_999;

/// A guest's journal timestamp (µs since the epoch) as RFC 3339; a guest clock past year 9999,
/// which RFC 3339 cannot write, as the raw count, marked.
fn guest_time(usec: u64) -> String {
    if usec > LAST_RFC3339_USEC {
        return format!("@{}.{:06}s-past-9999", usec / 1_000_000, usec % 1_000_000);
    }
    humantime::format_rfc3339_micros(std::time::UNIX_EPOCH + Duration::from_micros(usec))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_clock_past_year_9999_is_written_raw_instead_of_panicking() {
        assert_eq!(
            guest_time(1_700_000_000_000_000),
            "2023-11-14T22:13:20.000000Z"
        );
        assert_eq!(guest_time(LAST_RFC3339_USEC), "9999-12-31T23:59:59.999999Z");
        assert_eq!(
            guest_time(LAST_RFC3339_USEC + 1),
            "@253402300800.000000s-past-9999"
        );
        assert!(guest_time(u64::MAX).starts_with("@18446744073709."));
        let d = tempfile::tempdir().unwrap();
        let mut files = JournalFiles::new(d.path());
        let entry = |guest_usec| Signal::Journal {
            unit: "bootkube.service".into(),
            identifier: "bootkube.sh".into(),
            message: "Rendering MCO manifests...".into(),
            guest_usec,
            boot_id: "b1".into(),
        };
        files.learn("b1", true);
        files.write(&entry(u64::MAX));
        files.write(&entry(0));
        drop(files);
        let text = fs::read_to_string(d.path().join("journal-live.txt")).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("@18446744073709.551615s-past-9999 bootkube.service"));
    }

    #[test]
    fn each_boot_is_headed_in_the_file_of_its_system() {
        let d = tempfile::tempdir().unwrap();
        let mut files = JournalFiles::new(d.path());
        let entry = |boot: &str, message: &str| Signal::Journal {
            unit: "bootkube.service".into(),
            identifier: "bootkube.sh".into(),
            message: message.into(),
            guest_usec: 1_700_000_000_000_000,
            boot_id: boot.into(),
        };
        // The live boot's first entry comes before the poller reports the boot.
        files.write(&entry("aa", "live 1"));
        files.learn("aa", true);
        files.write(&entry("aa", "live 2"));
        files.learn("bb", false);
        files.write(&entry("bb", "disk 1"));
        files.write(&entry("cc", "disk again"));
        files.learn("cc", false);
        files.write(&entry("dd", "never identified"));
        files.finish();
        drop(files);
        let live = fs::read_to_string(d.path().join("journal-live.txt")).unwrap();
        let disk = fs::read_to_string(d.path().join("journal-disk.txt")).unwrap();
        let heads = |t: &str| t.lines().filter(|l| l.starts_with("-- boot ")).count();
        assert_eq!((heads(&live), heads(&disk)), (1, 3), "{live}\n{disk}");
        assert!(live.starts_with("-- boot 1 of the run: live system, boot id aa --\n"));
        assert!(live.contains("live 1") && live.contains("live 2") && !live.contains("disk"));
        assert!(live.find("live 1") < live.find("live 2"));
        assert!(disk.contains("-- boot 3 of the run: installed system, boot id cc --\n"));
        assert!(disk.contains("disk 1") && disk.contains("disk again"));
        assert!(disk.contains(
            "-- boot 4 of the run: a system the status poller never identified, boot id dd --\n"
        ));
    }
}
