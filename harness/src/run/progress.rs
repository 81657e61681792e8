//! What a run shows while it runs. On a terminal: the log lines (phases, verdict) scroll above
//! one live status line (indicatif) that says, every second, which phase runs and for how long,
//! how far the disk write is and what the last signal was. Elsewhere (CI logs, pipes, files):
//! the same log lines, plain, and the status as a heartbeat line every 30 s. Inside a matrix,
//! the status goes to a board shared by the runs (`SharedBoard`; the matrix's is
//! `fleet::board`), which draws or prints all runs together.

use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget};

use super::terminal::{live_bar, Mode, HEARTBEAT};
use crate::flow::machine::Machine;
use crate::flow::phase::Phase;

/// What several runs at once show their lines and status on (a matrix's board): it owns the
/// terminal while they run.
pub trait SharedBoard: Send + Sync {
    /// A live status line for one more run, when the board draws live.
    fn add_bar(&self) -> Option<ProgressBar>;
    /// A log line, above the status lines.
    fn println(&self, line: &str);
    /// The run `id`'s status, for the board's own line or heartbeat.
    fn set_status(&self, id: &str, text: &str);
    /// The run `id` ended: its status (and its bar) go.
    fn remove_run(&self, id: &str, bar: Option<&ProgressBar>);
}

/// Where a run shows its lines and status.
#[derive(Clone)]
pub enum Display {
    /// Alone, on a terminal: its own live status line.
    Live,
    /// Alone, elsewhere: plain lines and its own heartbeat.
    Plain,
    /// One of a matrix's runs: the matrix's board shows its status, live or plain.
    InMatrix(Arc<dyn SharedBoard>),
}

impl Display {
    pub fn detect() -> Display {
        Mode::detect().into()
    }
}

impl From<Mode> for Display {
    fn from(m: Mode) -> Display {
        match m {
            Mode::Live => Display::Live,
            Mode::Plain => Display::Plain,
        }
    }
}

pub struct Progress {
    started: Instant,
    bar: Option<ProgressBar>,
    last_heartbeat: Instant,
    /// Prefix of every line (the run id), so that lines of parallel runs can be told apart.
    label: String,
    /// The matrix this run belongs to: it takes the status and owns the terminal.
    board: Option<Arc<dyn SharedBoard>>,
}

impl Progress {
    pub fn new(started: Instant, display: &Display, label: &str) -> Progress {
        let (bar, board) = match display {
            Display::Live => (
                Some(live_bar(ProgressBar::with_draw_target(
                    None,
                    ProgressDrawTarget::stderr(),
                ))),
                None,
            ),
            Display::Plain => (None, None),
            Display::InMatrix(board) => (board.add_bar(), Some(board.clone())),
        };
        Progress {
            started,
            bar,
            last_heartbeat: Instant::now(),
            label: label.to_string(),
            board,
        }
    }

    /// A log line: phases, decisions, the verdict. Above the status line when there is one.
    pub fn line(&self, text: &str) {
        let line = format!(
            "[{:6.1} s] {}{}",
            self.started.elapsed().as_secs_f64(),
            self.prefix(),
            crate::util::out::printable(text)
        );
        match (&self.board, &self.bar) {
            (Some(board), _) => board.println(&line),
            (None, Some(bar)) => {
                crate::util::harness_log::printed(crate::util::harness_log::Stream::Stderr, &line);
                bar.println(line);
            }
            (None, None) => errln!("{line}"),
        }
    }

    /// Text as it is (several lines, no prefix), for after `finish`: alone, the terminal is
    /// free again; in a matrix, the other runs' status lines are still drawn and a raw
    /// `eprintln!` would be overwritten by their next redraw.
    pub fn print(&self, text: &str) {
        match &self.board {
            Some(board) => board.println(&crate::util::out::printable(text)),
            None => errln!("{text}"),
        }
    }

    /// The status, given every tick: redrawn live, or printed as a heartbeat every 30 s.
    pub fn status(&mut self, machine: &Machine, now_ms: u64) {
        let text = crate::util::out::printable(&status_text(machine, now_ms)).into_owned();
        if let Some(board) = &self.board {
            board.set_status(&self.label, &text);
        }
        match &self.bar {
            Some(bar) => bar.set_message(format!("{}{text}", self.prefix())),
            // The matrix's heartbeat lists this run with the others.
            None if self.board.is_some() => {}
            None => {
                if self.last_heartbeat.elapsed() >= HEARTBEAT {
                    self.last_heartbeat = Instant::now();
                    self.line(&format!("heartbeat: {text}"));
                }
            }
        }
    }

