//! `sno-harness status`: the registered runs, for a second terminal.

use sno_harness::exit;
use sno_harness::registry::status::{statuses, table, SCHEMA};

use super::error::Outcome;

/// List this user's runs in progress and kept ones, from the registry: each run's phase and
/// for how long, its age and its last signal (read from its timeline). Exit 0; 1 when RUN is
/// given and no registered run is it.
#[derive(clap::Args)]
pub struct StatusArgs {
    /// Only this run: a registered run's id or its run directory.
    run: Option<String>,
    /// Print the runs as JSON, for tools.
    #[arg(long)]
    json: bool,
}

pub fn status(a: StatusArgs) -> Outcome {
    let runs = statuses(
        &sno_harness::registry::dir(),
        a.run.as_deref(),
        std::time::SystemTime::now(),
    );
    if a.json {
        let doc = serde_json::json!({"schema": SCHEMA, "runs": runs});
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        out!("{}", table(&runs));
    }
    match (&a.run, runs.is_empty()) {
        (Some(_), true) => Ok(exit::SCENARIO_FAILED),
        _ => Ok(exit::OK),
    }
}
