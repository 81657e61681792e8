//! The renderings of results (docs/architecture.md, "Run directory"): JUnit XML and a Markdown
//! summary of runs; the reports of a run directory with many permutations (`summary.json`,
//! merged `junit.xml`, `summary.md`, `report.html`, in `run_dir`); the comparison of two run
//! directories (`dir_compare`); and the texts of perf runs (`perf_md`, `perf_compare`). The
//! documents they render are `result` and `perf::model`.

pub mod copy_run;
pub mod coverage;
pub mod dir_compare;
pub mod github;
pub mod html;
pub mod junit;
pub mod load;
pub mod merge;
pub mod perf_compare;
pub mod perf_md;
pub mod run_dir;
pub mod slowest;
pub mod summary;
pub mod summary_json;

pub use junit::{junit_for_runs, write_junit};
pub use summary::summary_markdown;
