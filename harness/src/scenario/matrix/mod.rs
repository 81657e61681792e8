//! Matrix files: a base scenario, axes over its keys, exclusions, per-permutation
//! expectations and a strategy; expanded into permutations, each a validated scenario named by
//! a stable id.
//!
//! ```toml
//! name = "disks"
//! base = "smoke.toml"              # the base scenario, relative to this file
//! strategy = "pairwise"            # full (the default) | pairwise; --strategy overrides
//! description = "buses, sectors, firmware and disk naming"
//!
//! [[axis]]
//! key = "disks.install.bus"        # a dotted path into the base scenario: vm.firmware,
//! values = ["virtio", "nvme"]      # install.network_type, ...; disks.<id>.<field> is a field
//!                                  # of the [[disks]] entry with that id
//! [[axis]]
//! key = "install.installation_disk"
//! values = [ { label = "by-id", value = { by = "id", disk = "install" } },
//!            { label = "by-name", value = { by = "name", disk = "install" } } ]
//!
//! [[axis]]
//! key = "disks.layout"             # shape axes (shapes.rs): disks.layout ("1", "2-second",
//! values = ["1", "3-last"]         # "3-last", ...) and install.network_stack (ipv4,
//!                                  # dual-stack, ipv6-first)
//! [[exclude]]                      # drops every permutation with all of these values
//! "vm.firmware" = "bios"           # (a list means any of its values)
//! "disks.install.sector" = "4k"
//!
//! [[expect]]                       # the first rule a permutation matches replaces the
//! when = { "install.network_stack" = "ipv6-first" }   # base scenario's [expect]
//! verdict = "fail"
//! failed_phase = "assets"
//! reason_contains = "IPv4 addresses must be listed before IPv6 addresses"
//! ```
//!
//! A scalar value labels itself; any other value needs `{ label, value }`. A permutation's id
//! is its labels joined with '.' in axis order, other characters than `[A-Za-z0-9_-]` made '_'
//! (`virtio.by-id.1`). Each permutation is the base scenario's TOML with the values set (shape
//! axes last), run through the scenario validator like any scenario file: a permutation it
//! refuses must be excluded, or loading fails naming the axes that clash.
//!
//! With `pairwise`, an `[[expect]]` rule that expects failure at `assets` (the installer
//! refuses the config before any VM runs) is negative, as a `~` value is in PICT: the accepted
//! permutations cover every pair without its rows, and each such rule gets permutations of its
//! own, matching no other such rule, that meet every value of the other axes (negative.rs).
//!
//! `--set KEY=VALUE` overrides (overrides.rs) change the base before the axes, so that every
//! permutation carries them; one of a key an axis sets is refused at the axis.

pub mod error;
mod expand;
mod file;
mod filter;
mod ids;
pub(crate) mod keys;
mod negative;
pub mod overrides;
pub mod pairwise;
mod parse;
mod plan;
mod rules;
mod shapes;
pub mod shard;
pub mod space;
mod spec;
mod strategy;

use std::path::{Path, PathBuf};

use crate::util::input_file;

pub use error::{Location, MatrixError};
pub use expand::{Permutation, Refusal};
pub use filter::matches_filter;
pub use ids::permutation_id;
pub use keys::ChangeError;
pub use overrides::Override;
pub use plan::{plan_json, plan_text, plan_text_where, SCHEMA as PLAN_SCHEMA};
pub use shapes::{ShapeError, LAYOUT_KEY, NETWORK_STACK_KEY};
pub use shard::{PlanIdentity, Shard, ShardBy};
pub use strategy::{Strategy, UnknownStrategy, MAX_PERMUTATIONS};

/// A loaded matrix, expanded with one strategy.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub name: String,
    pub path: PathBuf,
    pub description: String,
    /// The base scenario file.
    pub base: PathBuf,
    /// The strategy `permutations` were expanded with.
    pub strategy: Strategy,
    pub axes: Vec<Axis>,
    pub permutations: Vec<Permutation>,
    /// How many permutations the full cartesian product has once the exclusions are applied.
    pub full_count: usize,
    /// SHA-256 of the matrix file's text and its base scenario's.
    pub files_sha256: String,
    /// The `--set` overrides every permutation carries, as given, in order.
    pub overrides: Vec<String>,
    spec: spec::Spec,
}

