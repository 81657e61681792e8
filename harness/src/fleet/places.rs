//! Where a matrix's permutations run: this host (QEMU, or a libvirtd here), or several libvirt
//! hosts (`matrix --connect URI --connect URI2`, `--hosts FILE`). Each place keeps its own
//! admission bookkeeping and limits; a remote host's room comes from its libvirtd, asked every
//! few seconds in the background, and a host that stops answering is lost: the runs there are
//! stopped, and what was queued goes to the others.

use std::path::Path;
use std::time::Duration;

use tokio::sync::watch;

use super::admission::{self, Admission, Decision, HostNow, Need};
use super::hosts_file::HostLimits;
use crate::vm::Backend;

/// How often a remote host is asked for its room.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// How long one question may take: a powered-off host answers nothing, not even a refusal.
const PROBE_LIMIT: Duration = Duration::from_secs(30);
/// Questions in a row without an answer before a host counts as gone; one may be a blip.
const LOST_AFTER: u32 = 2;

/// One place runs may go, as the command line gave it.
#[derive(Debug, Clone)]
pub struct PlaceSpec {
    pub backend: Backend,
    pub limits: HostLimits,
}

impl PlaceSpec {
    /// A place with no limits of its own.
    pub fn unlimited(backend: Backend) -> PlaceSpec {
        PlaceSpec {
            backend,
            limits: HostLimits::default(),
        }
    }
}

/// Why one question to a remote libvirt host got no room.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostQuestionError {
    /// libvirt's (or SSH's) words.
    #[error("{0}")]
    Refused(String),
    /// The blocking task that asks did not come back (it panicked, or was cancelled).
    #[error("the question failed: {0}")]
    Task(String),
    #[error("no answer in {} s", .0.as_secs())]
    TimedOut(Duration),
}

/// Why a place's room is not known, so that nothing can start there now.
#[derive(Debug, thiserror::Error)]
pub enum RoomUnknown {
    #[error("reading the host's state: {0}")]
    ThisHost(#[source] std::io::Error),
    #[error("no answer: {0}")]
    NoAnswer(#[source] HostQuestionError),
    #[error("not asked yet")]
    NotAskedYet,
}

/// What the last question to a remote host found.
#[derive(Debug, Clone, Default)]
struct Seen {
    room: Option<HostNow>,
    failures: u32,
    error: Option<HostQuestionError>,
}

/// A place and what runs there now.
pub struct Place {
    pub spec: PlaceSpec,
    /// `this host`, or the libvirt URI without its parameters.
    pub label: String,
    jobs: u32,
    admission: Admission,
    /// A remote host's latest answer; `None` for this host, asked directly.
    seen: Option<watch::Receiver<Seen>>,
    lost: Option<String>,
    /// Set to stop the runs here: the matrix was interrupted, or the host was lost.
    stop: watch::Sender<bool>,
    watcher: Option<tokio::task::JoinHandle<()>>,
}

/// Where the head of the queue goes, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Start(usize),
    Wait(String),
    /// No place could ever hold it.
    Never(String),
    /// Every place is gone.
    NoPlace(String),
}

impl Place {
    /// A place for `spec`, following `interrupt`; a remote host's watcher starts here (inside
    /// the runtime).
    pub fn new(spec: PlaceSpec, default_jobs: u32, interrupt: &watch::Receiver<bool>) -> Place {
        let remote_uri = spec.backend.uri().filter(|_| spec.backend.is_remote());
        let (seen, watcher) = match remote_uri {
            Some(uri) => {
                let (tx, rx) = watch::channel(Seen::default());
                (
                    Some(rx),
                    Some(tokio::spawn(watch_host(uri.to_string(), tx))),
                )
            }
            None => (None, None),
        };
        let mut place = Place::assemble(spec, default_jobs, seen, interrupt);
        place.watcher = watcher;
        place
    }

    fn assemble(
        spec: PlaceSpec,
        default_jobs: u32,
        seen: Option<watch::Receiver<Seen>>,
        interrupt: &watch::Receiver<bool>,
    ) -> Place {
        let label = match seen.is_some() {
            true => spec.backend.libvirt_host().unwrap_or_default(),
            false => "this host".to_string(),
        };
        let (stop, _) = watch::channel(*interrupt.borrow());
        forward_interrupt(interrupt.clone(), stop.clone());
        Place {
            jobs: spec.limits.jobs.unwrap_or(default_jobs).max(1),
            spec,
            label,
            admission: Admission::default(),
            seen,
            lost: None,
            stop,
            watcher: None,
        }
    }

