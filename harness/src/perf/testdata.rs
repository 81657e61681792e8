//! Hand-made perf reports for the unit tests of the comparison and the HTML section: the
//! samples are given directly, so a test states exactly what it compares or plots.

use std::collections::BTreeMap;

use super::compare::{Rules, DEFAULT_MIN_EFFECT_PCT};
use super::model::{
    BackingStore, DiskWriteStat, HostInfo, InstallDisk, PerfInput, PerfReport, PerfRun,
    PermutationPerf, PermutationRuns, PhaseStat, RunCounts, RunEntry, RunKind, Stat, SCHEMA,
};
use super::stats::Summary;
use super::thresholds::Thresholds;
use crate::hw::{AioMode, CacheMode};
use crate::result::tests::{sample_fail, sample_pass};
use crate::result::{RunResult, Verdict};

/// The bytes every synthetic disk write writes: 256 MiB.
pub const WRITE_BYTES: f64 = 268_435_456.0;

/// A statistic of `samples` from runs 0, 1, 2, ...
pub fn stat(samples: &[f64]) -> Stat {
    Stat {
        summary: Summary::of(samples).expect("non-empty finite samples"),
        samples: samples.to_vec(),
        runs: (0..samples.len() as u32).collect(),
    }
}

/// A passed measured run's entry.
fn entry(id: &str, index: u32) -> RunEntry {
    RunEntry {
        kind: RunKind::Measured,
        index,
        dir: format!("{id}/{}", RunKind::Measured.dir_name(index)),
        verdict: Verdict::Pass,
        as_expected: true,
        in_statistics: true,
        failed_phase: None,
        reason: String::new(),
        started_at: "2026-11-30T10:00:00Z".into(),
        duration_s: 1.0,
        load_1m: None,
        other_vms: vec![],
    }
}

/// A permutation whose runs all passed, with these phases; the whole run is the sum of the
/// phases run by run, no disk write.
pub fn perm(id: &str, phases: &[(&str, &[f64])]) -> PermutationPerf {
    let n = phases.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    let total: Vec<f64> = (0..n)
        .map(|i| phases.iter().filter_map(|(_, s)| s.get(i)).sum())
        .collect();
    PermutationPerf {
        id: id.into(),
        params: BTreeMap::new(),
        host: None,
        counts: RunCounts {
            planned: n as u32,
            measured: n as u32,
            passed: n as u32,
            as_expected: n as u32,
            warmups: 0,
        },
        runs: (0..n as u32).map(|i| entry(id, i)).collect(),
        phases: phases
            .iter()
            .map(|(name, s)| PhaseStat {
                phase: name.to_string(),
                seconds: stat(s),
            })
            .collect(),
        total_seconds: (!total.is_empty()).then(|| stat(&total)),
        disk_write: None,
        state_reuse: None,
        warnings: vec![],
    }
}

/// `p` with a disk write of [`WRITE_BYTES`] taking these seconds.
pub fn with_disk_write(mut p: PermutationPerf, seconds: &[f64]) -> PermutationPerf {
    let rates: Vec<f64> = seconds
        .iter()
        .map(|s| WRITE_BYTES / (1024.0 * 1024.0) / s)
        .collect();
    p.disk_write = Some(DiskWriteStat {
        disk: "install".into(),
        seconds: stat(seconds),
        mib_s: stat(&rates),
        bytes: stat(&vec![WRITE_BYTES; seconds.len()]),
        deadline: None,
        caveat: None,
    });
    p
}

/// The host every synthetic report ran on.
pub fn host() -> HostInfo {
    HostInfo {
        accel: "kvm".into(),
        cpu_model: "AMD EPYC 7B13".into(),
        qemu_version: "QEMU emulator version 7.2.15".into(),
        kernel: "6.1.0-28-amd64".into(),
        harness_version: "0.1.0".into(),
        backend: "qemu".into(),
        install_disk: Some(InstallDisk {
            disk: "install".into(),
            cache: CacheMode::Unsafe,
            aio: AioMode::Threads,
            throttle: None,
        }),
        backing_store: Some(BackingStore {
            fstype: "ext4".into(),
            source: "/dev/vda1".into(),
            mount_point: "/".into(),
            options: "rw".into(),
        }),
    }
}

