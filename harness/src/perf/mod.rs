//! Performance runs: repeated measurements and their statistics.

pub mod compare;
pub mod load;
pub mod model;
pub mod mounts;
pub mod runner;
pub mod stats;
#[cfg(test)]
pub(crate) mod testdata;
