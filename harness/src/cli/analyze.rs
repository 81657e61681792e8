//! `sno-harness analyze`: judges a finished install's evidence by the run's own phases.

use std::path::PathBuf;

use sno_harness::analyze::report::Judged;
use sno_harness::analyze::{self, Options};
use sno_harness::exit;

use super::error::{bad, Outcome};

/// Judge a finished install from its evidence, as a run would: a run directory (its
/// events.jsonl replayed, compared with its result.json), or any of a serial console log,
/// journal exports of both boots (`journalctl -o export` or `-o json`, optionally gzipped), a
/// `journalctl -o short` file named after its unit, and an installer's log bundle (either
/// layout: its service records as the installer's own analysis reads them, and its journals).
/// Phases the evidence does not reach are `no-evidence`. Exit 0 pass, 1 fail, 4 a harness
/// error recorded by the run, 5 no verdict (the evidence ends first), 2 bad or hostile input.
#[derive(clap::Args)]
pub struct AnalyzeArgs {
    /// The evidence: one run directory, or any number of logs, journals and log bundles of one
    /// install.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Print the report as JSON (schema sno-harness/analyze/v1), for tools.
    #[arg(long)]
    json: bool,
    /// Judge by this scenario's rules (its allow-list, limits and timeouts); for a run
    /// directory, instead of the scenario its result.json names.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
}

pub fn analyze(a: AnalyzeArgs) -> Outcome {
    let opts = Options {
        scenario: a.scenario,
        ..Options::default()
    };
    let report = analyze::analyze(&a.paths, &opts).map_err(bad)?;
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        out!("{}", report.text());
    }
    Ok(exit_code(report.verdict))
}

/// 0 pass, 1 fail, 4 a harness error the run recorded (as `run`), 5 no verdict.
fn exit_code(verdict: Judged) -> i32 {
    match verdict {
        Judged::Pass => exit::OK,
        Judged::Fail => exit::SCENARIO_FAILED,
        Judged::Error => exit::HARNESS_ERROR,
        Judged::NoVerdict => exit::NO_VERDICT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_verdict_has_its_own_exit_code_and_is_never_a_pass() {
        let codes: Vec<i32> = [Judged::Pass, Judged::Fail, Judged::Error, Judged::NoVerdict]
            .into_iter()
            .map(exit_code)
            .collect();
        assert_eq!(codes, [0, 1, 4, 5]);
        assert_eq!(exit::NO_VERDICT, 5);
    }
}