    /// What the runs here watch to stop.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub fn is_remote(&self) -> bool {
        self.seen.is_some()
    }

    pub fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// Marks the host gone and stops its runs.
    pub fn mark_lost(&mut self, why: String) {
        if self.lost.is_none() {
            tracing::warn!("{}: lost: {why}", self.label);
            self.lost = Some(why);
            // Kept even with no run there now (`send` would drop it): whoever subscribes
            // later sees it.
            self.stop.send_replace(true);
        }
    }

    /// A remote host that failed its last questions is lost now.
    fn notice_loss(&mut self) {
        let Some(seen) = &self.seen else { return };
        let s = seen.borrow().clone();
        if s.failures >= LOST_AFTER {
            let why = s
                .error
                .map_or_else(|| "no answer".to_string(), |e| e.to_string());
            self.mark_lost(format!(
                "{} questions in a row failed, the last: {why}",
                s.failures
            ));
        }
    }

    /// Asks the host once more, now: a run here ended badly, and the reason may be the host.
    pub async fn confirm_alive(&mut self) {
        let Some(uri) = self.spec.backend.uri() else {
            return;
        };
        if !self.is_remote() || self.lost.is_some() {
            return;
        }
        if let Err(e) = probe_once(uri.to_string()).await {
            self.mark_lost(format!("it did not answer after a run there ended: {e}"));
        }
    }

    pub fn reserve(&mut self, need: Need) {
        self.admission.reserve(need);
    }

    pub fn release(&mut self, need: Need) {
        self.admission.release(need);
    }

    pub fn running(&self) -> u32 {
        self.admission.running()
    }

    /// The host's room now; `Err` when it cannot be known.
    fn room(&self, out: &Path) -> Result<HostNow, RoomUnknown> {
        let Some(seen) = &self.seen else {
            return admission::host_now(out).map_err(RoomUnknown::ThisHost);
        };
        let s = seen.borrow();
        match (s.room, &s.error) {
            (Some(r), _) => Ok(r),
            (None, Some(e)) => Err(RoomUnknown::NoAnswer(e.clone())),
            (None, None) => Err(RoomUnknown::NotAskedYet),
        }
    }

