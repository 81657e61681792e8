//! Coverage of a matrix: for every axis value, how many permutations with that value passed,
//! failed or did not run.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::result::{RunResult, Verdict};

/// A matrix axis: a parameter key (e.g. `disks.install.bus`) and every value it takes, in the
/// matrix file's order. Values no permutation ran still belong here, so they show as "not run".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

impl Axis {
    pub fn new(
        key: impl Into<String>,
        values: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Axis {
            key: key.into(),
            values: values.into_iter().map(Into::into).collect(),
        }
    }
}

/// The axes to report on: the declared ones in their order, completed by whatever the runs'
/// `params` hold beyond them (keys and values sorted), so a run never falls out of the
/// coverage. With no declared axes (an old run directory re-read) this is the union of params.
pub fn merge_axes(declared: &[Axis], runs: &[&RunResult]) -> Vec<Axis> {
    let mut axes: Vec<Axis> = declared.to_vec();
    let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for run in runs {
        for (key, value) in &run.params {
            seen.entry(key).or_default().insert(value);
        }
    }
    for (key, values) in seen {
        let axis = match axes.iter().position(|a| a.key == key) {
            Some(i) => &mut axes[i],
            None => {
                axes.push(Axis::new(key, Vec::<String>::new()));
                axes.last_mut().expect("just pushed")
            }
        };
        // A set: an axis may have as many values as a plan has permutations (10,000).
        let known: HashSet<String> = axis.values.iter().cloned().collect();
        axis.values.extend(
            values
                .into_iter()
                .filter(|v| !known.contains(*v))
                .map(str::to_string),
        );
    }
    axes
}

/// What the coverage grid shows for one axis value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoverageState {
    /// At least one permutation with the value ran, and all that ran passed.
    Passed,
    /// At least one permutation with the value failed (verdict `fail` or `error`).
    Failed,
    /// No permutation with the value ran.
    NotRun,
}

impl CoverageState {
    pub fn as_str(self) -> &'static str {
        match self {
            CoverageState::Passed => "passed",
            CoverageState::Failed => "failed",
            CoverageState::NotRun => "not-run",
        }
    }
}

/// The counts of one axis value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueCoverage {
    pub value: String,
    /// Permutations with this value whose verdict is `pass`.
    pub passed: usize,
    /// Permutations with this value that ran and ended `fail` or `error`.
    pub failed: usize,
    /// Permutations with this value that reached no phase (see [`RunResult::reached_any_phase`]).
    /// A declared value without any permutation has all three counts at 0 and state `not-run`.
    pub not_run: usize,
    pub state: CoverageState,
}

/// The coverage of one axis, a [`ValueCoverage`] per value in the axis' order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AxisCoverage {
    pub axis: String,
    pub values: Vec<ValueCoverage>,
}

