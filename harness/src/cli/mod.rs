//! The command line: one file per command, each returning an [`error::Outcome`]; `error`
//! maps it to the exit codes of the contract, `preflight` is the one host check before
//! anything is created, `flags` what `run`, `matrix` and `perf` share.

mod check;
mod doctor;
mod error;
mod fixture;
mod flags;
mod gc;
mod matrix;
mod perf;
mod plan;
mod preflight;
mod report;
mod run;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sno-harness",
    version,
    about = "End-to-end tests of OpenShift single-node bootstrap-in-place in VMs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More on the terminal: -v debug, -vv trace [default: info, or as $SNO_HARNESS_LOG says].
    /// The run directory's harness.log is at debug whatever this says (trace with trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// The terminal's log level exactly: error, warn, info, debug or trace.
    #[arg(
        long,
        global = true,
        value_name = "LEVEL",
        value_parser = sno_harness::util::harness_log::parse_level,
        conflicts_with = "verbose"
    )]
    log_level: Option<tracing::Level>,
}

#[derive(Subcommand)]
enum Command {
    Run(run::RunArgs),
    Matrix(matrix::MatrixArgs),
    Perf(perf::PerfArgs),
    Plan(plan::PlanArgs),
    Check(check::CheckArgs),
    Report(report::ReportArgs),
    Gc(gc::GcArgs),
    Doctor(doctor::DoctorArgs),
    /// The minisno fixture appliance.
    Fixture {
        #[command(subcommand)]
        command: fixture::FixtureCommand,
    },
}

/// Parses the arguments, runs the command, and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                sno_harness::exit::BAD_INPUT
            } else {
                sno_harness::exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    use sno_harness::util::harness_log;
    harness_log::init(harness_log::terminal_level(cli.verbose, cli.log_level));
    error::exit_code(match cli.command {
        Command::Run(a) => run::run(a),
        Command::Matrix(a) => matrix::matrix(a),
        Command::Perf(a) => perf::perf(a),
        Command::Plan(a) => plan::plan(a),
        Command::Check(a) => check::check(a),
        Command::Report(a) => report::report(a),
        Command::Gc(a) => gc::gc(a),
        Command::Doctor(a) => doctor::doctor(a),
        Command::Fixture { command } => fixture::fixture(command),
    })
}
