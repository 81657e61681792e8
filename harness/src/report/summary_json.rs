//! `summary.json`: the machine-readable overview of a run directory (all its permutations).
//!
//! Schema `sno-harness/summary/v1`:
//!
//! ```json
//! {
//!   "schema": "sno-harness/summary/v1",
//!   "counts": { "total": 3, "pass": 1, "fail": 1, "error": 1 },
//!   "permutations": [
//!     { "id": "virtio.512.bios.by-id", "verdict": "pass", "failed_phase": null, "reason": "",
//!       "duration_ms": 61234, "params": { "disks.install.bus": "virtio" },
//!       "path": "virtio.512.bios.by-id", "ran": true, "disk_write_mib_per_s": 82.6 }
//!   ],
//!   "coverage": [
//!     { "axis": "disks.install.bus",
//!       "values": [ { "value": "virtio", "passed": 1, "failed": 0, "not_run": 0, "state": "passed" },
//!                   { "value": "scsi", "passed": 0, "failed": 0, "not_run": 0, "state": "not-run" } ] }
//!   ],
//!   "slowest_phases": [
//!     { "id": "virtio.512.bios.by-id", "phase": "live-boot", "status": "pass", "duration_ms": 31282 }
//!   ]
//! }
//! ```
//!
//! - `counts`: permutations by verdict; `total` is their sum.
//! - `permutations`: in the order the runs were given (the runner's plan order; sorted by
//!   directory when re-read by `sno-harness report`). `path` is the permutation's directory
//!   relative to the directory holding summary.json (`.` when it is that directory); its
//!   `result.json` has the full record. `ran` is false when the run reached no phase.
//!   `disk_write_mib_per_s` is null without a measured disk write. `host` (libvirt only) is
//!   the libvirt host it ran on, its URI without parameters. `reason` quotes at most
//!   [`QUOTED_REASON`] bytes of result.json's (cut with "…"), `failed_phase` and `host` at most
//!   [`QUOTED_NAME`]: a summary of the largest plan stays within what `report` reads back.
//! - `coverage`: one entry per axis, values in the matrix's order, see [`ValueCoverage`]:
//!   `state` is `passed`, `failed` (any fail or error) or `not-run`. Empty for a single
//!   scenario (no axes).
//! - `slowest_phases`: the [`SLOWEST_SHOWN`] longest phases over all permutations.
//! - `plan` (a matrix run only): `{ "matrix", "files_sha256", "strategy", "filter", "ids",
//!   "shard": { "index", "count", "by": "order" | "hash" } | null, "overrides" }`, the plan the
//!   run was (a slice of): the SHA-256 of the matrix file and its base, the strategy,
//!   `--filter`, every id of the plan, the `--shard` taken with its `--shard-by`, and the
//!   `--set` overrides (absent without) (see [`PlanIdentity`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::coverage::{coverage, Axis, AxisCoverage};
use super::load::LocatedRun;
use super::slowest::{slowest_phases, SlowPhase, SLOWEST_SHOWN};
use crate::result::{RunResult, Verdict};
use crate::scenario::matrix::PlanIdentity;
use crate::util::input_file;

/// The schema tag of `summary.json`.
pub const SUMMARY_SCHEMA: &str = "sno-harness/summary/v1";
/// The file name in the run directory.
pub const SUMMARY_JSON_FILE: &str = "summary.json";

/// `summary.json`, see the module documentation for the shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub counts: VerdictCounts,
    pub permutations: Vec<PermutationSummary>,
    pub coverage: Vec<AxisCoverage>,
    pub slowest_phases: Vec<SlowPhase>,
    /// A matrix run's plan and slice (`--shard`); absent for a single scenario and in files
    /// of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanIdentity>,
}

/// Why a summary.json could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryReadError {
    #[error(transparent)]
    File(#[from] input_file::InputFileError),
    #[error("not a summary: {0}")]
    Json(#[from] serde_json::Error),
    #[error("of schema {0:?}")]
    Schema(String),
}

/// Permutations by verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictCounts {
    pub total: usize,
    pub pass: usize,
    pub fail: usize,
    pub error: usize,
}

impl VerdictCounts {
    pub fn of<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> Self {
        let mut c = VerdictCounts::default();
        for v in verdicts {
            c.total += 1;
            match v {
                Verdict::Pass => c.pass += 1,
                Verdict::Fail => c.fail += 1,
                Verdict::Error => c.error += 1,
            }
        }
        c
    }
}

