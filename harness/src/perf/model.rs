//! `perf.json` (schema `sno-harness/perf/v1`) and `perf.md`: the statistics of repeated runs
//! of each permutation, built from their `RunResult`s. Pure: the runner hands over the results
//! and what it knows about the host; nothing here reads the system.
//!
//! Rules:
//! - warmup runs are listed but are in no statistic;
//! - a measured run is in the statistics only when it passed; every other one is listed with
//!   its verdict and reason and counted (`counts`), never silently dropped;
//! - a phase's sample holds the passed runs in which that phase passed with a duration: a run
//!   that skipped a phase is absent from it, not a zero (`runs` says which runs are in it);
//! - every number is finite (a non-finite sample is dropped with a warning);
//! - the host context is recorded next to the numbers: at the top level, and in a permutation
//!   where its own differs (a permutation without `host` ran on the top-level one). Where the
//!   runs of a permutation disagree (a run fell back to TCG), the values are joined with
//!   ` | ` and a warning names the runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::{min_samples_per_group, throughput_mib_s, Summary};
use crate::hw::{AioMode, CacheMode, Throttle};
use crate::result::{phase_names, PhaseStatus, RunResult, Verdict};
use crate::scenario::Scenario;

/// The filesystem a run's disk images live on (`fleet::backing` reads it from
/// `/proc/self/mountinfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackingStore {
    /// The filesystem type: `ext4`, `xfs`, `btrfs`, `tmpfs`, `overlay`, `nfs4`, ...
    pub fstype: String,
    /// What is mounted: a block device (`/dev/nvme0n1p2`), a server export, `tmpfs`.
    pub source: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// The per-mount options (`rw,relatime`).
    pub options: String,
}

/// The schema tag of `perf.json`.
pub const SCHEMA: &str = "sno-harness/perf/v1";
pub const PERF_JSON: &str = "perf.json";
pub const PERF_MD: &str = "perf.md";
/// The significance `report --compare`'s test runs at; it decides how many runs are enough.
pub const COMPARE_ALPHA: f64 = 0.05;

/// Whether a run warmed the host up (caches, the fixture build) or is a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    Warmup,
    Measured,
    /// `--disk-write-only`: the one run that bootstraps and saves the VM once bootkube is done;
    /// the warmups and measured runs then resume that state.
    #[serde(rename = "save-state")]
    SaveState,
}

impl RunKind {
    /// The run's directory under its permutation's: `warmup-<k>` or `run-<i>`.
    pub fn dir_name(self, index: u32) -> String {
        match self {
            RunKind::Warmup => format!("warmup-{index}"),
            RunKind::Measured => format!("run-{index}"),
            RunKind::SaveState => "save-state".to_string(),
        }
    }
}

/// One run of a permutation, as the runner hands it over.
#[derive(Clone, Debug)]
pub struct PerfRun {
    pub kind: RunKind,
    /// From 0, per kind.
    pub index: u32,
    /// The run directory relative to the perf directory: `<id>/run-<i>`.
    pub dir: String,
    pub result: RunResult,
    /// Whether it ended as its scenario's `[expect]` says (passed, without one).
    pub as_expected: bool,
    /// The host's 1-minute load average when the run started.
    pub load_1m: Option<f64>,
    /// QEMU processes on the host when it started (`qemu-system-x86 (pid N)`): this
    /// harness has none between runs, so each is another VM competing for CPUs and disk.
    pub other_vms: Vec<String>,
}

/// A permutation's runs, warmups first, in the order they ran.
#[derive(Clone, Debug)]
pub struct PermutationRuns {
    pub id: String,
    pub params: BTreeMap<String, String>,
    /// The scenario's install disk and its host-side I/O options ([`InstallDisk::of`]).
    pub install_disk: Option<InstallDisk>,
    pub runs: Vec<PerfRun>,
}

/// Everything a perf report is built from.
#[derive(Clone, Debug)]
pub struct PerfInput {
    /// The scenario or matrix file as given.
    pub source: String,
    pub strategy: Option<String>,
    pub filter: Option<String>,
    pub repeat: u32,
    pub warmup: u32,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub finished_at: String,
    pub interrupted: bool,
    /// `qemu` or `libvirt` (from `--backend`: a run that never started says nothing).
    pub backend: String,
    /// The filesystem the run directories, and so the VMs' disk images, are on.
    pub backing_store: Option<BackingStore>,
    pub permutations: Vec<PermutationRuns>,
}

/// The disk coreos-installer writes to, and how the host does its I/O.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallDisk {
    pub disk: String,
    pub cache: CacheMode,
    pub aio: AioMode,
    pub throttle: Option<Throttle>,
}

