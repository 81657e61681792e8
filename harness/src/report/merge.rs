//! `report --merge`: the run directories of several shards (or several matrix runs of one
//! plan) as one report. The plans must be one (summary.json's `plan`); the permutation
//! directories stay where they are and are linked relatively, or are copied into the merged
//! directory.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::copy_run::{copy_run_dir, CopyError, Skipped};
use super::load::{load_run_dir, LoadError, LocatedRun};
use super::run_dir::relative_dir;
use super::summary_json::{Summary, SUMMARY_JSON_FILE};
use crate::report::coverage::Axis;
use crate::result::RESULT_FILE;
use crate::scenario::matrix::{PlanIdentity, MAX_PERMUTATIONS};
use crate::scenario::permutation_id_problem;

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
    #[error("{dir}: no {SUMMARY_JSON_FILE} of schema sno-harness/summary/v1 ({why}); --merge takes the output directories of `sno-harness matrix`")]
    NoSummary {
        dir: PathBuf,
        why: super::summary_json::SummaryReadError,
    },
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
    /// An id that could not name a directory inside `--out`: `file` is where it was read.
    #[error("{file}: {} {why}", shown(.id))]
    BadId {
        file: PathBuf,
        id: String,
        why: String,
    },
    #[error("{file}: the plan lists the permutation {id} twice; a plan names each once")]
    TwiceInPlan { file: PathBuf, id: String },
    #[error("{file}: the plan has {count} permutations, more than the {MAX_PERMUTATIONS} a matrix may have")]
    PlanTooLarge { file: PathBuf, count: usize },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is a symbolic link; --copy copies no links: merge the directory it points to, or leave out --copy")]
    LinkedRun { path: PathBuf },
}

/// An id for a message: quoted, and cut (a hostile file may hold megabytes in one).
fn shown(id: &str) -> String {
    const SHOWN: usize = 120;
    match id.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &id[..cut]),
        None => format!("{id:?}"),
    }
}

/// The plan of `summary` (read from `file`), checked: at most a matrix's number of
/// permutations, each id once and each a name (ids name directories of `--out --copy`).
fn checked_plan(dir: &Path, summary: Summary) -> Result<PlanIdentity, MergeError> {
    let file = dir.join(SUMMARY_JSON_FILE);
    let plan = summary
        .plan
        .ok_or_else(|| MergeError::NoPlan { dir: dir.into() })?;
    if plan.ids.len() > MAX_PERMUTATIONS {
        return Err(MergeError::PlanTooLarge {
            file,
            count: plan.ids.len(),
        });
    }
    let mut seen = HashSet::new();
    for id in &plan.ids {
        check_id(&file, id)?;
        if !seen.insert(id.as_str()) {
            return Err(MergeError::TwiceInPlan {
                file,
                id: id.clone(),
            });
        }
    }
    Ok(plan)
}

fn check_id(file: &Path, id: &str) -> Result<(), MergeError> {
    match permutation_id_problem(id) {
        None => Ok(()),
        Some(why) => Err(MergeError::BadId {
            file: file.to_path_buf(),
            id: id.to_string(),
            why,
        }),
    }
}

/// Reads every input and checks they are one plan; `out` is where the merged report goes
/// (links are made relative to it).
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let mut first: Option<(PathBuf, PlanIdentity, Vec<Axis>)> = None;
    let mut plan_ids: HashSet<String> = HashSet::new();
    let mut by_id: BTreeMap<String, (LocatedRun, PathBuf)> = BTreeMap::new();
    let mut dups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for dir in inputs {
        let summary =
            Summary::load(&dir.join(SUMMARY_JSON_FILE)).map_err(|why| MergeError::NoSummary {
                dir: dir.clone(),
                why,
            })?;
        let axes = summary.axes();
        // A shard that holds no permutation ran none: its directory has the summary alone.
        let ran_none = summary.permutations.is_empty();
        let plan = checked_plan(dir, summary)?;
        match &first {
            None => {
                plan_ids = plan.ids.iter().cloned().collect();
                first = Some((dir.clone(), plan, axes));
            }
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
        let runs = match load_run_dir(dir) {
            Err(LoadError::NoResults { .. }) if ran_none => Vec::new(),
            loaded => loaded.map_err(|source| MergeError::Load {
                dir: dir.clone(),
                source,
            })?,
        };
        for run in runs {
            let id = run.result.id.clone();
            check_id(&dir.join(&run.dir).join(RESULT_FILE), &id)?;
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
    /// Refuses, before anything is written, a permutation directory `--copy` would not copy:
    /// one that is a symbolic link (the copy follows none).
    pub fn check_copy(&self) -> Result<(), MergeError> {
        for source in &self.sources {
            let meta = std::fs::symlink_metadata(source).map_err(|e| MergeError::Io {
                path: source.clone(),
                source: e,
            })?;
            if !meta.is_dir() {
                return Err(MergeError::LinkedRun {
                    path: source.clone(),
                });
            }
        }
        Ok(())
    }

    /// `--copy`: every permutation directory copied into `out/<id>` (ids are names: see
    /// [`merge`]), and the runs pointed there. Returns what the copies left out
    /// (report/copy_run.rs).
    pub fn copy_into(&mut self, out: &Path) -> Result<Vec<Skipped>, CopyError> {
        let mut skipped = Vec::new();
        for (run, source) in self.runs.iter_mut().zip(&self.sources) {
            skipped.extend(copy_run_dir(source, out, &run.result.id)?);
            run.dir = run.result.id.clone();
        }
        Ok(skipped)
    }
}

#[cfg(test)]
mod tests;
