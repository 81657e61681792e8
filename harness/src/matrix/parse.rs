//! Reading a matrix file into a checked `Spec`: the base scenario loaded, every axis key
//! resolved, every value checked against the scenario schema, rules turned into value indexes.
//! Errors name the matrix file, the line and what would be valid.

use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use toml::{Spanned, Table};

use super::error::{Location, MatrixError};
use super::expand::Strategy;
use super::file::{AxisSection, MatrixFile};
use super::ids::{id_part, split_label};
use super::keys::{apply_all, Change, Target};
use super::rules::{self, Expectation};
use super::space::{Space, Tuple};
use crate::scenario::model::ScenarioFile;
use crate::scenario::{self, Scenario};

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

    pub fn err<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> MatrixError {
        MatrixError::Invalid {
            at: self.at(s.span()),
            message: message.into(),
        }
    }
}

pub fn parse(path: &Path, text: &str) -> Result<Spec, MatrixError> {
    let cx = Ctx { file: path, text };
    let file: MatrixFile = toml::from_str(text).map_err(|e| MatrixError::Invalid {
        at: e
            .span()
            .map(|s| cx.at(s))
            .unwrap_or_else(|| Location::file(path)),
        message: one_line(e.message()),
    })?;
    check_name(&cx, &file.name)?;
    let (base_path, base_table, base) = load_base(&cx, &file.base)?;
    if file.axes.is_empty() {
        return Err(MatrixError::Invalid {
            at: Location::file(path),
            message: "a matrix needs at least one [[axis]], e.g.\n[[axis]]\nkey = \"disks.install.bus\"\nvalues = [\"virtio\", \"nvme\"]".into(),
        });
    }
    let mut axes: Vec<AxisSpec> = Vec::new();
    for section in &file.axes {
        let axis = parse_axis(&cx, section, &base_table, &base)?;
        if axes.iter().any(|a| a.key == axis.key) {
            return Err(cx.err(&section.key, format!("axis {} is defined twice", axis.key)));
        }
        axes.push(axis);
    }
    let mut exclusions = Vec::new();
    for rule in &file.exclusions {
        if rule.get_ref().is_empty() {
            return Err(cx.err(rule, "an empty [[exclude]] rule would drop every permutation; name axis values, e.g. \"vm.firmware\" = \"bios\""));
        }
        exclusions.extend(rules::tuples(&cx, rule, &axes)?);
    }
    let space = Space::new(
        axes.iter().map(|a| a.values.len()).collect(),
        exclusions.clone(),
    );
    let mut expectations = Vec::new();
    for rule in &file.expectations {
        expectations.push(rules::expectation(&cx, rule, &axes, &space)?);
    }
    let (strategy, strategy_at) = match &file.strategy {
        Some(s) => (*s.get_ref(), cx.at(s.span())),
        None => (Strategy::Full, Location::file(path)),
    };
    Ok(Spec {
        name: file.name.into_inner(),
        path: path.to_path_buf(),
        description: file.description,
        base_path,
        base_table,
        base,
        strategy,
        strategy_at,
        axes,
        exclusions,
        expectations,
    })
}

fn one_line(message: &str) -> String {
    message.trim().replace('\n', "; ")
}

/// Matrix names follow scenario names: they name run directories.
fn check_name(cx: &Ctx, name: &Spanned<String>) -> Result<(), MatrixError> {
    let n = name.get_ref();
    let ok = !n.is_empty()
        && n.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' || c == '_'
        });
    if ok {
        Ok(())
    } else {
        Err(cx.err(
            name,
            format!("name {n:?} must be non-empty lowercase letters, digits, '-', '.' or '_'"),
        ))
    }
}