impl InstallDisk {
    /// The disk `install.installation_disk` names, else the first (the one the VM boots, as
    /// `run::vm_spec` decides); `None` for a scenario without disks.
    pub fn of(s: &Scenario) -> Option<InstallDisk> {
        let d = match &s.install.install_disk_id {
            Some(id) => s.disks.iter().find(|d| &d.id == id),
            None => s.disks.first(),
        }?;
        Some(InstallDisk {
            disk: d.id.clone(),
            cache: d.io.cache,
            aio: d.io.aio,
            throttle: d.io.throttle,
        })
    }
}

/// What the numbers were measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostInfo {
    /// `kvm` or `tcg`, from the runs.
    pub accel: String,
    pub cpu_model: String,
    pub qemu_version: String,
    pub kernel: String,
    pub harness_version: String,
    pub backend: String,
    pub install_disk: Option<InstallDisk>,
    pub backing_store: Option<BackingStore>,
}

/// A sample's summary with the sample itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    #[serde(flatten)]
    pub summary: Summary,
    /// In run order.
    pub samples: Vec<f64>,
    /// The measured run each sample comes from (`run-<i>`).
    pub runs: Vec<u32>,
}

/// One phase's durations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseStat {
    pub phase: String,
    pub seconds: Stat,
}

/// The write to the install disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskWriteStat {
    pub disk: String,
    pub seconds: Stat,
    /// Recomputed from bytes and duration (result.json rounds it to 0.1).
    pub mib_s: Stat,
    pub bytes: Stat,
    /// install-to-disk's deadline as the write's projection moved it, when runs had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineStat>,
    /// What the figure measures when it is not the disk ([`UNSAFE_CACHE_CAVEAT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
}

/// The label of a disk write measured with `cache = "unsafe"`: QEMU writes into the host's
/// page cache and ignores the guest's flushes, so the MiB/s is the host's memory, not its disk.
pub const UNSAFE_CACHE_CAVEAT: &str =
    "measured with cache = \"unsafe\": the host's page cache, not the disk";

impl DiskWriteStat {
    /// The caveat a write to a disk with this host-side cache mode carries.
    pub fn caveat_for(install_disk: Option<&InstallDisk>) -> Option<String> {
        install_disk
            .filter(|d| d.cache == CacheMode::Unsafe)
            .map(|_| UNSAFE_CACHE_CAVEAT.to_string())
    }
}

/// Seconds from the start of install-to-disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadlineStat {
    pub nominal_s: Stat,
    pub adapted_s: Stat,
    pub projected_write_end_s: Stat,
}

/// How a permutation's runs went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCounts {
    /// `--repeat`.
    pub planned: u32,
    /// Measured runs that ran (fewer than planned when interrupted).
    pub measured: u32,
    /// Measured runs that passed: the ones in the statistics.
    pub passed: u32,
    /// Measured runs that ended as the scenario expects.
    pub as_expected: u32,
    pub warmups: u32,
}

/// One run, in the report's list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    pub kind: RunKind,
    pub index: u32,
    pub dir: String,
    pub verdict: Verdict,
    pub as_expected: bool,
    pub in_statistics: bool,
    pub failed_phase: Option<String>,
    pub reason: String,
    pub started_at: String,
    pub duration_s: f64,
    pub load_1m: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_vms: Vec<String>,
}

/// One permutation's statistics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermutationPerf {
    pub id: String,
    pub params: BTreeMap<String, String>,
    /// Present only when it differs from the report's `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    pub counts: RunCounts,
    /// Every run, warmups first.
    pub runs: Vec<RunEntry>,
    /// Contract order; only phases that passed in at least one passed run.
    pub phases: Vec<PhaseStat>,
    /// The whole run.
    pub total_seconds: Option<Stat>,
    pub disk_write: Option<DiskWriteStat>,
    /// `--disk-write-only`: what bootstrapping once and resuming the saved VM cost, against
    /// as many runs that each bootstrap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_reuse: Option<StateReuse>,
    pub warnings: Vec<String>,
}

/// The time a permutation's `--disk-write-only` runs took, and what the same number of runs
/// that bootstrap each time (up to the end of install-to-disk) would have taken. Estimated
/// from the save run's own bootstrap time, so the saving is what this host would have spent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateReuse {
    /// The save run's directory, and whether it saved a state.
    pub save_run: String,
    pub saved: bool,
    /// From the save run's start until bootkube was done: what each resumed run skips.
    pub bootstrap_s: f64,
    /// The save run's whole duration (bootstrap, saving the VM, tearing down).
    pub save_run_s: f64,
    /// Warmups and measured runs that resumed the state.
    pub resumed_runs: u32,
    pub resumed_s: f64,
    /// save_run_s + resumed_s.
    pub actual_s: f64,
    /// resumed_runs x bootstrap_s + resumed_s.
    pub without_state_s: f64,
    pub saved_s: f64,
    /// saved_s / without_state_s, in percent.
    pub saved_pct: f64,
}

