//! Reading a matrix file into a checked `Spec`: the base scenario loaded, every axis key
//! resolved, every value checked against the scenario schema, rules turned into value indexes.
//! Errors name the matrix file, the line and what would be valid.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use toml::{Spanned, Table};

use super::error::{Location, MatrixError};
use super::file::{AxisSection, MatrixFile};
use super::ids::{id_part, split_label};
use super::keys::{apply_all, Change, ChangeError, Target};
use super::overrides::{self, Override};
use super::rules;
use super::space::Space;
use super::spec::{AxisSpec, Ctx, Spec, ValueSpec};
use super::strategy::{Strategy, MAX_PERMUTATIONS};
use crate::scenario::files;
use crate::scenario::model::ScenarioFile;
use crate::scenario::{self, shorten_long_words, Scenario, MAX_PERMUTATION_ID_LEN};
use crate::util::input_file;

/// A label is one part of a permutation id, which names a directory (at most 255 bytes).
const MAX_LABEL_LEN: usize = 64;

/// The matrix of `text` (the file at `path`), its base with `sets` applied.
pub fn parse(path: &Path, text: &str, sets: &[Override]) -> Result<Spec, MatrixError> {
    let cx = Ctx { file: path, text };
    // TOML forbids control characters anyway; saying so beats the parser's guess at a key.
    if let Some(at) = text.find('\0') {
        return Err(MatrixError::Invalid {
            at: cx.at(at..at + 1),
            message: "a NUL byte: this is not a text file; a matrix is a TOML text file (name = ..., base = ..., [[axis]] ...)".into(),
        });
    }
    let file: MatrixFile = toml::from_str(text).map_err(|e| MatrixError::Invalid {
        at: e
            .span()
            .map(|s| cx.at(s))
            .unwrap_or_else(|| Location::file(path)),
        message: one_line(e.message()),
    })?;
    check_name(&cx, &file.name)?;
    refuse_axis_overrides(&cx, &file.axes, sets)?;
    let (base_path, base_table, base, base_text) = load_base(&cx, &file.base, sets)?;
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
    let longest_id: usize = axes
        .iter()
        .map(|a| {
            a.values
                .iter()
                .map(|v| id_part(&v.label).len())
                .max()
                .unwrap_or(0)
        })
        .sum::<usize>()
        + axes.len().saturating_sub(1);
    if longest_id > MAX_PERMUTATION_ID_LEN {
        return Err(MatrixError::Invalid {
            at: Location::file(path),
            message: format!("permutation ids would be up to {longest_id} characters, more than {MAX_PERMUTATION_ID_LEN} (ids name directories): use fewer axes or shorter labels"),
        });
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
        files_sha256: files_sha256(text, &base_text),
        overrides: sets.iter().map(|o| o.given.clone()).collect(),
    })
}