/// One permutation's line in `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermutationSummary {
    pub id: String,
    pub verdict: Verdict,
    pub failed_phase: Option<String>,
    pub reason: String,
    pub duration_ms: u64,
    pub params: BTreeMap<String, String>,
    /// The permutation's directory, relative to the directory of summary.json.
    pub path: String,
    /// False when the run reached no phase.
    pub ran: bool,
    pub disk_write_mib_per_s: Option<f64>,
    /// The libvirt host the permutation ran on (its URI without parameters); absent on QEMU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Summary {
    /// Summarises `runs` over `axes` (already merged with the runs' params).
    pub fn build(runs: &[LocatedRun], axes: &[Axis]) -> Summary {
        let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
        Summary {
            schema: SUMMARY_SCHEMA.into(),
            counts: VerdictCounts::of(results.iter().map(|r| &r.verdict)),
            permutations: runs.iter().map(PermutationSummary::of).collect(),
            coverage: coverage(axes, &results),
            slowest_phases: slowest_phases(&results, SLOWEST_SHOWN),
            plan: None,
        }
    }

    /// The axes the coverage was computed over, values in order: what a later
    /// `sno-harness report` reuses so that values no permutation ran are not forgotten.
    pub fn axes(&self) -> Vec<Axis> {
        self.coverage
            .iter()
            .map(|a| Axis::new(a.axis.as_str(), a.values.iter().map(|v| v.value.as_str())))
            .collect()
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("Summary serializes");
        s.push('\n');
        s
    }

    /// [`Summary::to_json`], refused when it is larger than [`Summary::read`] reads: a summary
    /// written must read back (its plan is in no other file).
    pub fn to_json_readable(&self) -> Result<String, input_file::Problem> {
        let json = self.to_json();
        let cap = input_file::SUMMARY;
        if json.len() as u64 > cap.bytes {
            return Err(input_file::Problem::TooLarge {
                size: Some(json.len() as u64),
                cap,
            });
        }
        Ok(json)
    }

    /// Reads a `summary.json`; `None` when it is missing, unreadable, or of another schema
    /// (it is a derived file: the result.json files are the record). Also `None` for a FIFO
    /// or device put in its place, or a file over the cap: never blocks or reads without end.
    pub fn read(path: &Path) -> Option<Summary> {
        Summary::load(path).ok()
    }

    /// [`Summary::read`], saying why not.
    pub fn load(path: &Path) -> Result<Summary, SummaryReadError> {
        let text = input_file::read_text(path, input_file::SUMMARY)?;
        let summary: Summary = serde_json::from_str(&text)?;
        if summary.schema != SUMMARY_SCHEMA {
            return Err(SummaryReadError::Schema(summary.schema));
        }
        Ok(summary)
    }
}

/// The most bytes of a run's reason summary.json quotes. Reasons quote evidence; a few KiB of
/// them per permutation would take the summary of a large plan past what `report` reads back
/// (input_file::SUMMARY). result.json has the whole reason.
pub const QUOTED_REASON: usize = 1024;
/// The most bytes of a phase's or a host's name summary.json quotes: real ones are a word
/// and a host name.
pub const QUOTED_NAME: usize = 256;

