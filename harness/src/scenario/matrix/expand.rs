//! From a checked `Spec` to permutations: the rows of the strategy (full cartesian product or
//! pairwise covering array, both without excluded rows), each turned into a scenario through
//! the scenario validator, named by its id and carrying its expectation.

use std::collections::{BTreeMap, HashSet};

pub use super::error::Refusal;
use super::error::{Location, MatrixError};
use super::ids::permutation_id;
use super::keys::{apply_all, Change};
use super::space::Row;
use super::spec::Spec;
use super::strategy::{Strategy, MAX_PERMUTATIONS};
use crate::scenario::{self, Scenario, RESERVED_NAMES};

/// One combination of axis values, as a scenario ready to run.
#[derive(Debug, Clone)]
pub struct Permutation {
    /// The values' labels joined with '.', in axis order: `virtio.4k.uefi.by-id`.
    pub id: String,
    /// Axis key -> label (what `result.json` records as `params`).
    pub values: BTreeMap<String, String>,
    /// The base scenario with the values applied and validated; its `name` is the id and its
    /// `expect` the first matching `[[expect]]` rule's, else the base scenario's.
    pub scenario: Scenario,
    /// Whether that rule expects the installer to refuse the config before any VM runs.
    pub negative: bool,
}

pub fn expand(spec: &Spec, strategy: Strategy) -> Result<Vec<Permutation>, MatrixError> {
    let space = spec.space();
    let rows = match strategy {
        Strategy::Full => space.all_rows(MAX_PERMUTATIONS).ok_or_else(|| {
            MatrixError::Invalid {
                at: spec.strategy_at.clone(),
                message: format!(
                    "the full product has {} permutations, more than {MAX_PERMUTATIONS}: use strategy = \"pairwise\" or exclude combinations",
                    space.count()
                ),
            }
        })?,
        Strategy::Pairwise => pairwise_rows(spec)?,
    };
    if rows.is_empty() {
        let message = if space.count() == 0 {
            "the [[exclude]] rules leave no permutation".into()
        } else {
            "every permutation the [[exclude]] rules leave matches two or more [[expect]] rules that expect failure at assets, and pairwise keeps only permutations with one reason to be refused: use strategy = \"full\" or narrow the rules".into()
        };
        return Err(MatrixError::Invalid {
            at: Location::file(&spec.path),
            message,
        });
    }
    let mut ids = HashSet::new();
    let mut permutations = Vec::with_capacity(rows.len());
    for row in &rows {
        let p = permutation(spec, row)?;
        // Labels are unique per axis after sanitising, so ids are too; checked all the same,
        // as ids name run directories.
        if RESERVED_NAMES.contains(&p.id.as_str()) {
            return Err(MatrixError::Invalid {
                at: Location::file(&spec.path),
                message: format!("a permutation would have the id {:?}, which is the name of a report the matrix writes beside the run directories ({}): relabel one of its values", p.id, RESERVED_NAMES.join(", ")),
            });
        }
        if !ids.insert(p.id.clone()) {
            return Err(MatrixError::Invalid {
                at: Location::file(&spec.path),
                message: format!("two permutations have the id {}", p.id),
            });
        }
        permutations.push(p);
    }
    Ok(permutations)
}

/// The pairwise rows, capped like the full product: refused before they are built when two
/// axes alone need too many, and after when the array has more rows than the cap anyway.
fn pairwise_rows(spec: &Spec) -> Result<Vec<Row>, MatrixError> {
    let too_many = |message: String| MatrixError::Invalid {
        at: spec.strategy_at.clone(),
        message,
    };
    if let Some(t) = spec.pairwise_exceeds(MAX_PERMUTATIONS) {
        let (a, b) = (&spec.axes[t.axes.0], &spec.axes[t.axes.1]);
        let pairs = match t.pairs {
            Some(n) => format!("{n} pairs"),
            None => format!("more than {MAX_PERMUTATIONS} pairs"),
        };
        return Err(too_many(format!(
            "pairwise needs more than {MAX_PERMUTATIONS} permutations: axes {} ({} values) and {} ({} values) have {pairs} of values to cover, one permutation each; use fewer values or exclude combinations",
            a.key,
            a.values.len(),
            b.key,
            b.values.len(),
        )));
    }
    let over = |gives: String| {
        too_many(format!(
            "pairwise gives {gives}: use fewer axes or values, or exclude combinations"
        ))
    };
    let Some(rows) = spec.pairwise_rows_within(MAX_PERMUTATIONS) else {
        return Err(over(format!("more than {MAX_PERMUTATIONS} permutations")));
    };
    if rows.len() > MAX_PERMUTATIONS {
        return Err(over(format!(
            "{} permutations, more than {MAX_PERMUTATIONS}",
            rows.len()
        )));
    }
    Ok(rows)
}