/// An axis: its key and its values' labels, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    pub key: String,
    pub labels: Vec<String>,
    /// Where the axis key is written.
    pub at: Location,
}

/// Reads a matrix file, loads its base scenario and expands it with the file's strategy.
pub fn load(path: &Path) -> Result<Matrix, MatrixError> {
    load_with(path, &[])
}

/// As `load`, with `--set KEY=VALUE` overrides applied to the base scenario before its axes
/// (as `run --set` of the base would apply them), so that every permutation carries them. An
/// override of a key an axis sets is refused at the axis.
pub fn load_with(path: &Path, sets: &[Override]) -> Result<Matrix, MatrixError> {
    // Only a regular file of at most 1 MiB: a FIFO would block, a device be read forever.
    let text = input_file::read_text(path, input_file::MATRIX).map_err(|e| MatrixError::Read {
        file: e.path,
        source: e.problem,
    })?;
    parse_with(path, &text, sets)
}

/// As `load`, from the file's text; `path` names the file in errors and locates the base.
pub fn parse_str(path: &Path, text: &str) -> Result<Matrix, MatrixError> {
    parse_with(path, text, &[])
}

/// As `load_with`, from the file's text.
pub fn parse_with(path: &Path, text: &str, sets: &[Override]) -> Result<Matrix, MatrixError> {
    let spec = parse::parse(path, text, sets)?;
    build(spec.strategy, spec)
}

fn build(strategy: Strategy, spec: spec::Spec) -> Result<Matrix, MatrixError> {
    let permutations = expand::expand(&spec, strategy)?;
    Ok(Matrix {
        name: spec.name.clone(),
        path: spec.path.clone(),
        description: spec.description.clone(),
        base: spec.base_path.clone(),
        strategy,
        axes: spec
            .axes
            .iter()
            .map(|a| Axis {
                key: a.key.clone(),
                labels: a.values.iter().map(|v| v.label.clone()).collect(),
                at: a.at.clone(),
            })
            .collect(),
        permutations,
        full_count: spec.space().count(),
        files_sha256: spec.files_sha256.clone(),
        overrides: spec.overrides.clone(),
        spec,
    })
}

impl Matrix {
    /// The same matrix expanded with another strategy (`--strategy`). Fails like `load` when
    /// that expansion has a permutation the validator refuses, or too many.
    pub fn with_strategy(&self, strategy: Strategy) -> Result<Matrix, MatrixError> {
        if strategy == self.strategy {
            return Ok(self.clone());
        }
        build(strategy, self.spec.clone())
    }

    /// The permutations whose id matches the glob (`--filter`), in order.
    pub fn filter<'m>(&'m self, glob: &'m str) -> impl Iterator<Item = &'m Permutation> + 'm {
        self.permutations
            .iter()
            .filter(move |p| matches_filter(&p.id, glob))
    }

    /// How many permutations `strategy` gives, without building them.
    pub fn count(&self, strategy: Strategy) -> usize {
        match strategy {
            _ if strategy == self.strategy => self.permutations.len(),
            Strategy::Full => self.full_count,
            Strategy::Pairwise => self.spec.pairwise_rows().len(),
        }
    }

    pub fn permutation(&self, id: &str) -> Option<&Permutation> {
        self.permutations.iter().find(|p| p.id == id)
    }

    /// How many permutations expect the installer to refuse them before any VM runs.
    pub fn negative_count(&self) -> usize {
        self.permutations.iter().filter(|p| p.negative).count()
    }
}

/// Whether the TOML text is a matrix (it has `base` or `[[axis]]`) rather than a scenario.
pub fn looks_like_matrix(text: &str) -> bool {
    parse::looks_like_matrix(text)
}

/// Whether the file is a matrix; false when it cannot be read (not a regular file, larger
/// than a matrix may be, not UTF-8) or is not TOML, so the scenario loader reports those.
pub fn is_matrix_file(path: &Path) -> bool {
    input_file::read_text(path, input_file::MATRIX).is_ok_and(|t| looks_like_matrix(&t))
}

#[cfg(test)]
mod pairwise_properties;
#[cfg(test)]
mod tests;
