//! The model of performance runs, below the reports that render it: perf.json (`model`), the
//! statistics of repeated measurements (`stats`), the comparison of two perf runs (`compare`)
//! and the fixed thresholds a single-run comparison uses (`thresholds`). The runner is
//! `fleet::perf_runner`; perf.md, the comparison's text and the HTML are in `report`.

pub mod compare;
pub mod load;
pub mod model;
pub mod stats;
#[cfg(test)]
pub(crate) mod testdata;
pub mod thresholds;
