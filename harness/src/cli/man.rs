//! `sno-harness man`: the manual page, generated from the clap definition: the top-level page
//! on stdout, or one page per command into a directory.

use std::path::PathBuf;

use clap::CommandFactory;
use sno_harness::exit;

use super::error::{harness, Outcome};

/// Print the manual page (roff), or write sno-harness.1 and one sno-harness-COMMAND.1 per
/// command into --out.
#[derive(clap::Args)]
pub struct ManArgs {
    /// A directory to write every page into (created if missing), instead of stdout.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn man(a: ManArgs) -> Outcome {
    let cmd = super::Cli::command();
    match a.out {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .and_then(|()| clap_mangen::generate_to(cmd, &dir))
                .map_err(|e| {
                    harness(format!("writing manual pages into {}: {e}", dir.display()))
                })?;
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .map_err(|e| harness(format!("rendering the manual page: {e}")))?;
            out!("{}", String::from_utf8_lossy(&out));
        }
    }
    Ok(exit::OK)
}
