//! Scenario and matrix files: their model, parsing with file-and-line errors, validation
//! (`validate`: every section, with the hardware facts from `hw`), and matrices expanded into
//! permutations, each a validated scenario (`matrix`).

mod error;
pub mod files;
pub mod matrix;
pub mod model;
mod names;
pub mod overrides;
mod parse;
pub mod units;
mod validate;

pub use error::ScenarioError;
pub(crate) use error::{shorten_long_words, Ctx};
pub use model::{
    AssistedSection, BootOrder, BootSource, Disk, GuestNetwork, InstallMode, NetworkSpec, Profile,
    Scenario, DEFAULT_DISK_WRITE_STALL, DISK_WRITE_STALL_KEY,
};
pub use names::permutation_id_problem;
pub(crate) use names::{name_problem, MAX_PERMUTATION_ID_LEN, RESERVED_NAMES};
pub use parse::{load, parse_str};
