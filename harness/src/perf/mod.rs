//! Performance runs: repeated measurements and their statistics.

pub mod compare;
pub mod load;
pub mod model;
pub mod stats;
#[cfg(test)]
pub(crate) mod testdata;
pub mod thresholds;
