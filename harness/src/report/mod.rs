//! The result of one run and its renderings: `result.json` (schema `sno-harness/result/v1`),
//! JUnit XML and a Markdown summary (ARCHITECTURE.md, "Run directory contract").
//!
//! This module takes plain strings for phase names so it does not depend on `flow`.

pub mod junit;
pub mod result;
pub mod summary;

pub use junit::{junit_for_runs, write_junit};
pub use result::{
    phase_names, rfc3339, DiskWrite, HostContext, PhaseResult, PhaseStatus, ResultError, RunResult,
    Signal, Verdict, RESULT_FILE, SCHEMA,
};
pub use summary::summary_markdown;