/// Counts, for every value of every axis, the runs with that value by outcome: one pass over
/// the runs per axis (a plan has up to 10,000 runs, and an axis as many values).
pub fn coverage(axes: &[Axis], runs: &[&RunResult]) -> Vec<AxisCoverage> {
    axes.iter()
        .map(|axis| {
            let mut counts: HashMap<&str, Counts> = HashMap::new();
            for run in runs {
                if let Some(value) = run.params.get(&axis.key) {
                    counts.entry(value).or_default().count(run);
                }
            }
            AxisCoverage {
                axis: axis.key.clone(),
                values: axis
                    .values
                    .iter()
                    .map(|value| {
                        let c = counts.get(value.as_str()).copied().unwrap_or_default();
                        value_coverage(value, c)
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The runs of one value by outcome.
#[derive(Clone, Copy, Default)]
struct Counts {
    passed: usize,
    failed: usize,
    not_run: usize,
}

impl Counts {
    fn count(&mut self, run: &RunResult) {
        if !run.reached_any_phase() {
            self.not_run += 1;
        } else if run.verdict == Verdict::Pass {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
    }
}

fn value_coverage(value: &str, c: Counts) -> ValueCoverage {
    let Counts {
        passed,
        failed,
        not_run,
    } = c;
    let state = if failed > 0 {
        CoverageState::Failed
    } else if passed > 0 {
        CoverageState::Passed
    } else {
        CoverageState::NotRun
    };
    ValueCoverage {
        value: value.to_string(),
        passed,
        failed,
        not_run,
        state,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::result::tests::{sample_fail, sample_pass};

    /// A run with these params that never reached a phase (cancelled before it started).
    pub(crate) fn sample_not_run(id: &str) -> RunResult {
        let mut r = sample_pass(id);
        r.verdict = Verdict::Error;
        r.reason = "cancelled before it started".into();
        r.phases = RunResult::unreached_phases();
        r.disk_write = None;
        r.duration_ms = 0;
        r
    }

    fn with_params(mut r: RunResult, params: &[(&str, &str)]) -> RunResult {
        r.params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        r
    }

    #[test]
    fn counts_passed_failed_and_not_run_per_value() {
        let runs = [
            with_params(sample_pass("a"), &[("bus", "virtio"), ("fw", "bios")]),
            with_params(sample_pass("b"), &[("bus", "virtio"), ("fw", "uefi")]),
            with_params(sample_fail("c", "x"), &[("bus", "nvme"), ("fw", "bios")]),
            with_params(sample_not_run("d"), &[("bus", "sata"), ("fw", "uefi")]),
        ];
        let refs: Vec<&RunResult> = runs.iter().collect();
        let declared = [
            Axis::new("bus", ["virtio", "nvme", "sata", "scsi"]),
            Axis::new("fw", ["bios", "uefi"]),
        ];
        let cov = coverage(&merge_axes(&declared, &refs), &refs);
        let bus = &cov[0];
        assert_eq!(bus.axis, "bus");
        let get = |v: &str| bus.values.iter().find(|c| c.value == v).unwrap().clone();
        assert_eq!(
            (
                get("virtio").passed,
                get("virtio").failed,
                get("virtio").not_run
            ),
            (2, 0, 0)
        );
        assert_eq!(get("virtio").state, CoverageState::Passed);
        assert_eq!((get("nvme").passed, get("nvme").failed), (0, 1));
        assert_eq!(get("nvme").state, CoverageState::Failed);
        assert_eq!(get("sata").not_run, 1);
        assert_eq!(get("sata").state, CoverageState::NotRun);
        // Declared but no permutation at all: not run, nothing counted.
        assert_eq!(
            (get("scsi").passed, get("scsi").failed, get("scsi").not_run),
            (0, 0, 0)
        );
        assert_eq!(get("scsi").state, CoverageState::NotRun);
        // A value with a pass and a failure is failed: the failure is what needs a look.
        let fw = &cov[1];
        assert_eq!(fw.values[0].value, "bios");
        assert_eq!((fw.values[0].passed, fw.values[0].failed), (1, 1));
        assert_eq!(fw.values[0].state, CoverageState::Failed);
        assert_eq!(
            (fw.values[1].passed, fw.values[1].not_run),
            (1, 1),
            "uefi: b passed, d did not run"
        );
        assert_eq!(fw.values[1].state, CoverageState::Passed);
    }

    #[test]
    fn axes_from_params_when_none_declared_and_completed_when_declared() {
        let runs = [
            with_params(sample_pass("a"), &[("sector", "4k"), ("bus", "virtio")]),
            with_params(sample_pass("b"), &[("sector", "512"), ("bus", "nvme")]),
        ];
        let refs: Vec<&RunResult> = runs.iter().collect();
        assert_eq!(
            merge_axes(&[], &refs),
            vec![
                Axis::new("bus", ["nvme", "virtio"]),
                Axis::new("sector", ["4k", "512"]),
            ]
        );
        // Declared order wins; an undeclared value or axis is appended, not lost.
        assert_eq!(
            merge_axes(&[Axis::new("sector", ["512", "512e"])], &refs),
            vec![
                Axis::new("sector", ["512", "512e", "4k"]),
                Axis::new("bus", ["nvme", "virtio"]),
            ]
        );
        // A single scenario run has no params and so no axes.
        let single = sample_pass("smoke");
        let mut single = single.clone();
        single.params.clear();
        assert!(merge_axes(&[], &[&single]).is_empty());
    }
}
