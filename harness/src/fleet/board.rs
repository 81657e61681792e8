//! What a matrix shows while its permutations run. On a terminal: one line for the matrix
//! (done, passed, failed, running, queued, elapsed) above one live status line per running
//! permutation, and every log line scrolling above them all. Elsewhere: the matrix's own lines
//! carry the counts, and one heartbeat every 30 s lists what each running permutation is doing,
//! instead of one unsynchronised heartbeat per run.
//!
//! The board is shared by the matrix (which starts and ends runs) and by every run's `Progress`
//! (which reports its status on each tick), hence the mutex.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget};

use crate::result::RunResult;
use crate::run::terminal::{live_bar, Mode, HEARTBEAT};

/// How many permutations are where. Changed only by the matrix's start and end events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub running: usize,
    pub done: usize,
    /// Ended as their scenario expects (passed, or failed exactly as `[expect]` says).
    pub as_expected: usize,
    /// Everything else, including permutations that never started.
    pub unexpected: usize,
}

impl Counts {
    pub fn new(total: usize) -> Counts {
        Counts {
            total,
            ..Counts::default()
        }
    }

    /// Neither started nor done.
    pub fn queued(&self) -> usize {
        self.total.saturating_sub(self.done + self.running)
    }

    pub fn start(&mut self) {
        self.running += 1;
    }

    /// A started permutation reached its verdict, as its scenario expects or not.
    pub fn end(&mut self, as_expected: bool) {
        self.running = self.running.saturating_sub(1);
        self.record(as_expected);
    }

    /// A permutation left the queue without running (not admitted, interrupted).
    pub fn skip(&mut self) {
        self.record(false);
    }

    fn record(&mut self, as_expected: bool) {
        self.done += 1;
        if as_expected {
            self.as_expected += 1;
        } else {
            self.unexpected += 1;
        }
    }
}

/// `3/12 done (3 as expected, 0 not), 2 running, 7 queued`
fn counts_text(c: Counts) -> String {
    format!(
        "{}/{} done ({} as expected, {} not), {} running, {} queued",
        c.done,
        c.total,
        c.as_expected,
        c.unexpected,
        c.running,
        c.queued()
    )
}

/// The matrix's live line (indicatif adds the spinner and the elapsed time).
pub fn top_line(name: &str, c: Counts) -> String {
    if name.is_empty() {
        format!("matrix: {}", counts_text(c))
    } else {
        format!("matrix {name}: {}", counts_text(c))
    }
}

fn stamp(elapsed: Duration) -> String {
    format!("[{:6.1} s]", elapsed.as_secs_f64())
}

/// `matrix: starting ID (2 running, 8 queued, 3/12 done)`, counts taken after the start.
pub fn start_line(id: &str, on: Option<&str>, c: Counts) -> String {
    let on = on.map(|h| format!(" on {h}")).unwrap_or_default();
    format!(
        "matrix: starting {id}{on} ({} running, {} queued, {}/{} done)",
        c.running,
        c.queued(),
        c.done,
        c.total
    )
}

/// `[4/12 done: 4 as expected, 0 not]`: appended to every line that ends a permutation, so a CI
/// log read from any point says how far the matrix is.
fn done_suffix(c: Counts) -> String {
    format!(
        "[{}/{} done: {} as expected, {} not]",
        c.done, c.total, c.as_expected, c.unexpected
    )
}

/// `matrix: ID fail at bootkube (95 s) [4/12 done: 3 as expected, 1 not]`
pub fn end_line(r: &RunResult, c: Counts) -> String {
    format!(
        "matrix: {} {}{} ({:.0} s) {}",
        r.id,
        r.verdict.as_str(),
        r.failed_phase
            .as_deref()
            .map(|p| format!(" at {p}"))
            .unwrap_or_default(),
        r.duration_ms as f64 / 1000.0,
        done_suffix(c)
    )
}

