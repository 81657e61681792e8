//! What an API client is waiting for, and since when: when a deadline cuts a check short,
//! this names the request that did not answer, its server, and how long it waited.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Shared by the client and whoever holds the deadline (another thread, when the client's
/// own is stuck).
#[derive(Debug, Clone, Default)]
pub struct Watch(Arc<Mutex<Open>>);

#[derive(Debug, Default)]
struct Open {
    server: String,
    next: u64,
    waiting: BTreeMap<u64, (String, Instant)>,
}

/// One thing waited for; it is done when dropped (answered, failed, or cut short).
#[derive(Debug)]
pub struct Waiting {
    watch: Watch,
    id: u64,
}

/// The oldest thing still waited for: what (a request names its server), and how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub what: String,
    pub waited: Duration,
}

impl Watch {
    fn open(&self) -> MutexGuard<'_, Open> {
        // A panic elsewhere leaves the map as consistent as it was: keep reading it.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn set_server(&self, server: &str) {
        server.clone_into(&mut self.open().server);
    }

    pub fn begin(&self, what: impl Into<String>) -> Waiting {
        let mut open = self.open();
        let id = open.next;
        open.next += 1;
        open.waiting.insert(id, (what.into(), Instant::now()));
        Waiting {
            watch: self.clone(),
            id,
        }
    }

    /// The server, and the oldest thing still waited for (None when nothing is).
    pub fn stuck(&self) -> (String, Option<Stuck>) {
        let open = self.open();
        let oldest = open
            .waiting
            .values()
            .min_by_key(|(_, since)| *since)
            .map(|(what, since)| Stuck {
                what: what.clone(),
                waited: since.elapsed(),
            });
        (open.server.clone(), oldest)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.watch.open().waiting.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_open_wait_is_the_one_named_until_it_ends() {
        let w = Watch::default();
        w.set_server("https://127.0.0.1:6443");
        assert_eq!(w.stuck().1, None);
        let first = w.begin("GET /readyz");
        std::thread::sleep(Duration::from_millis(5));
        let second = w.begin("LIST nodes");
        let (server, stuck) = w.stuck();
        assert_eq!(server, "https://127.0.0.1:6443");
        let stuck = stuck.unwrap();
        assert_eq!(stuck.what, "GET /readyz");
        assert!(stuck.waited >= Duration::from_millis(5), "{stuck:?}");
        drop(first);
        assert_eq!(w.stuck().1.unwrap().what, "LIST nodes");
        drop(second);
        assert_eq!(w.stuck().1, None);
    }
}