fn permutation(spec: &Spec, row: &[usize]) -> Result<Permutation, MatrixError> {
    let labels: Vec<&str> = spec
        .axes
        .iter()
        .zip(row)
        .map(|(a, &v)| a.values[v].label.as_str())
        .collect();
    let id = permutation_id(&labels);
    let all: Vec<usize> = (0..row.len()).collect();
    let mut scenario = scenario_for(spec, row, &all).map_err(|why| refused(spec, row, &id, why))?;
    scenario.name = id.clone();
    scenario.overrides = spec.overrides.clone();
    let rule = spec.expectations.iter().find(|e| e.matches(row));
    if let Some(e) = rule {
        scenario.expect = Some(e.expect.clone());
    }
    let values = spec
        .axes
        .iter()
        .zip(&labels)
        .map(|(a, l)| (a.key.clone(), l.to_string()))
        .collect();
    Ok(Permutation {
        id,
        values,
        scenario,
        negative: rule.is_some_and(|e| e.is_negative()),
    })
}

/// The base scenario with the values of the axes `selected` from `row`, validated.
fn scenario_for(spec: &Spec, row: &[usize], selected: &[usize]) -> Result<Scenario, Refusal> {
    let changes: Vec<&Change> = selected
        .iter()
        .map(|&a| &spec.axes[a].values[row[a]].change)
        .collect();
    let table = apply_all(&spec.base_table, &spec.base, &changes)?;
    let text = toml::to_string(&table)?;
    scenario::parse_str(&spec.path, &text).map_err(|e| Refusal::Invalid(Box::new(e)))
}

/// The error for a row the validator refuses: at the first axis involved, naming the values
/// that clash and the rule that would drop them.
fn refused(spec: &Spec, row: &[usize], id: &str, why: Refusal) -> MatrixError {
    let axes = involved(spec, row);
    let exclude: Vec<String> = axes
        .iter()
        .map(|&a| {
            format!(
                "{:?} = {:?}",
                spec.axes[a].key, spec.axes[a].values[row[a]].label
            )
        })
        .collect();
    let at = axes
        .first()
        .map(|&a| spec.axes[a].at.clone())
        .unwrap_or_else(|| Location::file(&spec.path));
    MatrixError::Permutation {
        at,
        id: id.to_string(),
        source: Box::new(why),
        exclude,
    }
}

/// The axes whose values clash, in axis order: those where another of the axis's values would
/// make the permutation valid (bios + 4k: firmware and sector, not bus). When no single change
/// would, the axis that completes the shortest refused prefix of axes.
fn involved(spec: &Spec, row: &[usize]) -> Vec<usize> {
    let n = row.len();
    let all: Vec<usize> = (0..n).collect();
    let valid_with = |axis: usize, value: usize| {
        let mut other = row.to_vec();
        other[axis] = value;
        scenario_for(spec, &other, &all).is_ok()
    };
    let fixers: Vec<usize> = (0..n)
        .filter(|&a| (0..spec.axes[a].values.len()).any(|v| v != row[a] && valid_with(a, v)))
        .collect();
    if !fixers.is_empty() {
        return fixers;
    }
    let refuses = |set: &[usize]| scenario_for(spec, row, set).is_err();
    match (0..n).find(|&k| refuses(&(0..=k).collect::<Vec<_>>())) {
        Some(last) => vec![last],
        None => all,
    }
}
