//! `sno-harness man`: the manual page, generated from the clap definition: the top-level page
//! on stdout, or one page per command into a directory.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use sno_harness::exit;
use sno_harness::util::replace_file::{replace_file, WriteError, PUBLIC_FILE};

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
                .map_err(|e| harness(format!("creating the directory {}: {e}", dir.display())))?;
            let mut cmd = cmd.disable_help_subcommand(true);
            cmd.build();
            write_pages(cmd, &dir).map_err(|e| harness(format!("writing a manual page: {e}")))?;
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

/// The page of `cmd` and of each of its visible subcommands, as clap_mangen's `generate_to`
/// names them, each written whole through util/replace_file.rs: `generate_to` opens the
/// paths with File::create, which follows a link planted in the directory.
fn write_pages(cmd: clap::Command, dir: &Path) -> Result<(), WriteError> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub.clone(), dir)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page).map_err(|source| WriteError {
        path: path.clone(),
        source,
    })?;
    replace_file(&path, &page, PUBLIC_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut p: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let text = std::fs::read(e.path()).unwrap();
                (e.file_name().into_string().unwrap(), text)
            })
            .collect();
        p.sort();
        p
    }

    #[test]
    fn the_pages_are_those_clap_mangen_writes() {
        let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut cmd = super::super::Cli::command().disable_help_subcommand(true);
        cmd.build();
        write_pages(cmd, ours.path()).unwrap();
        clap_mangen::generate_to(super::super::Cli::command(), theirs.path()).unwrap();
        let ours = pages(ours.path());
        assert!(ours.len() > 10, "{}", ours.len());
        assert_eq!(ours, pages(theirs.path()));
    }
}
