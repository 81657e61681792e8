//! The matrix file as written: serde types with spans, unknown keys rejected. `parse` turns
//! them into a checked `Spec`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use toml::Spanned;

use super::strategy::Strategy;
use crate::scenario::model::{entries, option_spanned_choice};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    pub name: Spanned<String>,
    /// The base scenario, relative to the matrix file.
    pub base: Spanned<String>,
    #[serde(default)]
    pub description: String,
    /// `full` when left out.
    #[serde(default, deserialize_with = "option_spanned_choice")]
    pub strategy: Option<Spanned<Strategy>>,
    #[serde(default, rename = "axis", deserialize_with = "axis_entries")]
    pub axes: Vec<AxisSection>,
    #[serde(default, rename = "exclude", deserialize_with = "exclude_entries")]
    pub exclusions: Vec<Spanned<Conditions>>,
    #[serde(default, rename = "expect", deserialize_with = "expect_entries")]
    pub expectations: Vec<Spanned<ExpectRule>>,
}

fn axis_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AxisSection>, D::Error> {
    entries(d, "axis")
}

fn exclude_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spanned<Conditions>>, D::Error> {
    entries(d, "exclude")
}

fn expect_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spanned<ExpectRule>>, D::Error> {
    entries(d, "expect")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSection {
    pub key: Spanned<String>,
    /// Scalars, or `{ label = "...", value = ... }` for any value.
    pub values: Spanned<Vec<Spanned<toml::Value>>>,
}

/// `"axis key" = label` (or a list of labels, any of which matches). Unquoted dotted keys
/// (`vm.firmware = "bios"`) arrive as nested tables and are flattened.
pub type Conditions = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectRule {
    pub when: Spanned<Conditions>,
    pub verdict: Spanned<String>,
    pub failed_phase: Option<Spanned<String>>,
    pub reason_contains: Option<String>,
}
