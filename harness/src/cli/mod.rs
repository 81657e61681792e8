//! The command line: one file per command, each returning an [`error::Outcome`]; `error`
//! maps it to the exit codes of the contract, `preflight` is the one host check before
//! anything is created, `flags` what `run`, `matrix` and `perf` share.

mod analyze;
mod bmc_flags;
mod check;
mod completions;
mod console;
mod console_session;
mod console_text;
mod doctor;
mod error;
mod fixture;
mod flags;
mod gc;
mod hand_on;
mod list;
mod man;
mod matrix;
mod observe;
mod observe_inputs;
mod perf;
mod plan;
mod preflight;
mod prepare;
mod report;
mod report_merge;
mod resume;
mod run;
mod ssh;
mod status;

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
    Analyze(analyze::AnalyzeArgs),
    Observe(observe::ObserveArgs),
    Prepare(prepare::PrepareArgs),
    Matrix(matrix::MatrixArgs),
    Perf(perf::PerfArgs),
    Plan(plan::PlanArgs),
    Check(check::CheckArgs),
    Report(report::ReportArgs),
    Gc(gc::GcArgs),
    Status(status::StatusArgs),
    Ssh(ssh::SshArgs),
    Console(console::ConsoleArgs),
    Resume(resume::ResumeArgs),
    Doctor(doctor::DoctorArgs),
    List(list::ListArgs),
    Completions(completions::CompletionsArgs),
    Man(man::ManArgs),
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
        Command::Analyze(a) => analyze::analyze(a),
        Command::Observe(a) => observe::observe(a),
        Command::Prepare(a) => prepare::prepare(a),
        Command::Matrix(a) => matrix::matrix(a),
        Command::Perf(a) => perf::perf(a),
        Command::Plan(a) => plan::plan(a),
        Command::Check(a) => check::check(a),
        Command::Report(a) => report::report(a),
        Command::Gc(a) => gc::gc(a),
        Command::Status(a) => status::status(a),
        Command::Ssh(a) => ssh::ssh(a),
        Command::Console(a) => console::console(a),
        Command::Resume(a) => resume::resume(a),
        Command::Doctor(a) => doctor::doctor(a),
        Command::List(a) => list::list(a),
        Command::Completions(a) => completions::completions(a),
        Command::Man(a) => man::man(a),
        Command::Fixture { command } => fixture::fixture(command),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every argument of every command, with the path of commands it belongs to.
    fn all_args(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
        for a in cmd.get_arguments() {
            out.push((path.to_string(), a.clone()));
        }
        for sub in cmd.get_subcommands() {
            all_args(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_and_command_is_described() {
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        let mut args = Vec::new();
        all_args(&cmd, "sno-harness", &mut args);
        let undescribed: Vec<String> = args
            .iter()
            .filter(|(_, a)| !["help", "version"].contains(&a.get_id().as_str()))
            .filter(|(_, a)| a.get_help().is_none() && a.get_long_help().is_none())
            .map(|(p, a)| format!("{p}: {}", a.get_id()))
            .collect();
        assert!(undescribed.is_empty(), "undescribed: {undescribed:#?}");
        for sub in cmd.get_subcommands() {
            assert!(
                sub.get_about().is_some(),
                "{} has no description",
                sub.get_name()
            );
        }
    }

    #[test]
    fn completions_and_the_manual_come_from_the_definition() {
        let mut bash = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::command(),
            "sno-harness",
            &mut bash,
        );
        let bash = String::from_utf8(bash).unwrap();
        for word in ["sno-harness", "matrix", "--gather", "completions"] {
            assert!(
                bash.contains(word),
                "{word} missing from the bash completions"
            );
        }
        let mut page = Vec::new();
        clap_mangen::Man::new(Cli::command())
            .render(&mut page)
            .unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH sno-harness"),
            "{page}"
        );
        assert!(page.contains("bootstrap"), "{page}");
    }
}