/// `perf.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerfReport {
    pub schema: String,
    pub source: String,
    pub strategy: Option<String>,
    pub filter: Option<String>,
    pub repeat: u32,
    pub warmup: u32,
    pub started_at: String,
    /// Empty in the perf.json written after each run while the others are still to come.
    pub finished_at: String,
    pub interrupted: bool,
    /// Runs per permutation `report --compare` needs at alpha 0.05 to tell a difference.
    pub min_samples_for_compare: usize,
    pub host: HostInfo,
    pub permutations: Vec<PermutationPerf>,
    pub warnings: Vec<String>,
}

impl PerfReport {
    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("PerfReport serializes");
        s.push('\n');
        s
    }
}

/// Runs needed per group for `report --compare` at [`COMPARE_ALPHA`].
pub fn min_samples_for_compare() -> usize {
    min_samples_per_group(COMPARE_ALPHA).expect("0 < alpha < 1")
}

/// The report of a perf run.
pub fn build(input: &PerfInput) -> PerfReport {
    let mut perms = Vec::new();
    let mut hosts = Vec::new();
    for p in &input.permutations {
        let (perm, host) = permutation(p, input);
        perms.push(perm);
        hosts.push(host);
    }
    let top = hosts.first().cloned().unwrap_or_else(|| HostInfo {
        harness_version: env!("CARGO_PKG_VERSION").into(),
        backend: input.backend.clone(),
        backing_store: input.backing_store.clone(),
        ..HostInfo::default()
    });
    for (perm, host) in perms.iter_mut().zip(hosts) {
        if host != top {
            perm.host = Some(host);
        }
    }
    let min = min_samples_for_compare();
    let mut warnings = Vec::new();
    if (input.repeat as usize) < min {
        warnings.push(format!(
            "{} measured runs per permutation: `report --compare` needs at least {min} to tell a difference at alpha {COMPARE_ALPHA}",
            input.repeat
        ));
    }
    if input.interrupted {
        warnings.push("interrupted: the runs that did not start are missing".into());
    }
    PerfReport {
        schema: SCHEMA.into(),
        source: input.source.clone(),
        strategy: input.strategy.clone(),
        filter: input.filter.clone(),
        repeat: input.repeat,
        warmup: input.warmup,
        started_at: input.started_at.clone(),
        finished_at: input.finished_at.clone(),
        interrupted: input.interrupted,
        min_samples_for_compare: min,
        host: top,
        permutations: perms,
        warnings,
    }
}