/// The plain heartbeat: the counts, then one indented line per running permutation with its
/// status (phase and time in it first).
pub fn heartbeat_text(elapsed: Duration, c: Counts, running: &BTreeMap<String, String>) -> String {
    let stamp = stamp(elapsed);
    let mut text = format!("{stamp} matrix: heartbeat: {}", counts_text(c));
    // Indented under "matrix:" so the block reads as one entry among the runs' lines.
    let indent = " ".repeat(stamp.len() + 3);
    for (id, status) in running {
        text.push_str(&format!("\n{indent}{id}: {status}"));
    }
    text
}

/// What a permutation reports before its first tick.
const STARTING: &str = "starting";

struct Live {
    multi: MultiProgress,
    top: ProgressBar,
}

struct State {
    counts: Counts,
    /// Running permutation id -> its latest status text.
    running: BTreeMap<String, String>,
    last_heartbeat: Instant,
}

pub struct Board {
    name: String,
    started: Instant,
    /// On a terminal only; plain lines otherwise.
    live: Option<Live>,
    state: Mutex<State>,
}

impl Board {
    pub fn new(name: &str, total: usize, mode: Mode) -> Board {
        let counts = Counts::new(total);
        let live = (mode == Mode::Live).then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let top = live_bar(multi.add(ProgressBar::no_length()));
            top.set_message(top_line(name, counts));
            Live { multi, top }
        });
        Board {
            name: name.to_string(),
            started: Instant::now(),
            live,
            state: Mutex::new(State {
                counts,
                running: BTreeMap::new(),
                last_heartbeat: Instant::now(),
            }),
        }
    }

    pub fn counts(&self) -> Counts {
        self.state().counts
    }

    /// The permutations running, with their latest status.
    pub fn running(&self) -> BTreeMap<String, String> {
        self.state().running.clone()
    }

    pub fn started(&self, id: &str) {
        self.started_on(id, None);
    }

    /// A run starts on a host of several, which its line names.
    pub fn started_on(&self, id: &str, host: Option<&str>) {
        let c = {
            let mut s = self.state();
            s.counts.start();
            // Listed from the start: a run that fails before its first tick is still shown.
            s.running.insert(id.to_string(), STARTING.to_string());
            s.counts
        };
        self.counts_changed(c);
        self.log(&start_line(id, host, c));
    }

    /// `as_expected`: the verdict is what the permutation's scenario expects (an expected
    /// rejection counts as such, not as a failure).
    pub fn ended(&self, r: &RunResult, as_expected: bool) {
        let c = {
            let mut s = self.state();
            s.counts.end(as_expected);
            s.running.remove(&r.id);
            s.counts
        };
        self.counts_changed(c);
        self.log(&end_line(r, c));
    }

    /// A permutation that leaves the queue without running; `why` is printed when given.
    pub fn skipped(&self, id: &str, why: Option<&str>) {
        let c = {
            let mut s = self.state();
            s.counts.skip();
            s.counts
        };
        self.counts_changed(c);
        if let Some(why) = why {
            self.log(&format!("matrix: {id} {why} {}", done_suffix(c)));
        }
    }

    /// A run's task died without a result (it panicked); its result becomes an error.
    pub fn lost(&self) {
        let c = {
            let mut s = self.state();
            s.counts.end(false);
            s.counts
        };
        self.counts_changed(c);
    }

    /// A run's status, given on each of its ticks.
    pub fn set_status(&self, id: &str, text: &str) {
        self.state()
            .running
            .insert(id.to_string(), text.to_string());
    }

    /// A status line for a run, below the others; none when the board is plain.
    pub fn add_bar(&self) -> Option<ProgressBar> {
        self.live
            .as_ref()
            .map(|l| live_bar(l.multi.add(ProgressBar::no_length())))
    }

    /// The run is over: its line goes, from the terminal and from the heartbeat. Idempotent,
    /// as `Progress::finish` runs more than once.
    pub fn remove_run(&self, id: &str, bar: Option<&ProgressBar>) {
        self.state().running.remove(id);
        if let (Some(l), Some(bar)) = (&self.live, bar) {
            bar.finish_and_clear();
            l.multi.remove(bar);
        }
    }

    /// A line above the status lines (or a plain line). A raw `eprintln!` while the bars are
    /// drawn would be overwritten by their next redraw.
    pub fn println(&self, text: &str) {
        match &self.live {
            Some(l) => {
                let _ = l.multi.println(text);
                crate::util::harness_log::printed(crate::util::harness_log::Stream::Stderr, text);
            }
            None => errln!("{text}"),
        }
    }

    /// Called often by the matrix: prints the plain heartbeat when it is due.
    pub fn tick(&self) {
        if let Some(text) = self.due_heartbeat(Instant::now()) {
            // One call, so that no run's line lands inside the block.
            errln!("{text}");
        }
    }

    /// The last line: the final counts, which the live line took with it when cleared.
    pub fn close(&self) {
        let c = self.counts();
        self.log(&top_line(&self.name, c));
        if let Some(l) = &self.live {
            l.top.finish_and_clear();
        }
    }

    fn due_heartbeat(&self, now: Instant) -> Option<String> {
        if self.live.is_some() {
            return None;
        }
        let mut s = self.state();
        if now.saturating_duration_since(s.last_heartbeat) < HEARTBEAT {
            return None;
        }
        s.last_heartbeat = now;
        Some(heartbeat_text(
            now.saturating_duration_since(self.started),
            s.counts,
            &s.running,
        ))
    }

    fn counts_changed(&self, c: Counts) {
        if let Some(l) = &self.live {
            l.top.set_message(top_line(&self.name, c));
        }
    }

    fn log(&self, text: &str) {
        self.println(&format!("{} {text}", stamp(self.started.elapsed())));
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A run that panicked while holding the lock left consistent data (every update is a
        // single insert or counter step): keep displaying.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A run of the matrix shows its lines and status here (`run::progress`).
impl crate::run::progress::SharedBoard for Board {
    fn add_bar(&self) -> Option<ProgressBar> {
        Board::add_bar(self)
    }
    fn println(&self, line: &str) {
        Board::println(self, line)
    }
    fn set_status(&self, id: &str, text: &str) {
        Board::set_status(self, id, text)
    }
    fn remove_run(&self, id: &str, bar: Option<&ProgressBar>) {
        Board::remove_run(self, id, bar)
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        if let Some(l) = &self.live {
            l.top.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    fn counts(total: usize, running: usize, as_expected: usize, unexpected: usize) -> Counts {
        Counts {
            total,
            running,
            done: as_expected + unexpected,
            as_expected,
            unexpected,
        }
    }

    #[test]
    fn the_top_line_gives_every_count() {
        assert_eq!(
            top_line("disks", counts(12, 2, 3, 0)),
            "matrix disks: 3/12 done (3 as expected, 0 not), 2 running, 7 queued"
        );
        assert_eq!(
            top_line("", counts(4, 1, 1, 2)),
            "matrix: 3/4 done (1 as expected, 2 not), 1 running, 0 queued"
        );
    }

    #[test]
    fn counts_follow_start_end_and_skip_events() {
        let mut c = Counts::new(5);
        assert_eq!(c.queued(), 5);
        c.start();
        c.start();
        assert_eq!((c.running, c.queued(), c.done), (2, 3, 0));
        c.end(true);
        c.end(false);
        c.skip();
        c.start();
        c.end(false);
        assert_eq!(c, counts(5, 0, 1, 3));
        assert_eq!(c.queued(), 1);
    }

    #[test]
    fn the_board_counts_and_lists_started_and_ended_runs() {
        let b = Board::new("disks", 3, Mode::Plain);
        b.started("a");
        b.started("b");
        assert_eq!(b.counts(), counts(3, 2, 0, 0));
        assert_eq!(
            b.running().keys().collect::<Vec<_>>(),
            ["a", "b"],
            "listed before their first tick"
        );
        b.set_status("a", "install for 3 s; no signal yet");
        assert_eq!(b.running()["a"], "install for 3 s; no signal yet");
        b.ended(&sample_fail("a", "timeout"), false);
        assert_eq!(b.counts(), counts(3, 1, 0, 1));
        assert_eq!(b.running().keys().collect::<Vec<_>>(), ["b"]);
        b.skipped("c", Some("cannot run on this host: 64 GiB of memory"));
        b.ended(&sample_pass("b"), true);
        assert_eq!(b.counts(), counts(3, 0, 1, 2));
        assert!(b.running().is_empty());
    }

    #[test]
    fn a_removed_run_leaves_the_board_and_removing_twice_is_harmless() {
        let b = Board::new("", 2, Mode::Plain);
        b.started("a");
        b.started("b");
        b.remove_run("a", None);
        b.remove_run("a", None);
        assert_eq!(b.running().keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(
            b.counts().running,
            2,
            "counts move on the matrix's events only"
        );
    }

    #[test]
    fn the_plain_heartbeat_lists_each_running_permutation() {
        let running = BTreeMap::from([
            (
                "disks-by-name".to_string(),
                "bootkube for 95 s; last signal 3 s ago: serial: bootkube.sh line 40".to_string(),
            ),
            (
                "disks-by-path".to_string(),
                "assets for 2 s; no signal yet".to_string(),
            ),
        ]);
        let text = heartbeat_text(
            Duration::from_millis(200_700),
            counts(12, 2, 3, 1),
            &running,
        );
        eprintln!("{text}");
        assert_eq!(
            text,
            "[ 200.7 s] matrix: heartbeat: 4/12 done (3 as expected, 1 not), 2 running, 6 queued\n\
             \x20            disks-by-name: bootkube for 95 s; last signal 3 s ago: serial: bootkube.sh line 40\n\
             \x20            disks-by-path: assets for 2 s; no signal yet"
        );
    }

    #[test]
    fn the_matrix_lines_carry_the_counts() {
        assert_eq!(
            start_line("disks-by-name", None, counts(12, 2, 3, 0)),
            "matrix: starting disks-by-name (2 running, 7 queued, 3/12 done)"
        );
        assert_eq!(
            start_line("a", Some("qemu+ssh://lab-2/system"), counts(2, 1, 0, 0)),
            "matrix: starting a on qemu+ssh://lab-2/system (1 running, 1 queued, 0/2 done)"
        );
        let mut r = sample_fail("disks-by-path", "timeout");
        r.duration_ms = 95_400;
        assert_eq!(
            end_line(&r, counts(12, 1, 3, 1)),
            "matrix: disks-by-path fail at bootkube (95 s) [4/12 done: 3 as expected, 1 not]"
        );
        let mut r = sample_pass("disks-by-id");
        r.duration_ms = 95_000;
        assert_eq!(
            end_line(&r, counts(12, 1, 4, 0)),
            "matrix: disks-by-id pass (95 s) [4/12 done: 4 as expected, 0 not]"
        );
    }

    #[test]
    fn the_plain_heartbeat_is_printed_at_most_every_30_s() {
        let b = Board::new("disks", 2, Mode::Plain);
        b.started("a");
        let t0 = b.state().last_heartbeat;
        assert_eq!(b.due_heartbeat(t0 + Duration::from_secs(29)), None);
        let first = b.due_heartbeat(t0 + HEARTBEAT).expect("due after 30 s");
        assert!(first.contains("matrix: heartbeat: 0/2 done"), "{first}");
        assert!(first.contains("a: starting"), "{first}");
        assert_eq!(b.due_heartbeat(t0 + Duration::from_secs(59)), None);
        assert!(b.due_heartbeat(t0 + Duration::from_secs(60)).is_some());
    }

    #[test]
    fn a_live_board_never_prints_a_plain_heartbeat() {
        // Hidden in tests (stderr is not a terminal), but built as on a terminal.
        let b = Board::new("disks", 1, Mode::Live);
        let t0 = b.state().last_heartbeat;
        assert_eq!(b.due_heartbeat(t0 + HEARTBEAT), None);
    }
}
