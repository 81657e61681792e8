//! Scenario and matrix files: their model, parsing with file-and-line errors, validation
//! (`validate`: every section, with the hardware facts from `hw`), and matrices expanded into
//! permutations, each a validated scenario (`matrix`).

pub mod files;
pub mod matrix;
pub mod model;
mod parse;
pub mod units;
mod validate;

pub use model::{
    AssistedSection, BootOrder, BootSource, Disk, GuestNetwork, InstallMode, Profile, Scenario,
    DEFAULT_DISK_WRITE_STALL, DISK_WRITE_STALL_KEY,
};
pub use parse::{load, parse_str, ScenarioError};
pub(crate) use parse::{name_problem, shorten_long_words, Ctx, RESERVED_NAMES};