fn permutation(p: &PermutationRuns, input: &PerfInput) -> (PermutationPerf, HostInfo) {
    let mut warnings = Vec::new();
    let measured: Vec<&PerfRun> = p
        .runs
        .iter()
        .filter(|r| r.kind == RunKind::Measured)
        .collect();
    let included: Vec<&PerfRun> = measured
        .iter()
        .copied()
        .filter(|r| r.result.verdict == Verdict::Pass)
        .collect();
    let counts = RunCounts {
        planned: input.repeat,
        measured: measured.len() as u32,
        passed: included.len() as u32,
        as_expected: measured.iter().filter(|r| r.as_expected).count() as u32,
        warmups: p.runs.iter().filter(|r| r.kind == RunKind::Warmup).count() as u32,
    };
    let runs = p
        .runs
        .iter()
        .map(|r| RunEntry {
            kind: r.kind,
            index: r.index,
            dir: r.dir.clone(),
            verdict: r.result.verdict,
            as_expected: r.as_expected,
            in_statistics: r.kind == RunKind::Measured && r.result.verdict == Verdict::Pass,
            failed_phase: r.result.failed_phase.clone(),
            reason: r.result.reason.clone(),
            started_at: r.result.started_at.clone(),
            duration_s: secs(r.result.duration_ms),
            load_1m: r.load_1m.filter(|l| l.is_finite()),
            other_vms: r.other_vms.clone(),
        })
        .collect();
    for r in &measured {
        if !r.other_vms.is_empty() {
            warnings.push(format!(
                "{} started while other VMs ran on this host: {}",
                r.kind.dir_name(r.index),
                r.other_vms.join(", ")
            ));
        }
    }
    if !measured.is_empty() && included.is_empty() {
        warnings.push("no measured run passed: no statistics".into());
    }

    // Contract phases in order, then any other name the results carry.
    let mut names: Vec<String> = phase_names().into_iter().map(String::from).collect();
    for r in &included {
        for ph in &r.result.phases {
            if !names.contains(&ph.name) {
                names.push(ph.name.clone());
            }
        }
    }
    let phases = names
        .iter()
        .filter_map(|name| {
            let samples = included
                .iter()
                .filter_map(|r| {
                    let ph = r.result.phase(name)?;
                    let ms = ph.duration_ms.filter(|_| ph.status == PhaseStatus::Pass)?;
                    Some((r.index, secs(ms)))
                })
                .collect();
            stat(samples, name, &mut warnings).map(|seconds| PhaseStat {
                phase: name.clone(),
                seconds,
            })
        })
        .collect();
    let total_seconds = stat(
        included
            .iter()
            .map(|r| (r.index, secs(r.result.duration_ms)))
            .collect(),
        "total",
        &mut warnings,
    );
    let disk_write = disk_write(&included, &mut warnings).map(|d| DiskWriteStat {
        caveat: DiskWriteStat::caveat_for(p.install_disk.as_ref()),
        ..d
    });

    // The host context of the measured runs (of the warmups when none was measured).
    let ctx: Vec<&PerfRun> = if measured.is_empty() {
        p.runs.iter().collect()
    } else {
        measured
    };
    let mut host = HostInfo {
        accel: merged(&ctx, "accelerator", |r| &r.accel, &mut warnings),
        cpu_model: merged(&ctx, "CPU model", |r| &r.host.cpu_model, &mut warnings),
        qemu_version: merged(
            &ctx,
            "QEMU version",
            |r| &r.host.qemu_version,
            &mut warnings,
        ),
        kernel: merged(&ctx, "kernel", |r| &r.host.kernel, &mut warnings),
        harness_version: merged(
            &ctx,
            "harness version",
            |r| &r.host.harness_version,
            &mut warnings,
        ),
        backend: input.backend.clone(),
        install_disk: p.install_disk.clone(),
        backing_store: input.backing_store.clone(),
    };
    if host.harness_version.is_empty() {
        host.harness_version = env!("CARGO_PKG_VERSION").into();
    }
    let perm = PermutationPerf {
        id: p.id.clone(),
        params: p.params.clone(),
        host: None,
        counts,
        runs,
        phases,
        total_seconds,
        disk_write,
        state_reuse: state_reuse(&p.runs),
        warnings,
    };
    (perm, host)
}

/// `None` unless the permutation ran with a saved state (has a `SaveState` run).
fn state_reuse(runs: &[PerfRun]) -> Option<StateReuse> {
    let save = runs.iter().find(|r| r.kind == RunKind::SaveState)?;
    let saved = save.result.verdict == Verdict::Pass;
    let bootstrap_ms = save
        .result
        .phase("bootkube")
        .and_then(|p| p.end_ms)
        .filter(|_| saved)
        .unwrap_or(0);
    let resumed: Vec<&PerfRun> = runs
        .iter()
        .filter(|r| {
            r.kind != RunKind::SaveState && r.result.phases.iter().any(|p| p.start_ms.is_some())
        })
        .collect();
    let resumed_s: f64 = resumed.iter().map(|r| secs(r.result.duration_ms)).sum();
    let save_run_s = secs(save.result.duration_ms);
    let bootstrap_s = secs(bootstrap_ms);
    let actual_s = save_run_s + resumed_s;
    let without_state_s = resumed.len() as f64 * bootstrap_s + resumed_s;
    let saved_s = without_state_s - actual_s;
    let round = |x: f64| (x * 10.0).round() / 10.0;
    Some(StateReuse {
        save_run: save.dir.clone(),
        saved,
        bootstrap_s: round(bootstrap_s),
        save_run_s: round(save_run_s),
        resumed_runs: resumed.len() as u32,
        resumed_s: round(resumed_s),
        actual_s: round(actual_s),
        without_state_s: round(without_state_s),
        saved_s: round(saved_s),
        saved_pct: if without_state_s > 0.0 {
            round(saved_s * 100.0 / without_state_s)
        } else {
            0.0
        },
    })
}

