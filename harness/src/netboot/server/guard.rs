//! What keeps the boot server serving its guest when others lean on it: a table of open
//! connections with a limit, where a new connection evicts the oldest one that is not sending a
//! file, and counts of what was refused, for the timeline and the verdict (a live boot that
//! fails while the server was strained is the host's failure, not the system's).
//!
//! Among those, a connection that has sent part of a request goes first (a half-sent header is
//! the flood's signature; the guest sends its whole request in one segment, and iPXE and the
//! live system's wget do), and only then one that has sent nothing yet. A guest under TCG on a
//! busy host can take a second from its connect to its request, and under a flood renewing 200
//! connections a second the oldest place lasted 0.32 s: a CI rehearsal's attacked PXE run lost
//! its connections that way until live-boot's 4 minutes ran out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Open connections at once. A guest needs a few (iPXE one a file, the live system's fetch
/// one); the rest is room for retries.
pub const MAX_CONNECTIONS: usize = 64;

/// Requests for paths the server does not serve before it counts as strained: a stray scan is
/// not a flood.
const UNKNOWN_BEFORE_STRAIN: u64 = 100;

/// How often a strained server says so, at most.
const STRAIN_EVERY: Duration = Duration::from_secs(1);

/// What the server refused, so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Load {
    /// Requests for paths it does not serve (or with methods it does not take).
    pub unknown_requests: u64,
    /// Connections closed to make room for a new one.
    pub evicted: u64,
    /// Connections closed at once: every place was sending a file.
    pub turned_away: u64,
    /// Connections that did not send a whole request header in time.
    pub header_timeouts: u64,
    /// Connections from an address the listener does not answer.
    pub wrong_peer: u64,
}

impl Load {
    /// Whether the server had to refuse its guest's kind of traffic: its limits were hit.
    pub fn strained(&self) -> bool {
        self.evicted + self.turned_away + self.header_timeouts + self.wrong_peer > 0
            || self.unknown_requests > UNKNOWN_BEFORE_STRAIN
    }

    pub fn is_zero(&self) -> bool {
        *self == Load::default()
    }

    /// `1200 requests for unknown paths, 1100 connections evicted, ...`: what is not zero.
    pub fn sentence(&self) -> String {
        let parts: Vec<String> = [
            (
                self.unknown_requests,
                "requests for paths it does not serve",
            ),
            (self.evicted, "idle connections evicted at its limit"),
            (self.turned_away, "connections turned away"),
            (
                self.header_timeouts,
                "connections that sent no whole request in time",
            ),
            (
                self.wrong_peer,
                "connections from addresses other than the guest's",
            ),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        parts.join(", ")
    }
}

#[derive(Default)]
struct Counters {
    unknown_requests: AtomicU64,
    evicted: AtomicU64,
    turned_away: AtomicU64,
    header_timeouts: AtomicU64,
    wrong_peer: AtomicU64,
}

/// One open connection's place.
pub struct SlotState {
    id: u64,
    /// Sending a file: never evicted.
    busy: AtomicBool,
    /// Has sent bytes of a request: evicted before a connection that has sent none.
    heard: AtomicBool,
    evict: Notify,
}

impl SlotState {
    pub fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::SeqCst);
    }

    /// The connection sent bytes.
    pub fn heard(&self) {
        self.heard.store(true, Ordering::Relaxed);
    }

    fn evictable(&self) -> bool {
        !self.busy.load(Ordering::SeqCst)
    }

    fn evictable_first(&self) -> bool {
        self.evictable() && self.heard.load(Ordering::Relaxed)
    }

    /// Resolves when the guard closes this connection to make room.
    pub async fn evicted(&self) {
        self.evict.notified().await
    }
}

/// A connection's place, freed when dropped.
pub struct Slot {
    pub state: Arc<SlotState>,
    guard: Arc<Guard>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut t = self.guard.table.lock().unwrap_or_else(|p| p.into_inner());
        t.retain(|s| s.id != self.state.id);
    }
}

/// The kinds of refusal the guard counts.
#[derive(Debug, Clone, Copy)]
pub enum Refusal {
    UnknownRequest,
    HeaderTimeout,
    WrongPeer,
}

pub struct Guard {
    table: Mutex<VecDeque<Arc<SlotState>>>,
    next_id: AtomicU64,
    counts: Counters,
    last_said: Mutex<Option<Instant>>,
    limit: usize,
}

impl Guard {
    pub fn new(limit: usize) -> Arc<Guard> {
        Arc::new(Guard {
            table: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(0),
            counts: Counters::default(),
            last_said: Mutex::new(None),
            limit,
        })
    }

