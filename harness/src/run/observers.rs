//! The observers of a running VM, each turning what it sees into signals on the run's one
//! channel: the serial console, the install disk's write counter (block stats), the guest's
//! status and journal over SSH, and, from api-ready on, the cluster's API. Also the files
//! that keep the BiP units' journal lines of each system.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::api_poller;
use crate::flow::event::{Signal, SignalTx, Source};
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
    endpoint: ApiEndpoint,
    checks: Inputs,
    tx: SignalTx,
}

impl Observers {
    /// Starts the console, block-stats and SSH observers (the API waits for its phase).
    pub fn start(
        vm: &RunningVm,
        console: &Console,
        install_drive: Option<String>,
        target: &SshTarget,
        endpoint: ApiEndpoint,
        checks: Inputs,
        tx: &SignalTx,
    ) -> Observers {
        forward_console(console, tx);
        Observers {
            blockstats: install_drive.map(|drive| poll_blockstats(vm, drive, tx)),
            followers: Followers::start(target.clone(), tx.clone(), Duration::from_secs(2)),
            api: None,
            endpoint,
            checks,
            tx: tx.clone(),
        }
    }

    /// A phase started: api-ready starts the API poller.
    pub fn on_phase_started(&mut self, p: Phase) {
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

/// The install disk's write counter, from QEMU's block stats, each time it grows.
fn poll_blockstats(vm: &RunningVm, drive: String, tx: &SignalTx) -> tokio::task::JoinHandle<()> {
    let (tx, vm) = (tx.clone(), vm.handle());
    tokio::spawn(async move {
        let mut last = None;
        loop {
            if let Ok(Some(bytes)) = vm.disk_written_bytes(&drive).await {
                if last != Some(bytes) {
                    last = Some(bytes);
                    let _ = tx.send((Source::Disk, Signal::DiskWrite { bytes }));
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

/// journal-live.txt and journal-disk.txt: the BiP units' entries of each system, as they come.
pub struct JournalFiles {
    live: Option<fs::File>,
    disk: Option<fs::File>,
    /// The boots written so far, in order: each file's first entry of a boot is preceded by
    /// a header naming it (the installed system boots more than once when something resets it).
    boots: Vec<String>,
}

impl JournalFiles {
    pub fn new(dir: &Path) -> JournalFiles {
        JournalFiles {
            live: fs::File::create(dir.join("journal-live.txt")).ok(),
            disk: fs::File::create(dir.join("journal-disk.txt")).ok(),
            boots: Vec::new(),
        }
    }

    pub fn write(&mut self, signal: &Signal, live_boot: Option<&str>) {
        if let Signal::Journal {
            unit,
            identifier,
            message,
            guest_usec,
            boot_id,
        } = signal
        {
            let key = crate::flow::machine::boot_key(boot_id);
            let live = Some(key.as_str()) == live_boot;
            let new_boot = !self.boots.contains(&key);
            if new_boot {
                self.boots.push(key.clone());
            }
            let (f, system) = if live {
                (&mut self.live, "live system")
            } else {
                (&mut self.disk, "installed system")
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
        files.write(&entry(u64::MAX), Some("b1"));
        files.write(&entry(0), Some("b1"));
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
        for (boot, m) in [
            ("aa", "live 1"),
            ("aa", "live 2"),
            ("bb", "disk 1"),
            ("cc", "disk again"),
        ] {
            files.write(&entry(boot, m), Some("aa"));
        }
        drop(files);
        let live = fs::read_to_string(d.path().join("journal-live.txt")).unwrap();
        let disk = fs::read_to_string(d.path().join("journal-disk.txt")).unwrap();
        let heads = |t: &str| t.lines().filter(|l| l.starts_with("-- boot ")).count();
        assert_eq!((heads(&live), heads(&disk)), (1, 2), "{live}\n{disk}");
        assert!(live.starts_with("-- boot 1 of the run: live system, boot id aa --\n"));
        assert!(disk.contains("-- boot 3 of the run: installed system, boot id cc --\n"));
        assert!(live.contains("live 2") && !live.contains("disk"));
        assert!(disk.contains("disk 1") && disk.contains("disk again"));
    }
}
