//! What `sno-harness plan MATRIX.toml` prints: the permutations with their ids and values, the
//! strategy, and how many the full product would have.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::{Matrix, Strategy};
use crate::scenario::model::ExpectSection;

/// The schema `plan --json MATRIX.toml` names, as result.json and summary.json name theirs.
pub const SCHEMA: &str = "sno-harness/matrix-plan/v1";

#[derive(Serialize)]
struct PlanJson<'m> {
    schema: &'static str,
    matrix: &'m str,
    path: String,
    base: String,
    strategy: &'static str,
    count: usize,
    /// How many of `count` expect the installer to refuse them at `assets`.
    negative_count: usize,
    full_count: usize,
    /// The `--set` overrides applied to the base; absent without.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    overrides: &'m [String],
    axes: Vec<AxisJson<'m>>,
    permutations: Vec<PermutationJson<'m>>,
}

#[derive(Serialize)]
struct AxisJson<'m> {
    key: &'m str,
    values: &'m [String],
}

#[derive(Serialize)]
struct PermutationJson<'m> {
    id: &'m str,
    values: &'m BTreeMap<String, String>,
    expect: Option<&'m ExpectSection>,
    /// Expected to be refused before any VM runs.
    negative: bool,
    /// The `--set` overrides the permutation's scenario carries; absent without.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    overrides: &'m [String],
}

/// `plan --json`.
pub fn plan_json(m: &Matrix) -> serde_json::Value {
    let plan = PlanJson {
        schema: SCHEMA,
        matrix: &m.name,
        path: m.path.display().to_string(),
        base: m.base.display().to_string(),
        strategy: m.strategy.name(),
        count: m.permutations.len(),
        negative_count: m.negative_count(),
        full_count: m.full_count,
        overrides: &m.overrides,
        axes: m
            .axes
            .iter()
            .map(|a| AxisJson {
                key: &a.key,
                values: &a.labels,
            })
            .collect(),
        permutations: m
            .permutations
            .iter()
            .map(|p| PermutationJson {
                id: &p.id,
                values: &p.values,
                expect: p.scenario.expect.as_ref(),
                negative: p.negative,
                overrides: &p.scenario.overrides,
            })
            .collect(),
    };
    serde_json::to_value(plan).expect("plain data serialises")
}

/// `plan` for people: a header, then one line a permutation with its values in columns.
pub fn plan_text(m: &Matrix) -> String {
    plan_text_where(m, |_| true)
}

/// As `plan_text`, listing only the permutations whose id `keep` takes (a `--shard`); the
/// header still counts the whole plan.
pub fn plan_text_where(m: &Matrix, keep: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "matrix {} ({}), base scenario {}",
        m.name,
        m.path.display(),
        m.base.display()
    );
    if !m.description.is_empty() {
        let _ = writeln!(out, "{}", m.description);
    }
    if !m.overrides.is_empty() {
        let _ = writeln!(
            out,
            "overridden on the command line, in every permutation: --set {}",
            m.overrides.join(" --set ")
        );
    }
    let negative = m.negative_count();
    let split = if negative == 0 {
        String::new()
    } else {
        format!(
            "{} accepted, {negative} expected rejections at assets; ",
            m.permutations.len() - negative
        )
    };
    let _ = writeln!(
        out,
        "strategy {}: {} permutations ({split}pairwise {}, full {})\n",
        m.strategy,
        m.permutations.len(),
        m.count(Strategy::Pairwise),
        m.full_count,
    );
    let mut header = vec!["id".to_string()];
    header.extend(m.axes.iter().map(|a| a.key.clone()));
    header.push("expect".into());
    let rows: Vec<Vec<String>> = m
        .permutations
        .iter()
        .filter(|p| keep(&p.id))
        .map(|p| {
            let mut row = vec![p.id.clone()];
            row.extend(m.axes.iter().map(|a| p.values[&a.key].clone()));
            row.push(
                p.scenario
                    .expect
                    .as_ref()
                    .map(ExpectSection::summary)
                    .unwrap_or_default(),
            );
            row
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}