fn load_base(cx: &Ctx, base: &Spanned<String>) -> Result<(PathBuf, Table, Scenario), MatrixError> {
    let dir = cx.file.parent().unwrap_or(Path::new(""));
    let path = tidy(&dir.join(base.get_ref()));
    let text = std::fs::read_to_string(&path).map_err(|e| {
        cx.err(
            base,
            format!(
                "cannot read the base scenario {} ({e}); base is relative to the matrix file",
                path.display()
            ),
        )
    })?;
    let scenario = scenario::parse_str(&path, &text).map_err(|source| MatrixError::Base {
        at: cx.at(base.span()),
        source: Box::new(source),
    })?;
    let table: Table = toml::from_str(&text).map_err(|e| {
        cx.err(
            base,
            format!(
                "the base scenario {}: {}",
                path.display(),
                one_line(e.message())
            ),
        )
    })?;
    if base_is_a_matrix(&table) {
        return Err(cx.err(base, "the base must be a scenario, not another matrix"));
    }
    Ok((path, table, scenario))
}

/// `dir/../x` as `x` when both name the same file (no symlink in between), for messages and
/// reports a person reads.
fn tidy(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            c => out.push(c),
        }
    }
    let same = matches!(
        (std::fs::canonicalize(path), std::fs::canonicalize(&out)),
        (Ok(a), Ok(b)) if a == b
    );
    if same {
        out
    } else {
        path.to_path_buf()
    }
}

fn base_is_a_matrix(table: &Table) -> bool {
    table.contains_key("axis") || table.contains_key("base")
}

fn parse_axis(
    cx: &Ctx,
    section: &AxisSection,
    base_table: &Table,
    base: &Scenario,
) -> Result<AxisSpec, MatrixError> {
    let key = section.key.get_ref().clone();
    let target = Target::resolve(&key, base_table).map_err(|m| cx.err(&section.key, m))?;
    if section.values.get_ref().is_empty() {
        return Err(cx.err(&section.values, format!("axis {key} has no values")));
    }
    let mut values: Vec<ValueSpec> = Vec::new();
    for raw in section.values.get_ref() {
        let (label, value) = split_label(raw.get_ref()).map_err(|m| cx.err(raw, m))?;
        let change = Change::new(&target, &value).map_err(|m| cx.err(raw, m))?;
        // The value alone on the base must fit the scenario schema (field names, types,
        // enum variants); whether values fit together is the validator's call, per
        // permutation.
        if let Err(m) = fits_schema(base_table, base, &change) {
            let unknown_key = m.starts_with("unknown field");
            let span = if unknown_key {
                section.key.span()
            } else {
                raw.span()
            };
            return Err(MatrixError::Invalid {
                at: cx.at(span),
                message: format!("{key} = {label:?}: {m}"),
            });
        }
        if let Some(same) = values.iter().find(|v| v.label == label) {
            return Err(cx.err(
                raw,
                format!("axis {key} has the value {:?} twice", same.label),
            ));
        }
        if let Some(same) = values.iter().find(|v| id_part(&v.label) == id_part(&label)) {
            return Err(cx.err(raw, format!("axis {key}: labels {:?} and {label:?} give the same id part {:?}; give one of them another label", same.label, id_part(&label))));
        }
        if let Some(same) = values.iter().find(|v| v.change == change) {
            return Err(cx.err(
                raw,
                format!("axis {key}: {label:?} means the same as {:?}", same.label),
            ));
        }
        values.push(ValueSpec { label, change });
    }
    Ok(AxisSpec {
        key,
        at: cx.at(section.key.span()),
        values,
    })
}

fn fits_schema(base_table: &Table, base: &Scenario, change: &Change) -> Result<(), String> {
    let table = apply_all(base_table, base, &[change])?;
    let text = toml::to_string(&table).map_err(|e| e.to_string())?;
    toml::from_str::<ScenarioFile>(&text)
        .map(|_| ())
        .map_err(|e| one_line(e.message()))
}

/// Whether a TOML document is a matrix (it names a base or has axes) rather than a scenario.
pub fn looks_like_matrix(text: &str) -> bool {
    toml::from_str::<Table>(text).is_ok_and(|t| base_is_a_matrix(&t))
}