fn disk_write(included: &[&PerfRun], warnings: &mut Vec<String>) -> Option<DiskWriteStat> {
    let writes: Vec<(u32, &crate::result::DiskWrite)> = included
        .iter()
        .filter_map(|r| Some((r.index, r.result.disk_write.as_ref()?)))
        .collect();
    let (_, first) = writes.first()?;
    let mut disks: Vec<&str> = Vec::new();
    for (_, w) in &writes {
        if !disks.contains(&w.disk.as_str()) {
            disks.push(&w.disk);
        }
    }
    if disks.len() > 1 {
        warnings.push(format!(
            "the runs wrote to different disks: {}",
            disks.join(", ")
        ));
    }
    let seconds = stat(
        writes
            .iter()
            .map(|(i, w)| (*i, secs(w.duration_ms)))
            .collect(),
        "disk write",
        warnings,
    )?;
    let mut rates = Vec::new();
    for (i, w) in &writes {
        match throughput_mib_s(w.bytes, secs(w.duration_ms)) {
            Some(rate) => rates.push((*i, rate)),
            None => warnings.push(format!(
                "run-{i}: disk write of {} bytes in {} ms has no rate",
                w.bytes, w.duration_ms
            )),
        }
    }
    let mib_s = stat(rates, "disk write MiB/s", warnings)?;
    let bytes = stat(
        writes.iter().map(|(i, w)| (*i, w.bytes as f64)).collect(),
        "disk write bytes",
        warnings,
    )?;
    let projections: Vec<(u32, &crate::result::InstallDeadline)> = writes
        .iter()
        .filter_map(|(i, w)| Some((*i, w.deadline.as_ref()?)))
        .collect();
    let part =
        |f: fn(&crate::result::InstallDeadline) -> f64, what: &str, warnings: &mut Vec<String>| {
            stat(
                projections.iter().map(|(i, d)| (*i, f(d))).collect(),
                what,
                warnings,
            )
        };
    let deadline = (|| {
        Some(DeadlineStat {
            nominal_s: part(|d| d.nominal_s, "nominal deadline", warnings)?,
            adapted_s: part(|d| d.adapted_s, "adapted deadline", warnings)?,
            projected_write_end_s: part(
                |d| d.projected_write_end_s,
                "projected write end",
                warnings,
            )?,
        })
    })();
    Some(DiskWriteStat {
        disk: first.disk.clone(),
        seconds,
        mib_s,
        bytes,
        deadline,
        caveat: None,
    })
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// The summary of `(run index, value)` pairs; non-finite values dropped with a warning;
/// `None` for no value.
fn stat(samples: Vec<(u32, f64)>, what: &str, warnings: &mut Vec<String>) -> Option<Stat> {
    let (finite, bad): (Vec<_>, Vec<_>) = samples.into_iter().partition(|(_, v)| v.is_finite());
    for (i, v) in bad {
        warnings.push(format!("{what}: run-{i} gave {v}, left out"));
    }
    let values: Vec<f64> = finite.iter().map(|(_, v)| *v).collect();
    let summary = Summary::of(&values).ok()?;
    Some(Stat {
        summary,
        samples: values,
        runs: finite.iter().map(|(i, _)| *i).collect(),
    })
}

/// The distinct non-empty values of a field over the runs, joined with ` | `; a warning names
/// the runs when there is more than one.
fn merged(
    runs: &[&PerfRun],
    what: &str,
    field: impl Fn(&RunResult) -> &String,
    warnings: &mut Vec<String>,
) -> String {
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for r in runs {
        let v = field(&r.result).trim();
        if v.is_empty() {
            continue;
        }
        let name = r.kind.dir_name(r.index);
        match seen.iter_mut().find(|(x, _)| x == v) {
            Some((_, names)) => names.push(name),
            None => seen.push((v.to_string(), vec![name])),
        }
    }
    if seen.len() > 1 {
        let each: Vec<String> = seen
            .iter()
            .map(|(v, names)| format!("{v} ({})", names.join(", ")))
            .collect();
        warnings.push(format!(
            "the runs disagree on the {what}: {}",
            each.join("; ")
        ));
    }
    let values: Vec<&str> = seen.iter().map(|(v, _)| v.as_str()).collect();
    values.join(" | ")
}

/// A disk's throttle in words: `no throttle`, `throttled to 8.0 MiB/s and 500 IOPS`.
pub fn throttle_text(throttle: Option<Throttle>) -> String {
    match throttle {
        None
        | Some(Throttle {
            bytes_per_s: None,
            iops: None,
        }) => "no throttle".to_string(),
        Some(t) => {
            let mut parts = Vec::new();
            if let Some(b) = t.bytes_per_s {
                parts.push(format!("{:.1} MiB/s", b as f64 / (1024.0 * 1024.0)));
            }
            if let Some(n) = t.iops {
                parts.push(format!("{n} IOPS"));
            }
            format!("throttled to {}", parts.join(" and "))
        }
    }
}

#[cfg(test)]
mod tests;