    /// Removes the status line; log lines stay.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if let Some(board) = &self.board {
            board.remove_run(&self.label, self.bar.as_ref());
        }
    }

    fn prefix(&self) -> String {
        if self.label.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.label)
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Phase and time in it; the disk write while it runs; the last signal and its age.
pub fn status_text(m: &Machine, now_ms: u64) -> String {
    let phase = m
        .progress(now_ms)
        .map(|(p, d)| format!("{p} for {:.0} s", d.as_secs_f64()))
        .unwrap_or_else(|| "between phases".into());
    let disk = m
        .disk
        .describe(now_ms)
        .map(|d| format!("; install disk: {d}"))
        .unwrap_or_default();
    // While the write runs: where it is heading and the deadline that follows.
    let projection = m
        .install_projection()
        .filter(|_| m.current() == Some(Phase::InstallToDisk))
        .map(|p| {
            let secs = |t: u64| t.saturating_sub(now_ms) as f64 / 1000.0;
            let end = if p.write_end_ms > now_ms {
                format!("write ends in ~{:.0} s", secs(p.write_end_ms))
            } else {
                "image read, the disk still catching up".to_string()
            };
            format!(
                " ({end}; deadline in {:.0} s, nominal {:.0} s)",
                secs(p.deadline_ms),
                secs(p.nominal_deadline_ms)
            )
        })
        .unwrap_or_default();
    let restarts = match (m.current(), m.bootkube_restarts) {
        (Some(Phase::Bootkube), n) if n > 0 => format!(
            "; bootkube.service restarted {n} times{}",
            m.last_bootkube_error()
                .map(|e| format!(" (last error: {e})"))
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    let disk = disk + &projection + &restarts;
    let last = m
        .last_signals()
        .last()
        .map(|(t, _, s)| {
            format!(
                "; last signal {:.0} s ago: {s}",
                (now_ms.saturating_sub(*t)) as f64 / 1000.0
            )
        })
        .unwrap_or_else(|| "; no signal yet".into());
    format!("{phase}{disk}{last}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::machine::Config;
    use crate::flow::phase::Phase;
    use std::collections::BTreeMap;
    use std::time::Duration;

    #[test]
    fn the_status_names_the_phase_and_the_lack_of_signals() {
        let mut m = Machine::new(Config {
            timeouts: BTreeMap::new(),
            write_stall: Duration::from_secs(120),
            bootkube_max_restarts: None,
            adaptive_install: None,
        });
        m.start(1_000);
        assert_eq!(
            status_text(&m, 4_000),
            format!("{} for 3 s; no signal yet", Phase::Assets)
        );
    }

    #[test]
    fn plain_mode_prints_a_heartbeat_only_every_30_s() {
        let m = Machine::new(Config {
            timeouts: BTreeMap::new(),
            write_stall: Duration::from_secs(120),
            bootkube_max_restarts: None,
            adaptive_install: None,
        });
        let mut p = Progress::new(Instant::now(), &Display::Plain, "");
        let before = p.last_heartbeat;
        p.status(&m, 0);
        assert_eq!(p.last_heartbeat, before, "no heartbeat before 30 s");
        p.last_heartbeat = Instant::now() - HEARTBEAT;
        p.status(&m, 0);
        assert!(p.last_heartbeat > before, "a heartbeat after 30 s");
    }

    /// A board that keeps what the runs tell it.
    #[derive(Default)]
    struct Recording {
        status: std::sync::Mutex<BTreeMap<String, String>>,
        lines: std::sync::Mutex<Vec<String>>,
    }

    impl SharedBoard for Recording {
        fn add_bar(&self) -> Option<ProgressBar> {
            None
        }
        fn println(&self, line: &str) {
            self.lines.lock().unwrap().push(line.to_string());
        }
        fn set_status(&self, id: &str, text: &str) {
            self.status.lock().unwrap().insert(id.into(), text.into());
        }
        fn remove_run(&self, id: &str, _: Option<&ProgressBar>) {
            self.status.lock().unwrap().remove(id);
        }
    }

    #[test]
    fn in_a_matrix_the_status_and_lines_go_to_the_board_and_leave_it_at_the_end() {
        let mut m = Machine::new(Config {
            timeouts: BTreeMap::new(),
            write_stall: Duration::from_secs(120),
            bootkube_max_restarts: None,
            adaptive_install: None,
        });
        m.start(1_000);
        let board = Arc::new(Recording::default());
        let mut p = Progress::new(Instant::now(), &Display::InMatrix(board.clone()), "disks-a");
        p.last_heartbeat = Instant::now() - HEARTBEAT;
        let before = p.last_heartbeat;
        p.status(&m, 4_000);
        assert_eq!(
            board.status.lock().unwrap()["disks-a"],
            format!("{} for 3 s; no signal yet", Phase::Assets)
        );
        assert_eq!(p.last_heartbeat, before, "no heartbeat of its own");
        p.line("phase assets ended: pass");
        assert!(board.lines.lock().unwrap()[0].ends_with("disks-a: phase assets ended: pass"));
        p.finish();
        assert!(
            board.status.lock().unwrap().is_empty(),
            "the finished run's line is gone"
        );
    }
}
