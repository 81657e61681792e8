//! Matrix reports: summary.json, junit.xml, summary.md and report.html for 100 permutations,
//! written into a directory by `write_reports` as `sno-harness matrix` does at the end, and
//! each rendering alone. docs/benchmarks.md has the numbers.
//!
//!   cargo bench -p sno-harness --bench reports
//!
//! The results are benches/data/smoke-result.json (the result.json of a passed smoke run)
//! made into 100 permutations of `scenarios/disks.toml --strategy full`: their ids and params,
//! timings varied: 80 passed, 16 failed (4 each at install-to-disk, bootkube with an OOM kill
//! in the badness list, disk-boot, and a cluster-ready timeout) and 4 never admitted.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sno_harness::report::coverage::Axis;
use sno_harness::report::html::render_html;
use sno_harness::report::junit_for_runs;
use sno_harness::report::load::LocatedRun;
use sno_harness::report::run_dir::{summarise, write_reports};
use sno_harness::report::summary::matrix_summary_markdown;
use sno_harness::result::BadnessLine;
use sno_harness::result::{LastSignal, PhaseResult, PhaseStatus, RunResult, Verdict};
use sno_harness::scenario::matrix::{self, Strategy};

const PERMUTATIONS: usize = 100;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The disks matrix's axes (all their values) and 100 of its full product's permutations,
/// evenly spread, each with a result.
fn results() -> (Vec<(String, Vec<String>)>, Vec<RunResult>) {
    let m = matrix::load(&root().join("../scenarios/disks.toml"))
        .unwrap()
        .with_strategy(Strategy::Full)
        .unwrap();
    assert!(m.permutations.len() >= PERMUTATIONS);
    let axes = m
        .axes
        .iter()
        .map(|a| (a.key.clone(), a.labels.clone()))
        .collect();
    let template = RunResult::read(root().join("benches/data/smoke-result.json")).unwrap();
    let step = m.permutations.len() as f64 / PERMUTATIONS as f64;
    let results = (0..PERMUTATIONS)
        .map(|i| {
            let p = &m.permutations[(i as f64 * step) as usize];
            let mut r = template.clone();
            r.id = p.id.clone();
            r.scenario = "scenarios/disks.toml".into();
            r.params = p.values.clone();
            r.replay = format!(
                "sno-harness matrix scenarios/disks.toml --filter {} --keep",
                p.id
            );
            stretch(&mut r, 1.0 + (i % 17) as f64 * 0.04);
            match i % 25 {
                3 => fail_at(&mut r, "install-to-disk", "coreos-installer failed: \"Error: opening /dev/disk/by-id/virtio-sno-install: No such file or directory\" (install-to-disk.service restarts every 5 s with the same error)"),
                8 => time_out(&mut r, "cluster-ready"),
                13 => {
                    fail_at(&mut r, "bootkube", "OOM kill in the journal of crio.service at 31.5 s: \"crio.service: A process of this unit has been killed by the OOM killer.\"");
                    r.badness.push(BadnessLine {
                        kind: "oom-kill".into(),
                        source: "journal of crio.service".into(),
                        line: "crio.service: A process of this unit has been killed by the OOM killer.".into(),
                        t_ms: 31_500,
                        allowed_by: None,
                        warning: None,
                    });
                }
                18 => fail_at(&mut r, "disk-boot", "the live ISO booted again after the install (/run/ostree-live exists after the reset): the bootstrap would loop; check the boot order"),
                22 => {
                    let mut e = RunResult::unreached_error(&p.id, "not admitted: 3.0 GiB of memory asked, 2.1 GiB available");
                    e.params = p.values.clone();
                    e.scenario = r.scenario.clone();
                    r = e;
                }
                _ => {}
            }
            r
        })
        .collect();
    (axes, results)
}

/// Every time of the run scaled by `f`.
fn stretch(r: &mut RunResult, f: f64) {
    let s = |t: u64| (t as f64 * f) as u64;
    for p in &mut r.phases {
        p.start_ms = p.start_ms.map(s);
        p.end_ms = p.end_ms.map(s);
        p.duration_ms = p.duration_ms.map(s);
    }
    r.duration_ms = s(r.duration_ms);
    for sig in &mut r.last_signals {
        sig.t_ms = s(sig.t_ms);
    }
}

/// The run failed in `phase` with `reason`: later phases not reached, no disk write past
/// install-to-disk, the last signals ending with the evidence.
fn fail_at(r: &mut RunResult, phase: &str, reason: &str) {
    end_at(r, phase, PhaseStatus::Fail, reason);
}

fn time_out(r: &mut RunResult, phase: &str) {
    let reason = format!("{phase} did not finish within 4m; API ClusterOperators ok=false: operators settled for less than 30 s: authentication (24 s), console (24 s); last signal 2 s ago: guest installed system (boot 4eb20cb1)");
    end_at(r, phase, PhaseStatus::Timeout, &reason);
}

fn end_at(r: &mut RunResult, phase: &str, status: PhaseStatus, reason: &str) {
    let at = r.phases.iter().position(|p| p.name == phase).unwrap();
    let p = &mut r.phases[at];
    p.status = status;
    p.detail = reason.into();
    let end = p.end_ms.unwrap_or_default();
    for later in &mut r.phases[at + 1..] {
        *later = PhaseResult::not_reached(later.name.clone());
    }
    if at <= 3 {
        r.disk_write = None;
    }
    r.verdict = Verdict::Fail;
    r.failed_phase = Some(phase.into());
    r.reason = format!("{phase}: {reason}");
    r.duration_ms = end;
    r.last_signals.retain(|s| s.t_ms <= end);
    r.last_signals.push(LastSignal {
        t_ms: end,
        source: String::new(),
        summary: reason.into(),
    });
    r.artifacts
        .insert("screenshot".into(), "screenshot-final.png".into());
}

fn reports(c: &mut Criterion) {
    let (axes, results) = results();
    let runs: Vec<LocatedRun> = results
        .iter()
        .cloned()
        .map(LocatedRun::in_own_dir)
        .collect();
    let declared: Vec<Axis> = axes
        .iter()
        .map(|(k, v)| Axis::new(k.as_str(), v.iter().map(String::as_str)))
        .collect();
    let out = tempfile::tempdir().unwrap();
    write_reports(out.path(), &results, &axes, None, Default::default()).unwrap();
    for name in ["summary.json", "junit.xml", "summary.md", "report.html"] {
        let len = std::fs::metadata(out.path().join(name)).unwrap().len();
        eprintln!("{name}: {len} bytes for {PERMUTATIONS} permutations");
    }

    let mut g = c.benchmark_group("reports");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function("write_reports/100", |b| {
        b.iter(|| {
            write_reports(
                out.path(),
                black_box(&results),
                &axes,
                None,
                Default::default(),
            )
            .unwrap()
        })
    });
    g.bench_function("summary.json/100", |b| {
        b.iter(|| summarise(black_box(&runs), &declared).to_json())
    });
    g.bench_function("junit.xml/100", |b| {
        b.iter(|| {
            junit_for_runs(
                black_box(&runs),
                out.path(),
                "scenarios/disks.toml",
                Default::default(),
            )
        })
    });
    g.bench_function("summary.md/100", |b| {
        b.iter(|| matrix_summary_markdown(black_box(&runs), &summarise(&runs, &declared)))
    });
    g.bench_function("report.html/100", |b| {
        b.iter(|| render_html(black_box(&runs), &summarise(&runs, &declared)))
    });
    g.finish();
}

criterion_group!(benches, reports);
criterion_main!(benches);