    /// Admission here, within the user's limits: at most `jobs` runs, at most `memory` of
    /// guests at once, the CPUs counted as `cpus`.
    fn decide(&self, need: Need, out: &Path) -> Result<Decision, RoomUnknown> {
        if self.running() >= self.jobs {
            let why = format!("{} of {} jobs running", self.running(), self.jobs);
            return Ok(Decision::Wait(why));
        }
        if let Some(max) = self.spec.limits.memory_bytes {
            let reserved = self.admission.memory_reserved();
            if need.memory_bytes > max {
                return Ok(Decision::Never(format!(
                    "needs {:.1} GiB of memory; the host's limit is {:.1} GiB",
                    gib(need.memory_bytes),
                    gib(max)
                )));
            }
            if reserved + need.memory_bytes > max {
                return Ok(Decision::Wait(format!(
                    "memory: {:.1} of its {:.1} GiB limit reserved",
                    gib(reserved),
                    gib(max)
                )));
            }
        }
        let mut room = self.room(out)?;
        if let Some(cpus) = self.spec.limits.cpus {
            room.cpus = cpus;
        }
        Ok(self.admission.decide(need, room, self.jobs))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// Chooses the place for a run needing `need`: of those that would start it now, the least
/// loaded (running runs against its jobs), the first on a tie.
pub fn choose(places: &mut [Place], need: Need, out: &Path) -> Choice {
    for p in places.iter_mut() {
        p.notice_loss();
    }
    let several = places.len() > 1;
    let named = |p: &Place, why: &str| match several {
        true => format!("{}: {why}", p.label),
        false => why.to_string(),
    };
    let mut best: Option<(usize, f64)> = None;
    let (mut waits, mut nevers, mut gone) = (Vec::new(), Vec::new(), Vec::new());
    for (i, p) in places.iter().enumerate() {
        if let Some(why) = p.lost() {
            gone.push(format!("{}: {why}", p.label));
            continue;
        }
        match p.decide(need, out) {
            Ok(Decision::Start) => {
                let load = p.running() as f64 / p.jobs as f64;
                if best.is_none_or(|(_, l)| load < l) {
                    best = Some((i, load));
                }
            }
            Ok(Decision::Wait(why)) => waits.push(named(p, &why)),
            Ok(Decision::Never(why)) => nevers.push(named(p, &why)),
            Err(why) if several || p.is_remote() => waits.push(named(p, &why.to_string())),
            // This host's state cannot be read: nothing will change that by waiting.
            Err(why) => nevers.push(why.to_string()),
        }
    }
    if let Some((i, _)) = best {
        return Choice::Start(i);
    }
    if waits.is_empty() && nevers.is_empty() {
        return Choice::NoPlace(format!("every libvirt host is gone ({})", gone.join("; ")));
    }
    if waits.is_empty() {
        return Choice::Never(nevers.join("; "));
    }
    Choice::Wait(waits.join("; "))
}

/// Stops the runs of a place when the whole matrix is interrupted.
fn forward_interrupt(mut interrupt: watch::Receiver<bool>, stop: watch::Sender<bool>) {
    tokio::spawn(async move {
        loop {
            if *interrupt.borrow() {
                stop.send_replace(true);
                return;
            }
            if interrupt.changed().await.is_err() || stop.is_closed() {
                return;
            }
        }
    });
}

/// Asks the libvirt host at `uri` for its room every [`PROBE_EVERY`], until nobody listens.
async fn watch_host(uri: String, tx: watch::Sender<Seen>) {
    let mut failures = 0;
    loop {
        let seen = match probe_once(uri.clone()).await {
            Ok(room) => {
                failures = 0;
                Seen {
                    room: Some(room),
                    failures,
                    error: None,
                }
            }
            Err(e) => {
                failures += 1;
                Seen {
                    room: None,
                    failures,
                    error: Some(e),
                }
            }
        };
        if tx.send(seen).is_err() {
            return;
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// One question to a libvirt host, off the async threads and within [`PROBE_LIMIT`].
async fn probe_once(uri: String) -> Result<HostNow, HostQuestionError> {
    let asked = tokio::task::spawn_blocking(move || crate::vm::libvirt::capacity::probe(&uri));
    match tokio::time::timeout(PROBE_LIMIT, asked).await {
        Ok(Ok(Ok(r))) => Ok(HostNow {
            mem_available: r.mem_available,
            memory_from: admission::MemoryFrom::Host,
            cpus: r.cpus,
            disk_free: r.disk_free,
        }),
        Ok(Ok(Err(e))) => Err(HostQuestionError::Refused(e.to_string())),
        Ok(Err(e)) => Err(HostQuestionError::Task(e.to_string())),
        Err(_) => Err(HostQuestionError::TimedOut(PROBE_LIMIT)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn need() -> Need {
        Need {
            memory_bytes: 3 * GIB,
            vcpus: 2,
            disk_bytes: 2 * GIB,
        }
    }

    fn room(mem_gib: u64) -> Seen {
        Seen {
            room: Some(HostNow {
                mem_available: mem_gib * GIB,
                memory_from: admission::MemoryFrom::Host,
                cpus: 4,
                disk_free: 100 * GIB,
            }),
            ..Seen::default()
        }
    }

    /// A remote place whose answers the test gives.
    fn remote(n: u32, limits: HostLimits) -> (Place, watch::Sender<Seen>) {
        let (tx, rx) = watch::channel(Seen::default());
        let (_int_tx, int) = watch::channel(false);
        let spec = PlaceSpec {
            backend: Backend::Libvirt {
                uri: format!("qemu+ssh://root@h{n}/system?keyfile=/k"),
            },
            limits,
        };
        (Place::assemble(spec, 2, Some(rx), &int), tx)
    }

    fn out() -> &'static Path {
        Path::new("/")
    }

    #[tokio::test]
    async fn runs_spread_to_the_least_loaded_host_that_has_room() {
        let (a, ta) = remote(1, HostLimits::default());
        let (b, tb) = remote(2, HostLimits::default());
        let mut places = [a, b];
        assert_eq!(places[0].label, "qemu+ssh://root@h1/system");
        // Neither has answered yet: wait, saying so for each.
        let Choice::Wait(why) = choose(&mut places, need(), out()) else {
            panic!()
        };
        assert!(
            why.contains("h1/system: not asked yet") && why.contains("h2/"),
            "{why}"
        );
        ta.send(room(20)).unwrap();
        tb.send(room(20)).unwrap();
        assert_eq!(choose(&mut places, need(), out()), Choice::Start(0));
        places[0].reserve(need());
        assert_eq!(choose(&mut places, need(), out()), Choice::Start(1));
        places[1].reserve(need());
        assert_eq!(choose(&mut places, need(), out()), Choice::Start(0));
        places[0].reserve(need());
        assert_eq!(choose(&mut places, need(), out()), Choice::Start(1));
        places[1].reserve(need());
        // Both hold their 2 jobs.
        let Choice::Wait(why) = choose(&mut places, need(), out()) else {
            panic!()
        };
        assert!(why.contains("2 of 2 jobs"), "{why}");
        // A host short of memory is passed over.
        places[0].release(need());
        ta.send(room(2)).unwrap();
        let Choice::Wait(why) = choose(&mut places, need(), out()) else {
            panic!()
        };
        assert!(why.contains("h1/system: memory"), "{why}");
    }

    #[tokio::test]
    async fn the_limits_of_a_host_hold_whatever_it_has() {
        let limits = HostLimits {
            jobs: Some(1),
            memory_bytes: Some(4 * GIB),
            cpus: None,
        };
        let (a, ta) = remote(1, limits);
        ta.send(room(100)).unwrap();
        let mut places = [a];
        assert_eq!(choose(&mut places, need(), out()), Choice::Start(0));
        places[0].reserve(need());
        let Choice::Wait(why) = choose(&mut places, need(), out()) else {
            panic!()
        };
        assert!(why.contains("1 of 1 jobs"), "{why}");
        let big = Need {
            memory_bytes: 8 * GIB,
            ..need()
        };
        places[0].release(need());
        let Choice::Never(why) = choose(&mut places, big, out()) else {
            panic!()
        };
        assert!(why.contains("limit is 4.0 GiB"), "{why}");
    }

    #[tokio::test]
    async fn a_host_that_stops_answering_is_lost_and_its_runs_told_to_stop() {
        let (a, ta) = remote(1, HostLimits::default());
        let (b, tb) = remote(2, HostLimits::default());
        let mut places = [a, b];
        ta.send(room(20)).unwrap();
        tb.send(room(20)).unwrap();
        let stop_b = places[1].stop_signal();
        // One failed question is a blip: the host waits, it is not lost.
        let failing = |n| Seen {
            room: None,
            failures: n,
            error: Some(HostQuestionError::Refused(
                "ssh: connect to host h2 port 22: Connection refused".into(),
            )),
        };
        places[0].reserve(need());
        places[0].reserve(need());
        tb.send(failing(1)).unwrap();
        let Choice::Wait(why) = choose(&mut places, need(), out()) else {
            panic!()
        };
        assert!(why.contains("h2/system: no answer: ssh: connect"), "{why}");
        assert!(places[1].lost().is_none() && !*stop_b.borrow());
        tb.send(failing(2)).unwrap();
        let _ = choose(&mut places, need(), out());
        assert!(places[1]
            .lost()
            .unwrap()
            .contains("2 questions in a row failed"));
        assert!(*stop_b.borrow(), "the lost host's runs are told to stop");
        // The queue goes to the host that is left; with every host gone, nothing waits.
        places[0].release(need());
        assert_eq!(choose(&mut places, need(), out()), Choice::Start(0));
        places[0].mark_lost("gone too".into());
        // No run watched host 1 when it was lost; one that looks later still sees it.
        assert!(*places[0].stop_signal().borrow());
        let Choice::NoPlace(why) = choose(&mut places, need(), out()) else {
            panic!()
        };
        assert!(
            why.contains("h1/system: gone too") && why.contains("h2/system: 2 questions"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn this_host_alone_decides_as_before() {
        let (_t, int) = watch::channel(false);
        let spec = PlaceSpec {
            backend: Backend::Qemu,
            limits: HostLimits::default(),
        };
        let mut places = [Place::new(spec, 2, &int)];
        assert_eq!(places[0].label, "this host");
        let huge = Need {
            memory_bytes: 1 << 50,
            ..need()
        };
        let Choice::Never(why) = choose(&mut places, huge, out()) else {
            panic!()
        };
        assert!(
            why.starts_with("needs ") && !why.contains("this host:"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn an_interrupt_reaches_every_place() {
        let (t, int) = watch::channel(false);
        let (_tx, rx) = watch::channel(Seen::default());
        let spec = PlaceSpec {
            backend: Backend::Qemu,
            limits: HostLimits::default(),
        };
        let place = Place::assemble(spec, 1, Some(rx), &int);
        let mut stop = place.stop_signal();
        t.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), stop.wait_for(|s| *s))
            .await
            .unwrap()
            .unwrap();
    }
}