/// A finished perf report of these permutations on [`host`].
pub fn report(permutations: Vec<PermutationPerf>) -> PerfReport {
    let repeat = permutations
        .iter()
        .map(|p| p.counts.planned)
        .max()
        .unwrap_or(0);
    PerfReport {
        schema: SCHEMA.into(),
        source: "scenarios/smoke.toml".into(),
        strategy: None,
        filter: None,
        repeat,
        warmup: 0,
        started_at: "2026-11-30T10:00:00Z".into(),
        finished_at: "2026-11-30T11:00:00Z".into(),
        interrupted: false,
        min_samples_for_compare: 4,
        host: host(),
        permutations,
        warnings: vec![],
    }
}

// --- runs for the tests of perf.json and perf.md (built through `model::build`)

/// A passed run whose phase i takes `base + i` seconds, its disk write `write_ms`.
pub fn passed(index: u32, base_s: u64, write_ms: u64) -> RunResult {
    let mut r = sample_pass("smoke");
    let mut t = 0;
    for (i, p) in r.phases.iter_mut().enumerate() {
        let d = (base_s + i as u64) * 1000;
        p.start_ms = Some(t);
        t += d;
        p.end_ms = Some(t);
        p.duration_ms = Some(d);
    }
    r.duration_ms = t;
    let w = r.disk_write.as_mut().unwrap();
    w.bytes = 256 << 20;
    w.duration_ms = write_ms;
    r.host = crate::result::HostContext {
        qemu_version: "QEMU emulator version 7.2.15".into(),
        cpu_model: "AMD EPYC 7B13".into(),
        harness_version: "0.1.0".into(),
        kernel: "6.1.0-28-amd64".into(),
    };
    r.accel = "kvm".into();
    r.started_at = format!("2026-11-30T10:0{index}:00Z");
    r
}

/// A run that timed out in bootkube, on the same host as `passed`.
pub fn failed(reason: &str) -> RunResult {
    let mut r = sample_fail("smoke", reason);
    let p = passed(0, 1, 1);
    r.host = p.host;
    r.accel = p.accel;
    r
}

pub fn run(kind: RunKind, index: u32, result: RunResult) -> PerfRun {
    let as_expected = result.verdict == Verdict::Pass;
    PerfRun {
        kind,
        index,
        dir: format!("smoke/{}", kind.dir_name(index)),
        result,
        as_expected,
        load_1m: Some(0.25),
        other_vms: vec![],
    }
}

pub fn input(runs: Vec<PerfRun>, repeat: u32, warmup: u32) -> PerfInput {
    PerfInput {
        source: "scenarios/smoke.toml".into(),
        strategy: None,
        filter: None,
        repeat,
        warmup,
        started_at: "2026-11-30T10:00:00Z".into(),
        finished_at: "2026-11-30T10:30:00Z".into(),
        interrupted: false,
        backend: "qemu".into(),
        backing_store: Some(BackingStore {
            fstype: "ext4".into(),
            source: "/dev/vda1".into(),
            mount_point: "/".into(),
            options: "rw,relatime".into(),
        }),
        permutations: vec![PermutationRuns {
            id: "smoke".into(),
            params: BTreeMap::new(),
            install_disk: Some(InstallDisk {
                disk: "install".into(),
                cache: CacheMode::Unsafe,
                aio: AioMode::Threads,
                throttle: None,
            }),
            runs,
        }],
    }
}

pub fn phase<'a>(p: &'a PermutationPerf, name: &str) -> Option<&'a PhaseStat> {
    p.phases.iter().find(|s| s.phase == name)
}

// --- for the tests of the comparison

pub fn rules() -> Rules {
    Rules::new(0.05, DEFAULT_MIN_EFFECT_PCT, Thresholds::default()).unwrap()
}

/// Seven runs around `centre` (their median) with a spread of a few percent, in an
/// order unrelated to size.
pub fn noisy(centre: f64) -> Vec<f64> {
    [0.97, 1.02, 0.99, 1.03, 1.0, 0.98, 1.01]
        .iter()
        .map(|f| centre * f)
        .collect()
}
