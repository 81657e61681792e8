//! `sno-harness report --merge DIR... --out DIR`: one report from several shards of a plan.

use std::path::{Path, PathBuf};

use sno_harness::exit;
use sno_harness::report::copy_run::{left_out_lines, CopyError, Skipped};
use sno_harness::report::junit::JunitFlavour;
use sno_harness::report::merge::{merge as merge_dirs, Merged};
use sno_harness::report::run_dir::write_reports_for;

use super::error::{bad, harness, Outcome};

/// Exit 0 when the inputs together ran the whole plan once, 1 when permutations are missing
/// or ran twice (the report is written all the same), 2 bad input (nothing written: ids that
/// are no names, a plan naming an id twice, a linked permutation directory with --copy), 4
/// when the report could not be written. `--copy` says what it left out (report/copy_run.rs).
pub fn merge(inputs: &[PathBuf], out: Option<&Path>, copy: bool, junit: JunitFlavour) -> Outcome {
    let out =
        out.ok_or_else(|| bad("--merge needs --out DIR, the directory for the merged report"))?;
    check_out(out, inputs)?;
    let mut merged = merge_dirs(inputs, out).map_err(bad)?;
    if copy {
        merged.check_copy().map_err(bad)?;
    }
    let created = !out.exists();
    std::fs::create_dir_all(out)
        .map_err(|e| harness(format!("creating {}: {e}", out.display())))?;
    let written = write(&mut merged, out, copy, junit);
    let (written, left_out) = match written {
        Ok(w) => w,
        Err(e) => {
            // Nothing half-made: a directory this command created goes again.
            if created {
                let _ = std::fs::remove_dir_all(out);
            }
            return Err(harness(format!("writing the merged report: {e}")));
        }
    };
    for p in written {
        outln!("wrote {}", p.display());
    }
    for line in left_out_lines(&left_out) {
        outln!("{line}");
    }
    outln!(
        "merged {} directories of plan {} ({} strategy): {} of {} permutations",
        inputs.len(),
        merged.plan.matrix,
        merged.plan.strategy,
        merged.runs.len(),
        merged.plan.ids.len()
    );
    let results: Vec<_> = merged.runs.iter().map(|r| r.result.clone()).collect();
    sno_harness::report::github::publish_from_env(
        &out.join(sno_harness::report::run_dir::SUMMARY_MD_FILE),
        &results,
    );
    if !merged.missing.is_empty() {
        errln!(
            "sno-harness: missing (no input ran them): {}",
            merged.missing.join(", ")
        );
    }
    for (id, dirs) in &merged.duplicated {
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        errln!(
            "sno-harness: duplicated: {id} ran in {}; the first is in the report",
            dirs.join(" and ")
        );
    }
    Ok(
        if merged.missing.is_empty() && merged.duplicated.is_empty() {
            exit::OK
        } else {
            exit::SCENARIO_FAILED
        },
    )
}

/// Why the merged directory could not be made.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Copy(#[from] CopyError),
    #[error(transparent)]
    Report(#[from] std::io::Error),
}

/// The copies (`--copy`) and the reports; the paths written and what the copies left out.
fn write(
    merged: &mut Merged,
    out: &Path,
    copy: bool,
    junit: JunitFlavour,
) -> Result<(Vec<PathBuf>, Vec<Skipped>), WriteError> {
    let left_out = if copy {
        merged.copy_into(out)?
    } else {
        Vec::new()
    };
    let written = write_reports_for(out, &merged.runs, &merged.axes, Some(&merged.plan), junit)?;
    Ok((written, left_out))
}

/// `--out` is new or an empty directory, and none of the inputs.
fn check_out(out: &Path, inputs: &[PathBuf]) -> Result<(), super::error::CliError> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Some(i) = inputs.iter().find(|i| same(i, out)) {
        return Err(bad(format!(
            "--out {} is one of the merged directories ({}); give a new directory",
            out.display(),
            i.display()
        )));
    }
    let empty = match std::fs::read_dir(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(bad(format!("--out {}: {e}", out.display()))),
        Ok(mut entries) => entries.next().is_none(),
    };
    if !empty {
        return Err(bad(format!(
            "--out {} is not empty; the merged report goes into a new or empty directory",
            out.display()
        )));
    }
    Ok(())
}
