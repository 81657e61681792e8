//! Tests of `model`.

use super::*;
use crate::perf::testdata::{failed, input, passed, phase, run};
use crate::result::{InstallDeadline, PhaseResult};

#[test]
fn warmups_are_listed_but_not_in_the_statistics() {
    let rep = build(&input(
        vec![
            // A cold first run: far slower, must not count.
            run(RunKind::Warmup, 0, passed(0, 100, 9_000)),
            run(RunKind::Measured, 0, passed(1, 2, 2_000)),
            run(RunKind::Measured, 1, passed(2, 4, 4_000)),
            run(RunKind::Measured, 2, passed(3, 3, 3_000)),
        ],
        3,
        1,
    ));
    assert_eq!(rep.schema, SCHEMA);
    let p = &rep.permutations[0];
    assert_eq!(
        p.counts,
        RunCounts {
            planned: 3,
            measured: 3,
            passed: 3,
            as_expected: 3,
            warmups: 1
        }
    );
    assert_eq!(p.runs.len(), 4);
    assert_eq!(p.runs[0].kind, RunKind::Warmup);
    assert_eq!(p.runs[0].dir, "smoke/warmup-0");
    assert!(!p.runs[0].in_statistics);
    assert!(p.runs[1..].iter().all(|e| e.in_statistics));
    // Every contract phase, 3 samples each, in run order; assets is phase 0 (base s).
    assert_eq!(p.phases.len(), phase_names().len());
    let assets = &phase(p, "assets").unwrap().seconds;
    assert_eq!(assets.samples, [2.0, 4.0, 3.0]);
    assert_eq!(assets.runs, [0, 1, 2]);
    assert_eq!(assets.summary.n, 3);
    assert_eq!(assets.summary.median, 3.0);
    assert_eq!(assets.summary.min, 2.0);
    assert_eq!(assets.summary.max, 4.0);
    assert!((assets.summary.p90 - 3.8).abs() < 1e-12);
    assert!((assets.summary.stddev - 1.0).abs() < 1e-12);
    // bootkube is phase 2: base + 2.
    assert_eq!(
        phase(p, "bootkube").unwrap().seconds.samples,
        [4.0, 6.0, 5.0]
    );
    // The total: 11 phases of base + i seconds = 11 base + 55.
    let total = p.total_seconds.as_ref().unwrap();
    assert_eq!(total.samples, [77.0, 99.0, 88.0]);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    // 3 < 4: too few for report --compare.
    assert_eq!(rep.min_samples_for_compare, 4);
    assert!(rep.warnings[0].contains("at least 4"), "{:?}", rep.warnings);
}

#[test]
fn a_phase_some_runs_did_not_reach_has_fewer_samples() {
    let mut skipped = passed(2, 5, 2_000);
    // A passed run in which cluster-ready never ran (and one whose phase has no end).
    let i = skipped
        .phases
        .iter()
        .position(|p| p.name == "cluster-ready")
        .unwrap();
    skipped.phases[i] = PhaseResult::not_reached("cluster-ready");
    skipped.phases[i + 1].duration_ms = None;
    let rep = build(&input(
        vec![
            run(RunKind::Measured, 0, passed(1, 2, 2_000)),
            run(RunKind::Measured, 1, skipped),
            run(RunKind::Measured, 2, passed(3, 3, 2_000)),
        ],
        3,
        0,
    ));
    let p = &rep.permutations[0];
    let cr = &phase(p, "cluster-ready").unwrap().seconds;
    assert_eq!(cr.summary.n, 2);
    assert_eq!(cr.runs, [0, 2]);
    assert_eq!(cr.samples, [11.0, 12.0]);
    let cleanup = &phase(p, "bootstrap-cleanup").unwrap().seconds;
    assert_eq!(cleanup.runs, [0, 2]);
    assert_eq!(phase(p, "assets").unwrap().seconds.summary.n, 3);

    // A phase no passed run reached is left out altogether.
    let mut a = passed(1, 2, 2_000);
    let mut b = passed(2, 2, 2_000);
    for r in [&mut a, &mut b] {
        let last = r.phases.len() - 1;
        r.phases[last] = PhaseResult::not_reached("bootstrap-cleanup");
    }
    let rep = build(&input(
        vec![run(RunKind::Measured, 0, a), run(RunKind::Measured, 1, b)],
        2,
        0,
    ));
    let p = &rep.permutations[0];
    assert!(phase(p, "bootstrap-cleanup").is_none());
    assert_eq!(p.phases.len(), phase_names().len() - 1);
}

#[test]
fn json_round_trip_and_field_names() {
    let mut with_deadline = passed(2, 3, 4_000);
    with_deadline.disk_write.as_mut().unwrap().deadline = Some(InstallDeadline {
        nominal_s: 600.0,
        adapted_s: 150.0,
        projected_write_end_s: 60.0,
    });
    let mut inp = input(
        vec![
            run(RunKind::Warmup, 0, passed(0, 9, 2_000)),
            run(RunKind::Measured, 0, passed(1, 2, 2_000)),
            run(RunKind::Measured, 1, with_deadline),
            run(RunKind::Measured, 2, failed("x")),
        ],
        3,
        1,
    );
    inp.strategy = Some("pairwise".into());
    inp.filter = Some("smoke*".into());
    let rep = build(&inp);
    let text = rep.to_json();
    assert!(text.ends_with("}\n"));
    let back: PerfReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back, rep);

    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "sno-harness/perf/v1");
    assert_eq!(v["host"]["accel"], "kvm");
    assert_eq!(v["host"]["install_disk"]["cache"], "unsafe");
    assert_eq!(v["host"]["install_disk"]["aio"], "threads");
    assert_eq!(v["host"]["backing_store"]["fstype"], "ext4");
    let p = &v["permutations"][0];
    assert!(p.get("host").is_none());
    assert_eq!(p["counts"]["passed"], 2);
    assert_eq!(p["runs"][0]["kind"], "warmup");
    assert_eq!(p["runs"][3]["verdict"], "fail");
    assert_eq!(p["runs"][3]["in_statistics"], false);
    let assets = &p["phases"][0];
    assert_eq!(assets["phase"], "assets");
    // The summary's fields sit next to its samples.
    for k in ["n", "min", "max", "mean", "median", "p90", "stddev"] {
        assert!(assets["seconds"][k].is_number(), "{k}: {assets}");
    }
    assert_eq!(assets["seconds"]["samples"], serde_json::json!([2.0, 3.0]));
    assert_eq!(assets["seconds"]["runs"], serde_json::json!([0, 1]));
    assert_eq!(p["disk_write"]["mib_s"]["n"], 2);
    assert_eq!(p["disk_write"]["deadline"]["adapted_s"]["median"], 150.0);
    assert!(p["total_seconds"]["median"].is_number());
    assert_eq!(v["strategy"], "pairwise");
}
