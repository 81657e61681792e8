//! Synthetic results for the report tests (shared by tests/report_*.rs).

use std::collections::BTreeMap;

use sno_harness::result::{
    phase_names, DiskWrite, NodeResult, PhaseResult, PhaseStatus, RunResult, Verdict, SCHEMA,
};

/// A passed run with `params`: every phase timed (phase i takes 2 + 1.5 i seconds, back to
/// back), a disk write of 82.6 MiB/s, and the usual artifacts.
pub fn passed_run(id: &str, params: &[(&str, &str)]) -> RunResult {
    let mut t = 0;
    let phases = phase_names()
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let start = t;
            t += 2_000 + 1_500 * i as u64;
            PhaseResult {
                name: (*name).into(),
                status: PhaseStatus::Pass,
                start_ms: Some(start),
                end_ms: Some(t),
                duration_ms: Some(t - start),
                timeout_ms: Some(600_000),
                detail: String::new(),
            }
        })
        .collect();
    RunResult {
        schema: SCHEMA.into(),
        id: id.into(),
        scenario: "scenarios/disks.toml".into(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        profile: "fixture".into(),
        backend: "qemu".into(),
        libvirt_host: None,
        accel: "tcg".into(),
        accel_reason: String::new(),
        verdict: Verdict::Pass,
        failed_phase: None,
        reason: String::new(),
        started_at: "2026-11-29T23:00:00Z".into(),
        duration_ms: t,
        resets: 1,
        reset_causes: vec!["guest reboot".into()],
        phases,
        node: Some(NodeResult {
            name: "sno-master-0".into(),
            name_problem: None,
            ..Default::default()
        }),
        disk_write: Some(DiskWrite {
            disk: "install".into(),
            bytes: 268_435_456,
            duration_ms: 3_100,
            mib_per_s: 82.6,
            source: "qmp".into(),
            image_bytes: None,
            deadline: None,
            cache: None,
        }),
        last_signals: vec![],
        artifacts: BTreeMap::from([
            ("events".into(), "events.jsonl".into()),
            ("serial".into(), "serial.log".into()),
            ("journal-live".into(), "journal-live.txt".into()),
        ]),
        replay: format!("sno-harness matrix scenarios/disks.toml --filter {id} --keep"),
        host: Default::default(),
        badness: vec![],
        etcd_rule: None,
        release_rules: Vec::new(),
        overrides: Vec::new(),
        authorized_keys: Vec::new(),
        operators_rule: None,
        operator_warnings: Vec::new(),
        secure_boot: None,
        bootkube_restarts: None,
        assets: None,
        vm_left_running: None,
        left_powered_on: false,
        paused_ms: None,
        boot: None,
        multipath: None,
        private: None,
        lacks: Vec::new(),
    }
}
