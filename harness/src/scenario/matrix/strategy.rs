//! Which rows of a matrix's space become permutations, and how many it may have.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The most permutations a matrix may expand to: more is not a test run anyone can wait for.
pub const MAX_PERMUTATIONS: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Every combination of values the exclusions leave.
    Full,
    /// A covering array: every pair of values of two axes, in few permutations; permutations
    /// the installer refuses up front apart (negative.rs).
    Pairwise,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::Pairwise => "pairwise",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A strategy name that is neither, as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strategy {0:?}: use \"full\" or \"pairwise\"")]
pub struct UnknownStrategy(pub String);

impl FromStr for Strategy {
    type Err = UnknownStrategy;

    /// For `--strategy`.
    fn from_str(s: &str) -> Result<Strategy, UnknownStrategy> {
        match s {
            "full" => Ok(Strategy::Full),
            "pairwise" => Ok(Strategy::Pairwise),
            other => Err(UnknownStrategy(other.to_string())),
        }
    }
}
