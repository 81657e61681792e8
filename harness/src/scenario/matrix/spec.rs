//! A matrix file, checked (`Spec`): what `parse` makes of it and `expand` turns into
//! permutations, with the file's text kept to place errors.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::{Spanned, Table};

use super::error::{Location, MatrixError};
use super::keys::Change;
use super::negative::{self, Rule};
use super::pairwise::{more_rows_than, TooManyPairs};
use super::space::{Row, Space, Tuple};
use super::strategy::Strategy;
use crate::flow::phase::Phase;
use crate::scenario::model::ExpectSection;
use crate::scenario::{shorten_long_words, Scenario};

/// A matrix file, checked: everything expansion needs.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub path: PathBuf,
    pub description: String,
    pub base_path: PathBuf,
    /// The base scenario's TOML, which each permutation changes.
    pub base_table: Table,
    /// The base scenario, validated (its resolved defaults feed shape axes).
    pub base: Scenario,
    pub strategy: Strategy,
    /// Where the strategy is set (or the file), for errors about expanding it.
    pub strategy_at: Location,
    pub axes: Vec<AxisSpec>,
    /// The `[[exclude]]` rules as forbidden value-index tuples.
    pub exclusions: Vec<Tuple>,
    pub expectations: Vec<Expectation>,
    /// SHA-256 of the matrix file's text and its base scenario's, which name the plan.
    pub files_sha256: String,
    /// The `--set KEY=VALUE` overrides applied to the base, as given, in order; every
    /// permutation records them.
    pub overrides: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct AxisSpec {
    pub key: String,
    pub at: Location,
    pub values: Vec<ValueSpec>,
}

#[derive(Debug, Clone)]
pub struct ValueSpec {
    /// The scalar as written, or its `label`.
    pub label: String,
    pub change: Change,
}

impl Spec {
    pub fn space(&self) -> Space {
        Space::new(
            self.axes.iter().map(|a| a.values.len()).collect(),
            self.exclusions.clone(),
        )
    }

    /// The `[[expect]]` rules as the pairwise generator sees them.
    pub fn rules(&self) -> Vec<Rule> {
        self.expectations
            .iter()
            .map(|e| Rule {
                when: e.when.clone(),
                negative: e.is_negative(),
            })
            .collect()
    }

    /// Two axes whose pairs of values alone need more than `limit` pairwise rows (positive
    /// ones), if some do: checked before `pairwise_rows`, which would take long to find out.
    pub fn pairwise_exceeds(&self, limit: usize) -> Option<TooManyPairs> {
        more_rows_than(
            &negative::positive_space(&self.space(), &self.rules()),
            limit,
        )
    }

    /// The pairwise rows: positive rows, then each negative rule's rows.
    pub fn pairwise_rows(&self) -> Vec<Row> {
        self.pairwise_rows_within(usize::MAX).expect("no limit")
    }

    /// As `pairwise_rows`, or `None` when building them gives up above `limit`.
    pub fn pairwise_rows_within(&self, limit: usize) -> Option<Vec<Row>> {
        let planned = negative::pairwise_within(&self.space(), &self.rules(), limit)?;
        Some(planned.into_iter().map(|p| p.row).collect())
    }
}

/// The matrix file being read, to turn spans into locations.
pub struct Ctx<'a> {
    pub file: &'a Path,
    pub text: &'a str,
}

impl Ctx<'_> {
    pub fn at(&self, span: Range<usize>) -> Location {
        Location::of(self.file, self.text, span)
    }

    /// The error at `s`, in the words of `message` (a typed error, or words of the parser's).
    pub fn err<T>(&self, s: &Spanned<T>, message: impl std::fmt::Display) -> MatrixError {
        MatrixError::Invalid {
            at: self.at(s.span()),
            message: shorten_long_words(&message.to_string()),
        }
    }
}

/// An `[[expect]]` rule: a permutation matching any of the tuples expects `expect`.
#[derive(Debug, Clone)]
pub struct Expectation {
    pub when: Vec<Tuple>,
    pub expect: ExpectSection,
}

impl Expectation {
    pub fn matches(&self, row: &[usize]) -> bool {
        self.when
            .iter()
            .any(|t| t.iter().all(|&(a, v)| row[a] == v))
    }

    /// Whether the rule expects the installer to refuse the config before any VM runs: the
    /// pairwise strategy gives such rows their own part (negative.rs).
    pub fn is_negative(&self) -> bool {
        self.expect.verdict == "fail"
            && self.expect.failed_phase.as_deref() == Some(Phase::Assets.name())
    }
}