/// `text` cut to at most `max` bytes and a marking ellipsis, at a character boundary.
fn quoted(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max - '…'.len_utf8();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

impl PermutationSummary {
    fn of(run: &LocatedRun) -> Self {
        let r = &run.result;
        PermutationSummary {
            id: r.id.clone(),
            verdict: r.verdict,
            failed_phase: r.failed_phase.as_deref().map(|p| quoted(p, QUOTED_NAME)),
            reason: quoted(&r.reason, QUOTED_REASON),
            duration_ms: r.duration_ms,
            params: r.params.clone(),
            path: run.dir.clone(),
            ran: r.reached_any_phase(),
            disk_write_mib_per_s: r.disk_write.as_ref().map(|w| w.mib_per_s),
            host: r.libvirt_host.as_deref().map(|h| quoted(h, QUOTED_NAME)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::coverage::merge_axes;
    use crate::report::coverage::tests::sample_not_run;
    use crate::result::tests::{sample_fail, sample_pass};
    use serde_json::Value;

    fn located(runs: Vec<RunResult>) -> Vec<LocatedRun> {
        runs.into_iter().map(LocatedRun::in_own_dir).collect()
    }

    #[test]
    fn shape_and_round_trip() {
        let mut fail = sample_fail("nvme", "bootkube: <no marker> & \"silent\"");
        fail.params
            .insert("disks.install.bus".into(), "nvme".into());
        let runs = located(vec![sample_pass("virtio"), fail, sample_not_run("sata")]);
        let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
        let axes = merge_axes(
            &[Axis::new("disks.install.bus", ["virtio", "nvme", "scsi"])],
            &results,
        );
        let summary = Summary::build(&runs, &axes);
        let v: Value = serde_json::from_str(&summary.to_json()).unwrap();
        assert_eq!(v["schema"], "sno-harness/summary/v1");
        assert_eq!(v["counts"]["total"], 3);
        assert_eq!(v["counts"]["pass"], 1);
        assert_eq!(v["counts"]["fail"], 1);
        assert_eq!(v["counts"]["error"], 1);
        assert_eq!(v["permutations"][0]["id"], "virtio");
        assert_eq!(v["permutations"][0]["path"], "virtio");
        assert!(v["permutations"][0].get("host").is_none(), "absent on QEMU");
        assert_eq!(v["permutations"][0]["disk_write_mib_per_s"], 82.6);
        assert!(v["permutations"][0]["failed_phase"].is_null());
        assert_eq!(v["permutations"][1]["failed_phase"], "bootkube");
        assert_eq!(
            v["permutations"][1]["reason"],
            "bootkube: <no marker> & \"silent\""
        );
        assert_eq!(v["permutations"][1]["params"]["disks.install.bus"], "nvme");
        assert_eq!(v["permutations"][2]["ran"], false);
        let bus = &v["coverage"][0];
        assert_eq!(bus["axis"], "disks.install.bus");
        assert_eq!(bus["values"][0]["value"], "virtio");
        // sample_not_run keeps sample_pass's params (virtio): it counts as not run there.
        assert_eq!(bus["values"][0]["passed"], 1);
        assert_eq!(bus["values"][0]["not_run"], 1);
        assert_eq!(bus["values"][0]["state"], "passed");
        assert_eq!(bus["values"][1]["state"], "failed");
        assert_eq!(bus["values"][2]["state"], "not-run");
        assert_eq!(v["slowest_phases"].as_array().unwrap().len(), SLOWEST_SHOWN);
        assert_eq!(v["slowest_phases"][0]["status"], "pass");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SUMMARY_JSON_FILE);
        std::fs::write(&path, summary.to_json()).unwrap();
        let back = Summary::read(&path).unwrap();
        assert_eq!(back, summary);
        assert_eq!(back.axes(), axes);

        std::fs::write(&path, summary.to_json().replace("summary/v1", "summary/v0")).unwrap();
        assert!(Summary::read(&path).is_none());
        std::fs::write(&path, "{not json").unwrap();
        assert!(Summary::read(&path).is_none());
    }

    #[test]
    fn long_reasons_and_names_are_quoted_cut_at_a_character() {
        let mut r = sample_fail("a", &"é".repeat(QUOTED_REASON));
        r.failed_phase = Some("p".repeat(QUOTED_NAME + 1));
        r.libvirt_host = Some("h".repeat(QUOTED_NAME));
        let s = Summary::build(&located(vec![r]), &[]);
        let p = &s.permutations[0];
        assert!(p.reason.len() <= QUOTED_REASON, "{}", p.reason.len());
        assert!(p.reason.ends_with("é…"));
        assert_eq!(p.failed_phase.as_ref().unwrap().len(), QUOTED_NAME);
        assert_eq!(p.host.as_ref().unwrap().len(), QUOTED_NAME);
        assert_eq!(quoted("short", 5), "short");
    }

    #[test]
    fn a_summary_larger_than_is_read_back_is_refused() {
        let mut r = sample_fail("a", "x");
        r.params
            .insert("k".into(), "v".repeat(input_file::SUMMARY.bytes as usize));
        let s = Summary::build(&located(vec![r]), &[]);
        let e = s.to_json_readable().unwrap_err();
        assert!(e.to_string().contains("a summary.json may have"), "{e}");
    }
}
