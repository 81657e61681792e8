//! What a run shows while it runs. On a terminal: the log lines (phases, verdict) scroll above
//! one live status line (indicatif) that says, every second, which phase runs and for how long,
//! how far the disk write is and what the last signal was. Elsewhere (CI logs, pipes, files):
//! the same log lines, plain, and the status as a heartbeat line every 30 s.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::flow::machine::Machine;

/// How often the plain mode prints the status.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A live status line on the terminal.
    Live,
    /// Plain lines, a heartbeat every 30 s.
    Plain,
}

impl Mode {
    /// Live when stderr is a terminal that can redraw a line, unless `SNO_HARNESS_PROGRESS=plain`.
    pub fn detect() -> Mode {
        let forced_plain = std::env::var("SNO_HARNESS_PROGRESS").is_ok_and(|v| v == "plain");
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        if !forced_plain && !dumb && std::io::stderr().is_terminal() {
            Mode::Live
        } else {
            Mode::Plain
        }
    }
}

pub struct Progress {
    started: Instant,
    bar: Option<ProgressBar>,
    last_heartbeat: Instant,
    /// Prefix of every line (the run id), so that lines of parallel runs can be told apart.
    label: String,
}

impl Progress {
    pub fn new(started: Instant, mode: Mode, label: &str) -> Progress {
        let bar = (mode == Mode::Live).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_msg}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            started,
            bar,
            last_heartbeat: Instant::now(),
            label: label.to_string(),
        }
    }

    /// A log line: phases, decisions, the verdict. Above the status line when there is one.
    pub fn line(&self, text: &str) {
        let line = format!(
            "[{:6.1} s] {}{text}",
            self.started.elapsed().as_secs_f64(),
            self.prefix()
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// The status, given every tick: redrawn live, or printed as a heartbeat every 30 s.
    pub fn status(&mut self, machine: &Machine, now_ms: u64) {
        let text = status_text(machine, now_ms);
        match &self.bar {
            Some(bar) => bar.set_message(format!("{}{text}", self.prefix())),
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
    let last = m
        .last_signals()
        .last()
        .map(|(t, s)| {
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

    #[test]
    fn the_status_names_the_phase_and_the_lack_of_signals() {
        let mut m = Machine::new(Config {
            timeouts: BTreeMap::new(),
            write_stall: Duration::from_secs(120),
            bootkube_max_restarts: 3,
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
            bootkube_max_restarts: 3,
        });
        let mut p = Progress::new(Instant::now(), Mode::Plain, "");
        let before = p.last_heartbeat;
        p.status(&m, 0);
        assert_eq!(p.last_heartbeat, before, "no heartbeat before 30 s");
        p.last_heartbeat = Instant::now() - HEARTBEAT;
        p.status(&m, 0);
        assert!(p.last_heartbeat > before, "a heartbeat after 30 s");
    }
}
