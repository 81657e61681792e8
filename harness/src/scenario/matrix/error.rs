//! What can be wrong with a matrix file, and where: every error names the file and, when it is
//! about a part of it, the line and column, like a scenario error.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::keys::ChangeError;
use crate::scenario::ScenarioError;

/// A place in a file: `file:line:col`, or just the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    /// 1-based.
    pub line: Option<usize>,
    /// 1-based, in bytes.
    pub column: Option<usize>,
}

impl Location {
    /// The whole file.
    pub fn file(file: &Path) -> Location {
        Location {
            file: file.to_path_buf(),
            line: None,
            column: None,
        }
    }

    /// Where the byte span `span` of `text` (the file's contents) starts.
    pub fn of(file: &Path, text: &str, span: Range<usize>) -> Location {
        // toml gives defaulted fields an empty span at 0: not a place in the file.
        if span.start == 0 && span.end == 0 {
            return Location::file(file);
        }
        let upto = &text[..floor_char_boundary(text, span.start)];
        let line = upto.matches('\n').count() + 1;
        let column = upto.len() - upto.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        Location {
            file: file.to_path_buf(),
            line: Some(line),
            column: Some(column),
        }
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut i = at.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        Ok(())
    }
}

/// A matrix that cannot be run. The CLI maps every variant to exit code 2 (bad input).
#[derive(Debug, Error)]
pub enum MatrixError {
    #[error("{}: cannot read the matrix: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: crate::util::input_file::Problem,
    },
    /// The matrix file itself: syntax, unknown keys, axes, values, rules.
    #[error("{at}: {message}")]
    Invalid { at: Location, message: String },
    /// The base scenario does not load on its own.
    #[error("{at}: the base scenario is not valid: {source}")]
    Base {
        at: Location,
        #[source]
        source: Box<ScenarioError>,
    },
    /// A `--set` the base scenario refuses, named as `run --set` of the base names it (the
    /// base file, the override and what would be valid).
    #[error("{0}")]
    Override(Box<ScenarioError>),
    /// A permutation the scenario validator refuses and no exclusion removes; `at` is the
    /// first axis involved.
    #[error("{at}: permutation {id}: the scenario validator refuses it: {source}; if the combination cannot run, drop it with [[exclude]] {}", .exclude.join(", "))]
    Permutation {
        at: Location,
        id: String,
        #[source]
        source: Box<Refusal>,
        /// The `[[exclude]]` rule that would drop it: `"key" = "label"` of each axis
        /// involved.
        exclude: Vec<String>,
    },
}

impl MatrixError {
    /// Where the error points in the matrix file (None for a file that cannot be read).
    pub fn location(&self) -> Option<&Location> {
        match self {
            MatrixError::Read { .. } | MatrixError::Override(_) => None,
            MatrixError::Invalid { at, .. }
            | MatrixError::Base { at, .. }
            | MatrixError::Permutation { at, .. } => Some(at),
        }
    }

    /// The 1-based line in the matrix file, when the error is about one.
    pub fn line(&self) -> Option<usize> {
        self.location().and_then(|l| l.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_count_lines_and_columns_from_one() {
        let text = "a = 1\n  b = 2\n";
        let at = Location::of(Path::new("m.toml"), text, 8..9);
        assert_eq!((at.line, at.column), (Some(2), Some(3)));
        assert_eq!(at.to_string(), "m.toml:2:3");
        assert_eq!(
            Location::of(Path::new("m.toml"), text, 0..0).to_string(),
            "m.toml"
        );
    }
}

/// Why a permutation is not a scenario: its values cannot be written into the base, or the
/// scenario validator refuses what they make.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Serialize(#[from] toml::ser::Error),
    /// The validator's words only: its file and line are of the TOML the values made, which
    /// nobody wrote; the matrix error places it at the axes involved.
    #[error("{}", .0.message)]
    Invalid(Box<ScenarioError>),
}