/// An override of a key an axis sets: the axis would silently win in every permutation.
fn refuse_axis_overrides(
    cx: &Ctx,
    axes: &[AxisSection],
    sets: &[Override],
) -> Result<(), MatrixError> {
    for o in sets {
        if let Some(axis) = axes.iter().find(|a| o.overlaps(a.key.get_ref())) {
            return Err(cx.err(
                &axis.key,
                format!(
                    "--set {}: {} is an axis of this matrix (here), whose values would replace the override in every permutation; drop the --set, or give the value as the axis's only one",
                    o.given,
                    axis.key.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// The digest of a matrix file and its base, each text length-prefixed so that no two pairs
/// of texts give the same bytes.
fn files_sha256(matrix: &str, base: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for text in [matrix, base] {
        h.update((text.len() as u64).to_be_bytes());
        h.update(text.as_bytes());
    }
    hex::encode(h.finalize())
}

fn one_line(message: &str) -> String {
    shorten_long_words(&message.trim().replace('\n', "; "))
}

/// Matrix names follow scenario names: they name run directories.
fn check_name(cx: &Ctx, name: &Spanned<String>) -> Result<(), MatrixError> {
    match scenario::name_problem(name.get_ref()) {
        None => Ok(()),
        Some(why) => Err(cx.err(name, format!("name {:?} {why}", name.get_ref()))),
    }
}

type Base = (PathBuf, Table, Scenario, String);

/// The base scenario, with `sets` applied as `run --set` of the base would (paths they name are
/// relative to the base), its named files pinned.
fn load_base(cx: &Ctx, base: &Spanned<String>, sets: &[Override]) -> Result<Base, MatrixError> {
    let dir = cx.file.parent().unwrap_or(Path::new(""));
    let path = tidy(&dir.join(base.get_ref()));
    // A device or FIFO would be read forever, or block; a huge file would take the memory.
    let text = input_file::read_text(&path, input_file::SCENARIO).map_err(|e| {
        cx.err(
            base,
            format!(
                "cannot read the base scenario {} ({}); base names a scenario file, relative to the matrix file",
                path.display(),
                e.problem
            ),
        )
    })?;
    // Before the scenario validator, which would only complain of the matrix's keys: this also
    // ends a base naming its own matrix, or two matrices naming each other.
    if toml::from_str::<Table>(&text).is_ok_and(|t| base_is_a_matrix(&t)) {
        let itself = matches!(
            (std::fs::canonicalize(&path), std::fs::canonicalize(cx.file)),
            (Ok(a), Ok(b)) if a == b
        );
        let what = if itself {
            "this matrix file itself"
        } else {
            "a matrix"
        };
        return Err(cx.err(
            base,
            format!(
                "{} is {what}; the base must be a scenario file (name, profile, [[disks]] ...)",
                path.display()
            ),
        ));
    }
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
    let (mut table, scenario) = if sets.is_empty() {
        (table, scenario)
    } else {
        overrides::apply(&path, table, scenario, sets)
            .map_err(|e| MatrixError::Override(Box::new(e)))?
    };
    // The keys are lines already checked: a permutation validated as the matrix file must not
    // look for a key file relative to it.
    pin_authorized_keys(&mut table, &scenario);
    if path.parent() != cx.file.parent() {
        pin_named_files(&mut table, &scenario);
    }
    Ok((path, table, scenario, text))
}

/// The files the base names, as absolute paths in its table: permutations are validated as if
/// they were the matrix file, and a base in another directory names its files relative to its
/// own.
fn pin_named_files(table: &mut Table, base: &Scenario) {
    let absolute = |p: &Path| {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        toml::Value::String(p.to_string_lossy().into_owned())
    };
    if let Some(install) = table.get_mut("install").and_then(toml::Value::as_table_mut) {
        if let Some(p) = &base.install.additional_trust_bundle {
            install.insert("additional_trust_bundle".into(), absolute(p));
        }
        if let Some(p) = &base.install.assisted.host_ignition {
            if let Some(assisted) = install
                .get_mut("assisted")
                .and_then(toml::Value::as_table_mut)
            {
                assisted.insert("host_ignition".into(), absolute(p));
            }
        }
        if let Some(scenario::model::SecretSource::File(p)) = &base.install.pull_secret {
            if let Some(source) = install
                .get_mut("pull_secret")
                .and_then(toml::Value::as_table_mut)
            {
                source.insert("file".into(), absolute(p));
            }
        }
    }
    let installer = base.openshift.as_ref().and_then(|o| o.installer.as_deref());
    if let Some(p) = installer.filter(|p| p.components().count() > 1) {
        if let Some(openshift) = table
            .get_mut("openshift")
            .and_then(toml::Value::as_table_mut)
        {
            openshift.insert("installer".into(), absolute(p));
        }
    }
}

/// The base's `[access] authorized_keys` as the key lines they were read as, whatever
/// directory the base is in (a `~/` or a relative path is read once, at the base).
fn pin_authorized_keys(table: &mut Table, base: &Scenario) {
    let Some(access) = table.get_mut("access").and_then(toml::Value::as_table_mut) else {
        return;
    };
    let lines = base
        .authorized_keys
        .iter()
        .map(|k| toml::Value::String(k.line.clone()))
        .collect();
    access.insert("authorized_keys".into(), toml::Value::Array(lines));
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
    let count = section.values.get_ref().len();
    if count > MAX_PERMUTATIONS {
        return Err(cx.err(
            &section.values,
            format!("axis {key} has {count} values, more than the {MAX_PERMUTATIONS} permutations a matrix may have: use fewer values"),
        ));
    }
    let mut values: Vec<ValueSpec> = Vec::new();
    // Labels and id parts seen so far, by hash: an axis of thousands of values is refused by
    // the permutation cap in milliseconds, not checked pair by pair for seconds first.
    let mut labels: HashSet<String> = HashSet::new();
    let mut id_parts: HashMap<String, String> = HashMap::new();
    for raw in section.values.get_ref() {
        let (label, value) = split_label(raw.get_ref()).map_err(|m| cx.err(raw, m))?;
        let change = Change::new(&target, &value).map_err(|m| cx.err(raw, m))?;
        // The value alone on the base must fit the scenario schema (field names, types,
        // enum variants); whether values fit together is the validator's call, per
        // permutation.
        if let Err(m) = fits_schema(base_table, base, &change) {
            let span = match m {
                SchemaMisfit::UnknownField(_) => section.key.span(),
                _ => raw.span(),
            };
            return Err(MatrixError::Invalid {
                at: cx.at(span),
                message: format!("{key} = {label:?}: {m}"),
            });
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(cx.err(
                raw,
                format!("axis {key}: a label of {} bytes; labels name permutations and directories: at most {MAX_LABEL_LEN}, use {{ label = \"NAME\", value = ... }}", label.len()),
            ));
        }
        if let Some(m) =
            bad_named_file(cx, &target, &value).or_else(|| bad_key(cx, &target, &value))
        {
            return Err(cx.err(raw, format!("{key} = {label:?}: {m}")));
        }
        if labels.contains(&label) {
            return Err(cx.err(raw, format!("axis {key} has the value {label:?} twice")));
        }
        let part = id_part(&label);
        if let Some(same) = id_parts.get(&part) {
            return Err(cx.err(raw, format!("axis {key}: labels {same:?} and {label:?} give the same id part {part:?}; give one of them another label")));
        }
        if let Some(same) = values.iter().find(|v| v.change == change) {
            return Err(cx.err(
                raw,
                format!("axis {key}: {label:?} means the same as {:?}", same.label),
            ));
        }
        labels.insert(label.clone());
        id_parts.insert(part, label.clone());
        values.push(ValueSpec { label, change });
    }
    Ok(AxisSpec {
        key,
        at: cx.at(section.key.span()),
        values,
    })
}

/// A host Ignition read and checked as a named file is (its content is not needed here).
fn read_host_ignition(path: &Path) -> Result<String, files::FileError> {
    files::host_ignition::read_host_ignition(path).map(|_| String::new())
}

/// How a named file is read and checked (`files::read_trust_bundle`, `read_pull_secret`).
type ReadNamed = fn(&Path) -> Result<String, files::FileError>;

/// A file an axis value names (a trust bundle, a pull secret file), checked as the scenario
/// validator checks it: else it would be refused only per permutation, with advice to exclude
/// it.
fn bad_named_file(cx: &Ctx, target: &Target, value: &toml::Value) -> Option<String> {
    let Target::Path(path) = target else {
        return None;
    };
    let (named, read): (&str, ReadNamed) = match path.as_slice() {
        [i, k] if i == "install" && k == "additional_trust_bundle" => {
            (value.as_str()?, files::read_trust_bundle)
        }
        [i, k] if i == "install" && k == "pull_secret" => {
            (value.get("file")?.as_str()?, files::read_pull_secret)
        }
        [i, a, k] if i == "install" && a == "assisted" && k == "host_ignition" => {
            (value.as_str()?, read_host_ignition)
        }
        _ => return None,
    };
    if named.is_empty() {
        return None;
    }
    // Permutations are validated as if they were the matrix file, so paths are relative to it.
    let e = read(&files::resolve(cx.file, Path::new(named))).err()?;
    Some(format!(
        "{e} (the path is relative to the matrix file, or absolute)"
    ))
}

/// An `access.authorized_keys` value's entry that is no key (or names no key file), checked
/// as the scenario validator checks it, relative to the matrix file.
fn bad_key(cx: &Ctx, target: &Target, value: &toml::Value) -> Option<String> {
    let Target::Path(path) = target else {
        return None;
    };
    if !matches!(path.as_slice(), [a, k] if a == "access" && k == "authorized_keys") {
        return None;
    }
    value
        .as_array()?
        .iter()
        .filter_map(toml::Value::as_str)
        .find_map(|entry| files::authorized_keys::entry_keys(cx.file, entry).err())
        .map(|e| e.to_string())
}

/// Why one axis value, set on the base alone, does not fit the scenario's schema.
#[derive(Debug, thiserror::Error)]
enum SchemaMisfit {
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Serialize(#[from] toml::ser::Error),
    /// A field the scenario does not have: the axis key is at fault, not its value. The
    /// schema's words, on one line.
    #[error("{0}")]
    UnknownField(String),
    /// A wrong type, an unknown variant: the value is at fault. The schema's words.
    #[error("{0}")]
    Refused(String),
}

fn fits_schema(base_table: &Table, base: &Scenario, change: &Change) -> Result<(), SchemaMisfit> {
    let table = apply_all(base_table, base, &[change])?;
    let text = toml::to_string(&table)?;
    toml::from_str::<ScenarioFile>(&text)
        .map(|_| ())
        .map_err(|e| {
            let words = one_line(e.message());
            // serde's words for a field `deny_unknown_fields` refuses.
            if words.starts_with("unknown field") {
                SchemaMisfit::UnknownField(words)
            } else {
                SchemaMisfit::Refused(words)
            }
        })
}

/// Whether a TOML document is a matrix (it names a base or has axes) rather than a scenario.
pub fn looks_like_matrix(text: &str) -> bool {
    toml::from_str::<Table>(text).is_ok_and(|t| base_is_a_matrix(&t))
}
