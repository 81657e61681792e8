//! `sno-harness completions SHELL`: a completion script, generated from the clap definition
//! so that it never lags behind the commands.

use clap::CommandFactory;
use sno_harness::exit;

use super::error::Outcome;

/// Print a shell completion script for sno-harness (bash: `sno-harness completions bash >
/// /etc/bash_completion.d/sno-harness`).
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

pub fn completions(a: CompletionsArgs) -> Outcome {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut super::Cli::command(), "sno-harness", &mut out);
    out!("{}", String::from_utf8_lossy(&out));
    Ok(exit::OK)
}
