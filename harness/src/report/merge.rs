//! `report --merge`: the run directories of several shards (or several matrix runs of one
//! plan) as one report. The plans must be one (summary.json's `plan`); the permutation
//! directories stay where they are and are linked relatively, or are copied into the merged
//! directory.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::load::{load_run_dir, LocatedRun};
use super::run_dir::relative_dir;
use super::summary_json::{Summary, SUMMARY_JSON_FILE};
use crate::report::coverage::Axis;
use crate::scenario::matrix::PlanIdentity;

/// The runs of several directories of one plan, ready to be written as one report.
#[derive(Debug)]
pub struct Merged {
    pub plan: PlanIdentity,
    pub axes: Vec<Axis>,
    /// Each permutation once, in the plan's order; `dir` is relative to the merged directory.
    pub runs: Vec<LocatedRun>,
    /// Where each run came from (the input directory and its permutation directory).
    pub sources: Vec<PathBuf>,
    /// Plan ids no input ran.
    pub missing: Vec<String>,
    /// Ids more than one input ran, with the inputs; the first input's run is kept.
    pub duplicated: Vec<(String, Vec<PathBuf>)>,
}

/// Why inputs cannot be merged: bad input, named.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{dir}: no {SUMMARY_JSON_FILE} of schema sno-harness/summary/v1; --merge takes the output directories of `sno-harness matrix`")]
    NoSummary { dir: PathBuf },
    #[error("{dir}: its {SUMMARY_JSON_FILE} names no plan (a single scenario's run, or a matrix run of an earlier version); only matrix runs that record their plan can be merged")]
    NoPlan { dir: PathBuf },
    #[error("{dir} is of another plan than {first}: {difference}")]
    OtherPlan {
        dir: PathBuf,
        first: PathBuf,
        difference: String,
    },
    #[error("{dir}: {source}")]
    Load {
        dir: PathBuf,
        source: super::load::LoadError,
    },
    #[error("{dir}/{id}: a permutation that is not in the plan")]
    NotInPlan { dir: PathBuf, id: String },
}

/// Reads every input and checks they are one plan; `out` is where the merged report goes
/// (links are made relative to it).
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let mut first: Option<(PathBuf, PlanIdentity, Vec<Axis>)> = None;
    let mut by_id: BTreeMap<String, (LocatedRun, PathBuf)> = BTreeMap::new();
    let mut dups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for dir in inputs {
        let summary = Summary::read(&dir.join(SUMMARY_JSON_FILE))
            .ok_or_else(|| MergeError::NoSummary { dir: dir.clone() })?;
        let axes = summary.axes();
        let plan = summary
            .plan
            .ok_or_else(|| MergeError::NoPlan { dir: dir.clone() })?;
        match &first {
            None => first = Some((dir.clone(), plan.clone(), axes)),
            Some((first_dir, first_plan, _)) => {
                if let Some(difference) = plan.difference(first_plan) {
                    return Err(MergeError::OtherPlan {
                        dir: dir.clone(),
                        first: first_dir.clone(),
                        difference,
                    });
                }
            }
        }
        let plan_ids = &first.as_ref().expect("set above").1.ids;
        let runs = load_run_dir(dir).map_err(|source| MergeError::Load {
            dir: dir.clone(),
            source,
        })?;
        for run in runs {
            let id = run.result.id.clone();
            if !plan_ids.contains(&id) {
                return Err(MergeError::NotInPlan {
                    dir: dir.clone(),
                    id,
                });
            }
            if let Some((_, earlier)) = by_id.get(&id) {
                dups.entry(id)
                    .or_insert_with(|| vec![earlier.clone()])
                    .push(dir.clone());
                continue;
            }
            let source = dir.join(&run.dir);
            let linked = LocatedRun {
                dir: relative_dir(out, dir, &run.dir),
                result: run.result,
            };
            by_id.insert(id, (linked, source));
        }
    }
    let (_, plan, axes) = first.expect("at least one input");
    let mut runs = Vec::new();
    let mut sources = Vec::new();
    let mut missing = Vec::new();
    for id in &plan.ids {
        match by_id.remove(id) {
            Some((run, source)) => {
                runs.push(run);
                sources.push(source);
            }
            None => missing.push(id.clone()),
        }
    }
    Ok(Merged {
        plan: PlanIdentity {
            shard: None,
            ..plan
        },
        axes,
        runs,
        sources,
        missing,
        duplicated: dups.into_iter().collect(),
    })
}

impl Merged {
    /// `--copy`: every permutation directory copied into `out/<id>`, and the runs pointed there.
    pub fn copy_into(&mut self, out: &Path) -> io::Result<()> {
        for (run, source) in self.runs.iter_mut().zip(&self.sources) {
            copy_tree(source, &out.join(&run.result.id))?;
            run.dir = run.result.id.clone();
        }
        Ok(())
    }
}

/// A directory's files and subdirectories, copied; symbolic links are copied as links (a run
/// directory's links point inside it or at the host's files, which the copy must not follow).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
        }
        // Sockets and FIFOs of a kept VM are not evidence: left out.
    }
    Ok(())
}
