//! The result of one run and its renderings: `result.json` (schema `sno-harness/result/v1`),
//! JUnit XML and a Markdown summary (ARCHITECTURE.md, "Run directory contract"); the reports
//! of a run directory with many permutations (`summary.json`, merged `junit.xml`,
//! `summary.md`, `report.html`); and the comparison of two run directories.
//!
//! This module takes plain strings for phase names so it does not depend on `flow`.

pub mod coverage;
pub mod dir_compare;
pub mod html;
pub mod junit;
pub mod load;
pub mod perf_compare;
pub mod perf_md;
pub mod run_dir;
pub mod slowest;
pub mod summary;
pub mod summary_json;

pub use junit::{junit_for_runs, write_junit};
pub use summary::summary_markdown;
