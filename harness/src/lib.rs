//! sno-harness: an end-to-end test harness for OpenShift single-node bootstrap-in-place.
//!
//! The modules, bottom first (each imports only modules below it; tests/layering.rs checks):
//! `util` (helpers), `hw` (the hardware vocabulary), `netboot` (the harness's HTTP server for
//! what a guest fetches while it boots), `flow` (signals, phases, the state
//! machine), `result` (result.json), `scenario` (scenario and matrix files), `guest` (serial
//! console, SSH, followers), `fixture` (building minisno), `vm` (QEMU and libvirt), `assets`
//! (install-config, installer, live ISO), `health` (the API checks), `gather` (a failed run's evidence:
//! guest, API and VM collectors), `perf` (the model and
//! statistics of repeated runs), `report` (JUnit, Markdown, HTML, comparisons), `run` (one run
//! as named steps, the runners of many, gc). The command line (`cli/`, in the binary) sits on
//! top. docs/architecture.md tells the way of one run through them.

/// `println!` that never panics (util::out): a closed stdout ends the output, not the run.
#[macro_export]
macro_rules! outln {
    () => { $crate::util::out::stdout(format_args!(""), true) };
    ($($t:tt)*) => { $crate::util::out::stdout(format_args!($($t)*), true) };
}

/// `print!` that never panics (util::out).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::util::out::stdout(format_args!($($t)*), false) };
}

/// `eprintln!` that never panics (util::out): a closed stderr ends the messages, not the run.
#[macro_export]
macro_rules! errln {
    () => { $crate::util::out::stderr(format_args!(""), true) };
    ($($t:tt)*) => { $crate::util::out::stderr(format_args!($($t)*), true) };
}

pub mod analyze;
pub mod assets;
pub mod fixture;
pub mod fleet;
pub mod flow;
pub mod gather;
pub mod guest;
pub mod health;
pub mod hw;
pub mod netboot;

pub mod perf;
pub mod registry;
pub mod report;
pub mod result;
pub mod run;
pub mod scenario;
pub mod secrets;
pub mod util;
pub mod vm;

/// Exit codes of the command-line contract (docs/architecture.md).
pub mod exit {
    pub const OK: i32 = 0;
    pub const SCENARIO_FAILED: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const HOST_NOT_READY: i32 = 3;
    pub const HARNESS_ERROR: i32 = 4;
    /// `analyze`: the evidence ends before any verdict (not a pass).
    pub const NO_VERDICT: i32 = 5;
}