    /// A place for a new connection: at the limit, the oldest connection that has sent part of
    /// a request, else the oldest that has sent nothing, is evicted for it (never one sending a
    /// file); `None` when every place is sending a file.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if t.len() >= self.limit {
            let victim = t
                .iter()
                .position(|s| s.evictable_first())
                .or_else(|| t.iter().position(|s| s.evictable()));
            match victim {
                Some(i) => {
                    let old = t.remove(i).expect("found above");
                    // notify_one keeps the permit if the connection is not waiting yet.
                    old.evict.notify_one();
                    self.counts.evicted.fetch_add(1, Ordering::SeqCst);
                }
                None => {
                    self.counts.turned_away.fetch_add(1, Ordering::SeqCst);
                    return None;
                }
            }
        }
        let state = Arc::new(SlotState {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            busy: AtomicBool::new(false),
            heard: AtomicBool::new(false),
            evict: Notify::new(),
        });
        t.push_back(state.clone());
        Some(Slot {
            state,
            guard: self.clone(),
        })
    }

    pub fn count(&self, r: Refusal) {
        let c = match r {
            Refusal::UnknownRequest => &self.counts.unknown_requests,
            Refusal::HeaderTimeout => &self.counts.header_timeouts,
            Refusal::WrongPeer => &self.counts.wrong_peer,
        };
        c.fetch_add(1, Ordering::SeqCst);
    }

    pub fn load(&self) -> Load {
        let c = &self.counts;
        Load {
            unknown_requests: c.unknown_requests.load(Ordering::SeqCst),
            evicted: c.evicted.load(Ordering::SeqCst),
            turned_away: c.turned_away.load(Ordering::SeqCst),
            header_timeouts: c.header_timeouts.load(Ordering::SeqCst),
            wrong_peer: c.wrong_peer.load(Ordering::SeqCst),
        }
    }

    /// The load, when the server is strained and has not said so within `STRAIN_EVERY`.
    pub fn strain_to_say(&self) -> Option<Load> {
        let load = self.load();
        if !load.strained() {
            return None;
        }
        let mut last = self.last_said.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < STRAIN_EVERY) {
            return None;
        }
        *last = Some(Instant::now());
        Some(load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_limit_the_oldest_idle_connection_makes_room_and_a_busy_one_never_does() {
        let g = Guard::new(2);
        let a = g.admit().unwrap();
        let b = g.admit().unwrap();
        a.state.set_busy(true);
        let c = g.admit().unwrap();
        assert_eq!(g.load().evicted, 1);
        let ids: Vec<u64> = g.table.lock().unwrap().iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            [a.state.id, c.state.id],
            "b, the oldest idle one, went"
        );
        c.state.set_busy(true);
        assert!(g.admit().is_none(), "every place sends a file");
        assert_eq!(g.load().turned_away, 1);
        drop(b);
        drop(c);
        assert!(g.admit().is_some(), "a dropped place is free again");
    }

    #[test]
    fn a_connection_that_sent_part_of_a_request_makes_room_before_one_that_sent_nothing_yet() {
        let g = Guard::new(3);
        let quiet = g.admit().unwrap();
        let half_sent = g.admit().unwrap();
        half_sent.state.heard();
        let _newest = g.admit().unwrap();
        let _d = g.admit().unwrap();
        let ids: Vec<u64> = g.table.lock().unwrap().iter().map(|s| s.id).collect();
        assert!(
            ids.contains(&quiet.state.id) && !ids.contains(&half_sent.state.id),
            "the half-sent one went, the older quiet one stayed: {ids:?}"
        );
        let _e = g.admit().unwrap();
        let ids: Vec<u64> = g.table.lock().unwrap().iter().map(|s| s.id).collect();
        assert!(
            !ids.contains(&quiet.state.id),
            "with none half-sent, the oldest quiet one: {ids:?}"
        );
    }

    #[test]
    fn strain_is_said_once_a_second_and_only_past_the_limits() {
        let g = Guard::new(4);
        for _ in 0..UNKNOWN_BEFORE_STRAIN {
            g.count(Refusal::UnknownRequest);
        }
        assert!(g.strain_to_say().is_none(), "a stray scan is no flood");
        g.count(Refusal::HeaderTimeout);
        let said = g.strain_to_say().unwrap();
        assert_eq!((said.unknown_requests, said.header_timeouts), (100, 1));
        assert!(g.strain_to_say().is_none(), "not again within a second");
        assert_eq!(
            said.sentence(),
            "100 requests for paths it does not serve, 1 connections that sent no whole request in time"
        );
    }
}
