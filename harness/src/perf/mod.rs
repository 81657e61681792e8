//! Performance runs: repeated measurements and their statistics.

pub mod mounts;
pub mod report;
pub mod runner;
pub mod stats;
