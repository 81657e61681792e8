//! Performance runs: repeated measurements and their statistics.

pub mod stats;
