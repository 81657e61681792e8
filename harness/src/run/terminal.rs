//! How the terminal is written to, for a run alone and for a matrix's board alike: plain lines
//! or a live status line, and the look of that line.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

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

/// The look of every live status line, a run's alone or in a matrix, and the matrix's own.
pub fn live_bar(bar: ProgressBar) -> ProgressBar {
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_msg}")
            .expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
