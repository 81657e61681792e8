//! After the pivot of a multipath install: what the installed system's root is on, read over
//! SSH ([`crate::flow::multipath::PROBE_SCRIPT`]) until it is settled (root and /boot on the
//! multipath map with every path active, or root off the map, which waiting will not change),
//! each answer of the installed system a signal. Its own thread and session, as the status
//! poller's; it reconnects while the guest reboots, and stops when told or once settled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::ssh::{SshSession, SshTarget, COMMAND_IO_TIMEOUT};
use crate::flow::event::{MultipathStep, Signal, SignalTx, Source};
use crate::flow::multipath::{Judged, RootDevices, PROBE_SCRIPT};
use crate::util::wait::sleep_unless_stopped;

/// How often the guest is asked.
const POLL: Duration = Duration::from_secs(3);

/// The probe's thread; stops on drop.
pub struct RootProbe {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RootProbe {
    /// Starts asking the guest at `target`; answers of the installed system with `paths`
    /// paths expected go to `tx`.
    pub fn start(target: SshTarget, tx: SignalTx, paths: u8) -> RootProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("guest-multipath".into())
            .spawn(move || probe_loop(&target, &tx, &stop2, paths))
            .expect("spawn");
        RootProbe {
            stop,
            thread: Some(thread),
        }
    }

    /// Tells the thread to stop; it is left to end on its own if inside a blocking SSH call
    /// (it holds nothing but a connection).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take_if(|t| t.is_finished()) {
            let _ = t.join();
        }
    }
}

impl Drop for RootProbe {
    fn drop(&mut self) {
        self.stop();
    }
}

fn probe_loop(target: &SshTarget, tx: &SignalTx, stop: &AtomicBool, paths: u8) {
    let command = format!("sudo -n sh -c '{}'", PROBE_SCRIPT.replace('\'', r"'\''"));
    let mut last: Option<RootDevices> = None;
    let mut session: Option<SshSession> = None;
    while !stop.load(Ordering::SeqCst) {
        if session.is_none() {
            match target.connect(Duration::from_secs(5)) {
                Ok(s) => {
                    // As the status poller's: a guest still booting under TCG answers a
                    // command far slower than it accepts a connection.
                    s.set_io_timeout(COMMAND_IO_TIMEOUT);
                    session = Some(s);
                }
                Err(_) => {
                    sleep_unless_stopped(stop, POLL);
                    continue;
                }
            }
        }
        let answer = session.as_ref().expect("connected above").exec(&command);
        let Ok(out) = answer else {
            // The guest went away (the reboot) or the session broke: a new one next time.
            session = None;
            sleep_unless_stopped(stop, POLL);
            continue;
        };
        let Some(r) = RootDevices::parse(&out.stdout).filter(|r| !r.live) else {
            sleep_unless_stopped(stop, POLL);
            continue;
        };
        let settled = !matches!(r.judge(paths), Judged::Waiting(_));
        // An unchanged answer says nothing new to the timeline.
        if last.as_ref() != Some(&r) {
            let _ = tx.send((
                Source::Guest,
                Signal::Multipath(MultipathStep::Root(r.clone())),
            ));
            last = Some(r);
        }
        if settled {
            return;
        }
        sleep_unless_stopped(stop, POLL);
    }
}
