//! `sno-harness fixture build`: minisno, built or taken from the cache.

use std::path::PathBuf;

use sno_harness::exit;
use sno_harness::fixture::{self, BuildOptions};

use super::error::{CliError, Outcome};

/// The minisno fixture appliance.
#[derive(clap::Subcommand)]
pub enum FixtureCommand {
    /// Build minisno (live ISO, metal images), or return the cached build for the same inputs.
    Build {
        /// Cache directory [default: $XDG_CACHE_HOME/sno-harness, else ~/.cache/sno-harness]
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the artifact paths as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

pub fn fixture(command: FixtureCommand) -> Outcome {
    let FixtureCommand::Build { out, json } = command;
    let mut opts = BuildOptions::default();
    if let Some(out) = out {
        opts.cache_dir = out;
    }
    let a = fixture::build(&opts).map_err(|e| {
        let message = format!("fixture build failed: {e}");
        if e.is_host_not_ready() {
            CliError::HostNotReady(message)
        } else {
            CliError::Harness(message)
        }
    })?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&a).expect("serialisable")
        );
    } else {
        outln!("live ISO:        {}", a.live_iso.display());
        outln!("metal (512):     {}", a.metal.sector_512.display());
        outln!("metal (4096):    {}", a.metal.sector_4096.display());
    }
    Ok(exit::OK)
}
